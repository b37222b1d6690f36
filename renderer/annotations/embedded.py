"""Annotations stored inside the model file itself.

Read from a model:

* ONNX: every node's ``metadata_props`` (operator values) and the model's ``metadata_props`` (graph values);
* an OpenVINO execution graph: each primitive's ``execTimeMcs`` (``readers.openvino_exec_graph.own_times``);
* ONNX and TFLite: the entry ``annograph.annotations`` written by ``annograph embed``. In ONNX it is a model
  ``metadata_props`` entry; in TFLite a ``Metadata`` entry of the model whose buffer holds the text (the
  extension point TFLite provides for tool data, rather than operators' ``custom_options``).

The entry is UTF-8 JSON, keyed by subgraph and operator/tensor index (the numbering of ``annograph info``)::

    {"format": "annograph.annotations", "version": 1,
     "graph":     {"values": {"title": "…"}, "style": {}},
     "operators": [{"subgraph": 0, "operator": 14, "name": "conv1", "values": {"latency_us": 13.0},
                    "style": {"fillcolor": "#ff0000"}}],
     "tensors":   [{"subgraph": 0, "tensor": 56, "name": "x", "values": {"bytes": 4096}}],
     "metrics":   {"latency_us": {"unit": "µs", "higher_is_better": false, "description": "…",
                                  "source": "ort"}}}

``name`` is informational (the operator's display name or the tensor's name when written). Values keep their
JSON types, styles are checked like any annotation file's, and an index outside the model is reported as
unmatched. ``annograph embed`` also copies operator values into ONNX node ``metadata_props`` (as text) so other
ONNX tools show them; when the entry is present, its values win over those copies.
"""

from __future__ import annotations

import json
from typing import Any

from renderer.annotations.lookup import TOO_MANY_DIGITS
from renderer.annotations.metric_meta import read_metric_infos
from renderer.annotations.style import validate_style
from renderer.core.errors import AnnotationError
from renderer.core.ir import Model
from renderer.core.records import Annotations, AnnotationSet, Entry, Ref, json_values
from renderer.version import __version__

NAME = "embedded"
ENTRY = "annograph.annotations"
"""Name of the ONNX metadata_props key and of the TFLite Metadata entry."""
FORMAT_VERSION = 1
MAX_ENTRY_BYTES = 256 << 20


def from_model(model: Model) -> list[AnnotationSet]:
    """The model's own annotations as an annotation set (empty list when it has none)."""
    result = AnnotationSet(source=NAME, path=model.path)
    document = _stored_document(model)
    if document is not None:
        _from_document(document, model, result, f"{model.path}: metadata {ENTRY!r}")
    if model.format == "onnx":
        _from_onnx_props(model, result)
    if model.format == "openvino-exec":  # the times the execution graph carries, as the exec-graph reader reads them
        from renderer.annotations.readers.openvino_exec_graph import own_times

        return [result, own_times(model)] if result.operators or result.graph.values else [own_times(model)]
    if not result.operators and not result.tensors and not result.graph.values and not result.graph.style:
        return []
    return [result]


def _from_onnx_props(model: Model, result: AnnotationSet) -> None:
    have = {ref.key: entry for ref, entry in result.operators if isinstance(ref, Ref)}
    for node in model.nodes():
        if not node.metadata:
            continue
        entry = have.get(node.key)
        if entry is None:
            result.operators.append((Ref("op", node.graph.index, node.index), Entry(dict(node.metadata))))
        else:
            for key, value in node.metadata.items():
                entry.values.setdefault(key, value)
    for value in model.values():
        if value.metadata and value.graph is not None:
            result.tensors.append((Ref("t", value.graph.index, value.index), Entry(dict(value.metadata))))
    for key, value in model.metadata.items():
        if key != ENTRY:
            result.graph.values.setdefault(key, value)


def _stored_document(model: Model) -> Any:
    if ENTRY not in model.metadata:
        return None
    if model.format == "onnx":
        text = model.metadata[ENTRY]
    elif model.format == "tflite":
        data = model.attachments.get(ENTRY)  # the buffer of the Metadata entry, found by the loader
        if data is None:
            return None
        if len(data) > MAX_ENTRY_BYTES:
            raise AnnotationError(f"{model.path}: metadata {ENTRY!r} is larger than {MAX_ENTRY_BYTES} bytes")
        try:
            text = bytes(data).rstrip(b"\0").decode("utf-8")
        except UnicodeDecodeError:
            raise AnnotationError(f"{model.path}: metadata {ENTRY!r} is not UTF-8 text") from None
    else:
        return None
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise AnnotationError(
            f"{model.path}: metadata {ENTRY!r}: invalid JSON at line {e.lineno} ({e.msg})"
        ) from None
    except RecursionError:
        raise AnnotationError(f"{model.path}: metadata {ENTRY!r}: invalid JSON (nested too deeply)") from None
    except ValueError:
        raise AnnotationError(f"{model.path}: metadata {ENTRY!r}: invalid JSON ({TOO_MANY_DIGITS})") from None


