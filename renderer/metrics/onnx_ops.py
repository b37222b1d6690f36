"""ONNX operators → cost formulas, and which inputs are weights.

Which operator uses which formula, with which numbers, and which of its inputs are weights, is data: the
operator's entry in ``renderer/data/onnx-ops.json`` (``data.operators``). Here are the formulas it names
(``FORMULAS``): each reads shapes and attributes and hands plain sizes to ``formulas``.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache

from renderer.data.categories import runs_subgraphs
from renderer.data.operators import formula_table, operator
from renderer.metrics import attention_ops, body_runs, onnx_ml
from renderer.metrics.formulas import (
    ZERO,
    Cost,
    NotCountable,
    convolution,
    einsum,
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


def _qgemm(op: Op) -> Cost:
    """com.microsoft QGemm: Gemm's A at 0, B at 3 and the int32 bias C at 6."""
    return matmul(op.out_elements(), _inner(op, 0, bool(op.int_attr("transA", 0))), op.has(6))


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


def _recurrent(op: Op, gates: int, ops: int) -> Cost:
    """LSTM / GRU / RNN: ``gates`` stacked in the weights W [dirs, gates·H, I] and R [dirs, gates·H, H],
    ``ops`` elementwise operations per hidden unit; LSTM peepholes P [dirs, 3·H] multiply once per unit and step."""
    r = op.weight_shape(2)
    return _sequence(op, gates, ops, op.int_attr("hidden_size", 0) or r[-1])


def _dynamic_quantize_lstm(op: Op, gates: int, ops: int) -> Cost:
    """com.microsoft DynamicQuantizeLSTM: LSTM with int8 weights stored transposed, W [dirs, I, 4·H] and
    R [dirs, H, 4·H]; the same multiply-accumulates as the float LSTM it replaces."""
    r = op.weight_shape(2)
    return _sequence(op, gates, ops, op.int_attr("hidden_size", 0) or r[1])


def _sequence(op: Op, gates: int, ops: int, hidden: int) -> Cost:
    """Every step multiplies each element of W, R and P once per batch row (steps × gates × (I + H) × H per
    direction, + 3·H for peepholes), adds the biases B and does ``ops`` elementwise operations per hidden unit.
    Steps are X's whole (padded) length: ``sequence_lens`` is a value, not a shape."""
    x, w, r = op.shape(0), op.weight_shape(1), op.weight_shape(2)
    if len(x) != 3 or len(w) != 3 or len(r) != 3:
        raise NotCountable(f"X, W, R of ranks {len(x)}, {len(w)}, {len(r)} (3 expected)")
    steps, batch = (x[1], x[0]) if op.int_attr("layout", 0) else (x[0], x[1])
    if hidden <= 0:
        raise NotCountable("no hidden size")
    weights = prod(w) + prod(r) + (prod(op.weight_shape(7)) if op.has(7) else 0)
    bias = prod(op.weight_shape(3)) if op.has(3) else 0
    return recurrent(steps, batch, weights, bias, w[0] * hidden, int(ops))


def _activation(op: Op) -> Cost:
    """com.microsoft FusedConv / FusedGemm run an activation on each output element."""
    return per_element(op.out_elements()) if op.attr("activation") else ZERO


def _no_arithmetic(op: Op) -> Cost:
    """Ops that move, select or reinterpret data: 0 MACs (a count, not a guess)."""
    return ZERO


def _elementwise(op: Op, ops: float = 1) -> Cost:
    """``ops`` operations per output element (see formulas' conventions)."""
    return per_element(op.out_elements(), ops)


def _embed_layer_norm(op: Op, ops: float = 5) -> Cost:
    """com.microsoft EmbedLayerNormalization: word (0 → 2) and position (3) embeddings, and segment ones (1 → 4)
    when given, are gathered and summed, then ``ops`` per element as LayerNormalization; a mask (7) is summed per
    row into the mask index."""
    summed = 3 if op.has(1) and op.has(4) else 2
    mask = reduction(op.elements(7)) if op.has(7) else ZERO
    return per_element(op.out_elements(), summed - 1 + ops) + mask


