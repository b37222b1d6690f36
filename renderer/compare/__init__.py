"""``annograph compare``: the error of a candidate (a quantized model, another runtime's dump) against a reference,
per tensor, as an annotation file.

``models`` compares two model files, ``core`` matches tensors and measures them, ``metrics`` holds the formulas,
``onnx_run`` / ``tflite_run`` run the models with every intermediate tensor kept (in the bounded child, ``child``),
``document`` writes the generic annotation format.
"""

from __future__ import annotations

from renderer.compare.core import MAX_TENSOR_BYTES, Comparison, TensorResult, compare_dumps
from renderer.compare.document import document
from renderer.compare.metrics import METRICS, error_metrics
from renderer.compare.models import compare_models

__all__ = [
    "Comparison",
    "MAX_TENSOR_BYTES",
    "METRICS",
    "TensorResult",
    "compare_dumps",
    "compare_models",
    "document",
    "error_metrics",
]
