"""OpenVINO layers → the same cost formulas as ONNX, for the IR (``openvino``: opset operations,
``renderer/data/openvino-ops.json``) and the execution graph (``openvino-exec``: the CPU plugin's primitives,
``renderer/data/openvino-exec-ops.json``). Which layer uses which formula is data; the formulas are here.

Counts follow from the ports' dims and the layer's ``<data>``: a ``Convolution``'s weights are ``[O, I, k…]``, a
``GroupConvolution``'s ``[G, O/G, I/G, k…]`` (one dim more than the output), so each output element reads
``prod(weights) / O`` (resp. ``/ (G·O/G)``) of them, as ONNX Conv's do. The IR keeps a bias as the ``Add`` after
the layer (``<name>/WithoutBiases`` and ``<name>``), so the layer and its Add together count what the ONNX Conv or
Gemm counts; an execution graph's primitive holds the bias as its third input and counts it itself. A
``MatMul`` reads ``transpose_a``/``transpose_b``; pooling its ``kernel``. The execution graph's ``Pooling`` states
no window, and a ``Subgraph`` (fused elementwise snippets) not its ops: their MACs read n/a.
"""

from __future__ import annotations

from collections.abc import Callable

from renderer.data.operators import formula_table, operator
from renderer.metrics import onnx_ops, tflite_ops
from renderer.metrics.formulas import (
    Cost,
    NotCountable,
    attention,
    convolution,
    matmul,
    pooling,
    prod,
    recurrent,
    resize,
    transposed_convolution,
)
from renderer.metrics.opview import Op


def _bias(op: Op, slot: int) -> bool:
    """An execution graph's primitive with its bias fused in holds it as input ``slot`` (an empty one when
    it has none)."""
    if not op.has(slot):
        return False
    try:
        return prod(op.shape(slot)) > 0
    except NotCountable:
        return False


def _conv(op: Op) -> Cost:
    """Convolution and GroupConvolution: the weights have one dim more than the output when grouped."""
    weights, out = op.weight_shape(1), op.out_shape()
    if len(weights) == len(out) + 1:
        return convolution(op.out_elements(), (weights[0] * weights[1], *weights[2:]), 0, _bias(op, 2))
    return convolution(op.out_elements(), weights, 0, _bias(op, 2))


def _deconv(op: Op) -> Cost:
    """ConvolutionBackpropData ``[C_in, C_out, k…]`` and its grouped form ``[G, C_in/G, C_out/G, k…]``."""
    weights, source = op.weight_shape(1), op.shape(0)
    if len(weights) == len(source) + 1:
        weights = (weights[0] * weights[1], *weights[2:])
    return transposed_convolution(op.elements(0), op.out_elements(), weights, 0, False)


def _matmul(op: Op) -> Cost:
    shape = op.shape(0)
    if not shape:
        raise NotCountable("scalar operand of a matrix product")
    transposed = str(op.attr("transpose_a", "false")).lower() == "true"
    inner = shape[-2] if transposed and len(shape) > 1 else shape[-1]
    return matmul(op.out_elements(), inner, _bias(op, 2))


def _fully_connected(op: Op) -> Cost:
    """The execution graph's FullyConnected: ``input [… K]`` × ``weights [N, K]``, its bias as input 2."""
    shape = op.shape(0)
    if not shape:
        raise NotCountable("scalar input")
    return matmul(op.out_elements(), shape[-1], _bias(op, 2))


def _pool(op: Op) -> Cost:
    kernel = op.attr("kernel")
    if isinstance(kernel, int) and not isinstance(kernel, bool):
        kernel = [kernel]
    if not isinstance(kernel, list) or not kernel or not all(isinstance(k, int) and k > 0 for k in kernel):
        raise NotCountable("the layer states no pooling window")
    return pooling(op.out_elements(), kernel)


