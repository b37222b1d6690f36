"""Every port's shape of an OpenVINO IR whose inputs are pinned, by OpenVINO itself: ``Model.reshape`` to the
pinned input shapes re-runs each operation's shape rules (``validate_and_infer_types``), and the ports' shapes
are read back. ``openvino`` is optional (``pip install openvino``; the ``test`` extra has it) and runs in a child
process under ``isolated``'s resource policy, like onnxruntime's and LiteRT's shape runs; a render keeps its answer
in the results cache (``isolated.remembered``), keyed by the ``.xml`` and ``.bin`` bytes, the input shapes and
openvino's version, so a re-render starts no child."""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from renderer.core.errors import first_line
from renderer.core.escape import clean
from renderer.loaders import isolated

MAX_SECONDS = 120.0
Shapes = dict[str, list[list[int] | None]]
"""Layer name → each output's dims (-1 where OpenVINO still finds a dim dynamic), None for a dynamic rank."""


def installed() -> bool:
    """Whether openvino can be imported (checked without importing it)."""
    return importlib.util.find_spec("openvino") is not None


def reshaped(path: Path, inputs: Mapping[str, Sequence[int]]) -> tuple[Shapes, set[str], str]:
    """The output shapes of every layer of the IR at ``path`` once its ``Parameter`` layers (by name) take
    ``inputs``' shapes, the layer names found more than once (their shapes are not told apart), and "" — or
    ``({}, set(), why not)`` in one line."""
    weights = path.with_suffix(".bin")
    files = [path, weights] if weights.is_file() else [path]
    shapes = {name: list(shape) for name, shape in inputs.items()}
    kept = isolated.Kept("openvino shapes", files, {"inputs": shapes, "openvino": isolated.version("openvino")},
                         lambda found: _lasting(found, path))
    answer, reason = isolated.remembered(kept, __name__, {"path": str(path), "inputs": shapes}, "OpenVINO",
                                         "to reshape the model",
                                         lambda: isolated.limits(sum(f.stat().st_size for f in files), MAX_SECONDS))
    if reason:
        return {}, set(), reason
    found: Shapes = {}
    repeated: set[str] = set()
    for name, outputs in answer.get("shapes", []):
        if name in found:
            repeated.add(name)
        found[str(name)] = [None if dims is None else [int(d) for d in dims] for dims in outputs]
    return found, repeated, ""


def _lasting(answer: dict[str, Any], path: Path) -> bool:
    """Whether another run on the same bytes would give ``answer``: not one over memory, nor an error naming this
    copy's path (the key holds the bytes, not where they lie), nor openvino missing in the child."""
    error = str(answer.get("error", ""))
    return not (answer.get("memory") or str(path.with_suffix("")) in error or "openvino is not installed" in error)


def _reshape(request: dict[str, Any]) -> dict[str, Any]:
    try:
        import openvino
    except ImportError:
        return {"error": "openvino is not installed (pip install openvino)"}
    try:
        model = openvino.Core().read_model(request["path"])
        parameters = {p.get_friendly_name(): p for p in model.get_parameters()}
        missing = [name for name in request["inputs"] if name not in parameters]
        if missing:
            return {"error": f"OpenVINO finds no input layer {clean(missing[0], 80)!r}"}
        model.reshape({parameters[name].output(0): openvino.PartialShape(shape)
                       for name, shape in request["inputs"].items()})
        shapes = []
        for op in model.get_ordered_ops():
            outputs = []
            for index in range(op.get_output_size()):
                shape = op.get_output_partial_shape(index)
                outputs.append(None if shape.rank.is_dynamic else
                               [d.get_length() if d.is_static else -1 for d in shape])
            shapes.append([op.get_friendly_name(), outputs])
    except Exception as e:  # noqa: BLE001 (OpenVINO raises RuntimeError, its own Exception types…)
        if isolated.allocation_failed(str(e)):
            return {"error": isolated.over_memory("OpenVINO", request["limits"]), "memory": True}
        return {"error": f"OpenVINO cannot reshape the model to these input shapes ({first_line(e, 200)})"}
    return {"shapes": shapes}


if __name__ == "__main__":
    isolated.serve(_reshape, "OpenVINO", ("numpy", "openvino"))
