"""From the two sides (a model with two annotation sets, or two models with theirs) to a ``Diff``."""

from __future__ import annotations

from renderer.colour.heatmap import number_of, resolve_metric
from renderer.core.errors import MetricError
from renderer.core.ir import ElementKey, Model
from renderer.core.records import Annotations, MetricInfo
from renderer.diff.change import ONLY_AFTER, ONLY_BEFORE, Diff, OpChange
from renderer.diff.matching import match


def side_values(model: Model, annotations: Annotations, metric: str,
                side: str) -> tuple[dict[ElementKey, float], MetricInfo | None]:
    """Each operator's number for ``metric`` on one side (a built-in metric is computed from ``model`` where
    the files give none), and what is known of the metric; MetricError naming the side when no operator has
    one."""
    from renderer.metrics import builtin

    if metric in builtin.OP_METRICS:
        annotations = builtin.augment(model, annotations.copy(), {metric})
    try:
        name = resolve_metric(metric, annotations, "op")
    except MetricError as e:
        raise MetricError(f"{side}: {e}") from None
    values = {key: number for key, entry in annotations.ops.items()
              if (number := number_of(entry.values.get(name))) is not None}
    return values, annotations.metrics.get(name)


def one_model(model: Model, before: Annotations, after: Annotations, metric: str, relative: bool = True,
              higher_is_better: bool | None = None, names: tuple[str, str] = ("before", "after")) -> Diff:
    """The change of ``metric`` between two annotation sets of one model."""
    before_values, before_info = side_values(model, before, metric, names[0])
    after_values, after_info = side_values(model, after, metric, names[1])
    diff = _new(metric, relative, higher_is_better, names, after_info or before_info)
    for node in model.nodes():
        b, a = before_values.get(node.key), after_values.get(node.key)
        if b is None and a is None:
            continue
        missing = ONLY_BEFORE if a is None else ONLY_AFTER if b is None else ""
        diff.changes.append(OpChange(node.key, node.key, node.display_name, node.op_type, b, a, missing))
    return diff


def two_models(before_model: Model, after_model: Model, before: Annotations, after: Annotations, metric: str,
               relative: bool = True, higher_is_better: bool | None = None,
               names: tuple[str, str] = ("before", "after")) -> Diff:
    """The change of ``metric`` between two models of one graph, operators paired by ``matching.match``.
    Every operator only one model has is listed, with or without a value."""
    matching = match(before_model, after_model)
    before_values, before_info = side_values(before_model, before, metric, names[0])
    after_values, after_info = side_values(after_model, after, metric, names[1])
    diff = _new(metric, relative, higher_is_better, names, after_info or before_info)
    diff.matching = matching
    before_values = _with_helpers(before_values, matching.helpers_before, diff.rule())
    after_values = _with_helpers(after_values, matching.helpers_after, diff.rule())
    paired = {a: b for b, a in matching.pairs.items()}
    for node in after_model.nodes():
        if node.key in matching.helpers_after:
            continue
        before_key = paired.get(node.key)
        b = before_values.get(before_key) if before_key is not None else None
        a = after_values.get(node.key)
        if before_key is None:
            diff.changes.append(OpChange(node.key, None, node.display_name, node.op_type, None, a, ONLY_AFTER, True))
        elif b is not None or a is not None:
            missing = ONLY_BEFORE if a is None else ONLY_AFTER if b is None else ""
            diff.changes.append(OpChange(node.key, before_key, node.display_name, node.op_type, b, a, missing))
    diff.helpers = {helper: _display(after_model, owner) for helper, owner in matching.helpers_after.items()}
    for node in matching.only_before:
        diff.changes.append(OpChange(None, node.key, node.display_name, node.op_type, before_values.get(node.key),
                                     None, ONLY_BEFORE, True))
    return diff


def _display(model: Model, key: ElementKey) -> str:
    return model.graphs[key[1]].nodes[key[2]].display_name


def _with_helpers(values: dict[ElementKey, float], helpers: dict[ElementKey, ElementKey],
                  rule: str) -> dict[ElementKey, float]:
    """Each operator's value with its quantization helpers' added (for a metric that sums, such as a latency or
    MACs: what replaced the float operator costs that much); helpers themselves have none of their own."""
    result = {key: value for key, value in values.items() if key not in helpers}
    if rule == "sum":
        for helper, owner in helpers.items():
            if helper in values and owner in result:
                result[owner] += values[helper]
    return result


def _new(metric: str, relative: bool, higher_is_better: bool | None, names: tuple[str, str],
         info: MetricInfo | None) -> Diff:
    """An empty diff; the direction is ``higher_is_better`` when given, else the metric's own (its files'
    ``metrics`` section, a reader's knowledge), else lower is better (costs and errors)."""
    if higher_is_better is None:
        higher_is_better = bool(info is not None and info.higher_is_better)
    unit = info.unit if info is not None else ""
    return Diff(metric, unit, higher_is_better, relative, names[0], names[1], info=info)
