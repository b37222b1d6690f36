"""A model, its annotations and the render options from what a caller hands over, read as ``annograph render``
reads them: shared by ``renderer.show`` (Jupyter) and the Sphinx directive; ``load_model_for``, how a model is
loaded beside its annotation files, by the command line too.

Paths or already-loaded objects are accepted; the model's own annotations and its sidecar files are merged
first, as the command does. Without ``color_by`` the default metric colours the boxes, decided where every
render decides it (``rendering.prepare``). What the command would print on stderr while loading is collected
in ``Loaded.notes``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from renderer.core.errors import AnnographError, LoaderError
from renderer.core.options import RenderOptions

PathLike = str | Path


@dataclass(slots=True)
class Loaded:
    """What a render needs, with what the command line would have said about it.

    Attributes:
        model: the loaded ``ir.Model``.
        annotations: the merged ``Annotations`` (the model's own, sidecars, then the files given).
        options: the render options as given (``rendering.prepare`` decides a default ``color_by``).
        notes: loader notes and coverage lines, one line each.
        unmatched: the notes that report annotation ids matching nothing (also in ``notes``).
    """

    model: Any
    annotations: Any
    options: RenderOptions
    notes: list[str] = field(default_factory=list)
    unmatched: list[str] = field(default_factory=list)


def render_options(options: RenderOptions | None = None, **given: Any) -> RenderOptions:
    """``options`` (default ``RenderOptions()``) with ``given`` fields replaced, read by the command line's one
    builder (``options.from_values``): ``collapse`` and ``show`` may be written as on the command line (``"2"``,
    ``"none"``; ``"latency_ms,macs"``, ``"all"``, ``"none"``).

    Raises:
        AnnographError: a name that is not a RenderOptions field, or a bad ``collapse``.
    """
    from renderer.core.options import from_values

    names = {f.name for f in dataclasses.fields(RenderOptions)}
    unknown = sorted(set(given) - names)
    if unknown:
        raise AnnographError(f"unknown render option {unknown[0]!r} (known: {', '.join(sorted(names))})")
    read = from_values(given)
    taken = {name: None if value is None else getattr(read, name) for name, value in given.items()}
    return dataclasses.replace(options or RenderOptions(), **taken)


def load(
    model: Any, annotations: Any = None, options: RenderOptions | None = None, *, sidecar: bool = True,
    embedded: bool = True, dims: dict[str, int] | None = None, annotations_format: str | None = None,
) -> Loaded:
    """Load ``model`` (a path or an ``ir.Model``) and ``annotations`` (None, one path, several, or an
    ``Annotations`` already merged) as ``annograph render`` does.

    Raises:
        AnnographError (LoaderError, AnnotationError): a file that cannot be read, named in the message.
    """
    from renderer.annotations.registry import load_annotations
    from renderer.core.ir import Model
    from renderer.core.records import Annotations

    options = options or RenderOptions()
    notes: list[str] = []
    paths = [] if annotations is None or isinstance(annotations, Annotations) else [annotations] if isinstance(
        annotations, (str, Path)) else list(annotations)
    if not isinstance(model, Model):
        from renderer.files import disk_cache

        with disk_cache.using(options.layout_cache):  # the load's results are kept where the layouts are
            model = load_model_for(model, paths, fmt=annotations_format, sidecar=sidecar,
                                   dims=dims or options.dims, inputs=options.inputs,
                                   keep_free_dims=options.keep_free_dims, etrecord=options.etrecord)
        notes += model.notes
    if not isinstance(annotations, Annotations):
        annotations = load_annotations(paths, model, fmt=annotations_format, sidecar=sidecar, embedded=embedded)
        notes += [f"using sidecar annotations {path}" for path in annotations.sidecars]
    unmatched = [c.line() for c in annotations.coverage if c.unmatched]
    notes += [c.line() for c in annotations.coverage if c.total_ops or c.matched_tensors or c.unmatched]
    notes += annotations.notes
    return Loaded(model, annotations, options, notes, unmatched)


def load_model_for(model: PathLike, annotation_paths: Sequence[PathLike], *, fmt: str | None = None,
                   sidecar: bool = True, dims: dict[str, int] | None = None, check_dims: bool = True,
                   inputs: PathLike | None = None, keep_free_dims: bool = False,
                   etrecord: PathLike | None = None) -> Any:
    """The model at ``model`` loaded as every render loads it (the command line, ``renderer.show``, Sphinx): shapes
    that depend on input values come from ``inputs`` or from the onnxruntime profiles among the annotation files
    and the model's sidecars; free dims nothing pins take a stated value unless ``keep_free_dims``; ``etrecord``:
    an ExecuTorch program's ETRecord, instead of the one beside it. Within a render's cache
    (``disk_cache.using``) an ONNX or TFLite model loaded before with the same files and settings comes from it
    (``loaders.snapshot``)."""
    from renderer.annotations.registry import shape_profiles
    from renderer.loaders import snapshot
    from renderer.loaders.registry import load_model

    profiles = shape_profiles(model, list(annotation_paths), fmt, sidecar)
    settings = {"dims": dict(dims or {}), "check_dims": check_dims, "inputs": None if inputs is None else str(inputs),
                "profiles": [str(p) for p in profiles], "assume_dims": not keep_free_dims,
                "etrecord": None if etrecord is None else str(etrecord)}
    read = [Path(p) for p in [inputs, *profiles, etrecord] if p is not None]
    return snapshot.load(Path(model), settings, read, lambda: load_model(model, **settings))


def input_files(model_path: PathLike, annotation_paths: list[PathLike], sidecar: bool = True,
                etrecord: PathLike | None = None) -> list[Path]:
    """Every file a render reads, before anything is loaded: the model, the ETRecord an ExecuTorch program is
    named from (``etrecord``, else the one beside it), its sidecars, the annotation files."""
    from renderer.annotations.sidecar import sidecars

    found = sidecars(model_path) if sidecar else []
    if etrecord is None:
        etrecord = _etrecord_beside(Path(model_path))
    return [Path(model_path), *([Path(etrecord)] if etrecord is not None else []),
            *[p for p in found if str(p) not in map(str, annotation_paths)], *map(Path, annotation_paths)]


def _etrecord_beside(model: Path) -> Path | None:
    """The ETRecord beside an ExecuTorch program; None beside any other model, or one missing or of no known
    format: its load says why, and the Sphinx directive still notes it as a dependency (it is read again then)."""
    from renderer.loaders.executorch import etrecord as records
    from renderer.loaders.registry import ETRECORD_FORMAT, detect

    try:
        loader = detect(model)
    except LoaderError:
        return None
    return records.beside(model) if loader.FORMAT == ETRECORD_FORMAT else None


__all__ = ["Loaded", "input_files", "load", "render_options"]
