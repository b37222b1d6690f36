"""Matching the tensors of a reference and a candidate, and measuring each pair."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import AnnographError
from ..id_rules import IdIndex, Unresolved
from ..ir import ElementKey, Model
from ..progress import bar, waiting
from .inputs import InputSpec, load_feeds, random_feeds
from .metrics import error_metrics

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
    dumps: tuple[dict[str, Any], dict[str, Any]] = field(default_factory=lambda: ({}, {}))
    """The compared arrays keyed by reference tensor name (for ``--save-dumps``)."""


def measure(key: ElementKey, candidate_name: str, reference: Any, candidate: Any) -> TensorResult:
    """Compare one pair; arrays of different shapes are reported, never broadcast."""
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
               notes: list[str]) -> tuple[dict[str, Any], str]:
    if inputs is not None:
        return load_feeds(inputs, specs), f"from {Path(inputs).name}"
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
        raise AnnographError(f"{candidate}: input {extra[0]!r} is not an input of {reference}; the models do not correspond")


def require_matches(comparison: Comparison, total: int, examples: list[str]) -> None:
    """No tensor in common means the two sides are not versions of one model: say so, naming some."""
    if not comparison.results:
        shown = ", ".join(repr(n) for n in examples[:MAX_LISTED])
        raise AnnographError(
            f"{comparison.candidate}: none of the {total} tensors of {comparison.reference} has a counterpart "
            f"by name (e.g. {shown}); the two do not correspond")


def compare_onnx(reference: str, candidate: str, model: Model, inputs: str | None, seed: int,
                 dims: dict[str, int]) -> Comparison:
    """Run both ONNX models on the same inputs and compare every tensor of the reference's main graph."""
    from .onnx_run import OnnxRun

    ref_run, cand_run = OnnxRun(reference), OnnxRun(candidate)
    comparison = Comparison(model, reference, candidate)
    ref_specs = ref_run.inputs()
    check_same_inputs(reference, ref_specs, candidate, cand_run.inputs())
    feeds, comparison.inputs = make_feeds(ref_specs, inputs, seed, dims, comparison.notes)
    with waiting("running both models"):
        ref_values = ref_run.run(feeds)
        cand_values = cand_run.run(feeds)
    dequantized = cand_run.dequantized()
    index = IdIndex.build(model)
    with bar(len(ref_run.order), "comparing", "tensor") as shown:
        for name in ref_run.order:
            shown.update(1)
            _pair(comparison, index, name, ref_values, cand_values, dequantized.get(name))
    require_matches(comparison, len(ref_run.order), ref_run.order)
    return comparison


def _pair(comparison: Comparison, index: IdIndex, name: str, ref_values: dict[str, Any], cand_values: dict[str, Any],
          dequantized: str | None) -> None:
    """Measure reference tensor ``name`` against its counterpart, or list it as missing."""
    if name not in ref_values:
        return
    cand_name = dequantized or (name if name in cand_values else None)
    if cand_name is None or cand_name not in cand_values:
        comparison.missing.append(name)
        return
    key = _main_tensor(index, name)
    if key is None:
        return
    comparison.results.append(measure(key, cand_name, ref_values[name], cand_values[cand_name]))
    comparison.dumps[0][name] = ref_values[name]
    comparison.dumps[1][name] = cand_values[cand_name]


def compare_tflite(reference: str, candidate: str, model: Model, inputs: str | None, seed: int,
                   dims: dict[str, int]) -> Comparison:
    """Run both TFLite models in LiteRT on the same inputs; tensors are matched by name."""
    from .tflite_run import TfliteRun

    ref_run, cand_run = TfliteRun(reference), TfliteRun(candidate)
    comparison = Comparison(model, reference, candidate)
    ref_specs = ref_run.inputs()
    check_same_inputs(reference, ref_specs, candidate, cand_run.inputs(), quantized_ok=True)
    feeds, comparison.inputs = make_feeds(ref_specs, inputs, seed, dims, comparison.notes)
    with waiting("running both models"):
        ref_values = ref_run.run(ref_run.quantize_feeds(feeds))
        cand_values = cand_run.run(cand_run.quantize_feeds(feeds))
    cand_by_name = {name: value for name, value in cand_values.values()}
    produced = {v.index for v in model.main.values if v.producer is not None}
    order = [i for i in sorted(ref_values) if i in produced]
    with bar(len(order), "comparing", "tensor") as shown:
        for index in order:
            shown.update(1)
            name, value = ref_values[index]
            if name not in cand_by_name:
                comparison.missing.append(name)
                continue
            comparison.results.append(measure(("t", 0, index), name, value, cand_by_name[name]))
            comparison.dumps[0][name] = value
            comparison.dumps[1][name] = cand_by_name[name]
    require_matches(comparison, len(order), [ref_values[i][0] for i in order])
    return comparison


def compare_dumps(reference: str, candidate: str, model: Model) -> Comparison:
    """Two ``.npz`` dumps keyed by tensor id (name, ``N`` or ``S:N``) of ``model``, read header first and compared
    one pair of arrays at a time (``inputs.NpzArchive``)."""
    from ..inputs import NpzArchive

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
            raise AnnographError(f"{dump.path}: arrays {found[key][:80]!r} and {ident[:80]!r} name one tensor of {model.path}; "
                                 "keep one array per tensor")
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
