"""Per-tensor sizes from dtype and static shape."""

from __future__ import annotations

from ..annotations.model import Annotations, Entry, MetricInfo
from ..ir import Model

DTYPE_BITS: dict[str, int] = {
    "float64": 64, "float32": 32, "float16": 16, "bfloat16": 16, "int64": 64, "int32": 32, "int16": 16,
    "int8": 8, "uint64": 64, "uint32": 32, "uint16": 16, "uint8": 8, "bool": 8, "complex64": 64, "complex128": 128,
    "int4": 4, "uint4": 4, "float8e4m3fn": 8, "float8e4m3fnuz": 8, "float8e5m2": 8, "float8e5m2fnuz": 8,
}


def tensor_bytes(dtype: str, shape: tuple[int, ...]) -> int | None:
    bits = DTYPE_BITS.get(dtype)
    if bits is None:
        return None
    elements = 1
    for d in shape:
        elements *= d
    return (elements * bits + 7) // 8


def add_tensor_metrics(model: Model, annotations: Annotations, names: set[str]) -> None:
    for value in model.values():
        static = value.type.static_shape if value.type else None
        if static is None:
            continue
        entry = annotations.tensors.setdefault(value.key, Entry())
        elements = 1
        for d in static:
            elements *= d
        if "elements" in names:
            entry.values["elements"] = elements
        if "bytes" in names:
            size = tensor_bytes(value.type.dtype, static)  # type: ignore[union-attr]
            if size is not None:
                entry.values["bytes"] = size
    for name in names:
        annotations.metrics.setdefault(name, MetricInfo(name, source="builtin", unit="B" if name == "bytes" else ""))
