"""annograph's own CSV annotation format, ready for ``annograph render -a``: ``id,kind,<values…>,style.<attr>…``.

One row per annotated operator and tensor, and one ``kind=graph`` row for graph values. Ids as in the JSON
export. A cell is empty where an element has no such value; text is written as is (quoted by the CSV rules),
numbers with full precision.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Sequence
from typing import Any

from renderer.core.ir import Model
from renderer.core.records import Annotations, Entry
from renderer.exporters.protocol import ExportOptions, ExportResult
from renderer.exporters.stable_ids import StableIds

NAME = "csv"
DESCRIPTION = "annograph's generic CSV (readable back with render -a)"
EXTENSION = ".csv"


def export(model: Model, annotations: Annotations, options: ExportOptions) -> ExportResult:
    ids = StableIds(model)
    rows: list[tuple[str, str, Entry]] = []
    if annotations.graph.values or annotations.graph.style:
        rows.append(("", "graph", annotations.graph))
    rows += [(ids.operator(k), "operator", e) for k, e in sorted(annotations.ops.items())]
    rows += [(ids.tensor(k), "tensor", e) for k, e in sorted(annotations.tensors.items())]
    text, notes = table(rows)
    return ExportResult(text, notes)


def table(rows: list[tuple[str, str, Entry]], first_columns: Sequence[str] = (), delimiter: str = ",",
          ) -> tuple[str, list[str]]:
    """The CSV text of ``rows`` (id, kind, entry) and notes on what was left out or cut.

    Value columns come in ``first_columns`` order, then in order of first appearance.
    """
    value_columns = [c for c in first_columns if any(c in entry.values for _, _, entry in rows)]
    style_columns: list[str] = []
    for _, _, entry in rows:
        value_columns += [k for k in entry.values if k not in value_columns]
        style_columns += [k for k in entry.style if k not in style_columns]
    reserved = {"id", "kind"} | {f"style.{s}" for s in style_columns}
    clashing = [c for c in value_columns if c.strip().lower() in reserved or c.lower().startswith("style.")]
    notes = [f"value {c!r} cannot be a CSV column (it is a reserved column name); left out" for c in clashing]
    value_columns = [c for c in value_columns if c not in clashing]
    out = io.StringIO()
    writer = csv.writer(out, delimiter=delimiter, lineterminator="\n")
    writer.writerow([_no_nul(c) for c in ["id", "kind", *value_columns, *[f"style.{s}" for s in style_columns]]])
    cut: set[str] = set()
    for ident, kind, entry in rows:
        cells = []
        for column in value_columns:
            text = _cell(entry.values.get(column))
            if len(text) > MAX_CELL_CHARS:
                text = text[:MAX_CELL_CHARS - 1] + "…"
                cut.add(column)
            cells.append(_no_nul(text))
        writer.writerow([_no_nul(ident), kind, *cells, *[entry.style.get(s, "") for s in style_columns]])
    notes += [f"value {c!r} cut to {MAX_CELL_CHARS:,} characters where longer, so that CSV readers can read it back"
              for c in sorted(cut)]
    return out.getvalue(), notes


# Python's csv module (and with it our reader) refuses fields over 131,072 characters; stay well below.
MAX_CELL_CHARS = 100_000


def _no_nul(text: str) -> str:
    """A NUL would make the file binary to every CSV reader (ours included): write it as the text ``\\x00``."""
    return text.replace("\x00", "\\x00")


def _cell(value: Any) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return ""
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
