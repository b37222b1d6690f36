"""A TensorRT engine's layer graph, ``trtexec --exportLayerInfo=graph.json`` (``IEngineInspector::
getEngineInformation(kJSON)``; TREx's ``<engine>.graph.json``), read as a model of what the engine runs.

The file is ``{"Layers": [...], "Bindings": [...]}``. With ``--profilingVerbosity=detailed`` each layer is an
object: ``Name``, ``LayerType`` (the implementation: ``CaskConvolution``, ``Reformat``, ``Myelin``…),
``ParameterType`` (what it computes: ``Convolution``, ``Pooling``…), ``Inputs``/``Outputs`` (``Name``,
``Dimensions``, ``Format/Datatype``), ``TacticName``, the layer's parameters (``Kernel``, ``Stride``, ``Groups``,
``OutMaps``, ``Weights: {"Type", "Count"}``…) and, in TensorRT 10, ``Metadata`` naming the ONNX nodes it was built
from. Without detailed verbosity a layer is only its name.

Read into the IR: one operator per layer (its type the ``ParameterType``, else the ``LayerType``; its name the
layer's, so a ``--exportProfile`` of the engine maps by name), one tensor per name joining the layers that write
and read it, the bindings as the graph's inputs (no layer writes them) and outputs, and the weights and bias a
layer declares as constants of the declared count (shaped ``[out maps, in channels / groups, kernel…]`` when that
matches the count). A fused layer (``a.weight + QuantizeLinear_7 + Conv_9 + PWN(Clip_13)``) shows its first part
and ``+N fused`` in its box; its parts, or the ONNX nodes of its Metadata, are listed as attributes.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

from renderer.annotations.readers.tensorrt_profile import name_parts, onnx_nodes_of
from renderer.core import ir
from renderer.core.errors import LoaderError
from renderer.core.escape import clean
from renderer.data.categories import category
from renderer.files import inputs

FORMAT = "tensorrt"
EXTENSIONS: tuple[str, ...] = ()
"""None: ``.json`` says nothing; a layer graph is found by its first key."""

MAX_BYTES = 1 << 30
MAX_LAYERS = 1 << 20
MAX_ATTRIBUTES = 48
MAX_TEXT = 400
_HEAD = re.compile(rb'\A(?:\xef\xbb\xbf)?\s*\{\s*"(?:Layers|Bindings)"\s*:')
_OWN_FIELDS = frozenset({"Name", "Inputs", "Outputs", "Metadata", "Weights", "Bias", "ParameterType"})
DTYPES = {"fp32": "float32", "float": "float32", "fp16": "float16", "half": "float16", "bf16": "bfloat16",
          "int8": "int8", "uint8": "uint8", "int32": "int32", "int64": "int64", "bool": "bool",
          "fp8": "float8e4m3fn", "int4": "int4", "fp4": "float4e2m1"}


def match(head: bytes) -> bool:
    return _HEAD.match(head) is not None


def pinnable(path: Path) -> list[str]:
    """An engine's shapes are fixed when it is built: nothing to pin."""
    return []


def load(path: Path, dims: dict[str, int] | None = None, check_dims: bool = True, shape_run: bool = True,
         values: Any = None, assume: bool = True) -> ir.Model:
    from renderer.core.pinning import resolve

    resolve(path, dims, [], check=check_dims)
    document = _document(path)
    model = ir.Model(format=FORMAT, path=str(path), producer="TensorRT engine (trtexec --exportLayerInfo)",
                     version="layer information JSON")
    graph = model.add_graph("engine")
    _Builder(path, graph).build(document["Layers"], document.get("Bindings"))
    model.notes.append("a TensorRT engine's layers: times come from its --exportProfile (-a profile.json)")
    return model


def _document(path: Path) -> dict[str, Any]:
    """The parsed file, checked to be an object with a ``Layers`` list (raw control characters allowed in its
    strings: TensorRT 10 separates the Metadata entries with them)."""
    data = inputs.read_bytes(path, MAX_BYTES, LoaderError, "a TensorRT layer graph")
    try:
        document = json.loads(data.decode("utf-8-sig"), strict=False, parse_constant=_no_constant)
    except UnicodeDecodeError:
        raise LoaderError(f"{path}: not UTF-8 text") from None
    except json.JSONDecodeError as e:
        raise LoaderError(f"{path}:{e.lineno}: invalid JSON ({e.msg})") from None
    except (RecursionError, ValueError) as e:
        raise LoaderError(f"{path}: invalid JSON ({clean(str(e), 80) or 'nested too deeply'})") from None
    if not isinstance(document, dict) or not isinstance(document.get("Layers"), list):
        raise LoaderError(f"{path}: not a TensorRT layer graph (an object with a 'Layers' list)")
    if len(document["Layers"]) > MAX_LAYERS:
        raise LoaderError(f"{path}: {len(document['Layers'])} layers, more than {MAX_LAYERS} (a corrupt file?)")
    bindings = document.get("Bindings")
    if bindings is not None and not (isinstance(bindings, list) and all(isinstance(b, str) for b in bindings)):
        raise LoaderError(f"{path}: 'Bindings' is not a list of tensor names")
    return document


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is no JSON number")


