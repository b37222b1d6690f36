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
from dataclasses import dataclass
from functools import cache

from renderer.data.categories import runs_subgraphs
from renderer.data.operators import formula_table, operator
from renderer.metrics.formulas import (
    ZERO,
    Cost,
    NotCountable,
    convolution,
    matmul,
    per_element,
    pooling,
    prod,
    recurrent,
    reduction,
    resize,
    transposed_convolution,
)
from renderer.metrics.opview import Op


@dataclass(frozen=True, slots=True)
class _Direction:
    """The input slots of one direction of a TFLite LSTM (``lstm_shared.h`` / ``bidirectional_sequence_lstm.cc``).

    Attributes:
        weights: input-to-gate ×4, recurrent-to-gate ×4, peepholes ×3, projection, aux-input-to-gate ×4;
            each element multiplies once per step and batch row.
        biases: gate biases ×4 and the projection bias: one add per element.
        norms: layer-norm coefficients ×4 (one multiply per element, in ``weights`` too) and 4 operations per
            element to normalize (mean, variance, subtract, divide: layer norm's 5 with the coefficient).
        forget: input_to_forget_weights [n_cell, n_input], never optional: its rows are the cells.
    """

    weights: tuple[int, ...]
    biases: tuple[int, ...]
    norms: tuple[int, ...]
    forget: int


_LSTM = (_Direction((1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 16, 20, 21, 22, 23), (12, 13, 14, 15, 17),
                    (20, 21, 22, 23), 2),)
_BIDIRECTIONAL_LSTM = (_Direction((*range(1, 12), 16, 40, 41, 42, 43), (12, 13, 14, 15, 17), (), 2),
                       _Direction((*range(18, 29), 33, 44, 45, 46, 47), (29, 30, 31, 32, 34), (), 19))
_NORM_OPS = 4


def _conv_2d(op: Op) -> Cost:
    return convolution(op.out_elements(), op.weight_shape(1), 0, op.has(2))


def _depthwise_conv_2d(op: Op) -> Cost:
    return convolution(op.out_elements(), op.weight_shape(1), 3, op.has(2))


def _conv_3d(op: Op) -> Cost:  # filter [kd, kh, kw, I, O]
    return convolution(op.out_elements(), op.weight_shape(1), 4, op.has(2))


def _transpose_conv(op: Op) -> Cost:  # inputs: output_shape, filter [O, kh, kw, I], input, bias
    return transposed_convolution(op.elements(2), op.out_elements(), op.weight_shape(1), 3, op.has(3))


def _transpose_conv_bias(op: Op) -> Cost:  # MediaPipe's custom op; inputs: input, filter [O, kh, kw, I], bias
    return transposed_convolution(op.elements(0), op.out_elements(), op.weight_shape(1), 3, op.has(2))


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


def _steps(op: Op) -> tuple[int, int]:
    """(steps, batch) of a recurrent op's input: [batch, time, input], [time, batch, input] when time_major
    (BIDIRECTIONAL_SEQUENCE_LSTM's default), or one step [batch, input] (LSTM, RNN)."""
    x = op.shape(0)
    if len(x) == 3:
        return (x[0], x[1]) if op.attr("time_major", False) else (x[1], x[0])
    if len(x) == 2:
        return 1, x[0]
    raise NotCountable(f"input of rank {len(x)}")


def _lstm_cost(op: Op, ops: int, directions: tuple[_Direction, ...]) -> Cost:
    steps, batch = _steps(op)
    total = ZERO
    for d in directions:
        elements = {s: prod(op.weight_shape(s)) for s in {*d.weights, *d.biases} if op.has(s)}
        cells = op.weight_shape(d.forget)[0]
        norms = sum(elements.get(s, 0) for s in d.norms)
        total = total + recurrent(steps, batch, sum(elements.get(s, 0) for s in d.weights),
                                  sum(elements.get(s, 0) for s in d.biases) + _NORM_OPS * norms, cells, int(ops))
    return total


def _lstm(op: Op, ops: int) -> Cost:
    """LSTM, UNIDIRECTIONAL_SEQUENCE_LSTM: ``ops`` elementwise operations per cell and step."""
    if op.attr("kernel_type") == "BASIC":
        raise NotCountable("basic LSTM kernel (concatenated weights)")
    return _lstm_cost(op, ops, _LSTM)


