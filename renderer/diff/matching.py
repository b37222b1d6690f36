"""Which operator of one model is which operator of another: by node name, then quantized twins (``twins.py``),
then by output tensor name."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from renderer.core.ir import ElementKey, Model, Node
from renderer.diff.twins import qdq_helpers, quantized_pairs


@dataclass(slots=True)
class Matching:
    """Operators of ``before`` paired with operators of ``after``.

    Attributes:
        pairs: before key → after key, in the before model's graph order.
        by_name / by_twin / by_output / by_inputs: how many pairs were found each way.
        only_before / only_after: operators with no counterpart, in graph order (helpers are not listed).
        helpers_before / helpers_after: a quantization helper of that model (``Cast``, scale ``Mul``, QDQ nodes)
            → the operator it serves there, whose value it counts with.
    """

    pairs: dict[ElementKey, ElementKey] = field(default_factory=dict)
    helpers_before: dict[ElementKey, ElementKey] = field(default_factory=dict)
    helpers_after: dict[ElementKey, ElementKey] = field(default_factory=dict)
    by_name: int = 0
    by_twin: int = 0
    by_output: int = 0
    by_inputs: int = 0
    only_before: list[Node] = field(default_factory=list)
    only_after: list[Node] = field(default_factory=list)

    def line(self, before: str, after: str, listed: int = 5) -> str:
        """One line: how many matched and how, and the first unmatched of each side."""
        total = len(self.pairs) + len(self.only_before)
        text = f"matched {len(self.pairs)}/{total} operators of {before} in {after} ({self.how()})"
        helpers = len(self.helpers_before) + len(self.helpers_after)
        if helpers:
            text += f"; {helpers} quantization helpers counted with the operator they serve"
        for what, nodes in (("only before", self.only_before), ("only after", self.only_after)):
            if nodes:
                names = ", ".join(n.display_name for n in nodes[:listed])
                more = f", … {len(nodes) - listed} more" if len(nodes) > listed else ""
                text += f"; {len(nodes)} {what}: {names}{more}"
        return text


    def how(self) -> str:
        """``12 by name, 3 by quantized twin, 1 by output tensor``."""
        ways = [f"{self.by_name} by name"]
        if self.by_twin:
            ways.append(f"{self.by_twin} by quantized twin")
        ways.append(f"{self.by_output} by output tensor")
        if self.by_inputs:
            ways.append(f"{self.by_inputs} by type and inputs")
        return ", ".join(ways)


def match(before: Model, after: Model) -> Matching:
    """Pair every operator whose node name is unique in both models; then quantized twins (a ``MatMul`` and the
    ``MatMulInteger`` standing for it, whose helpers write its output now); then the rest by an output tensor name
    that one operator produces in each model (TFLite operators have no names; a renamed node keeps its
    outputs); then operators without outputs by their type and input tensor names. A name (or signature) that
    several operators carry matches nothing by itself: guessing would pair the wrong boxes."""
    result = Matching()
    after_by_name = _unique(after, lambda n: [n.name] if n.name else [])
    before_names = Counter(n.name for n in before.nodes() if n.name)
    taken: set[ElementKey] = set()
    left: list[Node] = []
    for node in before.nodes():
        other = after_by_name.get(node.name) if node.name and before_names[node.name] == 1 else None
        if other is not None and other.key not in taken:
            result.pairs[node.key] = other.key
            taken.add(other.key)
            result.by_name += 1
        else:
            left.append(node)
    twins = quantized_pairs(before, after, left, taken)
    result.pairs.update(twins.pairs)
    result.by_twin = len(twins.pairs)
    result.helpers_before, result.helpers_after = twins.helpers_before, twins.helpers_after
    left = [n for n in left if n.key not in twins.pairs and n.key not in twins.helpers_before]
    after_by_output = _unique(after, lambda n: [] if n.key in taken else _output_names(n))
    before_outputs = Counter(name for n in before.nodes() for name in _output_names(n))
    rest: list[Node] = []
    for node in left:
        other = next((after_by_output[name] for name in _output_names(node)
                      if before_outputs[name] == 1 and name in after_by_output
                      and after_by_output[name].key not in taken), None)
        if other is None:
            rest.append(node)
            continue
        result.pairs[node.key] = other.key
        taken.add(other.key)
        result.by_output += 1
    # operators with neither (TFLite CALL_ONCE, ASSIGN_VARIABLE): their type and what they read
    after_by_inputs = _unique(after, lambda n: [_signature(n)] if n.key not in taken else [])
    before_inputs = Counter(_signature(n) for n in rest)
    for node in rest:
        other = after_by_inputs.get(_signature(node)) if before_inputs[_signature(node)] == 1 else None
        if other is None or other.key in taken:
            result.only_before.append(node)
            continue
        result.pairs[node.key] = other.key
        taken.add(other.key)
        result.by_inputs += 1
    result.pairs = {n.key: result.pairs[n.key] for n in before.nodes() if n.key in result.pairs}
    _qdq(before, after, result, taken)
    result.only_before = [n for n in result.only_before if n.key not in result.helpers_before]
    result.only_after = [n for n in after.nodes() if n.key not in taken]
    return result


def _qdq(before: Model, after: Model, result: Matching, taken: set[ElementKey]) -> None:
    """The QDQ helpers around paired operators, on either side."""
    result.helpers_after.update(qdq_helpers(after, [_node(after, k) for k in result.pairs.values()], taken))
    taken_before = set(result.pairs) | set(result.helpers_before)
    result.helpers_before.update(qdq_helpers(before, [_node(before, k) for k in result.pairs], taken_before))


def _node(model: Model, key: ElementKey) -> Node:
    return model.graphs[key[1]].nodes[key[2]]


def _signature(node: Node) -> str:
    """The op type and the names of the tensors an operator reads, as one key."""
    return "\x00".join([node.op_type, *(v.name if v is not None else "" for v in node.inputs)])


def _output_names(node: Node) -> list[str]:
    return [v.name for v in node.outputs if v.name]


def _unique(model: Model, names_of) -> dict[str, Node]:  # type: ignore[no-untyped-def]
    """name → the one operator carrying it (names several operators carry are left out)."""
    seen: dict[str, Node] = {}
    repeated: set[str] = set()
    for node in model.nodes():
        for name in names_of(node):
            if name in seen and seen[name] is not node:
                repeated.add(name)
            seen.setdefault(name, node)
    return {name: node for name, node in seen.items() if name not in repeated}
