"""``annograph export``: annotations out to Model Explorer, Netron, or annograph's own CSV/JSON."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

HELP = "write a model's annotations for Model Explorer or Netron, or as annograph CSV/JSON"

EXAMPLES = """examples:
  annograph export model.onnx -a profile.json --to model-explorer --metric latency_us -o latency.json
  annograph export model.tflite -a stats.csv --to netron -o model.attachment.json
  annograph export model.onnx -a profile.json -a qdq_loss.json --to csv -o merged.csv"""

FORMATS = ("model-explorer", "netron", "csv", "json")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from renderer.commands.common import ANNOTATION_OPTIONS, add_options

    parser.epilog = EXAMPLES
    parser.add_argument("model", metavar="MODEL", help="ONNX or TFLite file")
    parser.add_argument("--to", required=True, choices=FORMATS, help="output format")
    parser.add_argument(
        "-o", "--output", metavar="PATH",
        help="output file (default beside the model: NAME.model-explorer.json, NAME.netron.json, "
        "NAME.export.csv or NAME.export.json)",
    )
    parser.add_argument(
        "--metric", help="model-explorer: the operator metric to export (default: the first one)"
    )
    parser.add_argument("--cmap", metavar="NAME", help="model-explorer: colour map for the gradient")
    add_options(parser, ANNOTATION_OPTIONS)


def load_annotated(args: argparse.Namespace, embedded: bool = True) -> tuple[Any, Any]:
    from renderer.commands.common import load_annotated as load

    return load(args, embedded=embedded)


def default_output(model: str, fmt: str, extension: str) -> str:
    """``net.onnx`` → ``net.model-explorer.json``, ``net.netron.json``, ``net.export.csv``, ``net.export.json``
    (not ``net.annotations.*``, which would be picked up as a sidecar next time)."""
    path = Path(model)
    tag = "export" if fmt in ("csv", "json") else fmt
    return str(path.with_name(f"{path.stem}.{tag}{extension}"))


def run(args: argparse.Namespace) -> int:
    from renderer.annotations.registry import input_paths
    from renderer.commands.common import count, note, stage, warn
    from renderer.core.progress import waiting
    from renderer.exporters.protocol import ExportOptions
    from renderer.exporters.registry import exporter
    from renderer.files.atomic import refuse_inputs, write_text

    module = exporter(args.to)
    output = args.output or default_output(args.model, args.to, module.EXTENSION)
    refuse_inputs([output], [args.model, *args.annotations])
    model, annotations = load_annotated(args)
    inputs = input_paths(model, annotations)
    with stage("export") as facts, waiting(f"exporting to {args.to}"):
        result = module.export(model, annotations, ExportOptions(metric=args.metric, cmap=args.cmap))
        facts.append(f"{args.to}, {count(len(result.text), 'character')}")
    for line in result.notes:
        warn(line)
    write_text(output, result.text, inputs)
    note(f"wrote {output}")
    return 0
