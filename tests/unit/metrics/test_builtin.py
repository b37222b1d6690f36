"""Built-in metrics on real models: TFLite MACs from raw flatbuffer shapes, zero-point-aware sparsity from raw
ONNX initializers, weight statistics, n/a reasons, totals, never overwriting file values."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
import tflite
from onnx import TensorProto, helper, numpy_helper

from conftest import ROOT
from renderer.core import numbers
from renderer.core.options import RenderOptions
from renderer.core.records import Annotations, Entry, metric_value
from renderer.loaders.registry import load_model
from renderer.metrics import builtin as metrics
from renderer.metrics.op_costs import peak_activation_bytes

ONNX = ROOT / "samples" / "onnx"
TFLITE = ROOT / "samples" / "tflite"

OP_NAMES = {v: k for k, v in vars(tflite.BuiltinOperator).items() if not k.startswith("_")}
ACTIVATION = {v: k for k, v in vars(tflite.ActivationFunctionType).items() if not k.startswith("_")}
OPTIONS = {"CONV_2D": tflite.Conv2DOptions, "DEPTHWISE_CONV_2D": tflite.DepthwiseConv2DOptions,
           "FULLY_CONNECTED": tflite.FullyConnectedOptions}


def op_values(model, names=None):  # type: ignore[no-untyped-def]
    ops, _ = metrics.compute(model, names, set(), progress=False)
    return ops


# ---- TFLite MACs by hand ---------------------------------------------------------------------------------------


def hand_macs(path: Path) -> dict[int, tuple[str, int]]:
    """MACs of every CONV_2D / DEPTHWISE_CONV_2D / FULLY_CONNECTED of subgraph 0, from the raw flatbuffer.

    conv: outputs × kh·kw·in_channels (filter [O, kh, kw, I]); depthwise: outputs × kh·kw (filter
    [1, kh, kw, C·m]); fully connected: outputs × in_features (weights [O, I]); each + outputs for a bias and
    + outputs for a fused activation.
    """
    fb = tflite.Model.GetRootAsModel(path.read_bytes(), 0)
    sg = fb.Subgraphs(0)
    result = {}
    for i in range(sg.OperatorsLength()):
        op = sg.Operators(i)
        code = fb.OperatorCodes(op.OpcodeIndex())
        name = OP_NAMES[max(code.BuiltinCode(), code.DeprecatedBuiltinCode())]
        if name not in OPTIONS:
            continue
        inputs = op.InputsAsNumpy().tolist()
        filt = sg.Tensors(inputs[1]).ShapeAsNumpy().tolist()
        out = sg.Tensors(op.OutputsAsNumpy()[0]).ShapeAsNumpy().tolist()
        outputs = int(np.prod(out))
        if name == "CONV_2D":
            macs = outputs * filt[1] * filt[2] * filt[3]
        elif name == "DEPTHWISE_CONV_2D":
            macs = outputs * filt[1] * filt[2]
        else:
            macs = outputs * filt[1]
        if len(inputs) > 2 and inputs[2] != -1:
            macs += outputs
        table = op.BuiltinOptions()
        options = OPTIONS[name]()
        options.Init(table.Bytes, table.Pos)
        if ACTIVATION[options.FusedActivationFunction()] != "NONE":
            macs += outputs
        result[i] = (name, macs)
    return result


@pytest.mark.parametrize("file", ["face_detection_short_range.tflite", "okay_nabu.tflite"])
def test_tflite_macs_match_hand_computation(file: str) -> None:
    expected = hand_macs(TFLITE / file)
    assert len({name for name, _ in expected.values()}) >= 2
    model = load_model(TFLITE / file)
    ours = op_values(model, {"macs", "flops"})
    for index, (name, macs) in expected.items():
        node = model.main.nodes[index]
        assert node.op_type == name
        assert ours[node.key]["macs"] == macs, (file, index, name)
        assert ours[node.key]["flops"] == 2 * macs


def test_tflite_spot_values() -> None:
    face = op_values(load_model(TFLITE / "face_detection_short_range.tflite"), {"macs"})
    # op 2: CONV_2D 1×128×128×3 → 1×64×64×24 with a 24×5×5×3 filter and a bias: 98304 outputs × 75 + 98304
    assert face[("op", 0, 2)]["macs"] == 64 * 64 * 24 * (5 * 5 * 3) + 64 * 64 * 24
    # op 6: DEPTHWISE_CONV_2D 1×64×64×24 with a 1×3×3×24 filter and a bias: 98304 × 9 + 98304
    assert face[("op", 0, 6)]["macs"] == 64 * 64 * 24 * 9 + 64 * 64 * 24
    nabu = op_values(load_model(TFLITE / "okay_nabu.tflite"), {"macs"})
    # op 14: CONV_2D 1×5×1×40 → 1×1×1×64, filter 64×5×1×40, bias, fused RELU: 64 × 200 + 64 + 64
    assert nabu[("op", 0, 14)]["macs"] == 64 * 5 * 40 + 64 + 64
    # op 58: FULLY_CONNECTED 64 → 1 with a bias
    assert nabu[("op", 0, 58)]["macs"] == 64 + 1


def test_tflite_int8_sparsity_uses_the_tensor_zero_point() -> None:
    model = load_model(TFLITE / "okay_nabu.tflite")
    ours = op_values(model, {"sparsity"})
    fb = tflite.Model.GetRootAsModel((TFLITE / "okay_nabu.tflite").read_bytes(), 0)
    sg = fb.Subgraphs(0)
    checked = 0
    for node in model.main.nodes:
        if node.op_type not in OPTIONS:
            continue
        tensor = sg.Tensors(int(sg.Operators(node.index).InputsAsNumpy()[1]))
        buf = fb.Buffers(tensor.Buffer()).DataAsNumpy().view(np.int8).reshape(tensor.ShapeAsNumpy())
        q = tensor.Quantization()
        zp = q.ZeroPointAsNumpy()
        axis = q.QuantizedDimension()
        shape = [1] * buf.ndim
        shape[axis] = -1
        zero = zp.reshape(shape) if np.size(zp) > 1 else zp
        assert ours[node.key]["sparsity"] == pytest.approx(float(np.mean(buf == zero)), abs=1e-6)
        checked += 1
    assert checked >= 10


# ---- zero-point-aware sparsity on ONNX -------------------------------------------------------------------------


def raw_weight_sparsity(path: Path) -> dict[str, float]:
    """For each Conv/Gemm fed by a DequantizeLinear of an initializer: mean(q == zero point), by node name."""
    raw = onnx.load(str(path))
    inits = {t.name: numpy_helper.to_array(t) for t in raw.graph.initializer}
    dq = {n.output[0]: n for n in raw.graph.node if n.op_type == "DequantizeLinear"}
    result = {}
    for node in raw.graph.node:
        if node.op_type not in ("Conv", "Gemm"):
            continue
        d = dq[node.input[1]]
        q = inits[d.input[0]]
        zp = inits[d.input[2]] if len(d.input) > 2 else np.zeros((), q.dtype)
        axis = next((a.i for a in d.attribute if a.name == "axis"), 1)
        if zp.size > 1:
            shape = [1] * q.ndim
            shape[axis] = zp.size
            zp = zp.reshape(shape)
        result[node.name] = float(np.mean(q == zp))
    return result


@pytest.mark.parametrize("file", ["tiny_cnn_qdq_u8.onnx", "tiny_cnn_qdq_s8_perchannel.onnx"])
def test_qdq_sparsity_matches_raw_initializers(file: str) -> None:
    expected = raw_weight_sparsity(ONNX / file)
    model = load_model(ONNX / file)
    ours = op_values(model, {"sparsity", "effective_macs", "macs"})
    by_name = {n.name: n for n in model.main.nodes}
    for name, sparsity in expected.items():
        values = ours[by_name[name].key]
        assert values["sparsity"] == pytest.approx(sparsity, abs=1e-6), name
        assert values["effective_macs"] <= values["macs"]
    assert len(expected) == 5


def test_u8_pwconv_counts_its_zero_point_not_zero() -> None:
    raw = onnx.load(str(ONNX / "tiny_cnn_qdq_u8.onnx"))
    inits = {t.name: numpy_helper.to_array(t) for t in raw.graph.initializer}
    dq = next(n for n in raw.graph.node if n.op_type == "DequantizeLinear" and n.output[0] == next(
        m for m in raw.graph.node if m.name == "block1/pwconv").input[1])
    q, zp = inits[dq.input[0]], inits[dq.input[2]]
    assert int(zp) != 0  # the sample's point: asymmetric uint8 weights
    model = load_model(ONNX / "tiny_cnn_qdq_u8.onnx")
    node = next(n for n in model.main.nodes if n.name == "block1/pwconv")
    values = op_values(model, {"sparsity", "weight_zero_fraction", "effective_macs", "macs"})[node.key]
    assert values["sparsity"] == pytest.approx(float(np.mean(q == zp)), abs=1e-6)
    assert values["sparsity"] > 0.25  # the pruned weights: 30 % exact zeros in the float model
    assert values["weight_zero_fraction"] == pytest.approx(float(np.mean(q == 0)), abs=1e-6)
    assert values["weight_zero_fraction"] < 0.05  # raw zeros are not the zero point
    skipped = round(values["macs"] - values["effective_macs"])
    weight_macs = 16 * 16 * 16 * 16  # outputs 1×16×16×16, 16 input channels, 1×1 kernel: bias adds excluded
    assert skipped == round(weight_macs * values["sparsity"])


def test_float_weights_count_exact_zeros() -> None:
    raw = onnx.load(str(ONNX / "tiny_cnn.onnx"))
    inits = {t.name: numpy_helper.to_array(t) for t in raw.graph.initializer}
    model = load_model(ONNX / "tiny_cnn.onnx")
    ours = op_values(model, {"sparsity"})
    for node in model.main.nodes:
        if node.op_type == "Conv":
            raw_node = next(n for n in raw.graph.node if n.name == node.name)
            assert ours[node.key]["sparsity"] == pytest.approx(float(np.mean(inits[raw_node.input[1]] == 0.0)))
    pw = next(n for n in model.main.nodes if n.name == "block1/pwconv")
    assert ours[pw.key]["sparsity"] == pytest.approx(0.3008, abs=5e-4)


def shared_initializer_model(path: Path) -> tuple[np.ndarray, int, int]:
    """One uint8 initializer dequantized twice, with zero points 100 and 7, each feeding a MatMul."""
    rng = np.random.default_rng(5)
    w = rng.integers(0, 256, size=(16, 8), dtype=np.uint8)
    w[rng.random(w.shape) < 0.4] = 100
    w[rng.random(w.shape) < 0.1] = 7
    nodes = [
        helper.make_node("DequantizeLinear", ["W", "s", "zp_a"], ["Wa"], name="dq_a"),
        helper.make_node("DequantizeLinear", ["W", "s", "zp_b"], ["Wb"], name="dq_b"),
        helper.make_node("MatMul", ["x", "Wa"], ["ya"], name="mm_a"),
        helper.make_node("MatMul", ["x", "Wb"], ["yb"], name="mm_b"),
    ]
    graph = helper.make_graph(
        nodes, "shared",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 16])],
        [helper.make_tensor_value_info("ya", TensorProto.FLOAT, [2, 8]),
         helper.make_tensor_value_info("yb", TensorProto.FLOAT, [2, 8])],
        [numpy_helper.from_array(w, "W"), numpy_helper.from_array(np.array(0.02, np.float32), "s"),
         numpy_helper.from_array(np.array(100, np.uint8), "zp_a"),
         numpy_helper.from_array(np.array(7, np.uint8), "zp_b")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return w, 100, 7


def test_one_initializer_two_zero_points_two_answers(tmp_path: Path) -> None:
    path = tmp_path / "shared.onnx"
    w, zp_a, zp_b = shared_initializer_model(path)
    model = load_model(path)
    annotations = metrics.augment(model, Annotations(), {"sparsity", "value_zero_fraction"}, RenderOptions())
    by_name = {n.name: n for n in model.main.nodes}
    a = annotations.ops[by_name["mm_a"].key].values["sparsity"]
    b = annotations.ops[by_name["mm_b"].key].values["sparsity"]
    assert a == pytest.approx(float(np.mean(w == zp_a)), abs=1e-6)
    assert b == pytest.approx(float(np.mean(w == zp_b)), abs=1e-6)
    assert a != b
    weight = next(v for v in model.main.values if v.name == "W")
    on_tensor = annotations.tensors[weight.key].values
    assert "sparsity" not in on_tensor  # nothing written back onto the tensor
    assert on_tensor["value_zero_fraction"] == pytest.approx(float(np.mean(w == 0)), abs=1e-6)


def test_integer_op_per_column_zero_point(tmp_path: Path) -> None:
    """MatMulInteger's own b_zero_point input, one value per output column."""
    rng = np.random.default_rng(9)
    b = rng.integers(-128, 128, size=(12, 4), dtype=np.int8)
    zp = np.array([0, 3, -5, 9], np.int8)
    b[:, 1][rng.random(12) < 0.5] = 3
    b[:, 2][rng.random(12) < 0.5] = -5
    graph = helper.make_graph(
        [helper.make_node("MatMulInteger", ["a", "B", "", "zp"], ["y"], name="mmi")], "g",
        [helper.make_tensor_value_info("a", TensorProto.INT8, [3, 12])],
        [helper.make_tensor_value_info("y", TensorProto.INT32, [3, 4])],
        [numpy_helper.from_array(b, "B"), numpy_helper.from_array(zp, "zp")],
    )
    path = tmp_path / "mmi.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    model = load_model(path)
    values = op_values(model, {"sparsity", "macs"})[model.main.nodes[0].key]
    assert values["sparsity"] == pytest.approx(float(np.mean(b == zp.reshape(1, 4))), abs=1e-6)
    assert values["macs"] == 3 * 4 * 12


