"""Annotation readers (one module per source) and the merge of several files onto one model.

Each reader module exposes:
    NAME: str                         short source name; qualifies clashing metrics (``ort.latency_us``)
    DESCRIPTION: str                  one line for ``--annotations-format`` help
    match(path: Path, head: str) -> bool   True when the file's first ~4 KiB look like this source's output
    read(path: Path, model: ir.Model) -> AnnotationSet
                                      raise AnnotationError naming the file (and line) on malformed input
Readers are tried in ``READERS`` order; ``generic`` is last and matches anything.
"""

from __future__ import annotations

import importlib
import itertools
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

from .. import inputs
from ..errors import AnnotationError
from ..id_rules import Ambiguous, IdIndex, Unresolved
from ..ir import ElementKey, Model
from ..records import (
    MAX_VALUES_PER_ELEMENT, AnnotationSet, Annotations, Coverage, Entry, MetricInfo, Ref, metric_unit, metric_value,
)

# The fuzz and injection tests iterate over this tuple, so every reader added here is covered.
READERS: tuple[str, ...] = (
    "ort_profile", "tflite_benchmark", "vela", "openvino_counters", "openvino_exec_graph",
    "tensorrt_profile", "tflite_quant_debug",
    "ort_qdq_loss", "onnx_tool_csv", "netron_attachment", "model_explorer", "generic",
)

HEAD_CHARS = 4096

__all__ = [
    "READERS", "AnnotationSet", "Annotations", "Entry", "MetricInfo", "Ref",
    "reader_modules", "reader", "reader_of", "read_file", "shape_profiles", "load_annotations", "merge", "input_paths",
    "model_files",
]


def reader_modules() -> list[ModuleType]:
    return [importlib.import_module(f"{__name__}.{name}") for name in READERS]


def reader(name: str) -> ModuleType:
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
    if b"\x00" in data and inputs.is_stream(path):
        raise AnnotationError(f"{path}: binary file, not an annotation file")
    return data.decode("utf-8-sig", "replace")


def read_file(path: str | Path, model: Model, fmt: str | None = None) -> AnnotationSet:
    """Read one annotation file, detecting its source from its content unless ``fmt`` names it."""
    with inputs.reading(path):  # an out-of-memory error names it
        return reader_of(path, fmt).read(Path(path), model)


def reader_of(path: str | Path, fmt: str | None = None) -> ModuleType:
    """The reader of one annotation file: ``fmt``'s, else the first whose ``match`` takes its first bytes."""
    path = Path(path)
    head = _head(path)
    if fmt:
        return reader(fmt)
    for module in reader_modules():
        if module.match(path, head):
            return module
    raise AnnotationError(f"{path}: not a known annotation format")  # unreachable: generic matches all


def shape_profiles(model_path: str | Path, paths: Sequence[str | Path], fmt: str | None = None,
                   sidecar: bool = True) -> list[Path]:
    """The onnxruntime profiles among the annotation files a render of ``model_path`` reads (its sidecars, then
    ``paths``): the loader takes the shapes they recorded (``loaders.profile_shapes``)."""
    from .sidecar import sidecars

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
    from .embedded import from_model
    from .sidecar import sidecars

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
    """The files ``model`` keeps its weights in besides its own (ONNX external data), beside the model."""
    folder = Path(model.path).parent
    found = {value.initializer.location for graph in model.graphs for value in graph.values
             if value.initializer is not None and getattr(value.initializer, "location", None)}
    return [str(folder / location) for location in sorted(found) if location != "?"]


def merge(sets: list[AnnotationSet], model: Model, strict: bool = False) -> Annotations:
    """Match every set's ids to ``model`` and merge the values, qualifying metric names that clash."""
    index = IdIndex.build(model)
    result = Annotations()
    sources_of: dict[str, set[str]] = {}
    resolved: list[tuple[AnnotationSet, list[tuple[ElementKey, Entry]]]] = []
    for aset in sets:
        items, coverage = _resolve(aset, index, strict)
        items, crowded = _bounded(items)
        result.notes += aset.notes
        result.read += [path for path in (aset.path, *aset.side_files) if path and path not in result.read]
        if crowded:
            result.notes.append(f"{aset.path}: {crowded} elements have more than {MAX_VALUES_PER_ELEMENT} values; "
                                f"only their first {MAX_VALUES_PER_ELEMENT} are kept")
        if aset.operators or aset.tensors or coverage.unmatched:  # a set of graph values only matches no ids
            result.coverage.append(coverage)
        for name in [name for _, entry in items for name in entry.values] + list(aset.graph.values):
            sources_of.setdefault(name, set()).add(aset.source)
        resolved.append((aset, items))
    clashing = {name for name, sources in sources_of.items() if len(sources) > 1}
    for aset, items in resolved:
        _add(result, aset, items, clashing)
    valued = {(info.source, name.removeprefix(f"{info.source}.")) for name, info in result.metrics.items()}
    result.unusable_mains = [(info, aset.path) for aset in sets for name, info in aset.metrics.items()
                             if info.main and (aset.source, name) not in valued and (aset.operators or aset.tensors)]
    return result


