"""Weights stored packed, several sub-byte values to a byte: what they hold as parameters.

MatMulNBits keeps its int4 weight as uint8 blobs ([N, blocks, block bytes], 2 values a byte) and
GatherBlockQuantized its table likewise (the LM head's, reshaped, when the embedding is tied to it). Their
``params`` are the values (K × N for MatMulNBits, as in the float MatMul it replaces), their ``weight_bytes`` the
bytes stored; which inputs are packed is the entry's ``packed_inputs`` in ``renderer/data``, how many values a
byte the op's ``bits`` attribute (4 by default). A weight typed int4/uint4 (or float8) in standard ONNX needs
nothing here: its dims already count values, and its
bytes follow from the type's bits.
"""

from __future__ import annotations

from renderer.core.ir import Node
from renderer.data.operators import operator
from renderer.metrics.formulas import prod
from renderer.metrics.tensors import DTYPE_BITS
from renderer.metrics.weights import trace


def _int_attr(node: Node, name: str, default: int) -> int:
    try:
        return int(node.attributes.get(name, default))
    except (TypeError, ValueError):
        return default


def packed_values(node: Node, fmt: str) -> dict[int, int]:
    """id of each stored input of ``node`` that packs several values a byte → the values it holds."""
    entry = operator(fmt, node.op_type)
    if entry is None or not entry.packed_inputs or node.domain not in ("", "ai.onnx", "com.microsoft"):
        return {}
    bits = _int_attr(node, "bits", 4)
    if not 1 <= bits < 8 or 8 % bits:
        return {}
    found: dict[int, int] = {}
    for slot in entry.packed_inputs:
        source = trace(node.inputs[slot]) if slot < len(node.inputs) else None  # through a Reshape…
        value = source.value if source is not None and source.dequantize is None else None
        if value is None or value.initializer is None or DTYPE_BITS.get(value.initializer.dtype) != 8:
            continue  # an activation, or a type that already counts values (int4)
        values = prod(value.initializer.shape) * (8 // bits)
        k, n = _int_attr(node, "K", 0), _int_attr(node, "N", 0)
        if 0 < k * n <= values:  # MatMulNBits: the last block of each column is padded
            values = k * n
        found[id(value)] = values
    return found