# ---- statistics, n/a, totals, augment --------------------------------------------------------------------------


def test_weight_statistics_and_their_bound() -> None:
    raw = onnx.load(str(ONNX / "tiny_cnn.onnx"))
    inits = {t.name: numpy_helper.to_array(t) for t in raw.graph.initializer}
    model = load_model(ONNX / "tiny_cnn.onnx")
    conv = next(n for n in model.main.nodes if n.name == "block2/conv")
    w = inits[next(n for n in raw.graph.node if n.name == "block2/conv").input[1]].astype(np.float64)
    names = {"weight_min", "weight_max", "weight_mean", "weight_std", "weight_zero_fraction"}
    values = op_values(model, names)[conv.key]
    assert values["weight_min"] == pytest.approx(w.min(), rel=1e-6)
    assert values["weight_max"] == pytest.approx(w.max(), rel=1e-6)
    assert values["weight_mean"] == pytest.approx(w.mean(), rel=1e-5, abs=1e-9)
    assert values["weight_std"] == pytest.approx(w.std(), rel=1e-5)
    assert values["weight_zero_fraction"] == pytest.approx(float(np.mean(w == 0)))
    bounded, _ = metrics.compute(model, names, set(), max_tensor_elements=1000, progress=False)
    text = bounded[conv.key]["weight_std"]
    assert text == "skipped: 4.61k elements > limit 1k"  # 32×16×3×3 = 4608
    assert metric_value(text) is None
    small = next(n for n in model.main.nodes if n.name == "block1/dwconv")  # 16×1×3×3 = 144 elements
    assert isinstance(bounded[small.key]["weight_std"], float)


