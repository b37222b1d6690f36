"""Checks of a picture of tiny_cnn.onnx coloured by its sample latencies (the YAML or the ORT profile),
shared by the Jupyter, Sphinx and default-colour tests.

The expected boxes come from the model (the operators the folding draws) and the expected fills from the
sample file's numbers through matplotlib's viridis, computed here, not by ``renderer.colors``.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

from conftest import ONNX, SAMPLES, first_fill, parse_svg, svg_groups

TINY_CNN = ONNX / "tiny_cnn.onnx"
LATENCY = SAMPLES / "annotations" / "tiny_cnn.latency.yaml"
PROFILE = SAMPLES / "annotations" / "tiny_cnn.ort_profile.json"


def latencies(path: Path = LATENCY) -> dict[str, float]:
    import yaml

    return {op["id"]: float(op["meta"]["latency_us"]) for op in yaml.safe_load(path.read_text())["operators"]}


def profile_latencies(path: Path = PROFILE) -> tuple[dict[str, float], dict[str, float]]:
    """(mean over the runs after the first, first run) of each node's summed kernel time, read from the trace
    here: a run ends at its ``model_run`` event."""
    runs: list[dict[str, float]] = [{}]
    for event in json.loads(path.read_text(encoding="utf-8")):
        if event.get("cat") == "Node" and event["name"].endswith("_kernel_time"):
            name = event["name"].removesuffix("_kernel_time")
            runs[-1][name] = runs[-1].get(name, 0) + event["dur"]
        elif event.get("cat") == "Session" and event["name"] == "model_run":
            runs.append({})
    runs = [run for run in runs if run]
    assert len(runs) > 2
    return {name: statistics.mean(run[name] for run in runs[1:]) for name in runs[0]}, runs[0]


def viridis_hex(value: float, lo: float, hi: float) -> str:
    from matplotlib import colormaps

    rgba = colormaps["viridis"](min(max((value - lo) / (hi - lo), 0.0), 1.0))
    return "#" + "".join(f"{int(round(c * 255)):02x}" for c in rgba[:3])


def check_tiny_cnn(svg: bytes | str, annotations: Path = LATENCY) -> dict[str, str]:
    """The SVG has one box per drawn operator of tiny_cnn, and the hottest, coolest and a middle operator of
    ``annotations`` are filled as viridis says (linear, from the data's range). Returns name → fill."""
    import renderer
    from renderer.folding import fold

    model = renderer.load_model(TINY_CNN)
    folding = fold(model)
    drawn = {n.element_id: n for n in model.nodes() if folding.is_drawn(n)}
    groups = svg_groups(parse_svg(svg), "op")
    assert sorted(groups) == sorted(drawn), (len(groups), len(drawn))
    values = latencies(annotations)
    lo, hi = min(values.values()), max(values.values())
    by_name = {n.name: n for n in drawn.values()}
    ranked = sorted(values, key=values.__getitem__)
    fills = {}
    for name in (ranked[0], ranked[len(ranked) // 2], ranked[-1]):
        fills[name] = first_fill(groups[by_name[name].element_id])
        assert fills[name] == viridis_hex(values[name], lo, hi), (name, values[name], fills[name])
    assert len(set(fills.values())) == 3, fills
    return fills
