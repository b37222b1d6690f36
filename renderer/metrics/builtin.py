"""Built-in metrics computed from the model itself (parameters, MACs, memory, sparsity, weight statistics).

``augment`` adds them to the annotations so they work wherever a metric from a file does (``--color-by macs``,
tooltips, reports, exports); ``totals`` gives the model-wide figures for the picture's header.

Cheap metrics (shapes and attributes only) are always added to every operator. Metrics that read weight
data are added only when asked for by name. A value a file already gives for the same element and name is
never overwritten. An op whose cost cannot be computed gets ``"n/a (reason)"``, never a silent 0.

Intended differences from onnx-tool (whose per-node numbers the tests compare with ours):

=========================  ==========================================  ==========================================
What                       annograph                                   onnx-tool 1.0
=========================  ==========================================  ==========================================
MACs, Conv/Gemm/MatMul,    equal: multiply-accumulates, + one per      (same)
pooling, Add/Mul/Relu…     output element for a bias add
MACs, functions and        one operation per element (Div, Exp, Erf,   weighted by x86 instruction cost (Div 4,
divisions                  Sigmoid, Sqrt, Elu… = 1)                    Exp 32, Sqrt 24, Elu 35; Erf 0)
MACs, PRelu                1 per element                               2 per element (a compare and a multiply)
MACs, Softmax              3 per element (exp, sum, divide)            36 per element
MACs, BatchNormalization   1 per element (inference: folded x·a + b)   31 per element
MACs, LayerNormalization   5 per element                               7 per element + 29 per normalized row
MACs, GlobalAveragePool    one add per input + one divide per output   one add per input + 4 per output
MACs, ConvTranspose        inputs × (weights / input channels)         outputs × (weights / input channels)
MACs, LSTM / GRU           gates' MACs (peepholes included), biases    same gate MACs and biases; elementwise
                           (8 LSTM / 6 GRU) + 13 (LSTM) / 11 (GRU)     part transcendental-weighted (sigmoid 32,
                           elementwise per hidden unit and step        tanh 38: a GRU's 116 per unit and step),
                           (DeepFilterNet 3's encoder: 50.9M)          of one direction only (that encoder: 54.1M)
params, shared weight      counted at every op that reads it           counted at the first reader only
params, scalar constant    1                                           0 (its shape has no dims)
params, weight behind a    counted at the consuming op (Conv, Gemm…)   counted at the DequantizeLinear only
DequantizeLinear           and at the DequantizeLinear
params, scales and zero    0 (bytes in weight_bytes): a quantized      counted as elements
points (Q/DQ, QLinear…)    model has its float model's parameters
=========================  ==========================================  ==========================================

Model totals count each stored tensor once.
"""

from __future__ import annotations

from typing import Any

from renderer.core.ir import ElementKey, Model
from renderer.core.numbers import format_bytes, format_count
from renderer.core.options import RenderOptions
from renderer.core.records import Annotations, Entry, MetricInfo
from renderer.metrics.input_dims import SHAPE_METRICS, flags, model_free_dims

