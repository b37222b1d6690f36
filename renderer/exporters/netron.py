"""Netron attachment JSON: open the model in Netron, then open this file to see the values in the sidebar.

``{"signature": "netron:attachment", "metadata": [...], "metrics": [...]}`` (the format Netron reads in its
``source/metadata.js``). Numeric values go to ``metrics``, text to ``metadata``; items name their element the
way Netron does:

* ONNX operators by ``target`` (the node name; unnamed nodes cannot be targeted and are left out, with a note),
  ONNX tensors (``value``) by their name;
* TFLite operators and tensors by ``identifier`` (the operator or tensor index). Netron's identifiers are not
  per subgraph, so only subgraph 0 is exported for TFLite;
* graph values as ``model`` items with ``target`` "".

Netron opens the file only when its name ends in ``.json``.
"""

from __future__ import annotations

import json
from typing import Any

from renderer.core.ir import Model
from renderer.core.records import Annotations, json_values, metric_value
from renderer.exporters.protocol import ExportOptions, ExportResult

NAME = "netron"
DESCRIPTION = "Netron attachment JSON (open beside the model in Netron)"
EXTENSION = ".json"
SIGNATURE = "netron:attachment"


def export(model: Model, annotations: Annotations, options: ExportOptions) -> ExportResult:
    metadata: list[dict[str, Any]] = []
    metrics: list[dict[str, Any]] = []
    notes: list[str] = []
    skipped = {"unnamed": 0, "subgraph": 0}

    def add(kind: str, where: dict[str, str], values: dict[str, Any]) -> None:
        for name, value in json_values(values).items():
            if value is None:
                continue
            item = {"kind": kind, **where, "name": name.split("\n", 1)[0]}
            if metric_value(value) is not None and not isinstance(value, str):
                metrics.append({**item, "value": value})
            else:
                metadata.append(
                    {
                        **item,
                        "value": value if isinstance(value, str) else json.dumps(value),
                        "type": "string",
                    }
                )

    add("model", {"target": ""}, annotations.graph.values)
    for kind, entries in (("node", annotations.ops), ("value", annotations.tensors)):
        for (_, s, n), entry in sorted(entries.items()):
            if model.format == "tflite":
                if s != 0:
                    skipped["subgraph"] += 1
                    continue
                where = {"identifier": str(n)}
            else:
                element = model.graphs[s].nodes[n] if kind == "node" else model.graphs[s].values[n]
                if not element.name:
                    skipped["unnamed"] += 1
                    continue
                where = {"target": element.name.split("\n", 1)[0]}
            add(kind, where, entry.values)
    if skipped["unnamed"]:
        notes.append(
            f"{skipped['unnamed']} unnamed ONNX elements left out (Netron can only target nodes by name)"
        )
    if skipped["subgraph"]:
        notes.append(
            f"{skipped['subgraph']} elements outside TFLite subgraph 0 left out (Netron's identifiers "
            "are per subgraph)"
        )
    doc = {"signature": SIGNATURE, "metadata": metadata, "metrics": metrics}
    return ExportResult(json.dumps(doc, indent=1, ensure_ascii=False) + "\n", notes)
