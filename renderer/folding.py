"""Which operators are folded into the boxes that read them instead of being drawn. The one place that decides.

Folded by default (``show_constants`` draws them all):
    * constant producers (``Constant``, ``ConstantOfShape`` of a constant): their value is data, shown in the box;
    * ops that only widen a stored float16 weight to float32 (TFLite ``DEQUANTIZE``, ONNX ``Cast``): the weight's
      storage format, not a step of the computation.
"""

from __future__ import annotations

from dataclasses import dataclass

from .ir import Model, Node, Value

HIDDEN_PRODUCERS = frozenset({"Constant", "ConstantOfShape"})
WIDENING_OPS = frozenset({"DEQUANTIZE", "Cast"})

NodeKey = tuple[str, int, int]


@dataclass(frozen=True, slots=True)
class Folding:
    """The folded operators of one model, computed once per render.

    Attributes:
        hidden: keys of the operators that get no box of their own.
    """

    hidden: frozenset[NodeKey]

    def is_hidden(self, node: Node) -> bool:
        return node.key in self.hidden

    def is_drawn(self, node: Node) -> bool:
        return node.key not in self.hidden

    def folded_inputs(self, node: Node) -> list[tuple[int, Value]]:
        """(slot, value) for the inputs drawn inside ``node``'s box: constants, and outputs of folded ops."""
        return [
            (slot, v) for slot, v in enumerate(node.inputs)
            if v is not None and (v.is_constant or (v.producer is not None and v.producer.key in self.hidden))
        ]


def fold(model: Model, show_constants: bool = False) -> Folding:
    """The folding of ``model``: nothing when ``show_constants``."""
    if show_constants:
        return Folding(frozenset())
    return Folding(frozenset(n.key for n in model.nodes() if _folds(n)))


def _folds(node: Node) -> bool:
    if node.op_type in HIDDEN_PRODUCERS:
        return all(v.is_constant for v in node.outputs)
    return node.op_type in WIDENING_OPS and _widens_stored_weight(node)


def _widens_stored_weight(node: Node) -> bool:
    sources = [v for v in node.inputs if v is not None]
    return (
        len(sources) == 1 and sources[0].is_constant and _dtype(sources[0]) == "float16"
        and bool(node.outputs) and all(_dtype(v) == "float32" and not v.is_output for v in node.outputs)
    )


def _dtype(value: Value) -> str | None:
    return value.type.dtype if value.type is not None else None
