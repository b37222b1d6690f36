"""Model Explorer node data JSON: one operator metric, to load next to the model in Google's Model Explorer.

The file is what ``model_explorer.node_data_builder`` writes:

* TFLite: the graph-keyed form ``{"<subgraph name>": {"results": {"<operator index>": {"value": …}}, …}}``;
  Model Explorer's TFLite adapter names graphs by subgraph name and nodes by operator index.
* ONNX: keyed by the node ids Model Explorer's ONNX adapter (``model-explorer-onnx``) gives: the node name, as
  ``model_explorer_onnx_ids`` derives it. The bare form ``{"results": {"<node id>": {"value": …}}, …}`` when every
  value is in the main graph (it applies to the graph on screen), else the graph-keyed form keyed by the
  adapter's graph ids. Operators the adapter does not show (bodies of loops inside loops) are left out, and a
  note says how many.

Each result carries the operator's ``fillcolor``/``fontcolor`` style as ``bgColor``/``textColor`` when it has
one. A ``gradient`` with five stops samples the colour map (``--cmap``, default as ``render`` chooses: ``heat``,
or reversed ``traffic`` for metrics where higher is better), from the minimum (stop 0) to the maximum (stop 1),
the same mapping as a linear heatmap. Only numeric values are exported.
"""

from __future__ import annotations

import json
from typing import Any

from renderer.annotations.model_explorer_ids import MAIN_GRAPH_FALLBACK, onnx_node_ids
from renderer.core.errors import MetricError
from renderer.core.ir import ElementKey, Graph, Model
from renderer.core.records import Annotations, metric_value
from renderer.exporters.protocol import ExportOptions, ExportResult

NAME = "model-explorer"
DESCRIPTION = "Model Explorer node data JSON (one metric; --metric to choose)"
EXTENSION = ".json"
STOPS = 5


def export(model: Model, annotations: Annotations, options: ExportOptions) -> ExportResult:
    from renderer.colour.heatmap import resolve_metric

    notes: list[str] = []
    available = [name for name in _numeric_metrics(annotations)]
    if options.metric:
        metric = resolve_metric(options.metric, annotations, "op")
    elif available:
        metric = available[0]
        if len(available) > 1:
            notes.append(
                f"exported metric {metric!r}; others available with --metric: {', '.join(available[1:6])}"
                + (", …" if len(available) > 6 else "")
            )
    else:
        raise MetricError("no numeric operator values to export to Model Explorer")

    keys = _node_keys(model)
    per_graph: dict[str, dict[str, Any]] = {}
    values: list[float] = []
    skipped = 0
    for op_key, entry in sorted(annotations.ops.items()):
        number = metric_value(entry.values.get(metric))
        if number is None:
            continue
        if op_key not in keys:
            skipped += 1
            continue
        graph_id, node_id = keys[op_key]
        result: dict[str, Any] = {"value": number}
        if "fillcolor" in entry.style:
            result["bgColor"] = entry.style["fillcolor"]
        if "fontcolor" in entry.style:
            result["textColor"] = entry.style["fontcolor"]
        per_graph.setdefault(graph_id, {})[node_id] = result
        values.append(number)
    if skipped:
        notes.append(
            f"{skipped} operators left out: Model Explorer's ONNX adapter shows no graph for them "
            "(bodies of loops inside other operators' graphs)"
        )
    gradient = _gradient(values, metric, annotations, options.cmap)
    bodies = {s: _body(results, metric, gradient) for s, results in per_graph.items()}
    main_id = model.main.name or MAIN_GRAPH_FALLBACK
    if model.format == "onnx" and set(bodies) <= {main_id}:
        doc: Any = bodies.get(main_id, _body({}, metric, gradient))
    else:
        doc = bodies
    return ExportResult(json.dumps(doc, indent=1, ensure_ascii=False) + "\n", notes)


def _body(results: dict[str, Any], metric: str, gradient: list[dict[str, Any]]) -> dict[str, Any]:
    """A GraphNodeData object with every field node_data_builder writes, in its order and with its defaults."""
    return {
        "results": results,
        "name": metric,
        "thresholds": [],
        "gradient": gradient,
        "hideInAggregatedStatsTable": False,
        "hideInChildrenStatsTable": False,
        "showExpandedSummaryOnGroupNode": False,
        "showLabelCountColumnsInChildrenStatsTable": False,
    }


def _numeric_metrics(annotations: Annotations) -> list[str]:
    names: list[str] = []
    for entry in annotations.ops.values():
        for key, value in entry.values.items():
            if key not in names and metric_value(value) is not None:
                names.append(key)
    return names


def _node_keys(model: Model) -> dict[ElementKey, tuple[str, str]]:
    """Operator → (graph id, node id) as Model Explorer's adapter for the model's format names them."""
    if model.format == "onnx":
        return onnx_node_ids(model)
    # the built-in TFLite adapter: graphs by subgraph name, nodes by operator index
    return {node.key: (_tflite_graph_id(graph), str(node.index)) for graph in model.graphs for node in graph.nodes}


def _tflite_graph_id(graph: Graph) -> str:
    return graph.name or ("main" if graph.index == 0 else f"subgraph_{graph.index}")


def _gradient(
    values: list[float], metric: str, annotations: Annotations, cmap: str | None
) -> list[dict[str, Any]]:
    from renderer.colour.maps import Scale

    info = annotations.metrics.get(metric)
    if cmap is None and info is not None and info.higher_is_better:
        cmap = "traffic_r"
    scale = Scale.fit(values, cmap=cmap)
    return [{"stop": i / (STOPS - 1), "bgColor": scale.color_at(i / (STOPS - 1))} for i in range(STOPS)]
