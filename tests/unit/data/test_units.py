"""Issue 27 item 8: a metric's declared unit says whether it adds up over operators (``renderer/data/units.json``).

A metric declared ``{"unit": "us"}`` but named ``lat`` was averaged (no name pattern knew it), so ``--min-share``
never applied and 200 operators of 0.02 % share each tripped ``--fail-above`` while the model got 60 % faster.
Now a time, byte or count unit makes it sum, in group boxes, model totals and the gate; the name patterns decide
only without such a unit, and when the floor cannot apply one line says so.
"""

from __future__ import annotations

import json
from pathlib import Path

import onnx
import pytest

import tts_transformer
from conftest import parse_svg, run_cli
from renderer.colour.aggregate import rule_for
from renderer.core.records import MetricInfo
from renderer.data.units import additive_kind

SMALL = 200


@pytest.mark.parametrize("name, unit, better, rule", [
    ("lat", "us", None, "sum"), ("lat", "µs", None, "sum"), ("t", "[ms]", None, "sum"), ("w", "MiB", None, "sum"),
    ("n", "calls", None, "sum"), ("k", "cycles", None, "sum"), ("x", "GMACs", None, "sum"),
    ("err_us", "us", None, "sum"),  # the unit says it is a time: it adds up, whatever the name
    ("bw", "GB/s", None, "mean"), ("util", "%", None, "mean"), ("lat", "", None, "mean"),
    ("sqnr", "dB", True, "min"), ("mse", "", None, "max"), ("latency_us", "", None, "sum"),
    ("score", "ms", True, "min"),  # a declared direction (a score) wins over the unit
])
def test_the_unit_decides_before_the_name(name: str, unit: str, better: bool | None, rule: str) -> None:
    assert rule_for(name, MetricInfo(name, unit=unit, higher_is_better=better)) == rule
    assert rule_for(name, MetricInfo(name, unit=unit), "mean") == "mean"  # --aggregate still wins


def test_unit_kinds() -> None:
    assert [additive_kind(u) for u in ("s", "NS", " (KiB) ", "bytes", "#", "ops/s", "dB", "x", "")] == [
        "time", "time", "bytes", "bytes", "count", "", "", "", ""]


@pytest.fixture(scope="module")
def case(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The issue's case on a 301-operator model: one operator 64 % faster (100,000 → 36,000 µs), 200 others each
    20 % slower (20 → 24 µs, 0.02 % of the total each): the model is 61 % faster."""
    folder = tmp_path_factory.mktemp("units")
    model = folder / "tts.onnx"
    onnx.save(tts_transformer.build(), model)
    nodes = onnx.load(model).graph.node
    heavy = next(i for i, n in enumerate(nodes) if n.op_type == "MatMul")
    small = [i for i in range(len(nodes)) if i != heavy][:SMALL]
    sides = {"before": (100_000.0, 20.0), "after": (36_000.0, 24.0)}
    for side, (big, little) in sides.items():
        values = {heavy: big, **{i: little for i in small}}
        (folder / f"{side}.json").write_text(json.dumps({
            "metrics": {"lat": {"unit": "us"}, "score": {"description": "a unitless figure"}},
            "operators": [{"id": f"0:{i}", "lat": v, "score": v} for i, v in values.items()]}))
    return {"model": model, "before": folder / "before.json", "after": folder / "after.json", "folder": folder}


def _gate(case: dict[str, Path], metric: str, *extra: str):  # type: ignore[no-untyped-def]
    summary = case["folder"] / f"{metric}.md"
    run = run_cli("diff", case["model"], "--before", case["before"], "--after", case["after"], "--metric", metric,
                  "--fail-above", "10%", "-o", case["folder"] / f"{metric}.svg", "--summary", summary, *extra)
    return run, summary.read_text(encoding="utf-8")


def test_a_time_unit_makes_the_share_floor_apply(case: dict[str, Path]) -> None:
    """Before: exit 3, 200 operators past --fail-above 10 % (the first 20 listed) while the total fell 61 %."""
    run, md = _gate(case, "lat")
    assert run.returncode == 0, run.stderr
    assert "is past --fail-above" not in run.stderr
    assert f"{SMALL} operators past --fail-above 10% are each under 1% of the model's lat and do not count" \
        in run.stderr
    assert "does not apply" not in run.stderr
    assert "| `lat` (sum) | before → after |" in md and "| model | 104k → 40.8k us | -60.77% |" in md, md
    assert f"{SMALL} operators past 10% but each under 1% of the model total: not counted (--min-share)." in md


def test_where_the_floor_cannot_apply_one_line_says_so(case: dict[str, Path]) -> None:
    run, md = _gate(case, "score")
    assert run.returncode == 3
    said = [line for line in run.stderr.splitlines() if "does not apply" in line]
    assert said == ["annograph: --min-share 1% does not apply to score: its operators average, as it has no unit, and "
                    "its name says no time, byte or count (us, MiB, calls), which would make it sum; every operator "
                    "past --fail-above counts"], run.stderr
    assert "\n" + said[0].removeprefix("annograph: ") + ".\n" in md, md
    quiet, _ = _gate(case, "score", "--min-share", "0")
    assert "does not apply" not in quiet.stderr and quiet.returncode == 3  # no floor asked for: nothing to say


def test_group_boxes_sum_a_metric_with_a_time_unit(case: dict[str, Path]) -> None:
    out = case["folder"] / "after.svg"
    run = run_cli("render", case["model"], "-a", case["after"], "--color-by", "lat", "--collapse", "1", "-o", out)
    assert run.returncode == 0, run.stderr
    texts = [t.text or "" for t in parse_svg(out).iter("{http://www.w3.org/2000/svg}text")]
    assert "lat (sum of members) (us)" in texts and texts.count("lat sum: ") >= 3, texts
    assert not any(t.startswith("lat mean") for t in texts)


@pytest.mark.parametrize("metric, info, values, why", [
    ("sqnr_db", MetricInfo("sqnr_db", unit="dB", higher_is_better=True), (30.0, 20.0), "a score where higher is"),
    ("mse", MetricInfo("mse"), (1.0, 2.0), "an error, whose worst operator counts"),
    ("bw", MetricInfo("bw", unit="GB/s"), (1.0, 2.0), "as its unit (GB/s) is no time, byte or count"),
    ("lat", MetricInfo("lat", unit="us"), (0.0, 0.0), "its model total is 0"),
    ("lat", MetricInfo("lat", unit="us"), (1.0, 2.0), ""),
])
def test_why_the_floor_cannot_apply(metric: str, info: MetricInfo, values: tuple[float, float], why: str) -> None:
    from renderer.diff.change import Diff, OpChange, Threshold

    diff = Diff(metric, info.unit, bool(info.higher_is_better), True, "a", "b", info=info)
    diff.changes = [OpChange(("op", 0, i), ("op", 0, i), f"n{i}", "Add", values[0], values[1]) for i in range(3)]
    gate = diff.gate(Threshold.parse("10%"), 1.0)
    assert why in gate.floor_off and bool(gate.floor_off) == bool(why), gate.floor_off
    assert gate.asked == 1.0 and diff.gate(Threshold.parse("10%"), 0.0).floor_off == ""
    assert diff.gate(None, 1.0).floor_off == ""  # no --fail-above: no gate to say it of
