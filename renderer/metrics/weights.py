"""Where an operator's weights really come from, and which stored value means zero for that operator.

A weight input is constant data reached from the operator's input through ops that only re-lay it out
(Reshape, Transpose, Identity…) and at most one dequantization (ONNX DequantizeLinear, TFLite DEQUANTIZE),
whose input must itself be constant. The constant at the end is the ``Source``.

The zero point belongs to the *use*, not to the tensor: an ONNX integer op names it in its own inputs
(ConvInteger ``w_zero_point``, QLinearConv ``w_zero_point``, MatMulInteger ``b_zero_point``…), a QDQ model in
the DequantizeLinear feeding the op, a TFLite model in the tensor's quantization parameters. Float weights
have 0.0. So one initializer read by two DequantizeLinear nodes with different zero points has two
different sparsities.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING

from renderer.core.ir import Node, Value
from renderer.data import categories
from renderer.metrics.formulas import NotCountable

if TYPE_CHECKING:
    import numpy as np

_MAX_HOPS = 16


@cache
def _ops(role: str) -> frozenset[str]:
    """Operator types of any format with ``role`` in ``renderer/data`` (the formats' names never collide).

    ``weight_layout`` ops pass a constant through unchanged in content but change its shape, ``weight_cast``
    ops keep its shape (only the element type may change); the second and later inputs, when present, must be
    constant (shape, perm, axes).
    """
    return categories.with_role("onnx", role) | categories.with_role("tflite", role) \
        | categories.with_role("executorch", role) | categories.with_role("torch", role) \
        | categories.with_role("openvino", role) | categories.with_role("openvino-exec", role)


def is_transparent(node: Node) -> bool:
    """Ops that only prepare a weight (layout, dequantization): their params are their direct constants only."""
    return node.op_type in _preparing() and node.domain != "custom"


@cache
def _preparing() -> frozenset[str]:
    return _ops("weight_layout") | _ops("weight_cast") | _ops("dequantize")


@dataclass(frozen=True, slots=True)
class Source:
    """The constant behind a weight input.

    Attributes:
        value: the constant value holding the stored data.
        dequantize: the DequantizeLinear / DEQUANTIZE node on the way, if any.
        same_shape: True when nothing on the way changed the shape (only dequantization or casts).
    """

    value: Value
    dequantize: Node | None = None
    same_shape: bool = True


def trace(value: Value | None) -> Source | None:
    """The constant ``value`` is computed from, or None when it depends on activations."""
    same_shape = True
    dequantize: Node | None = None
    for _ in range(_MAX_HOPS):
        if value is None:
            return None
        if value.initializer is not None:
            return Source(value, dequantize, same_shape)
        producer = value.producer
        if producer is None or producer.domain == "custom" or not producer.inputs:
            return None
        op = producer.op_type
        if op in _ops("dequantize"):
            if dequantize is not None:
                return None
            first = _through_casts(producer.inputs[0])
            if first is None or first.initializer is None:
                return None  # dequantizing something computed: not a stored weight (or a chain we do not map)
            return Source(first, producer, same_shape)
        if op in _ops("weight_layout") or op in _ops("weight_cast"):
            if any(v is not None and v.initializer is None for v in producer.inputs[1:]):
                return None
            if op in _ops("weight_layout"):
                same_shape = False
            value = producer.inputs[0]
            continue
        return None
    return None


def _through_casts(value: Value | None) -> Value | None:
    """The constant behind ``value`` through ops that keep its shape (TFLite DENSIFY of a sparse weight, a Cast),
    or ``value`` itself."""
    for _ in range(_MAX_HOPS):
        producer = value.producer if value is not None and value.initializer is None else None
        if producer is None or producer.domain == "custom" or producer.op_type not in _ops("weight_cast") \
                or not producer.inputs or any(v is not None and v.initializer is None for v in producer.inputs[1:]):
            return value
        value = producer.inputs[0]
    return value


@dataclass(frozen=True, slots=True)
class ZeroPoint:
    """The stored value meaning real 0 for one use of a weight.

    Attributes:
        values: None for 0; else an array broadcastable to the weight's shape (per-tensor: size 1).
        text: how it was found, for messages.
    """

    values: np.ndarray | None
    text: str = "0"

    def key(self) -> tuple:
        """Hashable identity: uses with equal keys share one count."""
        if self.values is None:
            return ("zero",)
        return (str(self.values.dtype), self.values.shape, self.values.tobytes())


def _label(value: Value) -> str:
    return value.name or f"tensor {value.graph.index}:{value.index}"


def numeric(array: np.ndarray) -> np.ndarray:
    """Arrays of ml_dtypes types (int4, float8, bfloat16) as plain numpy integers or floats; others unchanged."""
    import numpy as np

    if array.dtype.kind in "biuf":
        return array
    name = array.dtype.name
    if name in ("int4", "int2"):
        return array.astype(np.int8)
    if name in ("uint4", "uint2"):
        return array.astype(np.uint8)
    if "float" in name:
        return array.astype(np.float32)
    raise NotCountable(f"{name} data")


def _constant_array(value: Value | None, what: str) -> np.ndarray | None:
    if value is None:
        return None
    if value.initializer is None:
        raise NotCountable(f"{what} {_label(value)} is not a constant")
    try:
        return numeric(value.initializer.numpy())
    except NotCountable:
        raise
    except Exception as e:  # an unreadable external file: the metric says why
        raise NotCountable(f"cannot read {what} {_label(value)}: {e}") from None


def _broadcastable(zp: np.ndarray, shape: tuple[int, ...], axis: int | None, block: int, what: str) -> np.ndarray:
    """Shape ``zp`` so that ``weight == zp`` compares each element with its own zero point."""
    import numpy as np

    rank = len(shape)
    if zp.size == 1:
        return zp.reshape(())
    if axis is None:
        raise NotCountable(f"{what} has {zp.size} values but no axis")
    if not -rank <= axis < rank:
        raise NotCountable(f"{what} axis {axis} is outside a rank-{rank} weight")
    axis %= rank
    if block and block > 0:
        if zp.ndim != rank:
            raise NotCountable(f"blocked {what} of rank {zp.ndim} for a rank-{rank} weight")
        full = np.repeat(zp, block, axis=axis)
        return full[tuple(slice(0, d) for d in shape)]
    if zp.ndim != 1 or zp.size != shape[axis]:
        raise NotCountable(f"{what} has {zp.size} values but axis {axis} of the weight has {shape[axis]}")
    view = [1] * rank
    view[axis] = zp.size
    return zp.reshape(view)


def zero_point(node: Node, source: Source, explicit: tuple[int, int] | None) -> ZeroPoint:
    """The zero point ``node`` applies to the weight stored in ``source``.

    Args:
        node: the consuming operator.
        source: the traced weight.
        explicit: (input slot of the op's own zero point, channel axis relative to the weight), for ONNX
            integer ops (ConvInteger, MatMulInteger, QLinear*); None otherwise.
    """
    stored = source.value.initializer
    assert stored is not None
    shape = tuple(stored.shape)
    if explicit is not None:
        slot, axis = explicit
        return _from_input(node.inputs[slot] if slot < len(node.inputs) else None, shape, axis, 0)
    dq = source.dequantize
    if dq is not None and dq.op_type in categories.with_role("onnx", "dequantize"):
        axis = int(dq.attributes.get("axis", 1))
        block = int(dq.attributes.get("block_size", 0) or 0)
        return _from_input(dq.inputs[2] if len(dq.inputs) > 2 else None, shape, axis, block)
    quant = source.value.quantization
    if quant is not None and _is_integer(stored.dtype):
        zp = quant.zero_point
        if zp.size and not (zp == 0).all():
            where = f"zero point of {_label(source.value)}"
            return ZeroPoint(_broadcastable(zp, shape, quant.axis, 0, where), _describe(zp))
        return ZeroPoint(None, "0 (symmetric)")
    return ZeroPoint(None, "0" if _is_integer(stored.dtype) else "0.0")


def _from_input(value: Value | None, shape: tuple[int, ...], axis: int, block: int) -> ZeroPoint:
    """A zero point given as an op input (absent: 0)."""
    zp = _constant_array(value, "zero point")
    if zp is None or value is None:
        return ZeroPoint(None, "0 (no zero-point input)")
    return ZeroPoint(_broadcastable(zp, shape, axis, block, f"zero point {_label(value)}"), _describe(zp))


def _is_integer(dtype: str) -> bool:
    return dtype.startswith(("int", "uint"))


def _describe(zp: np.ndarray) -> str:
    if zp.size == 1:
        return str(zp.reshape(-1)[0].item())
    return f"{zp.size} per-channel values"
