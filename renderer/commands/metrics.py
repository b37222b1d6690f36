"""``annograph metrics``: the built-in metrics of every operator and tensor, as an annotation file."""

from __future__ import annotations

import argparse
from typing import Any

from renderer.commands.common import MODEL_FILES, add_deprecated_alias, add_options

HELP = "compute parameters, MACs, memory, sparsity and weight statistics into a .json/.csv annotation file"

EXAMPLES = """examples:
  annograph metrics model.onnx                                        (the totals and MACs by operator type)
  annograph metrics model.onnx -o metrics.csv --dim batch=1 --dim seq=128
  annograph metrics model.onnx -o metrics.csv -a profile.json        (shapes as onnxruntime ran them)
  annograph metrics model.onnx -o metrics.csv --inputs sample.npz     (shapes of one run on these values)
  annograph render model.onnx -a metrics.csv --color-by macs -o model.svg

The file uses the generic annotation format (ids S:N), so `render -a` reads it back. Values that cannot be
computed are written as "n/a (reason)".

metrics (--metrics):
  operators: params weight_bytes output_bytes macs flops intensity sparsity effective_macs
             weight_min weight_max weight_mean weight_std weight_zero_fraction
  tensors:   bytes elements value_min value_max value_mean value_std value_zero_fraction"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.epilog = EXAMPLES
    parser.add_argument("model", metavar="MODEL", help=MODEL_FILES)
    parser.add_argument("-o", "--output", metavar="PATH",
                        help="output file: .json, .csv or .tsv (without it: the totals and the MACs of each operator "
                             "type, printed)")
    parser.add_argument("--table-format", choices=("json", "csv", "tsv"),
                        help="write the table in this format (default: from the extension of -o)")
    parser.add_argument("-a", "--annotations", action="append", default=[], metavar="FILE",
                        help="onnxruntime profile of the model (repeatable): shapes come from those it recorded, "
                             "as in render")
    add_options(parser, ("dim", "inputs", "etrecord", "max_tensor_elements"), grouped=False)
    parser.add_argument("--metrics", metavar="LIST",
                        help="comma-separated metric names to write (default: all; listed below)")
    # --format was this command's table format, while render's --format lists picture formats: one meaning each
    add_deprecated_alias(parser, "--format", "--table-format")


def run(args: argparse.Namespace) -> int:
    from renderer.annotations.registry import model_files
    from renderer.commands.common import count, etrecords, load_noted, note, stage, warn
    from renderer.core.errors import AnnographError, UsageError
    from renderer.exporters.metric_table import export_format, render
    from renderer.files import atomic
    from renderer.loaders.free_dims import described
    from renderer.metrics.builtin import ALL_TENSOR_METRICS, OP_METRICS, compute, pin_advice, totals
    from renderer.metrics.dim_formulas import add_formulas, total_line

    fmt = export_format(args.output, args.table_format) if args.output else ""
    if args.max_tensor_elements < 0:
        raise UsageError("--max-tensor-elements must be 0 or more")
    op_names: set[str] | None = None
    tensor_names: set[str] | None = None
    if args.metrics:
        asked = {m.strip() for m in args.metrics.split(",") if m.strip()}
        unknown = sorted(asked - set(OP_METRICS) - set(ALL_TENSOR_METRICS))
        if unknown:
            known = ", ".join([*OP_METRICS, *ALL_TENSOR_METRICS])
            raise AnnographError(f"--metrics: unknown metric {unknown[0]!r} (known: {known})")
        op_names, tensor_names = asked & set(OP_METRICS), asked & set(ALL_TENSOR_METRICS)
    read = [args.model, *args.annotations, *([args.inputs] if args.inputs else []), *args.etrecord]
    outputs = [args.output] if args.output else []
    atomic.refuse_inputs(outputs, read)
    atomic.refuse_missing_folders(outputs)
    model = load_noted(args.model, args.dim, inputs=args.inputs, profiles=_profiles(args.annotations),
                       keep_free=args.keep_free_dims, etrecord=etrecords(args, [args.model]).get(args.model))
    read += model_files(model)  # its external data and the ETRecord found beside it, found on loading
    atomic.refuse_inputs(outputs, read)
    with stage("metrics") as facts:
        ops, tensors = compute(model, op_names, tensor_names, args.max_tensor_elements)
        facts.append(f"{count(len(ops), 'operator')}, {count(len(tensors), 'tensor')}")
    if op_names is None or "macs" in op_names:
        add_formulas(model, ops)
    if args.output:
        with stage("write") as facts:
            atomic.write_text(args.output, render(model, ops, tensors, fmt), read)
            facts.append(args.output)
    if advice := pin_advice(model, "macs"):
        warn(advice)
    figures = ", ".join(f"{k} {v}" for k, v in totals(model).items())
    assumed = "; ".join(part for part in (described(model.assumed_dims), total_line(model)) if part)
    if not args.output:
        print(summary(model, ops, figures, assumed), end="")
        return 0
    note(f"wrote metrics of {sum(1 for v in ops.values() if v)} operators and "
         f"{sum(1 for v in tensors.values() if v)} tensors to {args.output} ({figures})"
         + (f"; {assumed}" if assumed else ""))
    return 0


def summary(model: Any, ops: dict[Any, dict[str, Any]], figures: str, assumed: str) -> str:
    """What ``metrics MODEL`` without ``-o`` prints: the totals, the dims assumed, and the MACs of each operator
    type, most first (``n/a`` counted apart), with a pointer to ``-o`` for the full table."""
    from renderer.core.escape import clean
    from renderer.core.numbers import format_count, percent

    macs: dict[str, int] = {}
    counts: dict[str, int] = {}
    missing: dict[str, int] = {}
    for node in model.nodes():
        value = ops.get(node.key, {}).get("macs")
        counts[node.op_type] = counts.get(node.op_type, 0) + 1
        if isinstance(value, int):
            macs[node.op_type] = macs.get(node.op_type, 0) + value
        elif value is not None:
            missing[node.op_type] = missing.get(node.op_type, 0) + 1
    total = sum(macs.values())
    lines = [f"{clean(str(model.path), 200)}: {figures}"]
    if assumed:
        lines.append(f"dims: {assumed}")
    lines.append(f"{'operator type':<24} {'count':>6} {'MACs':>10} {'share':>7}")
    for op_type in sorted(counts, key=lambda t: (-macs.get(t, 0), t)):
        share = percent(100 * macs.get(op_type, 0) / total) if total else ""
        value = format_count(macs[op_type]) if op_type in macs else "n/a"
        extra = f"  ({missing[op_type]} n/a)" if op_type in missing and op_type in macs else ""
        lines.append(f"{clean(op_type, 24):<24} {counts[op_type]:>6} {value:>10} {share:>7}{extra}")
    lines.append("(every operator's and tensor's metrics: -o FILE.csv, .json or .tsv)")
    return "\n".join(lines) + "\n"


def _profiles(paths: list[str]) -> list[str]:
    """``paths``, each checked to be an onnxruntime profile (the only annotation files metrics reads: for shapes)."""
    from renderer.annotations.registry import reader_of
    from renderer.core.errors import AnnotationError

    for path in paths:
        found = reader_of(path)
        if found.NAME != "ort":
            raise AnnotationError(f"{path}: metrics -a reads onnxruntime profiles (for the shapes they recorded); "
                                  f"this file reads as {found.NAME}")
    return paths
