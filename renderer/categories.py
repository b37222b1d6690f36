"""Operator categories (the colour of a box's header), read from the data files in ``renderer/data``."""

from __future__ import annotations

import json
from functools import cache
from importlib import resources

CATEGORIES: tuple[str, ...] = (
    "layer", "attention", "activation", "pool", "normalization", "elementwise", "reduce",
    "shape", "tensor", "quantization", "control", "data", "other",
)


@cache
def _table(fmt: str) -> dict[str, str]:
    text = resources.files("renderer.data").joinpath(f"{fmt}-ops.json").read_text(encoding="utf-8")
    table: dict[str, str] = {}
    for category, ops in json.loads(text)["categories"].items():
        for op in ops:
            table[op] = category
    return table


def category(fmt: str, op_type: str) -> str:
    """Category of ``op_type`` in format ``fmt`` (``onnx``/``tflite``); ``other`` when unknown."""
    return _table(fmt).get(op_type, "other")
