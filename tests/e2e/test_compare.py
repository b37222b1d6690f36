"""``annograph compare``: real models quantized with onnxruntime's quantizer, run in onnxruntime and LiteRT."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

import renderer
from conftest import FIXTURES, ONNX, SVG_NS, TFLITE, first_fill, one_line_error, parse_svg, run_cli, svg_groups
from ort_quantized import quantize_static_random
from renderer.annotations.registry import load_annotations
from renderer.compare.metrics import error_metrics

METRICS = ("max_abs_error", "mean_abs_error", "rmse", "rel_error", "cosine", "sqnr_db")


def quantize_qdq(source: Path, target: Path) -> Path:
    """onnxruntime's static quantizer, QDQ format, calibrated on a few random inputs."""
    from onnxruntime.quantization import QuantFormat

    return quantize_static_random(source, target, quant_format=QuantFormat.QDQ)


@pytest.fixture(scope="module")
def tiny_qdq(tmp_path_factory) -> Path:  # type: ignore[no-untyped-def]
    return quantize_qdq(ONNX / "tiny_cnn.onnx", tmp_path_factory.mktemp("q") / "tiny_cnn.qdq.onnx")


def compare(*args: str | Path) -> dict:
    out = Path(str(args[-1]))
    run = run_cli("compare", *args[:-1], "-o", out)
    assert run.returncode == 0, run.stderr
    return json.loads(out.read_text(encoding="utf-8"))


def by_id(doc: dict, section: str) -> dict[str, dict]:
    return {item["id"]: item["meta"] for item in doc[section]}


def test_error_metrics_formulas() -> None:
    ref = np.array([1.0, -2.0, 3.0, 0.0])
    cand = np.array([1.5, -2.0, 2.0, 0.0])
    m = error_metrics(ref, cand)
    assert m["max_abs_error"] == 1.0
    assert m["mean_abs_error"] == pytest.approx(1.5 / 4)
    assert m["rmse"] == pytest.approx(math.sqrt(1.25 / 4))
    assert m["rel_error"] == pytest.approx(math.sqrt(1.25 / 14))
    assert m["cosine"] == pytest.approx(np.dot(ref, cand) / np.linalg.norm(ref) / np.linalg.norm(cand))
    assert m["sqnr_db"] == pytest.approx(10 * math.log10(14 / 1.25))
    same = error_metrics(ref, ref)
    assert same["sqnr_db"] == math.inf and same["max_abs_error"] == 0 and same["cosine"] == 1.0
    zeros = error_metrics(np.zeros(3), np.zeros(3))
    assert zeros["sqnr_db"] == math.inf and zeros["rel_error"] == 0
    assert error_metrics(np.zeros(2), np.ones(2))["sqnr_db"] == -math.inf


def test_quantized_tiny_cnn_errors_land_on_the_quantized_convs(tiny_qdq: Path, tmp_path: Path) -> None:
    doc = compare(ONNX / "tiny_cnn.onnx", tiny_qdq, tmp_path / "errors.json")
    ops, tensors = by_id(doc, "operators"), by_id(doc, "tensors")
    # the first conv's output is quantized: its QDQ value differs from the float one
    first = tensors["stem/conv_out"]
    assert first["candidate tensor"] == "stem/conv_out_DequantizeLinear_Output"
    assert first["max_abs_error"] > 0 and first["rmse"] > 0 and 0 < first["rel_error"] < 0.2
    assert 10 < first["sqnr_db"] < 80 and 0.9 < first["cosine"] < 1
    assert ops["stem/conv_out"] == first
    assert doc["metrics"]["sqnr_db"] == {"unit": "dB", "higher_is_better": True,
                                         "description": doc["metrics"]["sqnr_db"]["description"]}
    assert doc["metrics"]["rmse"]["higher_is_better"] is False
    # the ids land on the producing Conv in both models
    for model_path in (ONNX / "tiny_cnn.onnx", tiny_qdq):
        model = renderer.load_model(str(model_path))
        notes = load_annotations([tmp_path / "errors.json"], model)
        conv = next(n for n in model.nodes() if any(v.name == "stem/conv_out" for v in n.outputs))
        assert conv.op_type == "Conv"
        assert notes.ops[conv.key].values["max_abs_error"] == first["max_abs_error"]
        assert notes.metrics["sqnr_db"].higher_is_better is True
    # and render colours by it, saying SQNR is higher-is-better
    svg = tmp_path / "q.svg"
    run = run_cli("render", tiny_qdq, "-a", tmp_path / "errors.json", "--color-by", "sqnr_db", "-o", svg)
    assert run.returncode == 0, run.stderr
    root = parse_svg(svg)
    legend = "".join(root.find(".//*[@id='legend']").itertext())
    assert "higher is better" in legend
    ops_svg = svg_groups(root, "op")
    conv_id = next(n for n in renderer.load_model(str(tiny_qdq)).nodes()
                   if any(v.name == "stem/conv_out" for v in n.outputs)).element_id
    assert first_fill(ops_svg[conv_id]) not in ("#ffffff", "#d9d9d9")


