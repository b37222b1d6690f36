"""Box fills under every norm with a range that does not start at 0, read back from the rendered SVG.

The expected colours are computed here from matplotlib's colour map and the norm's definition, not through
``renderer.colour.maps``: a scale that divided by ``vmax`` instead of ``vmax - vmin`` passed the older tests,
which all used ``--vmin 0``.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

import renderer
from conftest import ONNX, first_fill, parse_svg, run_cli, svg_groups
from renderer.picture.folding import fold

TINY_CNN = ONNX / "tiny_cnn.onnx"


def _hex(rgba: tuple[float, ...]) -> str:
    return "#" + "".join(f"{int(round(c * 255)):02x}" for c in rgba[:3])


def _linear(lo: float, hi: float):  # type: ignore[no-untyped-def]
    return lambda v, _: min(max((v - lo) / (hi - lo), 0.0), 1.0)


def _log(lo: float, hi: float):  # type: ignore[no-untyped-def]
    return lambda v, _: min(max((math.log10(v) - math.log10(lo)) / (math.log10(hi) - math.log10(lo)), 0.0), 1.0)


def _quantile(v: float, values: list[float]) -> float:
    return sorted(values).index(v) / (len(values) - 1)  # distinct values: the rank over n - 1


CASES = {
    # values 7, 10, … 34 on [12, 30]: some clipped at each end, the rest inside
    "linear": (["--vmin", "12", "--vmax", "30"], lambda i: 7.0 + 3 * i, _linear(12, 30)),
    # 3, 6, 12, … on [5, 800]
    "log": (["--norm", "log", "--vmin", "5", "--vmax", "800"], lambda i: 3.0 * 2**i, _log(5, 800)),
    # far from 0 and unevenly spaced: the quantile norm ranks them
    "quantile": (["--norm", "quantile"], lambda i: 1000.0 + i**3, _quantile),
}


@pytest.mark.parametrize("norm", list(CASES))
def test_fills_with_a_range_away_from_zero(norm: str, tmp_path: Path) -> None:
    from matplotlib import colormaps

    options, value_of, position = CASES[norm]
    model = renderer.load_model(TINY_CNN)
    folding = fold(model)
    ops = [n for n in model.nodes() if folding.is_drawn(n)][:10]
    values = {n.name: value_of(i) for i, n in enumerate(ops)}
    notes = tmp_path / "lat.json"
    notes.write_text(json.dumps({"operators": [{"id": k, "meta": {"lat": v}} for k, v in values.items()]}),
                     encoding="utf-8")
    out = tmp_path / "m.svg"
    run = run_cli("render", TINY_CNN, "-a", notes, "--color-by", "lat", "--cmap", "viridis", *options,
                  "-o", out, "--no-sidecar")
    assert run.returncode == 0, run.stderr
    groups = svg_groups(parse_svg(out), "op")
    cmap = colormaps["viridis"]
    fills = {}
    for node in ops:
        expected = _hex(cmap(position(values[node.name], list(values.values()))))
        fills[node.name] = first_fill(groups[node.element_id])
        assert fills[node.name] == expected, (norm, node.name, values[node.name])
    assert len(set(fills.values())) >= 5, fills  # the range really spreads the boxes over the map
