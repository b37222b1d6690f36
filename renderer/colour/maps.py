"""Metric → colour: colour maps (ours in ``colormaps/`` or any matplotlib one), norms, readable text colour."""

from __future__ import annotations

import json
import math
from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field
from functools import cache, lru_cache
from importlib.resources.abc import Traversable
from typing import TYPE_CHECKING, Any

from renderer.core.errors import MetricError
from renderer.data.resources import folder

if TYPE_CHECKING:
    from matplotlib.colors import Colormap

NORMS = ("linear", "log", "quantile")
DEFAULT_CMAP = "heat"
DEFAULT_DIVERGING_CMAP = "diverging"
NA_COLOR = "#e6e6e6"
"""Fill for elements without a value; text on it says n/a."""


def _colormaps_dir() -> Traversable:
    return folder("colormaps")


@cache
def own_colormaps() -> dict[str, dict]:
    """Our colour maps: file stem → the JSON document (``colors``, ``kind``, ``description``)."""
    maps: dict[str, dict] = {}
    for entry in sorted(_colormaps_dir().iterdir(), key=lambda p: p.name):
        if entry.name.endswith(".json") and entry.name != "categories.json":
            maps[entry.name[:-5]] = json.loads(entry.read_text(encoding="utf-8"))
    return maps


@cache
def category_colors() -> dict[str, str]:
    data = json.loads(_colormaps_dir().joinpath("categories.json").read_text(encoding="utf-8"))
    return {k: v for k, v in data.items() if k != "comment"}


@cache
def get_cmap(name: str) -> Colormap | OwnMap:
    """A colour map by name: ours first (``heat``, ``heat_r``…), then matplotlib's (``viridis``, ``coolwarm``…).
    One object per name and process (never modified), so its table of hex colours is made once."""
    base, reverse = (name[:-2], True) if name.endswith("_r") else (name, False)
    own = own_colormaps().get(base)
    if own is not None:
        return OwnMap(name, own["colors"], reverse)
    from matplotlib import colormaps

    try:
        return colormaps[name]
    except KeyError:
        ours = ", ".join(sorted(own_colormaps()))
        raise MetricError(
            f"unknown colour map {name!r} (ours: {ours}; or any matplotlib colour map, e.g. viridis, coolwarm, magma)"
        ) from None


class OwnMap:
    """One of our maps sampled into ``N`` colours with the arithmetic of matplotlib's
    ``LinearSegmentedColormap.from_list(name, colors, N)`` (and ``.reversed()``), so the same colours to the bit,
    without importing matplotlib (about 0.4 s of a render). Called as a matplotlib map is: an int picks an entry,
    a float in 0..1 the entry ``int(x * N)`` (clipped). In plain Python floats, the same IEEE operations numpy
    makes, so a render that colours with our maps imports no numpy either (a restored model needs none)."""

    def __init__(self, name: str, colors: list[str], reverse: bool = False, N: int = 256) -> None:
        self.name, self.N = name, N
        rgb = [[int(c[i:i + 2], 16) / 255 for i in (1, 3, 5)] for c in colors]
        x = linspace(0.0, 1.0, len(colors))
        if reverse:
            x, rgb = [1.0 - v for v in x][::-1], rgb[::-1]
        channels = [_sampled(x, [row[k] for row in rgb], N) for k in range(3)]
        self.rgba = [(r, g, b, 1.0) for r, g, b in zip(*channels, strict=True)]
        self.annograph_hex = [to_hex(row) for row in self.rgba]

    def __call__(self, x: Any) -> Any:
        if getattr(x, "ndim", 0):  # an array of positions or entries (matplotlib's own call)
            import numpy as np

            return np.array([self(v) for v in x.tolist()])
        if isinstance(x, float):
            index = self.N - 1 if x * self.N >= self.N else int(x * self.N)
        else:  # an int, numpy's too: that entry
            index = int(x)
        return self.rgba[min(max(index, 0), self.N - 1)]


def linspace(start: float, stop: float, num: int) -> list[float]:
    """``numpy.linspace(start, stop, num)`` to the bit: ``i * step + start``, the last value ``stop``."""
    if num <= 0:
        return []
    div = num - 1
    delta = float(stop) - float(start)
    step = delta / div if div else delta
    if div and step == 0:
        values = [i / div * delta + start for i in range(num)]
    else:
        values = [i * step + start for i in range(num)]
    if div:
        values[-1] = float(stop)
    return [float(v) for v in values]


