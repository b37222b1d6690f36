"""Matching the tensors of a reference and a candidate, and measuring each pair."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from renderer.compare.metrics import error_metrics
from renderer.core.errors import AnnographError
from renderer.core.id_rules import IdIndex, Unresolved
from renderer.core.ir import ElementKey, Model
from renderer.core.numbers import format_bytes
from renderer.core.progress import bar, waiting_then_counting
from renderer.loaders.feeds import InputSpec, load_feeds, random_feeds

if TYPE_CHECKING:
    from renderer.loaders.isolated import Sizes

MAX_LISTED = 5


@dataclass(slots=True)
class TensorResult:
    """One compared tensor.

    Attributes:
        key: the tensor in the model whose ids are written (the reference, or ``--model``).
        candidate_name: the candidate's tensor it was compared with (its dequantized value in a QDQ model).
        reference_shape / candidate_shape: the shapes as run.
        metrics: the error metrics, or None when the pair could not be compared.
        problem: why not (different shapes, types).
    """

    key: ElementKey
    candidate_name: str
    reference_shape: tuple[int, ...]
    candidate_shape: tuple[int, ...]
    metrics: dict[str, float] | None = None
    problem: str = ""


@dataclass(slots=True)
class Comparison:
    """Everything ``annograph compare`` found.

    Attributes:
        model: the model whose element ids the results use.
        reference / candidate: the two sources, as given (model files or dumps).
        results: one per tensor present on both sides, in graph order.
        missing: reference tensors with no counterpart in the candidate.
        notes: things the user should know (pinned dims, skipped tensors).
        inputs: how the inputs were made.
    """

    model: Model
    reference: str
    candidate: str
    results: list[TensorResult] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    inputs: str = ""
    dumps: tuple[bytes, bytes] = (b"", b"")
    """The compared arrays keyed by reference tensor name, as ``.npz`` files (for ``--save-dumps``)."""
    read: list[str] = field(default_factory=list)
    """The files the models keep their weights in (ONNX external data): inputs of the run no output may replace."""


def measure(key: Any, candidate_name: str, reference: Any, candidate: Any) -> TensorResult:
    """Compare one pair; arrays of different shapes are reported, never broadcast. ``key`` is the tensor's
    ``ElementKey`` (or, in the child that runs the models, its name there)."""
    import numpy as np

    ref, cand = np.asarray(reference), np.asarray(candidate)
    result = TensorResult(key, candidate_name, tuple(ref.shape), tuple(cand.shape))
    if ref.shape != cand.shape:
        result.problem = f"shapes differ: reference {_shape(ref.shape)}, candidate {_shape(cand.shape)}"
    elif not _numeric(ref) or not _numeric(cand):
        result.problem = f"not numbers: reference {ref.dtype}, candidate {cand.dtype}"
    elif (ref.dtype.kind == "f") != (cand.dtype.kind == "f"):
        result.problem = f"types differ: reference {ref.dtype}, candidate {cand.dtype} (not quantization-aware)"
    else:
        result.metrics = error_metrics(ref, cand)
    return result


def _numeric(array: Any) -> bool:
    return array.dtype.kind in "fiub"


def _shape(shape: tuple[int, ...]) -> str:
    return "×".join(str(s) for s in shape) if shape else "scalar"


def make_feeds(specs: list[InputSpec], inputs: str | None, seed: int, dims: dict[str, int],
               notes: list[str], label: str | None = None) -> tuple[dict[str, Any], str]:
    """The feeds and how they were made; ``label`` is the inputs file as the user named it."""
    if inputs is not None:
        return load_feeds(inputs, specs, label), f"from {Path(label or inputs).name}"
    return random_feeds(specs, seed, dims, notes), f"random, seed {seed}"


def check_same_inputs(reference: str, ref_specs: list[InputSpec], candidate: str, cand_specs: list[InputSpec],
                      quantized_ok: bool = False) -> None:
    """Both models must take the same inputs (by name); a quantized candidate input may take float feeds."""
    ref_names = [s.name for s in ref_specs]
    cand_by_name = {s.name: s for s in cand_specs}
    for spec in ref_specs:
        other = cand_by_name.get(spec.name)
        if other is None:
            raise AnnographError(
                f"{candidate}: has no input {spec.name!r} of {reference} (its inputs: {', '.join(cand_by_name)}); "
                "the models do not correspond")
        if other.dtype != spec.dtype and not (quantized_ok and other.dtype in ("int8", "uint8", "int16")):
            raise AnnographError(
                f"{candidate}: input {spec.name!r} is {other.dtype}, {spec.dtype} in {reference}")
    extra = [n for n in cand_by_name if n not in ref_names]
    if extra:
        raise AnnographError(f"{candidate}: input {extra[0]!r} is not an input of {reference}; "
                             "the models do not correspond")


def require_matches(comparison: Comparison, total: int, examples: list[str]) -> None:
    """No tensor in common means the two sides are not versions of one model: say so, naming some."""
    if not comparison.results:
        shown = ", ".join(repr(n) for n in examples[:MAX_LISTED])
        raise AnnographError(
            f"{comparison.candidate}: none of the {total} tensors of {comparison.reference} has a counterpart "
            f"by name (e.g. {shown}); the two do not correspond")


MAX_TENSOR_BYTES = 1 << 30
"""Largest tensor compare measures: a larger one (announced by static shapes, or met in the run) is one line."""
_PRELOAD = {"onnx": ["numpy", "onnx", "onnxruntime"], "tflite": ["numpy", "ai_edge_litert.interpreter"]}


def compare_runs(reference: str, candidate: str, models: tuple[Model, Model], inputs: str | None, seed: int,
                 dims: dict[str, int], timeout: float | None = None, max_tensor_bytes: int = MAX_TENSOR_BYTES,
                 keep_dumps: bool = False) -> Comparison:
    """Run both models (ONNX in onnxruntime, TFLite in LiteRT) on the same inputs in a child process bounded by
    ``loaders.isolated``'s policy (``timeout`` replaces its time), and compare every tensor the reference's main
    graph computes; ``keep_dumps`` keeps the compared tensors as ``.npz`` bytes for ``--save-dumps``."""
    import dataclasses
    import os
    import tempfile

    from renderer.annotations.registry import model_files
    from renderer.files.inputs import NpzArchive
    from renderer.loaders import isolated

    model = models[0]
    sizes = [_sizes(path, m, max_tensor_bytes) for path, m in zip((reference, candidate), models)]
    with tempfile.TemporaryDirectory(prefix="annograph-compare-") as folder:
        label = inputs
        if inputs is not None:
            with NpzArchive(inputs, AnnographError, "an inputs file") as archive:
                fed = [archive.nbytes(name) for name in archive.names]
                sizes.append(isolated.Sizes(2 * sum(fed), 0, max(fed, default=0)))
                inputs = _regular(inputs, archive, folder)
        limit = isolated.limits(isolated.together(sizes))
        if timeout is not None:
            limit = dataclasses.replace(limit, seconds=timeout)
        dumps = [os.path.join(folder, "reference.npz"), os.path.join(folder, "candidate.npz")] if keep_dumps else None
        request = {"format": model.format, "reference": reference, "candidate": candidate, "inputs": inputs,
                   "inputs_label": label, "seed": seed, "dims": dims, "max_tensor_bytes": max_tensor_bytes,
                   "dumps": dumps, "preload": _PRELOAD.get(model.format, [])}
        runtime = "onnxruntime" if model.format == "onnx" else "LiteRT"
        with waiting_then_counting("running both models", "comparing", "tensor") as counted:
            answer, reason = isolated.run("renderer.compare.child", request, runtime,
                                          f"to run {reference} and {candidate}", limit, counted=counted)
        if reason:
            raise AnnographError(reason)
        comparison = _comparison(reference, candidate, model, answer)
        comparison.read = [path for m in models for path in model_files(m)]
        if dumps:
            comparison.dumps = (Path(dumps[0]).read_bytes(), Path(dumps[1]).read_bytes())
    return comparison


def _sizes(path: str, model: Model, max_tensor_bytes: int) -> Sizes:
    """What the model explains of the run's memory (``isolated.Sizes``): the file's size and the activations static
    shapes announce, the tensors the run keeps whose size they do not, and the largest tensor (a weight at
    float32 at least); a tensor announced over ``max_tensor_bytes`` is one line naming it, before anything runs."""
    import math
    import os

    from renderer.loaders import isolated
    from renderer.metrics.formulas import NotCountable
    from renderer.metrics.op_costs import value_bytes

    total = os.stat(path).st_size
    unknown = largest = 0
    for value in model.main.values:
        try:
            size = value_bytes(value)
        except (NotCountable, TypeError, ValueError):
            unknown += value.initializer is None and value.producer is not None
            continue
        if value.initializer is not None:
            largest = max(largest, 4 * math.prod(value.initializer.shape))
        largest = max(largest, size)
        if size > max_tensor_bytes and value.initializer is None:
            raise AnnographError(
                f"{path}: tensor {value.name[:80]!r} would hold {format_bytes(size)} ({value.type}), over the "
                f"{format_bytes(max_tensor_bytes)} compare measures per tensor (--max-tensor-bytes)")
        total += size
    return isolated.Sizes(total, unknown, largest)


def _regular(path: str, archive: Any, folder: str) -> str:
    """``path`` itself when the child can open it again; a pipe's arrays copied to a file in ``folder``."""
    import os

    from renderer.files.inputs import is_stream

    if not is_stream(path):
        return path
    import numpy as np

    copy = os.path.join(folder, "inputs.npz")
    np.savez(copy, **archive.arrays())
    return copy