def _from_document(document: Any, model: Model, result: AnnotationSet, where: str) -> None:
    if not isinstance(document, dict):
        raise AnnotationError(f"{where}: expected a JSON object")
    version = document.get("version", FORMAT_VERSION)
    if not isinstance(version, int) or version > FORMAT_VERSION:
        raise AnnotationError(
            f"{where}: version {version!r} is newer than this annograph reads ({FORMAT_VERSION})"
        )
    graph = document.get("graph") or {}
    if not isinstance(graph, dict):
        raise AnnotationError(f"{where}: 'graph' must be an object")
    result.graph = _entry(graph, f"{where} graph")
    for section, kind, index_key in (("operators", "op", "operator"), ("tensors", "t", "tensor")):
        items = document.get(section) or []
        if not isinstance(items, list):
            raise AnnotationError(f"{where}: '{section}' must be a list")
        target = result.operators if kind == "op" else result.tensors
        for position, item in enumerate(items):
            item_where = f"{where} {section}[{position}]"
            if not isinstance(item, dict):
                raise AnnotationError(f"{item_where}: must be an object")
            sub, index = item.get("subgraph", 0), item.get(index_key)
            if not _is_index(sub) or not _is_index(index):
                raise AnnotationError(f"{item_where}: needs integer 'subgraph' and '{index_key}'")
            count = 0
            if sub < len(model.graphs):
                graph_ = model.graphs[sub]
                count = len(graph_.nodes) if kind == "op" else len(graph_.values)
            if index >= count:
                result.unmatched.append(f"{sub}:{index}")
                continue
            target.append((Ref(kind, sub, index), _entry(item, item_where)))
    result.metrics.update(read_metric_infos(document.get("metrics"), NAME, where, strict=False))


def _is_index(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _entry(item: dict[str, Any], where: str) -> Entry:
    values = item.get("values") or {}
    style = item.get("style") or {}
    if not isinstance(values, dict) or not isinstance(style, dict):
        raise AnnotationError(f"{where}: 'values' and 'style' must be objects")
    clean: dict[str, Any] = {}
    for key, value in values.items():
        if isinstance(value, (dict, list)):
            value = json.dumps(value, ensure_ascii=False)
        elif value is not None and not isinstance(value, (str, int, float, bool)):
            value = str(value)
        clean[str(key)] = value
    return Entry(clean, validate_style(style, where))


def document(annotations: Annotations, model: Model) -> dict[str, Any]:
    """The ``annograph.annotations`` JSON object for merged ``annotations`` on ``model``."""
    doc: dict[str, Any] = {
        "format": ENTRY,
        "version": FORMAT_VERSION,
        "generator": f"annograph {__version__}",
    }
    graph = annotations.graph
    if graph.values or graph.style:
        doc["graph"] = {
            "values": json_values(graph.values),
            **({"style": dict(graph.style)} if graph.style else {}),
        }
    ops = []
    for (_, s, n), entry in sorted(annotations.ops.items()):
        node = model.graphs[s].nodes[n]
        item: dict[str, Any] = {
            "subgraph": s,
            "operator": n,
            "name": node.display_name,
            "values": json_values(entry.values),
        }
        if entry.style:
            item["style"] = dict(entry.style)
        ops.append(item)
    tensors = []
    for (_, s, n), entry in sorted(annotations.tensors.items()):
        value = model.graphs[s].values[n]
        item = {"subgraph": s, "tensor": n, "name": value.name, "values": json_values(entry.values)}
        if entry.style:
            item["style"] = dict(entry.style)
        tensors.append(item)
    doc["operators"] = ops
    doc["tensors"] = tensors
    metrics = {}
    for name, info in annotations.metrics.items():
        described = {
            "unit": info.unit,
            "higher_is_better": info.higher_is_better,
            "description": info.description,
            "source": info.source,
        }
        metrics[name] = {k: v for k, v in described.items() if v not in ("", None)}
    doc["metrics"] = metrics
    return doc

