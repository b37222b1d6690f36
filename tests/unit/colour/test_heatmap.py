"""``renderer/colour/heatmap.py``: a metric picked out of real annotations on a real model, the scale fitted to the
drawn operators only, infinities at the ends of the map, the default colour map of a higher-is-better metric,
which metric colours a picture when none is asked for, and the errors for a metric that is not there."""

from __future__ import annotations

import json
import math
import tempfile
from pathlib import Path

import numpy as np
import onnx
import pytest
import yaml

from conftest import ONNX, SAMPLES
from renderer.annotations.registry import load_annotations
from renderer.colour.heatmap import build, builtin_default, default_metric, infinite_value, number_of, resolve_metric
from renderer.colour.maps import NA_COLOR, Scale
from renderer.core.errors import MetricError
from renderer.core.numbers import format_number
from renderer.loaders.registry import load_model

MODEL = load_model(ONNX / "tiny_cnn.onnx")
LATENCY = SAMPLES / "annotations" / "tiny_cnn.latency.yaml"
KEYS = {node.display_name: node.key for node in MODEL.nodes()}


def _file_latencies() -> dict[str, float]:
    document = yaml.safe_load(LATENCY.read_text())
    return {op["id"]: float(op["meta"]["latency_us"]) for op in document["operators"] if "meta" in op}


def _annotations(folder: Path, metric: str, values: dict[str, object], **meta: object) -> object:
    path = folder / "a.json"
    operators = [{"id": k, metric: v} for k, v in values.items()]
    path.write_text(json.dumps({"metrics": {metric: meta}, "operators": operators}))
    return load_annotations(path, MODEL, sidecar=False, embedded=False)


def test_the_values_are_the_files_and_the_scale_spans_them() -> None:
    latencies = _file_latencies()
    heat = build("latency_us", load_annotations(LATENCY, MODEL, sidecar=False, embedded=False), "op", None)
    assert heat.values == {KEYS[name]: value for name, value in latencies.items()}
    assert (heat.scale.vmin, heat.scale.vmax) == (min(latencies.values()), max(latencies.values()))
    assert heat.scale.cmap_name == "heat" and heat.title() == "latency_us"  # the file gives no unit
    for name, value in latencies.items():
        assert heat.color(KEYS[name]) == heat.scale.color(value)


def test_an_operator_without_a_value_gets_the_na_fill(tmp_path: Path) -> None:
    heat = build("x_us", _annotations(tmp_path, "x_us", {"stem/conv": 1.0, "stem/bn": 2.0}), "op", None)
    assert heat.color(KEYS["stem/relu"]) == NA_COLOR and heat.color(KEYS["stem/conv"]) != NA_COLOR


def test_the_scale_fits_only_the_drawn_operators() -> None:
    latencies = _file_latencies()
    hottest = max(latencies, key=latencies.__getitem__)
    heat = build("latency_us", load_annotations(LATENCY, MODEL, sidecar=False, embedded=False), "op", None,
                 undrawn=frozenset({KEYS[hottest]}))
    rest = [v for n, v in latencies.items() if n != hottest]
    assert KEYS[hottest] not in heat.values and heat.scale.vmax == max(rest)


def test_norm_range_and_centre_pass_through_to_the_scale(tmp_path: Path) -> None:
    values = {"stem/conv": -4.0, "stem/bn": 1.0, "stem/relu": 6.0}
    heat = build("delta_us", _annotations(tmp_path, "delta_us", values), "op", None, center=0.0, vmin=-8.0)
    assert (heat.scale.vmin, heat.scale.vmax, heat.scale.center) == (-8.0, 6.0, 0.0)
    assert heat.scale.cmap_name == "diverging"
    assert heat.scale.position(0.0) == 0.5
    centred = next(n for n in heat.notes() if n.startswith("centred at "))
    assert float(centred.removeprefix("centred at ")) == 0.0
    assert "linear scale" in heat.notes()


def test_infinite_values_take_the_ends_without_moving_them(tmp_path: Path) -> None:
    """An exact match's SQNR is written "inf dB": the best end of the map, while the range stays the finite one."""
    values = {"stem/conv": 20.0, "stem/bn": "inf dB", "stem/relu": 40.0, "stem/pool": "-inf"}
    heat = build("sqnr_db", _annotations(tmp_path, "sqnr_db", values, unit="dB", higher_is_better=True), "op", None)
    assert heat.scale.cmap_name == "traffic_r"  # higher is better: red where the value is low
    assert (heat.scale.vmin, heat.scale.vmax) == (20.0, 40.0)
    assert heat.values[KEYS["stem/bn"]] == math.inf and heat.values[KEYS["stem/pool"]] == -math.inf
    assert heat.color(KEYS["stem/bn"]) == heat.scale.color(40.0) == heat.scale.color_at(1.0)
    assert heat.color(KEYS["stem/pool"]) == heat.scale.color(20.0)
    assert "higher is better" in heat.notes()


