"""Shapes onnx's static inference cannot reach, taken from one onnxruntime run.

onnx's shape inference stops at data-dependent shapes (a ``Range`` up to a computed length, a ``Reshape``,
``Pad`` or ``Expand`` to a computed shape), which a transformer exported from torch is full of: half its
operators could get no MAC count although every input dim is pinned. When every input dim is known and
onnxruntime is installed (the optional ``[ort]`` extra), the model runs once on zero inputs (zeros are valid token
ids) with every tensor still missing a shape exposed as a graph output, and the shapes it produced fill the gaps.
The run is isolated in a child process under ``isolated``'s resource policy: memory and time from what the model's
file, inputs and already known activations explain, so a tiny model computing a huge tensor fails in one line.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import first_line
from ..metrics import format_bytes
from . import isolated

if TYPE_CHECKING:
    import onnx

MAX_MODEL_BYTES = 2**31 - 1
"""Larger models are not run: protobuf cannot hold the copy with the extra outputs."""
MAX_ACTIVATION_BYTES = 4 * 2**30
"""Nor are models whose statically known activations alone exceed this (every exposed tensor is kept)."""
MAX_SECONDS = 120.0
_ELEMENT_BYTES = {1: 4, 2: 1, 3: 1, 4: 2, 5: 2, 6: 4, 7: 8, 9: 1, 10: 2, 11: 8, 12: 4, 13: 8, 16: 2}


def _static_dims(tp: onnx.TypeProto) -> list[int] | None:
    if not tp.HasField("tensor_type") or not tp.tensor_type.HasField("shape"):
        return None
    dims = tp.tensor_type.shape.dim
    return [int(d.dim_value) for d in dims] if all(d.HasField("dim_value") for d in dims) else None


def installed() -> bool:
    """Whether onnxruntime can be imported (checked without importing it)."""
    import importlib.util

    return importlib.util.find_spec("onnxruntime") is not None


def fill(path: Path, proto: onnx.ModelProto) -> str:
    """Complete the main graph's value_info from an onnxruntime run where static inference left shapes out.

    Returns the one line to tell the user (which path gave the shapes, or why the run was not made), or "" when
    nothing was missing or some input dim is still free (the n/a hints say which to pin).
    """
    graph = proto.graph
    initializers = {t.name for t in graph.initializer}
    inputs: dict[str, list[int]] = {}
    for vi in graph.input:
        if vi.name in initializers:
            continue
        dims = _static_dims(vi.type)
        if dims is None:
            return ""
        inputs[vi.name] = dims
    types = {vi.name: vi.type for vi in list(graph.value_info) + list(graph.output)}
    used = _read(graph) | {o.name for o in graph.output}  # an output nothing reads (Dropout's mask) is not worth a run
    missing = [name for node in graph.node for name in node.output
               if name in used and (name not in types or _static_dims(types[name]) is None)]
    if not missing:
        return ""
    count = f"{len(missing)} tensors have" if len(missing) > 1 else "1 tensor has"
    what = f"{path}: {count} shapes static inference cannot reach (they depend on computed values)"
    if not installed():
        return f"{what}; pip install 'annograph[ort]' to take them from one onnxruntime run"
    size = _model_bytes(path, proto)
    if size > MAX_MODEL_BYTES:
        return f"{what}; the model is over {format_bytes(MAX_MODEL_BYTES)}, too large to run for them"
    known = sum(math.prod(dims) * _ELEMENT_BYTES.get(tp.tensor_type.elem_type, 4)
                for tp in types.values() if (dims := _static_dims(tp)) is not None)
    if known > MAX_ACTIVATION_BYTES:
        return (f"{what}; its activations are over {format_bytes(MAX_ACTIVATION_BYTES)}, too large to run for them "
                "(pin smaller input dims)")
    input_types = {vi.name: vi.type.tensor_type.elem_type for vi in graph.input}
    feeds = sum(math.prod(dims) * _ELEMENT_BYTES.get(input_types.get(name, 0), 4) for name, dims in inputs.items())
    limit = isolated.limits(size + known + feeds, MAX_SECONDS)
    request = {"path": str(path), "inputs": inputs, "outputs": missing}
    answer, reason = isolated.run(__name__, request, "onnxruntime", "to run the model", limit)
    if reason:
        return f"{what}; onnxruntime could not run it for them: {reason}"
    found = _write_shapes(graph, answer["shapes"])
    return (f"{path}: shapes of {found} of {len(missing)} tensors that static inference cannot reach were taken "
            "from one onnxruntime run on zero inputs")


def _read(graph: onnx.GraphProto) -> set[str]:
    """Every tensor name the nodes of ``graph`` and of its subgraphs read."""
    names: set[str] = set()
    for node in graph.node:
        names.update(node.input)
        for attr in node.attribute:
            for sub in [attr.g] if attr.HasField("g") else attr.graphs:
                names |= _read(sub)
    return names


def _model_bytes(path: Path, proto: onnx.ModelProto) -> int:
    """The file's size plus its external data files."""
    import onnx

    total = path.stat().st_size
    seen: set[str] = set()
    for tensor in proto.graph.initializer:
        if tensor.data_location == onnx.TensorProto.EXTERNAL:
            location = next((e.value for e in tensor.external_data if e.key == "location"), "")
            if location and location not in seen:
                seen.add(location)
                try:
                    total += (path.parent / location).stat().st_size
                except OSError:
                    pass
    return total


