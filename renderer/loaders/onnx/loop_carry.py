"""The shapes of a Loop's carried values inside its body, from the values the Loop starts with.

tf2onnx writes a Keras LSTM as a Loop whose body declares its carried state ``[unk__477, 300]``, a name of its
own: the body's ``h·R`` MatMul then has no size although the state the Loop starts with is ``[1, 300]`` once the
main graph's shapes are known. A carried value whose body hands it back at the size it started with keeps that size
every iteration, so the body's input is given it; one whose size changes per iteration (a growing concatenation)
is left as declared.
"""

from __future__ import annotations

from collections.abc import Callable

import onnx


def _static(value: onnx.ValueInfoProto | None) -> list[int] | None:
    if value is None or not value.type.HasField("tensor_type") or not value.type.tensor_type.HasField("shape"):
        return None
    dims = value.type.tensor_type.shape.dim
    return [int(d.dim_value) for d in dims] if all(d.HasField("dim_value") for d in dims) else None


def _sizes(graph: onnx.GraphProto) -> dict[str, list[int]]:
    found = {t.name: [int(d) for d in t.dims] for t in graph.initializer}
    for value in (*graph.input, *graph.value_info, *graph.output):
        static = _static(value)
        if static is not None:
            found[value.name] = static
    return found


def _carried(proto: onnx.ModelProto) -> list[tuple[onnx.GraphProto, int, list[int]]]:
    """(body, carried index, size it starts with) of each carried value whose body input's size is open."""
    loops = [node for node in proto.graph.node if node.op_type == "Loop"]
    outer = _sizes(proto.graph) if loops else {}
    found = []
    for node in loops:
        body = next((a.g for a in node.attribute if a.name == "body"), None)
        if body is None:
            continue
        for k, name in enumerate(node.input[2:]):
            start, inner = outer.get(name), body.input[2 + k] if 2 + k < len(body.input) else None
            if start is None or inner is None or _static(inner) is not None:
                continue
            if inner.type.HasField("tensor_type") and len(inner.type.tensor_type.shape.dim) == len(start):
                found.append((body, k, start))
    return found


def _set(body: onnx.GraphProto, k: int, sizes: list[int]) -> list[int]:
    """Give the body's k-th carried input ``sizes`` where it has none: the axes given."""
    given = []
    for axis, (dim, size) in enumerate(zip(body.input[2 + k].type.tensor_type.shape.dim, sizes)):
        if not dim.HasField("dim_value"):
            dim.dim_value = size
            given.append(axis)
    return given


def carry(proto: onnx.ModelProto, infer: Callable[[onnx.ModelProto], onnx.ModelProto]) -> onnx.ModelProto:
    """``proto`` with the main graph's Loops' bodies given the sizes of the values they carry where the body
    hands each back at that size (checked by shape ``infer``-ence); unchanged when no Loop carries an open size."""
    found = _carried(proto)
    if not found:
        return proto
    given = [(body, k, start, _set(body, k, start)) for body, k, start in found]
    proto = infer(proto)
    undone = 0
    for body, k, start, axes in given:
        back = _static(body.output[1 + k]) if 1 + k < len(body.output) else None
        if back != start:
            undone += 1
            for axis in axes:
                body.input[2 + k].type.tensor_type.shape.dim[axis].Clear()
    return infer(proto) if undone else proto
