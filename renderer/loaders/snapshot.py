"""A loaded model kept in the results cache (``files.disk_cache``), so that a re-render with new numbers neither
imports onnx nor parses, infers or runs the model again (issue 30).

``load`` looks the model up by the bytes of every file the load reads (the model, ``--inputs``, the profiles,
the external data the model names) and by every load setting; a miss loads it as ever and keeps a snapshot.
The snapshot is the IR flattened to tuples (operators and tensors named by their graph and index, so no chain
of operators nests in the pickle), with small constants' bytes; a larger constant's data is read, when some
pass asks for it, from a fresh load of the file (``_Reload``), so a restored model reads the very values the
loaded one does. The entry is an HMAC-checked ``DiskCache`` entry like every other; it is unpickled only with
the classes of the IR and numpy's arrays allowed (``_Restricted``): anything else is a miss, loaded anew and
written over. Only ONNX and TFLite models are kept (the formats whose every input file is listed here).
"""

from __future__ import annotations

import io
import os
import pickle
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

from renderer.core import ir

KIND = "loaded model"
FORMATS = ("onnx", "tflite")
SMALL = 4096
"""Constants of at most this many elements (of a plain dtype) keep their bytes in the snapshot."""
RUNTIMES = ("onnx", "onnxruntime", "tflite_runtime", "ai_edge_litert", "tensorflow")
"""Packages whose install decides shapes (shape inference, shape runs): the key holds their files' stat."""
_PLAIN = frozenset({"float16", "float32", "float64", "int8", "uint8", "int16", "uint16", "int32", "uint32",
                    "int64", "uint64", "bool"})
_RELOADED: dict[str, ir.Model] = {}
_KEYED: list[tuple[ir.Model, list[Path], dict[str, Any]]] = []
"""The last models restored or kept here, with the files and fields of their snapshot's key (``recall``)."""


def load(path: Path, settings: dict[str, Any], files: list[Path], fresh: Callable[[], ir.Model]) -> ir.Model:
    """The model ``fresh()`` loads from ``path`` with ``settings`` (plain values, every one that changes the
    load) reading ``files`` besides it: from the results cache when a snapshot of it is kept there and every
    file it read is unchanged, else ``fresh()``'s, then kept. Outside a render's cache (``disk_cache.using``)
    always ``fresh()``."""
    from renderer.files import disk_cache

    if disk_cache.results() is None or not all(_regular(p) for p in [path, *files]):
        return fresh()  # (a pipe's bytes are not hashed: reading them is the load's)
    fields = {"path": str(path), "settings": settings, "runtimes": _runtimes()}
    found = disk_cache.recall_bytes(KIND, [path, *files], fields)
    model = _restore(found, path, settings, fresh) if found is not None else None
    if model is not None:
        from renderer.core.progress import detail

        detail("load: the model as loaded before, from the results cache")
        _key(model, [path, *files], fields)
        return model
    from renderer.loaders.isolated import passing

    before = passing()
    model = fresh()
    if model.format in FORMATS and passing() == before:  # (a run stopped over time or memory: not kept)
        data = snapshot(model, settings)
        if data is not None:
            disk_cache.keep_bytes(KIND, [path, *files], fields, data)
            _key(model, [path, *files], fields)
    return model


def _key(model: ir.Model, files: list[Path], fields: dict[str, Any]) -> None:
    _KEYED[:] = [(model, files, fields), *(kept for kept in _KEYED if kept[0] is not model)][:2]


def _where(model: ir.Model) -> tuple[list[Path], dict[str, Any]] | None:
    return next(((files, fields) for kept, files, fields in _KEYED if kept is model), None)


def keyed(model: ir.Model) -> bool:
    """True when ``model`` was restored here or kept here by this process's load: results made of it alone can
    be kept under its snapshot's key (``recall``, ``keep``)."""
    return _where(model) is not None


def recall(model: ir.Model, kind: str) -> Any | None:
    """The result of ``kind`` kept for ``model`` (plain JSON, ``disk_cache.recall``) under its snapshot's key: the
    bytes of every file its load read, its settings and the code (a result of the model alone, no other input, so
    a model loaded the same way has it); None when not kept or ``model`` is not ``keyed``."""
    from renderer.files import disk_cache

    where = _where(model)
    return None if where is None else disk_cache.recall(kind, *where)


def keep(model: ir.Model, kind: str, value: Any) -> None:
    """Keep ``value`` (plain JSON) as the result of ``kind`` for ``model`` (``recall``); nothing when not ``keyed``."""
    from renderer.files import disk_cache

    where = _where(model)
    if where is not None:
        disk_cache.keep(kind, *where, value)


def _regular(path: Path) -> bool:
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