# name → (unit, description). The cheap ones are added to every operator on every render.
CHEAP_OP_METRICS: dict[str, tuple[str, str]] = {
    "params": ("", "elements of the op's weight inputs: its constants and the stored weights it reaches through "
                   "a dequantization (a sparse weight: its dense elements); ONNX-ML ops: the learned values in "
                   "their attributes"),
    "weight_bytes": ("B", "bytes of those weights as stored"),
    "output_bytes": ("B", "bytes of the op's outputs (activations)"),
    "macs": ("", "multiply-accumulates (+1 per output for a bias add); elementwise and normalization ops count "
                 "one operation per element (softmax 3, layer norm 5), data movement 0"),
    "flops": ("", "2 × MACs, the usual convention, applied to every op (per-element counts included)"),
    "intensity": ("FLOP/B", "FLOPs per byte moved (activation inputs + weights + outputs)"),
}
EXPENSIVE_OP_METRICS: dict[str, tuple[str, str]] = {
    "sparsity": ("", "fraction of the op's weight values equal to the zero point this op uses for them "
                     "(DequantizeLinear / integer-op zero points, TFLite quantization; 0.0 for float weights); "
                     "the values a sparse TFLite tensor does not store count as zeros"),
    "effective_macs": ("", "MACs left when the multiplications by zero weights are skipped"),
    "weight_min": ("", "smallest stored weight value (raw codes for quantized weights)"),
    "weight_max": ("", "largest stored weight value (raw codes for quantized weights)"),
    "weight_mean": ("", "mean of the stored weight values"),
    "weight_std": ("", "standard deviation of the stored weight values"),
    "weight_zero_fraction": ("", "fraction of stored weight values that are exactly 0 (not zero-point aware; "
                                 "see sparsity)"),
}
TENSOR_METRICS: dict[str, tuple[str, str]] = {
    "bytes": ("B", "size of the tensor in bytes (from dtype and static shape)"),
    "elements": ("", "number of elements (from the static shape)"),
}
EXPENSIVE_TENSOR_METRICS: dict[str, tuple[str, str]] = {
    "value_min": ("", "smallest stored value of a constant"),
    "value_max": ("", "largest stored value of a constant"),
    "value_mean": ("", "mean of a constant's stored values"),
    "value_std": ("", "standard deviation of a constant's stored values"),
    "value_zero_fraction": ("", "fraction of a constant's stored values that are exactly 0"),
}
OP_METRICS = {**CHEAP_OP_METRICS, **EXPENSIVE_OP_METRICS}
ALL_TENSOR_METRICS = {**TENSOR_METRICS, **EXPENSIVE_TENSOR_METRICS}

DEFAULT_MAX_TENSOR_ELEMENTS = 50_000_000

_cache: list[tuple[Model, int, Any]] = []
KIND = "cheap metrics"
"""The results-cache entry of a model's cheap operator metrics and its totals (``loaders.snapshot.recall``)."""
_TOTALS = ("params", "weight_bytes", "macs", "macs_uncounted", "peak_activation_bytes", "peak_unknown")
_kept: list[tuple[Model, int, tuple[dict[ElementKey, dict[str, Any]], dict[str, Any]] | None]] = []


def model_costs(model: Model) -> Any:
    """The cheap per-op pass, computed once per model (the last model is remembered)."""
    from renderer.metrics.op_costs import ModelCosts

    count = sum(len(g.nodes) for g in model.graphs)
    if _cache and _cache[0][0] is model and _cache[0][1] == count:
        return _cache[0][2]
    costs = ModelCosts.build(model)
    _cache[:] = [(model, count, costs)]
    return costs


def cheap_metrics(model: Model) -> dict[ElementKey, dict[str, Any]]:
    """Every operator's ``CHEAP_OP_METRICS`` (``OpCosts.cheap_metrics``), in graph and operator order: kept with
    the model's snapshot when it has one (``_kept_results``), else from ``model_costs``. Do not change the dicts."""
    kept = _kept_results(model)
    return kept[0] if kept is not None else _cheap_of(model_costs(model))


def _cheap_of(costs: Any) -> dict[ElementKey, dict[str, Any]]:
    """Every operator's ``CHEAP_OP_METRICS`` from the cost pass ``costs`` (``model_costs``), in its order."""
    return {key: op.cheap_metrics() for key, op in costs.ops.items()}


def op_macs(model: Model) -> dict[ElementKey, int | None]:
    """Each operator's MACs, None where it has no count (``cheap_metrics``' ``macs`` is an n/a reason there)."""
    return {key: None if isinstance(values["macs"], str) else values["macs"]
            for key, values in cheap_metrics(model).items()}


def _figures(model: Model) -> dict[str, Any]:
    kept = _kept_results(model)
    return kept[1] if kept is not None else model_costs(model).totals()


