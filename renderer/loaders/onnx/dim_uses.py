"""What the operators that read a free input dim make of it: a feature size a weight fixes, a sequence or a batch.

A dim whose name says nothing (``input_dim_1``, ``unk__56``) is read by its place (``free_dims``), and a place can
mislead: madmom's ``input [input_dim_0, input_dim_1]`` is [frames, features], not [batch, samples]. Symbolic shape
inference carries the input's dims through Unsqueeze, Transpose and elementwise operators to the first operator
that gives them a meaning:

* a weight's size: an LSTM/GRU/RNN's ``W[..., input_size]``, a Conv's in-channels (``W[1] · group``), a MatMul's
  or Gemm's inner dim ``K``: the dim is that feature size, no assumption at all;
* an LSTM/GRU/RNN's sequence or batch axis (by its ``layout``), a Conv's batch axis or one of its spatial axes
  (a 2-D convolution's height and width, a 1-D or 3-D one's lengths: not a batch).
"""

from __future__ import annotations

from collections.abc import Iterable

import onnx

from renderer.loaders.free_dims import Use
from renderer.loaders.registry import decode_text

RECURRENT = frozenset({"LSTM", "GRU", "RNN"})


SENTINEL = 100_003
"""The k-th wanted dim is pinned to ``k · SENTINEL`` for the inference: sizes no real input has, whose products and
sums with another's are far from any other, so a size within ``NEAR`` of one is that dim padded or cropped."""
NEAR = 256


def uses(light: onnx.ModelProto, dims: Iterable[str]) -> dict[str, Use]:
    """The use of each of ``dims`` in the main graph of ``light`` (a model without its weights' bytes, its input
    dims unpinned; changed here), for the dims some operator gives a meaning; the first operator in graph order
    wins. The dims are pinned to sentinel sizes for one shape inference, which carries sizes where it would drop
    a name (a Pad adds to a size; a symbolic dim it would replace by a new name)."""
    wanted = {name: (k + 1) * SENTINEL for k, name in enumerate(sorted(set(dims)))}
    if not wanted:
        return {}
    for value in light.graph.input:
        for dim in value.type.tensor_type.shape.dim if value.type.HasField("tensor_type") else ():
            if dim.HasField("dim_param") and dim.dim_param in wanted:
                dim.dim_value = wanted[dim.dim_param]
    del light.graph.value_info[:]
    try:
        inferred = onnx.shape_inference.infer_shapes(light, check_type=False, strict_mode=False, data_prop=True)
    except Exception:  # noqa: BLE001 - best effort: no use found is the place rule's answer
        return {}
    graph = inferred.graph
    shapes = {decode_text(v.name): _shape(v) for v in (*graph.input, *graph.value_info, *graph.output)}
    shapes.update((decode_text(t.name), tuple(int(d) for d in t.dims)) for t in graph.initializer)
    names = {size: name for name, size in wanted.items()}
    found: dict[str, Use] = {}
    for node in graph.node:
        for dim, use in _node_uses(node, shapes, names):
            if dim not in found:
                found[dim] = use
        if len(found) == len(wanted):
            break
    return found


def _shape(value: onnx.ValueInfoProto) -> tuple[int | None, ...] | None:
    if not value.type.HasField("tensor_type") or not value.type.tensor_type.HasField("shape"):
        return None
    return tuple(int(d.dim_value) if d.HasField("dim_value") else None for d in value.type.tensor_type.shape.dim)


def _attribute(node: onnx.NodeProto, name: str, default: int) -> int:
    return next((int(a.i) for a in node.attribute if a.name == name), default)


def _dim(size: int | None, names: dict[int, str], exact: bool) -> str | None:
    """The wanted dim ``size`` is (``exact``), or is near (padded or cropped)."""
    if size is None or size < SENTINEL - NEAR:
        return None
    nearest = round(size / SENTINEL) * SENTINEL
    if exact and size != nearest or abs(size - nearest) > NEAR:
        return None
    return names.get(nearest)


def _node_uses(node: onnx.NodeProto, shapes: dict[str, tuple[int | None, ...] | None],
               names: dict[int, str]) -> list[tuple[str, Use]]:
    """(dim, use) for each wanted dim ``node``'s data input carries where the operator gives it a meaning."""
    inputs = [decode_text(n) for n in node.input]
    if len(inputs) < 2 or not inputs[0]:
        return []
    x, w = shapes.get(inputs[0]), shapes.get(inputs[1])
    if not x or not w or not all(isinstance(d, int) and 0 < d < SENTINEL - NEAR for d in w):
        return []
    where = f"{node.op_type} {decode_text(node.name)}".strip()
    result: list[tuple[int, Use]] = []
    if node.op_type in RECURRENT and len(x) == 3 and len(w) == 3:
        sequence, batch = (1, 0) if _attribute(node, "layout", 0) else (0, 1)
        result = [(2, Use("feature", int(w[2]), where)), (sequence, Use("sequence", None, where)),
                  (batch, Use("batch", None, where))]
    elif node.op_type == "Conv" and len(x) >= 3 and len(w) == len(x):
        result = [(1, Use("feature", int(w[1]) * _attribute(node, "group", 1), where)), (0, Use("batch", None, where))]
        spatial = ["height", "width"] if len(x) == 4 else ["sequence"] * (len(x) - 2)
        result += [(axis, Use(role, None, where)) for axis, role in enumerate(spatial, 2)]
    elif node.op_type == "MatMul" and len(w) >= 2:
        result = [(len(x) - 1, Use("feature", int(w[-2]), where))]
    elif node.op_type == "Gemm" and len(x) == 2 and len(w) == 2:
        inner = w[1] if _attribute(node, "transB", 0) else w[0]
        result = [(0 if _attribute(node, "transA", 0) else 1, Use("feature", int(inner), where))]
    found = [(_dim(x[axis], names, use.role in ("feature", "batch")), use) for axis, use in result]
    return [(dim, use) for dim, use in found if dim is not None]
