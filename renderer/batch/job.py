"""One model's share of a batch, as a pure function of its inputs: read the runs, lay the graph out once, and
return every picture's bytes. Nothing is written here, so the same job gives the same bytes wherever it runs
(this process, a local worker process, a Dask worker)."""

from __future__ import annotations

import dataclasses
import hashlib
import math
import os
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from renderer.annotations.registry import input_paths, load_annotations
from renderer.batch import caption
from renderer.batch.layout import BookLayout, Layout, lay_out
from renderer.colour.heatmap import Heatmap, build
from renderer.colour.maps import NA_COLOR, text_color
from renderer.core.errors import AnnographError, MetricError
from renderer.core.ir import ElementKey, Model
from renderer.core.numbers import format_number
from renderer.core.options import RenderOptions
from renderer.core.records import Annotations
from renderer.picture.folding import fold

if TYPE_CHECKING:
    from renderer.picture.pages import Book, Page
    from renderer.picture.scene import Scene

_UNSAFE_NAME = re.compile(r"[^A-Za-z0-9_.-]+")
NAME_CHARS = 60


@dataclass(frozen=True, slots=True)
class ModelJob:
    """Everything one model's pictures depend on.

    Attributes:
        model: the model file.
        runs: annotation files, one picture set each.
        metrics: metrics to colour by; empty means the runs' default (``_default_metrics``).
        options: colour and layout options (color_by is set per picture).
        prefix: output names start with this (the model's name when a batch has several models).
        annotations_format / strict: as for ``render``.
        shared_scale: one colour range per metric across all runs, instead of one per picture.
        sidecar: merge the model's sidecar annotation files into every run (``--no-sidecar``: not).
        etrecord: an ExecuTorch program's ETRecord (``--etrecord``), instead of the one beside it.
    """

    model: str
    runs: tuple[str, ...]
    metrics: tuple[str, ...] = ()
    options: RenderOptions = field(default_factory=RenderOptions)
    prefix: str = ""
    annotations_format: str | None = None
    strict: bool = False
    shared_scale: bool = False
    sidecar: bool = True
    etrecord: str | None = None

    def token(self) -> str:
        """A digest of everything the job's pictures depend on: equal for equal jobs, different otherwise. A
        result carries its job's token, so a result can be checked against the job it is meant for."""
        return hashlib.sha256(repr(self).encode("utf-8", "surrogateescape")).hexdigest()


@dataclass(slots=True)
class Picture:
    """One written picture, for the contact sheet.

    Attributes:
        file: the output file name (made of safe characters only).
        run: the annotation file.
        metric: the metric coloured by.
        low / high: the colour range ("" when no value).
        values / missing: drawn operators with and without a value.
    """

    file: str
    run: str
    metric: str
    low: str
    high: str
    values: int
    missing: int


@dataclass(slots=True)
class ModelResult:
    """What a job returns: the files to write, the pictures they are, notes, or the error that stopped it."""

    model: str
    job: str = ""
    """The token of the job that made it (``ModelJob.token``)."""
    files: list[tuple[str, bytes | dict[str, bytes]]] = field(default_factory=list)
    """(file name, bytes), or (pages folder name, {page file name: bytes}) for a model drawn with pages."""
    pictures: list[Picture] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    """Warnings: printed even with -q."""
    said: list[str] = field(default_factory=list)
    """Lines of the normal report (a choice made for the user), dropped by -q."""
    error: str | None = None
    read: list[str] = field(default_factory=list)
    """Every file the job read (the model's external data, sidecars, files found beside an annotation file):
    no picture may replace one."""


def run_job(job: ModelJob) -> ModelResult:
    """The job's pictures; a bad model or annotation file becomes ``error`` instead of an exception."""
    try:
        return _run(job)
    except AnnographError as e:
        message = str(e)
        named = message if message.startswith(job.model) else f"{job.model}: {message}"
        return ModelResult(job.model, job.token(), error=named)


