"""The weight-data pass: read each stored tensor once and reduce it to what the metrics need.

Requests are grouped by tensor first, so a tensor read by several operators (or with several zero points) is
still read once, in chunks, and never cached in the model. Per tensor it yields value statistics (min, max,
mean, std, exact zeros) and, for each distinct zero point asked for, how many stored values equal it.
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from renderer.core.errors import first_line
from renderer.core.ir import Value
from renderer.core.numbers import format_count
from renderer.core.progress import bar as progress_bar
from renderer.metrics.formulas import MALFORMED, NotCountable, malformed, prod
from renderer.metrics.opview import label
from renderer.metrics.weights import ZeroPoint, numeric

if TYPE_CHECKING:
    import numpy as np

CHUNK_ELEMENTS = 1 << 18
PROGRESS_MIN_ELEMENTS = 16 << 20
"""Show a progress bar (on a terminal, not with -q) only when the pass reads at least this many values."""


@dataclass(slots=True)
class Stats:
    """Running statistics of stored values (raw quantized codes for integer tensors)."""

    count: int = 0
    minimum: float = math.inf
    maximum: float = -math.inf
    total: float = 0.0
    squares: float = 0.0
    zeros: int = 0
    integer: bool = False

    def merge(self, other: Stats) -> Stats:
        return Stats(self.count + other.count, min(self.minimum, other.minimum), max(self.maximum, other.maximum),
                     self.total + other.total, self.squares + other.squares, self.zeros + other.zeros,
                     self.integer and other.integer)

    def values(self, prefix: str) -> dict[str, Any]:
        if self.count == 0:
            return {}
        mean = self.total / self.count
        variance = max(self.squares / self.count - mean * mean, 0.0)
        def convert(x: float) -> int | float:
            return int(x) if self.integer else float(f"{x:.7g}")

        return {
            f"{prefix}min": convert(self.minimum),
            f"{prefix}max": convert(self.maximum),
            f"{prefix}mean": float(f"{mean:.6g}"),
            f"{prefix}std": float(f"{math.sqrt(variance):.6g}"),
            f"{prefix}zero_fraction": round(self.zeros / self.count, 6),
        }


@dataclass(slots=True)
class Request:
    """What to compute for one stored tensor."""

    value: Value
    stats: bool = False
    zero_points: dict[tuple, ZeroPoint] = field(default_factory=dict)


@dataclass(slots=True)
class Result:
    """Per tensor: statistics (or why not), and the count of values equal to each requested zero point."""

    stats: Stats | str | None = None
    equal: dict[tuple, int | str] = field(default_factory=dict)


def stored_elements(value: Value) -> int:
    return prod(value.initializer.shape) if value.initializer is not None else 0


def read_array(value: Value) -> np.ndarray:
    """The stored data, without caching it in the model (a weight pass must not keep every tensor alive)."""
    tensor = value.initializer
    if tensor is None:
        raise NotCountable(f"{label(value)} holds no data")
    cached = getattr(tensor, "_array", None)
    try:
        array = cached if cached is not None else (tensor.reader() if tensor.reader else tensor.numpy())
    except Exception as e:  # external data missing, corrupt buffer…
        raise NotCountable(f"cannot read {label(value)}: {first_line(e)}") from None
    try:
        return numeric(array)
    except NotCountable:
        raise NotCountable(f"{label(value)} holds {array.dtype} data") from None


def run(requests: list[Request], limit: int, progress: bool = True) -> dict[int, Result]:
    """Reduce every requested tensor; ``limit`` bounds the size of tensors given statistics."""
    total = sum(stored_elements(r.value) for r in requests)
    results: dict[int, Result] = {}
    with (progress_bar(total, "reading weights", " values", unit_scale=True)
          if progress and total >= PROGRESS_MIN_ELEMENTS else contextlib.nullcontext()) as bar:
        for request in requests:
            results[id(request.value)] = _one(request, limit, bar)
    return results


def _one(request: Request, limit: int, bar: Any) -> Result:
    result = Result()
    value = request.value
    size = stored_elements(value)
    want_stats = request.stats
    if want_stats and size > limit:
        result.stats = f"skipped: {format_count(size)} elements > limit {format_count(limit)}"
        want_stats = False
    if not want_stats and not request.zero_points:
        return result
    try:
        array = read_array(value)
        prepared = {key: _prepare(zp, array) for key, zp in request.zero_points.items()}
        stats, equal = _reduce(array, prepared, want_stats, bar)
    except (NotCountable, *MALFORMED) as e:
        reason = str(e) if isinstance(e, NotCountable) else malformed(e)
        if want_stats:
            result.stats = reason
        result.equal = dict.fromkeys(request.zero_points, reason)
        return result
    if want_stats:
        result.stats = stats
    result.equal = equal  # type: ignore[assignment]
    return result


def _prepare(zp: ZeroPoint, array: np.ndarray) -> np.ndarray | None:
    """The zero point in the array's dtype (None for 0); NotCountable if it does not fit the data."""
    import numpy as np

    if zp.values is None:
        return None
    values = zp.values
    if values.ndim and values.ndim != array.ndim:
        raise NotCountable(f"zero point of rank {values.ndim} for data of rank {array.ndim}")
    if values.ndim:
        for have, want in zip(values.shape, array.shape):
            if have not in (1, want):
                raise NotCountable(f"zero point shape {values.shape} does not fit data shape {array.shape}")
    if array.dtype.kind in "iu" and values.dtype.kind in "iu":
        info = np.iinfo(array.dtype)
        if values.min() >= info.min and values.max() <= info.max:
            return values.astype(array.dtype, copy=False)
        return values.astype(np.int64)
    return values.astype(array.dtype, copy=False) if array.dtype.kind == "f" else values


