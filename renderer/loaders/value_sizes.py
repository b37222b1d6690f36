"""Which tensor sizes depend on the *values* of a model's inputs, not only on their shapes.

A run on zero inputs gives the right size to everything that follows from the inputs' shapes (position ids
from ``Range(Shape(ids)[1])``, head splits through ``Shape → Gather → Concat → Reshape``). Sizes computed from the
inputs' values (a TTS decoder as long as its predicted durations, ``NonZero``, a ``Range`` to a computed limit)
are those of zero inputs, which can be degenerate: one frame, an empty tensor, or a run that fails (a speed of
0). Two facts are propagated through the main graph in node order: whether a tensor's values depend on the
inputs' values, and whether its size does.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from ..data.operators import with_fold, with_size_from

if TYPE_CHECKING:
    import onnx


def value_sized(graph: onnx.GraphProto) -> set[str]:
    """Names of the main graph's tensors whose size depends on the values of the graph's inputs."""
    initializers = {t.name for t in graph.initializer}
    valued = {vi.name for vi in graph.input if vi.name not in initializers}  # values follow the inputs' values
    sized: set[str] = set()
    # from the operator data: whose output size follows from the values of any input, or of the inputs after
    # the first (a shape, axes, pads…); whose output values are their input's size (Shape, Size)
    every, later = with_size_from("onnx", "every_input"), with_size_from("onnx", "later_inputs")
    values_from_size = with_fold("onnx", "shape")
    for node in graph.node:
        inputs = [name for name in node.input if name]
        if node.op_type in values_from_size:
            values, size = any(name in sized for name in inputs), False
        else:
            values = node.op_type != "ConstantOfShape" and any(name in valued for name in inputs)
            deciding = inputs if node.op_type in every else (inputs[1:] if node.op_type in later else [])
            size = any(name in sized for name in inputs) or any(name in valued for name in deciding)
        for name in node.output:
            if values:
                valued.add(name)
            if size:
                sized.add(name)
    return sized


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


__all__ = ["degenerate", "value_sized"]
