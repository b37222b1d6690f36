"""ONNX Runtime ``qdq_loss_debug`` results saved as JSON.

``onnxruntime.quantization.qdq_loss_debug`` returns Python dicts; ``samples/tools/ort_qdq_loss_to_json.py``
saves them in this shape (any other writer may produce it too)::

    {
      "format": "onnxruntime.quantization.qdq_loss_debug",      # optional marker
      "float_model": "model.onnx", "qdq_model": "model_qdq.onnx", # optional, shown as graph values
      "activations": {                                          # compute_activation_error(...)
        "<tensor name>": {"qdq_err": 38.7, "xmodel_err": 35.8}
      },
      "weights": {"<float weight name>": 55.3}                  # compute_weight_error(...)
    }

Every number is an SQNR in dB (``20·log10(‖x‖ / ‖x − y‖)``): higher is better. ``qdq_err`` compares an
activation before and after its QuantizeLinear/DequantizeLinear pair in the QDQ model, ``xmodel_err`` the
float model's activation with the QDQ model's. A bare number for an activation is kept as ``activation_err``.
The main metric (the colour without ``--color-by``) is ``xmodel_err``: how far the deployed model has
drifted from the float one at each operator, the first question asked of a quantized model; ``qdq_err`` when
the file has no float-model comparison.

Mapping works on the float model and on the QDQ model: an activation goes to the operator producing the tensor
of that name (and to the tensor itself); a weight goes to every operator consuming it, looking through the
DequantizeLinear in front of it in a QDQ model (the weight is then ``<name>_quantized``, or the
DequantizeLinear's output keeps ``<name>``). An operator reading several weights shows the lowest SQNR as
``weight_err`` and each weight in ``weight_err_by_tensor``.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any

from renderer.annotations.lookup import load_json, node_ref, value_ref
from renderer.core.errors import AnnotationError
from renderer.core.id_rules import IdIndex
from renderer.core.ir import Model, Node, Value
from renderer.core.records import AnnotationSet, Entry, MetricInfo

NAME = "qdq-loss"
DESCRIPTION = "ONNX Runtime qdq_loss_debug activation/weight SQNR saved as JSON"
FORMAT_MARKER = "onnxruntime.quantization.qdq_loss_debug"

METRICS = {
    "qdq_err": MetricInfo(
        "qdq_err",
        NAME,
        "dB",
        True,
        "SQNR of an activation across its Q/DQ pair (ORT qdq_loss_debug); higher is better",
    ),
    "xmodel_err": MetricInfo(
        "xmodel_err",
        NAME,
        "dB",
        True,
        "SQNR of the QDQ model's activation against the float model's; higher is better",
        main=True,
    ),
    "activation_err": MetricInfo("activation_err", NAME, "dB", True, "activation error (ORT qdq_loss_debug)"),
    "weight_err": MetricInfo(
        "weight_err",
        NAME,
        "dB",
        True,
        "SQNR of the dequantized weights against the float weights (lowest of the "
        "operator's weights); higher is better",
    ),
}
_QUANT_SUFFIX = "_quantized"
_FIRST_KEY = re.compile(r'^\s*\{\s*"(?:activations|weights)"\s*:\s*\{')


def match(path: Path, head: str) -> bool:
    return head.lstrip().startswith("{") and (FORMAT_MARKER in head or _FIRST_KEY.match(head) is not None)


def read(path: Path, model: Model) -> AnnotationSet:
    data = load_json(path)
    if not isinstance(data, dict) or not ({"activations", "weights"} & data.keys()):
        raise AnnotationError(
            f"{path}: expected an object with 'activations' and/or 'weights' (qdq_loss_debug results)"
        )
    result = AnnotationSet(source=NAME, path=str(path), metrics=dict(METRICS))
    for key in ("float_model", "qdq_model"):
        if isinstance(data.get(key), str):
            result.graph.values[key] = data[key]
    lookup = IdIndex.build(model)
    _activations(path, data.get("activations") or {}, lookup, result)
    _weights(path, data.get("weights") or {}, lookup, result)
    if not any("xmodel_err" in entry.values for _, entry in result.operators):
        result.metrics["qdq_err"] = dataclasses.replace(METRICS["qdq_err"], main=True)
    return result


def _sqnr(path: Path, where: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise AnnotationError(f"{path}: {where} must be a number (SQNR in dB), not {type(value).__name__}")
    return float(value)


def _activations(path: Path, items: Any, lookup: IdIndex, result: AnnotationSet) -> None:
    if not isinstance(items, dict):
        raise AnnotationError(f"{path}: 'activations' must map tensor names to results")
    for name, body in items.items():
        if isinstance(body, dict):
            values = {
                k: _sqnr(path, f"activations[{name!r}].{k}", v)
                for k, v in body.items()
                if k in ("qdq_err", "xmodel_err")
            }
            unknown = [k for k in body if k not in ("qdq_err", "xmodel_err")]
            if unknown:
                raise AnnotationError(
                    f"{path}: activations[{name!r}] has an unknown key {unknown[0]!r} "
                    "(expected qdq_err, xmodel_err)"
                )
        else:
            values = {"activation_err": _sqnr(path, f"activations[{name!r}]", body)}
        value = lookup.value(name)
        if value is None:
            result.unmatched.append(name)
            continue
        result.tensors.append((value_ref(value), Entry(dict(values))))
        if value.producer is not None:
            result.operators.append((node_ref(value.producer), Entry(dict(values))))


def _weights(path: Path, items: Any, lookup: IdIndex, result: AnnotationSet) -> None:
    if not isinstance(items, dict):
        raise AnnotationError(f"{path}: 'weights' must map weight names to SQNR values")
    per_node: dict[Node, list[tuple[str, float]]] = {}
    for name, body in items.items():
        sqnr = _sqnr(path, f"weights[{name!r}]", body)
        consumers = _weight_consumers(lookup, name)
        if not consumers:
            result.unmatched.append(name)
            continue
        for node in consumers:
            per_node.setdefault(node, []).append((name, sqnr))
    for node, pairs in per_node.items():
        entry = Entry({"weight_err": min(v for _, v in pairs)})
        entry.values["weight_err_by_tensor"] = "; ".join(f"{n}: {v:.2f} dB" for n, v in pairs)
        result.operators.append((node_ref(node), entry))


def _weight_consumers(lookup: IdIndex, name: str) -> list[Node]:
    """Operators reading weight ``name``, through a DequantizeLinear when the model is a QDQ model."""
    found: list[Node] = []
    for candidate in (name, name + _QUANT_SUFFIX):
        for value in lookup.values_named(candidate):
            for node in _through_dequantize(value):
                if node not in found:
                    found.append(node)
        if found:
            break
    return found


def _through_dequantize(value: Value) -> list[Node]:
    nodes: list[Node] = []
    for consumer in value.consumers:
        if consumer.op_type == "DequantizeLinear" and consumer.inputs and consumer.inputs[0] is value:
            for out in consumer.outputs:
                nodes.extend(c for c in out.consumers if c not in nodes)
        elif consumer not in nodes:
            nodes.append(consumer)
    return nodes
