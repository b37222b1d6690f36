"""Quantized twins: the operator of a quantized model that does what an operator of the float model did.

``quantize_dynamic`` replaces a ``MatMul`` named ``fc`` writing ``y`` by ``MatMulInteger`` ``fc_quant`` and
helpers after it (``Cast`` to float, the output-scale ``Mul``, for ``Conv`` the bias ``Add``) of which the last
writes ``y``; the scales' own ``Mul`` feeds them. Paired by output tensor, the float ``MatMul`` would meet the
scale ``Mul``. So twins are found first: from the operator writing the float operator's output in the other
model, back through helper operators, to an operator of a twin type; the operators on that way (and the small
ones feeding only them) are the twin's helpers, never the twin. Either model may be the quantized one.

A QDQ model (``QuantizeLinear → DequantizeLinear`` around each operator) keeps the operators' names, so they
pair by name; its ``DequantizeLinear`` of a weight read by one operator, and the ``QuantizeLinear →
DequantizeLinear`` (or the lone ``DequantizeLinear``) after an operator's output, are that operator's helpers.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from renderer.core.ir import ElementKey, Model, Node

TWIN_TYPES: dict[str, frozenset[str]] = {
    "MatMul": frozenset({"MatMulInteger", "QLinearMatMul", "DynamicQuantizeMatMul", "MatMulNBits",
                         "MatMulIntegerToFloat"}),
    "Conv": frozenset({"ConvInteger", "QLinearConv"}),
    "Gemm": frozenset({"QGemm", "MatMulInteger", "DynamicQuantizeMatMul"}),
    "ConvTranspose": frozenset({"QLinearConvTranspose"}),
}
"""Float operator type → the types that stand for it in a quantized model."""
HELPER_TYPES = frozenset({"Mul", "Cast", "Add", "Reshape", "DequantizeLinear", "QuantizeLinear"})
"""Operator types that may sit between a twin and the tensor its float operator wrote."""
QDQ = frozenset({"QuantizeLinear", "DequantizeLinear"})
MAX_HOPS = 4


@dataclass(slots=True)
class Twins:
    """Quantized twins found between two models.

    Attributes:
        pairs: before key → after key.
        helpers_before / helpers_after: a helper operator of that model → the key of the twin it serves there.
    """

    pairs: dict[ElementKey, ElementKey] = field(default_factory=dict)
    helpers_before: dict[ElementKey, ElementKey] = field(default_factory=dict)
    helpers_after: dict[ElementKey, ElementKey] = field(default_factory=dict)


def quantized_pairs(before: Model, after: Model, left: list[Node], taken: set[ElementKey]) -> Twins:
    """The twins of the float operators of ``left`` (before, unpaired so far) in ``after``, and the float
    originals in ``after`` of quantized operators of ``left``. ``taken`` (after keys already paired) grows with
    the twins and helpers found there."""
    twins = Twins()
    pairs, helpers = twins.pairs, twins.helpers_after
    after_writer = _writers(after)
    before_writer = _writers(before)
    taken_before = {n.key for n in before.nodes()} - {n.key for n in left}
    for node in left:
        if node.op_type in TWIN_TYPES:  # float before, quantized after
            found = _twin(node, after_writer, taken)
            if found is not None:
                twin, way = found
                pairs[node.key] = twin.key
                taken.update([twin.key, *(h.key for h in way)])
                helpers.update((h.key, twin.key) for h in way)
    float_after = {n.key: n for n in after.nodes() if n.op_type in TWIN_TYPES and n.key not in taken}
    for float_node in float_after.values():  # quantized before, float after
        found = _twin(float_node, before_writer, taken_before | set(pairs))
        if found is not None and found[0] in left:
            twin, way = found
            pairs[twin.key] = float_node.key
            taken.add(float_node.key)
            taken_before.update([twin.key, *(h.key for h in way)])
            twins.helpers_before.update((h.key, twin.key) for h in way)
    return twins


def qdq_helpers(model: Model, owners: Iterable[Node], taken: set[ElementKey]) -> dict[ElementKey, ElementKey]:
    """helper → owner for the QDQ nodes around each of ``owners``: its weights' ``DequantizeLinear`` (read by it
    alone) and the ``QuantizeLinear → DequantizeLinear`` after its outputs. ``taken`` grows with them."""
    helpers: dict[ElementKey, ElementKey] = {}
    for owner in owners:
        for value in owner.inputs:
            dq = value.producer if value is not None else None
            if dq is not None and dq.op_type == "DequantizeLinear" and dq.key not in taken \
                    and value.consumers == [owner] and all(_constant(i) for i in dq.inputs if i is not None):
                helpers[dq.key] = owner.key
        for value in owner.outputs:
            for q in value.consumers:
                if q.op_type not in QDQ or q.key in taken or len(value.consumers) != 1:
                    continue
                helpers[q.key] = owner.key  # (an int8 embedding Gather's DequantizeLinear too)
                for dq in (c for out in q.outputs for c in out.consumers):
                    if q.op_type == "QuantizeLinear" and dq.op_type == "DequantizeLinear" and dq.key not in taken:
                        helpers[dq.key] = owner.key
    taken.update(helpers)
    return helpers


def _twin(node: Node, writer: dict[str, Node], taken: set[ElementKey]) -> tuple[Node, list[Node]] | None:
    """The twin of float ``node`` in the other model, and the helpers on the way to it; None when the way does
    not lead to exactly one operator of a twin type."""
    start = next((writer[v.name] for v in node.outputs if v.name in writer), None)
    if start is None or start.key in taken:
        return None
    wanted = TWIN_TYPES[node.op_type]
    found: list[tuple[Node, list[Node]]] = []

    def walk(current: Node, way: list[Node]) -> None:
        if current.op_type in wanted and current.key not in taken:
            found.append((current, way))
            return
        if current.op_type not in HELPER_TYPES or len(way) >= MAX_HOPS or current.key in taken:
            return
        for value in current.inputs:
            if value is not None and value.producer is not None and value.producer not in way:
                walk(value.producer, [*way, current])

    walk(start, [])
    twins = {id(t) for t, _ in found}
    if len(twins) != 1:
        return None
    twin, way = found[0]
    return twin, way + _feeders(way, taken)


def _feeders(way: list[Node], taken: set[ElementKey]) -> list[Node]:
    """Small operators that feed only the helpers on ``way`` (the scales' ``Mul``, a bias ``Reshape``)."""
    inside = {id(n) for n in way}
    found: list[Node] = []
    for helper in way:
        for value in helper.inputs:
            feeder = value.producer if value is not None else None
            if feeder is not None and id(feeder) not in inside and feeder.key not in taken \
                    and feeder.op_type in ("Mul", "Reshape", "Cast") \
                    and all(id(c) in inside for out in feeder.outputs for c in out.consumers):
                found.append(feeder)
                inside.add(id(feeder))
    return found


def _writers(model: Model) -> dict[str, Node]:
    """Tensor name → the one operator writing it."""
    return {v.name: v.producer for g in model.graphs for v in g.values if v.name and v.producer is not None}


def _constant(value) -> bool:  # type: ignore[no-untyped-def]
    return value.initializer is not None or value.producer is None and not value.is_input
