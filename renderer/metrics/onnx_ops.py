"""ONNX operators → cost formulas, and which inputs are weights.

The op-name tables are data; the few ops with real structure (convolutions, products, attention, recurrent
layers…) have a small function each that reads shapes and hands them to ``formulas``.
"""

from __future__ import annotations

from collections.abc import Callable

from ..categories import runs_subgraphs
from .formulas import (
    ZERO, Cost, NotCountable, attention, convolution, einsum, matmul, per_element, pooling, prod, recurrent,
    reduction, resize, transposed_convolution,
)
from .opview import Op

# Operations per output element for elementwise and normalization-style ops (see formulas' conventions).
PER_ELEMENT: dict[str, float] = {
    **dict.fromkeys((
        "Add", "Sub", "Mul", "Div", "Pow", "Mod", "Neg", "Abs", "Reciprocal", "Floor", "Ceil", "Round", "Sqrt",
        "Exp", "Log", "Sin", "Cos", "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh",
        "Erf", "Sign", "Relu", "LeakyRelu", "PRelu", "Elu", "Selu", "Celu", "Gelu", "Sigmoid", "HardSigmoid",
        "HardSwish", "Tanh", "Softplus", "Softsign", "ThresholdedRelu", "Mish", "Swish", "Clip", "Where",
        "Equal", "Greater", "GreaterOrEqual", "Less", "LessOrEqual", "And", "Or", "Xor", "Not", "BitShift",
        "BitwiseAnd", "BitwiseOr", "BitwiseXor", "BitwiseNot", "IsNaN", "IsInf", "Shrink", "Hardmax", "Range",
        "BatchNormalization",  # inference: mean, variance, scale and bias fold into one multiply-add
        # com.microsoft
        "FastGelu", "BiasGelu", "QuickGelu", "BiasAdd", "QLinearAdd", "QLinearMul", "QLinearSigmoid",
        "QLinearLeakyRelu",
    ), 1),
    "Softmax": 3, "LogSoftmax": 3, "BiasSoftmax": 3,  # exp, sum, divide (or subtract the log)
    "QuantizeLinear": 2, "DequantizeLinear": 2,  # (x − zero point) × scale, and its inverse
    "DynamicQuantizeLinear": 3,  # min/max scan, then quantize
    "LpNormalization": 2,
    # mean, subtract, accumulate the square, scale by 1/σ, affine
    "LayerNormalization": 5, "InstanceNormalization": 5, "GroupNormalization": 5, "MeanVarianceNormalization": 5,
    "SkipLayerNormalization": 6,
    # accumulate the square, scale by 1/rms, scale by γ
    "RMSNormalization": 3, "SimplifiedLayerNormalization": 3, "SkipSimplifiedLayerNormalization": 4,
}

# Variadic elementwise ops: one operation per extra input per element (Mean also divides).
VARIADIC: dict[str, int] = {"Sum": 0, "Max": 0, "Min": 0, "Mean": 1}

# One operation per input element.
REDUCTIONS = frozenset({
    "ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2", "ReduceLogSum",
    "ReduceLogSumExp", "ReduceSumSquare", "ArgMax", "ArgMin", "CumSum", "GlobalMaxPool", "NonZero",
})

# Ops that move, select or reinterpret data: 0 MACs (a count, not a guess).
NO_ARITHMETIC = frozenset({
    "Identity", "Reshape", "Transpose", "Squeeze", "Unsqueeze", "Flatten", "Concat", "Split", "Slice", "Gather",
    "GatherElements", "GatherND", "Scatter", "ScatterElements", "ScatterND", "Pad", "Expand", "Tile", "Shape",
    "Size", "Cast", "CastLike", "Constant", "ConstantOfShape", "Dropout", "DepthToSpace", "SpaceToDepth",
    "EyeLike", "OneHot", "Compress", "ReverseSequence", "Trilu", "SequenceAt", "SequenceConstruct",
    "SequenceEmpty", "SequenceInsert", "SequenceErase", "SequenceLength", "SplitToSequence", "ConcatFromSequence",
    "Optional", "OptionalGetElement", "OptionalHasElement", "Unique", "QLinearConcat",
})

# Weight inputs per op: (slot, explicit zero point (slot, channel axis of the weight) or None). A slot counts
# only when it traces to stored data (directly, or through a DequantizeLinear / layout op).
WEIGHT_SLOTS: dict[str, tuple[tuple[int, tuple[int, int] | None], ...]] = {
    "Conv": ((1, None),),
    "ConvTranspose": ((1, None),),
    "Gemm": ((0, None), (1, None)),
    "MatMul": ((0, None), (1, None)),
    "ConvInteger": ((1, (3, 0)),),
    "QLinearConv": ((3, (5, 0)),),
    "MatMulInteger": ((0, (2, -2)), (1, (3, -1))),
    "QLinearMatMul": ((0, (2, -2)), (3, (5, -1))),
    "LSTM": ((1, None), (2, None)),
    "GRU": ((1, None), (2, None)),
    "RNN": ((1, None), (2, None)),
    "Gather": ((0, None),),
    # com.microsoft
    "FusedConv": ((1, None),),
    "FusedGemm": ((0, None), (1, None)),
    "FusedMatMul": ((0, None), (1, None)),
    "Attention": ((1, None),),
    "MatMulIntegerToFloat": ((1, (5, -1)),),
    "DynamicQuantizeMatMul": ((1, (3, -1)),),
}