def test_unknown_shapes_are_na_with_the_reason() -> None:
    model = load_model(ONNX / "tiny_transformer.onnx", assume_dims=False)  # batch and seq left symbolic
    ours = op_values(model)
    q_proj = next(n for n in model.main.nodes if n.name == "layer0/attn/q_proj")
    macs = ours[q_proj.key]["macs"]
    assert isinstance(macs, str) and macs.startswith("n/a (") and "--dim batch=N" in macs
    assert metric_value(macs) is None
    assert ours[q_proj.key]["params"] == 64 * 64  # params need no activation shape
    pinned = op_values(load_model(ONNX / "tiny_transformer.onnx", dims={"batch": 2, "seq": 5}))
    assert pinned[q_proj.key]["macs"] == 2 * 5 * 64 * 64


def test_control_flow_and_unknown_ops_are_never_silent_zeros() -> None:
    model = load_model(ONNX / "control_flow.onnx")
    ours = op_values(model, {"macs"})
    for node in model.main.nodes:
        if node.op_type in ("If", "Loop"):
            assert ours[node.key]["macs"].startswith("n/a (control flow")
    inner = [ours[n.key]["macs"] for g in model.graphs[1:] for n in g.nodes if n.op_type in ("Mul", "Add", "Neg")]
    assert inner and all(isinstance(v, int) and v > 0 for v in inner)