class _Builder:
    """Layers into ``graph``: tensors joined by name (a name written again is a new tensor from there on)."""

    def __init__(self, path: Path, graph: ir.Graph) -> None:
        self.path, self.graph = path, graph
        self.by_name: dict[str, ir.Value] = {}

    def build(self, layers: list[Any], bindings: list[str] | None) -> None:
        for position, layer in enumerate(layers):
            if isinstance(layer, str):
                layer = {"Name": layer}
            if not isinstance(layer, dict) or not isinstance(layer.get("Name"), str):
                raise LoaderError(f"{self.path}: layer {position} is not an object with a 'Name'")
            self._layer(position, layer)
        self._ends(bindings)

    def _layer(self, position: int, layer: dict[str, Any]) -> None:
        where = f"{self.path}: layer {position} ({clean(layer['Name'], 60)!r})"
        kind = layer.get("ParameterType") if isinstance(layer.get("ParameterType"), str) else None
        kind = kind or (layer["LayerType"] if isinstance(layer.get("LayerType"), str) else "Layer")
        kind = clean(kind, 60) or "Layer"
        node = self.graph.add_node(kind, name=layer["Name"], category=category(FORMAT, kind))
        for slot, port in enumerate(_ports(layer, "Inputs", where)):
            node.inputs.append(self._read(node, port, f"{where} input {slot}"))
            node.input_names.append(f"in{slot}")
        _weights(self.graph, node, layer, where)
        for slot, port in enumerate(_ports(layer, "Outputs", where)):
            node.outputs.append(self._write(node, port, f"{where} output {slot}"))
        _describe(node, layer)

    def _read(self, node: ir.Node, port: dict[str, Any], where: str) -> ir.Value:
        value = self.by_name.get(port["Name"])
        if value is None:
            value = self.by_name[port["Name"]] = self.graph.add_value(port["Name"], type=_type(port, where))
            value.metadata.update(_port_text(port))
        value.consumers.append(node)
        return value

    def _write(self, node: ir.Node, port: dict[str, Any], where: str) -> ir.Value:
        value = self.by_name.get(port["Name"])
        if value is None or value.producer is not None or value.consumers:
            value = self.by_name[port["Name"]] = self.graph.add_value(port["Name"])
        value.type = _type(port, where)
        value.metadata.update(_port_text(port))
        value.producer = node
        return value

    def _ends(self, bindings: list[str] | None) -> None:
        """Bindings no layer writes are the inputs, the others the outputs; without bindings, the tensors no
        layer writes and those no layer reads. A tensor read but never written nor bound is an input too (a
        layer the file leaves out wrote it)."""
        bound = set(bindings) if bindings is not None else None
        for value in self.graph.values:
            if value.is_constant:
                continue
            if value.producer is None:
                value.is_input = True
                self.graph.inputs.append(value)
            elif (value.name in bound) if bound is not None else not value.consumers:
                value.is_output = True
                self.graph.outputs.append(value)
        for name in bindings or []:
            if name not in self.by_name:  # bound, but no layer reads or writes it
                value = self.by_name[name] = self.graph.add_value(name, is_input=True)
                self.graph.inputs.append(value)


def _ports(layer: dict[str, Any], key: str, where: str) -> list[dict[str, Any]]:
    ports = layer.get(key, [])
    if not isinstance(ports, list) or not all(isinstance(p, dict) and isinstance(p.get("Name"), str)
                                              for p in ports):
        raise LoaderError(f"{where}: '{key}' is not a list of tensors with a 'Name'")
    return ports


