"""Picks a metric's values out of the annotations and fits a colour scale to them."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from renderer.colour.maps import Scale
from renderer.core.errors import MetricError
from renderer.core.ir import ElementKey, Model, Node
from renderer.core.numbers import format_number
from renderer.core.records import Annotations, MetricInfo, metric_value

NO_COLOR = "none"
"""``--color-by none`` (``RenderOptions(color_by="none")``): plain boxes, no heatmap."""


@dataclass(slots=True)
class Heatmap:
    """One metric laid onto elements of one kind.

    Attributes:
        metric: the metric name as resolved (may be qualified, ``ort.latency_us``).
        info: what is known of the metric.
        values: element key → number, for the elements that have one.
        scale: the fitted colour scale.
        empty: why no element has a value, when none has (every box is drawn n/a); "" otherwise.
    """

    metric: str
    info: MetricInfo
    values: dict[ElementKey, float]
    scale: Scale
    empty: str = ""

    def title(self) -> str:
        """The metric with its unit, as legends show it: ``sqnr_db (dB)``."""
        return self.metric + (f" ({self.info.unit})" if self.info.unit else "")

    def notes(self) -> list[str]:
        """What a legend says of the scale: its norm, its centre, and which way is better when known."""
        notes = ["built in"] if self.info.source == "builtin" else []
        notes.append(f"{self.scale.norm} scale")
        if self.scale.center is not None:
            notes.append(f"centred at {format_number(self.scale.center)}")
        if self.info.higher_is_better is True:
            notes.append("higher is better")
        elif self.info.higher_is_better is False:
            notes.append("lower is better")
        return notes

    def color(self, key: ElementKey) -> str:
        value = self.values.get(key)
        if value is not None and math.isinf(value):  # an exact match's SQNR: beyond the best end of the scale
            return self.scale.color_at(1.0 if value > 0 else 0.0)
        return self.scale.color(value)


_INFINITE = re.compile(r"^\s*([-+]?)(?:inf|infinity|∞)(?:\s+[A-Za-zµ%/]+)?\s*$", re.IGNORECASE)


def infinite_value(value: object) -> float | None:
    """±inf for an "inf"-like text ("inf", "-inf", "inf dB", "∞"): how files write an infinite metric (the SQNR
    of identical tensors), since JSON has no infinity; None otherwise.

    >>> infinite_value("inf"), infinite_value("-inf dB"), infinite_value("info")
    (inf, -inf, None)
    """
    if not isinstance(value, str):
        return None
    match = _INFINITE.match(value)
    if match is None:
        return None
    return -math.inf if match.group(1) == "-" else math.inf


def number_of(value: object) -> float | None:
    """A metric's number, infinities included."""
    number = metric_value(value)
    return number if number is not None else infinite_value(value)


def operator_metrics(annotations: Annotations) -> list[str]:
    """Names of the metrics with a number on at least one operator, sorted; built-in ones left out."""
    builtin = {name for name, info in annotations.metrics.items() if info.source == "builtin"}
    return sorted({k for e in annotations.ops.values() for k, v in e.values.items()
                   if k not in builtin and number_of(v) is not None})


@dataclass(frozen=True, slots=True)
class DefaultMetric:
    """The metric to colour by when none is asked for, and why (or why there is none).

    Attributes:
        metric: the metric key (qualified when names clash, ``ort.latency_us``), or None.
        why: with a metric, what makes it the default ("the main metric of p.json (ort)"); without one, why
            there is none, or "" when there is nothing to say (no metric, or several and none main).
    """

    metric: str | None
    why: str = ""
    builtin: bool = False

    @property
    def routine(self) -> bool:
        """True when the choice needs no line of its own (built-in MACs, said in the legend): ``-v`` says it."""
        return self.builtin and self.metric == "macs"

    @property
    def said(self) -> str:
        """The one line for stderr ("" for none)."""
        if self.metric is None:
            return self.why
        plain = f", --color-by {NO_COLOR} for plain boxes" if self.builtin else ""
        return f"colouring by {self.metric}, {self.why}; --color-by to choose another{plain}"


def default_metric(annotations: Annotations) -> DefaultMetric:
    """The metric to colour by when none is asked for: the only numeric operator metric the annotations bring;
    else the one main metric of the readers that brought them (an ORT profile's latency_us); else none.

    Two sources declaring different main metrics give none, and ``why`` lists them.
    """
    names = operator_metrics(annotations)
    if len(names) == 1:
        return DefaultMetric(names[0], "the only numeric operator metric of the annotations")
    mains = [(name, info) for name in names if (info := annotations.metrics.get(name)) and info.main]
    described = [f"the main metric of {_files_of(annotations, i.source)} ({i.source})" for _, i in mains]
    if len(mains) == 1:
        return DefaultMetric(mains[0][0], described[0])
    if mains:
        listed = "; ".join(f"{name}, {text}" for (name, _), text in zip(mains, described))
        return DefaultMetric(None, f"no default colour metric, the annotations bring several main metrics: "
                                   f"{listed}; choose one with --color-by")
    listed = ", ".join(names[:8]) + (", …" if len(names) > 8 else "")
    if annotations.unusable_mains:
        empty = "; ".join(f"{info.source.capitalize()}'s main metric {info.name} has no usable values "
                          f"({Path(path).name})" for info, path in annotations.unusable_mains)
        others = f" (the others: {listed})" if names else ""
        return DefaultMetric(None, f"no default colour metric: {empty}{others}; choose one with --color-by")
    if names:
        return DefaultMetric(None, f"no default colour metric, the annotations bring several metrics and no "
                                   f"tool declares one its main: {listed}; choose one with --color-by")
    return DefaultMetric(None)


