"""``renderer/colour/maps.py``: where a value falls on the colour map under each norm (linear, log, quantile, a centre),
``--vmin``/``--vmax``, values without a colour (None, NaN, ±inf), that the colours are matplotlib's for the map,
and that text on every colour of every map meets WCAG AA (4.5:1)."""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys

import numpy as np
import pytest
from matplotlib import colormaps as mpl_colormaps
from matplotlib.colors import LinearSegmentedColormap, to_hex

from conftest import ROOT
from renderer.colour.maps import NA_COLOR, Scale, contrast_ratio, get_cmap, own_colormaps, text_color
from renderer.core.errors import MetricError

OWN = sorted(p.stem for p in (ROOT / "colormaps").glob("*.json") if p.stem != "categories")
MATPLOTLIB = ["viridis", "magma", "coolwarm", "RdYlGn", "Greys"]
CATEGORIES = {k: v for k, v in json.loads((ROOT / "colormaps" / "categories.json").read_text()).items()
              if k != "comment"}
VALUES = [3.0, 1.0, 10.0, 4.0, 7.0, 2.0]


def _wcag_luminance(color: str) -> float:
    """WCAG 2.x relative luminance, written out from the definition (not the code under test)."""
    def linear(channel: int) -> float:
        c = channel / 255
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4
    r, g, b = (int(color[i:i + 2], 16) for i in (1, 3, 5))
    return 0.2126 * linear(r) + 0.7152 * linear(g) + 0.0722 * linear(b)


