"""A comparison as an annotation file in the generic format, which ``annograph render -a`` reads as it is."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from renderer.annotations.metric_meta import describe
from renderer.compare.core import Comparison, TensorResult
from renderer.compare.metrics import METRICS, json_value
from renderer.core.id_rules import IdIndex, Unresolved
from renderer.core.ir import ElementKey
from renderer.core.numbers import format_number
from renderer.exporters.stable_ids import StableIds


def document(comparison: Comparison) -> dict[str, Any]:
    """The annotation document: graph meta, metric directions, then each tensor and its producing operator."""
    model = comparison.model
    ids = StableIds(model)
    index = IdIndex.build(model)
    compared = [r for r in comparison.results if r.metrics is not None]
    meta: dict[str, Any] = {
        "reference": Path(comparison.reference).name,
        "candidate": Path(comparison.candidate).name,
        "inputs": comparison.inputs,
        "tensors compared": f"{len(compared)} of {len(comparison.results) + len(comparison.missing)}",
    }
    worst = _worst(compared)
    if worst is not None:
        meta["lowest SQNR"] = f"{format_number(worst.metrics['sqnr_db'])} dB at {ids.tensor(worst.key)}"  # type: ignore[index]
    doc: dict[str, Any] = {
        "graph": {"title": f"{meta['candidate']} against {meta['reference']}", "meta": meta},
        "metrics": {name: describe(info) for name, info in METRICS.items()},
    }
    operators: list[dict[str, Any]] = []
    tensors: list[dict[str, Any]] = []
    annotated_ops: set[ElementKey] = set()
    for result in comparison.results:
        value = model.graphs[result.key[1]].values[result.key[2]]
        tensor_id = ids.tensor(result.key)
        values = _values(result, value.name)
        tensors.append({"id": tensor_id, "meta": values})
        producer = value.producer
        if producer is None or producer.key in annotated_ops:
            continue  # an operator with several outputs carries the numbers of its first compared one
        annotated_ops.add(producer.key)
        operators.append({"id": _operator_id(index, ids, value.name, producer.key), "meta": values})
    doc["operators"] = operators
    doc["tensors"] = tensors
    return doc


def _values(result: TensorResult, name: str) -> dict[str, Any]:
    values: dict[str, Any] = {}
    if result.metrics is not None:
        values.update({k: json_value(result.metrics[k]) for k in METRICS})
    else:
        values["compare"] = f"not compared: {result.problem}"
    values["tensor"] = name
    if result.candidate_name != name:
        values["candidate tensor"] = result.candidate_name
    values["shape"] = "×".join(str(s) for s in result.reference_shape) or "scalar"
    return values


def _operator_id(index: IdIndex, ids: StableIds, tensor_name: str, key: ElementKey) -> str:
    """The output tensor's name when it names the operator (it does in the candidate too), else a stable id."""
    try:
        if tensor_name and tensor_name == tensor_name.strip() and index.operator(tensor_name) == key:
            return tensor_name
    except Unresolved:
        pass
    return ids.operator(key)


def _worst(results: list[TensorResult]) -> TensorResult | None:
    finite = [r for r in results if r.metrics is not None and not math.isnan(r.metrics["sqnr_db"])]
    return min(finite, key=lambda r: r.metrics["sqnr_db"]) if finite else None  # type: ignore[index]
