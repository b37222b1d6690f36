"""``annograph diff``: each operator coloured by how a metric changed, before → after; a CI gate on regressions."""

from __future__ import annotations

import argparse
from pathlib import Path

HELP = "colour each operator by how a metric changed between two runs or two models (exit 3 past --fail-above)"

EXAMPLES = """examples:
  annograph diff model.onnx --before a.json --after b.json --metric latency_us -o diff.svg
  annograph diff old.onnx new.onnx --metric macs --change absolute -o diff.svg --summary diff.md
  annograph diff old.onnx new.onnx --before old.json --after new.json --metric latency_us --fail-above 10% -o d.png

With one model, --before and --after name annotation files of that model (any format -a reads). With two models,
operators are paired by node name, then by output tensor name (one line says how many; the rest are listed);
each model's own annotations and sidecars count, and a built-in metric (macs, params, output_bytes…) is computed
from each model. The picture is the (after) model: warm boxes got worse, cool ones better, on a scale symmetric
around 0 (reversed for higher-is-better metrics such as sqnr_db); boxes with a value on one side only are grey
with a dashed purple border. --fail-above 10% (relative) or 2.5 (metric units) lists each operator whose
regression is larger on stderr and exits with status 3, except operators under --min-share of the model total
(default 1%: a few microseconds' noise on a small kernel does not fail a pull request); --fail-total-above
gates the model total. The pictures and the summary are written all the same."""

EXIT_REGRESSION = 3
"""Exit status when an operator's regression crosses ``--fail-above`` (1 stays for errors)."""
STDERR_LISTED = 20


