"""Argument helpers shared by the commands."""

from __future__ import annotations

import argparse
import dataclasses
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from renderer.core.numbers import count
from renderer.core.options import SUMMARY_MAX_TOP_K, default
from renderer.core.progress import Verbosity, from_flags, note, stage, warn

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
MODEL_FORMATS = {
    "onnx": "ONNX", "tflite": "TFLite", "torch": "torch.export (.pt2)", "executorch": "ExecuTorch (.pte)",
    "openvino": "OpenVINO IR (.xml, its .bin beside)", "openvino-exec": "OpenVINO execution graph",
    "tensorrt": "TensorRT layer graph (trtexec --exportLayerInfo)"}
"""Each loader's format (``loaders.registry``) as the commands' help names it."""
MODEL_FILES = f"{', '.join(list(MODEL_FORMATS.values())[:-1])} or {list(MODEL_FORMATS.values())[-1]} file"
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


@dataclass(frozen=True, slots=True)
class Option:
    """One option several commands offer: its one spelling, default and help (``SHARED``)."""

    flags: tuple[str, ...]
    group: str
    """Its argument group's title in --help ("" for the command's main options)."""
    settings: dict[str, Any] = field(default_factory=dict)
    """The rest of ``add_argument``'s arguments: action, type, default, metavar, help…"""


def _option(group: str, *flags: str, **settings: Any) -> Option:
    return Option(flags, group, settings)


