"""Argument helpers shared by the commands."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from typing import Any

from ..progress import Verbosity, count, from_flags, note, stage, warn

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


LONGEST_WAIT = 1_000_000
"""Seconds (11.6 days): waits past ~24.8 days overflow the millisecond timeouts of poll() and select()."""


def positive_seconds(text: str) -> float:
    """argparse type: a finite number of seconds above 0, at most ``LONGEST_WAIT``."""
    value = finite_float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds above 0")
    if value > LONGEST_WAIT:
        raise argparse.ArgumentTypeError(f"{text!r} is more seconds than annograph waits (at most {LONGEST_WAIT})")
    return value


def whole_number(minimum: int) -> Callable[[str], int]:
    """argparse type: a whole number of at least ``minimum`` (``--top 0`` is refused like ``--top -5``)."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{text!r} is below {minimum}")
        return value

    return parse


non_negative_int = whole_number(0)
"""argparse type: a whole number, 0 or more (a seed)."""


OUTPUT_FLAGS = frozenset({"-o", "--summary", "--save-dumps"})
"""Options that name a file or folder to write: an empty name is a usage error for every command."""


def output_name(text: str) -> str:
    """argparse type: a file or folder name to write, never empty (``-o ""`` would write beside nothing)."""
    if not text:
        raise argparse.ArgumentTypeError("an empty name is not a file or folder to write")
    return text


def require_output_names(parser: argparse.ArgumentParser) -> None:
    """Every output option of ``parser`` (``OUTPUT_FLAGS``) refuses an empty name."""
    for action in parser._actions:
        if OUTPUT_FLAGS & set(action.option_strings) and action.type is None:
            action.type = output_name


def add_annotation_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-a", "--annotations", action="append", default=[], metavar="FILE",
                        help="annotation file (repeatable; JSON, YAML, CSV, or a tool's own output)")
    parser.add_argument("--annotations-format", metavar="NAME",
                        help="read every -a file with this reader instead of detecting it")
    parser.add_argument("--strict", action="store_true", help="ids that match nothing are an error")
    add_dim_argument(parser)
    parser.add_argument("--no-sidecar", action="store_true",
                        help="do not pick up MODEL.annotations.* / MODEL.onnx.annotations.* beside the model")


def add_verbosity_arguments(parser: argparse.ArgumentParser) -> None:
    """-q / -v, the same for every command (``renderer.cli`` adds them to each)."""
    say = parser.add_mutually_exclusive_group()
    say.add_argument("-q", "--quiet", action="store_true", help="only errors and warnings (no summaries, no progress bars)")
    say.add_argument("-v", "--verbose", action="store_true", help="also each stage's time and sizes")


def verbosity_of(args: argparse.Namespace) -> Verbosity:
    return from_flags(getattr(args, "quiet", False), getattr(args, "verbose", False))


def add_dim_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dim", action="append", default=[], metavar="NAME=VALUE",
                        help="pin a free input dimension (repeatable): an ONNX input's dim name (--dim batch=1 "
                             "--dim 'seq len=128'; split at the last =) or a TFLite axis (--dim axis1=128; batch is "
                             "axis0); a name none of the model's free dims has is an error")


def add_inputs_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--inputs", metavar="FILE.npz",
                        help="real values for the model's inputs (one array per input name): their shapes "
                             "pin every input dim, and one run on them (onnxruntime, or LiteRT for TFLite) gives "
                             "the shapes that depend on values (a decoder's length, inside If/Loop bodies too), "
                             "instead of a run on zeros")


def load_noted(path: str, dim_args: list[str], check_dims: bool = True, inputs: str | None = None,
               profiles: list[Any] | None = None) -> Any:
    """The model with ``--dim`` applied; the loader's notes (how the dims could be pinned) go to stderr.
    ``check_dims``: a ``--dim`` this model cannot pin is an error (runs over several models check the union).
    ``inputs``, ``profiles``: where shapes that depend on input values come from (``loaders.RealValues``)."""
    from ..loaders import load_model
    from ..pinning import parse

    with stage("load") as facts:
        model = load_model(path, dims=parse(dim_args), check_dims=check_dims, inputs=inputs, profiles=profiles or ())
        facts.append(f"{model.path} ({model.format}, {count(len(model.graphs), 'graph')}, "
                     f"{count(sum(len(g.nodes) for g in model.graphs), 'operator')}, "
                     f"{count(sum(len(g.values) for g in model.graphs), 'tensor')})")
    for line in model.notes:
        warn(line)
    return model


def load_annotated(args: argparse.Namespace, model_path: str | None = None, embedded: bool = True,
                   check_dims: bool = True) -> tuple[Any, Any]:
    """The model and its merged annotations (``renderer.load_annotations``): the model's own (when ``embedded``),
    sidecars (unless ``--no-sidecar``), then ``-a`` files. ``check_dims`` as for ``load_noted``.

    Prints one coverage line per source that has rows (a warning when some ids match nothing, else a note).
    """
    from ..annotations import load_annotations, shape_profiles

    path = model_path or args.model
    profiles = shape_profiles(path, args.annotations, args.annotations_format, sidecar=not args.no_sidecar)
    model = load_noted(path, args.dim, check_dims, getattr(args, "inputs", None), profiles)
    with stage("annotations") as facts:
        annotations = load_annotations(args.annotations, model, fmt=args.annotations_format, strict=args.strict,
                                       sidecar=not args.no_sidecar, embedded=embedded)
        facts.append(f"{count(len(annotations.ops), 'operator')} and {count(len(annotations.tensors), 'tensor')} "
                     "annotated")
    say_coverage(annotations)
    return model, annotations


def say_coverage(annotations: Any) -> None:
    """The sidecars used, one coverage line per source that has rows (a warning when some ids match nothing,
    else a note), and what was cut reading them."""
    for path in annotations.sidecars:
        note(f"using sidecar annotations {path} (--no-sidecar to skip)")
    for coverage in annotations.coverage:
        if coverage.unmatched:
            warn(coverage.line())
        elif coverage.total_ops or coverage.matched_tensors:
            note(coverage.line())
    for line in annotations.notes:
        warn(line)