def _bidirectional_lstm(op: Op, ops: int) -> Cost:
    """BIDIRECTIONAL_SEQUENCE_LSTM: forward and backward LSTMs over the same input, each as ``_lstm``."""
    return _lstm_cost(op, ops, _BIDIRECTIONAL_LSTM)


def _rnn_cost(op: Op, ops: int, directions: tuple[tuple[int, int, int, int | None], ...]) -> Cost:
    """(weights [units, input], recurrent weights, bias, aux weights) slots per direction."""
    steps, batch = _steps(op)
    total = ZERO
    for w_slot, r_slot, b_slot, aux_slot in directions:
        w = op.weight_shape(w_slot)
        weights = prod(w) + prod(op.weight_shape(r_slot))
        if aux_slot is not None and op.has(aux_slot):
            weights += prod(op.weight_shape(aux_slot))
        bias = prod(op.weight_shape(b_slot)) if op.has(b_slot) else 0
        total = total + recurrent(steps, batch, weights, bias, w[0], int(ops))
    return total


def _rnn(op: Op, ops: int) -> Cost:
    """RNN, UNIDIRECTIONAL_SEQUENCE_RNN: ``ops`` elementwise operations per unit and step."""
    return _rnn_cost(op, ops, ((1, 2, 3, None),))


def _bidirectional_rnn(op: Op, ops: int) -> Cost:
    """BIDIRECTIONAL_SEQUENCE_RNN: input, then per direction weights, recurrent weights, bias, hidden state
    (1–4 forward, 5–8 backward), then aux input 9 and its weights 10 (forward), 11 (backward)."""
    return _rnn_cost(op, ops, ((1, 2, 3, 10), (5, 6, 7, 11)))


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
    "transpose_conv": _transpose_conv, "transpose_conv_bias": _transpose_conv_bias,
    "conv_3d_transpose": _conv_3d_transpose,
    "fully_connected": _fully_connected, "batch_matmul": _batch_matmul, "pool": _pool, "l2_pool": _l2_pool,
    "lrn": _lrn, "resize_bilinear": _resize_bilinear, "resize_nearest": _resize_nearest, "lstm": _lstm,
    "bidirectional_lstm": _bidirectional_lstm, "rnn": _rnn, "bidirectional_rnn": _bidirectional_rnn, "add_n": _add_n,
    "none": _no_arithmetic, "elementwise": _elementwise, "reduction": _reduction,
}
"""The formulas an entry's ``cost`` may name; numbers of the entry are keyword arguments."""
_OWN_ACTIVATION = frozenset({"none", "lstm", "bidirectional_lstm", "rnn", "bidirectional_rnn"})
"""Formulas a fused activation adds nothing to: data movement, and recurrent ops, whose activation is among
their operations per unit (``ops``)."""


@cache
def formula_by_op() -> dict[tuple[str, str], Callable[[Op], Cost]]:
    """(op type, "") → its formula, (custom code, "custom") for a custom op the data knows, from the data (checked:
    every name resolves)."""
    return formula_table("tflite", FORMULAS)


def cost(op: Op) -> Cost:
    """MACs of one TFLite operator; NotCountable with the reason when there is no formula or shape."""
    name = op.type
    custom = op.node.domain == "custom"
    formula = formula_by_op().get((name, "custom" if custom else ""))
    if custom and formula is None:
        raise NotCountable(f"custom op {name}")
    if formula is None:
        if runs_subgraphs("tflite", name):
            raise NotCountable("control flow: the called subgraph's operators are counted one by one")
        raise NotCountable(f"no formula for {name}")
    base = formula(op)
    if operator("tflite", name).cost in _OWN_ACTIVATION:  # type: ignore[union-attr]
        return base
    activation = op.attr("fused_activation_function")
    if activation and activation != "NONE":
        base = base + per_element(op.out_elements())
    return base


def weight_slots(op: Op) -> tuple[tuple[int, None], ...]:
    """(slot, None) of the op's weight inputs, from the data (zero points come from the tensors' own
    quantization parameters)."""
    entry = operator("tflite", op.type)
    if entry is None or entry.weights == "all" or op.node.domain == "custom" and "custom" not in entry.cost_by_domain:
        return ()
    return entry.weights  # type: ignore[return-value]


def quantization_slots(op: Op) -> frozenset[int]:
    """TFLite keeps scales and zero points in the tensors' quantization parameters, never in inputs."""
    return frozenset()


def attribute_weights(op: Op) -> tuple[int, int]:
    """TFLite operators keep no learned values in their options."""
    return 0, 0
