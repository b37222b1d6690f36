"""``annograph embed``: store annotations inside a copy of the model, so they travel with it."""

from __future__ import annotations

import argparse
from pathlib import Path

HELP = "write annotations into a copy of the model (ONNX metadata_props, a TFLite Metadata entry)"

EXAMPLES = """examples:
  annograph embed model.onnx -a profile.json -o model.annotated.onnx
  annograph embed model.tflite -a stats.yaml -o model.annotated.tflite
  annograph render model.annotated.onnx --color-by latency_us     (the annotations come along)

The copy still loads and runs unchanged in ONNX Runtime / LiteRT. Embedding again replaces what annograph
embedded before; other metadata is kept."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from renderer.commands.common import ANNOTATION_OPTIONS, add_options

    parser.epilog = EXAMPLES
    parser.add_argument("model", metavar="MODEL", help="ONNX or TFLite file")
    parser.add_argument("-o", "--output", required=True, metavar="PATH", help="the annotated copy")
    add_options(parser, ANNOTATION_OPTIONS)


def run(args: argparse.Namespace) -> int:
    from renderer.commands.common import note, stage
    from renderer.commands.export import load_annotated
    from renderer.core.errors import AnnographError
    from renderer.core.numbers import count
    from renderer.core.progress import waiting
    from renderer.files.atomic import refuse_inputs

    source, output = Path(args.model), Path(args.output)
    refuse_inputs([output], [source, *args.annotations])
    model, annotations = load_annotated(args, embedded=False)
    if not annotations.ops and not annotations.tensors and not annotations.graph.values:
        raise AnnographError(
            "nothing to embed: the annotation files match no operator or tensor of the model"
        )
    if model.format == "onnx":
        from renderer.exporters.embed_onnx import embed
    elif model.format == "tflite":
        from renderer.exporters.embed_tflite import embed
    else:
        raise AnnographError(
            f"{source}: embedding is supported for ONNX and TFLite models, not {model.format}"
        )
    with stage("embed") as facts, waiting("writing the copy"):
        counts = embed(model, annotations, output)
        facts.append(f"{output}, {count(output.stat().st_size, 'byte')}")
    stored = ", ".join(f"{n} {what}" for what, n in counts.items())
    note(f"wrote {output} ({stored})")
    return 0
