"""Which operators are folded into the boxes that read them instead of being drawn. The one place that decides.

Folded by default (``show_constants`` draws them all):
    * constant producers (``Constant``, ``ConstantOfShape`` of a constant): their value is data, shown in the box;
    * operators that compute only from constants and from tensor shapes: ``Shape``/``Size`` (their output
      describes their input, it is not computed from its data), and every operator all of whose inputs are
      constants or such computed values: the Shape → Gather → Unsqueeze → Concat → Reshape chains exporters
      write for every dynamic ``view``, a ``Range`` of a sequence length, the ``DEQUANTIZE``/``Cast`` that widen
      a stored float16 weight. Their long edges (one shape read at the top, used in every layer) are what
      made Graphviz's layout of transformers take minutes. The box that reads such a value lists it like a
      constant (``shape ⟨4⟩ int64 (computed)``), and its tooltip says which ops computed it and whose shape
      they read.

Not folded: an operator writing a graph output (the output box would lose its edge), one that runs a subgraph
(If/Loop bodies read outer values), and random generators. The decision is one pass over each graph in node
order (topological in valid files; a consumer listed before its producer is simply not folded).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache

from renderer.core.ir import Model, Node, Value
from renderer.data import operators


@cache
def _folded_as(fold: str) -> frozenset[str]:
    """Operator types of the ONNX, TFLite and OpenVINO IR formats whose data entry has ``fold`` (the formats'
    names never collide): ``constant`` producers (Constant, ConstantOfShape); ``shape`` readers, whose output
    describes the input's shape whatever its data (ONNX Shape/Size, TFLite SHAPE); ``random`` generators,
    all-constant inputs but a different value on every run; ``storage`` ops that only change how a stored weight
    is held (float16 widened, int8 dequantized, a deduplicated copy), so a box reading their output lists the
    stored tensor, ``⟨64×3×3⟩ float16→float32``."""
    return operators.with_fold("onnx", fold) | operators.with_fold("tflite", fold) \
        | operators.with_fold("openvino", fold)


_MAX_STORAGE_HOPS = 8
NodeKey = tuple[str, int, int]
ValueKey = tuple[str, int, int]


@dataclass(frozen=True, slots=True)
class Computed:
    """How a folded non-constant value was computed.

    Attributes:
        ops: the folded operators it is computed by (its producer and everything folded upstream).
        shapes_of: the tensors whose shapes those operators read, in the order first met.
    """

    ops: frozenset[NodeKey]
    shapes_of: tuple[Value, ...] = ()


@dataclass(frozen=True, slots=True)
class Folding:
    """The folded operators of one model, computed once per render.

    Attributes:
        hidden: keys of the operators that get no box of their own.
        computed: for each output of a folded operator (constants aside), how it was computed.
    """

    hidden: frozenset[NodeKey]
    computed: dict[ValueKey, Computed] = field(default_factory=dict)

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

    def computation(self, value: Value) -> Computed | None:
        """How ``value`` was computed when it is the output of a folded operator (None for constants)."""
        return self.computed.get(value.key)

    def stored(self, value: Value) -> Value | None:
        """The stored tensor ``value`` re-expresses, when its folded producers only change the storage format
        (a chain of them: TFLite DENSIFY → DEQUANTIZE of a sparse float16 filter)."""
        for _ in range(_MAX_STORAGE_HOPS):
            producer = value.producer
            if producer is None or producer.key not in self.hidden or producer.op_type not in _folded_as("storage"):
                return None
            source = producer.inputs[0] if producer.inputs else None
            if source is None or source.is_constant:
                return source
            value = source
        return None


def fold(model: Model, show_constants: bool = False) -> Folding:
    """The folding of ``model``: nothing when ``show_constants``."""
    if show_constants:
        return Folding(frozenset())
    hidden: set[NodeKey] = set()
    computed: dict[ValueKey, Computed] = {}
    for graph in model.graphs:  # a parent graph comes before its subgraphs, which may read its values
        for node in graph.nodes:
            writes_output = any(v.is_output for v in node.outputs)  # always drawn: the graph's result
            if (node.op_type in _folded_as("constant") and node.outputs
                    and all(v.is_constant for v in node.outputs) and not writes_output):
                hidden.add(node.key)
                continue
            how = _static(node, computed)
            if how is None or writes_output:
                continue
            hidden.add(node.key)
            for value in node.outputs:
                if not value.is_constant:
                    computed[value.key] = how
    return Folding(frozenset(hidden), computed)


def _static(node: Node, computed: dict[ValueKey, Computed]) -> Computed | None:
    """How ``node``'s outputs are computed from constants and shapes only, or None when they read data."""
    if node.subgraphs or node.op_type in _folded_as("random") or not node.outputs:
        return None
    sources = [v for v in node.inputs if v is not None]
    if node.op_type in _folded_as("shape") and node.domain in ("", "ai.onnx"):
        return Computed(frozenset({node.key}), tuple(sources[:1]))
    if not sources:
        return None
    ops = {node.key}
    shapes: dict[int, Value] = {}
    for value in sources:
        if value.is_constant:
            continue
        upstream = computed.get(value.key)
        if upstream is None:
            return None
        ops |= upstream.ops
        for read in upstream.shapes_of:
            shapes.setdefault(id(read), read)
    return Computed(frozenset(ops), tuple(shapes.values()))
