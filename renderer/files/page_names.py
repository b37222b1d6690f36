"""The names of a book's files: the overview ``NAME.EXT``, its pages folder ``NAME.EXT.pages/`` and the pages in it,
``page-NNN.EXT``, and the relative links between them. The output plan, the page planner and emitter, the atomic
writer (which clears a former run's pages), batch and Sphinx read these rules here; nothing else spells them."""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from renderer.core import escape


class Page(Protocol):
    """What the links need of a page (``picture.pages.Page``): its number, 0 for the overview."""

    @property
    def index(self) -> int: ...

PAGES_SUFFIX = ".pages"
"""An overview ``NAME`` keeps its pages in the folder ``NAME.pages`` beside it."""
_PAGE_FILE = re.compile(r"page-(\d{3,})\.(\w+)")


def page_stem(index: int) -> str:
    """A page's name without extension: ``overview`` for page 0, else ``page-NNN`` (also its HTML anchor)."""
    return "overview" if index == 0 else f"page-{index:03d}"


def page_file(index: int, ext: str) -> str:
    """The file of page ``index`` (1 or more) in its pages folder: ``page-NNN.EXT`` (see ``is_page_file``)."""
    return f"{page_stem(index)}.{ext}"


def pages_folder(overview: str) -> str:
    """The pages folder's name for the overview file named ``overview``."""
    return overview + PAGES_SUFFIX


def pages_path(overview: str | Path) -> Path:
    """The pages folder beside the overview file ``overview``."""
    path = Path(overview)
    return path.with_name(pages_folder(path.name))


def is_page_file(name: str, extensions: Collection[str]) -> bool:
    """Whether ``name`` is exactly the name of a page file annograph writes (``page_file``), with one of
    ``extensions``: ``page-001.svg`` is, ``page-notes.dot``, ``page-1.svg`` and ``page-000.svg`` are not."""
    match = _PAGE_FILE.fullmatch(name)
    return bool(match and match.group(2) in extensions and int(match.group(1)) >= 1
                and match.group(1) == f"{int(match.group(1)):03d}")


@dataclass(frozen=True, slots=True)
class Links:
    """Relative links between the files of a book: the overview ``NAME.EXT`` and ``NAME.EXT.pages/page-NNN.EXT``."""

    overview: str
    ext: str = "svg"

    @property
    def folder(self) -> str:
        return pages_folder(self.overview)

    def file(self, page: Page) -> str:
        """The page's file, relative to the overview's folder."""
        return self.overview if page.index == 0 else f"{self.folder}/{page_file(page.index, self.ext)}"

    def href(self, source: Page, target: Page, anchor: str = "") -> str:
        """The escaped link from page ``source`` to page ``target`` (and ``anchor`` in it)."""
        if target.index == 0:
            path = self.overview if source.index == 0 else f"../{self.overview}"
        elif source.index == 0:
            path = f"{self.folder}/{page_file(target.index, self.ext)}"
        else:
            path = page_file(target.index, self.ext)
        if source is target:
            path = ""
        return escape.href(path + (f"#{anchor}" if anchor else ""))
