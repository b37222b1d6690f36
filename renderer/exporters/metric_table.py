"""Built-in metrics as a generic annotation file (JSON or CSV) that ``annograph render -a`` reads back.

Operators and tensors are named by their ``S:N`` ids, which never depend on names being unique. Values are
numbers, or strings such as ``"n/a (unknown shape of x)"`` that are shown but never coloured by. The files
are written by the generic format's own writers (``exporters/generic_json.py``, ``generic_csv.py``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from renderer.core.ir import ElementKey, Model
from renderer.core.records import Entry
from renderer.files.formats import chosen_format

FORMATS = {".json": "json", ".csv": "csv", ".tsv": "tsv"}


def export_format(path: str | Path, fmt: str | None = None) -> str:
    """The table format of ``path``: ``fmt`` when given, else its extension's (see ``FORMATS``)."""
    return chosen_format(path, fmt, FORMATS, "metrics file")


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
    from renderer.exporters.generic_json import item

    document = {
        "operators": [item(ident, Entry(values)) for ident, values in _ordered(model, ops, "op")],
        "tensors": [item(ident, Entry(values)) for ident, values in _ordered(model, tensors, "t")],
    }
    return json.dumps(document, indent=1, ensure_ascii=False, allow_nan=False) + "\n"


def to_csv(model: Model, ops: dict, tensors: dict, delimiter: str = ",") -> str:
    from renderer.exporters.generic_csv import table
    from renderer.metrics.builtin import ALL_TENSOR_METRICS, OP_METRICS

    rows = [(ident, "operator", Entry(values)) for ident, values in _ordered(model, ops, "op")]
    rows += [(ident, "tensor", Entry(values)) for ident, values in _ordered(model, tensors, "t")]
    known = [*OP_METRICS, *ALL_TENSOR_METRICS]
    others = sorted({name for _, _, entry in rows for name in entry.values} - set(known))
    text, _ = table(rows, known + others, delimiter)
    return text


def render(model: Model, ops: dict, tensors: dict, fmt: str) -> str:
    if fmt == "json":
        return to_json(model, ops, tensors)
    return to_csv(model, ops, tensors, "\t" if fmt == "tsv" else ",")
