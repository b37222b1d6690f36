"""The ids Model Explorer's ONNX adapter (``model-explorer-onnx``) gives an ONNX model's operators.

Model Explorer matches node data to nodes by node id, and that adapter makes a node's id from its name after
three steps, which this module follows on annograph's model:

* onnx_ir's ``NameFixPass`` names every node: an unnamed node becomes ``node`` (then ``node_1``, ``node_2``…),
  and a name already taken in the same graph gets ``_1``, ``_2``…; the counters are shared by the whole model,
  the taken names are per graph. Nodes are visited in file order, each node's graphs right after it.
* ``If`` branches are embedded in the graph holding the ``If``: a branch node is named
  ``<If name>/<attribute>/<its name>`` (again inside nested branches).
* Other graphs an operator runs (``Loop``, ``Scan`` bodies) are graphs of their own, ``<operator name>/<attribute>``,
  only for operators of the main graph (after embedding); deeper bodies are not shown, so they get no id.

The main graph's id is its name, or ``<main>``.
"""

from __future__ import annotations

import collections
from collections.abc import Iterator

from renderer.core.ir import ElementKey, Graph, Model, Node, SubgraphRef

MAIN_GRAPH_FALLBACK = "<main>"


def onnx_node_ids(model: Model) -> dict[ElementKey, tuple[str, str]]:
    """Operator key → (Model Explorer graph id, node id), for every operator the adapter shows."""
    fixed = _fixed_names(model)
    ids: dict[ElementKey, tuple[str, str]] = {}

    def place(graph: Graph, graph_id: str, prefix: str, in_main: bool) -> None:
        for node in graph.nodes:
            name = prefix + fixed[node.key]
            ids[node.key] = (graph_id, name)
            for attribute, sub in _graph_attributes(model, node):
                if node.op_type == "If" and node.domain in ("", "ai.onnx"):
                    place(sub, graph_id, f"{name}/{attribute}/", in_main)
                elif in_main:
                    place(sub, f"{name}/{attribute}", "", False)

    place(model.main, model.main.name or MAIN_GRAPH_FALLBACK, "", True)
    return ids


def _fixed_names(model: Model) -> dict[ElementKey, str]:
    """Every node's name as ``NameFixPass`` leaves it."""
    counter: collections.Counter[str] = collections.Counter()
    names: dict[ElementKey, str] = {}

    def walk(graph: Graph) -> None:
        taken: set[str] = set()
        for node in graph.nodes:
            preferred = node.name or "node"
            name = preferred
            while name in taken:
                counter[preferred] += 1
                name = f"{preferred}_{counter[preferred]}"
            taken.add(name)
            names[node.key] = name
            for _, sub in _graph_attributes(model, node):
                walk(sub)

    walk(model.main)
    return names


def _graph_attributes(model: Model, node: Node) -> Iterator[tuple[str, Graph]]:
    for attribute, value in node.attributes.items():
        refs = value if isinstance(value, list) else [value]
        for ref in refs:
            if isinstance(ref, SubgraphRef):
                yield attribute, model.graphs[ref.index]
