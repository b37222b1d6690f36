"""Sizes for a TFLite model's dynamic input axes that nothing pins and that the file gives no size.

A converter writes each dynamic axis (-1 in ``shape_signature``) as 1 in ``shape``. For a batch that is a size;
for a length or an image side it is none: openWakeWord's melspectrogram, input ``[-1, -1]`` written ``[1, 1]``,
was drawn cutting 512-sample windows out of 1 sample. Such an axis past the first whose placeholder is 1 takes
``free_dims``' rules, as an ONNX model's unnamed dim does (axis 1 of a 2-D or 3-D input is a sequence: 128; the
spatial axes of an image: 224), if LiteRT prepares the model at that size with no tensor left empty (a window
longer than the input); else each of ``free_dims``' retry sizes in turn. When none prepares (a custom operator
LiteRT lacks, no runtime), the placeholder stays.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

from renderer.core.ir import AssumedDim
from renderer.loaders import free_dims
from renderer.loaders.tflite import litert_shapes

SIZED = frozenset({"sequence", "height", "width"})
"""The roles whose placeholder 1 is no size (a batch of 1 is one)."""
PREPARES = "the first size LiteRT prepares the model at"
"""How the source of a size taken after the assumed one failed begins."""


class Input(NamedTuple):
    """A main-graph input as the file declares it."""

    index: int
    name: str
    shape: tuple[int, ...]
    signature: tuple[int, ...]
    integer: bool


def _slots(inputs: Sequence[Input], dims: Mapping[str, int]) -> list[free_dims.Slot]:
    """Each unpinned dynamic axis past the first whose placeholder is 1, named as ``--dim`` pins it (``axisK``)."""
    found = []
    for value in inputs:
        if len(value.shape) != len(value.signature):
            continue
        named = tuple(f"axis{axis}" if declared == -1 else size
                      for axis, (size, declared) in enumerate(zip(value.shape, value.signature)))
        for axis, (size, declared) in enumerate(zip(value.shape, value.signature)):
            if axis and declared == -1 and size == 1 and litert_shapes.axis_value(dims, axis) is None:
                found.append(free_dims.Slot(f"axis{axis}", value.name, axis, named, value.integer))
    return found


def assumed_sizes(path: Path, inputs: Sequence[Input], dims: Mapping[str, int]) -> list[AssumedDim]:
    """The lengths and image sides to load the model at (none when nothing qualifies or LiteRT prepares none)."""
    slots = _slots(inputs, dims)
    if not slots:
        return []
    _, assumed = free_dims.assume(path, slots, {}, {}, [])
    assumed = [a for a in assumed if a.role in SIZED]
    if not assumed:
        return []
    base = {value.name: [litert_shapes.axis_value({a.name: a.value for a in assumed}, axis) or size
                         for axis, size in enumerate(value.shape)] for value in inputs}
    tries = [({a.name: a.value for a in assumed}, base), *free_dims.retries(slots, assumed, base)]
    by_name = {value.name: value.index for value in inputs}
    for number, (change, shapes) in enumerate(tries):
        prepared, _ = litert_shapes.propagate(path, {by_name[name]: tuple(shape) for name, shape in shapes.items()
                                                     if name in {slot.input for slot in slots}})
        if prepared and not any(0 in shape for shape in prepared.values()):  # an empty tensor: too short
            return [a if a.name not in change or not number else
                    AssumedDim(a.name, change[a.name], a.role, _source(a, tries[:number + 1])) for a in assumed]
    return []


def _source(first: AssumedDim, tried: Sequence[tuple[dict[str, int], object]]) -> str:
    sizes = ", ".join(str(change[first.name]) for change, _ in tried if first.name in change)
    return f"{PREPARES} ({first.value} fails; tried {sizes})"
