"""An OpenVINO XML net (``files.openvino_xml``) onto the IR, for both loaders: the IR (``loaders.openvino``) and
the execution graph (``loaders.openvino_exec``). Which of the two a file is follows from its content, whichever
loader its first bytes chose: an execution graph's layers carry ``execTimeMcs`` in their ``<data>``.

One operator per layer, in file order, named as the layer; ``Parameter`` (``Input``) layers are the graph's
inputs, ``Result`` (``Output``) layers mark its outputs and ``Const`` layers are constants (with the IR's data from
the ``.bin``), none of them operators. Each output port is one tensor, named by the first of its ``names`` (the
source model's tensor names), else by its layer (``layer:port`` when the layer has several outputs), typed by its
``<dim>``s and ``precision``; ``<edges>`` join them to the input ports, in port order.
"""

from __future__ import annotations

import re
from pathlib import Path

from renderer.core import ir
from renderer.core.errors import LoaderError
from renderer.core.escape import clean
from renderer.data.categories import category
from renderer.files import openvino_xml
from renderer.loaders.openvino import dims as free
from renderer.loaders.openvino import types
from renderer.loaders.openvino.weights import Bin

IR, EXEC = "openvino", "openvino-exec"
MAX_BYTES = 1 << 30
MAX_LAYERS = 1 << 20
MAX_TEXT = 400
MAX_ATTRIBUTES = 48
INPUTS = frozenset({"Parameter", "Input"})
OUTPUTS = frozenset({"Result", "Output"})
CONSTANTS = frozenset({"Const"})
EXEC_FIRST = ("originalLayersNames", "primitiveType", "runtimePrecision")
"""An execution graph layer's fields shown first in its box (``execTimeMcs`` is its annotation)."""
EXEC_STORED = ("execTimeMcs",)
"""Kept as the text the file stores with the layer (``Node.metadata``): ``annotations.embedded`` reads it."""
_NAME_SPLIT = re.compile(r"(?<!\\),")
_INTEGERS = re.compile(r"-?[0-9]{1,19}(?:\s*,\s*-?[0-9]{1,19}){0,63}")


def is_execution_graph(net: openvino_xml.Net) -> bool:
    return any("execTimeMcs" in layer.data for layer in net.layers)


def read(path: Path) -> openvino_xml.Net:
    return openvino_xml.read_net(path, LoaderError, "an OpenVINO IR or execution graph", MAX_LAYERS, MAX_BYTES)


def load_net(path: Path, dims: dict[str, int] | None = None, check_dims: bool = True, shape_run: bool = True,
             assume: bool = True) -> ir.Model:
    """The model of the OpenVINO XML at ``path``: an IR (format ``openvino``) or an execution graph
    (``openvino-exec``), as its content says; an IR's free input dims pinned by ``dims`` and, with ``assume``,
    the others assumed (``loaders.openvino.dims``), every port's shape at them OpenVINO's with ``shape_run``."""
    from renderer.core.pinning import resolve

    net = read(path)
    executed = is_execution_graph(net)
    notes: list[str] = []
    found = [] if executed else free.slots(net)
    if not found:
        resolve(path, dims, [], check=check_dims)
    values, assumed = free.settle(path, net, dims, check_dims, assume, notes) if found else ({}, [])
    ports = free.shapes(path, net, values, notes, shape_run) if values else {}
    runtime = net.rt_info.get("Runtime_version") or net.rt_info.get("OpenVINO Runtime", "")
    model = ir.Model(format=EXEC if executed else IR, path=str(path),
                     producer=clean(f"OpenVINO {runtime}".strip(), 200),
                     version=clean(f"{'execution graph' if executed else 'IR'} v{net.version}", 200))
    graph = model.add_graph(net.name)
    weights = None if executed else Bin(path)
    _Builder(path, graph, weights, executed, ports).build(net)
    model.notes.extend(notes)
    model.pinnable_dims = free.pinnable(found)
    model.pinned_dims, model.assumed_dims = dict(values), assumed
    if weights is not None and weights.data is not None:
        model.side_files.append(str(weights.path))  # an input of the run: no output may replace it
    if weights is not None and weights.data is None and any(v.is_constant for v in graph.values):
        model.notes.append(f"no {weights.path.name} beside the IR: weights have their shapes, not their values")
    if executed:
        model.notes.append("an OpenVINO execution graph: boxes are the primitives that ran, coloured by execTimeMcs")
    return model


