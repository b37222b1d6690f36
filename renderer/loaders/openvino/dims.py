"""An OpenVINO IR's free input dims: a ``Parameter``'s ``-1`` (or range, ``1..64``) dims, which the IR does not
name. A leading one is ``batch`` (every input's, one dim, as a TFLite model's axis 0), any other is named by its
input and axis (``input_ids.axis1``) as ONNX's unnamed dims are (``free_dims.unnamed_dim_name``); values nothing
pins are assumed by ``free_dims``' rules. The ports' shapes at those values are OpenVINO's own
(``ov_shapes``: the model reshaped in a child process); without openvino only the inputs take them."""

from __future__ import annotations

from pathlib import Path

from renderer.core import ir
from renderer.files import openvino_xml
from renderer.loaders import free_dims
from renderer.loaders.openvino import types

INPUTS = frozenset({"Parameter"})
BATCH = "batch"
"""The name of every input's free leading dim (the IR names none)."""
_INTEGERS = frozenset({"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"})
Ports = dict[tuple[str, str], tuple[int | None, ...]]
"""(layer id, output port id) → its dims."""


def _input_name(layer: openvino_xml.Layer) -> str:
    names = layer.outputs[0].names.split(",") if layer.outputs and layer.outputs[0].names else []
    return names[0].replace("\\", "").strip() if names and names[0].strip() else layer.name


def slots(net: openvino_xml.Net) -> list[free_dims.Slot]:
    """Where each free dim of the IR's inputs sits, named ``batch`` (axis 0) or ``input.axisN``."""
    found = []
    for layer in net.layers:
        if layer.type not in INPUTS or not layer.outputs:
            continue
        port, name = layer.outputs[0], _input_name(layer)
        dtype = types.element_type(layer.data["element_type"]) if "element_type" in layer.data \
            else types.precision(port.precision)
        shape = tuple(dim_name(name, axis) if size is None else size for axis, size in enumerate(port.dims))
        for axis, size in enumerate(port.dims):
            if size is None:
                found.append(free_dims.Slot(str(shape[axis]), name, axis, shape, dtype in _INTEGERS))
    return found


def dim_name(input_name: str, axis: int) -> str:
    return BATCH if axis == 0 else free_dims.unnamed_dim_name(input_name, axis)


def pinnable(found: list[free_dims.Slot]) -> list[str]:
    return list(dict.fromkeys(slot.dim for slot in found))


def settle(path: Path, net: openvino_xml.Net, dims: dict[str, int] | None, check: bool, assume: bool,
           notes: list[str]) -> tuple[dict[str, int], list[ir.AssumedDim]]:
    """The free dims' values: ``--dim``'s and, with ``assume``, a value for every other (``free_dims``)."""
    from renderer.core.pinning import resolve

    found = slots(net)
    given = resolve(path, dims, pinnable(found), (), check)
    if not assume:
        return given, []
    return free_dims.assume(path, found, given, net.rt_info, notes, _position_rows(net))


def _position_rows(net: openvino_xml.Net) -> int | None:
    """The rows of the model's position-embedding table (a ``Gather`` from a 2-D ``Const`` named ``position``),
    as for ONNX: the longest sequence it takes, so an assumed length stays within it."""
    tables = {layer.id: layer.outputs[0].dims[0] for layer in net.layers
              if layer.type == "Const" and "position" in layer.name.lower() and layer.outputs
              and len(layer.outputs[0].dims) == 2 and layer.outputs[0].dims[0]}
    data_ports = {(layer.id, layer.inputs[0].id) for layer in net.layers if layer.type == "Gather" and layer.inputs}
    rows = [tables[edge.from_layer] for edge in net.edges
            if edge.from_layer in tables and (edge.to_layer, edge.to_port) in data_ports]
    return min(rows) if rows else None  # type: ignore[type-var]


def shapes(path: Path, net: openvino_xml.Net, values: dict[str, int], notes: list[str], run: bool = True) -> Ports:
    """Each output port's dims once the inputs' free dims take ``values``: OpenVINO's after reshaping the model
    (with ``run``), else (a note says why) the inputs' alone."""
    from renderer.loaders.openvino import ov_shapes

    pinned: Ports = {}
    inputs: dict[str, list[int]] = {}
    for layer in (la for la in net.layers if la.type in INPUTS and la.outputs):
        port, name = layer.outputs[0], _input_name(layer)
        dims = tuple(values.get(dim_name(name, axis)) if size is None else size
                     for axis, size in enumerate(port.dims))
        pinned[layer.id, port.id] = dims
        if all(d is not None for d in dims):
            inputs[layer.name] = list(dims)  # type: ignore[arg-type]
    if not run or not inputs:
        return pinned
    if not ov_shapes.installed():
        notes.append(f"{path}: openvino is not installed, so only the inputs take the free dims' values and the "
                     "shapes after them stay unknown (pip install openvino)")
        return pinned
    found, repeated, reason = ov_shapes.reshaped(path, inputs)
    if reason:
        notes.append(f"{path}: the shapes after the inputs stay unknown: {reason}")
        return pinned
    for layer in net.layers:
        outputs = found.get(layer.name) if layer.name not in repeated else None
        if outputs is None or len(outputs) != len(layer.outputs) or layer.type in INPUTS:
            continue
        for port, dims in zip(layer.outputs, outputs):
            if dims is not None and len(dims) == len(port.dims):
                pinned[layer.id, port.id] = tuple(None if d < 0 else d for d in dims)
    return pinned
