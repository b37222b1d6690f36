"""TFLite builtin operators → the same cost formulas as ONNX, and which inputs are weights.

Layouts differ from ONNX (NHWC activations, ``[O, kh, kw, I]`` filters), so each structured op says which
weight axis holds the channels; elementwise ops map onto the ONNX op with the same arithmetic, so both formats
share one per-element table. A fused activation (``fused_activation_function`` other than NONE) adds one
operation per output element, as the separate activation op would in ONNX.
"""

from __future__ import annotations

from collections.abc import Callable

from . import onnx_ops
from ..categories import runs_subgraphs
from .formulas import (
    ZERO, Cost, NotCountable, convolution, matmul, per_element, pooling, prod, recurrent, reduction, resize,
    transposed_convolution,
)
from .opview import Op

# TFLite op → ONNX op with the same per-element arithmetic.
SAME_AS_ONNX: dict[str, str] = {
    "ADD": "Add", "SUB": "Sub", "MUL": "Mul", "DIV": "Div", "POW": "Pow", "FLOOR_DIV": "Div", "FLOOR_MOD": "Mod",
    "SQUARED_DIFFERENCE": "Sub", "NEG": "Neg", "ABS": "Abs", "FLOOR": "Floor", "CEIL": "Ceil", "ROUND": "Round",
    "SQRT": "Sqrt", "RSQRT": "Sqrt", "SQUARE": "Mul", "EXP": "Exp", "LOG": "Log", "SIN": "Sin", "COS": "Cos",
    "SIGN": "Sign", "RELU": "Relu", "RELU6": "Clip", "RELU_N1_TO_1": "Clip", "RELU_0_TO_1": "Clip",
    "LEAKY_RELU": "LeakyRelu", "PRELU": "PRelu", "ELU": "Elu", "GELU": "Gelu", "LOGISTIC": "Sigmoid",
    "TANH": "Tanh", "HARD_SWISH": "HardSwish", "MAXIMUM": "Max", "MINIMUM": "Min", "LESS": "Less",
    "LESS_EQUAL": "LessOrEqual", "GREATER": "Greater", "GREATER_EQUAL": "GreaterOrEqual", "EQUAL": "Equal",
    "NOT_EQUAL": "Equal", "LOGICAL_AND": "And", "LOGICAL_OR": "Or", "LOGICAL_NOT": "Not", "SELECT": "Where",
    "SELECT_V2": "Where", "BITWISE_XOR": "BitwiseXor", "RIGHT_SHIFT": "BitShift", "RANGE": "Range",
    "SOFTMAX": "Softmax", "LOG_SOFTMAX": "LogSoftmax", "L2_NORMALIZATION": "LpNormalization",
    "QUANTIZE": "QuantizeLinear", "DEQUANTIZE": "DequantizeLinear",
}

REDUCTIONS = frozenset({"MEAN", "SUM", "REDUCE_MAX", "REDUCE_MIN", "REDUCE_PROD", "REDUCE_ANY", "REDUCE_ALL",
                        "ARG_MAX", "ARG_MIN", "CUMSUM"})

NO_ARITHMETIC = frozenset({
    "RESHAPE", "TRANSPOSE", "CONCATENATION", "PAD", "PADV2", "MIRROR_PAD", "SPLIT", "SPLIT_V", "SLICE",
    "STRIDED_SLICE", "GATHER", "GATHER_ND", "SCATTER_ND", "SQUEEZE", "EXPAND_DIMS", "PACK", "UNPACK", "TILE",
    "BROADCAST_TO", "BROADCAST_ARGS", "SHAPE", "CAST", "DEPTH_TO_SPACE", "SPACE_TO_DEPTH", "SPACE_TO_BATCH_ND",
    "BATCH_TO_SPACE_ND", "REVERSE_V2", "REVERSE_SEQUENCE", "EMBEDDING_LOOKUP", "VAR_HANDLE", "READ_VARIABLE",
    "ASSIGN_VARIABLE", "ZEROS_LIKE", "ONES_LIKE", "FILL", "ONE_HOT", "WHERE", "BITCAST", "DYNAMIC_UPDATE_SLICE",
    "MATRIX_DIAG", "MATRIX_SET_DIAG", "UNIQUE", "HASHTABLE", "HASHTABLE_FIND", "HASHTABLE_IMPORT",
    "HASHTABLE_SIZE",
})

