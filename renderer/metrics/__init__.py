"""Built-in metrics computed from the model itself: which there are and how they join the annotations
(``builtin``), the per-operator cost pass (``op_costs``), the formulas (``formulas``, ``onnx_ops``, ``tflite_ops``).
"""

from __future__ import annotations

from renderer.metrics.builtin import (
    ALL_TENSOR_METRICS,
    CHEAP_OP_METRICS,
    DEFAULT_MAX_TENSOR_ELEMENTS,
    EXPENSIVE_OP_METRICS,
    EXPENSIVE_TENSOR_METRICS,
    OP_METRICS,
    TENSOR_METRICS,
    augment,
    compute,
    totals,
)

__all__ = [
    "ALL_TENSOR_METRICS",
    "CHEAP_OP_METRICS",
    "DEFAULT_MAX_TENSOR_ELEMENTS",
    "EXPENSIVE_OP_METRICS",
    "EXPENSIVE_TENSOR_METRICS",
    "OP_METRICS",
    "TENSOR_METRICS",
    "augment",
    "compute",
    "totals",
]
