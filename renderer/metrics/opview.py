"""Read access to one operator's shapes and attributes for the cost formulas, raising NotCountable with a
reason users can act on ("unknown shape of X", "symbolic dim 'batch' in X; pin it with --dim batch=N"; hints name
only the model's input dims, see ``input_dims``)."""

from __future__ import annotations

from typing import Any

from renderer.core.ir import Node, Value
from renderer.metrics.formulas import NotCountable, prod
from renderer.metrics.input_dims import not_run, unpinned_reason
from renderer.metrics.weights import trace


def label(value: Value) -> str:
    return value.name or f"tensor {value.graph.index}:{value.index}"


def static_shape(value: Value) -> tuple[int, ...]:
    """The value's shape, or NotCountable saying which dim is unknown."""
    t = value.type
    if t is None or t.shape is None:
        if value.initializer is not None:
            return tuple(value.initializer.shape)
        idle = not_run(value.graph)
        raise NotCountable(f"unknown shape of {label(value)}" + (f": {idle}" if idle else ""))
    shape = t.shape
    try:
        if not shape or min(shape) >= 0:  # type: ignore[type-var]
            return shape  # type: ignore[return-value]
    except TypeError:  # a symbolic (str) or unknown (None) dim among the ints
        pass
    if any(not isinstance(dim, int) or dim < 0 for dim in shape):
        raise NotCountable(unpinned_reason(value, label(value)))
    return tuple(int(d) for d in t.shape)  # type: ignore[arg-type]


class Op:
    """One operator as the formulas see it."""

    __slots__ = ("node",)

    def __init__(self, node: Node) -> None:
        self.node = node

    @property
    def type(self) -> str:
        return self.node.op_type

    def has(self, slot: int) -> bool:
        return slot < len(self.node.inputs) and self.node.inputs[slot] is not None

    def input(self, slot: int) -> Value:
        if not self.has(slot):
            raise NotCountable(f"{self.type} has no input {slot}")
        return self.node.inputs[slot]  # type: ignore[return-value]

    def shape(self, slot: int) -> tuple[int, ...]:
        return static_shape(self.input(slot))

    def weight_shape(self, slot: int) -> tuple[int, ...]:
        """The shape of a weight input, falling back to the stored constant behind a dequantization."""
        value = self.input(slot)
        try:
            return static_shape(value)
        except NotCountable:
            source = trace(value)
            stored = source.value.initializer if source is not None and source.same_shape else None
            if stored is not None:
                return tuple(stored.dense_shape if stored.dense_shape is not None else stored.shape)
            raise

    def elements(self, slot: int) -> int:
        return prod(self.shape(slot))

    def out_shape(self, index: int = 0) -> tuple[int, ...]:
        if index >= len(self.node.outputs):
            raise NotCountable(f"{self.type} has no output {index}")
        return static_shape(self.node.outputs[index])

    def out_elements(self, index: int = 0) -> int:
        return prod(self.out_shape(index))

    def attr(self, name: str, default: Any = None) -> Any:
        return self.node.attributes.get(name, default)

    def int_attr(self, name: str, default: int) -> int:
        value = self.node.attributes.get(name, default)
        try:
            return int(value)
        except (TypeError, ValueError):
            raise NotCountable(f"attribute {name}={value!r} is not a number") from None

    def data_inputs(self) -> int:
        return sum(1 for v in self.node.inputs if v is not None)
