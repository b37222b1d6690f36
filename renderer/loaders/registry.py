"""The loaders' registry: one line per format (``LOADERS``), the loader of a file chosen by magic bytes first and
extension second (``detect``), and ``load_model``, the one entry every command and the API load a model through.
What a loader module provides is ``protocol.Loader``."""

from __future__ import annotations

import contextlib
import importlib
import math
from collections.abc import Sequence
from pathlib import Path
from typing import cast

from renderer.core.errors import LoaderError
from renderer.core.ir import Model
from renderer.files import inputs
from renderer.loaders.protocol import Loader, RealValues

# One line per format: its package under renderer.loaders (the module ``loader`` in it meets ``protocol.Loader``;
# imported lazily: onnx and flatbuffers are heavy). The fuzz and injection tests iterate over this list.
LOADERS: tuple[str, ...] = ("tflite", "onnx", "executorch", "torch_export", "tensorrt", "openvino", "openvino_exec")

ETRECORD_FORMAT = "executorch"
"""The format ``load_model``'s ``etrecord`` is for (an ETRecord names an ExecuTorch program's operators)."""
HEAD_BYTES = 4096
"""What ``match`` sees: enough for an OpenVINO XML's first layer, which tells an IR from an execution graph."""
MAX_ELEMENTS = 2**63 - 1
"""No tensor can hold more elements than an int64 counts; a shape declaring more is corrupt (and its counts
would overflow every float they reach)."""


def decode_text(raw: str | bytes | None) -> str:
    """A string field as text: flatbuffers strings and proto2 string fields with invalid UTF-8 come back as
    bytes; undecodable bytes become U+FFFD."""
    if raw is None:
        return ""
    return raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw


def loader_modules() -> list[Loader]:
    return [_loader(name) for name in LOADERS]


def _loader(name: str) -> Loader:
    return cast(Loader, importlib.import_module(f"renderer.loaders.{name}.loader"))


def detect(path: Path) -> Loader:
    """Return the loader for ``path``: by content, falling back to the extension (for regular files: a pipe's
    or device's name says nothing, and reading one that is no model could go on for ever)."""
    head = inputs.head(path, HEAD_BYTES, LoaderError, "a model file")
    if not head:
        raise LoaderError(f"{path}: empty file")
    for name in LOADERS:  # in order, each imported when the ones before did not match (most files are the first two)
        module = _loader(name)
        if module.match(head):
            return module
    if inputs.is_stream(path):
        raise LoaderError(f"{path}: not a regular file, and not ONNX or TFLite by content")
    suffix = path.suffix.lower()
    modules = loader_modules()
    for module in modules:
        if suffix in module.EXTENSIONS:
            return module
    known = ", ".join(ext for m in modules for ext in m.EXTENSIONS)
    raise LoaderError(f"{path}: unknown model format (not ONNX or TFLite by content; known extensions: {known})")


def refuse_impossible_shapes(model: Model, path: Path) -> Model:
    """``model``, or a LoaderError naming the first tensor whose declared shape holds more than MAX_ELEMENTS."""
    from renderer.core.escape import clean

    for graph in model.graphs:
        for value in graph.values:
            shapes = [value.type.shape if value.type else None, value.initializer.shape if value.initializer else None]
            for shape in shapes:
                if shape and math.prod(d for d in shape if isinstance(d, int) and d > 0) > MAX_ELEMENTS:
                    dims = "×".join(str(d) for d in shape)
                    raise LoaderError(f"{path}: tensor {clean(value.name, 80)!r} declares {clean(dims, 80)} "
                                      "elements, more than any tensor can hold (a corrupt file?)")
    return model


def load_model(path: str | Path, dims: dict[str, int] | None = None, *, check_dims: bool = True,
               shape_run: bool = True, inputs: str | Path | None = None,
               profiles: Sequence[str | Path] = (), assume_dims: bool = True,
               etrecord: str | Path | None = None) -> Model:
    """Load an ONNX or TFLite model into the IR.

    Args:
        path: the model file.
        dims: values for the model's free input dims (``batch=1``; a TFLite model's by axis, ``axis1=128``),
            used for shapes.
        check_dims: a ``dims`` name that is no free input dim of the model is an error; with False it is left
            out (for runs over several models, which check the names against all of them: ``check_dims``).
        shape_run: False leaves out the runtime run for shapes static inference cannot reach (``compare`` runs
            the models itself).
        inputs: an ``.npz`` file with one array per model input: shapes that depend on input values come from
            one run on them (onnxruntime, profiled for the shapes inside If/Loop/Scan bodies; LiteRT for TFLite,
            its inputs resized to the arrays).
        profiles: onnxruntime profiles of the model: shapes come from those they recorded (ONNX).
        assume_dims: free input dims that ``dims``, ``inputs`` and ``profiles`` leave free are given a value
            (``free_dims``: batch 1, sequence 128…; TFLite: the file's placeholder), listed in
            ``Model.assumed_dims``; with False they stay free, and costs that need them are n/a.
        etrecord: an ExecuTorch program's ETRecord, instead of the one beside it (``--etrecord``); for another
            format an error.

    Raises:
        LoaderError: missing, unknown or corrupt file, or a ``dims`` name it cannot pin, with the path in the
            message.
    """
    path = Path(path)
    module = detect(path)
    values = RealValues(Path(inputs) if inputs is not None else None, tuple(Path(p) for p in profiles))
    from renderer.files.inputs import reading  # (``inputs`` is the .npz argument here)

    companions: dict[str, Path] = {}
    if etrecord is not None:
        if module.FORMAT != ETRECORD_FORMAT:
            raise LoaderError(f"{path}: --etrecord {etrecord} is for ExecuTorch programs (.pte); this is a "
                              f"{module.FORMAT} model")
        companions["etrecord"] = Path(etrecord)
    with reading(path):  # an out-of-memory error names the model
        return module.load(path, dims=dims, check_dims=check_dims, shape_run=shape_run, values=values,
                           assume=assume_dims, **companions)


def etrecords_for(models: Sequence[str], given: Sequence[str]) -> dict[str, str]:
    """Model path → the ETRecord ``--etrecord`` gives it: the ``given`` files in the order of the ExecuTorch
    programs among ``models`` (one each; a model that cannot be read is left for its load to report).

    Raises:
        UsageError: not as many ETRecords as ExecuTorch programs.
    """
    from renderer.core.errors import UsageError

    if not given:
        return {}
    programs: list[str] = []
    for model in dict.fromkeys(models):
        with contextlib.suppress(LoaderError):
            if detect(Path(model)).FORMAT == ETRECORD_FORMAT:
                programs.append(model)
    if len(programs) != len(given):
        some = f"{len(programs)} ExecuTorch program{'s' if len(programs) != 1 else ''} (.pte)"
        raise UsageError(f"--etrecord is given {len(given)} time{'s' if len(given) != 1 else ''} for {some} among "
                         "the models: give one ETRecord per program, in the programs' order")
    return dict(zip(programs, given))


def check_dims(paths: list[str] | list[Path], dims: dict[str, int]) -> None:
    """An AnnographError naming the files when a ``dims`` name is a free input dim of none of the models at
    ``paths`` that can be read; each file's own problems are left for its load to report."""
    from renderer.core.pinning import check_union

    read: dict[str | Path, list[str]] = {}
    for path in paths if dims else []:
        with contextlib.suppress(LoaderError):
            read[path] = detect(Path(path)).pinnable(Path(path))
    if read:
        check_union(list(read), dims, list(read.values()))
