"""Per-tensor sizes from dtype and static shape."""

from __future__ import annotations

from typing import Any

from renderer.core.ir import ElementKey, Model

DTYPE_BITS: dict[str, int] = {
    "float64": 64, "float32": 32, "float16": 16, "bfloat16": 16, "int64": 64, "int32": 32, "int16": 16,
    "int8": 8, "uint64": 64, "uint32": 32, "uint16": 16, "uint8": 8, "bool": 8, "complex64": 64, "complex128": 128,
    "int4": 4, "uint4": 4, "int2": 2, "uint2": 2, "float4e2m1": 4, "float8e4m3fn": 8, "float8e4m3fnuz": 8,
    "float8e5m2": 8, "float8e5m2fnuz": 8, "float8e8m0": 8,
}


def tensor_bytes(dtype: str, shape: tuple[int, ...]) -> int | None:
    bits = DTYPE_BITS.get(dtype)
    if bits is None:
        return None
    elements = 1
    for d in shape:
        elements *= d
    return (elements * bits + 7) // 8


def tensor_values(model: Model, names: set[str]) -> dict[ElementKey, dict[str, Any]]:
    """``bytes`` and/or ``elements`` of every tensor with a static shape."""
    from renderer.core.progress import each

    result: dict[ElementKey, dict[str, Any]] = {}
    for value in each(list(model.values()), "tensor sizes", "tensor"):
        static = value.type.static_shape if value.type else None
        if static is None:
            continue
        values: dict[str, Any] = {}
        if "elements" in names:
            elements = 1
            for d in static:
                elements *= d
            values["elements"] = elements
        if "bytes" in names:
            size = tensor_bytes(value.type.dtype, static)  # type: ignore[union-attr]
            if size is not None:
                values["bytes"] = size
        if values:
            result[value.key] = values
    return result
