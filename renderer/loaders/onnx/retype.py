"""A load of an ONNX model at other dims made from an earlier load of the same file (``loader.load(like=…)``).

The MACs formulas (``metrics.dim_formulas``) load the model again at a few other sizes of its free dims and read
each operator's MACs. Only the types differ from one such load to the next: the graph, its operators, their
attributes and the constants are the file's. So the operators and tensors of the earlier load are copied (their
attributes, metadata and stored tensors shared), and each tensor takes the type the build of the new proto
(pinned and inferred at the other sizes) gives it, by the same rules and in the same order as
``loader._Builder``: the shape inference says, else a stored tensor's or a folded Constant's own shape; a
ConstantOfShape of a constant shape is folded again at the new sizes. A model with subgraphs, or whose proto
breaks the rules these steps rely on (one producer a tensor, names not stored twice), is built in full.

The formulas read only the MACs of the operators that have a count at the assumed dims (the others have no
formula whatever the other loads say): ``overlaid`` gives just those, as stand-ins over ``like``'s operators whose
tensors carry the types of the new load (a tensor's stored data, its producer and its name are the file's at any
dims), with no copy of the rest of the graph; subgraphs too, each typed from its own graph's shapes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from renderer.core import ir
from renderer.loaders.registry import decode_text

if TYPE_CHECKING:
    import onnx


class _Builder(Protocol):
    """What the copy uses of ``loader._Builder`` (over the proto loaded at the other dims)."""

    def _type(self, tp: onnx.TypeProto | None) -> ir.TensorType | None: ...

    def _fold_constant_of_shape(self, np_: onnx.NodeProto, shape_value: ir.Value, value: ir.Value) -> None: ...


def retyped(like: ir.Model, proto: onnx.ModelProto, builder: _Builder) -> ir.Model | None:
    """``like``'s graph with the types ``builder`` (over ``proto``, the same file loaded at other dims) would
    give its tensors, or None when the copy could differ from a build (the caller builds then)."""
    gp = proto.graph
    stored = {decode_text(t.name) for t in gp.initializer}
    if not _copyable(like, gp, stored):
        return None
    model = ir.Model(format=like.format, path=like.path, producer=like.producer, version=like.version,
                     description=like.description, metadata=dict(like.metadata), opsets=dict(like.opsets))
    old = like.main
    graph = model.add_graph(old.name)
    shapes = {decode_text(vi.name): vi.type for vi in (*gp.value_info, *gp.input, *gp.output)}
    typed = builder._type  # each distinct TypeProto converted once (the builder keeps them)
    copies: dict[int, ir.Value] = {}
    for value in old.values:  # made as graph.add_value does, without its keyword pass-through
        initializer = value.initializer if value.name in stored else None
        copy = ir.Value(value.name, len(graph.values), graph, type=typed(shapes.get(value.name)),
                        initializer=initializer, is_input=value.is_input, is_output=value.is_output,
                        metadata=value.metadata)
        graph.values.append(copy)
        if initializer is not None:
            _typed_by(copy, initializer)
        copies[id(value)] = copy
    graph.inputs = [copies[id(v)] for v in old.inputs]
    for node, np_ in zip(old.nodes, gp.node, strict=True):
        _copy_node(node, np_, graph, copies, builder)
    by_name = {v.name: v for v in graph.values}
    for vi in gp.output:
        value = by_name.get(decode_text(vi.name))
        if value is not None and value.type is None:
            value.type = typed(vi.type)
    graph.outputs = [copies[id(v)] for v in old.outputs]
    return model


def _copyable(like: ir.Model, gp: onnx.GraphProto, stored: set[str]) -> bool:
    """One graph, the proto's operators those of ``like`` in order, each tensor written by one operator at most
    and none both stored and written, no name stored twice: what the copy's replay of the build assumes."""
    if len(like.graphs) != 1 or len(gp.node) != len(like.main.nodes) or len(stored) != len(gp.initializer):
        return False
    written: set[int] = set()
    for node, np_ in zip(like.main.nodes, gp.node):
        if node.op_type != decode_text(np_.op_type) or node.subgraphs:
            return False
        for value in node.outputs:
            if id(value) in written or value.name in stored:
                return False
            written.add(id(value))
    return True


