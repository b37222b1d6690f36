"""Metrics that read weight data: per-op sparsity, effective MACs and weight statistics; per-tensor statistics.

Sparsity of an operation is the fraction of its weight values equal to the zero point *it* uses (see
``weights``); it is never written back onto the tensor. Statistics are of the stored values (raw quantized
codes for integer weights) and are skipped, with a note, for tensors over ``max_tensor_elements``.
"""

from __future__ import annotations

from typing import Any

from ..ir import ElementKey, Value
from . import data
from .formulas import MALFORMED, Cost, NotCountable, malformed
from .op_costs import ModelCosts, OpCosts, na
from .weights import zero_point

OP_STAT_PREFIX = "weight_"
TENSOR_STAT_PREFIX = "value_"
STAT_NAMES = ("min", "max", "mean", "std", "zero_fraction")


def compute(costs: ModelCosts, op_names: set[str], tensor_names: set[str], limit: int,
            progress: bool = True) -> tuple[dict[ElementKey, dict[str, Any]],
                                             dict[ElementKey, dict[str, Any]]]:
    """Values of the requested expensive metrics: (per op key, per tensor key)."""
    want_sparsity = bool(op_names & {"sparsity", "effective_macs"})
    want_op_stats = any(n.startswith(OP_STAT_PREFIX) for n in op_names)
    want_tensor_stats = any(n.startswith(TENSOR_STAT_PREFIX) for n in tensor_names)
    requests: dict[int, data.Request] = {}

    def request(value: Value) -> data.Request:
        found = requests.get(id(value))
        if found is None:
            found = requests[id(value)] = data.Request(value)
        return found

    uses: dict[ElementKey, list[tuple[Value, tuple | str]]] = {}
    for key, op in costs.ops.items():
        if not op.weights or not (want_sparsity or want_op_stats):
            continue
        seen: set[tuple[int, tuple | str]] = set()
        for _, source, explicit in op.weights:
            req = request(source.value)
            req.stats = req.stats or want_op_stats
            if not want_sparsity:
                uses.setdefault(key, []).append((source.value, "unused"))
                continue
            try:
                zp = zero_point(op.node, source, explicit)
                zkey: tuple | str = zp.key()
                req.zero_points.setdefault(zkey, zp)  # type: ignore[arg-type]
            except NotCountable as e:
                zkey = str(e)
            except MALFORMED as e:
                zkey = malformed(e)
            if (id(source.value), zkey) not in seen:
                seen.add((id(source.value), zkey))
                uses.setdefault(key, []).append((source.value, zkey))
    if want_tensor_stats:
        for value in costs.constants():
            request(value).stats = True

    results = data.run(list(requests.values()), limit, progress)
    op_values: dict[ElementKey, dict[str, Any]] = {}
    for key, op in costs.ops.items():
        values: dict[str, Any] = {}
        op_uses = uses.get(key, [])
        sparsity = _sparsity(op_uses, results) if want_sparsity and op_uses else None
        if want_sparsity:
            if sparsity is not None:
                values["sparsity"] = sparsity
            values["effective_macs"] = _effective(op, sparsity)
        if want_op_stats and op_uses:
            values.update(_merged_stats([v for v, _ in op_uses], results))
        op_values[key] = {k: v for k, v in values.items() if k in op_names}
    tensor_values: dict[ElementKey, dict[str, Any]] = {}
    if want_tensor_stats:
        for value in costs.constants():
            result = results.get(id(value))
            stats = result.stats if result else None
            if isinstance(stats, data.Stats):
                shown = stats.values(TENSOR_STAT_PREFIX)
            elif isinstance(stats, str):
                shown = {f"{TENSOR_STAT_PREFIX}{n}": _reason(stats) for n in STAT_NAMES}
            else:
                continue
            tensor_values[value.key] = {k: v for k, v in shown.items() if k in tensor_names}
    return op_values, tensor_values


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
        equal += found
        count += data.stored_elements(value)
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
