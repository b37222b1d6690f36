"""The cheap per-operator pass: shapes and attributes only, no weight data read.

For each operator: MACs (with the part that multiplies weights), parameters and their bytes, the bytes of its
activation inputs and outputs, and the weight inputs the data pass will read for sparsity and statistics.

Parameters of an op are the elements of its constant inputs, plus the stored weights it reaches through a
dequantization or layout op (a QDQ Conv counts its uint8 weight, like the float Conv it replaces). Ops that only
prepare a weight (DequantizeLinear, Reshape…) count their own direct constants. Model totals count every
constant once however many ops read it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from renderer.core.ir import ElementKey, Model, Node, Value
from renderer.data.categories import runs_subgraphs
from renderer.metrics import executorch_ops, onnx_ops, openvino_ops, tensorrt_ops, tflite_ops, torch_ops
from renderer.metrics.formulas import MALFORMED, Cost, NotCountable, malformed, prod
from renderer.metrics.opview import Op, label, static_shape
from renderer.metrics.packed import packed_values
from renderer.metrics.tensors import DTYPE_BITS
from renderer.metrics.weights import Source, is_transparent, trace


@dataclass(slots=True)
class OpCosts:
    """What the cheap pass knows about one operator.

    Attributes:
        node: the operator.
        cost: its MACs, or the reason they cannot be counted.
        constants: distinct stored tensors it reads (directly or through a dequantization), for params.
        input_bytes: bytes of its activation inputs, or why unknown.
        output_bytes: bytes of its outputs, or why unknown.
        weights: (slot, source, explicit zero point (slot, axis) or None) for each weight input, for sparsity
            and statistics.
        scales: the constants among ``constants`` read as scales or zero points of a quantized weight (the
            entry's ``quantization_inputs``): in weight_bytes, not in params.
        in_attributes: (parameters, bytes) the op keeps in its attributes (ONNX-ML), in params and weight_bytes.
        packed: id → values held, for the constants among ``constants`` packing several values a byte
            (``packed``): params count the values.
    """

    node: Node
    cost: Cost | str
    constants: list[Value] = field(default_factory=list)
    input_bytes: int | str = 0
    output_bytes: int | str = 0
    weights: list[tuple[int, Source, tuple[int, int] | None]] = field(default_factory=list)

    params: int = 0
    weight_bytes: int = 0
    scales: list[Value] = field(default_factory=list)
    in_attributes: tuple[int, int] = (0, 0)
    packed: dict[int, int] = field(default_factory=dict)

    _cheap: dict[str, Any] | None = None

    def cheap_metrics(self) -> dict[str, Any]:
        """params, weight_bytes, output_bytes, macs, flops, intensity (numbers, or "n/a (reason)")."""
        if self._cheap is None:
            self._cheap = self._compute_cheap()
        return dict(self._cheap)

    def _compute_cheap(self) -> dict[str, Any]:
        values: dict[str, Any] = {"params": self.params, "weight_bytes": self.weight_bytes,
                                  "output_bytes": _shown(self.output_bytes)}
        if isinstance(self.cost, str):
            values["macs"] = values["flops"] = values["intensity"] = na(self.cost)
            return values
        values["macs"] = self.cost.macs
        values["flops"] = 2 * self.cost.macs
        moved = [self.input_bytes, self.weight_bytes, self.output_bytes]
        reason = next((m for m in moved if isinstance(m, str)), None)
        total = sum(m for m in moved if isinstance(m, int))
        if reason is not None:
            values["intensity"] = na(reason)
        elif total == 0:
            values["intensity"] = na("no bytes moved")
        else:
            values["intensity"] = round(2 * self.cost.macs / total, 4)
        return values


def na(reason: str) -> str:
    return f"n/a ({reason})"


def _shown(value: int | str) -> int | str:
    return na(value) if isinstance(value, str) else value


def constant_bytes(value: Value) -> int:
    tensor = value.initializer
    bits = DTYPE_BITS.get(tensor.dtype, 0)  # type: ignore[union-attr]
    return (prod(tensor.shape) * bits + 7) // 8  # type: ignore[union-attr]


def value_bytes(value: Value) -> int:
    """Bytes of an activation from its static shape and dtype; NotCountable when unknown."""
    dtype = value.type.dtype if value.type else "?"
    if dtype in ("resource", "variant"):
        return 0  # a handle to state, not data flowing through the graph
    shape = static_shape(value)
    bits = DTYPE_BITS.get(dtype)
    if bits is None:
        raise NotCountable(f"no byte size for dtype {dtype} of {label(value)}")
    return (prod(shape) * bits + 7) // 8


def _sum_bytes(values: list[Value], sizes: dict[int, int | str]) -> int | str:
    """Total bytes of ``values`` (or the first reason one is unknown); ``sizes`` memoizes per value."""
    total = 0
    for value in values:
        size = sizes.get(id(value))
        if size is None:
            try:
                size = value_bytes(value)
            except NotCountable as e:
                size = str(e)
            sizes[id(value)] = size
        if isinstance(size, str):
            return size
        total += size
    return total


_TABLES = {"tflite": tflite_ops, "executorch": executorch_ops, "torch": torch_ops, "tensorrt": tensorrt_ops,
           "openvino": openvino_ops.IR, "openvino-exec": openvino_ops.EXEC}


def _table(fmt: str) -> Any:
    return _TABLES.get(fmt, onnx_ops)


def _cost(table: Any, op: Op) -> Cost | str:
    try:
        return table.cost(op)
    except NotCountable as e:
        return str(e)
    except MALFORMED as e:
        return malformed(e)


def op_cost(node: Node, fmt: str) -> Cost | str:
    """The MACs and FLOPs of one operator (``OpCosts.cost``), or why it has none, without the rest of the pass:
    what ``dim_formulas`` reads of each load at other dims."""
    return _cost(_table(fmt), Op(node))


def op_costs(node: Node, fmt: str, sizes: dict[int, int | str] | None = None) -> OpCosts:
    """The cheap pass over one operator of a model in format ``fmt``; ``sizes`` memoizes activation bytes."""
    table = _table(fmt)
    op = Op(node)
    cost = _cost(table, op)
    transparent = is_transparent(node)
    constants: dict[int, Value] = {}
    activations: dict[int, Value] = {}
    scales: set[int] = set()
    quantization = table.quantization_slots(op)
    for slot, value in enumerate(node.inputs):
        if value is None:
            continue
        if value.initializer is not None:
            constants.setdefault(id(value), value)
            if slot in quantization:
                scales.add(id(value))
            continue
        source = None if transparent else trace(value)
        if source is not None:
            constants.setdefault(id(source.value), source.value)
        else:
            activations.setdefault(id(value), value)
    weights: list[tuple[int, Source, tuple[int, int] | None]] = []
    for slot, explicit in table.weight_slots(op):
        if slot < len(node.inputs):
            source = trace(node.inputs[slot])
            if source is not None and (explicit is not None or _weight_like(source.value)):
                weights.append((slot, source, explicit))
    sizes = {} if sizes is None else sizes
    outputs = [v for v in node.outputs if v.consumers or v.is_output or _known(v)]
    stored = list(constants.values())
    in_attributes = table.attribute_weights(op)  # ONNX-ML: learned values kept in attributes
    held = packed_values(node, fmt)
    return OpCosts(node, cost, stored, _sum_bytes(list(activations.values()), sizes), _sum_bytes(outputs, sizes),
                   weights, params=in_attributes[0] + parameters(stored, scales, held),
                   weight_bytes=in_attributes[1] + sum(constant_bytes(v) for v in stored),
                   scales=[v for v in stored if id(v) in scales], in_attributes=in_attributes, packed=held)


def parameters(stored: list[Value], scales: set[int], packed: dict[int, int]) -> int:
    """Parameters held by the constants ``stored``: the elements of the tensors they stand for (the dense one, for
    sparse data), or the values packed in them (``packed``), and none for the scales and zero points of quantized
    weights (ids in ``scales``)."""
    return sum(packed.get(id(v), v.initializer.logical_size) for v in stored  # type: ignore[union-attr]
               if id(v) not in scales)


def _weight_like(value: Value) -> bool:
    """Float data, or integers with quantization parameters; not shape or index tables (int64 for Gather…)."""
    dtype = value.initializer.dtype  # type: ignore[union-attr]
    if dtype in ("int64", "int32", "uint64", "uint32", "bool", "string"):
        return value.quantization is not None
    return True


def _known(value: Value) -> bool:
    """An unused optional output (Dropout's mask…) of unknown shape is left out of output bytes."""
    try:
        value_bytes(value)
    except NotCountable:
        return False
    return True


@dataclass(slots=True)
class ModelCosts:
    """The cheap pass over every operator of every graph."""

    model: Model
    ops: dict[ElementKey, OpCosts]

    @classmethod
    def build(cls, model: Model) -> ModelCosts:
        from renderer.core.progress import each

        sizes: dict[int, int | str] = {}
        nodes = [node for graph in model.graphs for node in graph.nodes]
        ops = {node.key: op_costs(node, model.format, sizes) for node in each(nodes, "metrics", "op")}
        return cls(model, ops)

    def constants(self) -> list[Value]:
        """Every stored tensor some operator reads, once."""
        seen: dict[int, Value] = {}
        for graph in self.model.graphs:
            for value in graph.values:
                if value.initializer is not None and value.consumers:
                    seen.setdefault(id(value), value)
        return list(seen.values())

    def totals(self) -> dict[str, Any]:
        """Model-wide numbers: parameters, weight bytes, MACs (with how many ops were n/a), peak activations."""
        constants = self.constants()
        scales = {id(v) for prof in self.ops.values() for v in prof.scales}
        packed = {key: values for prof in self.ops.values() for key, values in prof.packed.items()}
        macs = 0
        uncounted = 0
        for prof in self.ops.values():
            if isinstance(prof.cost, Cost):
                macs += prof.cost.macs
            elif not runs_subgraphs(self.model.format, prof.node.op_type):
                uncounted += 1
        peak, unknown = peak_activation_bytes(self.model)
        return {
            "params": parameters(constants, scales, packed)
            + sum(prof.in_attributes[0] for prof in self.ops.values()),
            "weight_bytes": sum(constant_bytes(v) for v in constants)
            + sum(prof.in_attributes[1] for prof in self.ops.values()),
            "macs": macs,
            "macs_uncounted": uncounted,
            "peak_activation_bytes": peak,
            "peak_unknown": unknown,
        }


def _constant_derived(model: Model) -> set[int]:
    """Values computed only from constants by weight-preparation ops (DequantizeLinear of a weight…)."""
    derived: set[int] = set()
    for graph in model.graphs:
        for node in graph.nodes:
            if is_transparent(node) and node.inputs and all(
                    v is None or v.initializer is not None or id(v) in derived for v in node.inputs):
                derived.update(id(v) for v in node.outputs)
    return derived


def peak_activation_bytes(model: Model) -> tuple[int, int]:
    """Largest total size of the activations alive at once, running graph 0 in file order.

    A value lives from its producer (or the start, for graph inputs) to its last reader; graph outputs to the
    end. Constants and values derived only from constants are weights, not activations. Reads from inside a
    subgraph count as reads by the graph-0 operator that owns it. Returns (bytes, number of activations whose
    size is unknown and so left out).
    """
    graph = model.main
    derived = _constant_derived(model)
    position = {id(node): i for i, node in enumerate(graph.nodes)}

    def top(node: Node) -> int | None:
        while node.graph.index != 0 and node.graph.parent is not None:
            node = node.graph.parent
        return position.get(id(node))

    last_use: dict[int, int] = {}
    for value in graph.values:
        uses = [top(c) for c in value.consumers]
        uses = [u for u in uses if u is not None]
        if uses:
            last_use[id(value)] = max(uses)
    end = len(graph.nodes)
    for value in graph.outputs:
        last_use[id(value)] = end
    unknown = 0
    sizes: dict[int, int] = {}

    def size(value: Value) -> int:
        nonlocal unknown
        if id(value) not in sizes:
            try:
                sizes[id(value)] = value_bytes(value)
            except NotCountable:
                sizes[id(value)] = 0
                unknown += 1
        return sizes[id(value)]

    def is_activation(value: Value) -> bool:
        return value.initializer is None and id(value) not in derived

    live = sum(size(v) for v in graph.inputs if is_activation(v))
    peak = live
    frees: dict[int, list[Value]] = {}
    for value in graph.inputs:
        if is_activation(value):
            frees.setdefault(last_use.get(id(value), -1), []).append(value)
    for value in frees.pop(-1, []):
        live -= size(value)
    for i, node in enumerate(graph.nodes):
        for value in node.outputs:
            if is_activation(value):
                live += size(value)
                frees.setdefault(max(i, last_use.get(id(value), i)), []).append(value)
        peak = max(peak, live)
        for value in frees.pop(i, []):
            live -= size(value)
    return peak, unknown