def _copy_node(node: ir.Node, np_: onnx.NodeProto, graph: ir.Graph, copies: dict[int, ir.Value],
               builder: _Builder) -> None:
    inputs = [None if v is None else copies[id(v)] for v in node.inputs]
    outputs = [copies[id(v)] for v in node.outputs]
    copy = ir.Node(len(graph.nodes), graph, node.op_type, domain=node.domain, name=node.name, category=node.category,
                   inputs=inputs, input_names=node.input_names, outputs=outputs, attributes=node.attributes,
                   defaults=node.defaults, metadata=node.metadata, title=node.title)
    graph.nodes.append(copy)
    for value in inputs:
        if value is not None:
            value.consumers.append(copy)
    for output in outputs:
        output.producer = copy
    if node.domain not in ("", "ai.onnx") or not copy.outputs:
        return
    if node.op_type == "Constant":  # its value is the file's: the earlier load's, at any dims
        initializer = node.outputs[0].initializer
        if initializer is not None:
            copy.outputs[0].initializer = initializer
            _typed_by(copy.outputs[0], initializer)
    elif node.op_type == "ConstantOfShape" and copy.inputs and copy.inputs[0] is not None \
            and copy.inputs[0].is_constant:
        builder._fold_constant_of_shape(np_, copy.inputs[0], copy.outputs[0])


def _typed_by(value: ir.Value, initializer: ir.Tensor) -> None:
    """A constant's type, where inference gave none or no shape, is its data's (as ``_Builder`` types it)."""
    if value.type is None or value.type.shape is None:
        value.type = ir.TensorType(initializer.dtype, initializer.shape)


class _Retyped:
    """A tensor of the earlier load with the type it takes at the other dims; all else is the earlier one's (what
    the cost formulas and the size check read is kept here, the rest is looked up)."""

    __slots__ = ("initializer", "name", "producer", "type", "value")

    def __init__(self, value: ir.Value, type_: ir.TensorType | None) -> None:
        self.value, self.type = value, type_
        self.initializer, self.name, self.producer = value.initializer, value.name, value.producer

    def __getattr__(self, name: str) -> object:
        return getattr(self.value, name)


class _RetypedNode:
    """An operator of the earlier load reading and writing ``_Retyped`` tensors (what its cost formula reads)."""

    __slots__ = ("attributes", "domain", "inputs", "key", "node", "op_type", "outputs")

    def __init__(self, node: ir.Node, inputs: list[_Retyped | None], outputs: list[_Retyped]) -> None:
        self.node, self.inputs, self.outputs, self.key = node, inputs, outputs, node.key
        self.op_type, self.domain, self.attributes = node.op_type, node.domain, node.attributes

    def __getattr__(self, name: str) -> object:
        return getattr(self.node, name)


def overlaid(like: ir.Model, subs: list[onnx.GraphProto], builder: _Builder, keep: frozenset[ir.ElementKey],
             ) -> list[list[_RetypedNode]] | None:
    """Per graph of ``like``, its operators of ``keep`` over tensors typed as the build of ``subs`` (the graphs
    of the proto loaded at other dims) types them, or None where that could differ from a build: another graph
    count or operator count, a tensor the build would type from another graph's outputs, a ConstantOfShape folded
    to another shape (the caller builds then)."""
    if len(subs) != len(like.graphs) or any(len(g.nodes) != len(gp.node) for g, gp in zip(like.graphs, subs)):
        return None
    nodes = sorted((like.graphs[index].nodes[number] for kind, index, number in keep if kind == "op"),
                   key=lambda node: (node.graph.index, node.index))
    if len(nodes) != len(keep):
        return None
    shapes = [{decode_text(vi.name): vi.type for vi in (*gp.value_info, *gp.input, *gp.output)} for gp in subs]
    typed, several = builder._type, len(subs) > 1
    needed = {id(v): v for node in nodes for v in (*node.inputs, *node.outputs) if v is not None}
    copies = {key: _value(v, typed(shapes[v.graph.index].get(v.name)), several) for key, v in needed.items()}
    if None in copies.values():
        return None
    found: list[list[_RetypedNode]] = [[] for _ in like.graphs]
    for node in nodes:
        inputs = [None if v is None else copies[id(v)] for v in node.inputs]
        found[node.graph.index].append(_RetypedNode(node, inputs, [copies[id(v)] for v in node.outputs]))  # type: ignore[misc]
    return found


def _value(value: ir.Value, type_: ir.TensorType | None, several: bool) -> _Retyped | None:
    """``value`` typed ``type_`` as the build types it (a constant without a shape from inference takes its data's),
    None when the build could type it otherwise."""
    initializer = value.initializer
    if initializer is not None and (type_ is None or type_.shape is None):
        type_ = ir.TensorType(initializer.dtype, initializer.shape)
    producer = value.producer
    if producer is not None and producer.op_type == "ConstantOfShape" and initializer is not None \
            and type_ != value.type:
        return None  # folded again at the new dims: the earlier fold holds only for the same type
    if type_ is None and value.is_output and several:
        return None  # an outer tensor a subgraph hands back: typed by that graph's outputs
    return _Retyped(value, type_)


__all__ = ["overlaid", "retyped"]
