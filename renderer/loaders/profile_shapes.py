"""Shapes from an onnxruntime profile: those of a real run, recorded for every operator it ran, with no run here.

Each node event of a profile carries the shapes of the node's inputs and outputs (``input_type_shape``,
``output_type_shape``). Those of the first run are written into the main graph: the graph inputs' dims (so a
model with free dims needs no ``--dim``), then every tensor static inference left without a static shape. The
loader then runs static inference again, which carries the shapes on through what onnxruntime fused or folded
away. Mapping events to operators is the profile reader's (``annotations.ort_profile``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..escape import clean
from .ort_shapes import missing_shapes, write_shapes

if TYPE_CHECKING:
    import onnx

    from ..ir import Model

Recorded = dict[str, tuple[str, list[int]]]
"""Tensor name → (onnxruntime's type name, dims)."""


def recorded(model: Model, profiles: Sequence[Path]) -> Recorded:
    """The shapes the ``profiles`` recorded for ``model``'s main graph (the first profile wins a disagreement)."""
    from ..annotations.ort_profile import recorded_shapes

    shapes: Recorded = {}
    for path in profiles:
        for name, shape in recorded_shapes(path, model).items():
            shapes.setdefault(name, shape)
    return shapes


def pin_inputs(graph: onnx.GraphProto, shapes: Recorded) -> list[str]:
    """Set the graph inputs' dims to the recorded ones where the rank agrees; the inputs whose dims that changed
    (free dims pinned, or fixed ones the profiled run had otherwise)."""
    initializers = {t.name for t in graph.initializer}
    pinned = []
    for value in graph.input:
        found = shapes.get(value.name)
        if value.name in initializers or found is None or not value.type.HasField("tensor_type"):
            continue
        shape = value.type.tensor_type.shape
        if value.type.tensor_type.HasField("shape") and len(shape.dim) != len(found[1]):
            continue
        if value.type.tensor_type.HasField("shape") and [d.dim_value if d.HasField("dim_value") else None
                                                         for d in shape.dim] == found[1]:
            continue
        shape.Clear()
        for size in found[1]:
            shape.dim.add().dim_value = size
        pinned.append(f"{clean(value.name, 60)} {'×'.join(map(str, found[1])) or 'scalar'}")
    return pinned


def write(graph: onnx.GraphProto, shapes: Recorded) -> int:
    """Write the recorded shapes of the tensors that have no static shape; how many were written."""
    import onnx

    def elem_type(name: str) -> int:
        try:
            return int(onnx.TensorProto.DataType.Value(name.upper()))
        except ValueError:
            return onnx.TensorProto.UNDEFINED

    missing = missing_shapes(graph)
    return write_shapes(graph, {name: [elem_type(shapes[name][0]), shapes[name][1]]
                                for name in missing if name in shapes})


def note(path: Path, profiles: Sequence[Path], pinned: list[str], written: int, graph: onnx.GraphProto) -> str:
    """The line saying where the shapes came from, and how many tensors are still without one; "" when the
    profile changed nothing (a model whose shapes are all static, profiled with them)."""
    names = ", ".join(clean(str(p), 120) for p in profiles)
    left = len(missing_shapes(graph))
    if not written and not left:
        inputs = ", ".join(pinned[:3]) + (", …" if len(pinned) > 3 else "")
        return f"{path}: input shapes taken from the onnxruntime profile {names} ({inputs})" if pinned else ""
    rest = f"; {left} tensor{'s' if left != 1 else ''} it did not record still {'have' if left != 1 else 'has'} " \
           "no shape (--inputs FILE.npz runs the model on real values)" if left else ""
    return f"{path}: shapes of {written} tensors that static inference cannot reach were taken from the " \
           f"onnxruntime profile {names} (its first run){rest}"


__all__ = ["Recorded", "note", "pin_inputs", "recorded", "write"]