def _variadic(op: Op, ops: float = 0) -> Cost:
    """Variadic elementwise ops: one operation per extra input per element, and ``ops`` more (Mean divides)."""
    return per_element(op.out_elements(), max(1, op.data_inputs() - 1) + ops)


def _reduction(op: Op) -> Cost:
    """One operation per input element."""
    return reduction(op.elements(0))


FORMULAS: dict[str, Callable[..., Cost]] = {
    "conv": _conv, "conv_integer": _conv_integer, "qlinear_conv": _qlinear_conv, "conv_transpose": _conv_transpose,
    "gemm": _gemm, "matmul": _matmul, "qlinear_matmul": _qlinear_matmul, "qgemm": _qgemm,
    "matmul_nbits": _matmul_nbits,
    "einsum": _einsum, "pool": _pool, "global_average_pool": _global_average_pool,
    "global_lp_pool": _global_lp_pool, "lrn": _lrn, "resize": _resize, "recurrent": _recurrent,
    "dynamic_quantize_lstm": _dynamic_quantize_lstm,
    **attention_ops.FORMULAS,
    "none": _no_arithmetic, "elementwise": _elementwise, "embed_layer_norm": _embed_layer_norm, "variadic": _variadic,
    "reduction": _reduction,
    "ml_linear": onnx_ml.ml_linear, "ml_svm": onnx_ml.ml_svm, "ml_tree_ensemble": onnx_ml.ml_tree_ensemble,
    "ml_tree_ensemble_v5": onnx_ml.ml_tree_ensemble_v5,
}
"""The formulas an entry's ``cost`` (or ``cost_by_domain``) may name; numbers of the entry are keyword arguments."""
STANDARD_DOMAINS = frozenset({"ai.onnx.ml", "ai.onnx.preview.training", "ai.onnx.preview"})
"""ONNX's own operator sets besides the default one: their operators are standard, never custom ops."""


@cache
def formula_by_op() -> dict[tuple[str, str], Callable[[Op], Cost]]:
    """(op type, domain or "") → its formula, from the data (checked: every name resolves)."""
    return formula_table("onnx", FORMULAS)


def cost(op: Op) -> Cost:
    """MACs of one ONNX operator over every run of it in one run of the model (``body_runs``: a Scan body's
    operators run once per element of its scan inputs); NotCountable with the reason when there is no formula or
    shape."""
    once = _one_run(op)
    if op.node.graph.parent is None:
        return once
    count = body_runs.runs(op.node.graph)
    return once if count == 1 else Cost(once.macs * count, once.weight_macs * count)


def _one_run(op: Op) -> Cost:
    node = op.node
    domain = node.domain
    name = node.op_type
    table = formula_by_op()
    if domain in STANDARD_DOMAINS:
        if (name, domain) in table:  # ONNX-ML: its own formulas (cost_by_domain), never the default domain's
            return table[name, domain](op)
        raise NotCountable(f"no formula for {domain}.{node.op_type}")
    if domain not in ("", "ai.onnx", "com.microsoft"):
        raise NotCountable(f"custom op {domain}.{node.op_type}")
    formula = table.get((name, domain)) or table.get((name, ""))
    if formula is not None:
        return formula(op)
    if runs_subgraphs("onnx", name):
        raise NotCountable("control flow: its subgraph operators are counted one by one")
    raise NotCountable(f"no formula for {name}")


def weight_slots(op: Op) -> tuple[tuple[int, tuple[int, int] | None], ...]:
    """(slot, explicit zero point (slot, channel axis of the weight) or None) of the op's weight inputs, from the
    data. A slot counts only when it traces to stored data (directly, or through a DequantizeLinear / layout op)."""
    entry = operator("onnx", op.type)
    if op.node.domain not in ("", "ai.onnx", "com.microsoft") or entry is None:
        return ()
    if entry.weights == "all":
        return tuple((i, None) for i in range(len(op.node.inputs)))
    return entry.weights  # type: ignore[return-value]


attribute_weights = onnx_ml.attribute_weights


def quantization_slots(op: Op) -> frozenset[int]:
    """Input slots holding the scales and zero points of the op's quantized weights, from the data."""
    entry = operator("onnx", op.type)
    if op.node.domain not in ("", "ai.onnx", "com.microsoft") or entry is None:
        return frozenset()
    return frozenset(entry.quantization_inputs)
