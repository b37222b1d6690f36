"""Shapes of a TFLite model with its dynamic input dimensions pinned, propagated by LiteRT itself.

TFLite files store each tensor's shape with dynamic dimensions written as 1 (``shape_signature`` keeps -1).
Pinning ``--dim batch=2 --dim axis1=128`` on the inputs only helps the metrics if the operators' output
shapes follow, and that needs each kernel's shape rules: the runtime's ``ResizeInputTensor`` +
``AllocateTensors`` runs them. This is optional (``ai-edge-litert``, or the older ``tflite-runtime``); without
it, or when the runtime cannot prepare the model (custom ops), the loader falls back to pinning every
tensor's dynamic dimensions by position.

``--inputs FILE.npz`` goes one step further: the inputs are resized to the arrays' shapes and the model runs once
on them (``Invoke``), so tensors whose size only the values decide (a ``RESHAPE`` to a shape read from an input,
``RANGE``, ``WHERE``) get the size of that run too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from renderer.core.errors import first_line
from renderer.loaders import isolated


def axis_value(dims: Mapping[str, int], axis: int) -> int | None:
    """The pinned size of dynamic axis ``axis``: ``axisK``, and ``batch`` for axis 0."""
    value = dims.get(f"axis{axis}")
    if value is None and axis == 0:
        value = dims.get("batch")
    return None if value is None else int(value)


def pin(shape: Sequence[int], signature: Sequence[int] | None, dims: Mapping[str, int]) -> tuple[int, ...]:
    """``shape`` with each -1 axis of ``signature`` that ``dims`` names replaced."""
    if not dims or signature is None or len(signature) != len(shape):
        return tuple(shape)
    pinned = []
    for axis, (size, declared) in enumerate(zip(shape, signature)):
        value = axis_value(dims, axis) if declared == -1 else None
        pinned.append(size if value is None else value)
    return tuple(pinned)


def _interpreter(path: Path):  # type: ignore[no-untyped-def]
    try:
        from ai_edge_litert import interpreter as litert
    except ImportError:
        try:
            from tflite_runtime import interpreter as litert  # type: ignore[no-redef]
        except ImportError:
            return None, "no TFLite runtime installed (pip install ai-edge-litert)"
    kind = getattr(litert, "OpResolverType", None)
    options = {"experimental_op_resolver_type": kind.BUILTIN_WITHOUT_DEFAULT_DELEGATES} if kind else {}
    try:  # no delegate: a delegated partition hides its inner tensors' shapes
        return litert.Interpreter(model_path=str(path), **options), ""
    except Exception as e:  # noqa: BLE001 (the runtime raises RuntimeError, ValueError… on what it cannot run)
        return None, f"LiteRT cannot load the model ({first_line(e, 200)})"


def propagate(path: Path, inputs: Mapping[int, tuple[int, ...]],
              feeds: Mapping[int, Any] | None = None) -> tuple[dict[int, tuple[int, ...]], str]:
    """Resize main-graph input tensors (tensor index → new shape) and return every main-graph tensor's shape
    after LiteRT prepared the model, or ``({}, reason)`` when it cannot. With ``feeds`` (tensor index → array, of
    those shapes) the model also runs once on them, and the shapes are those after the run. LiteRT runs in a
    child process (``isolated``), its memory from the file's size and the new input shapes."""
    import math

    request = {"path": str(path), "inputs": {str(k): list(v) for k, v in inputs.items()}}
    known = path.stat().st_size + sum(8 * math.prod(shape) for shape in inputs.values())
    arrays = {str(k): v for k, v in feeds.items()} if feeds is not None else None
    answer, reason = isolated.run(__name__, request, "LiteRT", "to run the model" if feeds else "to prepare the model",
                                  isolated.limits(known, MAX_SECONDS), arrays)
    if reason:
        return {}, reason
    return {int(k): tuple(int(x) for x in v) for k, v in answer["shapes"].items()}, ""


MAX_SECONDS = 120.0


def read_feeds(npz: Path, inputs: Sequence[Any]) -> dict[int, Any]:
    """The arrays of ``npz`` for the main graph's ``inputs`` (``ir.Value``s: each there by tensor name, nothing
    else, cast to the tensor's type), keyed by tensor index, each checked against the input's fixed axes (those
    not -1 in its shape signature); an AnnographError naming the file otherwise."""
    import numpy as np

    from renderer.core.errors import AnnographError
    from renderer.core.escape import clean
    from renderer.loaders.feeds import InputSpec, fixed_sizes, load_feeds

    specs = []
    for value in inputs:
        try:
            dtype = np.dtype(value.type.dtype) if value.type else None
        except TypeError:
            dtype = None
        if dtype is None or dtype.kind not in "biuf":
            raise AnnographError(f"{npz}: the model's input {clean(value.name, 80)!r} is not a tensor of numbers, "
                                 "which --inputs cannot feed")
        declared = value.type.shape_signature or value.type.shape
        specs.append(InputSpec(value.name, (), dtype.name, fixed_sizes(declared)))  # checked before inflating
    feeds = load_feeds(npz, specs)
    by_index = {}
    for value in inputs:
        shape = feeds[value.name].shape
        declared = value.type.shape_signature or value.type.shape if value.type else None
        if declared is not None and (len(declared) != len(shape) or any(
                size not in (-1, given) for size, given in zip(declared, shape))):
            got = "×".join(map(str, shape)) or "scalar"
            wanted = "×".join("?" if size == -1 else str(size) for size in declared) or "scalar"
            raise AnnographError(f"{npz}: array {clean(value.name, 80)!r} is {got}, but the model's input is {wanted}")
        by_index[value.index] = feeds[value.name]
    return by_index


def _prepare(request: dict[str, Any]) -> dict[str, Any]:
    interpreter, reason = _interpreter(Path(request["path"]))
    if interpreter is None:
        return {"error": reason}
    try:
        for index, shape in request["inputs"].items():
            interpreter.resize_tensor_input(int(index), shape, strict=True)
        interpreter.allocate_tensors()
    except Exception as e:  # noqa: BLE001
        return {"error": f"LiteRT cannot prepare the model with these shapes ({first_line(e, 200)})"}
    if "feeds" in request:
        reason = _invoke(interpreter, request)
        if reason:
            return {"error": reason}
    details = interpreter.get_tensor_details()
    return {"shapes": {str(d["index"]): [int(x) for x in d["shape"]] for d in details}}


def _invoke(interpreter: Any, request: dict[str, Any]) -> str:
    """Set the inputs to the request's arrays and run the model once; why not, or ""."""
    import numpy as np

    try:
        with np.load(request["feeds"], allow_pickle=False) as data:
            for name in data.files:
                interpreter.set_tensor(int(name), data[name])
        interpreter.invoke()
    except Exception as e:  # noqa: BLE001
        if isolated.allocation_failed(str(e)):
            return isolated.over_memory("LiteRT", request["limits"])
        return f"LiteRT could not run the model on these inputs ({first_line(e, 200)})"
    return ""


if __name__ == "__main__":
    isolated.serve(_prepare, "LiteRT", ("numpy", "ai_edge_litert.interpreter", "tflite_runtime.interpreter"))
