"""torch.export (ATen) operators → cost formulas, and which inputs are weights.

Which operator uses which formula is data: the operator's entry in ``renderer/data/torch-ops.json``
(``data.operators``). Here are the formulas it names (``FORMULAS``). They count as the ONNX formulas count the
layer ONNX writes for the same module (a ``linear`` as a ``Gemm``, or ``MatMul`` + ``Add``; a
``scaled_dot_product_attention`` as ONNX ``Attention``), so a program and its ONNX export have the same MACs
layer by layer. Input slots are the schema's argument positions (``loaders.torch_export.graph``); arguments that are
no tensors are attributes named as in the schema (``kernel_size``, ``transposed``, ``output_size``).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache

from renderer.data.categories import runs_subgraphs
from renderer.data.operators import formula_table, operator
from renderer.metrics import onnx_ops
from renderer.metrics.formulas import (
    Cost,
    NotCountable,
    attention,
    convolution,
    matmul,
    per_element,
    pooling,
    prod,
    reduction,
    resize,
    transposed_convolution,
)
from renderer.metrics.opview import Op

FORMAT = "torch"
_TRANSPOSED_ARG = 6  # convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups)
_WINDOW_ARG = 1  # max_pool2d_with_indices(self, kernel_size, …), adaptive_avg_pool2d(self, output_size)


def _argument(op: Op, name: str, position: int) -> object:
    """The argument ``name``, or, in an ExecuTorch program without its ETRecord (arguments named by position,
    ``argN``), the one at ``position``."""
    return op.attr(name, op.attr(f"arg{position}"))


def _conv(op: Op) -> Cost:
    if _argument(op, "transposed", _TRANSPOSED_ARG) is True:
        return _conv_transpose(op)
    return convolution(op.out_elements(), op.weight_shape(1), 0, op.has(2))


def _conv_transpose(op: Op) -> Cost:
    return transposed_convolution(op.elements(0), op.out_elements(), op.weight_shape(1), 0, op.has(2))


def _inner(op: Op, slot: int) -> int:
    shape = op.weight_shape(slot)
    if not shape:
        raise NotCountable("scalar operand of a matrix product")
    return shape[-1]


def _linear(op: Op) -> Cost:
    """``linear(input, weight [out, in], bias)``: as ONNX Gemm (or MatMul + Add)."""
    return matmul(op.out_elements(), _inner(op, 1), op.has(2))


def _addmm(op: Op) -> Cost:
    """``addmm(bias, mat1 [n, k], mat2 [k, m])`` (``baddbmm`` batched): the product, and the bias added to every
    output."""
    return matmul(op.out_elements(), _inner(op, 1), op.has(0))


def _matmul(op: Op) -> Cost:
    """``mm``, ``bmm``, ``matmul``."""
    return matmul(op.out_elements(), _inner(op, 0))


def _sdpa(op: Op) -> Cost:
    """Query [..., L, E], key [..., S, E], value [..., S, Ev]: every leading dim (batch, heads) is a head."""
    q, k, v = op.shape(0), op.shape(1), op.shape(2)
    if len(q) < 2 or len(k) < 2 or len(v) < 2:
        raise NotCountable(f"query, key, value of ranks {len(q)}, {len(k)}, {len(v)} (2 or more expected)")
    return attention(prod(q[:-2]), 1, q[-2], k[-2], q[-1], v[-1])


def _window(op: Op, name: str, spatial: int) -> list[int]:
    value = _argument(op, name, _WINDOW_ARG)
    if isinstance(value, int) and not isinstance(value, bool):
        return [value] * spatial
    if isinstance(value, list) and value and all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        return list(value) * spatial if len(value) == 1 else list(value)
    raise NotCountable(f"no {name}")


def _pool(op: Op) -> Cost:
    out = op.out_shape()
    return pooling(prod(out), _window(op, "kernel_size", max(1, len(out) - 2)))


def _adaptive(op: Op) -> tuple[tuple[int, ...], list[int]]:
    """The input shape and the window of each pooled axis (input / output when it divides)."""
    shape, out = op.shape(0), op.out_shape()
    spatial = len(_window(op, "output_size", 1)) if isinstance(_argument(op, "output_size", _WINDOW_ARG), list) \
        else len(out) - 2
    inputs, outputs = shape[-spatial:], out[-spatial:]
    if any(o <= 0 or i % o for i, o in zip(inputs, outputs)):
        raise NotCountable(f"adaptive pooling of {inputs} to {outputs}: windows of different sizes")
    return shape, [i // o for i, o in zip(inputs, outputs)]


def _adaptive_avg_pool(op: Op) -> Cost:
    shape, windows = _adaptive(op)
    if all(w == s for w, s in zip(windows, shape[-len(windows):])):  # to 1×1: GlobalAveragePool
        return reduction(prod(shape)) + per_element(op.out_elements())
    return pooling(op.out_elements(), windows)


def _adaptive_max_pool(op: Op) -> Cost:
    shape, windows = _adaptive(op)
    if all(w == s for w, s in zip(windows, shape[-len(windows):])):  # to 1×1: GlobalMaxPool
        return reduction(prod(shape))
    return pooling(op.out_elements(), windows)


def _resize(op: Op) -> Cost:
    before, after = op.shape(0), op.out_shape()
    changed = sum(1 for a, b in zip(before, after) if a != b)
    name = op.type
    mode = "cubic" if "cubic" in name else "linear" if ("linear" in name or "bilinear" in name) else "nearest"
    return resize(op.out_elements(), changed, mode)


FORMULAS: dict[str, Callable[..., Cost]] = {
    "conv": _conv, "conv_transpose": _conv_transpose, "linear": _linear, "addmm": _addmm, "matmul": _matmul,
    "sdpa": _sdpa, "pool": _pool, "adaptive_avg_pool": _adaptive_avg_pool, "adaptive_max_pool": _adaptive_max_pool,
    "resize": _resize,
    # the same arithmetic as ONNX's: data movement 0, ``ops`` per output element, one per input element
    **{name: onnx_ops.FORMULAS[name] for name in ("einsum", "none", "elementwise", "reduction")},
}
"""The formulas an entry's ``cost`` may name; numbers of the entry are keyword arguments."""


@cache
def formula_by_op() -> dict[tuple[str, str], Callable[[Op], Cost]]:
    """(op type, "") → its formula, from the data (checked: every name resolves)."""
    return formula_table(FORMAT, FORMULAS)


def cost(op: Op) -> Cost:
    """MACs of one operator of a torch.export program; NotCountable with the reason when there is no formula."""
    formula = formula_by_op().get((op.type, ""))
    if formula is None and runs_subgraphs(FORMAT, op.type):
        raise NotCountable("control flow: its subgraph operators are counted one by one")
    if formula is None:
        kind = "custom op" if op.node.domain not in ("aten", "_operator", "torch", "math") else "no formula for"
        raise NotCountable(f"{kind} {op.type}")
    return formula(op)


def weight_slots(op: Op) -> tuple[tuple[int, None], ...]:
    """(slot, None) of the op's weight inputs, from the data."""
    entry = operator(FORMAT, op.type)
    if entry is None:
        return ()
    if entry.weights == "all":
        return tuple((i, None) for i in range(len(op.node.inputs)))
    return entry.weights  # type: ignore[return-value]


def quantization_slots(op: Op) -> frozenset[int]:
    """The scales and zero points of quantized_decomposed ops are their later inputs, none a weight's."""
    return frozenset()


def attribute_weights(op: Op) -> tuple[int, int]:
    """ATen operators keep no learned values in their arguments."""
    return 0, 0
