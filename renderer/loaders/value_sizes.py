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

from ..data.operators import with_fold, with_size_from
from ..escape import clean

if TYPE_CHECKING:
    import onnx

    from ..ir import Graph

_TFLITE_SIZE_FROM: Mapping[str, tuple[int, ...] | None] = {
    **dict.fromkeys(["RANGE", "WHERE", "UNIQUE", "NON_MAX_SUPPRESSION_V4", "NON_MAX_SUPPRESSION_V5", "IF", "WHILE"]),
    **dict.fromkeys(["FILL", "SPLIT", "TRANSPOSE_CONV"], (0,)),
    **dict.fromkeys(["RESHAPE", "BROADCAST_TO", "TILE", "PAD", "PADV2", "MIRROR_PAD", "RESIZE_BILINEAR",
                     "RESIZE_NEAREST_NEIGHBOR", "TOPK_V2", "ONE_HOT", "EXPAND_DIMS", "TRANSPOSE", "ARG_MAX", "ARG_MIN",
                     "MEAN", "SUM", "REDUCE_MAX", "REDUCE_MIN", "REDUCE_PROD", "REDUCE_ANY", "REDUCE_ALL",
                     "SEGMENT_SUM", "RFFT2D"], (1,)),
    **dict.fromkeys(["SLICE", "SPLIT_V", "SPACE_TO_BATCH_ND", "BATCH_TO_SPACE_ND"], (1, 2)),
    "STRIDED_SLICE": (1, 2, 3),
    **dict.fromkeys(["SCATTER_ND", "UNSORTED_SEGMENT_SUM", "UNSORTED_SEGMENT_MAX", "UNSORTED_SEGMENT_MIN",
                     "UNSORTED_SEGMENT_PROD"], (2,)),
}
"""TFLite builtin operators (schema names) whose output size follows from the values of the inputs at these
positions (a shape, begin/size, multiples, paddings, axes, a count…; None: of every input). GATHER and
EMBEDDING_LOOKUP are not here: their size follows from the indices' shape, not their values."""
_TFLITE_VALUES_FROM_SIZE = frozenset({"SHAPE"})
"""TFLite operators whose output values are their input's size."""
_NAMED = 3
"""Tensors named in a note."""


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


def tflite_value_sized(graph: Graph) -> dict[int, list[str]]:
    """The tensors of a loaded TFLite ``graph`` (its main graph) whose size depends on the values of the graph's
    inputs: tensor index → the names of the inputs whose values decide it, in input order. Only a tensor with a
    dynamic (-1) axis in its shape signature can be one: the file fixes every other size (an IF whose branches
    agree on their outputs' shapes)."""
    order = {value.index: value.name for value in graph.inputs}
    valued: dict[int, set[int]] = {value.index: {value.index} for value in graph.inputs if value.initializer is None}
    sized: dict[int, set[int]] = {}
    for node in graph.nodes:
        inputs = [value.index for value in node.inputs if value is not None]
        positions = _TFLITE_SIZE_FROM.get(node.op_type, ()) if node.domain == "" else ()
        deciding = inputs if positions is None else [
            node.inputs[i].index for i in positions if i < len(node.inputs) and node.inputs[i] is not None]
        size = _union(sized, inputs) | _union(valued, deciding)
        values = _union(sized, inputs) if node.op_type in _TFLITE_VALUES_FROM_SIZE else _union(valued, inputs)
        for value in node.outputs:
            if values:
                valued[value.index] = values
            if size and value.type is not None and -1 in (value.type.shape_signature or ()):
                sized[value.index] = size
    return {index: [order[i] for i in sorted(sources)] for index, sources in sized.items()}


def _union(sources: Mapping[int, set[int]], indices: Iterable[int]) -> set[int]:
    return set().union(*(sources.get(i, set()) for i in indices))


def named(names: Sequence[str]) -> str:
    """"'a', 'b', 'c', …": the first few of ``names``, escaped."""
    return ", ".join(repr(clean(n, 60)) for n in names[:_NAMED]) + (", …" if len(names) > _NAMED else "")


__all__ = ["degenerate", "named", "tflite_value_sized", "value_sized"]