def _run(job: ModelJob) -> ModelResult:
    from renderer.loaders.registry import load_model

    result = ModelResult(job.model, job.token())
    if not job.runs:
        raise AnnographError(f"{job.model}: no annotation files for this model")
    model = load_model(job.model, dims=job.options.dims, check_dims=False,  # the command checked them all
                       inputs=job.options.inputs, assume_dims=not job.options.keep_free_dims, etrecord=job.etrecord)
    result.notes.extend(model.notes)
    runs = [(path, load_annotations([path], model, fmt=job.annotations_format, strict=job.strict, sidecar=job.sidecar))
            for path in job.runs]
    for _, notes in runs:
        result.notes.extend(c.line() for c in notes.coverage if c.unmatched)
        result.read += [path for path in input_paths(model, notes) if path not in result.read]
    result.said.extend(f"{job.model}: using sidecar annotations {path} in every run (--no-sidecar to skip)"
                       for path in runs[0][1].sidecars)
    metrics = list(job.metrics) or _default_metrics(job, model, runs, result)
    _add_builtin(model, runs, metrics, job.options)
    undrawn = fold(model, job.options.show_constants).hidden
    drawn = [n.key for n in model.nodes() if n.key not in undrawn]
    heatmaps = {(r, m): _heatmap(job, notes, m, undrawn, result, path)
                for r, (path, notes) in enumerate(runs) for m in metrics}
    if job.shared_scale:
        heatmaps = _shared(job, runs, metrics, heatmaps, undrawn)
    texts = {pair: {key: _value_text(heat, key) for key in drawn} for pair, heat in heatmaps.items()}
    value_chars = max([3] + [len(t) for per_op in texts.values() for t in per_op.values()])
    layout = lay_out(model, job.options, max(len(m) for m in metrics), value_chars)
    names: set[str] = set()
    for r, (path, notes) in enumerate(runs):
        for m, metric in enumerate(metrics):
            heat = heatmaps[(r, metric)]
            name = _file_name(job.prefix, r, path, metric, names)
            result.files.extend(_picture(layout, name, heat, metric, notes, texts[(r, metric)], path, len(drawn),
                                         job.options))
            low, high = ("", "")
            if heat and heat.values:
                low, high = format_number(heat.scale.vmin), format_number(heat.scale.vmax)
            valued = sum(1 for key in drawn if heat is not None and key in heat.values)
            result.pictures.append(Picture(name, Path(path).name, metric, low, high, valued, len(drawn) - valued))
    return result


def model_prefixes(models: list[str]) -> list[str]:
    """The start of each model's file names in a batch of several (one model: ""): its file name without the
    extension; with the extension (``m_onnx``, ``m_tflite``) when another model has the same stem; and a short
    hash of its path when that is taken too (``a/m.onnx``, ``b/m.onnx``). No two are equal, even ignoring case,
    and none holds a dot, so every file of the batch has its own name."""
    if len(models) <= 1:
        return [""] * len(models)
    stems = [safe_name(Path(m).stem).replace(".", "_") for m in models]
    shared = Counter(s.casefold() for s in stems)
    taken: set[str] = set()
    chosen = []
    for model, stem in zip(models, stems):
        named = safe_name(Path(model).name).replace(".", "_")
        hashed = f"{named}-{hashlib.sha256(os.path.abspath(model).encode('utf-8', 'surrogateescape')).hexdigest()[:8]}"
        candidates = ([stem] if shared[stem.casefold()] == 1 else []) + [named, hashed]
        candidates += [f"{hashed}-{n}" for n in range(2, len(models) + 2)]  # one file named twice
        prefix = next(c for c in candidates if c.casefold() not in taken)
        taken.add(prefix.casefold())
        chosen.append(prefix)
    return chosen


def _add_builtin(model: Model, runs: list[tuple[str, Annotations]], metrics: list[str],
                 options: RenderOptions) -> None:
    """Built-in metrics asked for (``--color-by macs``, or the default) added to each run's annotations where
    the run's file gives none, as ``render`` adds them."""
    from renderer.metrics import builtin

    wanted = set(metrics) & set(builtin.OP_METRICS)
    if wanted:
        for index, (path, notes) in enumerate(runs):
            runs[index] = (path, builtin.augment(model, notes, wanted, options))