def _sampled(x: list[float], y: list[float], n: int) -> list[float]:
    """``n`` samples of the piecewise-linear channel through (x, y), as matplotlib's ``_create_lookup_table``
    computes them (gamma 1), operation for operation."""
    x = [v * (n - 1) for v in x]
    xind = [(n - 1) * v for v in linspace(0.0, 1.0, n)]
    inner = []
    for at in xind[1:-1]:
        i = bisect_left(x, at)
        distance = (at - x[i - 1]) / (x[i] - x[i - 1])
        inner.append(distance * (y[i] - y[i - 1]) + y[i - 1])
    return [min(max(v, 0.0), 1.0) for v in [y[0], *inner, y[-1]]]


def _clip(value: float, low: float, high: float) -> float:
    """``float(numpy.clip(value, low, high))`` (NaN stays NaN)."""
    return min(max(value, low), high) if value == value else value


def to_hex(rgba: Any) -> str:
    """An RGB(A) tuple in 0..1 → ``#rrggbb`` (alpha dropped)."""
    r, g, b = (int(round(float(c) * 255)) for c in rgba[:3])
    return f"#{r:02x}{g:02x}{b:02x}"


def relative_luminance(color: str) -> float:
    """WCAG 2 relative luminance of ``#rrggbb``."""
    channels = [int(color[i : i + 2], 16) / 255 for i in (1, 3, 5)]
    linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def contrast_ratio(a: str, b: str) -> float:
    la, lb = relative_luminance(a), relative_luminance(b)
    return (max(la, lb) + 0.05) / (min(la, lb) + 0.05)


@lru_cache(maxsize=4096)
def text_color(fill: str) -> str:
    """Black or white, whichever reads better on ``fill`` (always ≥ 4.58:1, so WCAG AA for any fill).

    >>> text_color("#ffffff"), text_color("#000000"), text_color("#662506")
    ('#000000', '#ffffff', '#ffffff')
    """
    return "#000000" if contrast_ratio(fill, "#000000") >= contrast_ratio(fill, "#ffffff") else "#ffffff"


