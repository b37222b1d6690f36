"""Metrics that read weight data: per-op sparsity, effective MACs and weight statistics; per-tensor statistics.

Sparsity of an operation is the fraction of its weight values equal to the zero point *it* uses (see
``weights``); it is never written back onto the tensor. The values a sparse TFLite tensor does not store count as
zeros, so its sparsity is 1 − stored / dense plus the stored zeros' share. Statistics are of the stored values (raw
quantized codes for integer weights) and are skipped, with a note, for tensors over ``max_tensor_elements``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from renderer.core.ir import ElementKey, Value
from renderer.metrics import data
from renderer.metrics.formulas import MALFORMED, Cost, NotCountable, malformed
from renderer.metrics.op_costs import ModelCosts, OpCosts, na
from renderer.metrics.weights import Source, zero_point

OP_STAT_PREFIX = "weight_"
TENSOR_STAT_PREFIX = "value_"
STAT_NAMES = ("min", "max", "mean", "std", "zero_fraction")


def compute(costs: ModelCosts, op_names: set[str], tensor_names: set[str], limit: int,
            progress: bool = True) -> tuple[dict[ElementKey, dict[str, Any]],
                                             dict[ElementKey, dict[str, Any]]]:
    """Values of the requested expensive metrics: (per op key, per tensor key)."""
    plan = _Plan(want_sparsity=bool(op_names & {"sparsity", "effective_macs"}),
                 want_op_stats=any(n.startswith(OP_STAT_PREFIX) for n in op_names),
                 want_tensor_stats=any(n.startswith(TENSOR_STAT_PREFIX) for n in tensor_names))
    plan.add_ops(costs)
    if plan.want_tensor_stats:
        for value in costs.constants():
            plan.request(value).stats = True
    results = data.run(list(plan.requests.values()), limit, progress)
    op_values = {key: _op_values(plan, op, plan.uses.get(key, []), results, op_names)
                 for key, op in costs.ops.items()}
    tensor_values: dict[ElementKey, dict[str, Any]] = {}
    if plan.want_tensor_stats:
        for value in costs.constants():
            shown = _tensor_values(results.get(id(value)))
            if shown is not None:
                tensor_values[value.key] = {k: v for k, v in shown.items() if k in tensor_names}
    return op_values, tensor_values


@dataclass(slots=True)
class _Plan:
    """What to read from the weights (one request per stored tensor) and which reads each operator uses."""

    want_sparsity: bool
    want_op_stats: bool
    want_tensor_stats: bool
    requests: dict[int, data.Request] = field(default_factory=dict)
    uses: dict[ElementKey, list[tuple[Value, tuple | str]]] = field(default_factory=dict)
    """Per operator: (stored weight, the zero point's key, or why its sparsity cannot be counted)."""

    def request(self, value: Value) -> data.Request:
        found = self.requests.get(id(value))
        if found is None:
            found = self.requests[id(value)] = data.Request(value)
        return found

    def add_ops(self, costs: ModelCosts) -> None:
        if not (self.want_sparsity or self.want_op_stats):
            return
        for key, op in costs.ops.items():
            seen: set[tuple[int, tuple | str]] = set()
            for _, source, explicit in op.weights:
                req = self.request(source.value)
                req.stats = req.stats or self.want_op_stats
                if not self.want_sparsity:
                    self.uses.setdefault(key, []).append((source.value, "unused"))
                    continue
                zkey = self._zero_point(req, op, source, explicit)
                if (id(source.value), zkey) not in seen:
                    seen.add((id(source.value), zkey))
                    self.uses.setdefault(key, []).append((source.value, zkey))

    @staticmethod
    def _zero_point(req: data.Request, op: OpCosts, source: Source, explicit: tuple[int, int] | None) -> tuple | str:
        """The zero point's key, its value added to the request; or why there is none."""
        try:
            zp = zero_point(op.node, source, explicit)
            zkey: tuple | str = zp.key()
            req.zero_points.setdefault(zkey, zp)  # type: ignore[arg-type]
        except NotCountable as e:
            zkey = str(e)
        except MALFORMED as e:
            zkey = malformed(e)
        return zkey


def _op_values(plan: _Plan, op: OpCosts, op_uses: list[tuple[Value, tuple | str]],
               results: dict[int, data.Result], op_names: set[str]) -> dict[str, Any]:
    values: dict[str, Any] = {}
    if plan.want_sparsity:
        sparsity = _sparsity(op_uses, results) if op_uses else None
        if sparsity is not None:
            values["sparsity"] = sparsity
        values["effective_macs"] = _effective(op, sparsity)
    if plan.want_op_stats and op_uses:
        values.update(_merged_stats([v for v, _ in op_uses], results))
    return {k: v for k, v in values.items() if k in op_names}


def _tensor_values(result: data.Result | None) -> dict[str, Any] | None:
    """A stored tensor's statistics, the reason they are missing, or None when it was not read."""
    stats = result.stats if result else None
    if isinstance(stats, data.Stats):
        return stats.values(TENSOR_STAT_PREFIX)
    if isinstance(stats, str):
        return {f"{TENSOR_STAT_PREFIX}{n}": _reason(stats) for n in STAT_NAMES}
    return None


def _reason(text: str) -> str:
    return text if text.startswith("skipped") else na(text)


def _sparsity(uses: list[tuple[Value, tuple | str]], results: dict[int, data.Result]) -> float | str:
    equal = 0
    count = 0
    for value, zkey in uses:
        if isinstance(zkey, str):
            return na(zkey)
        found = results[id(value)].equal.get(zkey)
        if isinstance(found, str) or found is None:
            return na(found or "no data")
        logical = value.initializer.logical_size  # type: ignore[union-attr]
        equal += found + logical - data.stored_elements(value)  # values a sparse tensor leaves out are zeros
        count += logical
    return round(equal / count, 6) if count else na("empty weights")


def _effective(op: OpCosts, sparsity: float | str | None) -> int | str:
    cost = op.cost
    if not isinstance(cost, Cost):
        return na(cost)
    if sparsity is None:
        return cost.macs  # no weights: nothing to skip
    if isinstance(sparsity, str):
        return sparsity
    return int(round(cost.macs - cost.weight_macs * sparsity))


def _merged_stats(values: list[Value], results: dict[int, data.Result]) -> dict[str, Any]:
    merged: data.Stats | None = None
    distinct = {id(v): v for v in values}
    for value in distinct.values():
        stats = results[id(value)].stats
        if not isinstance(stats, data.Stats):
            text = _reason(stats or "no data")
            return {f"{OP_STAT_PREFIX}{n}": text for n in STAT_NAMES}
        merged = stats if merged is None else merged.merge(stats)
    return merged.values(OP_STAT_PREFIX) if merged is not None else {}
