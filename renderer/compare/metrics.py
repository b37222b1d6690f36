"""Error metrics of a candidate tensor against its reference: the numbers ``annograph compare`` writes."""

from __future__ import annotations

import math
from typing import Any

from ..annotations.records import MetricInfo

SOURCE = "compare"

METRICS: dict[str, MetricInfo] = {
    "max_abs_error": MetricInfo("max_abs_error", SOURCE, "", False, "largest |candidate − reference|"),
    "mean_abs_error": MetricInfo("mean_abs_error", SOURCE, "", False, "mean |candidate − reference|"),
    "rmse": MetricInfo("rmse", SOURCE, "", False, "root mean square of candidate − reference"),
    "rel_error": MetricInfo("rel_error", SOURCE, "", False, "‖candidate − reference‖ / ‖reference‖"),
    "cosine": MetricInfo("cosine", SOURCE, "", True, "cosine similarity of candidate and reference"),
    "sqnr_db": MetricInfo(
        "sqnr_db", SOURCE, "dB", True, "signal-to-quantization-noise ratio: 10·log10(Σref² / Σ(cand−ref)²)"
    ),
}
"""Every metric, in the order written, with its direction (SQNR and cosine: higher is better)."""

INFINITE = "inf"
"""How an infinite value (SQNR of identical tensors) is written: JSON has no infinity."""


def error_metrics(reference: Any, candidate: Any) -> dict[str, float]:
    """The metrics of ``candidate`` against ``reference`` (arrays of the same shape), as Python floats.

    Identical tensors give 0 errors, cosine 1 and an infinite SQNR. Non-finite inputs give NaN metrics.
    """
    import numpy as np

    ref = np.asarray(reference, dtype=np.float64).ravel()
    cand = np.asarray(candidate, dtype=np.float64).ravel()
    if ref.size == 0:
        return {"max_abs_error": 0.0, "mean_abs_error": 0.0, "rmse": 0.0, "rel_error": 0.0, "cosine": 1.0,
                "sqnr_db": math.inf}
    diff = cand - ref
    abs_diff = np.abs(diff)
    noise = float(np.dot(diff, diff))
    signal = float(np.dot(ref, ref))
    cand_power = float(np.dot(cand, cand))
    if not (math.isfinite(noise) and math.isfinite(signal) and math.isfinite(cand_power)):
        return {name: math.nan for name in METRICS}
    if signal == 0 and cand_power == 0:
        cosine = 1.0
    elif signal == 0 or cand_power == 0:
        cosine = 0.0
    else:
        cosine = float(np.dot(ref, cand)) / math.sqrt(signal * cand_power)
    return {
        "max_abs_error": float(abs_diff.max()),
        "mean_abs_error": float(abs_diff.mean()),
        "rmse": math.sqrt(noise / ref.size),
        "rel_error": math.sqrt(noise / signal) if signal else (0.0 if noise == 0 else math.inf),
        "cosine": max(-1.0, min(1.0, cosine)),
        "sqnr_db": _sqnr_db(signal, noise),
    }


def _sqnr_db(signal: float, noise: float) -> float:
    if noise == 0:
        return math.inf  # identical tensors, zeros included
    if signal == 0:
        return -math.inf
    return 10 * math.log10(signal / noise)


def json_value(number: float) -> float | str:
    """A metric as JSON can hold it: infinities and NaN as text ("inf", "-inf", "nan")."""
    if math.isnan(number):
        return "nan"
    if math.isinf(number):
        return INFINITE if number > 0 else "-" + INFINITE
    return number
