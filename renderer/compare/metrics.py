"""Error metrics of a candidate tensor against its reference: the numbers ``annograph compare`` writes."""

from __future__ import annotations

import math
from typing import Any

from renderer.core.records import MetricInfo

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


PIECE = 1 << 20
"""Elements measured at a time: the float64 temporaries stay a few MiB whatever the tensor's size."""


def error_metrics(reference: Any, candidate: Any) -> dict[str, float]:
    """The metrics of ``candidate`` against ``reference`` (arrays of the same shape), as Python floats.

    Measured in pieces of ``PIECE`` elements (sums kept in float64), never a float64 copy of a whole tensor.
    Identical tensors give 0 errors, cosine 1 and an infinite SQNR. Non-finite inputs give NaN metrics.
    """
    import numpy as np

    ref, cand = np.asarray(reference).reshape(-1), np.asarray(candidate).reshape(-1)
    if ref.size == 0:
        return {"max_abs_error": 0.0, "mean_abs_error": 0.0, "rmse": 0.0, "rel_error": 0.0, "cosine": 1.0,
                "sqnr_db": math.inf}
    largest = total_abs = noise = signal = cand_power = cross = 0.0
    with np.errstate(all="ignore"):  # an overflow is a non-finite sum, reported as NaN metrics below
        for start in range(0, ref.size, PIECE):
            r = ref[start:start + PIECE].astype(np.float64)
            c = cand[start:start + PIECE].astype(np.float64)
            diff = c - r
            abs_diff = np.abs(diff)
            largest = max(largest, float(abs_diff.max()))
            total_abs += float(abs_diff.sum())
            noise += float(np.dot(diff, diff))
            signal += float(np.dot(r, r))
            cand_power += float(np.dot(c, c))
            cross += float(np.dot(r, c))
    if not (math.isfinite(noise) and math.isfinite(signal) and math.isfinite(cand_power)):
        return {name: math.nan for name in METRICS}
    return _metrics(ref.size, largest, total_abs, noise, signal, cand_power, cross)


def _metrics(size: int, largest: float, total_abs: float, noise: float, signal: float, cand_power: float,
             cross: float) -> dict[str, float]:
    if signal == 0 and cand_power == 0:
        cosine = 1.0
    elif signal == 0 or cand_power == 0:
        cosine = 0.0
    else:
        cosine = cross / math.sqrt(signal * cand_power)
    return {
        "max_abs_error": largest,
        "mean_abs_error": total_abs / size,
        "rmse": math.sqrt(noise / size),
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