class _Builder:
    """The layers of one net into ``graph``."""

    def __init__(self, path: Path, graph: ir.Graph, weights: Bin | None, executed: bool,
                 ports: free.Ports) -> None:
        self.path, self.graph, self.weights, self.executed = path, graph, weights, executed
        self.shapes = ports
        self.fmt = EXEC if executed else IR
        self.ports: dict[tuple[str, str], ir.Value] = {}
        self.layers: dict[str, openvino_xml.Layer] = {}

    def where(self, layer: openvino_xml.Layer) -> str:
        return f"{self.path}:{layer.line}: layer {clean(layer.id, 20)!r} ({clean(layer.name, 60)!r})"

    def build(self, net: openvino_xml.Net) -> None:
        for layer in net.layers:
            if layer.id in self.layers:
                raise LoaderError(f"{self.where(layer)}: a second layer with id {clean(layer.id, 20)!r}")
            self.layers[layer.id] = layer
            self._outputs(layer)
        sources = self._edges(net.edges)
        for layer in net.layers:
            feeds = [sources.get((layer.id, port.id)) for port in layer.inputs]
            if layer.type in OUTPUTS:
                for value in (v for v in feeds if v is not None and not v.is_output):
                    value.is_output = True
                    self.graph.outputs.append(value)
            elif layer.type not in INPUTS | CONSTANTS:
                self._node(layer, feeds)

    def _outputs(self, layer: openvino_xml.Layer) -> None:
        """One tensor per output port of ``layer``."""
        where = self.where(layer)
        for port in layer.outputs:
            if (layer.id, port.id) in self.ports:
                raise LoaderError(f"{where}: a second output port {clean(port.id, 20)!r}")
            names = [n.replace("\\,", ",") for n in _NAME_SPLIT.split(port.names) if n]
            name = names[0] if names else layer.name if len(layer.outputs) == 1 else f"{layer.name}:{port.id}"
            value = self.graph.add_value(name, type=self._type(layer, port))
            if len(names) > 1:
                value.metadata["names"] = clean(", ".join(names), MAX_TEXT)
            self.ports[layer.id, port.id] = value
            if layer.type in INPUTS:
                value.is_input = True
                self.graph.inputs.append(value)
            elif layer.type in CONSTANTS:
                value.initializer = self._constant(layer, value, where)

    def _type(self, layer: openvino_xml.Layer, port: openvino_xml.Port) -> ir.TensorType:
        dtype = types.element_type(port.element_type) if port.element_type else types.precision(port.precision)
        if dtype == "unknown" and "element_type" in layer.data:
            dtype = types.element_type(layer.data["element_type"])
        return ir.TensorType(dtype, self.shapes.get((layer.id, port.id), tuple(port.dims)))

    def _constant(self, layer: openvino_xml.Layer, value: ir.Value, where: str) -> ir.Tensor:
        shape = value.type.static_shape if value.type else None
        if shape is None:
            raise LoaderError(f"{where}: a Const of dynamic shape")
        dtype = types.element_type(layer.data["element_type"]) if "element_type" in layer.data else value.type.dtype
        if self.weights is None:
            return ir.Tensor(dtype, shape, location="held by the compiled model")
        return self.weights.tensor(layer, dtype, shape, where)

    def _edges(self, edges: list[openvino_xml.Edge]) -> dict[tuple[str, str], ir.Value]:
        """Input port (layer id, port id) → the tensor the edge to it carries."""
        sources: dict[tuple[str, str], ir.Value] = {}
        for edge in edges:
            where = f"{self.path}:{edge.line}: edge {clean(edge.from_layer, 20)}:{clean(edge.from_port, 20)} → " \
                    f"{clean(edge.to_layer, 20)}:{clean(edge.to_port, 20)}"
            value = self.ports.get((edge.from_layer, edge.from_port))
            target = self.layers.get(edge.to_layer)
            if value is None:
                raise LoaderError(f"{where}: no such output port")
            if target is None or all(port.id != edge.to_port for port in target.inputs):
                raise LoaderError(f"{where}: no such input port")
            if (edge.to_layer, edge.to_port) in sources:
                raise LoaderError(f"{where}: a second edge into that input port")
            sources[edge.to_layer, edge.to_port] = value
        return sources

    def _node(self, layer: openvino_xml.Layer, feeds: list[ir.Value | None]) -> None:
        kind = clean(layer.type, 60) or "Layer"
        node = self.graph.add_node(kind, name=layer.name, category=category(self.fmt, kind))
        for value in feeds:
            node.inputs.append(value)
            if value is not None and (not value.consumers or value.consumers[-1] is not node):
                value.consumers.append(node)
        for port in layer.outputs:
            value = self.ports[layer.id, port.id]
            value.producer = node
            node.outputs.append(value)
        _describe(node, layer, self.executed)


def _describe(node: ir.Node, layer: openvino_xml.Layer, executed: bool) -> None:
    """The layer's ``<data>`` as attributes (numbers and lists of them parsed), its opset as ``version``; an
    execution graph's ``originalLayersNames``, kernel and precision first, its time as stored text."""
    fields = dict(layer.data)
    if executed:
        node.metadata.update({k: clean(fields.pop(k), 100) for k in EXEC_STORED if k in fields})
        fields = {**{k: fields.pop(k) for k in EXEC_FIRST if k in fields}, **fields}
    for key, text in fields.items():
        if len(node.attributes) >= MAX_ATTRIBUTES:
            break
        if executed and not text:  # a Reorder the plugin inserted lists no originalLayersNames
            continue
        node.attributes[clean(key, 60)] = _attribute(text)
    if layer.version:  # in the tooltip, not the box
        node.attributes["version"] = clean(layer.version, 60)
        node.defaults.add("version")


def _attribute(text: str) -> object:
    """``"1, 1"`` → ``[1, 1]``, ``"3"`` → ``3``, other text as it is (bounded).

    >>> _attribute("2, 2"), _attribute("-1"), _attribute("explicit")
    ([2, 2], -1, 'explicit')
    """
    if _INTEGERS.fullmatch(text.strip()):
        numbers = [int(part) for part in text.split(",")]
        return numbers if "," in text else numbers[0]
    return clean(text, MAX_TEXT)