def _type(port: dict[str, Any], where: str) -> ir.TensorType:
    dims = port.get("Dimensions")
    shape: tuple[ir.Dim, ...] | None = None
    if dims is not None:
        if not isinstance(dims, list) or not all(isinstance(d, int) and not isinstance(d, bool) for d in dims):
            raise LoaderError(f"{where}: 'Dimensions' is not a list of integers")
        if len(dims) > 64 or any(d > 2**62 for d in dims):
            raise LoaderError(f"{where}: 'Dimensions' {clean(str(dims), 80)} is no tensor shape")
        shape = tuple(d if d >= 0 else None for d in dims)
    return ir.TensorType(dtype_of(port.get("Format/Datatype")), shape)


def dtype_of(text: object) -> str:
    """The element type a ``Format/Datatype`` names, by its last word (``Row major linear FP32``: float32).

    >>> dtype_of("Thirty-two wide channel vectorized row major Int8 format")
    'int8'
    """
    if not isinstance(text, str):
        return "unknown"
    for word in reversed(text.replace("/", " ").split()):
        if word.lower() in DTYPES:
            return DTYPES[word.lower()]
    return "unknown"


def _port_text(port: dict[str, Any]) -> dict[str, str]:
    return {key.lower(): clean(str(port[key]), MAX_TEXT) for key in ("Format/Datatype", "Location")
            if isinstance(port.get(key), str)}


def _weights(graph: ir.Graph, node: ir.Node, layer: dict[str, Any], where: str) -> None:
    """The layer's ``Weights`` and ``Bias`` (``{"Type", "Count"}``) as constant inputs holding no data."""
    for key in ("Weights", "Bias"):
        declared = layer.get(key)
        if not isinstance(declared, dict):
            continue
        count = declared.get("Count")
        if not isinstance(count, int) or isinstance(count, bool) or not 0 <= count <= 2**62:
            raise LoaderError(f"{where}: '{key}' has no 'Count' of 0 or more")
        if count == 0:
            continue
        dtype = dtype_of(declared.get("Type"))
        shape = _kernel_shape(node, layer, count) if key == "Weights" else (count,)
        tensor = ir.Tensor(dtype, shape, location="counted in the layer graph; the engine holds the data")
        value = graph.add_value(f"{node.name} {key.lower()}", type=ir.TensorType(dtype, shape), initializer=tensor)
        value.consumers.append(node)
        node.inputs.append(value)
        node.input_names.append(key.lower())


def _kernel_shape(node: ir.Node, layer: dict[str, Any], count: int) -> tuple[int, ...]:
    """``[out maps, in channels / groups, kernel…]`` when the layer's numbers give exactly ``count``, else
    ``[count]``."""
    kernel, maps, groups = layer.get("Kernel"), layer.get("OutMaps"), layer.get("Groups", 1)
    source = node.inputs[0].type if node.inputs and node.inputs[0].type else None
    channels = source.shape[1] if source and source.shape and len(source.shape) > 1 else None
    numbers = [maps, groups, channels, *(kernel if isinstance(kernel, list) else [None])]
    if not all(isinstance(n, int) and not isinstance(n, bool) and n > 0 for n in numbers):
        return (count,)
    shape = (maps, channels // groups, *kernel)  # type: ignore[operator]
    return shape if channels % groups == 0 and math.prod(shape) == count else (count,)  # type: ignore[operator]


_FIRST = ("LayerType", "TacticName")
"""Shown first in a box, after the fused parts."""


def _describe(node: ir.Node, layer: dict[str, Any]) -> None:
    """The layer's fused parts and ONNX nodes, its own fields and precision as attributes; its short title."""
    parts = name_parts(node.name)
    if len(parts) > 1:
        node.attributes["fused"] = ", ".join(parts)[:MAX_TEXT * 4]
        node.title = f"{parts[0]} +{len(parts) - 1} fused"
    metadata = layer.get("Metadata")
    if isinstance(metadata, str) and onnx_nodes_of(metadata):
        node.attributes["onnx_nodes"] = ", ".join(onnx_nodes_of(metadata))[:MAX_TEXT * 4]
    precisions = sorted({v.type.dtype for v in node.outputs if v.type and v.type.dtype != "unknown"})
    if precisions:
        node.attributes["precision"] = ", ".join(precisions)
    ordered = [*(k for k in _FIRST if k in layer), *(k for k in layer if k not in _FIRST)]
    for key, value in ((k, layer[k]) for k in ordered):
        if key in _OWN_FIELDS or len(node.attributes) >= MAX_ATTRIBUTES:
            continue
        if isinstance(value, (str, int, float, bool)) or (
                isinstance(value, list) and len(value) <= 16 and all(isinstance(v, (int, float)) for v in value)):
            node.attributes[clean(key, 60)] = clean(value, MAX_TEXT) if isinstance(value, str) else value
