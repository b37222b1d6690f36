"""The Markdown summary of a diff (``--summary diff.md``), from ``templates/diff.md.j2``: short enough for a
pull-request comment whatever the model's size (tables and lists are cut, and say so)."""

from __future__ import annotations

from typing import Any

from .. import escape
from .change import ONLY_AFTER, ONLY_BEFORE, Diff, OpChange, Threshold

TOP = 10
CROSSING_ROWS = 30
MISSING_LISTED = 20


def markdown(diff: Diff, threshold: Threshold | None = None, pictures: list[str] | None = None,
             top: int = TOP) -> str:
    """The summary: totals before and after, the top regressions and improvements, what crossed the gate,
    and the operators one side lacks."""
    from ..report import environment

    text = environment().get_template("diff.md.j2").render(**_view(diff, threshold, pictures or [], top),
                                                           cell=escape.markdown_cell, code=escape.markdown_code,
                                                           link=escape.markdown_link)
    return text.rstrip("\n") + "\n"


def _row(diff: Diff, item: OpChange) -> dict[str, str]:
    return {"id": item.where, "name": item.name, "type": item.op_type,
            "before": diff.value_text(item.before), "after": diff.value_text(item.after),
            "change": diff.change_text(item, compact=True),
            "other": diff.change_text(item, relative=not diff.relative, compact=True)}


def _matching(diff: Diff) -> dict[str, Any] | None:
    """How two models' operators were paired, in parts the template escapes (names as code spans)."""
    matching = diff.matching
    if matching is None:
        return None
    total = len(matching.pairs) + len(matching.only_before)
    how = f"{matching.by_name} by name, {matching.by_output} by output tensor"
    if matching.by_inputs:
        how += f", {matching.by_inputs} by type and inputs"
    sides = [{"what": what, "count": len(nodes), "names": [n.display_name for n in nodes[:MISSING_LISTED]]}
             for what, nodes in ((ONLY_BEFORE, matching.only_before), (ONLY_AFTER, matching.only_after)) if nodes]
    return {"count": f"matched {len(matching.pairs)}/{total} operators", "how": how, "sides": sides}


def _view(diff: Diff, threshold: Threshold | None, pictures: list[str], top: int) -> dict[str, Any]:
    total = diff.total_change()
    crossing = diff.crossing(threshold) if threshold is not None else []
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
        "threshold": str(threshold) if threshold is not None else "",
        "crossing": [_row(diff, c) for c in crossing[:CROSSING_ROWS]],
        "crossing_count": len(crossing),
        "missing": [{"side": side, "count": len(items),
                     "entries": [{"name": c.name, "type": c.op_type, "id": c.where, "operator": c.operator_missing}
                               for c in items[:MISSING_LISTED]]}
                    for side, items in missing.items() if items],
        "missing_listed": MISSING_LISTED,
    }