def test_totals_of_a_cnn() -> None:
    raw = onnx.load(str(ONNX / "tiny_cnn.onnx"))
    model = load_model(ONNX / "tiny_cnn.onnx")
    params = sum(int(np.prod(t.dims)) for t in raw.graph.initializer)
    text = metrics.totals(model)
    figures = metrics.model_costs(model).totals()
    assert figures["params"] == params
    assert figures["macs"] == sum(v["macs"] for v in op_values(model, {"macs"}).values())
    assert text["parameters"] == numbers.format_count(params)
    assert text["operators"] == "18"
    assert figures["weight_bytes"] == 4 * params


def test_totals_say_one_in_the_singular() -> None:
    """onnxruntime's own logreg_iris (in its wheel): ZipMap's seq(map) output has no size, the only one, and the
    headline read "(1 sizes unknown)"."""
    import onnxruntime

    path = Path(onnxruntime.__file__).parent / "datasets" / "logreg_iris.onnx"
    text = metrics.totals(load_model(path))
    unknown = metrics.model_costs(load_model(path)).totals()["peak_unknown"]
    assert unknown == 1 and text["peak activations"].endswith("(1 size unknown)"), text
    assert text["MACs"] == "90", text


def test_peak_activations_in_graph_order(tmp_path: Path) -> None:
    """x → Relu → Relu → Add(x, ·): x stays alive to the end, so the peak holds three 4000-byte tensors."""
    nodes = [helper.make_node("Relu", ["x"], ["a"]), helper.make_node("Relu", ["a"], ["b"]),
             helper.make_node("Add", ["x", "b"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1000])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1000])])
    path = tmp_path / "chain.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    # step 1: x + a; step 2: x + a + b (a freed after); step 3: x + b + y
    assert peak_activation_bytes(load_model(path)) == (3 * 4000, 0)