def _kept_results(model: Model) -> tuple[dict[ElementKey, dict[str, Any]], dict[str, Any]] | None:
    """The cheap metrics and ``ModelCosts.totals`` of a model whose snapshot is kept (``snapshot.keyed``): from
    the results cache (a re-render with new numbers builds no cost pass), else computed and kept there; None
    for any other model. Once per model (the last one is remembered)."""
    from renderer.loaders import snapshot

    count = sum(len(g.nodes) for g in model.graphs)
    if _kept and _kept[0][0] is model and _kept[0][1] == count:
        return _kept[0][2]
    found = None
    if snapshot.keyed(model):
        found = _from_json(model, snapshot.recall(model, KIND))
        if found is None:
            costs = model_costs(model)
            found = (_cheap_of(costs), costs.totals())
            if _round_trips(model, *found):  # (anything else would not come back as it went)
                snapshot.keep(model, KIND, {"ops": [[key[1], key[2], list(values.items())]
                                                    for key, values in found[0].items()], "totals": found[1]})
    _kept[:] = [(model, count, found)]
    return found


def _from_json(model: Model, data: Any) -> tuple[dict[ElementKey, dict[str, Any]], dict[str, Any]] | None:
    """What ``_kept_results`` kept, None unless it is ``_round_trips``."""
    try:
        ops = {("op", graph, index): dict(values) for graph, index, values in data["ops"]}
        totals = {name: data["totals"][name] for name in _TOTALS}
    except (TypeError, KeyError, ValueError):
        return None
    return (ops, totals) if _round_trips(model, ops, totals) else None


def _round_trips(model: Model, ops: dict[ElementKey, dict[str, Any]], totals: dict[str, Any]) -> bool:
    """True when ``ops`` has every operator of ``model`` in order, each with every cheap metric in order as a
    number or a reason, and ``totals`` every figure as a count: what JSON keeps and gives back unchanged."""
    keys = [node.key for graph in model.graphs for node in graph.nodes]
    names = list(CHEAP_OP_METRICS)
    return (list(ops) == keys and list(totals) == list(_TOTALS)
            and all(type(value) is int for value in totals.values())
            and all(list(values) == names and all(type(value) in (int, float, str) for value in values.values())
                    for values in ops.values()))


def compute(model: Model, op_names: set[str] | None = None, tensor_names: set[str] | None = None,
            max_tensor_elements: int = DEFAULT_MAX_TENSOR_ELEMENTS, progress: bool = True,
            ) -> tuple[dict[ElementKey, dict[str, Any]], dict[ElementKey, dict[str, Any]]]:
    """Built-in metric values: ({op key: {name: value}}, {tensor key: {name: value}}).

    Args:
        model: the loaded model.
        op_names: operator metrics to compute (default: all of ``OP_METRICS``).
        tensor_names: tensor metrics to compute (default: all of ``ALL_TENSOR_METRICS``).
        max_tensor_elements: statistics are skipped, and said so, for larger tensors.
        progress: allow a progress bar on stderr for long weight passes.
    """
    op_names = set(OP_METRICS) if op_names is None else op_names & set(OP_METRICS)
    tensor_names = set(ALL_TENSOR_METRICS) if tensor_names is None else tensor_names & set(ALL_TENSOR_METRICS)
    ops: dict[ElementKey, dict[str, Any]] = {}
    cheap = op_names & set(CHEAP_OP_METRICS)
    if cheap:
        for key, values in cheap_metrics(model).items():
            ops[key] = {k: v for k, v in values.items() if k in cheap}
    tensors: dict[ElementKey, dict[str, Any]] = {}
    if tensor_names & set(TENSOR_METRICS):
        from renderer.metrics.tensors import tensor_values

        tensors = tensor_values(model, tensor_names & set(TENSOR_METRICS))
    expensive_ops = op_names & set(EXPENSIVE_OP_METRICS)
    expensive_tensors = tensor_names & set(EXPENSIVE_TENSOR_METRICS)
    if expensive_ops or expensive_tensors:
        from renderer.metrics.weight_metrics import compute as weight_compute

        op_extra, tensor_extra = weight_compute(model_costs(model), expensive_ops, expensive_tensors,
                                                max_tensor_elements, progress)
        for key, values in op_extra.items():
            ops.setdefault(key, {}).update(values)
        for key, values in tensor_extra.items():
            tensors.setdefault(key, {}).update(values)
    return ops, tensors