def _comparison(reference: str, candidate: str, model: Model, answer: dict[str, Any]) -> Comparison:
    """The child's rows as results keyed by the tensors of ``model``, in graph order."""
    comparison = Comparison(model, reference, candidate, notes=list(answer["notes"]), inputs=answer["inputs"])
    if model.format == "onnx":
        index = IdIndex.build(model)
        keys = {row["name"]: _main_tensor(index, row["name"]) for row in answer["rows"]}
        comparison.missing = list(answer["missing"])
        total, examples = len(answer["order"]), answer["order"]
    else:
        produced = {v.index for v in model.main.values if v.producer is not None}
        keys = {row["name"]: ("t", 0, row["index"]) for row in answer["rows"] if row["index"] in produced}
        comparison.missing = [name for index, name in answer["missing"] if index in produced]
        examples = [row["name"] for row in answer["rows"] if row["name"] in keys] + comparison.missing
        total = len(examples)
    for row in answer["rows"]:
        key = keys.get(row["name"])
        if key is not None:
            comparison.results.append(TensorResult(key, row["candidate"], tuple(row["reference_shape"]),
                                                   tuple(row["candidate_shape"]), row["metrics"], row["problem"]))
    require_matches(comparison, total, examples)
    return comparison


def compare_dumps(reference: str, candidate: str, model: Model) -> Comparison:
    """Two ``.npz`` dumps keyed by tensor id (name, ``N`` or ``S:N``) of ``model``, read header first and compared
    one pair of arrays at a time (``inputs.NpzArchive``)."""
    from renderer.files.inputs import NpzArchive

    comparison = Comparison(model, reference, candidate)
    index = IdIndex.build(model)
    with NpzArchive(reference, AnnographError, "a tensor dump") as ref_dump, \
            NpzArchive(candidate, AnnographError, "a tensor dump") as cand_dump:
        ref_keys, cand_keys = _dump_keys(ref_dump, index, model), _dump_keys(cand_dump, index, model)
        comparison.missing = [ident for key, ident in ref_keys.items() if key not in cand_keys]
        only_cand = [ident for key, ident in cand_keys.items() if key not in ref_keys]
        if only_cand:
            comparison.notes.append(f"{len(only_cand)} arrays of {candidate} are not in {reference}: "
                                    + ", ".join(only_cand[:MAX_LISTED]))
        pairs = sorted(key for key in ref_keys if key in cand_keys)
        with bar(len(pairs), "comparing", "tensor") as shown:
            for key in pairs:
                ident = ref_keys[key]
                comparison.results.append(measure(key, ident, ref_dump.array(ident), cand_dump.array(cand_keys[key])))
                shown.update(1)
    if not comparison.results:
        shown = ", ".join(repr(n) for n in ref_dump.names[:MAX_LISTED])
        raise AnnographError(f"{candidate}: has none of the {len(ref_dump.names)} arrays of {reference} ({shown}); "
                             "the dumps do not correspond")
    comparison.inputs = "dumps"
    return comparison


def _dump_keys(dump: Any, index: IdIndex, model: Model) -> dict[ElementKey, str]:
    """The tensor each array of ``dump`` names → the array's name; a name that finds no tensor, or two names for
    one tensor (``x``, ``3`` and ``0:3``), is a one-line error."""
    found: dict[ElementKey, str] = {}
    unknown = []
    for ident in dump.names:
        try:
            key = index.tensor(ident)
        except Unresolved:
            unknown.append(ident)
            continue
        if key in found:
            raise AnnographError(f"{dump.path}: arrays {found[key][:80]!r} and {ident[:80]!r} name one tensor of "
                                 f"{model.path}; keep one array per tensor")
        found[key] = ident
    if unknown:
        shown = ", ".join(repr(u[:80]) for u in unknown[:MAX_LISTED])
        raise AnnographError(
            f"{dump.path}: {len(unknown)} of {len(dump.names)} arrays name no tensor of {model.path} ({shown}); "
            "keys are tensor names, N or S:N")
    return found


def _main_tensor(index: IdIndex, name: str) -> ElementKey | None:
    keys = [k for k in index.tensor_names.get(name, []) if k[1] == 0]
    return keys[0] if len(keys) == 1 else None
