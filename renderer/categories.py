"""Operator knowledge read from the data files in ``renderer/data``: categories (the colour of a box's header,
``control`` for operators that run subgraphs) and roles (what an operator does to a weight flowing through it)."""

from __future__ import annotations

import json
from functools import cache
from importlib import resources

CATEGORIES: tuple[str, ...] = (
    "layer", "attention", "activation", "pool", "normalization", "elementwise", "reduce",
    "shape", "tensor", "quantization", "control", "data", "other",
)


@cache
def _document(fmt: str) -> dict:
    return json.loads(resources.files("renderer.data").joinpath(f"{fmt}-ops.json").read_text(encoding="utf-8"))


@cache
def _table(fmt: str) -> dict[str, str]:
    table: dict[str, str] = {}
    for category, ops in _document(fmt)["categories"].items():
        for op in ops:
            table[op] = category
    return table


def category(fmt: str, op_type: str) -> str:
    """Category of ``op_type`` in format ``fmt`` (``onnx``/``tflite``); ``other`` when unknown."""
    return _table(fmt).get(op_type, "other")


@cache
def with_role(fmt: str, role: str) -> frozenset[str]:
    """Operator types of format ``fmt`` that have ``role`` (``runs_subgraphs``, ``weight_layout``, ``weight_cast``,
    ``dequantize``, ``ort_initializer``)."""
    return frozenset(_document(fmt).get("roles", {}).get(role, ()))


def runs_subgraphs(fmt: str, op_type: str) -> bool:
    """True for control flow whose cost is that of the subgraph operators it runs."""
    return op_type in with_role(fmt, "runs_subgraphs")