# Recurrent layers: elementwise operations per hidden unit and step.
#   LSTM: 4 gate sums, 3 sigmoids + 2 tanh, cell update c = f·c + i·g (3), h = o·tanh(c) (1).
#   GRU: 3 gate sums, 2 sigmoids + tanh, r·(R·h) (1), h = (1 − z)·n + z·h (4).
#   RNN: the sum and the activation.
RECURRENT_OPS_PER_UNIT = {"LSTM": 13, "GRU": 11, "RNN": 2}


def _conv(op: Op) -> Cost:
    return convolution(op.out_elements(), op.weight_shape(1), 0, op.has(2)) + _activation(op)


def _conv_integer(op: Op) -> Cost:
    return convolution(op.out_elements(), op.weight_shape(1), 0, False)


def _qlinear_conv(op: Op) -> Cost:
    return convolution(op.out_elements(), op.weight_shape(3), 0, op.has(8))


def _conv_transpose(op: Op) -> Cost:
    return transposed_convolution(op.elements(0), op.out_elements(), op.weight_shape(1), 0, op.has(2))


def _inner(op: Op, slot: int, transposed: bool = False) -> int:
    shape = op.weight_shape(slot)
    if not shape:
        raise NotCountable("scalar operand of a matrix product")
    if len(shape) == 1:
        return shape[0]
    return shape[-2] if transposed else shape[-1]


def _gemm(op: Op) -> Cost:
    inner = _inner(op, 0, bool(op.int_attr("transA", 0)))
    return matmul(op.out_elements(), inner, op.has(2)) + _activation(op)


def _matmul(op: Op) -> Cost:
    return matmul(op.out_elements(), _inner(op, 0, bool(op.int_attr("transA", 0))))


def _qlinear_matmul(op: Op) -> Cost:
    return matmul(op.out_elements(), _inner(op, 0))


def _matmul_nbits(op: Op) -> Cost:
    return matmul(op.out_elements(), op.int_attr("K", 0) or _inner(op, 0), op.has(5))


def _einsum(op: Op) -> Cost:
    shapes = [op.shape(i) for i in range(len(op.node.inputs)) if op.has(i)]
    return einsum(str(op.attr("equation", "")), shapes)


def _pool(op: Op) -> Cost:
    kernel = op.attr("kernel_shape")
    if not kernel:
        raise NotCountable("no kernel_shape")
    return pooling(op.out_elements(), list(kernel))


def _global_average_pool(op: Op) -> Cost:
    return reduction(op.elements(0)) + per_element(op.out_elements())  # sums, then one divide per output


def _global_lp_pool(op: Op) -> Cost:
    return reduction(op.elements(0), 2) + per_element(op.out_elements())


def _lrn(op: Op) -> Cost:
    return per_element(op.out_elements(), op.int_attr("size", 1) + 2)  # window sum of squares, scale, power


def _resize(op: Op) -> Cost:
    before, after = op.shape(0), op.out_shape()
    changed = sum(1 for a, b in zip(before, after) if a != b)
    return resize(op.out_elements(), changed, str(op.attr("mode", "nearest")))