def test_text_that_is_not_a_number_gets_no_colour(tmp_path: Path) -> None:
    values = {"stem/conv": 1.0, "stem/bn": "n/a", "stem/relu": "nan", "stem/pool": 3.0}
    heat = build("x_us", _annotations(tmp_path, "x_us", values), "op", None)
    assert set(heat.values) == {KEYS["stem/conv"], KEYS["stem/pool"]}
    assert heat.color(KEYS["stem/bn"]) == NA_COLOR


@pytest.mark.parametrize("text,number", [("inf", math.inf), ("-inf dB", -math.inf), ("∞", math.inf),
                                         ("+Infinity µs", math.inf), ("info", None), ("12.5", None), (7, None)])
def test_infinite_value_reads_how_files_write_infinity(text: object, number: float | None) -> None:
    assert infinite_value(text) == number


@pytest.mark.parametrize("value,number", [("12.5", 12.5), (3, 3.0), ("inf", math.inf), ("n/a", None), (True, None)])
def test_number_of_a_metric_value(value: object, number: float | None) -> None:
    assert number_of(value) == number


def test_an_unknown_metric_suggests_the_close_ones(tmp_path: Path) -> None:
    annotations = _annotations(tmp_path, "latency_us", {"stem/conv": 1.0})
    with pytest.raises(MetricError, match=r"^unknown operator metric 'latncy_us' \(did you mean latency_us\?\)"):
        resolve_metric("latncy_us", annotations, "op")
    with pytest.raises(MetricError, match="^no tensor metric 'latency_us'"):
        resolve_metric("latency_us", annotations, "tensor")


def test_the_only_metric_is_the_default(tmp_path: Path) -> None:
    chosen = default_metric(_annotations(tmp_path, "latency_us", {"stem/conv": 1.0}))
    assert chosen.metric == "latency_us" and "only numeric operator metric" in chosen.why


def test_builtin_default_is_macs_when_shapes_are_known() -> None:
    from renderer.metrics.builtin import model_costs
    from renderer.metrics.op_costs import Cost

    chosen = builtin_default(MODEL, lambda node: True)
    costs = model_costs(MODEL).ops
    heavy = [n.key for n in MODEL.nodes() if n.category in ("layer", "attention")]
    counted = sum(isinstance(costs[key].cost, Cost) for key in heavy)
    assert heavy and 2 * counted > len(heavy) and chosen.metric == "macs" and chosen.routine
    assert f"known for {counted} of {len(heavy)} drawn layer and attention operators" in chosen.why


def test_zero_cost_operators_never_make_macs_the_default() -> None:
    """A model whose layers have no MACs (free dims kept) but many Cast/Transpose that count 0 without any shape:
    weight bytes colour, not a scale that reads "all values 0"."""
    from onnx import TensorProto, helper, numpy_helper

    weight = numpy_helper.from_array(np.ones((8, 8), np.float32), "w")
    nodes = [helper.make_node("MatMul", ["x", "w"], ["m"], name="layer")]
    for i in range(6):
        nodes.append(helper.make_node("Cast", [f"m{i - 1}" if i else "m"], [f"m{i}"], to=TensorProto.FLOAT))
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 8])],
                              [helper.make_tensor_value_info("m5", TensorProto.FLOAT, None)], [weight])
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "casts.onnx"
        onnx.save(helper.make_model(graph), path)
        free = load_model(path, assume_dims=False)
        assumed = load_model(path)
    assert builtin_default(free, lambda node: True).metric == "weight_bytes"
    assert builtin_default(assumed, lambda node: True).metric == "macs"


def test_the_legend_range_reads_back() -> None:
    heat = build("latency_us", load_annotations(LATENCY, MODEL, sidecar=False, embedded=False), "op", None)
    for tick in heat.scale.ticks(5):
        assert float(format_number(tick)) == pytest.approx(tick, rel=5e-4)
    assert isinstance(heat.scale, Scale)
