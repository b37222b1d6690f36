"""Shapes from an onnxruntime profile: those of a real run, recorded for every operator it ran, with no run here.

Each node event of a profile carries the shapes of the node's inputs and outputs (``input_type_shape``,
``output_type_shape``), for the operators inside If branches and Loop/Scan bodies too (onnxruntime profiles
the nodes of the subgraphs it runs like any other). Those of the first run are written into the model: the
main graph inputs' dims (so a model with free dims needs no ``--dim``), then every tensor static inference left
without a static shape, in the graph that holds it. A branch the run did not take recorded nothing: its shapes
stay unknown and the note says how many. The loader then runs static inference again, which carries the shapes
on through what onnxruntime fused or folded away. Mapping events to operators is the profile reader's
(``annotations.ort_profile``). The onnxruntime run of ``--inputs`` records such a profile of its own when
subgraphs lack shapes (``ort_shapes``), and it is read here the same way.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from renderer.core.escape import clean
from renderer.loaders.onnx.ort_shapes import missing_shapes, write_shapes

if TYPE_CHECKING:
    import onnx

    from renderer.core.ir import Model

Recorded = dict[str, tuple[str, list[int]]]
"""Tensor name → (onnxruntime's type name, dims)."""
ByGraph = dict[int, Recorded]
"""Graph index → the shapes recorded for its tensors; a graph none of whose operators ran has no entry."""


def recorded(model: Model, profiles: Sequence[Path]) -> ByGraph:
    """The shapes the ``profiles`` recorded for ``model``'s graphs (the first profile wins a disagreement)."""
    from renderer.annotations.readers.ort_profile import recorded_shapes

    shapes: ByGraph = {}
    for path in profiles:
        for index, found in recorded_shapes(path, model).items():
            known = shapes.setdefault(index, {})
            for name, shape in found.items():
                known.setdefault(name, shape)
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


def write(graphs: Sequence[onnx.GraphProto], shapes: ByGraph) -> int:
    """Write the recorded shapes of the tensors that have no static shape into ``graphs`` (the main graph and its
    subgraphs, in ``Model.graphs`` order); how many were written."""
    import onnx

    def elem_type(name: str) -> int:
        try:
            return int(onnx.TensorProto.DataType.Value(name.upper()))
        except ValueError:
            return onnx.TensorProto.UNDEFINED

    written = 0
    for index, graph in enumerate(graphs):
        found = shapes.get(index, {})
        written += write_shapes(graph, {name: [elem_type(found[name][0]), found[name][1]]
                                        for name in missing_shapes(graph) if name in found})
    return written


def left(graphs: Sequence[onnx.GraphProto], shapes: ByGraph) -> tuple[int, int]:
    """(tensors still without a shape in graphs that ran, those in subgraphs that did not run)."""
    ran = not_run = 0
    for index, graph in enumerate(graphs):
        count = len(missing_shapes(graph))
        if index == 0 or index in shapes:
            ran += count
        else:
            not_run += count
    return ran, not_run


def not_run_clause(count: int) -> str:
    """"; 212 tensors in subgraphs the run did not take (If branches, Loop bodies) keep no shape" or ""."""
    if not count:
        return ""
    return f"; {count} tensor{'s' if count != 1 else ''} in subgraphs the run did not take (If branches, Loop " \
           f"bodies) keep{'' if count != 1 else 's'} no shape"


def note(path: Path, profiles: Sequence[Path], pinned: list[str], written: int,
         remaining: tuple[int, int]) -> str:
    """The line saying where the shapes came from, and how many tensors are still without one (``left``); ""
    when the profile changed nothing (a model whose shapes are all static, profiled with them)."""
    names = ", ".join(clean(str(p), 120) for p in profiles)
    missed, not_run = remaining
    if not written and not missed and not not_run:
        inputs = ", ".join(pinned[:3]) + (", …" if len(pinned) > 3 else "")
        return f"{path}: input shapes taken from the onnxruntime profile {names} ({inputs})" if pinned else ""
    rest = f"; {missed} tensor{'s' if missed != 1 else ''} it did not record still " \
           f"{'have' if missed != 1 else 'has'} no shape (--inputs FILE.npz runs the model on real values)" \
        if missed else ""
    return f"{path}: shapes of {written} tensors that static inference cannot reach were taken from the " \
           f"onnxruntime profile {names} (its first run){rest}{not_run_clause(not_run)}"


__all__ = ["ByGraph", "Recorded", "left", "not_run_clause", "note", "pin_inputs", "recorded", "write"]
