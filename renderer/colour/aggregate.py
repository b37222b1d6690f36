"""How a group's box summarises its members' values: sum, max, min or mean, by what the metric measures."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable

from renderer.core.errors import UsageError
from renderer.core.records import MetricInfo
from renderer.data.units import additive_kind

RULES = ("sum", "max", "min", "mean")

# Costs add up over a group; errors are as bad as the worst member; ratios average.
_ADDITIVE = re.compile(r"latency|time|_us\b|_ms\b|_ns\b|duration|bytes|memory|macs|flops|params|elements|count|calls",
                       re.IGNORECASE)
_WORST = re.compile(r"err|loss|mse|diff|dist|drift|rmse|deviation", re.IGNORECASE)


def rule_for(metric: str, info: MetricInfo | None, override: str | None = None) -> str:
    """``override`` when given, else the metric's own rule: the worst member for errors and for
    higher-is-better scores (SQNR: the lowest), the total for costs (a declared time, byte or count unit, else a
    cost's name), the mean for everything else."""
    if override:
        if override not in RULES:
            raise UsageError(f"--aggregate {override!r}: use one of {', '.join(RULES)}")
        return override
    if info is not None and getattr(info, "aggregate", None) in RULES:
        return info.aggregate  # type: ignore[return-value]
    if info is not None and info.higher_is_better is True:
        return "min"
    if info is not None and additive_kind(info.unit):
        return "sum"  # a time, byte size or count adds up, whatever the metric is called (``lat`` in µs)
    short = metric.rsplit(".", 1)[-1]
    if _WORST.search(short):
        return "max"
    if _ADDITIVE.search(short):
        return "sum"
    return "mean"


def combine(values: Iterable[float], rule: str) -> float | None:
    """The finite ``values`` combined by ``rule``; None when there are none."""
    finite = [v for v in values if math.isfinite(v)]
    if not finite:
        return None
    if rule == "sum":
        return math.fsum(finite)
    if rule == "max":
        return max(finite)
    if rule == "min":
        return min(finite)
    return math.fsum(finite) / len(finite)


def shares(parts: list[float], total: float, places: int = 1) -> list[float] | None:
    """Each part as a percentage of ``total``, rounded to ``places`` decimals so that the rounded shares add
    up to the rounded sum of the exact ones (100 when the parts make up the total): the largest remainders
    take the spare units. None when a share means nothing (a total that is not positive, a negative part)."""
    if not (math.isfinite(total) and total > 0) or any(not math.isfinite(p) or p < 0 for p in parts):
        return None
    unit = 10 ** places
    exact = [p / total * 100 * unit for p in parts]
    floors = [math.floor(e) for e in exact]
    spare = round(math.fsum(exact)) - sum(floors)
    by_remainder = sorted(range(len(parts)), key=lambda i: (floors[i] - exact[i], i))
    for i in by_remainder[:max(0, spare)]:
        floors[i] += 1
    return [f / unit for f in floors]
