"""The change of one operator metric between a before and an after side, per operator, and what crosses a gate."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from renderer.colour.aggregate import combine, rule_for
from renderer.core.errors import UsageError
from renderer.core.escape import clean
from renderer.core.ir import ElementKey
from renderer.core.numbers import format_number, signed
from renderer.core.records import MetricInfo
from renderer.diff.matching import Matching

ONLY_BEFORE = "only before"
ONLY_AFTER = "only after"


@dataclass(frozen=True, slots=True)
class Threshold:
    """A ``--fail-above`` gate: a change in the regression direction larger than ``value`` (percent when
    ``relative``, else metric units) fails.

    >>> Threshold.parse("10%"), str(Threshold.parse(" 2.5 "))
    (Threshold(value=10.0, relative=True), '2.5')
    """

    value: float
    relative: bool

    @classmethod
    def parse(cls, text: str, option: str = "--fail-above") -> Threshold:
        raw = text.strip()
        relative = raw.endswith("%")
        try:
            value = float(raw[:-1] if relative else raw)
        except ValueError:
            value = math.nan
        if not math.isfinite(value) or value < 0 or value > 1e300:
            raise UsageError(f"{option} {text[:40]!r}: use a percentage (10%) or a number of metric units "
                                 "(2.5), 0 or more")
        return cls(value, relative)

    def __str__(self) -> str:
        return f"{self.value:g}%" if self.relative else f"{self.value:g}"


def parse_share(text: str) -> float:
    """``--min-share``: a percentage of the model total, ``1%`` or ``1``; 0 turns the floor off.

    >>> parse_share("1%"), parse_share(" 0.5 "), parse_share("0")
    (1.0, 0.5, 0.0)
    """
    raw = text.strip().removesuffix("%")
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not 0 <= value <= 100:
        raise UsageError(f"--min-share {text[:40]!r}: use a percentage of the model total from 0 to 100 (1%)")
    return value


@dataclass(slots=True)
class Gate:
    """What ``--fail-above`` (with its ``--min-share`` floor) and ``--fail-total-above`` found.

    Attributes:
        crossing: operators whose regression is past the threshold and whose share of the model total is at
            least the floor, worst first.
        below_floor: operators past the threshold but under the floor (they do not fail the run).
        floor: the floor in percent of the model total; None when the metric does not sum over operators
            (a score, an error), so shares mean nothing and every operator counts.
        total_crossed: whether the model total's regression is past ``--fail-total-above``.
        floor_off: why a ``--min-share`` floor asked for could not apply (the metric does not sum, or its total
            is 0), a clause; "" when it applied or none was asked for.
        asked: the ``--min-share`` asked for, in percent (``floor`` is None where it cannot apply).
    """

    crossing: list[OpChange] = field(default_factory=list)
    below_floor: list[OpChange] = field(default_factory=list)
    floor: float | None = None
    total_crossed: bool = False
    floor_off: str = ""
    asked: float = 0.0

    @property
    def failed(self) -> bool:
        return bool(self.crossing) or self.total_crossed


@dataclass(slots=True)
class OpChange:
    """One operator's metric before and after.

    Attributes:
        key: the operator in the drawn model; None for an operator only the before model has.
        before_key: the operator in the before model (the same as ``key`` with one model).
        name / op_type: for lists and tables (the drawn model's, else the before model's).
        before / after: the metric's number on each side, None where there is none.
        missing: ``only before`` / ``only after`` when one side has no value; ``operator`` says whether the
            operator itself is missing there (two models), not just its value.
    """

    key: ElementKey | None
    before_key: ElementKey | None
    name: str
    op_type: str
    before: float | None
    after: float | None
    missing: str = ""
    operator_missing: bool = False

    @property
    def where(self) -> str:
        key = self.key or self.before_key
        return f"{key[1]}:{key[2]}" if key else "?"

    @property
    def absolute(self) -> float | None:
        """after − before; None unless both sides have a value (0 for inf → inf)."""
        if self.before is None or self.after is None:
            return None
        if self.before == self.after:
            return 0.0
        return self.after - self.before

    @property
    def relative(self) -> float | None:
        """(after − before) / |before| in percent; ±inf from 0 (or from an infinite value) to anything else."""
        change = self.absolute
        if change is None or change == 0:
            return change
        assert self.before is not None
        if self.before == 0 or not math.isfinite(change):
            return math.copysign(math.inf, change)
        return change / abs(self.before) * 100.0


@dataclass(slots=True)
class Diff:
    """Every operator's change of ``metric``.

    Attributes:
        metric: the metric as asked for; ``unit`` its unit where known.
        higher_is_better: True when a drop is the regression (SQNR, cosine); else a rise is.
        relative: whether the picture, the ranking and the legend use the relative change (else the absolute).
        before_name / after_name: what the sides are called in titles and messages (file names).
        changes: the drawn model's operators in graph order, then operators only the before model has.
        matching: how two models' operators were paired (None for one model with two annotation files).
        info: what is known of the metric (for how group boxes and totals combine values).
        helpers: quantization helpers of the drawn model → the name of the operator they count with.
    """

    metric: str
    unit: str
    higher_is_better: bool
    relative: bool
    before_name: str
    after_name: str
    changes: list[OpChange] = field(default_factory=list)
    matching: Matching | None = None
    info: MetricInfo | None = None
    helpers: dict[ElementKey, str] = field(default_factory=dict)

    def change(self, item: OpChange, relative: bool | None = None) -> float | None:
        """The change shown for ``item`` (relative or absolute as the diff is, unless ``relative`` says)."""
        return item.relative if (self.relative if relative is None else relative) else item.absolute

    def badness(self, item: OpChange, relative: bool | None = None) -> float | None:
        """The change signed so that a regression is positive."""
        change = self.change(item, relative)
        return None if change is None else (-change if self.higher_is_better else change)

    def compared(self) -> list[OpChange]:
        return [c for c in self.changes if c.absolute is not None]

    def regressions(self, limit: int | None = None) -> list[OpChange]:
        """The operators that got worse, worst first (ties in graph order)."""
        return self._ranked(1.0)[:limit]

    def improvements(self, limit: int | None = None) -> list[OpChange]:
        """The operators that got better, most improved first."""
        return self._ranked(-1.0)[:limit]

    def _ranked(self, sign: float) -> list[OpChange]:
        scored = [(sign * b, i, c) for i, c in enumerate(self.changes)
                  if (b := self.badness(c)) is not None and sign * b > 0]
        return [c for _, _, c in sorted(scored, key=lambda t: (-t[0], t[1]))]

    def crossing(self, threshold: Threshold) -> list[OpChange]:
        """Operators whose regression is larger than ``threshold``, worst first."""
        scored = [(b, i, c) for i, c in enumerate(self.changes)
                  if (b := self.badness(c, threshold.relative)) is not None and b > threshold.value]
        return [c for _, _, c in sorted(scored, key=lambda t: (-t[0], t[1]))]

    def share(self, item: OpChange) -> float | None:
        """The operator's larger value as a percentage of the larger model total, for a metric that sums; None
        otherwise (or with no positive total)."""
        if self.rule() != "sum":
            return None
        largest = max((abs(t) for t in self.totals() if t is not None and math.isfinite(t)), default=0.0)
        if largest == 0:
            return None
        mine = max(abs(v) for v in (item.before, item.after) if v is not None)
        return mine / largest * 100.0

    def gate(self, threshold: Threshold | None, min_share: float = 0.0,
             total_threshold: Threshold | None = None) -> Gate:
        """The CI gate: operators past ``threshold`` and at least ``min_share`` % of the model total (only
        for metrics that sum over operators), and the model total past ``total_threshold``."""
        result = Gate(floor=min_share if self.rule() == "sum" else None, asked=min_share)
        if threshold is not None and min_share > 0:
            result.floor_off = self._floor_off()
        for item in self.crossing(threshold) if threshold is not None else []:
            share = self.share(item)
            small = result.floor is not None and share is not None and share < result.floor
            (result.below_floor if small else result.crossing).append(item)
        if total_threshold is not None:
            badness = self.badness(self.total_change(), total_threshold.relative)
            result.total_crossed = badness is not None and badness > total_threshold.value
        return result

    def _floor_off(self) -> str:
        """Why a share floor cannot apply to this metric (after "--min-share 1% does not apply to METRIC: "), or ""."""
        rule = self.rule()
        if rule == "sum":
            if any(t is not None and math.isfinite(t) and t != 0 for t in self.totals()):
                return ""
            return "its model total is 0"
        if rule == "min":
            return "a score where higher is better, whose worst operator counts, not a share of a total"
        if rule == "max":
            return "an error, whose worst operator counts, not a share of a total"
        unit = f"its unit ({clean(self.unit, 20)}) is" if self.unit else "it has no unit, and its name says"
        return f"its operators average, as {unit} no time, byte or count (us, MiB, calls), which would make it sum"

    def missing(self, side: str) -> list[OpChange]:
        return [c for c in self.changes if c.missing == side]

    def rule(self) -> str:
        """How the model total combines operator values: ``sum`` for costs, ``min``/``max`` for scores."""
        return rule_for(self.metric, self.info)

    def totals(self) -> tuple[float | None, float | None]:
        """The model-wide figure of each side, over every operator with a value there."""
        rule = self.rule()
        return (combine((c.before for c in self.changes if c.before is not None), rule),
                combine((c.after for c in self.changes if c.after is not None), rule))

    def total_change(self) -> OpChange:
        """The totals as one change (for its absolute and relative difference)."""
        before, after = self.totals()
        return OpChange(None, None, "total", "", before, after)

    def counts(self) -> dict[str, int]:
        worse = sum(1 for c in self.changes if (b := self.badness(c)) is not None and b > 0)
        better = sum(1 for c in self.changes if (b := self.badness(c)) is not None and b < 0)
        return {"worse": worse, "better": better, "unchanged": len(self.compared()) - worse - better,
                ONLY_BEFORE: len(self.missing(ONLY_BEFORE)), ONLY_AFTER: len(self.missing(ONLY_AFTER))}

    def limit(self) -> float:
        """The half-width of the symmetric colour range: the largest finite change shown (1 when every
        change is infinite, so infinities still take the ends)."""
        finite = [abs(v) for c in self.changes if (v := self.change(c)) is not None and math.isfinite(v)]
        largest = max(finite, default=0.0)
        if largest == 0 and any((v := self.change(c)) is not None and v != 0 for c in self.changes):
            return 1.0
        return largest

    # -- text ---------------------------------------------------------------------------------------------------

    def value_text(self, value: float | None) -> str:
        """A metric value as boxes and tables show it: ``13.2``, ``1.2M``; ``—`` for none."""
        return "—" if value is None else format_number(value)

    def change_text(self, item: OpChange, relative: bool | None = None, compact: bool = False) -> str:
        """The signed change: ``+50%``, ``-2.5 µs``, ``-262144``: text that reads back as its number (to 4
        significant digits, whole numbers in full), as the colour metric's value must; ``compact`` for lists and
        tables (``-262k``)."""
        relative = self.relative if relative is None else relative
        change = self.change(item, relative)
        if change is None:
            return "—"
        unit = "%" if relative else self.unit
        if math.isinf(change):
            return f"{'+' if change > 0 else '-'}inf" + (f" {unit}" if unit else "")
        number = signed(change, compact) if change else "0"
        return number + (unit if unit == "%" else f" {unit}" if unit else "")

    def before_after(self, item: OpChange) -> str:
        """``10 → 15 µs``."""
        unit = f" {self.unit}" if self.unit and self.unit != "%" else self.unit
        return f"{self.value_text(item.before)} → {self.value_text(item.after)}{unit}"

    def direction(self) -> str:
        return "higher is better" if self.higher_is_better else "lower is better"
