"""The Markdown summary of a diff (``--summary diff.md``), from ``templates/diff.md.j2``: short enough for a
pull-request comment whatever the model's size (tables and lists are cut, and say so)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from renderer.core import escape
from renderer.diff.change import ONLY_AFTER, ONLY_BEFORE, Diff, Gate, OpChange, Threshold

TOP = 10
CROSSING_ROWS = 30
MISSING_LISTED = 20
NAME_CHARS = 40
"""A name in a table keeps its end (``…/attention/self/query/MatMul``: scoped names differ at their end), so the
tables fit a ~900 px pull-request comment."""
TYPE_CHARS = 20


@dataclass(frozen=True, slots=True)
class GateView:
    """The gate as the command set it up, and what it found."""

    threshold: Threshold | None
    total_threshold: Threshold | None
    result: Gate


def markdown(diff: Diff, gate: GateView | None = None, pictures: list[str] | None = None, top: int = TOP,
             link_base: str | None = None) -> str:
    """The summary: totals before and after, the top regressions and improvements, what the gate found, and
    the operators one side lacks. Pictures link relative to the summary, or under ``link_base``."""
    from renderer.reports.report import environment

    links = [escape.markdown_link(path, path, link_base) for path in pictures or []]
    text = environment().get_template("diff.md.j2").render(**_view(diff, gate, links, top),
                                                           code=escape.markdown_code)
    return text.rstrip("\n") + "\n"


def _row(diff: Diff, item: OpChange) -> dict[str, str]:
    unit = f" {diff.unit}" if diff.unit and diff.unit != "%" else diff.unit
    return {"name": escape.markdown_code(_tail(item.name), NAME_CHARS + 2, cell=True),
            "type": escape.markdown_code(item.op_type, TYPE_CHARS, cell=True),
            "before_after": escape.markdown_cell(
                f"{diff.value_text(item.before)} → {diff.value_text(item.after)}{unit}", 60),
            "change": escape.markdown_cell(diff.change_text(item, compact=True), 40),
            "other": escape.markdown_cell(diff.change_text(item, relative=not diff.relative, compact=True), 40)}


def _tail(name: str) -> str:
    text = escape.clean(name, 400)
    return text if len(text) <= NAME_CHARS else escape.ELLIPSIS + text[-(NAME_CHARS - 1):]


def _matching(diff: Diff) -> dict[str, Any] | None:
    """How two models' operators were paired, in parts the template escapes (names as code spans)."""
    matching = diff.matching
    if matching is None:
        return None
    total = len(matching.pairs) + len(matching.only_before)
    sides = [{"what": what, "count": len(nodes), "names": [n.display_name for n in nodes[:MISSING_LISTED]]}
             for what, nodes in ((ONLY_BEFORE, matching.only_before), (ONLY_AFTER, matching.only_after)) if nodes]
    return {"count": f"matched {len(matching.pairs)}/{total} operators", "how": matching.how(),
            "helpers": len(matching.helpers_before) + len(matching.helpers_after), "sides": sides}


def _gate(diff: Diff, gate: GateView | None) -> dict[str, Any] | None:
    if gate is None or (gate.threshold is None and gate.total_threshold is None):
        return None
    found = gate.result
    floor = f"{found.floor:g}%" if found.floor else ""
    return {
        "threshold": escape.markdown_cell(str(gate.threshold)) if gate.threshold is not None else "",
        "floor": floor,
        "floor_text": f" (operators of at least {floor} of the model total)" if floor else "",
        "crossing": [_row(diff, c) for c in found.crossing[:CROSSING_ROWS]],
        "crossing_count": len(found.crossing),
        "below_floor": len(found.below_floor),
        "floor_off": escape.markdown_cell(found.floor_off, 200) if found.floor_off else "",
        "asked": f"{found.asked:g}%",
        "metric": escape.markdown_cell(diff.metric, 60),
        "total_threshold": escape.markdown_cell(str(gate.total_threshold)) if gate.total_threshold else "",
        "total_relative": gate.total_threshold is not None and gate.total_threshold.relative,
        "total_crossed": found.total_crossed,
    }


def _view(diff: Diff, gate: GateView | None, pictures: list[str], top: int) -> dict[str, Any]:
    total = diff.total_change()
    missing = {side: diff.missing(side) for side in (ONLY_BEFORE, ONLY_AFTER)}
    return {
        "metric": diff.metric, "unit": diff.unit, "before": diff.before_name, "after": diff.after_name,
        "direction": diff.direction(), "rule": diff.rule(),
        "change_name": "relative" if diff.relative else "absolute",
        "other_name": "absolute" if diff.relative else "relative",
        "pictures": pictures,
        "matching": _matching(diff),
        "total": _row(diff, total) if total.before is not None or total.after is not None else None,
        "counts": diff.counts(),
        "top": top,
        "regressions": [_row(diff, c) for c in diff.regressions(top)],
        "improvements": [_row(diff, c) for c in diff.improvements(top)],
        "gate": _gate(diff, gate),
        "missing": [{"side": side, "count": len(items),
                     "entries": [{"name": c.name, "type": c.op_type, "id": c.where, "operator": c.operator_missing}
                                 for c in items[:MISSING_LISTED]]}
                    for side, items in missing.items() if items],
    }
