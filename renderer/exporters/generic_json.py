"""annograph's own JSON annotation format, ready for ``annograph render -a`` (see ``annotations/generic.py``).

Ids are the operator's or tensor's name when that resolves back to the same element, else ``S:N``. Values keep
their types; what is known of a metric (unit, higher_is_better, description) goes to the ``metrics`` section.
"""

from __future__ import annotations

import json
from typing import Any

from renderer.annotations.metric_meta import describe
from renderer.core.ir import Model
from renderer.core.records import Annotations, Entry, json_values
from renderer.exporters.protocol import ExportOptions, ExportResult
from renderer.exporters.stable_ids import StableIds

NAME = "json"
DESCRIPTION = "annograph's generic JSON (readable back with render -a)"
EXTENSION = ".json"


def document(model: Model, annotations: Annotations) -> dict[str, Any]:
    ids = StableIds(model)
    doc: dict[str, Any] = {}
    graph = annotations.graph
    if graph.values or graph.style:
        body: dict[str, Any] = {"meta": json_values(graph.values)}
        if graph.style:
            body["style"] = dict(graph.style)
        doc["graph"] = body
    for section, entries, name_of in (
        ("operators", annotations.ops, ids.operator),
        ("tensors", annotations.tensors, ids.tensor),
    ):
        items = [item(name_of(key), entry) for key, entry in sorted(entries.items())]
        if items:
            doc[section] = items
    shown = {k for e in (*annotations.ops.values(), *annotations.tensors.values()) for k in e.values}
    metrics = {}
    for name, info in sorted(annotations.metrics.items()):
        described = describe(info)
        if name in shown and described:
            metrics[name] = described
    if metrics:
        doc["metrics"] = metrics
    return doc


def item(ident: str, entry: Entry) -> dict[str, Any]:
    """One element of the ``operators`` or ``tensors`` list."""
    written: dict[str, Any] = {"id": ident, "meta": json_values(entry.values)}
    if entry.style:
        written["style"] = dict(entry.style)
    return written


def export(model: Model, annotations: Annotations, options: ExportOptions) -> ExportResult:
    notes = []
    entries = [annotations.graph, *annotations.ops.values(), *annotations.tensors.values()]
    if any("line" in e.values for e in entries):
        notes.append(
            "values named 'line' are read back as source line numbers by the generic reader; rename them"
        )
    return ExportResult(json.dumps(document(model, annotations), indent=1, ensure_ascii=False) + "\n", notes)