@dataclass(slots=True)
class Scale:
    """Maps a metric's values onto a colour map.

    Attributes:
        cmap_name: colour map name as given.
        norm: linear, log or quantile.
        vmin / vmax: the ends of the colour map (from the data unless given).
        center: for diverging data, the value placed at the middle of the map.
        sorted_values: the data, for the quantile norm.
    """

    cmap_name: str
    norm: str = "linear"
    vmin: float = 0.0
    vmax: float = 1.0
    center: float | None = None
    sorted_values: list[float] = field(default_factory=list)
    thresholds: list[tuple[float, str]] | None = None
    _cmap: Colormap | OwnMap | None = None
    _hex: list[str] | None = None

    @classmethod
    def fit(
        cls, values: list[float], cmap: str | None = None, norm: str = "linear", vmin: float | None = None,
        vmax: float | None = None, center: float | None = None, stops: list[tuple[float, str]] | None = None,
        thresholds: list[tuple[float, str]] | None = None,
    ) -> Scale:
        """Fit to ``values``. ``stops`` (position, colour) make a colour map of their own; ``thresholds``
        (upper bound, colour) colour each value by the first bound it does not exceed, as Model Explorer does."""
        if norm not in NORMS:
            raise MetricError(f"unknown norm {norm!r} (use one of {', '.join(NORMS)})")
        for option, given in (("vmin", vmin), ("vmax", vmax), ("center", center)):
            if given is not None and not (math.isfinite(given) and abs(given) <= 1e300):
                raise MetricError(f"--{option} {given:g} is not a finite number (between -1e300 and 1e300)")
        data = sorted(float(v) for v in values if v is not None and math.isfinite(v))
        if norm == "log":
            data = [v for v in data if v > 0]
        low = float(vmin) if vmin is not None else (data[0] if data else 0.0)
        high = float(vmax) if vmax is not None else (data[-1] if data else 1.0)
        if norm == "log" and low <= 0:
            raise MetricError("--norm log needs positive values (and a positive --vmin)")
        if low > high:
            raise MetricError(f"--vmin {low:g} is larger than --vmax {high:g}")
        if center is not None and not low <= center <= high:
            low, high = min(low, center), max(high, center)
        name = cmap or (DEFAULT_DIVERGING_CMAP if center is not None else DEFAULT_CMAP)
        if stops:
            from matplotlib.colors import LinearSegmentedColormap

            ordered = sorted((min(max(p, 0.0), 1.0), c) for p, c in stops)
            if ordered[0][0] > 0:
                ordered.insert(0, (0.0, ordered[0][1]))
            if ordered[-1][0] < 1:
                ordered.append((1.0, ordered[-1][1]))
            scale = cls("source gradient", norm, low, high, center, data)
            scale._cmap = LinearSegmentedColormap.from_list("source", ordered, N=256)
            return scale
        if thresholds:
            scale = cls("source thresholds", "linear", low, high, None, data, sorted(thresholds))
            scale._cmap = get_cmap(DEFAULT_CMAP)
            return scale
        scale = cls(name, norm, low, high, center, data)
        scale._cmap = get_cmap(name)
        return scale

    def position(self, value: float) -> float:
        """Where ``value`` falls on the colour map, 0..1 (clipped)."""
        low, high = self.vmin, self.vmax
        if self.norm == "quantile":
            if len(self.sorted_values) <= 1 or self.sorted_values[0] == self.sorted_values[-1]:
                return 0.0  # one value: the low end, not the middle, which reads as "hot"
            rank = bisect_left(self.sorted_values, value)
            upper = bisect_right(self.sorted_values, value)
            return _clip(((rank + upper - 1) / 2) / (len(self.sorted_values) - 1), 0.0, 1.0)
        if self.norm == "log":
            value = max(value, low)
            low, high, value = math.log10(low), math.log10(high), math.log10(value)
        if self.center is not None and self.norm == "linear":
            c = self.center
            if value <= c:
                return 0.5 if c == low else _clip(0.5 * (value - low) / (c - low), 0.0, 0.5)
            return 0.5 if high == c else _clip(0.5 + 0.5 * (value - c) / (high - c), 0.5, 1.0)
        if high == low:  # one value (or --vmin = --vmax): the low end, not the middle, which reads as "hot"
            return 0.0 if value <= low else 1.0
        return _clip((value - low) / (high - low), 0.0, 1.0)

    def single_value(self) -> float | None:
        """The one value of the data when they hold a single value and the range is just it, else None.

        >>> Scale.fit([0.0, 0.0]).single_value(), Scale.fit([0.0, 2.0]).single_value()
        (0.0, None)
        """
        values = self.sorted_values
        if self.thresholds or not values or self.vmin != self.vmax or values[0] != values[-1]:
            return None
        return float(values[0]) if float(values[0]) == self.vmin else None

    def color(self, value: float | None) -> str:
        """``#rrggbb`` for ``value``; NA_COLOR for None/NaN."""
        if value is None or not math.isfinite(value):
            return NA_COLOR
        if self.thresholds:
            return next((color for bound, color in self.thresholds if value <= bound), NA_COLOR)
        return self._lookup(self.position(value))

    def ticks(self, count: int = 5) -> list[float]:
        """Values to label along the colour bar, evenly spaced in the norm's own terms."""
        if self.thresholds:
            return [bound for bound, _ in self.thresholds]
        if self.norm == "quantile" and self.sorted_values:
            import numpy as np

            return [float(np.quantile(self.sorted_values, q)) for q in linspace(0.0, 1.0, count)]
        if self.norm == "log":
            import numpy as np

            return [float(x) for x in np.logspace(math.log10(self.vmin), math.log10(self.vmax), count)]
        if self.center is not None:
            half = count // 2
            return linspace(self.vmin, self.center, half + 1) + linspace(self.center, self.vmax, half + 1)[1:]
        if self.vmin == self.vmax:
            return [self.vmin]
        return linspace(self.vmin, self.vmax, count)

    def color_at(self, position: float) -> str:
        """The colour at ``position`` (0..1) along the map."""
        return self._lookup(min(max(position, 0.0), 1.0))

    def _lookup(self, position: float) -> str:
        """``to_hex(cmap(position))`` for a position in 0..1, from the map's own table of N colours: a matplotlib
        map picks entry ``int(position * N)`` (N-1 at 1.0) for a float, so this is the same colour without a
        call into matplotlib per box (a batch colours tens of thousands)."""
        if self._hex is None:
            assert self._cmap is not None
            table = getattr(self._cmap, "annograph_hex", None)
            if table is None:
                import numpy as np

                table = [to_hex(rgba) for rgba in self._cmap(np.arange(self._cmap.N))]
                self._cmap.annograph_hex = table  # type: ignore[attr-defined]
            self._hex = table
        size = len(self._hex)
        scaled = position * size
        return self._hex[size - 1 if scaled >= size else int(scaled)]

    def gradient(self, steps: int = 24, floor: float = 0.0) -> list[str]:
        """Colours along the bar from vmin to vmax (the map from ``floor`` on)."""
        if self.thresholds:
            return [color for _, color in self.thresholds for _ in range(max(1, steps // len(self.thresholds)))]
        return [self.color_at(floor + (1 - floor) * i / (steps - 1)) for i in range(steps)]