def _recurrent(op: Op) -> Cost:
    x, w, r = op.shape(0), op.weight_shape(1), op.weight_shape(2)
    steps, batch = (x[1], x[0]) if op.int_attr("layout", 0) else (x[0], x[1])
    bias = prod(op.weight_shape(3)) if op.has(3) else 0
    gates = {"LSTM": 4, "GRU": 3, "RNN": 1}[op.type]
    hidden_units = w[0] * (w[1] // gates)  # directions × hidden size
    return recurrent(steps, batch, prod(w) + prod(r), bias, hidden_units, RECURRENT_OPS_PER_UNIT[op.type])


def _heads(op: Op, name: str) -> int:
    heads = op.int_attr(name, 0)
    if heads <= 0:
        raise NotCountable(f"3-D attention input needs the {name} attribute")
    return heads


def _attention(op: Op) -> Cost:
    """ONNX Attention (opset 23): Q [B, Hq, S, D] or [B, S, Hq·D]; K, V likewise with Hkv."""
    q, k, v = op.shape(0), op.shape(1), op.shape(2)
    if len(q) == 4:
        batch, heads, q_len, head = q
    elif len(q) == 3:
        heads = _heads(op, "q_num_heads")
        batch, q_len, head = q[0], q[1], q[2] // heads
    else:
        raise NotCountable(f"query of rank {len(q)}")
    kv_len = k[2] if len(k) == 4 else k[1]
    if len(v) == 4:
        v_head = v[3]
    else:
        v_head = v[2] // _heads(op, "kv_num_heads")
    if op.has(4):
        kv_len += op.shape(4)[2]
    return attention(batch, heads, q_len, kv_len, head, v_head)


def _ms_multihead_attention(op: Op) -> Cost:
    """com.microsoft MultiHeadAttention: query [B, S, D], key/value [B, L, D] or [B, N, L, H]."""
    heads = _heads(op, "num_heads")
    q = op.shape(0)
    if len(q) != 3 or not op.has(1):
        raise NotCountable("packed query/key/value layouts")
    k = op.shape(1)
    kv_len = k[2] if len(k) == 4 else k[1]
    v_hidden = (op.shape(2)[-1] * (heads if len(op.shape(2)) == 4 else 1)) if op.has(2) else q[2]
    if op.has(6):
        kv_len += op.shape(6)[2]
    return attention(q[0], heads, q[1], kv_len, q[2] // heads, v_hidden // heads)


def _ms_attention(op: Op) -> Cost:
    """com.microsoft Attention: the QKV projection, then the attention core."""
    heads = _heads(op, "num_heads")
    x, w = op.shape(0), op.weight_shape(1)
    if len(x) != 3 or len(w) != 2:
        raise NotCountable("unexpected input ranks")
    batch, seq, _ = x
    sizes = op.attr("qkv_hidden_sizes") or [w[1] // 3] * 3
    projection = matmul(batch * seq * w[1], w[0], op.has(2))
    kv_len = seq + (op.shape(4)[3] if op.has(4) and len(op.shape(4)) == 5 else 0)
    return projection + attention(batch, heads, seq, kv_len, int(sizes[0]) // heads, int(sizes[2]) // heads)


def _activation(op: Op) -> Cost:
    """com.microsoft FusedConv / FusedGemm run an activation on each output element."""
    return per_element(op.out_elements()) if op.attr("activation") else ZERO


SPECIAL: dict[str, Callable[[Op], Cost]] = {
    "Conv": _conv, "FusedConv": _conv, "ConvInteger": _conv_integer, "QLinearConv": _qlinear_conv,
    "ConvTranspose": _conv_transpose,
    "Gemm": _gemm, "FusedGemm": _gemm, "MatMul": _matmul, "FusedMatMul": _matmul, "MatMulInteger": _matmul,
    "QLinearMatMul": _qlinear_matmul, "MatMulIntegerToFloat": _matmul, "DynamicQuantizeMatMul": _matmul,
    "MatMulNBits": _matmul_nbits, "Einsum": _einsum,
    "MaxPool": _pool, "AveragePool": _pool, "LpPool": _pool, "QLinearAveragePool": _pool,
    "GlobalAveragePool": _global_average_pool, "QLinearGlobalAveragePool": _global_average_pool,
    "GlobalLpPool": _global_lp_pool, "LRN": _lrn, "Resize": _resize, "Upsample": _resize,
    "LSTM": _recurrent, "GRU": _recurrent, "RNN": _recurrent,
    "Attention": _attention, "MultiHeadAttention": _ms_multihead_attention,
}
MS_SPECIAL: dict[str, Callable[[Op], Cost]] = {"Attention": _ms_attention}
STANDARD_DOMAINS = frozenset({"ai.onnx.ml", "ai.onnx.preview.training", "ai.onnx.preview"})
"""ONNX's own operator sets besides the default one: their operators are standard, never custom ops."""


def cost(op: Op) -> Cost:
    """MACs of one ONNX operator; NotCountable with the reason when there is no formula or shape."""
    node = op.node
    domain = node.domain
    if domain in STANDARD_DOMAINS:
        raise NotCountable(f"no formula for {domain}.{node.op_type}")
    if domain not in ("", "ai.onnx", "com.microsoft"):
        raise NotCountable(f"custom op {domain}.{node.op_type}")
    name = node.op_type
    if domain == "com.microsoft" and name in MS_SPECIAL:
        return MS_SPECIAL[name](op)
    if name in SPECIAL:
        return SPECIAL[name](op)
    if name in NO_ARITHMETIC:
        return ZERO
    if name in PER_ELEMENT:
        return per_element(op.out_elements(), PER_ELEMENT[name])
    if name in VARIADIC:
        return per_element(op.out_elements(), max(1, op.data_inputs() - 1) + VARIADIC[name])
    if name in REDUCTIONS:
        return reduction(op.elements(0))
    if runs_subgraphs("onnx", name):
        raise NotCountable("control flow: its subgraph operators are counted one by one")
    raise NotCountable(f"no formula for {name}")


def weight_slots(op: Op) -> tuple[tuple[int, tuple[int, int] | None], ...]:
    if op.node.domain not in ("", "ai.onnx", "com.microsoft"):
        return ()
    if op.type == "Einsum":
        return tuple((i, None) for i in range(len(op.node.inputs)))
    return WEIGHT_SLOTS.get(op.type, ())
