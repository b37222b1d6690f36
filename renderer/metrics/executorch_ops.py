"""ExecuTorch kernels → the same cost formulas as ONNX, and which inputs are weights.

Which kernel uses which formula is data: the operator's entry in ``renderer/data/executorch-ops.json``
(``data.operators``); here are the formulas it names (``FORMULAS``). Input slots are the schema's argument
positions (``loaders.executorch``): ``convolution(input, weight [O, I/g, k…], bias, …, transposed, …)``,
``addmm(bias, mat1, mat2)``. Layers count as the ONNX layer the same module exports to (a ``linear`` as ``Gemm``;
ExecuTorch's ``permute_copy`` + ``addmm`` as ``Transpose`` + ``Gemm``). A delegate call runs a backend's own graph:
its operators are not counted (the box lists them).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache

from renderer.data.operators import formula_table, operator
from renderer.metrics import tflite_ops
from renderer.metrics.formulas import Cost, NotCountable, convolution, matmul, pooling, transposed_convolution
from renderer.metrics.opview import Op

FORMAT = "executorch"
_TRANSPOSED_ARG = 6  # convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups)
_KERNEL_ARG = 1  # max_pool2d_with_indices / avg_pool2d (self, kernel_size, …)


def _conv(op: Op) -> Cost:
    if op.attr("transposed", op.attr(f"arg{_TRANSPOSED_ARG}")) is True:
        return transposed_convolution(op.elements(0), op.out_elements(), op.weight_shape(1), 0, op.has(2))
    return convolution(op.out_elements(), op.weight_shape(1), 0, op.has(2))


def _inner(op: Op, slot: int) -> int:
    shape = op.weight_shape(slot)
    if not shape:
        raise NotCountable("scalar operand of a matrix product")
    return shape[-1]


def _linear(op: Op) -> Cost:
    """``linear(input, weight [out, in], bias)``: as ONNX Gemm."""
    return matmul(op.out_elements(), _inner(op, 1), op.has(2))


def _addmm(op: Op) -> Cost:
    """``addmm(bias, mat1 [n, k], mat2 [k, m])``: the product, and the bias added to every output."""
    return matmul(op.out_elements(), _inner(op, 1), op.has(0))


def _matmul(op: Op) -> Cost:
    return matmul(op.out_elements(), _inner(op, 0))


def _pool(op: Op) -> Cost:
    kernel = op.attr("kernel_size", op.attr(f"arg{_KERNEL_ARG}"))
    if not isinstance(kernel, list) or not kernel or not all(isinstance(k, int) and not isinstance(k, bool)
                                                              for k in kernel):
        raise NotCountable("no kernel_size")
    spatial = len(op.out_shape()) - 2
    return pooling(op.out_elements(), kernel * spatial if len(kernel) == 1 else kernel)


FORMULAS: dict[str, Callable[..., Cost]] = {
    "convolution": _conv, "linear": _linear, "addmm": _addmm, "matmul": _matmul, "pool": _pool,
    **{name: tflite_ops.FORMULAS[name] for name in ("none", "elementwise", "reduction")},  # the same counts
}
"""The formulas an entry's ``cost`` may name; numbers of the entry are keyword arguments."""


@cache
def formula_by_op() -> dict[tuple[str, str], Callable[[Op], Cost]]:
    return formula_table(FORMAT, FORMULAS)


def cost(op: Op) -> Cost:
    """MACs of one kernel call; NotCountable with the reason for delegates and kernels without a formula."""
    if op.node.domain == "delegate":
        raise NotCountable(f"a {op.type} delegate runs its own graph (its operators are listed in the box)")
    formula = formula_by_op().get((op.type, ""))
    if formula is None:
        raise NotCountable(f"no formula for {op.type}")
    return formula(op)


def weight_slots(op: Op) -> tuple[tuple[int, None], ...]:
    entry = operator(FORMAT, op.type)
    if op.node.domain == "delegate" or entry is None or entry.weights == "all":
        return ()
    return entry.weights  # type: ignore[return-value]


def quantization_slots(op: Op) -> frozenset[int]:
    return frozenset()


def attribute_weights(op: Op) -> tuple[int, int]:
    return 0, 0
