"""Write annotations into a copy of an ONNX model.

* Each annotated operator's values go into its ``NodeProto.metadata_props`` as text (``latency_us`` →
  ``"13.2"``), so Netron and other ONNX tools show them.
* Graph values go into ``ModelProto.metadata_props``.
* The whole annotation set (typed values, styles, tensors, metric units) goes into the model
  ``metadata_props`` entry ``annograph.annotations`` (see ``renderer.annotations.embedded``).

Keys written by an earlier ``annograph embed`` (listed in the old entry) are removed first, so embedding again
replaces rather than accumulates; other metadata is left alone. Nothing else in the model changes. External
data files are not copied: a model with external data can only be written into its own folder.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from renderer.annotations.embedded import ENTRY, document
from renderer.annotations.registry import input_paths
from renderer.core.errors import AnnographError
from renderer.core.ir import Model
from renderer.core.records import Annotations
from renderer.files.atomic import write_bytes


def embed(model: Model, annotations: Annotations, output: str | Path) -> dict[str, int]:
    """Write the copy; return counts of what was stored (operators, tensors, graph values)."""
    from renderer.loaders.onnx.loader import graphs as graphs_of
    from renderer.loaders.onnx.loader import stored_proto

    source = Path(model.path)
    output = Path(output)
    proto = stored_proto(model)
    graphs = graphs_of(proto.graph)  # in the loader's numbering
    if _uses_external_data(graphs) and output.resolve().parent != source.resolve().parent:
        raise AnnographError(
            f"{source}: the model keeps weights in external data files; write the annotated copy "
            f"into the same folder ({source.parent}) so its references still resolve"
        )

    previous = _previous_keys(proto)
    for graph_index, graph in enumerate(graphs):
        for node_index, node in enumerate(graph.node):
            stale = previous.get((graph_index, node_index), set())
            for key in stale:
                _remove_prop(node.metadata_props, key)

    doc = document(annotations, model)
    for item in doc["operators"]:
        node = graphs[item["subgraph"]].node[item["operator"]]
        _set_props(node.metadata_props, {k: _prop_text(v) for k, v in item["values"].items() if v is not None})
    graph_values = doc.get("graph", {}).get("values", {})
    model_props = {k: _prop_text(v) for k, v in graph_values.items() if v is not None and k != ENTRY}
    for key in previous.get(("model",), set()):
        if key not in model_props:
            _remove_prop(proto.metadata_props, key)
    model_props[ENTRY] = json.dumps(doc, ensure_ascii=False, separators=(",", ":"))
    _set_props(proto.metadata_props, model_props)
    try:
        data = proto.SerializeToString()
    except ValueError as e:  # protobuf refuses messages over 2 GiB
        raise AnnographError(f"{source}: cannot serialize the annotated model ({e})") from None
    write_bytes(output, data, input_paths(model, annotations))
    return {
        "operators": len(doc["operators"]),
        "tensors": len(doc["tensors"]),
        "graph values": len(graph_values),
    }


def _uses_external_data(graphs: list[Any]) -> bool:
    from onnx import TensorProto

    for graph in graphs:
        for tensor in graph.initializer:
            if tensor.data_location == TensorProto.EXTERNAL:
                return True
    return False


def _previous_keys(proto: Any) -> dict[tuple[Any, ...], set[str]]:
    """Keys an earlier embed wrote: (S, N) → node keys, ("model",) → model keys."""
    old = next((p.value for p in proto.metadata_props if p.key == ENTRY), None)
    if old is None:
        return {}
    try:
        doc = json.loads(old)
    except (json.JSONDecodeError, RecursionError):
        return {}
    keys: dict[tuple[Any, ...], set[str]] = {}
    if not isinstance(doc, dict):
        return keys
    for item in doc.get("operators") or []:
        if isinstance(item, dict) and isinstance(item.get("values"), dict):
            keys[(item.get("subgraph", 0), item.get("operator"))] = set(item["values"])
    graph = doc.get("graph")
    if isinstance(graph, dict) and isinstance(graph.get("values"), dict):
        keys[("model",)] = set(graph["values"])
    return keys


def _set_props(props: Any, values: dict[str, str]) -> None:
    existing = {p.key: p for p in props}
    for key, value in values.items():
        if key in existing:
            existing[key].value = value
        else:
            props.add(key=key, value=value)


def _remove_prop(props: Any, key: str) -> None:
    keep = [(p.key, p.value) for p in props if p.key != key]
    if len(keep) != len(props):
        del props[:]
        for k, v in keep:
            props.add(key=k, value=v)


def _prop_text(value: Any) -> str:
    """A value as ONNX metadata_props text (JSON spelling for booleans, full float precision)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    return str(value)
