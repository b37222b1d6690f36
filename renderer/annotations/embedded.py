"""Annotations stored inside the model file itself (ONNX metadata_props on nodes and the model)."""

from __future__ import annotations

from ..ir import Model
from .model import AnnotationSet, Entry, Ref

NAME = "embedded"


def from_model(model: Model) -> list[AnnotationSet]:
    """The model's own per-node and model-level metadata as an annotation set (empty list when none)."""
    result = AnnotationSet(source=NAME, path=model.path)
    for node in model.nodes():
        if node.metadata:
            result.operators.append((Ref("op", node.graph.index, node.index), Entry(dict(node.metadata))))
    for value in model.values():
        if value.metadata:
            result.tensors.append((Ref("t", value.graph.index, value.index), Entry(dict(value.metadata))))
    if not result.operators and not result.tensors:
        return []
    return [result]
