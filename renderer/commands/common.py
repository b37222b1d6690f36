"""Argument helpers shared by the commands."""

from __future__ import annotations

import argparse
import math
import sys
from typing import Any

from ..errors import AnnographError

LARGEST_OPTION = 1e300  # so that differences and sums of option values stay finite


def finite_float(text: str) -> float:
    """argparse type: a finite number (``nan``, ``inf`` and 1e308 would paint every box black)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not math.isfinite(value) or abs(value) > LARGEST_OPTION:
        raise argparse.ArgumentTypeError(f"{text!r} is not a finite number (between -1e300 and 1e300)")
    return value


def positive_seconds(text: str) -> float:
    """argparse type: a finite number of seconds above 0."""
    value = finite_float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds above 0")
    return value


def parse_dims(items: list[str]) -> dict[str, int]:
    """``["batch=1", "seq=128"]`` → {"batch": 1, "seq": 128}."""
    from ..id_rules import whole_number

    dims: dict[str, int] = {}
    for item in items:
        name, sep, value = item.partition("=")
        number = whole_number(value)
        if not sep or not name.strip() or number is None:
            raise AnnographError(f"--dim {item!r}: expected NAME=VALUE with a whole number (ASCII digits), "
                                 "e.g. batch=1")
        dims[name.strip()] = number
    return dims


def add_annotation_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-a", "--annotations", action="append", default=[], metavar="FILE",
                        help="annotation file (repeatable; JSON, YAML, CSV, or a tool's own output)")
    parser.add_argument("--annotations-format", metavar="NAME",
                        help="read every -a file with this reader instead of detecting it")
    parser.add_argument("--strict", action="store_true", help="ids that match nothing are an error")
    add_dim_argument(parser)
    parser.add_argument("--no-sidecar", action="store_true",
                        help="do not pick up MODEL.annotations.* / MODEL.onnx.annotations.* beside the model")
    parser.add_argument("-q", "--quiet", action="store_true", help="only warnings about unmatched ids")


def warn(message: str) -> None:
    from ..escape import clean

    print(f"annograph: {clean(message, 2000)}", file=sys.stderr)


def add_dim_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dim", action="append", default=[], metavar="NAME=VALUE",
                        help="pin a dynamic dimension (repeatable): an ONNX dim name (--dim batch=1 --dim seq=128) "
                             "or a TFLite axis (--dim axis1=128; batch is axis0)")


def load_noted(path: str, dim_args: list[str]) -> Any:
    """The model with ``--dim`` applied; the loader's notes (how the dims could be pinned) go to stderr."""
    from ..loaders import load_model

    model = load_model(path, dims=parse_dims(dim_args))
    for note in model.notes:
        warn(note)
    return model


def load_annotated(args: argparse.Namespace, model_path: str | None = None, embedded: bool = True) -> tuple[Any, Any]:
    """The model and its merged annotations (``renderer.load_annotations``): the model's own (when ``embedded``),
    sidecars (unless ``--no-sidecar``), then ``-a`` files.

    Prints one coverage line per source that has rows (unmatched ids always, the rest unless ``--quiet``).
    """
    from ..annotations import load_annotations

    model = load_noted(model_path or args.model, args.dim)
    annotations = load_annotations(args.annotations, model, fmt=args.annotations_format, strict=args.strict,
                                   sidecar=not args.no_sidecar, embedded=embedded)
    for path in annotations.sidecars:
        warn(f"using sidecar annotations {path} (--no-sidecar to skip)")
    for coverage in annotations.coverage:
        has_rows = coverage.total_ops or coverage.matched_tensors or coverage.unmatched
        if coverage.unmatched or (has_rows and not args.quiet):
            warn(coverage.line())
    for note in annotations.notes:
        warn(note)
    return model, annotations
