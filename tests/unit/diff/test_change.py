"""``renderer/diff/change.py``: the gate's decisions (``--fail-above`` relative and absolute, its ``--min-share``
floor, ``--fail-total-above``) on small change sets made for each case: real ``tiny_cnn`` operators, values
written as annotation files, read by the real reader and paired by ``diff.build``. Expected crossings are
worked out here from the numbers each case writes."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from conftest import ONNX
from renderer.annotations.registry import load_annotations
from renderer.core.errors import UsageError
from renderer.diff import build
from renderer.diff.change import Diff, Threshold, parse_share
from renderer.loaders.registry import load_model

MODEL = load_model(ONNX / "tiny_cnn.onnx")
NAMES = [node.display_name for node in MODEL.nodes()]


def _side(folder: Path, name: str, metric: str, values: dict[str, float], meta: dict[str, object]) -> object:
    path = folder / f"{name}.json"
    path.write_text(json.dumps({"metrics": {metric: meta},
                                "operators": [{"id": k, metric: v} for k, v in values.items()]}))
    return load_annotations(path, MODEL, sidecar=False, embedded=False)


def _diff(folder: Path, before: dict[str, float], after: dict[str, float], metric: str = "latency_us",
          relative: bool = True, **meta: object) -> Diff:
    meta = {"unit": "µs", **meta}
    return build.one_model(MODEL, _side(folder, "before", metric, before, meta),
                           _side(folder, "after", metric, after, meta), metric, relative=relative)


def _names(items: list) -> list[str]:  # type: ignore[type-arg]
    return [item.name for item in items]


def _relative(before: float, after: float) -> float:
    return (after - before) / abs(before) * 100


def test_fail_above_a_percentage_catches_the_rises_past_it_worst_first(tmp_path: Path) -> None:
    before = dict.fromkeys(NAMES[:6], 100.0)
    after = {NAMES[0]: 125.0, NAMES[1]: 105.0, NAMES[2]: 80.0, NAMES[3]: 140.0, NAMES[4]: 110.0, NAMES[5]: 100.0}
    gate = _diff(tmp_path, before, after).gate(Threshold.parse("10%"))
    past = sorted((n for n in after if _relative(before[n], after[n]) > 10),
                  key=lambda n: -_relative(before[n], after[n]))
    assert _names(gate.crossing) == past == [NAMES[3], NAMES[0]]  # +10 % exactly is not past 10 %
    assert gate.failed and not gate.total_crossed and gate.below_floor == []


def test_fail_above_a_number_compares_the_change_in_metric_units(tmp_path: Path) -> None:
    before = {NAMES[0]: 1.0, NAMES[1]: 500.0, NAMES[2]: 50.0}
    after = {NAMES[0]: 3.0, NAMES[1]: 501.0, NAMES[2]: 52.5}
    diff = _diff(tmp_path, before, after, relative=False)
    assert _names(diff.gate(Threshold.parse("1.5")).crossing) == [NAMES[2], NAMES[0]]  # +2.5, +2; not +1
    # the same change set, measured relatively: the 1 → 3 operator is the worst
    assert _names(diff.gate(Threshold.parse("4%")).crossing) == [NAMES[0], NAMES[2]]


def test_a_drop_is_the_regression_for_a_higher_is_better_metric(tmp_path: Path) -> None:
    before = {NAMES[0]: 40.0, NAMES[1]: 40.0, NAMES[2]: 40.0}
    after = {NAMES[0]: 30.0, NAMES[1]: 50.0, NAMES[2]: 39.0}
    diff = _diff(tmp_path, before, after, metric="sqnr_db", unit="dB", higher_is_better=True)
    gate = diff.gate(Threshold.parse("5%"))
    assert _names(gate.crossing) == [NAMES[0]]
    assert gate.floor is None  # a score does not sum over operators: no share floor
    assert _names(diff.improvements()) == [NAMES[1]] and _names(diff.regressions()) == [NAMES[0], NAMES[2]]


def test_min_share_keeps_small_operators_from_failing_the_run(tmp_path: Path) -> None:
    """One big operator and two tiny ones that double: the tiny ones are far under 1 % of the model total."""
    before = {NAMES[0]: 1000.0, NAMES[1]: 1.0, NAMES[2]: 2.0}
    after = {NAMES[0]: 1000.0, NAMES[1]: 2.0, NAMES[2]: 4.0}
    diff = _diff(tmp_path, before, after)
    total = max(sum(before.values()), sum(after.values()))
    shares = {n: max(before[n], after[n]) / total * 100 for n in before}
    assert all(shares[n] < 1 for n in NAMES[1:3])
    assert [diff.share(c) for c in diff.changes] == pytest.approx([shares[n] for n in NAMES[:3]])
    floored = diff.gate(Threshold.parse("10%"), min_share=parse_share("1%"))
    assert floored.crossing == [] and _names(floored.below_floor) == [NAMES[1], NAMES[2]] and not floored.failed
    assert floored.floor == 1.0
    open_gate = diff.gate(Threshold.parse("10%"), min_share=parse_share("0"))
    assert _names(open_gate.crossing) == [NAMES[1], NAMES[2]] and open_gate.failed  # ties in graph order


def test_the_share_floor_is_ignored_for_a_metric_that_does_not_sum(tmp_path: Path) -> None:
    before = {NAMES[0]: 1000.0, NAMES[1]: 0.001}
    after = {NAMES[0]: 1000.0, NAMES[1]: 0.002}
    gate = _diff(tmp_path, before, after, metric="output_mse", unit="").gate(Threshold.parse("10%"), 50.0)
    assert gate.floor is None and _names(gate.crossing) == [NAMES[1]]


@pytest.mark.parametrize("option,crossed", [("10%", False), ("9.9%", True), ("3", False), ("2.9", True)])
def test_fail_total_above_gates_the_sum_over_operators(tmp_path: Path, option: str, crossed: bool) -> None:
    before = {NAMES[0]: 10.0, NAMES[1]: 10.0, NAMES[2]: 10.0}
    after = {NAMES[0]: 14.0, NAMES[1]: 9.0, NAMES[2]: 10.0}  # total 30 → 33: +3, +10 %
    diff = _diff(tmp_path, before, after)
    totals = diff.totals()
    assert totals == (sum(before.values()), sum(after.values()))
    gate = diff.gate(None, total_threshold=Threshold.parse(option))
    assert gate.total_crossed is crossed and gate.failed is crossed and gate.crossing == []


def test_a_rise_from_zero_crosses_any_percentage_but_not_a_larger_number(tmp_path: Path) -> None:
    diff = _diff(tmp_path, {NAMES[0]: 0.0, NAMES[1]: 5.0}, {NAMES[0]: 5.0, NAMES[1]: 5.0})
    assert diff.changes[0].relative == math.inf
    assert _names(diff.gate(Threshold.parse("1000%"), 0).crossing) == [NAMES[0]]
    assert diff.gate(Threshold.parse("10"), 0).crossing == []


def test_an_operator_with_one_side_only_never_crosses(tmp_path: Path) -> None:
    diff = _diff(tmp_path, {NAMES[0]: 1.0, NAMES[1]: 1.0}, {NAMES[0]: 1.0, NAMES[2]: 100.0})
    assert [c.missing for c in diff.changes] == ["", "only before", "only after"]
    assert diff.gate(Threshold.parse("0%"), 0).crossing == []
    assert diff.counts() == {"worse": 0, "better": 0, "unchanged": 1, "only before": 1, "only after": 1}


def test_change_text_reads_back_as_the_change(tmp_path: Path) -> None:
    before = {NAMES[0]: 10.0, NAMES[1]: 400000.0, NAMES[2]: 3.0}
    after = {NAMES[0]: 15.0, NAMES[1]: 137856.0, NAMES[2]: 3.0}
    relative, absolute = _diff(tmp_path, before, after), _diff(tmp_path, before, after, relative=False)
    for item in relative.changes:
        text = relative.change_text(item)
        assert text.endswith("%") and float(text[:-1]) == pytest.approx(_relative(item.before, item.after), rel=1e-3)
        number, unit = absolute.change_text(item).split(" ")
        assert unit == "µs" and float(number) == item.after - item.before
    assert absolute.before_after(relative.changes[0]) == "10 → 15 µs"


@pytest.mark.parametrize("text", ["-1", "abc", "inf", "nan", "1e400", "%", "10%%"])
def test_bad_thresholds_are_usage_errors_naming_the_option(text: str) -> None:
    with pytest.raises(UsageError, match="^--fail-total-above "):
        Threshold.parse(text, "--fail-total-above")


@pytest.mark.parametrize("text", ["101", "-1", "x", "1%%", "nan"])
def test_bad_shares_are_usage_errors(text: str) -> None:
    with pytest.raises(UsageError, match="^--min-share "):
        parse_share(text)


@pytest.mark.parametrize("text,value,relative", [("10%", 10.0, True), (" 2.5 ", 2.5, False), ("0", 0.0, False)])
def test_thresholds_read_back_as_written(text: str, value: float, relative: bool) -> None:
    parsed = Threshold.parse(text)
    assert (parsed.value, parsed.relative) == (value, relative)
    assert Threshold.parse(str(parsed)) == parsed