def _runtimes() -> list[list[Any]]:
    """Where each of ``RUNTIMES`` is installed and its files' stat (a reinstall changes them), without importing
    any of them."""
    from importlib.util import find_spec

    found = []
    for name in RUNTIMES:
        try:
            spec = find_spec(name)
        except (ImportError, ValueError):
            spec = None
        origin = spec.origin if spec is not None else None
        try:
            info = os.stat(origin) if origin else None
        except OSError:
            info = None
        found.append([name, origin, [info.st_size, info.st_mtime_ns, info.st_ino] if info else None])
    return found


def snapshot(model: ir.Model, settings: dict[str, Any]) -> bytes | None:
    """The pickled snapshot of ``model``, or None when it holds something ``_Restricted`` would refuse."""
    from renderer.files import disk_cache

    try:
        depends = [[str(p), disk_cache.file_digest(p) if p.is_file() else None] for p in _external(model)]
    except OSError:
        return None
    tensors: dict[int, ir.Tensor | None] = {}
    state = {
        "model": {name: getattr(model, name) for name in _MODEL_FIELDS},
        "attachments": {name: bytes(data) for name, data in model.attachments.items()},
        "graphs": [_graph_state(graph, tensors, str(model.path), settings) for graph in model.graphs],
        "depends": depends,
    }
    buffer = io.BytesIO()
    try:
        _Checked(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump(state)
    except (pickle.PicklingError, TypeError, AttributeError, RecursionError):
        return None
    return buffer.getvalue()


_MODEL_FIELDS = ("format", "path", "producer", "version", "description", "metadata", "signatures", "opsets",
                 "notes", "pinnable_dims", "pinned_dims", "assumed_dims", "side_files")


def _external(model: ir.Model) -> list[Path]:
    """The external-data files an ONNX model names (read or found missing by the load)."""
    if model.format != "onnx":
        return []
    from renderer.loaders.onnx.loader import Loaded
    from renderer.loaders.onnx.ort_shapes import external_files

    return external_files(Path(model.path), model.raw.proto) if isinstance(model.raw, Loaded) else []


def _ref(item: ir.Node | ir.Value | None) -> tuple[int, int] | None:
    return None if item is None else (item.graph.index, item.index)


def _graph_state(graph: ir.Graph, tensors: dict[int, ir.Tensor | None], path: str,
                 settings: dict[str, Any]) -> tuple[Any, ...]:
    values = [(v.name, v.type, _tensor(v, tensors, path, settings), v.quantization, _ref(v.producer),
               [_ref(c) for c in v.consumers], v.is_input, v.is_output, v.metadata) for v in graph.values]
    nodes = [(n.op_type, n.domain, n.name, n.category, [_ref(i) for i in n.inputs], n.input_names,
              [_ref(o) for o in n.outputs], n.attributes, n.defaults, [g.index for g in n.subgraphs], n.metadata,
              n.title) for n in graph.nodes]
    return (graph.name, graph.not_run, graph.value_sized, _ref(graph.parent), values, nodes,
            [_ref(v) for v in graph.inputs], [_ref(v) for v in graph.outputs])


def _tensor(value: ir.Value, tensors: dict[int, ir.Tensor | None], path: str,
            settings: dict[str, Any]) -> ir.Tensor | None:
    """The constant's stand-in (one per constant: a tensor several values share stays shared)."""
    tensor = value.initializer
    if tensor is None:
        return None
    if id(tensor) not in tensors:
        reader: Any = _Reload(path, settings, value.graph.index, value.index)
        if tensor.dtype in _PLAIN and tensor.size <= SMALL:
            try:
                array = tensor.numpy()
            except Exception:  # unreadable data (a missing file): read, and fail, as loaded
                array = None
            if array is not None and array.dtype.kind in "biuf" and array.dtype.str[0] != ">":
                reader = _Stored(array.dtype.str, tuple(array.shape), array.tobytes(), array.flags.writeable)
        tensors[id(tensor)] = ir.Tensor(tensor.dtype, tensor.shape, reader, tensor.location, tensor.dense_shape)
    return tensors[id(tensor)]


class _Stored:
    """A small constant's data, kept in the snapshot."""

    def __init__(self, dtype: str, shape: tuple[int, ...], data: bytes, writeable: bool) -> None:
        self.dtype, self.shape, self.data, self.writeable = dtype, shape, data, writeable

    def __call__(self) -> Any:
        import numpy as np

        array = np.frombuffer(self.data, dtype=np.dtype(self.dtype)).reshape(self.shape)
        return array.copy() if self.writeable else array


class _Reload:
    """A larger constant's data: read from the model loaded afresh (once per process), as its own load read it."""

    def __init__(self, path: str, settings: dict[str, Any], graph: int, index: int) -> None:
        self.path, self.settings, self.graph, self.index = path, settings, graph, index

    def __call__(self) -> Any:
        key = repr((self.path, sorted(self.settings.items())))
        if key not in _RELOADED:
            from renderer.loaders.registry import load_model

            _RELOADED.clear()
            _RELOADED[key] = load_model(self.path, **self.settings)
        tensor = _RELOADED[key].graphs[self.graph].values[self.index].initializer
        if tensor is None:
            raise ValueError("tensor has no data")
        return tensor.reader() if tensor.reader is not None else tensor.numpy()  # (kept by neither model)


_ALLOWED = {
    ("renderer.core.ir", name) for name in ("TensorType", "Quantization", "Tensor", "TensorAttribute",
                                            "SubgraphRef", "AssumedDim")
} | {(__name__, "_Stored"), (__name__, "_Reload"), ("builtins", "set"), ("builtins", "frozenset"),
     ("builtins", "complex"), ("builtins", "bytearray"), ("builtins", "slice"),
     ("numpy", "dtype"), ("numpy", "ndarray"), ("numpy._core.multiarray", "_reconstruct"),
     ("numpy._core.multiarray", "scalar"), ("numpy._core.numeric", "_frombuffer")}


class _Checked(pickle.Pickler):
    """Refuses, while pickling, any object whose class ``_Restricted`` would not load."""

    def reducer_override(self, obj: Any) -> Any:
        kind = type(obj)
        if kind.__module__ == "builtins" or (kind.__module__, kind.__qualname__) in _ALLOWED:
            return NotImplemented
        if kind.__module__.split(".")[0] == "numpy":
            return NotImplemented  # arrays, numpy scalars and dtypes: reduced to the globals allowed
        raise pickle.PicklingError(f"{kind.__module__}.{kind.__qualname__} is not kept")


class _Restricted(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in _ALLOWED or module == "numpy.dtypes" and name.endswith("DType"):
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"{module}.{name} is not kept")


def _restore(data: bytes, path: Path, settings: dict[str, Any], fresh: Callable[[], ir.Model]) -> ir.Model | None:
    """The model ``snapshot`` kept in ``data``, None when it cannot be used (refused, damaged, an external file
    changed)."""
    from renderer.files import disk_cache

    try:
        state = _Restricted(io.BytesIO(data)).load()
        for name, digest in state["depends"]:
            now = disk_cache.file_digest(Path(name)) if Path(name).is_file() else None
            if now != digest:
                return None
        return _rebuild(state)
    except Exception:  # a damaged or foreign entry is a miss, never an error
        return None


def _rebuild(state: dict[str, Any]) -> ir.Model:
    model = ir.Model(**state["model"])
    model.attachments = dict(state["attachments"])
    graphs = [model.add_graph(name) for name, *_ in state["graphs"]]
    for graph, (_, not_run, value_sized, _, values, _, _, _) in zip(graphs, state["graphs"], strict=True):
        graph.not_run, graph.value_sized = not_run, value_sized
        for name, kind, tensor, quantization, _, _, is_input, is_output, metadata in values:
            graph.add_value(name, type=kind, initializer=tensor, quantization=quantization, is_input=is_input,
                            is_output=is_output, metadata=metadata)
    for graph, (_, _, _, _, _, nodes, _, _) in zip(graphs, state["graphs"], strict=True):
        for op_type, domain, name, category, _, input_names, _, attributes, defaults, _, metadata, title in nodes:
            graph.add_node(op_type, domain=domain, name=name, category=category, input_names=input_names,
                           attributes=attributes, defaults=defaults, metadata=metadata, title=title)
    _link(model, state["graphs"])
    return model


def _link(model: ir.Model, states: list[tuple[Any, ...]]) -> None:
    """The references between operators, tensors and graphs, from their (graph, index) pairs."""
    graphs = model.graphs

    def value(ref: tuple[int, int] | None) -> ir.Value | None:
        return None if ref is None else graphs[ref[0]].values[ref[1]]

    def node(ref: tuple[int, int] | None) -> ir.Node | None:
        return None if ref is None else graphs[ref[0]].nodes[ref[1]]

    for graph, (_, _, _, parent, values, nodes, inputs, outputs) in zip(graphs, states, strict=True):
        graph.parent = node(parent)
        graph.inputs = [value(ref) for ref in inputs]  # type: ignore[misc]
        graph.outputs = [value(ref) for ref in outputs]  # type: ignore[misc]
        for item, (_, _, _, _, producer, consumers, *_) in zip(graph.values, values, strict=True):
            item.producer = node(producer)
            item.consumers = [node(ref) for ref in consumers]  # type: ignore[misc]
        for item, (_, _, _, _, ins, _, outs, _, _, subgraphs, _, _) in zip(graph.nodes, nodes, strict=True):
            item.inputs = [value(ref) for ref in ins]
            item.outputs = [value(ref) for ref in outs]  # type: ignore[misc]
            item.subgraphs = [graphs[index] for index in subgraphs]


__all__ = ["FORMATS", "KIND", "keep", "keyed", "load", "recall", "snapshot"]
