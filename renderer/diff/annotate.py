"""A ``Diff`` as annotations and options that the ordinary render path draws.

The change is the colour metric (``Δ latency_us``, its value text such as ``+50%``), on our ``diverging`` map
centred at 0 with a symmetric range, so equal changes either way are equally intense: reversed for
higher-is-better metrics, so a regression is always warm. Each box lists ``before → after``; an operator with a
value (or an existence) on one side only gets the n/a fill, a dashed purple border and ``diff: only before`` /
``only after``. The legend's rows (graph values) hold the totals, the counts and the largest regressions and
improvements.
"""

from __future__ import annotations

import dataclasses

from renderer.core import escape
from renderer.core.options import RenderOptions
from renderer.core.records import Annotations, Entry, MetricInfo
from renderer.diff.change import ONLY_AFTER, ONLY_BEFORE, Diff, OpChange

BEFORE_AFTER = "before → after"
STATUS = "diff"
HELPER = "counted with"
LEGEND_LISTED = 5
LEGEND_NAME_CHARS = 28
MISSING_BORDER = {"color": "#6a3d9a", "penwidth": "2", "style": "dashed"}
"""How a box with a value on one side only is marked (with the n/a fill and a ``diff`` row)."""


def change_key(diff: Diff) -> str:
    """The colour metric's name: ``Δ latency_us``."""
    return f"Δ {diff.metric}"


def annotations(diff: Diff) -> Annotations:
    """The diff as the drawn model's annotations: per operator the change, ``before → after``, what is missing,
    and in the tooltip both numbers and both changes; the legend rows as graph values."""
    result = Annotations()
    key = change_key(diff)
    what = "(after − before) / |before|, in %" if diff.relative else "after − before"
    result.metrics[key] = MetricInfo(
        key, "diff", "%" if diff.relative else diff.unit, diff.higher_is_better,
        f"change of {diff.metric} per operator, {what}; warm: worse, cool: better; dashed border: a value on one "
        "side only")
    for item in diff.changes:
        if item.key is not None:
            result.ops[item.key] = _entry(diff, key, item)
    for helper, owner in diff.helpers.items():
        result.ops[helper] = Entry({STATUS: f"{HELPER} {owner}"}, {})
    result.graph.values.update(legend_values(diff))
    return result


def _entry(diff: Diff, key: str, item: OpChange) -> Entry:
    values: dict[str, object] = {}
    if item.absolute is not None:
        values[key] = diff.change_text(item)
    values[BEFORE_AFTER] = diff.before_after(item)
    if item.missing:
        values[STATUS] = item.missing
        side = diff.before_name if item.missing == ONLY_AFTER else diff.after_name
        values["missing"] = (f"no such operator in {side}" if item.operator_missing
                             else f"no {diff.metric} value in {side}")
    values["before"] = item.before if item.before is not None else "—"
    values["after"] = item.after if item.after is not None else "—"
    if item.absolute is not None:
        values["absolute change"] = diff.change_text(item, relative=False)
        values["relative change"] = diff.change_text(item, relative=True)
    if diff.matching is not None and item.before_key is not None and item.before_key != item.key:
        values["before operator"] = f"{item.before_key[1]}:{item.before_key[2]} in {diff.before_name}"
    return Entry(values, dict(MISSING_BORDER) if item.missing else {})


def legend_values(diff: Diff) -> dict[str, str]:
    """Title, the model total before and after, the counts, and the top regressions and improvements."""
    total = diff.total_change()
    unit = f" {diff.unit}" if diff.unit else ""
    rows = {"title": f"Δ {diff.metric}: {diff.before_name} → {diff.after_name}"}
    if total.before is not None or total.after is not None:
        change = ""
        if total.absolute is not None:
            change = f" ({diff.change_text(total, True, compact=True)}, {diff.change_text(total, False, compact=True)})"
        rows[f"{diff.metric} ({diff.rule()} of operators)"] = (
            f"{diff.value_text(total.before)} → {diff.value_text(total.after)}{unit}{change}")
    counts = diff.counts()
    rows["changes"] = f"{counts['worse']} worse · {counts['better']} better · {counts['unchanged']} unchanged"
    if counts[ONLY_BEFORE] or counts[ONLY_AFTER]:
        rows["on one side only"] = f"{counts[ONLY_BEFORE]} only before · {counts[ONLY_AFTER]} only after"
    for label, items in (("worse", diff.regressions(LEGEND_LISTED)), ("better", diff.improvements(LEGEND_LISTED))):
        for rank, item in enumerate(items, 1):
            rows[f"{label} #{rank}"] = (f"{_tail(item.name)} "
                                        f"{diff.change_text(item, compact=True)} "
                                        f"({diff.before_after(item)})")
    return rows


def _tail(name: str) -> str:
    """The end of a long name (``…/attention/self/query/MatMul``): scoped names differ at their end."""
    text = escape.clean(name, 400)
    return text if len(text) <= LEGEND_NAME_CHARS else escape.ELLIPSIS + text[-(LEGEND_NAME_CHARS - 1):]


def render_options(diff: Diff, base: RenderOptions) -> RenderOptions:
    """``base`` (layout, title, collapse, focus…) colouring by the change on the symmetric diverging scale; each
    box lists ``base.show``, by default the change, ``before → after`` and what is missing."""
    key = change_key(diff)
    limit = diff.limit()
    return dataclasses.replace(
        base, color_by=key, cmap="diverging_r" if diff.higher_is_better else "diverging", norm="linear",
        vmin=-limit, vmax=limit, center=0.0, show=[key, BEFORE_AFTER, STATUS] if base.show is None else base.show,
        edge_by=None,
        # a group box: the sum of its absolute changes is the group's change; relative ones average
        aggregate=base.aggregate or ("mean" if diff.relative else "sum"))