SHARED: dict[str, Option] = {
    "annotations": _option("", "-a", "--annotations", action="append", default=[], metavar="FILE",
                           help="annotation file (repeatable; JSON, YAML, CSV, or a tool's own output)"),
    "annotations_format": _option("", "--annotations-format", metavar="NAME",
                                  help="read every annotation file with this reader instead of detecting it"),
    "strict": _option("", "--strict", action="store_true", help="ids that match nothing are an error"),
    "dim": _option("", "--dim", action="append", default=[], metavar="NAME=VALUE",
                   help="pin a free input dimension (repeatable): an ONNX input's dim name (--dim batch=1 --dim 'seq "
                        "len=128'; split at the last =) or a TFLite axis (--dim axis1=128; batch is axis0); a name "
                        "none of the model's free dims has is an error. Dims left free take a stated value "
                        "(batch=1…, see --keep-free-dims). A KV cache's dims are tied (total = past + sequence): "
                        "--dim prefill=N is N prompt tokens, --dim decode=N one token after N cached"),
    "keep_free_dims": _option("", "--keep-free-dims", action="store_true",
                              help="leave the free input dims no --dim pins free (costs that need them read n/a) "
                                   "instead of assuming a value for each: batch 1, sequences 128, image height and "
                                   "width 224, or what the model's metadata or config says (the legend says which)"),
    "no_sidecar": _option("", "--no-sidecar", action="store_true",
                          help="do not pick up MODEL.annotations.* / MODEL.onnx.annotations.* beside the model"),
    "inputs": _option("", "--inputs", metavar="FILE.npz",
                      help="real values for the model's inputs (one array per input name): their shapes pin every "
                           "input dim, and one run on them (onnxruntime, or LiteRT for TFLite) gives the shapes that "
                           "depend on values (a decoder's length, inside If/Loop bodies too), instead of a run on "
                           "zeros"),
    "etrecord": _option("", "--etrecord", action="append", default=[], metavar="FILE",
                        help="an ExecuTorch program's ETRecord (generate_etrecord), for its operators' names and "
                             "module groups, instead of the one beside the .pte (NAME.etrecord, etrecord.bin…); "
                             "with several programs, once for each in their order"),
    "color_by": _option("colour", "--color-by", "--colour-by", metavar="METRIC",
                        help="operator metric filling the boxes, or 'none' for plain boxes (default: the "
                             "annotations' only numeric metric, or their tool's main one; without either, the "
                             "built-in macs, or weight_bytes when most MACs are unknown)"),
    "cmap": _option("colour", "--cmap", metavar="NAME", help="colour map: heat, traffic, ice, diverging (ours) or "
                    "any matplotlib one; append _r to reverse"),
    "norm": _option("colour", "--norm", choices=("linear", "log", "quantile"), default=default("norm"),
                    help=f"how values map onto the colour map (default {default('norm')})"),
    "vmin": _option("colour", "--vmin", type=finite_float, help="value at the low end of the colour map"),
    "vmax": _option("colour", "--vmax", type=finite_float, help="value at the high end of the colour map"),
    "center": _option("colour", "--center", type=finite_float, help="value at the middle of a diverging colour map"),
    "edge_by": _option("colour", "--edge-by", metavar="METRIC",
                       help="tensor metric setting edge width and colour, e.g. bytes"),
    "edge_cmap": _option("colour", "--edge-cmap", metavar="NAME", help="colour map for --edge-by (default ice)"),
    "show": _option("layout", "--show", metavar="KEYS", help="values listed in each box: comma-separated keys, 'all' "
                    "or 'none' (default: the colour metric and three more; diff: the change, before → after and "
                    "what is missing)"),
    "show_constants": _option("layout", "--show-constants", action="store_true",
                              help="draw constants, shape computations and weight conversions instead of folding "
                                   "them into the boxes that read them"),
    "no_edge_labels": _option("layout", "--no-edge-labels", action="store_true", help="no shapes on edges"),
    "rankdir": _option("layout", "--rankdir", choices=("TB", "LR"), default=default("rankdir"),
                       help=f"top to bottom (TB) or left to right (LR) (default {default('rankdir')})"),
    "title": _option("layout", "--title", help="picture title (default: the annotations' title or the file name; "
                     "diff: Δ METRIC: BEFORE → AFTER)"),
    "max_tensor_elements": _option("layout", "--max-tensor-elements", type=int, metavar="N",
                                   default=default("max_tensor_elements"),
                                   help="skip weight statistics for tensors larger than N elements (default "
                                        f"{default('max_tensor_elements') // 1_000_000}M)"),
    "timeout": _option("layout", "--timeout", type=positive_seconds, default=default("timeout"),
                       help=f"seconds Graphviz may run, for the whole report (default {default('timeout'):g})"),
    "layout_cache": _option("layout", "--layout-cache", metavar="DIR",
                            help="keep layouts (and the model's shape runs and MACs formulas) in DIR, so that a "
                                 "re-render with new numbers (fills, values, tooltips) skips them (default: "
                                 "$ANNOGRAPH_CACHE_DIR, else the user cache folder; at most 256 MiB, least "
                                 "recently used first out)"),
    "no_layout_cache": _option("layout", "--no-layout-cache", action="store_true",
                               help="lay every picture out anew and keep no layout (the output is the same bytes)"),
    "collapse": _option("big models", "--collapse", default=default("collapse"), metavar="auto|none|DEPTH",
                        help="auto (default): one picture up to 1,500 drawn operators, above that an overview of "
                             "groups (name scopes, subgraphs, or stages) with a linked page per group; none: always "
                             "one picture; DEPTH: the overview with groups nested at most DEPTH deep. Pages go to "
                             "OUTPUT.pages/ (.svg .png .dot), into one file (.html, .pdf)"),
    "aggregate": _option("big models", "--aggregate", choices=("sum", "max", "min", "mean"),
                         help="how a group box combines its operators' colour metric (default: by the metric: costs "
                              "add up, errors take the worst; diff: relative changes average, absolute ones add up)"),
    "focus": _option("big models", "--focus", action="append", default=[], metavar="ID",
                     help="draw only this operator and its neighbourhood (repeatable)"),
    "radius": _option("big models", "--radius", type=whole_number(0), default=default("radius"), metavar="K",
                      help=f"hops around --focus and --top (default {default('radius')})"),
    "top": _option("big models", "--top", type=whole_number(1), metavar="K",
                   help="draw the K operators with the highest colour metric (diff: the largest changes up), each "
                        "with its neighbourhood, a page each after an index page"),
    "together": _option("big models", "--together", action="store_true",
                        help="with --focus/--top: every neighbourhood on one page"),
    "summary": _option("pull-request summary", "--summary", metavar="FILE.md", type=output_name,
                       help="also write a Markdown summary for a pull-request comment: the model, totals, the top "
                            "operators (diff: the largest regressions and improvements), coverage, links to the "
                            "pictures of this run"),
    "summary_link_base": _option("pull-request summary", "--summary-link-base", metavar="URL",
                                 help="start the summary's links to the pictures with this URL (e.g. where CI "
                                      "publishes them) instead of paths relative to the summary"),
    "summary_rows": _option("pull-request summary", "--summary-rows", type=int, default=default("summary_top_k"),
                            metavar="K", help=f"rows of each table of the summary (0 to {SUMMARY_MAX_TOP_K}, default "
                                              f"{default('summary_top_k')})"),
}
"""Every option more than one command offers, by its ``dest``: commands add them with ``add_options``, so each
has one spelling, one default and one help text (tests/test_option_vocabulary.py walks the parser)."""

ANNOTATION_OPTIONS = ("annotations", "annotations_format", "strict", "dim", "no_sidecar")
PICTURE_OPTIONS = ("inputs", "color_by", "cmap", "norm", "vmin", "vmax", "center", "edge_by", "edge_cmap", "show",
                   "show_constants", "no_edge_labels", "rankdir", "title", "max_tensor_elements", "timeout",
                   "layout_cache", "no_layout_cache", "collapse", "aggregate", "focus", "radius", "top", "together")
"""``render``'s options that change the picture: ``batch`` and ``diff`` offer each, or say why not
(their ``LEFT_OUT``)."""
SUMMARY_OPTIONS = ("summary", "summary_link_base", "summary_rows")