def _write_shapes(graph: onnx.GraphProto, shapes: dict[str, list[Any]]) -> int:
    """Set the dims of value_info / outputs to the shapes the run gave; the number of tensors given one."""
    from onnx import helper

    entries = {vi.name: vi for vi in list(graph.value_info) + list(graph.output)}
    for name, (elem_type, dims) in sorted(shapes.items()):
        entry = entries.get(name)
        if entry is None:
            entry = graph.value_info.add()
            entry.CopyFrom(helper.make_tensor_value_info(name, int(elem_type), dims))
            continue
        tensor = entry.type.tensor_type
        if not tensor.elem_type:
            tensor.elem_type = int(elem_type)
        tensor.shape.Clear()
        for size in dims:
            tensor.shape.dim.add().dim_value = int(size)
    return len(shapes)


def _run(request: dict[str, Any]) -> dict[str, Any]:
    """The child: the model with the missing tensors as outputs, run once on zeros."""
    import numpy as np
    import onnx
    import onnxruntime as ort
    from onnx import helper

    try:
        model = onnx.load(request["path"])
        types = {vi.name: vi.type.tensor_type.elem_type for vi in model.graph.input}
        outputs = {o.name for o in model.graph.output}
        for name in request["outputs"]:
            if name not in outputs:
                model.graph.output.append(onnx.ValueInfoProto(name=name))
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        options.log_severity_level = 3
        session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
        del model
        feeds = {}
        for name, dims in request["inputs"].items():
            dtype = helper.tensor_dtype_to_np_dtype(types[name])
            feeds[name] = np.full(dims, "", dtype=object) if dtype.kind in "OSU" else np.zeros(dims, dtype=dtype)
        names = [o.name for o in session.get_outputs()]
        results = session.run(names, feeds)
    except Exception as e:  # noqa: BLE001 (onnxruntime raises its own Fail/InvalidArgument/RuntimeException…)
        if isolated.allocation_failed(str(e)):
            return {"error": isolated.over_memory("onnxruntime", request["limits"])}
        return {"error": first_line(e, 200)}
    wanted = set(request["outputs"])
    shapes = {}
    for name, result in zip(names, results):
        if name in wanted and isinstance(result, np.ndarray):
            try:
                elem_type = helper.np_dtype_to_tensor_dtype(result.dtype)
            except (KeyError, ValueError, TypeError):
                elem_type = onnx.TensorProto.UNDEFINED
            shapes[name] = [int(elem_type), [int(d) for d in result.shape]]
    return {"shapes": shapes}


if __name__ == "__main__":
    isolated.serve(_run, "onnxruntime", ("numpy", "onnx", "onnxruntime"))