def test_quantized_resnet_first_conv(tmp_path: Path) -> None:
    qdq = quantize_qdq(ONNX / "light_resnet50.onnx", tmp_path / "resnet.qdq.onnx")
    doc = compare(ONNX / "light_resnet50.onnx", qdq, tmp_path / "errors.json")
    model = renderer.load_model(str(ONNX / "light_resnet50.onnx"))
    first_conv = next(n for n in model.nodes() if n.op_type == "Conv")
    tensors = by_id(doc, "tensors")
    first = tensors[first_conv.outputs[0].name]
    assert first["max_abs_error"] > 0 and math.isfinite(first["sqnr_db"])
    assert len(doc["tensors"]) > 300
    notes = load_annotations([tmp_path / "errors.json"], model)
    assert notes.ops[first_conv.key].values["sqnr_db"] == first["sqnr_db"]


def test_identical_models_have_zero_error_and_infinite_sqnr(tmp_path: Path) -> None:
    doc = compare(ONNX / "tiny_cnn.onnx", ONNX / "tiny_cnn.onnx", tmp_path / "same.json")
    assert len(doc["tensors"]) == 18
    for meta in [*by_id(doc, "tensors").values(), *by_id(doc, "operators").values()]:
        assert meta["max_abs_error"] == meta["mean_abs_error"] == meta["rmse"] == meta["rel_error"] == 0
        assert meta["cosine"] == 1 and meta["sqnr_db"] == "inf"
    svg = tmp_path / "same.svg"
    run = run_cli("render", ONNX / "tiny_cnn.onnx", "-a", tmp_path / "same.json", "--color-by", "sqnr_db", "-o", svg)
    assert run.returncode == 0, run.stderr
    ops = svg_groups(parse_svg(svg), "op")
    fills = {first_fill(g) for g in ops.values()}
    assert len(fills) == 1 and fills != {"#d9d9d9"}  # every box at the best end of the map, none n/a
    assert all("sqnr_db: inf" in "".join(t.text or "" for t in g.iter(f"{SVG_NS}text")) for g in ops.values())


def test_dumps_give_the_onnxruntime_numbers(tiny_qdq: Path, tmp_path: Path) -> None:
    direct = compare(ONNX / "tiny_cnn.onnx", tiny_qdq, "--save-dumps", tmp_path / "ref.npz", tmp_path / "cand.npz",
                     tmp_path / "direct.json")
    with np.load(tmp_path / "ref.npz") as ref:
        assert "stem/conv_out" in ref.files
    dumped = compare("--dumps", tmp_path / "ref.npz", tmp_path / "cand.npz", "--model", ONNX / "tiny_cnn.onnx",
                     tmp_path / "dumped.json")
    a, b = by_id(direct, "tensors"), by_id(dumped, "tensors")
    assert a.keys() == b.keys()
    for name in a:
        assert {k: a[name][k] for k in METRICS} == {k: b[name][k] for k in METRICS}


def test_dumps_by_index_and_shape_mismatch_reported(tmp_path: Path) -> None:
    model = renderer.load_model(str(TFLITE / "okay_nabu.tflite"))
    ref = {"0:0": np.ones((1, 3, 40), np.float32), "0:55": np.arange(6, dtype=np.float32)}
    cand = {"0:0": np.full((1, 3, 40), 1.5, np.float32), "0:55": np.arange(6, dtype=np.float32).reshape(2, 3)}
    np.savez(tmp_path / "ref.npz", **ref)
    np.savez(tmp_path / "cand.npz", **cand)
    out = tmp_path / "e.json"
    run = run_cli("compare", "--dumps", tmp_path / "ref.npz", tmp_path / "cand.npz", "--model",
                  TFLITE / "okay_nabu.tflite", "-o", out)
    assert run.returncode == 0, run.stderr
    assert "shapes differ: reference 6, candidate 2×3" in run.stderr
    tensors = {item["meta"]["tensor"]: item["meta"] for item in json.loads(out.read_text())["tensors"]}
    first = tensors[model.main.values[0].name]
    assert first["max_abs_error"] == 0.5 and first["rel_error"] == 0.5
    mismatched = tensors[model.main.values[55].name]
    assert mismatched["compare"].startswith("not compared: shapes differ") and "rmse" not in mismatched