def _reduce(array: np.ndarray, zero_points: dict[tuple, np.ndarray | None], want_stats: bool,
            bar: Any) -> tuple[Stats, dict[tuple, int]]:
    import numpy as np

    if all(zp is None or zp.ndim == 0 for zp in zero_points.values()):
        shaped = array.reshape(-1)  # per-tensor zero points: chunk the flat data
    else:
        shaped = array.reshape(1) if array.ndim == 0 else array  # per-channel: chunk whole rows of axis 0
    rows = shaped.shape[0]
    per_row = max(1, shaped.size // max(rows, 1))
    step = max(1, CHUNK_ELEMENTS // per_row)
    largest = min(rows, step) * per_row
    # Reused buffers: fresh large temporaries per chunk cost more in page faults than the arithmetic.
    wide_buffer = np.empty(largest, np.float64) if want_stats else None
    flags_buffer = np.empty(largest, np.bool_)
    stats = Stats(integer=array.dtype.kind in "biu")
    equal = dict.fromkeys(zero_points, 0)
    need_zeros = want_stats or any(zp is None for zp in zero_points.values())
    for start in range(0, rows, step):
        chunk = shaped[start:start + step]
        n = chunk.size
        if n == 0:
            continue
        flags = flags_buffer[:n].reshape(chunk.shape)
        zeros = 0
        if need_zeros:
            np.equal(chunk, 0, out=flags)
            zeros = int(np.count_nonzero(flags))
        if want_stats:
            # min/max in the stored dtype; sums in float64 so std keeps its digits
            wide = wide_buffer[:n]  # type: ignore[index]
            wide[...] = chunk.reshape(-1)
            stats.count += n
            stats.minimum = min(stats.minimum, float(chunk.min()))
            stats.maximum = max(stats.maximum, float(chunk.max()))
            stats.total += float(wide.sum())
            stats.squares += float(np.einsum("i,i->", wide, wide))
            stats.zeros += zeros
        for key, zp in zero_points.items():
            if zp is None:
                equal[key] += zeros
                continue
            part = zp[start:start + step] if zp.ndim and zp.shape[0] != 1 else zp
            np.equal(chunk, part, out=flags)
            equal[key] += int(np.count_nonzero(flags))
        if bar is not None:
            bar.update(n)
    return stats, equal
