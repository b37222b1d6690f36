"""Two model files compared: both loaded, their feedable dims checked, then run and measured (``core``)."""

from __future__ import annotations

from pathlib import Path

from renderer.compare.core import MAX_TENSOR_BYTES, Comparison, compare_runs
from renderer.core.errors import AnnographError
from renderer.core.pinning import check_union
from renderer.loaders.feeds import feedable_dims
from renderer.loaders.registry import load_model


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
    if model.format not in ("onnx", "tflite"):
        raise AnnographError(f"{reference}: compare runs ONNX models (onnxruntime) and TFLite models (LiteRT); "
                             "for other formats, compare tensor dumps with --dumps")
    return compare_runs(str(reference), str(candidate), (model, other), str(inputs) if inputs else None, seed, dims,
                        timeout, max_tensor_bytes or MAX_TENSOR_BYTES, keep_dumps)

