"""``annograph compare``: per-tensor error of a candidate against a reference, as an annotation file."""

from __future__ import annotations

import argparse

HELP = "measure a candidate model (or dump) against a reference, tensor by tensor, into an annotation file"

EXAMPLES = """examples:
  annograph compare model.onnx model.qdq.onnx --random-inputs 0 -o errors.json
  annograph compare model.tflite model_int8.tflite --inputs inputs.npz -o errors.json
  annograph compare --dumps reference.npz mine.npz --model model.onnx -o errors.json
  annograph render model.qdq.onnx -a errors.json --color-by sqnr_db -o errors.svg

Each tensor the reference computes is matched by name in the candidate (in a QDQ model, by the value its
QuantizeLinear→DequantizeLinear pair hands on) and gets max_abs_error, mean_abs_error, rmse, rel_error, cosine
and sqnr_db; so does the operator producing it. SQNR and cosine are higher-is-better (the file says so, and the
legend shows it); an exact match has an SQNR of "inf". Dumps are .npz files keyed by tensor name, N or S:N."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from renderer.commands.common import add_options, non_negative_int, positive_seconds

    parser.epilog = EXAMPLES
    parser.add_argument("models", nargs="*", metavar="REFERENCE CANDIDATE", help="two ONNX or two TFLite models")
    parser.add_argument("-o", "--output", required=True, metavar="PATH", help="annotation file to write (.json)")
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--inputs", metavar="FILE.npz", help="model inputs, one array per input name")
    source.add_argument("--random-inputs", type=non_negative_int, default=0, metavar="SEED",
                        help="random inputs from SEED (default 0): normal floats, integers in [0, 10)")
    parser.add_argument("--dumps", nargs=2, metavar=("REFERENCE.npz", "CANDIDATE.npz"),
                        help="compare two tensor dumps instead of running models (needs --model)")
    parser.add_argument("--model", metavar="MODEL", help="the model the dumps' tensor ids refer to")
    parser.add_argument("--save-dumps", nargs=2, metavar=("REFERENCE.npz", "CANDIDATE.npz"),
                        help="also write the compared tensors, keyed by reference tensor name")
    parser.add_argument("--timeout", type=positive_seconds, metavar="SECONDS",
                        help="CPU seconds the two runs may take (default: 30 plus one per 8 MiB the models and their "
                             "inputs and known activations take)")
    parser.add_argument("--max-tensor-bytes", type=byte_size, metavar="SIZE",
                        help="largest tensor compared, e.g. 512MiB (default 1GiB); a larger one is an error naming it")
    add_options(parser, ("dim",))


def byte_size(text: str) -> int:
    """argparse type: a size above 0 (bytes, or with KiB, MiB, GiB)."""
    from renderer.loaders.isolated import parse_bytes

    try:
        value = parse_bytes(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a size above 0")
    return value


def run(args: argparse.Namespace) -> int:
    import json

    from renderer.annotations.registry import model_files
    from renderer.commands.common import count, load_noted, stage, warn
    from renderer.compare import document
    from renderer.compare.core import compare_dumps
    from renderer.compare.models import compare_models
    from renderer.core.errors import AnnographError, UsageError
    from renderer.core.pinning import parse as parse_dims
    from renderer.files import atomic

    inputs = [*args.models, *(args.dumps or []), *(p for p in (args.model, args.inputs) if p)]
    atomic.refuse_inputs([args.output, *(args.save_dumps or [])], inputs)
    atomic.refuse_missing_folders([args.output, *(args.save_dumps or [])])
    if args.dumps:
        if args.models:
            raise AnnographError("give either two models or --dumps REFERENCE.npz CANDIDATE.npz --model MODEL")
        if not args.model:
            raise UsageError("--dumps needs --model MODEL (the model the dumps' tensor ids refer to)")
        model = load_noted(args.model, args.dim, keep_free=args.keep_free_dims)
        with stage("compare") as facts:
            comparison = compare_dumps(args.dumps[0], args.dumps[1], model)
            facts.append(count(len(comparison.results), "tensor"))
    else:
        if len(args.models) != 2:
            raise AnnographError("compare needs REFERENCE and CANDIDATE models (or --dumps … --model MODEL)")
        with stage("compare") as facts:
            comparison = compare_models(args.models[0], args.models[1], args.inputs, args.random_inputs,
                                        parse_dims(args.dim), args.timeout, args.max_tensor_bytes,
                                        keep_dumps=bool(args.save_dumps))
            facts.append(f"{count(len(comparison.results), 'tensor')}, inputs {comparison.inputs}")
    text = json.dumps(document(comparison), indent=1, ensure_ascii=False) + "\n"
    outputs = [(args.output, text.encode("utf-8"))]
    if args.save_dumps:
        outputs += [(path, data or _npz({})) for path, data in zip(args.save_dumps, comparison.dumps)]
    with stage("write") as facts:
        atomic.write_all(outputs, [*inputs, *comparison.read, *model_files(comparison.model)])
        facts.extend(str(path) for path, _ in outputs)
    for line in comparison.notes:
        warn(line)
    _summary(comparison, args.output)
    return 0


def _npz(arrays: dict) -> bytes:  # type: ignore[type-arg]
    import io

    import numpy as np

    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    return buffer.getvalue()


def _summary(comparison, output: str) -> None:  # type: ignore[no-untyped-def]
    from renderer.commands.common import note, warn

    compared = [r for r in comparison.results if r.metrics is not None]
    problems = [r for r in comparison.results if r.metrics is None]
    note(f"compared {len(compared)} tensors of {comparison.candidate} with {comparison.reference}; wrote {output}")
    if comparison.missing:
        shown = ", ".join(comparison.missing[:5]) + (", …" if len(comparison.missing) > 5 else "")
        warn(f"{len(comparison.missing)} reference tensors have no counterpart in the candidate: {shown}")
    for result in problems[:5]:
        name = comparison.model.graphs[result.key[1]].values[result.key[2]].name
        warn(f"{name}: not compared, {result.problem}")
    if len(problems) > 5:
        warn(f"… {len(problems) - 5} more tensors not compared")
