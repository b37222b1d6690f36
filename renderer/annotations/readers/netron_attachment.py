"""Netron attachment JSON: ``{"signature": "netron:attachment", "metadata": [...], "metrics": [...]}``.

Netron opens such a file beside a model and shows its items in the sidebar (``source/metadata.js`` in Netron's
repository). Each item is ``{"kind": ..., "target": <name> | "identifier": <id>, "name": ..., "value": ...,
"type": ...}`` with kind ``model``, ``graph``, ``node``, ``value`` or ``tensor``:

* ``node`` by ``target``: the node's name (ONNX), else an output tensor name; by ``identifier``: the operator
  index (Netron's identifier for TFLite operators);
* ``value`` / ``tensor`` by ``target``: the tensor name (only the first line counts, as in Netron); by
  ``identifier``: the tensor index;
* ``model`` / ``graph`` items (``target`` "") become graph values.

Items from ``metrics`` are numbers in practice and usable for colouring; ``metadata`` items are shown as text
(numbers among them are metrics too, as anywhere).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from renderer.annotations.lookup import load_json, node_ref, value_ref
from renderer.core.errors import AnnotationError
from renderer.core.id_rules import IdIndex, whole_number
from renderer.core.ir import Model
from renderer.core.records import AnnotationSet, Entry, Ref

NAME = "netron"
DESCRIPTION = 'Netron attachment JSON ("signature": "netron:attachment")'
SIGNATURE = "netron:attachment"

_KINDS = ("model", "graph", "node", "value", "tensor")


def match(path: Path, head: str) -> bool:
    return head.lstrip().startswith("{") and SIGNATURE in head


def read(path: Path, model: Model) -> AnnotationSet:
    data = load_json(path)
    if not isinstance(data, dict) or data.get("signature") != SIGNATURE:
        raise AnnotationError(f'{path}: not a Netron attachment (needs "signature": "{SIGNATURE}")')
    result = AnnotationSet(source=NAME, path=str(path))
    lookup = IdIndex.build(model)
    entries: dict[Ref, Entry] = {}
    order: list[Ref] = []
    unmatched: list[str] = []
    for container in ("metadata", "metrics"):
        items = data.get(container, [])
        if not isinstance(items, list):
            raise AnnotationError(f"{path}: '{container}' must be a list of items")
        for position, item in enumerate(items):
            where = f"{path}: {container}[{position}]"
            kind, name, value, ident = _item(where, item)
            if kind in ("model", "graph"):
                result.graph.values[name] = value
                continue
            ref = _resolve(lookup, model, kind, item)
            if ref is None:
                label = f"{kind} {ident}"
                if label not in unmatched:
                    unmatched.append(label)
                continue
            if ref not in entries:
                entries[ref] = Entry()
                order.append(ref)
            entries[ref].values[name] = value
    result.unmatched = unmatched
    for ref in order:
        (result.operators if ref.kind == "op" else result.tensors).append((ref, entries[ref]))
    return result


def _item(where: str, item: Any) -> tuple[str, str, Any, str]:
    if not isinstance(item, dict):
        raise AnnotationError(f"{where}: each item must be an object")
    kind, name = item.get("kind"), item.get("name")
    if kind not in _KINDS:
        raise AnnotationError(f"{where}: kind must be one of {', '.join(_KINDS)}")
    if not isinstance(name, str) or not name:
        raise AnnotationError(f"{where}: 'name' must be a non-empty string")
    if "target" not in item and "identifier" not in item:
        raise AnnotationError(f"{where}: needs a 'target' or an 'identifier'")
    ident = item["target"] if "target" in item else f"[{item['identifier']}]"
    if not isinstance(ident, (str, int)) or isinstance(ident, bool):
        raise AnnotationError(f"{where}: 'target' must be a string")
    value = item.get("value")
    if isinstance(value, (dict, list)):
        value = json.dumps(value, ensure_ascii=False)[:1000]
    elif value is not None and not isinstance(value, (str, int, float, bool)):
        value = str(value)
    return kind, name.split("\n", 1)[0], value, str(ident)


def _resolve(lookup: IdIndex, model: Model, kind: str, item: dict[str, Any]) -> Ref | None:
    main = model.graphs[0] if model.graphs else None
    if "target" in item:
        target = str(item["target"]).split("\n", 1)[0]
        if kind == "node":
            node = lookup.node(target) or lookup.producer(target)
            return node_ref(node) if node is not None else None
        value = lookup.value(target)
        return value_ref(value) if value is not None else None
    index = whole_number(str(item["identifier"]))
    if main is None or index is None:
        return None
    if kind == "node":
        return node_ref(main.nodes[index]) if index < len(main.nodes) else None
    return value_ref(main.values[index]) if index < len(main.values) else None