HEAVY_CATEGORIES = ("layer", "attention")
"""Where a model's MACs are: the default colour is ``macs`` only when these operators have them."""


def builtin_default(model: Model, drawn: Callable[[Node], bool]) -> DefaultMetric:
    """The built-in metric that colours a model whose annotations bring no numeric operator metric: ``macs``
    when more than half of the drawn heavy operators (``HEAVY_CATEGORIES``; every drawn one when none is heavy)
    have a MAC count (their shapes are known), else ``weight_bytes``, which needs no shapes. Zero-cost
    operators (Cast, Transpose) never make the choice: they count without any shape."""
    from renderer.metrics.builtin import op_macs

    macs = op_macs(model)
    nodes = [node for node in model.nodes() if drawn(node)]
    heavy = [node for node in nodes if node.category in HEAVY_CATEGORIES]
    keys = [node.key for node in heavy or nodes]
    what = "drawn layer and attention operators" if heavy else "drawn operators"
    counted = sum(macs[key] is not None for key in keys)
    if keys and 2 * counted > len(keys):
        return DefaultMetric("macs", f"built in, known for {counted:,} of {len(keys):,} {what}", True)
    pin = ": pin free input dims with --dim" if model.pinnable_dims else ""
    return DefaultMetric("weight_bytes", f"built in (MACs are known for only {counted:,} of {len(keys):,} {what}"
                                         f"{pin})", True)


def _files_of(annotations: Annotations, source: str) -> str:
    """The names of the files ``source`` read, for messages."""
    names = sorted({Path(c.path).name for c in annotations.coverage if c.source == source and c.path})
    return ", ".join(names) if names else f"the {source} annotations"


UNREADABLE = "cannot read "
"""How a built-in metric's n/a reason starts when the weights it needs cannot be read (``metrics.data``)."""


class NoValues(MetricError):
    """The metric is known (declared, or given as n/a reasons) but no element has a number for it."""


def resolve_metric(name: str, annotations: Annotations, kind: str) -> str:
    """The metric key for ``name``: exact, or the single qualified ``source.name``; NoValues when the metric is
    known but has no number anywhere, MetricError otherwise."""
    entries = annotations.ops if kind == "op" else annotations.tensors
    if any(number_of(e.values.get(name)) is not None for e in entries.values()):
        return name  # (found without a pass over every metric of every element: a TTS's 25,000 values)
    available = sorted({k for e in entries.values() for k, v in e.values.items() if number_of(v) is not None})
    qualified = [m for m in available if m.endswith("." + name)]
    if len(qualified) == 1:
        return qualified[0]
    what = "operator" if kind == "op" else "tensor"
    reasons = [e.values[name] for e in entries.values() if isinstance(e.values.get(name), str)]
    if reasons:  # the metric exists but no element has a number for it (n/a, skipped, unreadable weights)
        unreadable = next((r for r in reasons if UNREADABLE in r), None)  # a corrupt file stays an error
        raise (MetricError if unreadable else NoValues)(
            f"{what} metric {name!r} has no numeric value on any {what}: {unreadable or reasons[0]}")
    others = annotations.tensors if kind == "op" else annotations.ops
    if name in annotations.metrics and not qualified and not any(name in e.values for e in others.values()):
        raise NoValues(f"{what} metric {name!r} has no value on any {what}")
    if len(qualified) > 1:
        raise MetricError(f"metric {name!r} is provided by several sources; use one of: {', '.join(qualified)}")
    if not available:
        raise MetricError(f"no {what} metric {name!r}: the annotations give no numeric {what} values")
    import difflib

    close = difflib.get_close_matches(name, available, n=3)
    hint = f" (did you mean {', '.join(close)}?)" if close else ""
    listed = ", ".join(available[:30]) + (", …" if len(available) > 30 else "")
    raise MetricError(f"unknown {what} metric {name!r}{hint}; known: {listed}")


def build(
    name: str, annotations: Annotations, kind: str, cmap: str | None, norm: str = "linear",
    vmin: float | None = None, vmax: float | None = None, center: float | None = None,
    undrawn: frozenset[ElementKey] = frozenset(),
) -> Heatmap:
    """The scale of metric ``name`` over the ``kind`` elements, fitted to the ones drawn (not ``undrawn``). A known
    metric without a number anywhere gives an empty heatmap saying why (``Heatmap.empty``)."""
    try:
        metric = resolve_metric(name, annotations, kind)
    except NoValues as e:
        info = annotations.metrics.get(name) or MetricInfo(name)
        return Heatmap(name, info, {}, Scale.fit([], cmap=cmap, norm="linear"), empty=str(e))
    entries = annotations.ops if kind == "op" else annotations.tensors
    values: dict[ElementKey, float] = {}
    for key, entry in entries.items():
        if key in undrawn:
            continue
        number = number_of(entry.values.get(metric))
        if number is not None:
            values[key] = number
    info = annotations.metrics.get(metric) or MetricInfo(metric)
    if cmap is None and info.higher_is_better:
        cmap = "traffic_r"  # red where the value is low (bad)
    if cmap is None and (info.gradient or info.thresholds):
        scale = Scale.fit(list(values.values()), norm=norm, vmin=vmin, vmax=vmax, stops=info.gradient,
                          thresholds=info.thresholds)
    else:
        scale = Scale.fit(list(values.values()), cmap=cmap, norm=norm, vmin=vmin, vmax=vmax, center=center)
    return Heatmap(metric, info, values, scale)
