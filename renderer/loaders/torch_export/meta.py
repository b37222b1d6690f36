"""What torch's serializer writes about a tensor (``tensor_meta``): its element type (``DTYPES``) and its sizes,
each a number or a symbolic expression (``symbols``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from renderer.core.escape import clean
from renderer.loaders.torch_export import symbols

# schema.ScalarType → (ir dtype, little-endian numpy dtype of the stored bytes or None)
DTYPES: dict[int, tuple[str, str | None]] = {
    1: ("uint8", "u1"), 2: ("int8", "i1"), 3: ("int16", "<i2"), 4: ("int32", "<i4"), 5: ("int64", "<i8"),
    6: ("float16", "<f2"), 7: ("float32", "<f4"), 8: ("float64", "<f8"), 9: ("complex32", None),
    10: ("complex64", "<c8"), 11: ("complex128", "<c16"), 12: ("bool", "?"), 13: ("bfloat16", "<u2"),
    28: ("uint16", "<u2"), 29: ("float8e4m3fn", None), 30: ("float8e5m2", None), 31: ("float8e4m3fnuz", None),
    32: ("float8e5m2fnuz", None), 33: ("float8e8m0", None), 34: ("uint32", "<u4"), 35: ("uint64", "<u8"),
}


def dtype_name(code: Any) -> str:
    entry = DTYPES.get(code) if isinstance(code, int) else None
    return entry[0] if entry else f"unknown_type_{clean(code, 20)}"


def sizes(meta: Mapping[str, Any]) -> list[symbols.Expr | None]:
    """The sizes of a ``tensor_meta``: each an expression (an int is ``Expr("int")``), None when unreadable."""
    found: list[symbols.Expr | None] = []
    for size in meta.get("sizes") or []:
        if isinstance(size, dict) and type(size.get("as_int")) is int:
            found.append(symbols.Expr("int", number=size["as_int"]))
        elif isinstance(size, dict) and isinstance(size.get("as_expr"), dict):
            found.append(symbols.parse(size["as_expr"].get("expr_str")))
        else:
            found.append(None)
    return found
