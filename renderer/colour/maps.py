"""Metric → colour: colour maps (ours in ``colormaps/`` or any matplotlib one), norms, readable text colour."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from functools import cache, lru_cache
from importlib.resources.abc import Traversable
from typing import TYPE_CHECKING

import numpy as np

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
    a float in 0..1 the entry ``int(x * N)`` (clipped)."""

    def __init__(self, name: str, colors: list[str], reverse: bool = False, N: int = 256) -> None:
        self.name, self.N = name, N
        rgb = np.array([[int(c[i:i + 2], 16) / 255 for i in (1, 3, 5)] for c in colors], dtype=np.float64)
        x = np.linspace(0, 1, len(colors))
        if reverse:
            x, rgb = (1.0 - x)[::-1], rgb[::-1]
        self.rgba = np.column_stack([*(_sampled(x, rgb[:, k], N) for k in range(3)), np.ones(N)])
        self.annograph_hex = [to_hex(row) for row in self.rgba]

    def __call__(self, x: float | np.ndarray) -> tuple[float, ...] | np.ndarray:
        if isinstance(x, np.ndarray):
            return np.array([self(v) for v in x.tolist()])
        index = x if isinstance(x, int | np.integer) else (self.N - 1 if x * self.N >= self.N else int(x * self.N))
        return tuple(float(c) for c in self.rgba[min(max(int(index), 0), self.N - 1)])


def _sampled(x: np.ndarray, y: np.ndarray, n: int) -> np.ndarray:
    """``n`` samples of the piecewise-linear channel through (x, y), as matplotlib's ``_create_lookup_table``
    computes them (gamma 1), operation for operation."""
    x = x * (n - 1)
    xind = (n - 1) * np.linspace(0, 1, n) ** 1.0
    ind = np.searchsorted(x, xind)[1:-1]
    distance = (xind[1:-1] - x[ind - 1]) / (x[ind] - x[ind - 1])
    return np.clip(np.concatenate([[y[0]], distance * (y[ind] - y[ind - 1]) + y[ind - 1], [y[-1]]]), 0.0, 1.0)


def to_hex(rgba: tuple[float, ...] | np.ndarray) -> str:
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
    sorted_values: np.ndarray = field(default_factory=lambda: np.zeros(0))
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
        data = np.asarray([v for v in values if v is not None and math.isfinite(v)], dtype=np.float64)
        if norm == "log":
            data = data[data > 0]
        low = float(vmin) if vmin is not None else (float(data.min()) if data.size else 0.0)
        high = float(vmax) if vmax is not None else (float(data.max()) if data.size else 1.0)
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
            scale = cls("source gradient", norm, low, high, center, np.sort(data))
            scale._cmap = LinearSegmentedColormap.from_list("source", ordered, N=256)
            return scale
        if thresholds:
            scale = cls("source thresholds", "linear", low, high, None, np.sort(data), sorted(thresholds))
            scale._cmap = get_cmap(DEFAULT_CMAP)
            return scale
        scale = cls(name, norm, low, high, center, np.sort(data))
        scale._cmap = get_cmap(name)
        return scale

    def position(self, value: float) -> float:
        """Where ``value`` falls on the colour map, 0..1 (clipped)."""
        low, high = self.vmin, self.vmax
        if self.norm == "quantile":
            if self.sorted_values.size <= 1 or self.sorted_values[0] == self.sorted_values[-1]:
                return 0.0  # one value: the low end, not the middle, which reads as "hot"
            rank = np.searchsorted(self.sorted_values, value, side="left")
            upper = np.searchsorted(self.sorted_values, value, side="right")
            return float(np.clip(((rank + upper - 1) / 2) / (self.sorted_values.size - 1), 0.0, 1.0))
        if self.norm == "log":
            value = max(value, low)
            low, high, value = math.log10(low), math.log10(high), math.log10(value)
        if self.center is not None and self.norm == "linear":
            c = self.center
            if value <= c:
                return 0.5 if c == low else float(np.clip(0.5 * (value - low) / (c - low), 0.0, 0.5))
            return 0.5 if high == c else float(np.clip(0.5 + 0.5 * (value - c) / (high - c), 0.5, 1.0))
        if high == low:  # one value (or --vmin = --vmax): the low end, not the middle, which reads as "hot"
            return 0.0 if value <= low else 1.0
        return float(np.clip((value - low) / (high - low), 0.0, 1.0))

    def single_value(self) -> float | None:
        """The one value of the data when they hold a single value and the range is just it, else None.

        >>> Scale.fit([0.0, 0.0]).single_value(), Scale.fit([0.0, 2.0]).single_value()
        (0.0, None)
        """
        values = self.sorted_values
        if self.thresholds or not values.size or self.vmin != self.vmax or values[0] != values[-1]:
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
        if self.norm == "quantile" and self.sorted_values.size:
            qs = np.linspace(0, 1, count)
            return [float(np.quantile(self.sorted_values, q)) for q in qs]
        if self.norm == "log":
            return [float(x) for x in np.logspace(math.log10(self.vmin), math.log10(self.vmax), count)]
        if self.center is not None:
            half = count // 2
            lower = np.linspace(self.vmin, self.center, half + 1)
            upper = np.linspace(self.center, self.vmax, half + 1)[1:]
            return [float(x) for x in np.concatenate([lower, upper])]
        if self.vmin == self.vmax:
            return [self.vmin]
        return [float(x) for x in np.linspace(self.vmin, self.vmax, count)]

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