def _default_metrics(job: ModelJob, model: Model, runs: list[tuple[str, Annotations]],
                     result: ModelResult) -> list[str]:
    """The metric every run is coloured by when no --color-by is given: render's rule over all the runs
    (``rendering.default_colour``: the only numeric operator metric of the runs, else the main metric each
    declares, else when none brings one render's built-in default, MACs or weight bytes)."""
    from renderer.compose.rendering import default_colour

    chosen = default_colour(model, [notes for _, notes in runs], job.options.show_constants)
    if chosen.metric is None:
        raise MetricError(f"{job.model}: {chosen.why}")
    if chosen.builtin:
        result.said.append(f"{job.model}: the annotation files give no numeric operator metric; {chosen.said}")
    else:
        result.said.append(f"{job.model}: {chosen.said}")
    return [chosen.metric]


def _heatmap(job: ModelJob, notes: Annotations, metric: str, undrawn: frozenset[ElementKey], result: ModelResult,
             path: str) -> Heatmap | None:
    o = job.options
    try:
        return build(metric, notes, "op", o.cmap, o.norm, o.vmin, o.vmax, o.center, undrawn=undrawn)
    except MetricError as e:
        result.notes.append(f"{path}: {e}; its {metric} picture shows every operator as n/a")
        return None


def _shared(job: ModelJob, runs: list[tuple[str, Annotations]], metrics: list[str],
            heatmaps: dict[tuple[int, str], Heatmap | None], undrawn: frozenset[ElementKey]) -> dict:
    o = job.options
    shared = dict(heatmaps)
    for metric in metrics:
        values = [v for r in range(len(runs)) if (h := heatmaps[(r, metric)]) is not None
                  for v in h.values.values() if math.isfinite(v)]
        if not values:
            continue
        low = o.vmin if o.vmin is not None else min(values)
        high = o.vmax if o.vmax is not None else max(values)
        for r, (_, notes) in enumerate(runs):
            if heatmaps[(r, metric)] is not None:
                shared[(r, metric)] = build(metric, notes, "op", o.cmap, o.norm, low, high, o.center, undrawn=undrawn)
    return shared


def _value_text(heat: Heatmap | None, key: ElementKey) -> str:
    value = heat.values.get(key) if heat is not None else None
    return "n/a" if value is None else format_number(value)


def safe_name(text: str) -> str:
    """``text`` in the characters file names of a batch are made of (``[A-Za-z0-9_.-]``), at most NAME_CHARS."""
    return _UNSAFE_NAME.sub("_", text).strip("._-")[:NAME_CHARS] or "x"


def _file_name(prefix: str, index: int, run: str, metric: str, taken: set[str]) -> str:
    """``[prefix.]NNN_run.metric.svg`` in safe characters only (file names reach the contact sheet's links).
    ``prefix`` holds no dot (``model_prefixes``), so two models' names never meet."""
    stem = f"{index:03d}_{safe_name(Path(run).stem)}.{safe_name(metric)}"
    name = f"{prefix}.{stem}.svg" if prefix else f"{stem}.svg"
    base, n = name, 2
    while name in taken:
        name = base.removesuffix(".svg") + f"-{n}.svg"
        n += 1
    taken.add(name)
    return name


