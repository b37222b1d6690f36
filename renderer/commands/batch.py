"""``annograph batch``: one picture per annotation file × metric, every picture of a model from one layout."""

from __future__ import annotations

import argparse
import glob
import os
from pathlib import Path

HELP = "render many heatmaps of one or more models (one layout per model, identical geometry) into a folder"

EXAMPLES = """examples:
  annograph batch model.onnx -a 'runs/*.json' --color-by sqnr_db,max_abs_error -o out/
  annograph batch a.onnx b.tflite -a 'nightly/{model}/*.json' -o out/ --jobs 2
  annograph batch models/*.onnx -a 'runs/{model}/*.json' -o out/ --dask tcp://scheduler:8786

Each model is laid out once; every picture is that layout with its own fills and values, so pictures of one
model can be flipped through or diffed. -a takes files or glob patterns; {model} stands for a model's file name
without its extension. out/index.html links every picture with its metric, range and annotation file. A model
that fails is reported and the others are written (exit status 1)."""


LEFT_OUT = {
    "show": "every picture of a model is one layout recoloured: a box lists the picture's colour metric only, "
            "as other values would give each run's boxes other sizes",
    "edge_by": "every picture of a model is one layout recoloured by its operators; edges keep one look",
    "edge_cmap": "the colour map of --edge-by, which is left out (above)",
    "focus": "a batch draws whole models, to be flipped through or compared picture by picture",
    "radius": "the hops around --focus and --top, which are left out (above)",
    "top": "the hottest operators differ from run to run, so the pictures of a model would not share a layout",
    "together": "the one page of --focus and --top, which are left out (above)",
}
"""``render``'s picture options batch does not offer, and why (tests/test_option_vocabulary.py checks the list)."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from renderer.commands.common import MODEL_FILES, PICTURE_OPTIONS, SHARED, add_options

    parser.epilog = EXAMPLES
    parser.add_argument("models", nargs="+", metavar="MODEL", help=f"{MODEL_FILES}(s)")
    parser.add_argument("-a", "--annotations", action="extend", nargs="+", default=[], metavar="FILE|GLOB",
                        help="annotation files or patterns, one picture set per file (-a a.json b.json, -a "
                        "'runs/*.json', or repeated; {model} allowed)")
    parser.add_argument("-o", "--output", required=True, metavar="DIR", help="folder for the pictures and index.html")
    parser.add_argument("--shared-scale", action="store_true",
                        help="one colour range per metric across all runs of a model (default: one per picture)")
    add_options(parser, ("annotations_format", "strict", "dim", "no_sidecar", "etrecord"))
    work = parser.add_argument_group("where the work runs")
    work.add_argument("--jobs", type=int, metavar="N", help="local worker processes (default: the usable cores)")
    work.add_argument("--dask", metavar="ADDRESS",
                      help="run on the Dask scheduler at ADDRESS (pip install 'annograph[dask]')")
    colour = parser.add_argument_group(SHARED["color_by"].group)
    colour.add_argument("--color-by", "--colour-by", metavar="LIST",  # a list: a picture set per metric
                        help="metrics to colour by, comma-separated, a picture each (default: the runs' only "
                        "numeric metric, or their tool's main one; without either, the built-in macs, or "
                        "weight_bytes when most MACs are unknown)")
    add_options(parser, PICTURE_OPTIONS, left_out=[*LEFT_OUT, "color_by"])


def run(args: argparse.Namespace) -> int:
    from renderer.batch import ModelJob
    from renderer.batch.contact_sheet import earlier_files, html
    from renderer.batch.job import model_prefixes
    from renderer.batch.parallel import local_workers, run_dask, run_local
    from renderer.commands.common import etrecords, stage, warn
    from renderer.commands.render import render_options
    from renderer.core.errors import AnnographError, UsageError
    from renderer.core.numbers import count
    from renderer.core.progress import bar
    from renderer.files import atomic
    from renderer.loaders.registry import check_dims

    options = render_options(args)
    metrics = tuple(m.strip() for m in (args.color_by or "").split(",") if m.strip())
    if not args.annotations:
        raise UsageError("batch needs annotation files: -a FILE or -a 'PATTERN*.json'")
    folder = Path(args.output)
    if folder.exists() and not folder.is_dir():
        raise AnnographError(f"{folder}: not a folder")
    several = len(args.models) > 1
    records = etrecords(args, args.models)
    jobs = [
        ModelJob(model, tuple(_expand(args.annotations, Path(model).stem)), metrics, options,
                 prefix=prefix, annotations_format=args.annotations_format,
                 strict=args.strict, shared_scale=args.shared_scale, sidecar=not args.no_sidecar,
                 etrecord=records.get(model))
        for model, prefix in zip(args.models, model_prefixes(args.models))
    ]
    inputs = [*args.models, *(f for job in jobs for f in job.runs), *([args.inputs] if args.inputs else []),
              *args.etrecord]
    atomic.refuse_inputs([folder / "index.html"], inputs)
    ours = earlier_files(folder)  # refuses a folder whose index.html batch did not write
    check_dims(args.models, options.dims)  # each job pins what its model has; a --dim none has is an error
    folder.mkdir(parents=True, exist_ok=True)
    workers = 0 if args.dask else local_workers(args.jobs)
    results = run_dask(jobs, args.dask) if args.dask else run_local(jobs, workers)
    done, failed = [], 0
    with stage("batch") as facts, bar(len(jobs), "batch", "model") as shown:
        facts.append(f"{count(len(jobs), 'model')} on " + (f"the Dask cluster {args.dask}" if args.dask
                                                             else count(min(workers, len(jobs)), "local worker")))
        for result in results:
            _take(result, folder, inputs, ours, done)
            failed += result.error is not None
            shown.update(1)
    atomic.write_text(folder / "index.html", html(done, f"annograph batch: {len(jobs)} model{'s' if several else ''}"),
                      inputs)
    if failed == len(jobs):
        warn(f"all {len(jobs)} models failed; {folder / 'index.html'} lists why")
        return 1
    if failed:
        warn(f"{failed} of {len(jobs)} models failed; the others were written")
        return 1
    return 0


def _take(result, folder: Path, inputs: list, ours: set[str], done: list) -> None:  # type: ignore[no-untyped-def, type-arg]
    """Say how one model went and write its pictures (never over a file an earlier batch did not write)."""
    from renderer.commands.common import note, warn
    from renderer.core.errors import RenderError
    from renderer.files import atomic

    for line in result.notes:
        warn(line)
    for line in result.said:
        note(line)
    if result.error is None:
        try:  # refused as a whole (an input among the targets, a user's file in the way): this model fails
            targets = [(folder / name, data) for name, data in result.files]
            atomic.refuse_inputs([path for path, _ in targets], [*inputs, *result.read])
            foreign = next((path for path, _ in targets if path.name not in ours and os.path.lexists(path)), None)
            if foreign is not None:
                raise RenderError(f"{foreign} exists and was not written by annograph batch; move it, or choose "
                                  "another folder")
            atomic.write_all(targets, [*inputs, *result.read])
        except RenderError as e:
            result.error = f"{result.model}: {e}"
    if result.error is not None:
        result.files, result.pictures = [], []
        warn(f"error: {result.error}")
    else:
        note(f"{result.model}: {len(result.pictures)} pictures in {folder}")
    done.append(result)


def _expand(patterns: list[str], stem: str) -> list[str]:
    """Files for one model: each pattern with {model} replaced, glob patterns expanded in sorted order."""
    files: list[str] = []
    for pattern in patterns:
        concrete = pattern.replace("{model}", stem)
        if glob.has_magic(concrete):
            files.extend(sorted(glob.glob(concrete)))
        else:
            files.append(concrete)
    return list(dict.fromkeys(files))
