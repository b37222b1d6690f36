"""The qdq_loss_debug reader, on results onnxruntime.quantization.qdq_loss_debug computes in the test run."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import onnx
import pytest

from conftest import ONNX, ROOT, run_cli
from renderer.annotations.readers import ort_qdq_loss
from renderer.annotations.registry import load_annotations, read_file
from renderer.core.errors import AnnotationError
from renderer.loaders.registry import load_model

qdq_loss_debug = pytest.importorskip("onnxruntime.quantization.qdq_loss_debug")

FLOAT, QDQ = ONNX / "tiny_cnn.onnx", ONNX / "tiny_cnn_qdq_u8.onnx"


def helper():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location(
        "ort_qdq_loss_to_json", ROOT / "samples/tools/ort_qdq_loss_to_json.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, dict, Path]:
    """Activation and weight SQNRs computed by onnxruntime, and the JSON our helper saved from them."""
    from onnxruntime.quantization import CalibrationDataReader

    folder = tmp_path_factory.mktemp("qdq")
    rng = np.random.default_rng(5)
    feeds = [{"image": rng.standard_normal((1, 3, 32, 32)).astype(np.float32)} for _ in range(3)]

    class Reader(CalibrationDataReader):
        def __init__(self) -> None:
            self.items = iter(feeds)

        def get_next(self):  # type: ignore[no-untyped-def]
            return next(self.items, None)

    qdq_loss_debug.modify_model_output_intermediate_tensors(str(FLOAT), str(folder / "f.onnx"))
    qdq_loss_debug.modify_model_output_intermediate_tensors(str(QDQ), str(folder / "q.onnx"))
    float_acts = qdq_loss_debug.collect_activations(str(folder / "f.onnx"), Reader())
    qdq_acts = qdq_loss_debug.collect_activations(str(folder / "q.onnx"), Reader())
    activations = qdq_loss_debug.compute_activation_error(
        qdq_loss_debug.create_activation_matching(qdq_acts, float_acts)
    )
    weights = qdq_loss_debug.compute_weight_error(qdq_loss_debug.create_weight_matching(str(FLOAT), str(QDQ)))
    path = folder / "qdq_loss.json"
    path.write_text(json.dumps(helper().document(activations, weights, FLOAT.name, QDQ.name)))
    return activations, weights, path


def producers(model_path: Path) -> dict[str, str]:
    """tensor name → name of the node writing it, from the ONNX file itself."""
    proto = onnx.load(str(model_path))
    return {out: node.name for node in proto.graph.node for out in node.output}


def weight_users(model_path: Path, weight: str) -> set[str]:
    """Nodes reading ``weight``, or reading the output of the DequantizeLinear of ``weight``_quantized."""
    proto = onnx.load(str(model_path))
    dq_outputs = {
        node.output[0]
        for node in proto.graph.node
        if node.op_type == "DequantizeLinear" and node.input[0] in (weight, weight + "_quantized")
    }
    names = {weight} | dq_outputs
    return {
        node.name
        for node in proto.graph.node
        if node.op_type != "DequantizeLinear" and set(node.input) & names
    }


@pytest.mark.parametrize("model_path", [FLOAT, QDQ])
def test_activations_go_to_their_producer(results: tuple[dict, dict, Path], model_path: Path) -> None:
    activations, _, path = results
    model = load_model(model_path)
    notes = load_annotations(path, model)
    by_name = {model.main.nodes[k[2]].name: e for k, e in notes.ops.items()}
    writers = producers(model_path)
    checked = 0
    for tensor, errors in activations.items():
        if tensor not in writers:  # the graph input
            assert tensor == "image"
            continue
        entry = by_name[writers[tensor]]
        assert entry.values["qdq_err"] == pytest.approx(errors["qdq_err"])
        assert entry.values["xmodel_err"] == pytest.approx(errors["xmodel_err"])
        checked += 1
    assert checked == len(activations) - 1
    image = next(v for v in model.main.values if v.name == "image")
    assert notes.tensors[image.key].values["qdq_err"] == pytest.approx(activations["image"]["qdq_err"])
    info = notes.metrics["qdq_err"]
    assert info.higher_is_better is True and info.unit == "dB" and "higher is better" in info.description


@pytest.mark.parametrize("model_path", [FLOAT, QDQ])
def test_weights_go_to_every_consumer(results: tuple[dict, dict, Path], model_path: Path) -> None:
    _, weights, path = results
    model = load_model(model_path)
    notes = load_annotations(path, model)
    by_name = {model.main.nodes[k[2]].name: e for k, e in notes.ops.items()}
    assert not notes.coverage[0].unmatched
    expected: dict[str, list[float]] = {}
    for weight, sqnr in weights.items():
        users = weight_users(model_path, weight)
        assert users, weight
        for user in users:
            expected.setdefault(user, []).append(sqnr)
            assert f"{weight}: {sqnr:.2f} dB" in by_name[user].values["weight_err_by_tensor"]
    for user, values in expected.items():
        assert by_name[user].values["weight_err"] == pytest.approx(min(values))


def test_helper_script_runs_end_to_end(tmp_path: Path) -> None:
    out = tmp_path / "loss.json"
    doc = helper().run(str(FLOAT), str(QDQ), samples=2, seed=3)
    out.write_text(json.dumps(doc))
    assert doc["format"] == ort_qdq_loss.FORMAT_MARKER and doc["activations"] and doc["weights"]
    run = run_cli("render", QDQ, "-a", out, "--color-by", "xmodel_err", "-o", tmp_path / "q.svg")
    assert run.returncode == 0, run.stderr
    assert "(qdq-loss): matched" in run.stderr


def test_detection_and_errors(tmp_path: Path) -> None:
    assert ort_qdq_loss.match(Path("x.json"), '{"activations": {"a": {"qdq_err": 1}}}')
    assert ort_qdq_loss.match(Path("x.json"), '{"format": "onnxruntime.quantization.qdq_loss_debug"}')
    assert not ort_qdq_loss.match(Path("x.json"), '{"operators": [{"id": "a", "meta": {"qdq_err": 1}}]}')
    model = load_model(FLOAT)
    bad = tmp_path / "bad.json"
    bad.write_text('{"activations": {"stem/conv_out": {"qdq_err": "high"}}}')
    with pytest.raises(AnnotationError, match="must be a number"):
        read_file(bad, model)
    unknown = tmp_path / "unknown.json"
    unknown.write_text('{"activations": {"nope": {"qdq_err": 3.0}}, "weights": {"nope.weight": 1.0}}')
    notes = load_annotations(unknown, model)
    assert notes.coverage[0].unmatched == ["nope", "nope.weight"]