def _picture(layout: Layout | BookLayout, name: str, heat: Heatmap | None, metric: str, notes: Annotations,
             texts: dict[ElementKey, str], run: str, drawn: int,
             options: RenderOptions) -> list[tuple[str, bytes | dict[str, bytes]]]:
    """The picture's files: ``name``, and for a book its pages folder (every page recoloured, its links to
    the overview and the other pages naming ``name``)."""
    from renderer.core import escape
    from renderer.files.page_names import pages_folder

    first = layout.pages[0] if isinstance(layout, BookLayout) else layout
    fills: dict[ElementKey, bytes] = {}
    inks: dict[ElementKey, bytes] = {}
    values: dict[ElementKey, bytes] = {}
    tips: dict[ElementKey, bytes] = {}
    for key, text in texts.items():
        entry = notes.ops.get(key)
        if entry is not None and "fillcolor" in entry.style:
            fill = entry.style["fillcolor"][:7]
        else:
            fill = heat.color(key) if heat is not None else NA_COLOR
        fills[key] = fill.encode()
        inks[key] = text_color(fill).encode()
        values[key] = escape.svg_text(text, first.value_chars).encode()
        tips[key] = escape.svg_text(f"{metric}: {text}", 200).encode()  # the tooltip's value line
    said = _caption(heat, metric, run, drawn)
    tables: dict[str, bytes | dict[ElementKey, bytes]] = {
        "fill": fills, "ink": inks, "value": values, "tip": tips, "overview": escape.href(name).encode(),
        "key": escape.svg_text(metric, first.key_chars).encode(),
    }
    if not isinstance(layout, BookLayout):
        colorbar = caption.svg(said, layout.width, layout.height).encode()
        return [(name, layout.template.fill({**tables, "colorbar": colorbar}))]
    scene = dataclasses.replace(layout.scene, heatmap=heat, options=options)
    pictures = []
    for laid, page in zip(layout.pages, layout.book.pages):
        groups, boxes = _group_boxes(scene, layout.book, page)
        noted = dataclasses.replace(said, notes=f"{said.notes} · {groups}" if groups else said.notes)
        pictures.append(laid.template.fill({**tables, **boxes,
                                            "colorbar": caption.svg(noted, laid.width, laid.height).encode()}))
    return [(name, pictures[0]), (pages_folder(name), dict(zip(layout.files, pictures[1:])))]


def _group_boxes(scene: Scene, book: Book, page: Page) -> tuple[str, dict[str, dict[ElementKey, bytes]]]:
    """The fills, text colours and tooltip values of the group boxes (and run cells) on ``page``, as ``render``
    colours them (``dot_pages.group_heatmap``: the page's boxes on a scale of their own), and what the caption
    says of that scale."""
    from renderer.colour.aggregate import rule_for
    from renderer.core import escape
    from renderer.picture.dot_pages import group_heatmap

    groups = [group for run in page.all_boxes() for group in run]
    box_heat = group_heatmap(scene, groups, scene.options.aggregate) if scene.heatmap is not None else None
    tables: dict[str, dict[ElementKey, bytes]] = {"gfill": {}, "gink": {}, "gtip": {}}
    rule = rule_for(scene.heatmap.metric, scene.heatmap.info, scene.options.aggregate) if scene.heatmap else ""
    for i, group in enumerate(groups):
        key = ("g", book.page_of_group[id(group)].index, 0)
        number = box_heat.values.get(("g", i, 0)) if box_heat is not None else None
        fill = box_heat.scale.color(number) if box_heat is not None else NA_COLOR
        shown = format_number(number) if number is not None else "n/a"
        tables["gfill"][key] = fill.encode()
        tables["gink"][key] = text_color(fill).encode()
        tables["gtip"][key] = b"&#10;" + escape.svg_text(f"{scene.heatmap.metric if scene.heatmap else ''} {rule}: "
                                                         f"{shown}", 200).encode()
    if box_heat is None or not box_heat.values:
        return "", tables
    low, high = format_number(box_heat.scale.vmin), format_number(box_heat.scale.vmax)
    return f"boxes: {rule} of members, {low} … {high}", tables


def _caption(heat: Heatmap | None, metric: str, run: str, drawn: int) -> caption.Caption:
    if heat is None:
        return caption.Caption(metric, "no values", Path(run).name, (NA_COLOR,) * caption.CELLS,
                               ("", "", "", "", ""), drawn)
    scale = heat.scale
    gradient = list(scale.gradient(caption.CELLS))[: caption.CELLS]
    gradient += [gradient[-1] if gradient else NA_COLOR] * (caption.CELLS - len(gradient))
    ticks = [format_number(t) for t in scale.ticks(5)] if heat.values else []
    if len(ticks) != 5:
        ticks = [ticks[0], "", "", "", ticks[-1]] if ticks else ["", "", "", "", ""]
    missing = drawn - len(heat.values)
    return caption.Caption(heat.title(), " · ".join(heat.notes()), Path(run).name, tuple(gradient), tuple(ticks),
                           missing)