def _interpolate(op: Op) -> Cost:
    mode = str(op.attr("mode", "nearest")).removesuffix("_onnx").removesuffix("_pytorch")
    before, after = op.shape(0), op.out_shape()
    return resize(op.out_elements(), sum(1 for a, b in zip(before, after) if a != b), mode)


def _attention(op: Op) -> Cost:
    """ScaledDotProductAttention(query [… L, E], key [… S, E], value [… S, Ev]): QKᵀ, softmax, × V."""
    query, key, value = op.shape(0), op.shape(1), op.shape(2)
    if len(query) < 2 or len(key) < 2 or len(value) < 2:
        raise NotCountable("query, key and value need a sequence and a feature axis")
    return attention(prod(query[:-2]), 1, query[-2], key[-2], query[-1], value[-1])


def _sequence(op: Op, gates: int, ops: int) -> Cost:
    """LSTMSequence (X, H, C, lengths, W, R, B), GRUSequence and RNNSequence (X, H, lengths, W, R, B): X is
    ``[batch, steps, input]``, W ``[dirs, gates·H, input]``, R ``[dirs, gates·H, H]``, B one summed bias
    ``[dirs, gates·H]`` (4·H for a GRU with linear_before_reset). As ONNX's recurrent layers: every step
    multiplies each element of W and R once per batch row, adds B and does ``ops`` per hidden unit."""
    slot = 4 if gates == 4 else 3
    x, w, r = op.shape(0), op.weight_shape(slot), op.weight_shape(slot + 1)
    if len(x) != 3 or len(w) != 3 or len(r) != 3:
        raise NotCountable(f"X, W, R of ranks {len(x)}, {len(w)}, {len(r)} (3 expected)")
    hidden = op.int_attr("hidden_size", 0) or r[-1]
    bias = prod(op.weight_shape(slot + 2)) if op.has(slot + 2) else 0
    return recurrent(x[1], x[0], prod(w) + prod(r), bias, w[0] * hidden, ops)


FORMULAS: dict[str, Callable[..., Cost]] = {
    "convolution": _conv, "recurrent_sequence": _sequence,
    "deconvolution": _deconv, "matmul": _matmul, "fully_connected": _fully_connected,
    "pool": _pool, "interpolate": _interpolate, "attention": _attention,
    **{name: tflite_ops.FORMULAS[name] for name in ("none", "elementwise", "reduction")},  # the same counts
    "lrn": onnx_ops.FORMULAS["lrn"],  # OpenVINO's LRN has ONNX's ``size``
    "einsum": onnx_ops.FORMULAS["einsum"],  # and its Einsum ONNX's ``equation``
}
"""The formulas an entry's ``cost`` may name; numbers of the entry are keyword arguments."""


class Table:
    """The cost table of one of the two formats (``IR``, ``EXEC``), with the functions ``op_costs`` asks a
    format's cost module for."""

    def __init__(self, fmt: str) -> None:
        self.fmt = fmt
        self._formulas: dict[tuple[str, str], Callable[[Op], Cost]] | None = None

    def formulas(self) -> dict[tuple[str, str], Callable[[Op], Cost]]:
        if self._formulas is None:
            self._formulas = formula_table(self.fmt, FORMULAS)
        return self._formulas

    def cost(self, op: Op) -> Cost:
        """MACs of one layer; NotCountable with the reason for layers without a formula."""
        formula = self.formulas().get((op.type, ""))
        if formula is None:
            raise NotCountable(f"no formula for {op.type}")
        return formula(op)

    def weight_slots(self, op: Op) -> tuple[tuple[int, None], ...]:
        entry = operator(self.fmt, op.type)
        if entry is None or entry.weights == "all":
            return ()
        return entry.weights  # type: ignore[return-value]

    def quantization_slots(self, op: Op) -> frozenset[int]:
        return frozenset()

    def attribute_weights(self, op: Op) -> tuple[int, int]:
        return 0, 0


IR = Table("openvino")
EXEC = Table("openvino-exec")
