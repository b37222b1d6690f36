"""``index.html``: the contact sheet of a batch, one thumbnail and caption per picture (jinja2, autoescaped).

Links point only at the picture files, whose names are made of ``[A-Za-z0-9_.-]`` by ``job._file_name``.
"""

from __future__ import annotations

from typing import Any

from .job import ModelResult

TEMPLATE = "batch_index.html.j2"


def html(results: list[ModelResult], title: str) -> str:
    from ..report import environment

    models: list[dict[str, Any]] = []
    for result in results:
        models.append({
            "model": result.model,
            "error": result.error or "",
            "pictures": [
                {"file": p.file, "run": p.run, "metric": p.metric, "low": p.low, "high": p.high,
                 "valued": p.values, "missing": p.missing}
                for p in result.pictures
            ],
        })
    return environment().get_template(TEMPLATE).render(title=title, models=models)
