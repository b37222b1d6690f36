"""How many times an ONNX subgraph's operators run in one run of the model, as far as the shapes say.

A ``Scan`` runs its body once per slice of its scan inputs along their scan axes, a number the inputs' shapes give
(skl2onnx's k-nearest-neighbours: one body run per training sample). A ``Loop``'s trip count is a value, and its
condition may end it early; an ``If`` runs one branch once: their bodies' operators count one run each, as the
docs say. So a body's operators are counted once for each run of every ``Scan`` they are nested in.
"""

from __future__ import annotations

from renderer.core.ir import Graph, Node
from renderer.metrics.formulas import NotCountable
from renderer.metrics.opview import label, static_shape

SCAN_DOMAINS = ("", "ai.onnx")


def runs(graph: Graph) -> int:
    """The product of the lengths of the Scans ``graph`` is (nested in) the body of; 1 for any other graph.
    NotCountable when a length is unknown."""
    count = 1
    while graph.parent is not None:
        node = graph.parent
        if node.op_type == "Scan" and node.domain in SCAN_DOMAINS:
            count *= scan_length(node)
        graph = node.graph
    return count


def scan_length(node: Node) -> int:
    """How many times the Scan ``node`` runs its body: its first scan input's length along its scan axis (every
    scan input has that length). Opset 8's Scan has a batch axis 0 and the sequence on axis 1, and runs the body
    once per batch row and step when no ``sequence_lens`` gives each row its own length."""
    count = int(node.attributes.get("num_scan_inputs", 0) or 0)
    inputs = node.inputs
    if count <= 0 or count > len(inputs) or inputs[len(inputs) - count] is None:
        raise NotCountable(f"the body runs once per element of Scan {node.name or node.index}'s scan inputs, "
                           "which it does not name")
    first = inputs[len(inputs) - count]
    try:
        shape = static_shape(first)
    except NotCountable as e:
        raise NotCountable(f"the body runs once per element of {label(first)} (Scan {node.name or node.index}): "
                           f"{e}") from None
    if node.subgraphs and len(inputs) == len(node.subgraphs[0].inputs) + 1:  # opset 8: sequence_lens first
        if inputs[0] is not None:
            raise NotCountable(f"Scan {node.name or node.index} gives each row its own length (sequence_lens)")
        return shape[0] * shape[1] if len(shape) >= 2 else 0
    axes = node.attributes.get("scan_input_axes") or [0]
    axis = int(axes[0])
    if not shape or not -len(shape) <= axis < len(shape):
        raise NotCountable(f"scan axis {axis} of {label(first)} is out of its shape")
    return shape[axis]

