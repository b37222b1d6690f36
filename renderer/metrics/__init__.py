"""Built-in metrics computed from the model itself (parameters, MACs, memory, sparsity…).

``augment`` adds the built-in metrics a render asks for to the annotations, so they work wherever a metric
from a file does; ``totals`` gives the model-wide figures for the picture's header.
"""

from __future__ import annotations

from ..annotations.model import Annotations
from ..ir import Model
from ..options import RenderOptions

TENSOR_METRICS: dict[str, str] = {
    "bytes": "size of the tensor in bytes (from dtype and static shape)",
    "elements": "number of elements (from the static shape)",
}
OP_METRICS: dict[str, str] = {}


def augment(model: Model, annotations: Annotations, wanted: set[str], options: RenderOptions | None = None) -> Annotations:
    """Return ``annotations`` with the built-in metrics in ``wanted`` added where no file provides them."""
    from .tensors import add_tensor_metrics

    names = {n for n in wanted if n in TENSOR_METRICS and not _provided(annotations, n)}
    if names:
        add_tensor_metrics(model, annotations, names)
    return annotations


def totals(model: Model) -> dict[str, str]:
    """Model-wide figures shown in the picture's header."""
    operators = sum(1 for n in model.nodes())
    text = {"operators": f"{operators:,}"}
    if len(model.graphs) > 1:
        text["graphs"] = str(len(model.graphs))
    return text


def _provided(annotations: Annotations, name: str) -> bool:
    return any(name in e.values for e in annotations.tensors.values())