def add_options(parser: argparse.ArgumentParser, names: Iterable[str], left_out: Iterable[str] = (),
                grouped: bool = True) -> None:
    """Add the ``SHARED`` options ``names`` (but not ``left_out``) to ``parser``, each in its argument group
    (``grouped``; the parser's own group of that title when it has one) or all among the command's main options."""
    groups: dict[str, Any] = {group.title: group for group in parser._action_groups if group.title}
    groups[""] = parser
    skipped = set(left_out)
    for name in names:
        if name in skipped:
            continue
        for one in (name, "keep_free_dims") if name == "dim" else (name,):  # --dim brings its companion
            option = SHARED[one] if grouped else dataclasses.replace(SHARED[one], group="")
            if option.group not in groups:
                groups[option.group] = parser.add_argument_group(option.group)
            groups[option.group].add_argument(*option.flags, dest=one, **option.settings)


def add_deprecated_alias(parser: argparse.ArgumentParser, alias: str, replacement: str) -> None:
    """``alias`` still works as ``replacement`` (a spelling scripts may use), hidden from --help, with a warning."""
    target = next(action for action in parser._actions if replacement in action.option_strings)

    class Deprecated(type(target)):  # type: ignore[misc, valid-type]
        def __call__(self, parser, namespace, values, option_string=None):  # type: ignore[no-untyped-def]
            warn(f"{option_string} is deprecated and will be removed; use {replacement}")
            super().__call__(parser, namespace, values, option_string)

    settings = {"nargs": target.nargs} if target.nargs not in (None, 0) else {}
    if target.type is not None:
        settings["type"] = target.type
    if target.choices is not None:
        settings["choices"] = target.choices
    parser.add_argument(alias, action=Deprecated, dest=target.dest, default=argparse.SUPPRESS,
                        help=argparse.SUPPRESS, **settings)


def add_verbosity_arguments(parser: argparse.ArgumentParser) -> None:
    """-q / -v, the same for every command (``renderer.commands.cli`` adds them to each)."""
    say = parser.add_mutually_exclusive_group()
    say.add_argument("-q", "--quiet", action="store_true",
                     help="only errors and warnings (no summaries, no progress bars)")
    say.add_argument("-v", "--verbose", action="store_true", help="also each stage's time and sizes")


def verbosity_of(args: argparse.Namespace) -> Verbosity:
    return from_flags(getattr(args, "quiet", False), getattr(args, "verbose", False))


def etrecords(args: argparse.Namespace, models: list[str]) -> dict[str, str]:
    """Model path → its ``--etrecord`` (``registry.etrecords_for``); none when the command has no such option."""
    from renderer.loaders.registry import etrecords_for

    return etrecords_for(models, getattr(args, "etrecord", None) or [])


def load_noted(path: str, dim_args: list[str], check_dims: bool = True, inputs: str | None = None,
               profiles: list[Any] | None = None, keep_free: bool = False, etrecord: str | None = None) -> Any:
    """The model with ``--dim`` applied; the loader's notes (how the dims could be pinned) go to stderr.
    ``check_dims``: a ``--dim`` this model cannot pin is an error (runs over several models check the union).
    ``inputs``, ``profiles``: where shapes that depend on input values come from (``loaders.RealValues``).
    ``keep_free``: ``--keep-free-dims``, no value assumed for the dims left free. ``etrecord``: ``--etrecord``'s
    file for this model."""
    from renderer.core.pinning import parse
    from renderer.loaders.registry import load_model

    with stage("load") as facts:
        model = load_model(path, dims=parse(dim_args), check_dims=check_dims, inputs=inputs, profiles=profiles or (),
                           assume_dims=not keep_free, etrecord=etrecord)
        facts.append(_model_facts(model))
    for line in model.notes:
        warn(line)
    return model


def _model_facts(model: Any) -> str:
    """What ``-v`` says of a loaded model."""
    return (f"{model.path} ({model.format}, {count(len(model.graphs), 'graph')}, "
            f"{count(sum(len(g.nodes) for g in model.graphs), 'operator')}, "
            f"{count(sum(len(g.values) for g in model.graphs), 'tensor')})")


def load_annotated(args: argparse.Namespace, model_path: str | None = None, embedded: bool = True,
                   check_dims: bool = True, etrecord: str | None = None) -> tuple[Any, Any]:
    """The model and its merged annotations (``renderer.load_annotations``): the model's own (when ``embedded``),
    sidecars (unless ``--no-sidecar``), then ``-a`` files. ``check_dims`` and ``etrecord`` as for ``load_noted``.

    Prints one coverage line per source that has rows (a warning when some ids match nothing, else a note).
    """
    from renderer.annotations.registry import load_annotations
    from renderer.core.pinning import parse
    from renderer.integrations.loading import load_model_for

    path = model_path or args.model
    with stage("load") as facts:
        model = load_model_for(path, args.annotations, fmt=args.annotations_format, sidecar=not args.no_sidecar,
                               dims=parse(args.dim), check_dims=check_dims, inputs=getattr(args, "inputs", None),
                               keep_free_dims=args.keep_free_dims, etrecord=etrecord)
        facts.append(_model_facts(model))
    for line in model.notes:
        warn(line)
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
