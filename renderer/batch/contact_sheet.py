"""``index.html``: the contact sheet of a batch, one thumbnail and caption per picture (jinja2, autoescaped).

Links point only at the picture files, whose names are made of ``[A-Za-z0-9_.-]`` by ``job._file_name``. Every
text from a file name or a model passes ``escape.clean`` (bidi controls and zero-width marks shown as ``<U+202E>``)
before the template escapes it for HTML.
"""

from __future__ import annotations

import os
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from renderer.batch.job import ModelResult
from renderer.core.errors import RenderError
from renderer.files.page_names import pages_folder

TEMPLATE = "batch_index.html.j2"
GENERATOR = "annograph batch"
"""The contact sheet's ``<meta name="generator">``: how a later batch knows the index.html in its folder is one
it may replace (``written_by_batch``)."""


def html(results: list[ModelResult], title: str) -> str:
    from renderer.core.escape import clean
    from renderer.reports.report import environment

    models: list[dict[str, Any]] = []
    for result in results:
        models.append({
            "model": clean(result.model, 300),
            "error": clean(result.error or "", 2000),
            "pictures": [
                {"file": p.file, "run": clean(p.run), "metric": clean(p.metric), "low": p.low, "high": p.high,
                 "valued": p.values, "missing": p.missing}
                for p in result.pictures
            ],
        })
    return environment().get_template(TEMPLATE).render(title=title, models=models, generator=GENERATOR)


INDEX = "index.html"
INDEX_READ_LIMIT = 64 * 1024 * 1024


def earlier_files(folder: Path) -> set[str]:
    """The names in ``folder`` an earlier batch wrote, which this one may replace: its ``index.html`` and the
    pictures (and pages folders) that index links to. An ``index.html`` batch did not write is refused, so a
    user's own page is never replaced."""
    index = folder / INDEX
    if not os.path.lexists(index):
        return {INDEX}
    try:
        with open(index, "rb") as f:
            text = f.read(INDEX_READ_LIMIT).decode("utf-8", "replace")
    except OSError as e:
        raise RenderError(f"{index}: cannot read ({e.strerror}); move it, or choose another folder") from None
    finder = _Links()
    finder.feed(text)
    if not finder.ours:
        raise RenderError(f"{index}: exists and was not written by annograph batch; move it, or choose another "
                          "folder")
    return {INDEX} | finder.links | {pages_folder(name) for name in finder.links}


class _Links(HTMLParser):
    """The contact sheet's generator mark and the plain file names it links to."""

    def __init__(self) -> None:
        super().__init__()
        self.ours = False
        self.links: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag == "meta" and found.get("name") == "generator" and found.get("content") == GENERATOR:
            self.ours = True
        elif tag == "a" and (href := found.get("href")) and "/" not in href and href not in (".", ".."):
            self.links.add(href)
