"""``annograph render``: the annotated picture as SVG, PDF, PNG, DOT, HTML or Markdown."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from renderer.compose.output_plan import OutputPlan

HELP = "render a model as an annotated graph (.svg .pdf .png .dot .html .md, chosen by extension)"

EXAMPLES = """examples:
  annograph model.onnx                       (the same as annograph render model.onnx: writes model.svg here)
  annograph render model.tflite -a stats.yaml --color-by latency_ms --cmap coolwarm -o model.svg
  annograph render model.onnx -a stats.csv -o model.pdf -o model.png
  annograph render a.onnx b.tflite --format svg,html -o out/      (a batch: one file per model and format)"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from renderer.commands.common import (
        ANNOTATION_OPTIONS,
        MODEL_FILES,
        PICTURE_OPTIONS,
        SUMMARY_OPTIONS,
        add_deprecated_alias,
        add_options,
    )

    parser.epilog = EXAMPLES
    parser.add_argument("models", nargs="+", metavar="MODEL", help=f"{MODEL_FILES}(s)")
    parser.add_argument("-o", "--output", action="append", default=[], metavar="PATH",
                        help="output file (repeatable), or a folder ending in / for a batch; default: "
                             "MODEL_STEM.svg in the current folder")
    parser.add_argument("--format", metavar="LIST",
                        help="formats for folder output (or the current folder without -o), e.g. svg,png (default svg)")
    add_options(parser, [*ANNOTATION_OPTIONS, "etrecord", *PICTURE_OPTIONS, *SUMMARY_OPTIONS])
    add_deprecated_alias(parser, "--top-k", "--summary-rows")  # its --top is another thing: the hottest operators


def summary_outputs(args: argparse.Namespace) -> list[str]:
    """``--summary``'s file as an extra output (checked: one model, a .md name), or none."""
    if args.summary is None:
        return []
    from renderer.core.errors import UsageError
    from renderer.reports.summary import check_summary_name

    if len(args.models) > 1:
        raise UsageError("--summary takes one model; render each model with its own --summary")
    check_summary_name(args.summary)
    return [args.summary]


def render_options(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    """RenderOptions from the parsed options (``options.from_values``; absent ones at their defaults)."""
    from renderer.core.options import from_values

    return from_values(vars(args))


def run(args: argparse.Namespace) -> int:
    from renderer.files import disk_cache

    with disk_cache.using(render_options(args).layout_cache):  # the loads' results are kept where the layouts are
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    from renderer.commands.common import etrecords, warn
    from renderer.compose.output_plan import OutputPlan
    from renderer.core.errors import AnnographError
    from renderer.core.progress import bar

    options = render_options(args)
    jobs, folder = _jobs(args)
    if extra := summary_outputs(args):
        from renderer.reports.summary import check_link_base, check_top_k

        check_link_base(options.summary_link_base)
        check_top_k(options.summary_top_k)
        jobs = [(model, [*outputs, *extra]) for model, outputs in jobs]
    read = [*args.models, *args.annotations, *([args.inputs] if args.inputs else []), *args.etrecord]
    plans = [(model, OutputPlan.build(outputs, inputs=read)) for model, outputs in jobs]  # all refused up front
    several = len(jobs) > 1
    if several:  # a --dim may belong to some of the models only; one none of them has is an error
        from renderer.loaders.registry import check_dims

        check_dims([model for model, _ in jobs], options.dims)
    records = etrecords(args, [model for model, _ in jobs])
    created = _make_folder(folder) if folder is not None else []
    from renderer.files import atomic

    atomic.refuse_missing_folders(name for _, plan in plans for name in plan.names)
    failures = 0
    try:
        with bar(len(jobs), "render", "model") as shown:
            for model_path, plan in plans:
                try:
                    _render_one(model_path, plan, options, args, not several, records.get(model_path))
                except AnnographError as e:
                    if len(jobs) == 1:
                        raise
                    failures += 1
                    warn(f"error: {e}")
                shown.update(1)
    finally:
        if created and not any(Path(out).exists() for _, outputs in jobs for out in outputs):
            _remove_empty(created)  # a batch that wrote nothing leaves no folder behind
    if failures == len(jobs):
        warn(f"all {len(jobs)} models failed; nothing was written")
        return 1
    if failures:
        warn(f"{failures} of {len(jobs)} models failed; the others were written")
        return 1
    return 0


def _render_one(model_path: str, plan: OutputPlan, options, args: argparse.Namespace,  # type: ignore[no-untyped-def]
                check_dims: bool, etrecord: str | None) -> None:
    from renderer.commands.common import load_annotated, warn
    from renderer.compose.rendering import render

    model, annotations = load_annotated(args, model_path, check_dims=check_dims, etrecord=etrecord)
    render(model, annotations, options, output=plan)  # the default colour metric is decided there
    if options.show == ["all"]:
        from renderer.picture.dot import MAX_DRAWN_VALUES

        crowded = sum(len(e.values) > MAX_DRAWN_VALUES for e in annotations.ops.values())
        if crowded:
            warn(f"--show all: {crowded} boxes have more than {MAX_DRAWN_VALUES} values; they draw the first "
                 f"{MAX_DRAWN_VALUES} and count the rest (all are in the tooltips)")




def _jobs(args: argparse.Namespace) -> tuple[list[tuple[str, list[str]]], str | None]:
    """(model, its outputs) for each model, and the batch folder (None without one).

    Two models whose outputs would land on the same file (``a/m.onnx b/m.onnx``, or ``m.onnx m.tflite``) are
    refused before anything is rendered: renaming one for the user would leave files nobody asked for, and
    writing both would silently keep only the last.
    """
    from renderer.compose.output_plan import folder_names
    from renderer.core.errors import AnnographError

    formats = [f.strip().lower() for f in (args.format or "svg").split(",") if f.strip()]
    folder = next((o for o in args.output if o.endswith(("/", "\\")) or Path(o).is_dir()), None)
    if not args.output:
        folder = "."  # without -o, MODEL_STEM.svg (each of --format) in the current folder, wherever the model is
    if len(args.models) > 1 and folder is None:
        raise AnnographError("several models need a folder output: -o DIR/")
    jobs = []
    writer_of: dict[str, str] = {}
    for model in args.models:
        outputs = folder_names(folder, Path(model).stem, formats) if folder is not None else args.output
        for out in outputs:
            other = writer_of.setdefault(os.path.normcase(os.path.normpath(out)), model)
            if other != model or (folder is not None and out in (o for _, outs in jobs for o in outs)):
                raise AnnographError(f"{other} and {model} would both be written to {out}; render models with the "
                                     "same name into separate folders, or rename one")
        jobs.append((model, outputs))
    return jobs, folder


def _make_folder(folder: str) -> list[Path]:
    """Create the batch folder; the folders this created, deepest first."""
    from renderer.core.errors import AnnographError

    missing = []
    path = Path(folder)
    while not path.exists() and path != path.parent:
        missing.append(path)
        path = path.parent
    try:
        Path(folder).mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise AnnographError(f"{folder}: cannot create the folder ({e.strerror})") from None
    return missing


def _remove_empty(folders: list[Path]) -> None:
    for path in folders:
        try:
            path.rmdir()  # only when empty: never anything a user put there
        except OSError:
            return
