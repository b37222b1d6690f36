"""The runs of ``annograph compare``, in a child process under ``loaders.isolated``'s resource policy.

Both models run here (onnxruntime or LiteRT, every tensor kept), each pair is measured here, tensor by tensor in
pieces, and only the numbers go back to the command: a model whose tensors outgrow what its sizes explain, that
loops for ever or that crashes the runtime ends this process, and the command says so in one line.

The request: ``format`` (``onnx`` / ``tflite``), ``reference``, ``candidate``, ``inputs`` (an ``.npz`` path or
null) and ``inputs_label`` (that file as the user named it), ``seed``, ``dims``, ``max_tensor_bytes`` and
``dumps`` (two paths to write the compared tensors to, or null).
The answer: ``rows`` (one per reference tensor with a counterpart: its name or index, the candidate's
name, both shapes, the metrics or why not), ``missing``, ``notes`` and ``inputs`` (how they were made).
"""

from __future__ import annotations

from typing import Any

from renderer.compare.core import check_same_inputs, make_feeds, measure
from renderer.core.errors import AnnographError, first_line
from renderer.core.numbers import format_bytes
from renderer.loaders import isolated


def _compare(request: dict[str, Any]) -> dict[str, Any]:
    runtime = "onnxruntime" if request["format"] == "onnx" else "LiteRT"
    try:
        run = _onnx if request["format"] == "onnx" else _tflite
        return run(request)
    except AnnographError as e:
        return {"error": str(e)}
    except MemoryError:
        return {"error": _over(request, runtime)}
    except Exception as e:  # noqa: BLE001  a runtime's own exception types; the allocation failures among them
        if isolated.allocation_failed(str(e)):
            return {"error": _over(request, runtime)}
        return {"error": f"{request['candidate']}: {runtime} failed ({first_line(e, 200)})"}


def _over(request: dict[str, Any], runtime: str) -> str:
    return isolated.over_memory(f"{runtime} running {request['reference']} and {request['candidate']}",
                                request["limits"])


def _onnx(request: dict[str, Any]) -> dict[str, Any]:
    from renderer.compare.onnx_run import OnnxRun

    reference, candidate = request["reference"], request["candidate"]
    ref_run, cand_run = OnnxRun(reference), OnnxRun(candidate)
    ref_specs = ref_run.inputs()
    check_same_inputs(reference, ref_specs, candidate, cand_run.inputs())
    notes: list[str] = []
    feeds, how = make_feeds(ref_specs, request["inputs"], request["seed"], request["dims"], notes,
                            request.get("inputs_label"))
    ref_values = _checked(ref_run.run(feeds), reference, request["max_tensor_bytes"])
    cand_values = _checked(cand_run.run(feeds), candidate, request["max_tensor_bytes"])
    dequantized = cand_run.dequantized()
    rows, missing, pairs = [], [], {}
    order = [name for name in ref_run.order if name in ref_values]
    for done, name in enumerate(order):
        isolated.report(done, len(order))
        cand_name = dequantized.get(name) or (name if name in cand_values else None)
        if cand_name is None or cand_name not in cand_values:
            missing.append(name)
            continue
        rows.append(_row(name, cand_name, ref_values[name], cand_values[cand_name]))
        pairs[name] = (ref_values[name], cand_values[cand_name])
    isolated.report(len(order), len(order))
    _save(request["dumps"], pairs)
    return {"rows": rows, "missing": missing, "notes": notes, "inputs": how, "order": ref_run.order}


def _tflite(request: dict[str, Any]) -> dict[str, Any]:
    from renderer.compare.tflite_run import TfliteRun

    reference, candidate = request["reference"], request["candidate"]
    ref_run, cand_run = TfliteRun(reference), TfliteRun(candidate)
    ref_specs = ref_run.inputs()
    check_same_inputs(reference, ref_specs, candidate, cand_run.inputs(), quantized_ok=True)
    notes: list[str] = []
    feeds, how = make_feeds(ref_specs, request["inputs"], request["seed"], request["dims"], notes,
                            request.get("inputs_label"))
    limit = request["max_tensor_bytes"]
    ref_values = ref_run.run(ref_run.quantize_feeds(feeds))
    _checked({name: value for name, value in ref_values.values()}, reference, limit)
    cand_by_name = _checked({name: value for name, value in cand_run.run(cand_run.quantize_feeds(feeds)).values()},
                            candidate, limit)
    rows, missing, pairs = [], [], {}
    for done, index in enumerate(sorted(ref_values)):
        isolated.report(done, len(ref_values))
        name, value = ref_values[index]
        if name not in cand_by_name:
            missing.append([index, name])
            continue
        rows.append({**_row(name, name, value, cand_by_name[name]), "index": index})
        pairs[name] = (value, cand_by_name[name])
    isolated.report(len(ref_values), len(ref_values))
    _save(request["dumps"], pairs)
    return {"rows": rows, "missing": missing, "notes": notes, "inputs": how}


def _checked(values: dict[str, Any], path: str, limit: int) -> dict[str, Any]:
    """``values``, unless a tensor is over ``limit`` bytes: then one line naming it."""
    for name, value in values.items():
        nbytes = int(getattr(value, "nbytes", 0))
        if nbytes > limit:
            shape = "×".join(str(s) for s in value.shape) or "scalar"
            raise AnnographError(
                f"{path}: tensor {name[:80]!r} holds {format_bytes(nbytes)} ({shape} {value.dtype}), over the "
                f"{format_bytes(limit)} compare measures per tensor (--max-tensor-bytes)")
    return values


def _row(name: str, cand_name: str, reference: Any, candidate: Any) -> dict[str, Any]:
    result = measure(name, cand_name, reference, candidate)
    return {"name": name, "candidate": cand_name, "reference_shape": list(result.reference_shape),
            "candidate_shape": list(result.candidate_shape), "metrics": result.metrics, "problem": result.problem}


def _save(paths: list[str] | None, pairs: dict[str, tuple[Any, Any]]) -> None:
    """The compared tensors, keyed by reference tensor name, as two ``.npz`` files (``--save-dumps``)."""
    if not paths:
        return
    import numpy as np

    for side, path in enumerate(paths):
        np.savez(path, **{name: pair[side] for name, pair in pairs.items()})


if __name__ == "__main__":
    isolated.serve(_compare, "the runtime", ("numpy",))
