"""TFLite builtin operators → the same cost formulas as ONNX, and which inputs are weights.

Which operator uses which formula, with which numbers, and which of its inputs are weights, is data: the
operator's entry in ``renderer/data/tflite-ops.json`` (``data.operators``); here are the formulas it names
(``FORMULAS``). Layouts differ from ONNX (NHWC activations, ``[O, kh, kw, I]`` filters), so each structured
formula says which weight axis holds the channels; elementwise ops count as their ONNX counterparts. A fused
activation (``fused_activation_function`` other than NONE) adds one operation per output element, as the
separate activation op would in ONNX (but not to an op whose formula is ``none``).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache

from ..data.categories import runs_subgraphs
from ..data.operators import formula_table, operator
from .formulas import (
    ZERO, Cost, NotCountable, convolution, matmul, per_element, pooling, prod, recurrent, reduction, resize,
    transposed_convolution,
)
from .opview import Op

_LSTM_WEIGHTS = (1, 2, 3, 4, 5, 6, 7, 8, 16)  # input-to-gate ×4, recurrent-to-gate ×4, projection
_LSTM_BIASES = (12, 13, 14, 15, 17)


def _conv_2d(op: Op) -> Cost:
    return convolution(op.out_elements(), op.weight_shape(1), 0, op.has(2))


def _depthwise_conv_2d(op: Op) -> Cost:
    return convolution(op.out_elements(), op.weight_shape(1), 3, op.has(2))


def _conv_3d(op: Op) -> Cost:  # filter [kd, kh, kw, I, O]
    return convolution(op.out_elements(), op.weight_shape(1), 4, op.has(2))


def _transpose_conv(op: Op) -> Cost:  # inputs: output_shape, filter [O, kh, kw, I], input, bias
    return transposed_convolution(op.elements(2), op.out_elements(), op.weight_shape(1), 3, op.has(3))


def _conv_3d_transpose(op: Op) -> Cost:  # inputs: output_shape, filter [kd, kh, kw, O, I], input, bias
    return transposed_convolution(op.elements(2), op.out_elements(), op.weight_shape(1), 4, op.has(3))


def _fully_connected(op: Op) -> Cost:  # weights [O, I]
    weights = op.weight_shape(1)
    if len(weights) != 2:
        raise NotCountable(f"weights of rank {len(weights)}")
    return matmul(op.out_elements(), weights[1], op.has(2))


def _batch_matmul(op: Op) -> Cost:
    x = op.weight_shape(0)
    inner = x[-2] if op.attr("adj_x", False) else x[-1]
    return matmul(op.out_elements(), inner)


def _pool(op: Op) -> Cost:
    return pooling(op.out_elements(), (op.int_attr("filter_height", 1), op.int_attr("filter_width", 1)))


def _l2_pool(op: Op) -> Cost:
    return pooling(op.out_elements(), (op.int_attr("filter_height", 1), op.int_attr("filter_width", 1))) \
        + per_element(op.out_elements())  # the square root


def _lrn(op: Op) -> Cost:
    return per_element(op.out_elements(), 2 * op.int_attr("radius", 0) + 1 + 2)


def _resize_bilinear(op: Op) -> Cost:
    return resize(op.out_elements(), 2, "linear")


def _lstm(op: Op, ops: int) -> Cost:
    """``ops`` elementwise operations per cell and step."""
    x = op.shape(0)
    if len(x) == 3:  # sequence ops: [batch, time, input], or [time, batch, input] when time_major
        steps, batch = (x[0], x[1]) if op.attr("time_major", False) else (x[1], x[0])
    else:  # LSTM: one step [batch, input]
        steps, batch = 1, x[0]
    weights = sum(prod(op.weight_shape(s)) for s in _LSTM_WEIGHTS if op.has(s))
    biases = sum(prod(op.weight_shape(s)) for s in _LSTM_BIASES if op.has(s))
    cells = op.weight_shape(2)[0]  # input_to_forget_weights [n_cell, n_input]
    return recurrent(steps, batch, weights, biases, cells, int(ops))


def _rnn(op: Op, ops: int) -> Cost:
    """``ops`` elementwise operations per unit and step."""
    x, w, r = op.shape(0), op.weight_shape(1), op.weight_shape(2)
    if len(x) == 3:
        steps, batch = (x[0], x[1]) if op.attr("time_major", False) else (x[1], x[0])
    else:
        steps, batch = 1, x[0]
    bias = prod(op.weight_shape(3)) if op.has(3) else 0
    return recurrent(steps, batch, prod(w) + prod(r), bias, w[0], int(ops))


def _add_n(op: Op) -> Cost:
    return per_element(op.out_elements(), max(1, op.data_inputs() - 1))


def _resize_nearest(op: Op) -> Cost:
    """Nearest-neighbour copies (a fused activation still counts, unlike ``none``)."""
    return ZERO


def _no_arithmetic(op: Op) -> Cost:
    """Ops that move, select or reinterpret data: 0 MACs, and a fused activation is not counted."""
    return ZERO


def _elementwise(op: Op, ops: float = 1) -> Cost:
    """``ops`` operations per output element, as the ONNX op with the same arithmetic."""
    return per_element(op.out_elements(), ops)


def _reduction(op: Op) -> Cost:
    """One operation per input element."""
    return reduction(op.elements(0))


FORMULAS: dict[str, Callable[..., Cost]] = {
    "conv_2d": _conv_2d, "depthwise_conv_2d": _depthwise_conv_2d, "conv_3d": _conv_3d,
    "transpose_conv": _transpose_conv, "conv_3d_transpose": _conv_3d_transpose,
    "fully_connected": _fully_connected, "batch_matmul": _batch_matmul, "pool": _pool, "l2_pool": _l2_pool,
    "lrn": _lrn, "resize_bilinear": _resize_bilinear, "resize_nearest": _resize_nearest, "lstm": _lstm,
    "rnn": _rnn, "add_n": _add_n, "none": _no_arithmetic, "elementwise": _elementwise, "reduction": _reduction,
}
"""The formulas an entry's ``cost`` may name; numbers of the entry are keyword arguments."""


@cache
def formula_by_op() -> dict[tuple[str, str], Callable[[Op], Cost]]:
    """(op type, "") → its formula, from the data (checked: every name resolves)."""
    return formula_table("tflite", FORMULAS)


def cost(op: Op) -> Cost:
    """MACs of one TFLite operator; NotCountable with the reason when there is no formula or shape."""
    name = op.type
    if op.node.domain == "custom":
        raise NotCountable(f"custom op {name}")
    formula = formula_by_op().get((name, ""))
    if formula is None:
        if runs_subgraphs("tflite", name):
            raise NotCountable("control flow: the called subgraph's operators are counted one by one")
        raise NotCountable(f"no formula for {name}")
    base = formula(op)
    if operator("tflite", name).cost == "none":  # type: ignore[union-attr]  # moves data: no fused activation
        return base
    activation = op.attr("fused_activation_function")
    if activation and activation != "NONE":
        base = base + per_element(op.out_elements())
    return base


def weight_slots(op: Op) -> tuple[tuple[int, None], ...]:
    """(slot, None) of the op's weight inputs, from the data (zero points come from the tensors' own
    quantization parameters)."""
    entry = operator("tflite", op.type)
    if op.node.domain == "custom" or entry is None or entry.weights == "all":
        return ()
    return entry.weights  # type: ignore[return-value]