def _resolve(aset: AnnotationSet, index: IdIndex, strict: bool) -> tuple[list[tuple[ElementKey, Entry]], Coverage]:
    """The elements ``aset``'s ids name, with their entries, and its coverage line; under ``strict`` an id that
    matches nothing is an error."""
    items: list[tuple[ElementKey, Entry]] = []
    unmatched = list(aset.unmatched)
    suggestions: dict[str, list[str]] = {}
    reasons: dict[str, str] = {}
    matched_ops: set[ElementKey] = set()
    matched_tensors = unmatched_tensors = 0
    for kind, pairs in (("op", aset.operators), ("t", aset.tensors)):
        for ident, entry in pairs:
            try:
                key = ident.key if isinstance(ident, Ref) else (
                    index.operator(ident) if kind == "op" else index.tensor(ident))
            except Unresolved as e:
                if strict:
                    line = f":{entry.line}" if entry.line else ""
                    raise AnnotationError(f"{aset.path}{line}: {e}") from None
                label = ident if isinstance(ident, str) else str(ident)
                unmatched.append(label)
                unmatched_tensors += kind == "t"
                if isinstance(e, Ambiguous):  # the name exists: say where, suggesting it back helps nobody
                    reasons[label] = f"ambiguous, {e.matches}"
                elif len(unmatched) - len(aset.unmatched) <= 5:  # only the ids the coverage line shows
                    hint = index.suggest(label, kind)
                    if hint:
                        suggestions[label] = hint
                continue
            items.append((key, entry))
            if kind == "op":
                matched_ops.add(key)
            else:
                matched_tensors += 1
    if strict and aset.unmatched:
        raise AnnotationError(f"{aset.path}: {len(aset.unmatched)} rows match no operator: {aset.unmatched[0]}")
    total_ops = len(matched_ops) + len(unmatched) - unmatched_tensors
    coverage = Coverage(aset.source, aset.path, len(matched_ops), total_ops, matched_tensors, unmatched, suggestions,
                        matched_tensors + unmatched_tensors, reasons)
    return items, coverage


def _bounded(items: list[tuple[ElementKey, Entry]]) -> tuple[list[tuple[ElementKey, Entry]], int]:
    """``items`` with each entry cut to MAX_VALUES_PER_ELEMENT values, and how many were cut."""
    crowded = 0
    bounded = []
    for key, entry in items:
        if len(entry.values) > MAX_VALUES_PER_ELEMENT:
            entry = Entry(dict(itertools.islice(entry.values.items(), MAX_VALUES_PER_ELEMENT)), entry.style, entry.line)
            crowded += 1
        bounded.append((key, entry))
    return bounded, crowded


def _add(result: Annotations, aset: AnnotationSet, items: list[tuple[ElementKey, Entry]],
         clashing: set[str]) -> None:
    """Merge one set's matched entries into ``result``; names that several sources use get the source prefixed."""

    def qualified(name: str) -> str:
        return f"{aset.source}.{name}" if name in clashing else name

    graph_values = {qualified(k): v for k, v in aset.graph.values.items()}
    result.graph.update(Entry(graph_values, dict(aset.graph.style)))
    for key, entry in items:
        target = (result.ops if key[0] == "op" else result.tensors).setdefault(key, Entry())
        renamed = Entry({qualified(k): v for k, v in entry.values.items()}, dict(entry.style), entry.line)
        target.update(renamed)
        for name, value in renamed.values.items():
            if metric_value(value) is not None and name not in result.metrics:
                result.metrics[name] = _metric_info(aset, name, value)


def _metric_info(aset: AnnotationSet, name: str, value: object) -> MetricInfo:
    """What is known about metric ``name``, first seen in ``aset`` with ``value``: what the reader declared
    (under the unqualified name), else the unit of the value's text."""
    info = MetricInfo(name=name, source=aset.source, unit=metric_unit(value))
    base = aset.metrics.get(name.removeprefix(f"{aset.source}."))
    if base is not None:
        info.unit = base.unit or info.unit
        info.higher_is_better = base.higher_is_better
        info.description = base.description
        info.gradient, info.thresholds, info.main = base.gradient, base.thresholds, base.main
    return info
