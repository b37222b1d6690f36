"""OpenVINO's element types as the IR's one vocabulary (``float32``, ``int8``…): the ``element_type`` of a
``Parameter``'s or ``Const``'s ``<data>`` (``f32``, ``u8``, ``boolean``) and the ``precision`` of a port
(``FP32``, ``U8``, ``BOOL``), with how ``Const`` data is laid out in the ``.bin``."""

from __future__ import annotations

ELEMENT_TYPES = {
    "f64": "float64", "f32": "float32", "f16": "float16", "bf16": "bfloat16", "i64": "int64", "i32": "int32",
    "i16": "int16", "i8": "int8", "u64": "uint64", "u32": "uint32", "u16": "uint16", "u8": "uint8",
    "boolean": "bool", "i4": "int4", "u4": "uint4", "u2": "uint2", "u1": "uint1", "nf4": "nf4",
    "f8e4m3": "float8e4m3fn", "f8e5m2": "float8e5m2", "f8e8m0": "float8e8m0", "f4e2m1": "float4e2m1",
    "string": "string",
}
PRECISIONS = {
    "fp64": "float64", "fp32": "float32", "fp16": "float16", "bf16": "bfloat16", "bool": "bool",
    **{key: value for key, value in ELEMENT_TYPES.items() if key[0] in "iu" or key.startswith(("f8", "f4", "nf"))},
}
NUMPY = {
    "float64": "<f8", "float32": "<f4", "float16": "<f2", "bfloat16": "<u2", "int64": "<i8", "int32": "<i4",
    "int16": "<i2", "int8": "i1", "uint64": "<u8", "uint32": "<u4", "uint16": "<u2", "uint8": "u1", "bool": "?",
}
"""Element types whose values the data pass reads (numpy dtypes; bfloat16 is widened to float32). The others
(sub-byte, float8, strings) keep their shape and byte count, not their values."""
BITS = {"float64": 64, "float32": 32, "float16": 16, "bfloat16": 16, "int64": 64, "int32": 32, "int16": 16,
        "int8": 8, "uint64": 64, "uint32": 32, "uint16": 16, "uint8": 8, "bool": 8, "int4": 4, "uint4": 4,
        "uint2": 2, "uint1": 1, "nf4": 4, "float8e4m3fn": 8, "float8e5m2": 8, "float8e8m0": 8, "float4e2m1": 4}


def element_type(text: str) -> str:
    """``f32`` → ``float32``; ``unknown`` for what OpenVINO does not name so (``dynamic``, ``undefined``).

    >>> element_type("u8"), element_type("dynamic")
    ('uint8', 'unknown')
    """
    return ELEMENT_TYPES.get(text.strip().lower(), "unknown")


def precision(text: str) -> str:
    """A port's ``precision`` (``FP32``, ``I64``, ``UNSPECIFIED``) as an element type."""
    return PRECISIONS.get(text.strip().lower(), "unknown")
