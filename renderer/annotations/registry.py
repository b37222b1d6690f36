"""The readers' registry: one line per source (``READERS``, tried in that order; ``generic`` is last and matches
anything), the reader of a file (``reader_of``), and ``load_annotations``, which reads a model's files, sidecars
and embedded values and merges them (``merge``). What a reader module provides is ``protocol.Reader``."""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from pathlib import Path
from typing import cast

from renderer.annotations.merge import merge
from renderer.annotations.protocol import Reader
from renderer.core.errors import AnnotationError
from renderer.core.ir import Model
from renderer.core.records import Annotations, AnnotationSet
from renderer.files import inputs

# Modules under renderer.annotations.readers, each meeting ``protocol.Reader`` (imported lazily, by name). The fuzz
# and injection tests iterate over this tuple, so every reader added here is covered.
READERS: tuple[str, ...] = (
    "ort_profile", "etdump", "tflite_benchmark", "vela", "openvino_counters", "openvino_exec_graph",
    "tensorrt_profile", "tflite_quant_debug",
    "ort_qdq_loss", "onnx_tool_csv", "netron_attachment", "model_explorer", "generic",
)

SIGNS: dict[str, tuple[str, ...]] = {
    "ort_profile": ('"cat"',), "etdump": ("ED00",),
    "tflite_benchmark": ("Operator-wise Profiling Info for Regular Benchmark Runs", "Run Order"),
    "vela": (",NNG Operator,",), "openvino_counters": ("layerName;execStatus;layerType;execType;",),
    "openvino_exec_graph": ("<net ",), "tensorrt_profile": ('"count"',), "tflite_quant_debug": ("op_name,tensor_idx,",),
    "ort_qdq_loss": ("{",), "onnx_tool_csv": ("Name,Type,Forward_MACs",), "netron_attachment": ("netron:attachment",),
    "model_explorer": ('"results"',), "generic": (),
}
"""Per reader, text its ``match`` cannot take a file without (one of them at least; none: any file): ``reader_of``
imports and asks only the readers whose text the file's head holds, so a generic CSV imports one reader, not all
of them. ``tests/unit/annotations/test_registry.py`` checks each against every file its reader takes."""

HEAD_CHARS = 4096


def reader_modules() -> list[Reader]:
    return [_module(name) for name in READERS]


def _module(name: str) -> Reader:
    return cast(Reader, importlib.import_module(f"renderer.annotations.readers.{name}"))


def signed(name: str, head: str) -> bool:
    """True when ``head`` holds one of reader ``name``'s ``SIGNS`` (or it has none): its ``match`` may take it."""
    signs = SIGNS[name]
    return not signs or any(sign in head for sign in signs)


def reader(name: str) -> Reader:
    """The reader module called ``name`` (its NAME), or AnnotationError listing the known ones."""
    for module in reader_modules():
        if module.NAME == name:
            return module
    known = ", ".join(m.NAME for m in reader_modules())
    raise AnnotationError(f"unknown annotation format {name!r} (known: {known})")


def _head(path: Path) -> str:
    """The first HEAD_CHARS bytes as text. From a pipe or device, a NUL byte there marks no text (``/dev/zero``,
    ``/dev/urandom``): refused before a reader reads on until the limit. (Regular files are the readers' call:
    a tool's text output may carry a NUL in a name.)"""
    data = inputs.head(path, HEAD_CHARS, AnnotationError, "an annotation file")
    if b"\x00" in data and inputs.is_stream(path) and not any(
            module.match_bytes(data) for module in reader_modules() if hasattr(module, "match_bytes")):
        raise AnnotationError(f"{path}: binary file, not an annotation file")
    return data.decode("utf-8-sig", "replace")


def read_file(path: str | Path, model: Model, fmt: str | None = None) -> AnnotationSet:
    """Read one annotation file, detecting its source from its content unless ``fmt`` names it."""
    with inputs.reading(path):  # an out-of-memory error names it
        return reader_of(path, fmt).read(Path(path), model)


def reader_of(path: str | Path, fmt: str | None = None) -> Reader:
    """The reader of one annotation file: ``fmt``'s, else the first whose ``match`` takes its first bytes."""
    path = Path(path)
    head = _head(path)
    if fmt:
        return reader(fmt)
    for name in READERS:
        if signed(name, head) and (module := _module(name)).match(path, head):
            return module
    raise AnnotationError(f"{path}: not a known annotation format")  # unreachable: generic matches all


def shape_profiles(model_path: str | Path, paths: Sequence[str | Path], fmt: str | None = None,
                   sidecar: bool = True) -> list[Path]:
    """The onnxruntime profiles among the annotation files a render of ``model_path`` reads (its sidecars, then
    ``paths``): the loader takes the shapes they recorded (``loaders.profile_shapes``)."""
    from renderer.annotations.sidecar import sidecars

    found = [p for p in sidecars(model_path) if str(p) not in map(str, paths)] if sidecar else []
    return [Path(p) for p in [*found, *paths] if reader_of(p, fmt).NAME == "ort"]


def load_annotations(
    paths: str | Path | list[str | Path], model: Model, fmt: str | None = None, strict: bool = False,
    extra: list[AnnotationSet] | None = None, sidecar: bool = True, embedded: bool = True,
) -> Annotations:
    """Read annotation files and merge them onto ``model``, with the model's own annotations and its sidecars,
    as ``annograph render`` does.

    Args:
        paths: one file or several; later files win for the same value of the same source.
        model: the loaded model the ids refer to.
        fmt: force a reader by NAME instead of detecting it (sidecars included).
        strict: raise AnnotationError when an id matches nothing, instead of reporting it in coverage.
        extra: sets already read (built-in metrics, say), merged after the model's own annotations.
        sidecar: also read ``MODEL.annotations.*`` / ``MODEL.onnx.annotations.*`` beside the model, before
            ``paths`` (listed in the result's ``sidecars``).
        embedded: also read the annotations stored in the model file (``annograph embed``, ONNX
            ``metadata_props``), merged first.
    """
    from renderer.annotations.embedded import from_model
    from renderer.annotations.sidecar import sidecars

    if isinstance(paths, (str, Path)):
        paths = [paths]
    files = [str(p) for p in paths]
    found = [str(p) for p in sidecars(model.path) if str(p) not in files] if sidecar and model.path else []
    own = from_model(model) if embedded else []
    sets = own + list(extra or []) + [read_file(p, model, fmt) for p in found + files]
    result = merge(sets, model, strict=strict)
    result.sidecars = found
    return result


def input_paths(model: Model, annotations: Annotations | None = None) -> list[str]:
    """The files a render of ``model`` with ``annotations`` read: the model and its external data files, then
    every annotation source (sidecars, ``-a`` files and the files their readers found beside them). Outputs
    must never be one of them (``atomic.refuse_inputs``, the output plan's ``with_inputs``)."""
    files = [model.path, *model_files(model)]
    if annotations is not None:
        files += [*annotations.sidecars, *(c.path for c in annotations.coverage if c.path), *annotations.read]
    return list(dict.fromkeys(files))


def model_files(model: Model) -> list[str]:
    """The files ``model`` keeps its weights in besides its own (ONNX external data), beside the model, then the
    other files its load read (``Model.side_files``: an ExecuTorch program's ETRecord)."""
    folder = Path(model.path).parent
    found = {value.initializer.location for graph in model.graphs for value in graph.values
             if value.initializer is not None and getattr(value.initializer, "location", None)}
    weights = [str(folder / location) for location in sorted(found) if location != "?"]
    return list(dict.fromkeys([*weights, *model.side_files]))