def test_augment_adds_cheap_metrics_and_keeps_file_values() -> None:
    model = load_model(ONNX / "tiny_cnn.onnx")
    conv = model.main.nodes[0]
    annotations = Annotations()
    annotations.ops[conv.key] = Entry({"macs": 123.0})
    metrics.augment(model, annotations, set(), RenderOptions())
    assert annotations.ops[conv.key].values["macs"] == 123.0  # the file's value wins
    assert isinstance(annotations.ops[conv.key].values["params"], int)
    assert "sparsity" not in annotations.ops[conv.key].values  # expensive metrics only when asked for
    assert annotations.metrics["flops"].source == "builtin" and "2 × MACs" in annotations.metrics["flops"].description
    others = [annotations.ops[n.key].values["macs"] for n in model.main.nodes[1:]]
    assert all(isinstance(v, int) for v in others)


# ---- kept with the model's snapshot (issue 30) -----------------------------------------------------------------


def _snapshot_load(path: Path, cache: Path):  # type: ignore[no-untyped-def]
    """``path`` loaded as a render loads it, within a results cache at ``cache`` (kept there, or restored)."""
    from renderer.files import disk_cache
    from renderer.integrations.loading import load_model_for

    with disk_cache.using(str(cache)):
        return load_model_for(path, [])


@pytest.mark.parametrize("path", [ONNX / "tiny_transformer.onnx", ONNX / "tiny_cnn_qdq_s8_perchannel.onnx",
                                  TFLITE / "tiny_keras_int8_asymmetric.tflite"])
def test_cheap_metrics_and_totals_come_back_from_the_cache_as_computed(tmp_path: Path, path: Path) -> None:
    """A re-render's model (restored from its snapshot) reads the cheap metrics and totals its first render kept:
    the very values, in the order, that the cost pass of a fresh load gives; no cost pass is built for them."""
    from renderer.files import disk_cache

    fresh = load_model(path)
    expected = {key: op.cheap_metrics() for key, op in metrics.model_costs(fresh).ops.items()}
    first = _snapshot_load(path, tmp_path)
    with disk_cache.using(str(tmp_path)):
        assert metrics.cheap_metrics(first) == expected
        totals = metrics.totals(first)
    again = _snapshot_load(path, tmp_path)
    assert again is not first
    metrics._cache.clear()
    with disk_cache.using(str(tmp_path)):
        kept = metrics.cheap_metrics(again)
        assert not metrics._cache  # recalled: no cost pass made
        assert kept == expected and [list(v) for v in kept.values()] == [list(v) for v in expected.values()]
        assert metrics.totals(again) == totals == metrics.totals(fresh)
        assert metrics.op_macs(again) == {key: None if isinstance(v["macs"], str) else v["macs"]
                                          for key, v in expected.items()}


def test_a_spoiled_cheap_metrics_entry_is_computed_again_and_rewritten(tmp_path: Path) -> None:
    """An entry that does not fit the model (an operator missing, a value JSON would not give back) is a miss."""
    from renderer.files import disk_cache
    from renderer.loaders import snapshot

    path = ONNX / "tiny_cnn.onnx"
    expected = {key: op.cheap_metrics() for key, op in metrics.model_costs(load_model(path)).ops.items()}
    model = _snapshot_load(path, tmp_path)
    with disk_cache.using(str(tmp_path)):
        kept = [[g, i, list(v.items())] for (_, g, i), v in expected.items()]
        for spoiled in ({"ops": kept[1:], "totals": {}}, {"ops": [[*k[:2], [["params", [1]]]] for k in kept]},
                        {"ops": "x"}, []):
            snapshot.keep(model, metrics.KIND, spoiled)
            metrics._kept.clear()
            assert metrics.cheap_metrics(model) == expected
            assert metrics._from_json(model, snapshot.recall(model, metrics.KIND)) is not None  # written over
