"""Operator categories and roles, from the per-operator entries in ``renderer/data`` (``data.operators``):
categories are the colour of a box's header (``control`` for operators that run subgraphs), roles what an
operator does to a weight flowing through it."""

from __future__ import annotations

from renderer.data.operators import CATEGORIES, operator, with_role

__all__ = ["CATEGORIES", "category", "runs_subgraphs", "with_role"]


def category(fmt: str, op_type: str) -> str:
    """Category of ``op_type`` in format ``fmt`` (``onnx``/``tflite``); ``other`` when unknown."""
    entry = operator(fmt, op_type)
    return entry.category if entry is not None else "other"


def runs_subgraphs(fmt: str, op_type: str) -> bool:
    """True for control flow whose cost is that of the subgraph operators it runs."""
    return op_type in with_role(fmt, "runs_subgraphs")