COLOURED_BY_THE_CHANGE = "the boxes are coloured by the change of --metric, on a diverging scale symmetric around 0"
LEFT_OUT = {
    "color_by": "--metric names what is compared; " + COLOURED_BY_THE_CHANGE,
    "cmap": COLOURED_BY_THE_CHANGE + " (reversed for higher-is-better metrics, so a regression is warm)",
    "norm": COLOURED_BY_THE_CHANGE,
    "vmin": COLOURED_BY_THE_CHANGE,
    "vmax": COLOURED_BY_THE_CHANGE,
    "center": COLOURED_BY_THE_CHANGE,
    "edge_by": "a diff compares operators; its edges are drawn plain",
    "edge_cmap": "the colour map of --edge-by, which is left out (above)",
}
"""``render``'s picture options diff does not offer, and why (tests/test_option_vocabulary.py checks the list)."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from renderer.commands.common import PICTURE_OPTIONS, SUMMARY_OPTIONS, add_deprecated_alias, add_options

    parser.epilog = EXAMPLES
    parser.add_argument("models", nargs="+", metavar="MODEL", help="one model (with --before/--after files), or "
                        "BEFORE and AFTER models of the same graph")
    parser.add_argument("--before", action="append", default=[], metavar="FILE",
                        help="annotation file of the before side (repeatable)")
    parser.add_argument("--after", action="append", default=[], metavar="FILE",
                        help="annotation file of the after side (repeatable)")
    # single-dash long options, unlike every other: still read for scripts that use them
    add_deprecated_alias(parser, "-a-before", "--before")
    add_deprecated_alias(parser, "-a-after", "--after")
    parser.add_argument("--metric", help="operator metric to compare (a file's, or built-in: macs, params, "
                        "output_bytes…); default: the after files' only numeric metric or their tool's main one, "
                        "else macs (weight_bytes when most MACs are unknown), as render colours")
    parser.add_argument("--change", choices=("relative", "absolute"), default="relative",
                        help="colour and rank by the relative change in %% (default) or the absolute one")
    parser.add_argument("-o", "--output", action="append", default=[], required=True, metavar="PATH",
                        help="picture to write (repeatable): .svg .png .pdf .dot .html .md")
    add_gate_arguments(parser)
    add_options(parser, ("annotations_format", "strict", "no_sidecar", "dim", "etrecord"))
    add_options(parser, [*PICTURE_OPTIONS, *SUMMARY_OPTIONS], left_out=LEFT_OUT)
    add_deprecated_alias(parser, "--top-k", "--summary-rows")


def add_gate_arguments(parser: argparse.ArgumentParser) -> None:
    """What fails the diff (exit 3), and which way is worse."""
    gate = parser.add_argument_group("gate")
    gate.add_argument("--fail-above", metavar="N%|N", help="exit 3 when an operator got worse by more than this: "
                      "10%% (relative) or 2.5 (in the metric's units)")
    gate.add_argument("--min-share", default="1%", metavar="PCT", help="operators under this share of the model "
                      "total do not trip --fail-above (default 1%%; 0 for none; metrics that sum over operators)")
    gate.add_argument("--fail-total-above", metavar="N%|N", help="exit 3 when the model total got worse by more "
                      "than this: 5%% (relative) or 2.5 (in the metric's units)")
    better = gate.add_mutually_exclusive_group()
    better.add_argument("--higher-is-better", dest="higher_is_better", action="store_const", const=True,
                        default=None, help="a drop is the regression (default: what the files say, else lower is "
                        "better)")
    better.add_argument("--lower-is-better", dest="higher_is_better", action="store_const", const=False,
                        help="a rise is the regression")


def run(args: argparse.Namespace) -> int:
    from renderer import diff as differ
    from renderer.annotations.registry import input_paths
    from renderer.compose.output_plan import OutputPlan
    from renderer.compose.rendering import produce
    from renderer.core.errors import UsageError
    from renderer.core.progress import note, warn
    from renderer.reports.summary import check_link_base, check_summary_name, check_top_k

    if len(args.models) not in (1, 2):
        raise UsageError("diff takes one model (with --before and --after files) or two models")
    if len(args.models) == 1 and not (args.before and args.after):
        raise UsageError("with one model, give the annotation files of both sides: --before FILE --after FILE")
    threshold = differ.Threshold.parse(args.fail_above) if args.fail_above is not None else None
    total_threshold = (differ.Threshold.parse(args.fail_total_above, "--fail-total-above")
                       if args.fail_total_above is not None else None)
    min_share = differ.parse_share(args.min_share)
    check_top_k(args.summary_rows)
    check_link_base(args.summary_link_base)
    plan = OutputPlan.build(args.output, inputs=[*args.models, *args.before, *args.after,
                                                 *([args.inputs] if args.inputs else []), *args.etrecord],
                            also=[args.summary] if args.summary else [])
    check_summary_name(args.summary)  # after: an input named there is said as such, whatever its extension
    from renderer.files import atomic

    atomic.refuse_missing_folders(plan.names)

    model, diff, read = _diff(args)
    annotations = differ.annotations(diff)
    plan = plan.with_inputs([*read, *input_paths(model, annotations)])  # the sidecars found
    if diff.matching is not None:
        one_sided = diff.matching.only_before or diff.matching.only_after
        (warn if one_sided else note)(diff.matching.line(diff.before_name, diff.after_name))
    options = differ.render_options(diff, _base_options(args))
    written = produce(model, annotations, options, plan)
    gate = diff.gate(threshold, min_share, total_threshold)
    if args.summary:
        text = differ.markdown(diff, differ.GateView(threshold, total_threshold, gate),
                               plan.pictures_for(args.summary), args.summary_rows, args.summary_link_base)
        written.append((args.summary, text.encode("utf-8")))
    plan.write(written)  # the pictures and the summary together, all or nothing
    note(f"Δ {diff.metric}: " + ", ".join(f"{n} {what}" for what, n in diff.counts().items())
         + f"; wrote {', '.join(plan.names)}")
    _say_gate(diff, threshold, total_threshold, gate)
    return EXIT_REGRESSION if gate.failed else 0


def _say_gate(diff, threshold, total_threshold, gate) -> None:  # type: ignore[no-untyped-def]
    """Each operator past the gate on stderr, worst first; how many were under the share floor (or why there is
    none); the total."""
    from renderer.core.escape import clean
    from renderer.core.progress import note, warn

    for item in gate.crossing[:STDERR_LISTED]:
        change = diff.change_text(item, threshold.relative, compact=True)
        warn(f"{item.name} ({item.op_type} {item.where}): {diff.metric} {change} ({diff.before_after(item)}) is past "
             f"--fail-above {threshold}")
    if len(gate.crossing) > STDERR_LISTED:
        warn(f"… and {len(gate.crossing) - STDERR_LISTED} more operators past --fail-above {threshold}")
    if gate.floor_off:
        note(f"--min-share {gate.asked:g}% does not apply to {clean(diff.metric, 60)}: {gate.floor_off}; every "
             "operator past --fail-above counts")
    if gate.below_floor:
        note(f"{len(gate.below_floor)} operators past --fail-above {threshold} are each under {gate.floor:g}% of "
             f"the model's {diff.metric} and do not count (--min-share)")
    if gate.total_crossed:
        total = diff.total_change()
        warn(f"model total: {diff.metric} {diff.change_text(total, total_threshold.relative, compact=True)} "
             f"({diff.before_after(total)}) is past --fail-total-above {total_threshold}")


def _diff(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    """(the model to draw, the diff, every file read: the models', their sidecars, the readers' side files)."""
    from renderer import diff as differ
    from renderer.annotations.registry import input_paths, load_annotations
    from renderer.commands.common import etrecords, load_noted, say_coverage
    from renderer.core.pinning import check_union
    from renderer.core.pinning import parse as parse_dims

    def annotations(paths: list[str], model, own: bool):  # type: ignore[no-untyped-def]
        notes = load_annotations(paths, model, fmt=args.annotations_format, strict=args.strict,
                                 sidecar=own and not args.no_sidecar, embedded=own)
        say_coverage(notes)
        return notes

    relative = args.change == "relative"
    records = etrecords(args, args.models)
    if len(args.models) == 1:
        model = load_noted(args.models[0], args.dim, inputs=args.inputs, keep_free=args.keep_free_dims,
                           etrecord=records.get(args.models[0]))
        before, after = annotations(args.before, model, False), annotations(args.after, model, False)
        names = _names(args.before, args.after)
        metric = args.metric or _default_metric(after, model)
        diff = differ.one_model(model, before, after, metric, relative, args.higher_is_better, names)
        return model, diff, [*input_paths(model, before), *input_paths(model, after)]
    before_model, model = (load_noted(path, args.dim, check_dims=False, inputs=args.inputs,
                                      keep_free=args.keep_free_dims, etrecord=records.get(path))
                           for path in args.models[:2])
    check_union(args.models[:2], parse_dims(args.dim), [before_model.pinnable_dims, model.pinnable_dims])
    before, after = annotations(args.before, before_model, True), annotations(args.after, model, True)
    diff = differ.two_models(before_model, model, before, after, args.metric or _default_metric(after, model),
                             relative, args.higher_is_better, _names([args.models[0]], [args.models[1]]))
    return model, diff, [*input_paths(before_model, before), *input_paths(model, after)]


def _default_metric(after, model) -> str:  # type: ignore[no-untyped-def]
    """The metric a diff compares when no --metric is given: the one render would colour the after side by."""
    from renderer.compose.rendering import default_colour
    from renderer.core.errors import MetricError
    from renderer.core.progress import note

    default = default_colour(model, [after])
    if default.metric is None:
        raise MetricError(f"diff needs --metric: {default.why or 'no metric to compare'}")
    note(f"comparing {default.metric}: {default.why}; --metric to choose another")
    return default.metric


def _names(before: list[str], after: list[str]) -> tuple[str, str]:
    """What to call each side: its (first) file's name, or the whole path when both names are the same."""
    def name(paths: list[str], whole: bool) -> str:
        first = paths[0] if whole else Path(paths[0]).name
        return first + (f" +{len(paths) - 1}" if len(paths) > 1 else "")

    whole = Path(before[0]).name == Path(after[0]).name
    return name(before, whole), name(after, whole)


def _base_options(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    """The picture options given (layout, pages, focus…): the diff sets the colours (``diff.render_options``)."""
    from renderer.core.options import from_values

    return from_values(vars(args))