def test_tflite_against_itself_in_litert(tmp_path: Path) -> None:
    pytest.importorskip("ai_edge_litert", reason="the [litert] extra is not installed")
    doc = compare(TFLITE / "okay_nabu.tflite", TFLITE / "okay_nabu.tflite", tmp_path / "nabu.json")
    tensors = by_id(doc, "tensors")
    assert len(tensors) > 40
    for meta in tensors.values():
        assert meta["max_abs_error"] == 0 and meta["sqnr_db"] == "inf"
    model = renderer.load_model(str(TFLITE / "okay_nabu.tflite"))
    notes = load_annotations([tmp_path / "nabu.json"], model)
    assert sum(1 for n in model.main.nodes if n.key in notes.ops) == len(doc["operators"]) > 30


def test_tflite_dequantizes_int8_tensors(tmp_path: Path) -> None:
    pytest.importorskip("ai_edge_litert", reason="the [litert] extra is not installed")
    from renderer.compare.tflite_run import TfliteRun

    run = TfliteRun(TFLITE / "okay_nabu.tflite")
    spec = run.inputs()[0]
    values = run.run(run.quantize_feeds({spec.name: np.full(spec.shape, 0.5, np.float32)}))
    name, value = values[run.interpreter.get_input_details()[0]["index"]]
    assert value.dtype == np.float32 and np.allclose(value, 0.5, atol=0.06)  # int8 codes back to ~0.5


def test_integer_inputs_get_valid_values(tmp_path: Path) -> None:
    import onnx
    from onnx import TensorProto, helper

    table = helper.make_tensor("table", TensorProto.FLOAT, [10, 4], np.arange(40, dtype=np.float32).tolist())
    graph = helper.make_graph(
        [helper.make_node("Gather", ["table", "ids"], ["emb"], name="embed"),
         helper.make_node("Relu", ["emb"], ["out"], name="relu")],
        "tokens", [helper.make_tensor_value_info("ids", TensorProto.INT64, ["batch", 7])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, None)], [table])
    path = tmp_path / "tokens.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    out = tmp_path / "t.json"
    run = run_cli("compare", path, path, "--random-inputs", "3", "--dim", "batch=2", "-o", out)
    assert run.returncode == 0, run.stderr
    tensors = by_id(json.loads(out.read_text()), "tensors")
    assert tensors["emb"]["shape"] == "2×7×4" and tensors["out"]["sqnr_db"] == "inf"


def test_models_that_do_not_correspond(tmp_path: Path) -> None:
    error = one_line_error(run_cli("compare", ONNX / "tiny_cnn.onnx", ONNX / "tiny_transformer.onnx",
                                   "-o", tmp_path / "x.json"))
    assert "tiny_transformer.onnx" in error and "'image'" in error and "do not correspond" in error
    error = one_line_error(run_cli("compare", ONNX / "tiny_cnn.onnx", TFLITE / "okay_nabu.tflite",
                                   "-o", tmp_path / "x.json"))
    assert "TFLITE" in error
    np.savez(tmp_path / "a.npz", **{"stem/conv_out": np.zeros(3)})
    np.savez(tmp_path / "b.npz", **{"no such tensor": np.zeros(3)})
    error = one_line_error(run_cli("compare", "--dumps", tmp_path / "a.npz", tmp_path / "b.npz", "--model",
                                   ONNX / "tiny_cnn.onnx", "-o", tmp_path / "x.json"))
    assert "b.npz" in error and "'no such tensor'" in error
    np.savez(tmp_path / "c.npz", **{"stem/pool_out": np.zeros(3)})
    error = one_line_error(run_cli("compare", "--dumps", tmp_path / "a.npz", tmp_path / "c.npz", "--model",
                                   ONNX / "tiny_cnn.onnx", "-o", tmp_path / "x.json"))
    assert "c.npz" in error and "'stem/conv_out'" in error and "do not correspond" in error
    (tmp_path / "bad.npz").write_bytes(b"not a zip")
    error = one_line_error(run_cli("compare", "--dumps", tmp_path / "bad.npz", tmp_path / "c.npz", "--model",
                                   ONNX / "tiny_cnn.onnx", "-o", tmp_path / "x.json"))
    assert "bad.npz" in error
    assert not (tmp_path / "x.json").exists()