def augment(
    model: Model, annotations: Annotations, wanted: set[str], options: RenderOptions | None = None,
) -> Annotations:
    """Return ``annotations`` with the built-in metrics added where no file provides them.

    The cheap operator metrics are always added; expensive operator metrics and all tensor metrics only when
    named in ``wanted``.
    """
    limit = options.max_tensor_elements if options is not None else DEFAULT_MAX_TENSOR_ELEMENTS
    op_names = set(CHEAP_OP_METRICS) | (wanted & set(EXPENSIVE_OP_METRICS))
    tensor_names = wanted & set(ALL_TENSOR_METRICS)
    ops, tensors = compute(model, op_names, tensor_names, limit)
    _merge(annotations.ops, ops)
    _merge(annotations.tensors, tensors)
    infos = {**OP_METRICS, **ALL_TENSOR_METRICS}
    for name in op_names | tensor_names:
        unit, description = infos[name]
        annotations.metrics.setdefault(name, MetricInfo(name, source="builtin", unit=unit, description=description))
    return annotations


def _merge(target: dict[ElementKey, Entry], computed: dict[ElementKey, dict[str, Any]]) -> None:
    for key, values in computed.items():
        if not values:
            continue
        entry = target.get(key)
        if entry is None:
            entry = target[key] = Entry()
        for name, value in values.items():
            entry.values.setdefault(name, value)


def totals(model: Model) -> dict[str, str]:
    """Model-wide figures shown in the picture's header (display strings)."""
    figures = _figures(model)
    text = {"operators": f"{sum(len(g.nodes) for g in model.graphs):,}"}
    if len(model.graphs) > 1:
        text["graphs"] = str(len(model.graphs))
    text["parameters"] = format_count(figures["params"])
    macs, uncounted = figures["macs"], figures["macs_uncounted"]
    if uncounted and not macs:
        text["MACs"] = f"n/a ({uncounted} {'op' if uncounted == 1 else 'ops'} without a count)"
    else:
        text["MACs"] = format_count(macs) + (f" (+{uncounted} {'op' if uncounted == 1 else 'ops'} n/a)"
                                             if uncounted else "")
    text["weights"] = format_bytes(figures["weight_bytes"])
    peak, unknown = figures["peak_activation_bytes"], figures["peak_unknown"]
    sizes = f"({unknown} {'size' if unknown == 1 else 'sizes'} unknown)"
    if unknown and not peak:
        text["peak activations"] = f"n/a {sizes}"
    else:
        text["peak activations"] = ("≥ " if unknown else "") + format_bytes(peak) + (f" {sizes}" if unknown else "")
    return text


def pin_advice(model: Model, metric: str, given: set[tuple[str, int, int]] = frozenset()) -> str:  # type: ignore[assignment]
    """One line naming the free input dims and the ``--dim`` flags to add, when ``metric`` needs shapes and some
    operators (other than those in ``given``, which have a value from a file) go without it because of them;
    "" otherwise."""
    free = model_free_dims(model)
    if metric not in SHAPE_METRICS or not free:
        return ""
    costs = cheap_metrics(model)
    waiting = sum(1 for key, values in costs.items() if key not in given and "--dim " in str(values.get("macs", "")))
    if not waiting:
        return ""
    names = ", ".join(free)
    return (f"{model.path}: {waiting} of {len(costs)} operators have no {metric} while the input dims {names} are "
            f"free; add {flags(free)}")
