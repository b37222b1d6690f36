"""``annograph compare``: the error of a candidate (a quantized model, another runtime's dump) against a reference,
per tensor, as an annotation file.

``core`` matches tensors and measures them, ``metrics`` holds the formulas, ``onnx_run`` / ``tflite_run`` run the
models with every intermediate tensor kept, ``document`` writes the generic annotation format.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import AnnographError
from ..loaders import load_model
from ..loaders.pinning import check_union
from .core import MAX_TENSOR_BYTES, Comparison, TensorResult, compare_dumps, compare_runs
from .document import document
from .inputs import feedable_dims
from .metrics import METRICS, error_metrics


def compare_models(reference: str | Path, candidate: str | Path, inputs: str | Path | None = None, seed: int = 0,
                   dims: dict[str, int] | None = None, timeout: float | None = None,
                   max_tensor_bytes: int | None = None, keep_dumps: bool = False) -> Comparison:
    """Run ``reference`` and ``candidate`` (both ONNX, or both TFLite) on the same inputs, in a bounded child
    process (``timeout`` seconds, else the resource policy's), and compare every tensor the reference computes
    with its counterpart in the candidate; a tensor over ``max_tensor_bytes`` (default ``MAX_TENSOR_BYTES``) is a
    one-line error naming it."""
    dims = dict(dims or {})
    # the inputs' own free dims, which the run feeds (``compare.inputs``), not values assumed for a picture
    model = load_model(str(reference), dims=dims, check_dims=False, shape_run=False, assume_dims=False)
    other = load_model(str(candidate), dims=dims, check_dims=False, shape_run=False, assume_dims=False)
    check_union([reference, candidate], dims, [feedable_dims(model), feedable_dims(other)])
    if model.format != other.format:
        raise AnnographError(f"{candidate}: a {other.format.upper()} model; {reference} is {model.format.upper()}: "
                             "compare two models of one format, or dumps with --dumps")
    return compare_runs(str(reference), str(candidate), (model, other), str(inputs) if inputs else None, seed, dims,
                        timeout, max_tensor_bytes or MAX_TENSOR_BYTES, keep_dumps)


__all__ = ["MAX_TENSOR_BYTES", "METRICS", "Comparison", "TensorResult", "compare_dumps", "compare_models", "document", "error_metrics"]