# Weight inputs (all zero points come from the tensors' own quantization parameters).
WEIGHT_SLOTS: dict[str, tuple[int, ...]] = {
    "CONV_2D": (1,), "DEPTHWISE_CONV_2D": (1,), "CONV_3D": (1,), "TRANSPOSE_CONV": (1,),
    "CONV_3D_TRANSPOSE": (1,), "FULLY_CONNECTED": (1,), "BATCH_MATMUL": (0, 1), "EMBEDDING_LOOKUP": (1,),
    "UNIDIRECTIONAL_SEQUENCE_LSTM": (1, 2, 3, 4, 5, 6, 7, 8, 16), "LSTM": (1, 2, 3, 4, 5, 6, 7, 8, 16),
    "UNIDIRECTIONAL_SEQUENCE_RNN": (1, 2), "RNN": (1, 2), "SVDF": (1, 2),
}

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


def _lstm(op: Op) -> Cost:
    x = op.shape(0)
    if len(x) == 3:  # sequence ops: [batch, time, input], or [time, batch, input] when time_major
        steps, batch = (x[0], x[1]) if op.attr("time_major", False) else (x[1], x[0])
    else:  # LSTM: one step [batch, input]
        steps, batch = 1, x[0]
    weights = sum(prod(op.weight_shape(s)) for s in _LSTM_WEIGHTS if op.has(s))
    biases = sum(prod(op.weight_shape(s)) for s in _LSTM_BIASES if op.has(s))
    cells = op.weight_shape(2)[0]  # input_to_forget_weights [n_cell, n_input]
    return recurrent(steps, batch, weights, biases, cells, onnx_ops.RECURRENT_OPS_PER_UNIT["LSTM"])


def _rnn(op: Op) -> Cost:
    x, w, r = op.shape(0), op.weight_shape(1), op.weight_shape(2)
    if len(x) == 3:
        steps, batch = (x[0], x[1]) if op.attr("time_major", False) else (x[1], x[0])
    else:
        steps, batch = 1, x[0]
    bias = prod(op.weight_shape(3)) if op.has(3) else 0
    return recurrent(steps, batch, prod(w) + prod(r), bias, w[0], onnx_ops.RECURRENT_OPS_PER_UNIT["RNN"])


def _add_n(op: Op) -> Cost:
    return per_element(op.out_elements(), max(1, op.data_inputs() - 1))


SPECIAL: dict[str, Callable[[Op], Cost]] = {
    "CONV_2D": _conv_2d, "DEPTHWISE_CONV_2D": _depthwise_conv_2d, "CONV_3D": _conv_3d,
    "TRANSPOSE_CONV": _transpose_conv, "CONV_3D_TRANSPOSE": _conv_3d_transpose,
    "FULLY_CONNECTED": _fully_connected, "BATCH_MATMUL": _batch_matmul,
    "AVERAGE_POOL_2D": _pool, "MAX_POOL_2D": _pool, "L2_POOL_2D": _l2_pool,
    "LOCAL_RESPONSE_NORMALIZATION": _lrn, "RESIZE_BILINEAR": _resize_bilinear,
    "RESIZE_NEAREST_NEIGHBOR": lambda op: ZERO,
    "UNIDIRECTIONAL_SEQUENCE_LSTM": _lstm, "LSTM": _lstm, "UNIDIRECTIONAL_SEQUENCE_RNN": _rnn, "RNN": _rnn,
    "ADD_N": _add_n,
}


def cost(op: Op) -> Cost:
    """MACs of one TFLite operator; NotCountable with the reason when there is no formula or shape."""
    name = op.type
    if op.node.domain == "custom":
        raise NotCountable(f"custom op {name}")
    if name in SPECIAL:
        base = SPECIAL[name](op)
    elif name in NO_ARITHMETIC:
        return ZERO
    elif name in SAME_AS_ONNX:
        base = per_element(op.out_elements(), onnx_ops.PER_ELEMENT.get(SAME_AS_ONNX[name], 1))
    elif name in REDUCTIONS:
        base = reduction(op.elements(0))
    elif runs_subgraphs("tflite", name):
        raise NotCountable("control flow: the called subgraph's operators are counted one by one")
    else:
        raise NotCountable(f"no formula for {name}")
    activation = op.attr("fused_activation_function")
    if activation and activation != "NONE":
        base = base + per_element(op.out_elements())
    return base


def weight_slots(op: Op) -> tuple[tuple[int, None], ...]:
    if op.node.domain == "custom":
        return ()
    return tuple((slot, None) for slot in WEIGHT_SLOTS.get(op.type, ()))