def _wcag_contrast(a: str, b: str) -> float:
    high, low = sorted((_wcag_luminance(a), _wcag_luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def test_the_maps_on_disk_are_the_maps_loaded() -> None:
    assert OWN == sorted(own_colormaps()) and {"heat", "traffic", "ice", "diverging"} <= set(OWN)


@pytest.mark.parametrize("fill,ratio", [("#ffffff", 21.0), ("#767676", 4.54), ("#777777", 4.48), ("#000000", 21.0)])
def test_contrast_ratio_is_wcags(fill: str, ratio: float) -> None:
    """#767676 on white is the well-known lightest grey that passes AA (4.54:1); #777777 fails (4.48:1)."""
    other = "#000000" if fill == "#ffffff" else "#ffffff"
    assert contrast_ratio(fill, other) == pytest.approx(ratio, abs=0.01)


@pytest.mark.parametrize("name", OWN + [m + "_r" for m in OWN] + MATPLOTLIB)
def test_text_on_every_colour_of_every_map_meets_aa(name: str) -> None:
    """Every one of the 256 colours a map can give a box (and each stop of ours), with the text colour chosen
    for it: at least 4.5:1, and the better of black and white."""
    cmap = get_cmap(name)
    fills = {to_hex(cmap(i)) for i in range(cmap.N)}
    base = name.removesuffix("_r")
    fills |= set(own_colormaps()[base]["colors"]) if base in own_colormaps() else set()
    for fill in sorted(fills):
        ink = text_color(fill)
        other = "#ffffff" if ink == "#000000" else "#000000"
        assert _wcag_contrast(ink, fill) >= 4.5, (name, fill, ink)
        assert _wcag_contrast(ink, fill) >= _wcag_contrast(other, fill), (name, fill)


def test_text_on_category_headers_and_the_na_fill_meets_aa() -> None:
    for fill in [*CATEGORIES.values(), NA_COLOR]:
        assert _wcag_contrast(text_color(fill), fill) >= 4.5, fill


@pytest.mark.parametrize("name", OWN)
def test_our_maps_are_matplotlib_interpolations_of_their_stops(name: str) -> None:
    stops = own_colormaps()[name]["colors"]
    reference = LinearSegmentedColormap.from_list(name, stops, N=256)
    scale = Scale.fit([0.0, 1.0], cmap=name)
    for value in np.linspace(0, 1, 17):
        assert scale.color(float(value)) == to_hex(reference(min(int(value * 256), 255)))
    assert scale.color(0.0) == stops[0] and scale.color(1.0) == stops[-1]
    assert Scale.fit([0.0, 1.0], cmap=name + "_r").color(0.0) == stops[-1]


@pytest.mark.parametrize("name", OWN + [m + "_r" for m in OWN])
def test_our_maps_are_matplotlibs_table_to_the_bit(name: str) -> None:
    """Every entry of our sampled table is the float matplotlib's ``from_list`` (and ``reversed``) computes, and a
    float position picks the entry matplotlib picks, ends and out-of-range values included."""
    base = name.removesuffix("_r")
    reference = LinearSegmentedColormap.from_list(base, own_colormaps()[base]["colors"], N=256)
    reference = reference.reversed() if name.endswith("_r") else reference
    ours = get_cmap(name)
    assert ours.N == reference.N and np.array_equal(ours(np.arange(ours.N)), reference(np.arange(reference.N)))
    draw = np.random.default_rng(7).random(500).tolist()
    for position in [0.0, 1.0, -0.5, 1.5, 0.5, 1 / 256, 255 / 256, 0.999999999, *draw]:
        assert ours(position) == tuple(reference(position)), position
    assert ours(0) == tuple(reference(0)) and ours(np.int64(255)) == tuple(reference(np.int64(255)))


def test_our_maps_colour_without_importing_matplotlib_or_numpy() -> None:
    """Linear, centred and one-value scales on our maps colour and label their legends without either."""
    code = ("import sys\nfrom renderer.colour.maps import Scale\n"
            "s = [Scale.fit([1.0, 2.0], cmap=n).color(1.5) for n in ('heat', 'ice_r', 'traffic', 'diverging')]\n"
            "t = [x.ticks() for x in (Scale.fit([-1.0, 3.0], center=0.0), Scale.fit([4.0, 4.0]))]\n"
            "print(s, t, 'matplotlib' in sys.modules, 'numpy' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert done.stdout.strip().endswith("False False"), done.stdout + done.stderr
    assert done.stdout.count("'#") == 4


def test_linspace_is_numpys_to_the_bit() -> None:
    """The ends, steps and counts a legend and a table use, and random ones, zero steps and one value included."""
    from renderer.colour.maps import linspace

    draw = np.random.default_rng(3)
    cases = [(0.0, 1.0, 256), (0.0, 1.0, 5), (1e-300, 1e-300, 4), (5.0, -3.0, 7), (0.0, 1.0, 1), (2.0, 2.0, 2)]
    cases += [(float(a), float(b), int(n)) for a, b, n in zip(draw.normal(0, 1e3, 300), draw.normal(0, 1e3, 300),
                                                              draw.integers(1, 40, 300))]
    for start, stop, num in cases:
        ours, theirs = linspace(start, stop, num), np.linspace(start, stop, num).tolist()
        assert [v.hex() for v in ours] == [v.hex() for v in theirs], (start, stop, num)


def test_a_matplotlib_map_by_name() -> None:
    scale = Scale.fit(VALUES, cmap="viridis")
    top = mpl_colormaps["viridis"]
    assert scale.color(max(VALUES)) == to_hex(top(top.N - 1)) and scale.color(min(VALUES)) == to_hex(top(0))


def test_an_unknown_map_names_ours() -> None:
    with pytest.raises(MetricError) as error:
        get_cmap("no_such_map")
    assert all(name in str(error.value) for name in OWN)


def test_linear_positions_run_from_the_smallest_to_the_largest_value() -> None:
    scale = Scale.fit(VALUES)
    low, high = min(VALUES), max(VALUES)
    assert (scale.vmin, scale.vmax) == (low, high)
    for value in VALUES:
        assert scale.position(value) == pytest.approx((value - low) / (high - low))


def test_vmin_and_vmax_fix_the_ends_and_clip_what_is_outside() -> None:
    scale = Scale.fit(VALUES, vmin=2.0, vmax=4.0)
    assert scale.position(3.0) == 0.5 and scale.position(1.0) == 0.0 and scale.position(10.0) == 1.0
    assert scale.color(10.0) == scale.color(4.0) and scale.color(-5.0) == scale.color(2.0)
    assert scale.ticks(3) == [2.0, 3.0, 4.0]


@pytest.mark.parametrize("kwargs,says", [
    ({"vmin": 5.0, "vmax": 1.0}, "--vmin 5 is larger than --vmax 1"),
    ({"vmin": math.nan}, "--vmin nan is not a finite number"),
    ({"vmax": math.inf}, "--vmax inf is not a finite number"),
    ({"norm": "log", "vmin": -1.0}, "--norm log needs positive values"),
    ({"norm": "cubic"}, "unknown norm 'cubic'"),
])
def test_bad_scales_are_metric_errors(kwargs: dict, says: str) -> None:  # type: ignore[type-arg]
    with pytest.raises(MetricError, match="^" + re.escape(says)):
        Scale.fit(VALUES, **kwargs)


def test_log_puts_the_geometric_mean_in_the_middle_and_drops_non_positive_values() -> None:
    scale = Scale.fit([0.0, -3.0, 1.0, 100.0], norm="log")
    assert (scale.vmin, scale.vmax) == (1.0, 100.0)
    assert scale.position(10.0) == pytest.approx(0.5)
    assert scale.ticks(3) == pytest.approx([1.0, 10.0, 100.0])
    assert scale.position(0.5) == 0.0  # below vmin: the low end


def test_quantile_positions_are_ranks_with_ties_shared() -> None:
    values = [5.0, 1.0, 1.0, 100.0, 7.0]
    scale = Scale.fit(values, norm="quantile")
    ordered = sorted(values)
    for value in set(values):
        ranks = [i for i, v in enumerate(ordered) if v == value]
        assert scale.position(value) == pytest.approx(sum(ranks) / len(ranks) / (len(values) - 1))
    assert Scale.fit([4.0, 4.0], norm="quantile").position(4.0) == 0.0


def test_a_centre_sits_in_the_middle_with_each_side_scaled_on_its_own() -> None:
    scale = Scale.fit([-2.0, 8.0], center=0.0)
    assert scale.cmap_name == "diverging"
    assert scale.position(0.0) == 0.5 and scale.position(-2.0) == 0.0 and scale.position(8.0) == 1.0
    assert scale.position(-1.0) == pytest.approx(0.25) and scale.position(4.0) == pytest.approx(0.75)
    assert 0.0 in scale.ticks(5)
    outside = Scale.fit([1.0, 3.0], center=-1.0)  # a centre outside the data widens the range to it
    assert (outside.vmin, outside.vmax) == (-1.0, 3.0) and outside.position(-1.0) == 0.5


def test_one_value_takes_the_low_end() -> None:
    scale = Scale.fit([4.0, 4.0])
    assert scale.position(4.0) == 0.0 and scale.single_value() == 4.0 and scale.ticks() == [4.0]
    assert Scale.fit([4.0, 5.0]).single_value() is None


@pytest.mark.parametrize("value", [None, math.nan, math.inf, -math.inf])
def test_a_value_without_a_number_gets_the_na_fill(value: float | None) -> None:
    assert Scale.fit(VALUES).color(value) == NA_COLOR


def test_nan_and_infinities_do_not_move_the_ends() -> None:
    scale = Scale.fit(VALUES + [math.nan, math.inf, -math.inf])
    assert (scale.vmin, scale.vmax) == (min(VALUES), max(VALUES)) and len(scale.sorted_values) == len(VALUES)


def test_thresholds_colour_by_the_first_bound_not_exceeded() -> None:
    bands = [(10.0, "#00ff00"), (5.0, "#ffff00"), (20.0, "#ff0000")]
    scale = Scale.fit(VALUES + [25.0], thresholds=bands)
    expected = {v: next((c for b, c in sorted(bands) if v <= b), NA_COLOR) for v in VALUES + [25.0]}
    assert {v: scale.color(v) for v in expected} == expected
    assert scale.ticks() == sorted(b for b, _ in bands)


def test_stops_make_a_map_of_their_own() -> None:
    scale = Scale.fit([0.0, 10.0], stops=[(0.2, "#0000ff"), (0.8, "#ff0000")])
    assert scale.color(0.0) == scale.color(2.0) == "#0000ff" and scale.color(10.0) == "#ff0000"


def test_the_gradient_runs_from_vmin_to_vmax() -> None:
    scale = Scale.fit(VALUES, cmap="ice")
    bar = scale.gradient(10)
    assert len(bar) == 10 and bar[0] == scale.color(scale.vmin) and bar[-1] == scale.color(scale.vmax)
