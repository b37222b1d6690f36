"""Built-in metrics as a generic annotation file (JSON or CSV) that ``annograph render -a`` reads back.

Operators and tensors are named by their ``S:N`` ids, which never depend on names being unique. Values are
numbers, or strings such as ``"n/a (unknown shape of x)"`` that are shown but never coloured by.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

from ..errors import AnnographError
from ..ir import ElementKey, Model

FORMATS = {".json": "json", ".csv": "csv", ".tsv": "tsv"}


def export_format(path: str | Path, fmt: str | None = None) -> str:
    if fmt:
        if fmt not in FORMATS.values():
            raise AnnographError(f"unknown metrics format {fmt!r} (use json, csv or tsv)")
        return fmt
    suffix = Path(path).suffix.lower()
    if suffix not in FORMATS:
        raise AnnographError(f"{path}: unknown metrics file extension {suffix or '(none)'!r} (use .json, .csv or .tsv)")
    return FORMATS[suffix]


def _id(key: ElementKey) -> str:
    return f"{key[1]}:{key[2]}"


def _ordered(model: Model, computed: dict[ElementKey, dict[str, Any]], kind: str) -> list[tuple[str, dict]]:
    items = []
    for graph in model.graphs:
        for element in graph.nodes if kind == "op" else graph.values:
            values = computed.get(element.key)
            if values:
                items.append((_id(element.key), values))
    return items


def to_json(model: Model, ops: dict, tensors: dict) -> str:
    document = {
        "operators": [{"id": ident, "meta": values} for ident, values in _ordered(model, ops, "op")],
        "tensors": [{"id": ident, "meta": values} for ident, values in _ordered(model, tensors, "t")],
    }
    return json.dumps(document, indent=1, ensure_ascii=False, allow_nan=False) + "\n"


def to_csv(model: Model, ops: dict, tensors: dict, delimiter: str = ",") -> str:
    rows = [(ident, "operator", values) for ident, values in _ordered(model, ops, "op")]
    rows += [(ident, "tensor", values) for ident, values in _ordered(model, tensors, "t")]
    from . import ALL_TENSOR_METRICS, OP_METRICS

    present: set[str] = set()
    for _, _, values in rows:
        present.update(values)
    known = [*OP_METRICS, *ALL_TENSOR_METRICS]
    columns = [c for c in known if c in present] + sorted(present - set(known))
    buffer = io.StringIO()
    writer = csv.writer(buffer, delimiter=delimiter, lineterminator="\n")
    writer.writerow(["id", "kind", *columns])
    for ident, kind, values in rows:
        writer.writerow([ident, kind, *(_cell(values.get(c)) for c in columns)])
    return buffer.getvalue()


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return repr(value)
    return str(value)


def render(model: Model, ops: dict, tensors: dict, fmt: str) -> str:
    if fmt == "json":
        return to_json(model, ops, tensors)
    return to_csv(model, ops, tensors, "\t" if fmt == "tsv" else ",")