def test_inputs_file_is_checked(tmp_path: Path) -> None:
    np.savez(tmp_path / "in.npz", wrong=np.zeros((1, 3, 32, 32), np.float32))
    error = one_line_error(run_cli("compare", ONNX / "tiny_cnn.onnx", ONNX / "tiny_cnn.onnx", "--inputs",
                                   tmp_path / "in.npz", "-o", tmp_path / "x.json"))
    assert "in.npz" in error and "'image'" in error
    np.savez(tmp_path / "ok.npz", image=np.ones((1, 3, 32, 32), np.float32))
    doc = compare(ONNX / "tiny_cnn.onnx", ONNX / "tiny_cnn.onnx", "--inputs", tmp_path / "ok.npz", tmp_path / "y.json")
    assert doc["graph"]["meta"]["inputs"] == "from ok.npz"


def test_generic_metrics_section(tmp_path: Path) -> None:
    path = tmp_path / "m.yaml"
    path.write_text("operators:\n  - {id: 0, snr: 12.5}\nmetrics:\n  snr: {unit: dB, higher_is_better: true}\n")
    model = renderer.load_model(str(ONNX / "tiny_cnn.onnx"))
    notes = load_annotations([path], model)
    assert notes.metrics["snr"].higher_is_better is True and notes.metrics["snr"].unit == "dB"
    path.write_text("operators:\n  - {id: 0, snr: 12.5}\nmetrics:\n  snr: {higher_is_better: maybe}\n")
    with pytest.raises(renderer.AnnographError, match="m.yaml.*higher_is_better"):
        load_annotations([path], model)


def test_tflite_float_against_its_int8_version(tmp_path: Path) -> None:
    """The QuantizationDebugger fixtures: one Keras model converted to float and to full-int8 TFLite."""
    pytest.importorskip("ai_edge_litert", reason="the [litert] extra is not installed")
    fixtures = FIXTURES / "tflite_debugger"
    float_model, int8_model = fixtures / "tiny_keras_float.tflite", fixtures / "tiny_keras_int8.tflite"
    doc = compare(float_model, int8_model, tmp_path / "int8.json")
    tensors = by_id(doc, "tensors")
    assert len(tensors) >= 6
    for meta in tensors.values():  # int8 codes dequantized: errors small against the values, never zero
        assert meta["max_abs_error"] > 0 and 15 < meta["sqnr_db"] < 80 and meta["cosine"] > 0.99
    for model_path in (float_model, int8_model):
        model = renderer.load_model(str(model_path))
        notes = load_annotations([tmp_path / "int8.json"], model)
        first_conv = next(n for n in model.main.nodes if n.op_type == "CONV_2D")
        assert notes.ops[first_conv.key].values["sqnr_db"] == tensors[first_conv.outputs[0].name]["sqnr_db"]


def test_export_keeps_the_metric_directions(tiny_qdq: Path, tmp_path: Path) -> None:
    compare(ONNX / "tiny_cnn.onnx", tiny_qdq, tmp_path / "errors.json")
    out = tmp_path / "again.json"
    run = run_cli("export", tiny_qdq, "-a", tmp_path / "errors.json", "--to", "json", "-o", out, "--no-sidecar")
    assert run.returncode == 0, run.stderr
    doc = json.loads(out.read_text())
    assert doc["metrics"]["sqnr_db"]["higher_is_better"] is True and doc["metrics"]["sqnr_db"]["unit"] == "dB"
    notes = load_annotations([out], renderer.load_model(str(tiny_qdq)))
    assert notes.metrics["sqnr_db"].higher_is_better is True and notes.metrics["rmse"].higher_is_better is False


def test_tflite_dims_pin_dynamic_input_axes(tmp_path: Path) -> None:
    """A TFLite input with dynamic axes (shape signature [-1, -1, 16]) runs at the shape --dim asks for."""
    pytest.importorskip("ai_edge_litert", reason="the [litert] extra is not installed")
    from unit.loaders.tflite.test_loader import build_dynamic_sequence_model

    path = tmp_path / "dyn.tflite"
    path.write_bytes(build_dynamic_sequence_model())
    run = run_cli("compare", path, path, "--dim", "batch=2", "--dim", "axis1=8", "--save-dumps", tmp_path / "r.npz",
                  tmp_path / "c.npz", "-o", tmp_path / "e.json")
    assert run.returncode == 0, run.stderr
    assert "set to 1" not in run.stderr
    with np.load(tmp_path / "r.npz") as ref:
        shapes = {name: ref[name].shape for name in ref.files}
    assert shapes["dense"] == (2, 8, 32) and shapes["swapped"] == (2, 32, 8)
    unpinned = run_cli("compare", path, path, "-o", tmp_path / "u.json")
    assert unpinned.returncode == 0 and "set to 1 (pin it with --dim)" in unpinned.stderr
