"""Checks of a picture of tiny_cnn.onnx coloured by its sample latencies (the YAML or the ORT profile),
shared by the Jupyter, Sphinx and default-colour tests.

The expected boxes come from the model (the operators the folding draws) and the expected fills from the
sample file's numbers through matplotlib's viridis, computed here, not by ``renderer.colour.maps``.
"""

from __future__ import annotations

import html.parser
import json
import re
import statistics
from pathlib import Path

from conftest import ONNX, SAMPLES, first_fill, parse_svg, svg_groups

INLINE_PREFIX = re.compile(r"ag[0-9a-f]{8}-")
_URL_REF = re.compile(r"url\(\s*['\"]?#([^)'\"\s]+)")

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


def inlined_prefix(svg: bytes | str) -> str:
    """The prefix on every id of an SVG inlined into a page (``ag`` and 8 hex digits); asserts that every id has
    it, no id repeats, and every in-picture reference (``#id`` link, ``url(#id)``) names an id of this SVG."""
    root = parse_svg(svg)
    ids = [e.get("id") for e in root.iter() if e.get("id") is not None]
    assert ids and len(ids) == len(set(ids)), "an id repeats within the picture"
    found = INLINE_PREFIX.match(ids[0])
    assert found, ids[0]
    assert all(i.startswith(found.group()) for i in ids), [i for i in ids if not i.startswith(found.group())][:5]
    refs = [v[1:] for e in root.iter() for k, v in e.attrib.items() if k.endswith("href") and v.startswith("#")]
    refs += [r for e in root.iter() for v in e.attrib.values() for r in _URL_REF.findall(v)]
    assert set(refs) <= set(ids), sorted(set(refs) - set(ids))[:5]
    return found.group()


class _Ids(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.ids: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.ids += [v for k, v in attrs if k == "id" and v is not None]


def page_ids(page: str) -> list[str]:
    """Every id attribute of an HTML page, as a browser's parser reads them (svg elements included)."""
    parser = _Ids()
    parser.feed(page)
    parser.close()
    return parser.ids


def check_tiny_cnn(svg: bytes | str, annotations: Path = LATENCY, inlined: bool = False) -> dict[str, str]:
    """The SVG has one box per drawn operator of tiny_cnn, and the hottest, coolest and a middle operator of
    ``annotations`` are filled as viridis says (linear, from the data's range). Returns name → fill.

    ``inlined``: the SVG was written into a page, its ids under a prefix (``inlined_prefix`` checks them)."""
    import renderer
    from renderer.picture.folding import fold

    model = renderer.load_model(TINY_CNN)
    folding = fold(model)
    drawn = {n.element_id: n for n in model.nodes() if folding.is_drawn(n)}
    prefix = inlined_prefix(svg) if inlined else ""
    groups = {i.removeprefix(prefix): g for i, g in svg_groups(parse_svg(svg), "op").items()}
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


def shown(text: str) -> float:
    """A number as the tooltip shows it (``13``, ``2.5``, ``12.3k``)."""
    scale = {"k": 1e3, "M": 1e6, "G": 1e9}.get(text[-1:], 1.0)
    return float(text.rstrip("kMG")) * scale


def close(shown_text: str, expected: float) -> bool:
    """The tooltip's digits agree with ``expected`` to half a unit of the last one shown (``16.1k``: ±50; the
    times are the machine's, above 10k µs under load)."""
    scale = {"k": 1e3, "M": 1e6, "G": 1e9}.get(shown_text[-1:], 1.0)
    decimals = len(shown_text.rstrip("kMG").partition(".")[2])
    return abs(shown(shown_text) - expected) <= 0.5 * scale * 10.0**-decimals + 1e-9 * abs(expected)
