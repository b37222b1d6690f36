"""Google AI Edge Model Explorer node data JSON (what ``model_explorer.node_data_builder`` writes).

Two forms:

* bare ``GraphNodeData``: ``{"name": "latency", "results": {<key>: {"value": 1.5, "bgColor": "#f00",
  "textColor": "#fff"}}, "thresholds": [...], "gradient": [...]}``;
* graph-keyed ``ModelNodeData``: ``{"<graph id>": {"results": {...}, ...}, ...}``.

A result key is a node id or one of the node's output tensor names. For TFLite, Model Explorer's node id is the
operator index and its graph id the subgraph name; for ONNX, ``model-explorer-onnx`` names both as
``exporters/model_explorer_onnx_ids.py`` derives them (both checked against the adapters in the tests), and those
ids are tried first. Otherwise a graph id matches a graph's name; when the model has one graph, any single id is
taken to mean it. Keys are tried as an operator name, an output tensor name, then an operator index, within
that graph.

The value becomes the metric named by ``name`` (default ``value``); ``bgColor``/``textColor`` become the
element's ``fillcolor``/``fontcolor`` style (colours we cannot check are dropped). ``gradient`` (colour stops
from the minimum to the maximum value) and ``thresholds`` (upper bounds with colours) are kept on the metric
where the annotation model has room for them (``MetricInfo.gradient`` / ``MetricInfo.thresholds``).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from renderer.annotations.lookup import load_json, node_ref
from renderer.annotations.style import normalize_color
from renderer.core.errors import AnnotationError
from renderer.core.id_rules import whole_number
from renderer.core.ir import Graph, Model, Node
from renderer.core.records import AnnotationSet, Entry, MetricInfo, metric_value

NAME = "model-explorer"
DESCRIPTION = "Model Explorer node data JSON (graph-keyed or bare, results by node id or output tensor)"

_RESULTS = re.compile(r'"results"\s*:\s*\{')
_GENERIC = re.compile(r'^\s*\{\s*"(?:graph|operators|tensors)"\s*:')
_METRIC = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\- ]{0,60}$")


def match(path: Path, head: str) -> bool:
    return (
        head.lstrip().startswith("{")
        and _RESULTS.search(head) is not None
        and _GENERIC.match(head) is None
        and "netron:attachment" not in head
    )


def read(path: Path, model: Model) -> AnnotationSet:
    data = load_json(path)
    if not isinstance(data, dict):
        raise AnnotationError(f"{path}: Model Explorer node data is a JSON object")
    if "results" in data:
        graphs: list[tuple[str | None, Any]] = [(None, data)]
    else:
        graphs = list(data.items())
        if not graphs or not all(isinstance(body, dict) and "results" in body for _, body in graphs):
            raise AnnotationError(
                f"{path}: expected 'results', or graph ids mapping to objects with 'results'"
            )
    result = AnnotationSet(source=NAME, path=str(path))
    adapter_ids = _adapter_ids(model)
    for graph_id, body in graphs:
        metric = (
            body.get("name") if isinstance(body.get("name"), str) and _METRIC.match(body["name"]) else "value"
        )
        where = f"{path}: graph {graph_id!r}" if graph_id is not None else str(path)
        results = body.get("results")
        if not isinstance(results, dict):
            raise AnnotationError(f"{where}: 'results' must map node ids to results")
        graph = _graph(model, graph_id)
        info = result.metrics.setdefault(
            metric, MetricInfo(metric, NAME, "", None, "Model Explorer node data")
        )
        _colouring(where, body, info)
        for key, item in results.items():
            entry = _entry(where, key, item, metric)
            node = adapter_ids.get((graph_id, key)) or (_node(graph, key) if graph is not None else None)
            if node is None:
                result.unmatched.append(key if graph_id is None else f"{graph_id}/{key}")
            else:
                result.operators.append((node_ref(node), entry))
    return result


def _adapter_ids(model: Model) -> dict[tuple[str | None, str], Node]:
    """(graph id, node id) as Model Explorer's ONNX adapter names them → operator; graph id None: the main one."""
    if model.format != "onnx":
        return {}
    from renderer.annotations.model_explorer_ids import MAIN_GRAPH_FALLBACK, onnx_node_ids

    main = model.main.name or MAIN_GRAPH_FALLBACK
    found: dict[tuple[str | None, str], Node] = {}
    for (_, s, n), (graph_id, node_id) in onnx_node_ids(model).items():
        node = model.graphs[s].nodes[n]
        found[(graph_id, node_id)] = node
        if graph_id == main:
            found[(None, node_id)] = node
    return found


def _graph(model: Model, graph_id: str | None) -> Graph | None:
    if graph_id is None:
        return model.graphs[0] if model.graphs else None
    named = [g for g in model.graphs if g.name == graph_id]
    if len(named) == 1:
        return named[0]
    if len(model.graphs) == 1:
        return model.graphs[0]
    return None


def _node(graph: Graph, key: str) -> Node | None:
    named = [n for n in graph.nodes if n.name == key]
    if len(named) == 1:
        return named[0]
    producers = [v.producer for v in graph.values if v.name == key and v.producer is not None]
    if len(producers) == 1:
        return producers[0]
    index = whole_number(key)
    if index is not None and index < len(graph.nodes):
        return graph.nodes[index]
    return None


def _entry(where: str, key: str, item: Any, metric: str) -> Entry:
    if not isinstance(item, dict) or "value" not in item:
        raise AnnotationError(f"{where}: results[{key[:60]!r}] must be an object with a 'value'")
    value = item["value"]
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise AnnotationError(f"{where}: results[{key[:60]!r}].value must be a number or a string")
    entry = Entry({metric: value})
    for field, attr in (("bgColor", "fillcolor"), ("textColor", "fontcolor")):
        color = item.get(field)
        if isinstance(color, str):
            checked = normalize_color(color)
            if checked is not None:
                entry.style[attr] = checked
    return entry


def _colouring(where: str, body: dict[str, Any], info: MetricInfo) -> None:
    gradient = body.get("gradient") or []
    thresholds = body.get("thresholds") or []
    if not isinstance(gradient, list) or not isinstance(thresholds, list):
        raise AnnotationError(f"{where}: 'gradient' and 'thresholds' must be lists")
    stops = []
    for item in gradient:
        if (
            isinstance(item, dict)
            and isinstance(item.get("stop"), (int, float))
            and isinstance(item.get("bgColor"), str)
        ):
            color, stop = normalize_color(item["bgColor"]), metric_value(item["stop"])
            if stop is None:
                raise AnnotationError(f"{where}: gradient stop {str(item['stop'])[:40]} is not a finite number")
            if color is not None:
                stops.append((stop, color))
    bounds = []
    for item in thresholds:
        if (
            isinstance(item, dict)
            and isinstance(item.get("value"), (int, float))
            and isinstance(item.get("bgColor"), str)
        ):
            color, bound = normalize_color(item["bgColor"]), metric_value(item["value"])
            if bound is None:
                raise AnnotationError(f"{where}: threshold value {str(item['value'])[:40]} is not a finite number")
            if color is not None:
                bounds.append((bound, color))
    fields = getattr(type(info), "__dataclass_fields__", {})
    if stops and "gradient" in fields:
        info.gradient = sorted(stops)  # type: ignore[attr-defined]
    if bounds and "thresholds" in fields:
        info.thresholds = sorted(bounds)  # type: ignore[attr-defined]
