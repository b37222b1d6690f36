"""MACs and parameters of recurrent layers, checked against hand counts on models onnxruntime and LiteRT run.

The convention (README, built-in metrics): every step multiplies each element of the input, recurrent, peephole
and projection weights once per batch row, i.e. steps × batch × gates × (input + hidden) × hidden per
direction for the gates, adds each bias element once, and does a fixed number of elementwise operations per
hidden unit (LSTM 13, GRU 11, RNN 2). A quantized layer has the MACs and parameters of the float layer it
replaces; its scales and zero points count in weight bytes only.
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import onnx
import pytest
import tflite
from onnx import TensorProto, helper, numpy_helper

import recurrent_models
import tflite_build as tb
from conftest import parse_svg, run_cli, svg_groups, tooltip_of
from renderer.core.numbers import format_number

OPS_PER_UNIT = {"LSTM": 13, "GRU": 11, "RNN": 2}
GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}


def hand_macs(op: str, steps: int, batch: int, inputs: int, hidden: int, directions: int, peepholes: bool) -> int:
    """The convention written out: weights, then biases (Wb and Rb: 2 × gates × hidden), then per-unit work."""
    gates = GATES[op]
    weights = directions * (gates * hidden * (inputs + hidden) + (3 * hidden if peepholes else 0))
    biases = directions * 2 * gates * hidden
    units = directions * hidden * OPS_PER_UNIT[op]
    return steps * batch * (weights + biases + units)


def recurrent_model(op: str, steps: int, batch: int, inputs: int, hidden: int, direction: str,
                    peepholes: bool = False, layout: int = 0) -> onnx.ModelProto:
    rng = np.random.default_rng(7)
    dirs = 2 if direction == "bidirectional" else 1
    gates = GATES[op]
    weights = {
        "W": rng.standard_normal((dirs, gates * hidden, inputs)).astype(np.float32),
        "R": rng.standard_normal((dirs, gates * hidden, hidden)).astype(np.float32),
        "B": rng.standard_normal((dirs, 2 * gates * hidden)).astype(np.float32),
    }
    names = ["x", "W", "R", "B"]
    if peepholes:
        weights["P"] = rng.standard_normal((dirs, 3 * hidden)).astype(np.float32)
        names += ["", "", "", "P"]
    x_shape = [batch, steps, inputs] if layout else [steps, batch, inputs]
    y_shape = [batch, steps, dirs, hidden] if layout else [steps, dirs, batch, hidden]
    node = helper.make_node(op, names, ["y"], name=f"{op.lower()}0", hidden_size=hidden, direction=direction,
                            layout=layout)
    graph = helper.make_graph([node], op.lower(), [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, y_shape)],
                              [numpy_helper.from_array(v, k) for k, v in weights.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    onnx.checker.check_model(model, full_check=True)
    return model


def runs(path: Path, shape: list[int], reference: bool = False) -> None:
    """onnxruntime runs the file (onnx's reference runtime for batch-first layouts, which onnxruntime refuses):
    the hand count is of a model a runtime accepts, not of a made-up one."""
    if reference:
        from onnx.reference import ReferenceEvaluator

        ReferenceEvaluator(str(path)).run(None, {"x": np.zeros(shape, np.float32)})
        return
    import onnxruntime as ort

    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    session.run(None, {session.get_inputs()[0].name: np.zeros(shape, np.float32)})


def metrics_rows(model: Path, out: Path, *extra: str) -> dict[str, dict[str, str]]:
    """``annograph metrics`` as a user runs it, its CSV read back: operator id → row."""
    done = run_cli("metrics", model, "-o", out, *extra)
    assert done.returncode == 0, done.stderr
    with out.open(newline="", encoding="utf-8") as f:
        return {row["id"]: row for row in csv.DictReader(f) if row["kind"] == "operator"}


CASES = [  # op, steps, batch, input, hidden, direction, peepholes, layout
    ("LSTM", 7, 2, 5, 3, "forward", False, 0),
    ("LSTM", 6, 1, 4, 8, "bidirectional", True, 0),
    ("LSTM", 5, 3, 6, 4, "reverse", False, 1),
    ("GRU", 9, 2, 5, 6, "bidirectional", False, 0),
    ("GRU", 4, 1, 3, 2, "forward", False, 1),
    ("RNN", 11, 2, 7, 5, "bidirectional", False, 0),
]


@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]}-{c[5]}-p{int(c[6])}-l{c[7]}" for c in CASES])
def test_onnx_recurrent_macs_and_params_match_hand_counts(case: tuple, tmp_path: Path) -> None:
    op, steps, batch, inputs, hidden, direction, peepholes, layout = case
    path = tmp_path / f"{op}.onnx"
    onnx.save(recurrent_model(op, steps, batch, inputs, hidden, direction, peepholes, layout), path)
    runs(path, [batch, steps, inputs] if layout else [steps, batch, inputs], reference=bool(layout))
    row = metrics_rows(path, tmp_path / "m.csv")["0:0"]
    dirs = 2 if direction == "bidirectional" else 1
    gates = GATES[op]
    expected = hand_macs(op, steps, batch, inputs, hidden, dirs, peepholes)
    assert int(row["macs"]) == expected
    assert int(row["flops"]) == 2 * expected
    params = dirs * (gates * hidden * (inputs + hidden) + 2 * gates * hidden + (3 * hidden if peepholes else 0))
    assert int(row["params"]) == params
    assert int(row["weight_bytes"]) == 4 * params


# ---- a quantized two-BiLSTM model, as onnxruntime.quantization makes it ---------------------------------------

STEPS, BATCH, FEATURES, HIDDEN = (recurrent_models.STEPS, recurrent_models.BATCH, recurrent_models.FEATURES,
                                   recurrent_models.HIDDEN)


@pytest.fixture(scope="module")
def quantized(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    float_path, int8_path = recurrent_models.two_bilstm_pair(tmp_path_factory.mktemp("bilstm"))
    for path in (float_path, int8_path):
        runs(path, [STEPS, BATCH, FEATURES])
    return float_path, int8_path


def test_dynamic_quantize_lstm_counts_as_the_float_lstm(quantized: tuple[Path, Path], tmp_path: Path) -> None:
    float_path, int8_path = quantized
    model = onnx.load(int8_path)
    lstms = [i for i, n in enumerate(model.graph.node) if n.op_type == "DynamicQuantizeLSTM"]
    assert len(lstms) == 2 and all(model.graph.node[i].domain == "com.microsoft" for i in lstms)
    rows = metrics_rows(int8_path, tmp_path / "int8.csv")
    floats = metrics_rows(float_path, tmp_path / "float.csv")
    for layer, index in enumerate(lstms):
        width = FEATURES if layer == 0 else 2 * HIDDEN
        row = rows[f"0:{index}"]
        assert int(row["macs"]) == hand_macs("LSTM", STEPS, BATCH, width, HIDDEN, 2, False)
        assert row["macs"] == floats[f"0:{3 * layer}"]["macs"]
        params = 2 * (4 * HIDDEN * (width + HIDDEN) + 8 * HIDDEN)
        assert int(row["params"]) == params == int(floats[f"0:{3 * layer}"]["params"])
        # int8 W and R, float32 B, and a float32 scale and int8 zero point per direction for each of W and R
        weights = 2 * 4 * HIDDEN * (width + HIDDEN)
        assert int(row["weight_bytes"]) == weights + 4 * 2 * 8 * HIDDEN + 2 * (2 * 4 + 2 * 1)
        # sparsity: int8 values equal to their direction's zero point, counted here from the raw initializers
        init = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
        node = model.graph.node[index]
        equal = sum(int((init[node.input[slot]] == init[node.input[zp]].reshape(-1, 1, 1)).sum())
                    for slot, zp in ((1, 9), (2, 11)))
        assert float(row["sparsity"]) == pytest.approx(equal / weights, abs=1e-6)
    no_count = [r["id"] for r in rows.values() if r["macs"].startswith("n/a")]
    assert no_count == []


def test_quantized_model_totals_and_hottest_box(quantized: tuple[Path, Path], tmp_path: Path) -> None:
    float_path, int8_path = quantized
    lines = {}
    for path in quantized:
        done = run_cli("metrics", path, "-o", tmp_path / f"{path.stem}.csv")
        assert done.returncode == 0, done.stderr
        lines[path] = done.stderr
    for figure in ("parameters", "MACs"):
        ours = [line.split(f"{figure} ")[1].split(",")[0] for line in lines.values()]
        assert ours[0] == ours[1], (figure, ours)
    assert "n/a" not in lines[int8_path]
    rows = metrics_rows(int8_path, tmp_path / "int8.csv")
    hottest = max(rows.values(), key=lambda row: int(row["macs"]))
    svg = tmp_path / "int8.svg"
    done = run_cli("render", int8_path, "--color-by", "macs", "-o", svg)
    assert done.returncode == 0, done.stderr
    boxes = svg_groups(parse_svg(svg), "op")
    tips = {ident: tooltip_of(group) for ident, group in boxes.items()}
    lstm_tips = [tip for tip in tips.values() if tip.startswith("DynamicQuantizeLSTM")]
    assert len(lstm_tips) == 2
    for width, tip in zip((FEATURES, 2 * HIDDEN), lstm_tips):
        expected = format_number(hand_macs("LSTM", STEPS, BATCH, width, HIDDEN, 2, False))
        assert f"macs: {expected}" in tip.splitlines()
    assert not [tip for tip in tips.values() if "macs: n/a" in tip]
    assert tips[f"op-{hottest['id'].replace(':', '-')}"].startswith("DynamicQuantizeLSTM")


# ---- TFLite recurrent ops, built by hand from the schema and run by LiteRT --------------------------------------

TANH = tflite.ActivationFunctionType.TANH


def weight(name: str, *shape: int) -> dict:
    data = np.random.default_rng(len(name) + sum(shape)).standard_normal(shape).astype(np.float32) * 0.1
    return {"name": name, "shape": list(shape), "data": data.tobytes()}


def state(name: str, *shape: int) -> dict:
    return {"name": name, "shape": list(shape), "variable": True}


def lstm_direction(prefix: str, inputs: int, cells: int, peepholes: bool) -> list[dict]:
    """input-to-gate ×4, recurrent-to-gate ×4, peepholes ×3 (or none), gate biases ×4."""
    gates = ("input", "forget", "cell", "output")
    tensors = [weight(f"{prefix}input_to_{g}", cells, inputs) for g in gates]
    tensors += [weight(f"{prefix}recurrent_to_{g}", cells, cells) for g in gates]
    tensors += [weight(f"{prefix}cell_to_{g}", cells) for g in ("input", "forget", "output")] if peepholes else []
    return tensors + [weight(f"{prefix}{g}_bias", cells) for g in gates]


def unidirectional_lstm(steps: int, batch: int, inputs: int, cells: int) -> bytes:
    """UNIDIRECTIONAL_SEQUENCE_LSTM with peepholes, no projection, no layer norm; batch-major."""
    tensors = [{"name": "x", "shape": [batch, steps, inputs]}, *lstm_direction("", inputs, cells, True),
               state("h", batch, cells), state("c", batch, cells), {"name": "y", "shape": [batch, steps, cells]}]
    slots = [*range(16), -1, -1, 16, 17, -1, -1, -1, -1]  # 0 input, 1–15 weights, no projection, states, no norms

    def options(b):  # type: ignore[no-untyped-def]
        tflite.UnidirectionalSequenceLSTMOptionsStart(b)
        tflite.UnidirectionalSequenceLSTMOptionsAddFusedActivationFunction(b, TANH)
        return tflite.BuiltinOptions.UnidirectionalSequenceLSTMOptions, tflite.UnidirectionalSequenceLSTMOptionsEnd(b)

    op = (tflite.BuiltinOperator.UNIDIRECTIONAL_SEQUENCE_LSTM, slots, [18], options)
    return tb.one_subgraph_model(tensors, [op], [0], [18])


def bidirectional_lstm(steps: int, batch: int, inputs: int, cells: int) -> bytes:
    """BIDIRECTIONAL_SEQUENCE_LSTM, time-major (its default), outputs merged; no peepholes or projection."""
    tensors = [{"name": "x", "shape": [steps, batch, inputs]}, *lstm_direction("fw_", inputs, cells, False),
               *lstm_direction("bw_", inputs, cells, False), state("fw_h", batch, cells), state("fw_c", batch, cells),
               state("bw_h", batch, cells), state("bw_c", batch, cells),
               {"name": "y", "shape": [steps, batch, 2 * cells]}]
    fw, bw = list(range(1, 13)), list(range(13, 25))  # the tensors' indices
    slots = [0, *fw[:8], -1, -1, -1, *fw[8:], -1, -1, *bw[:8], -1, -1, -1, *bw[8:], -1, -1, 25, 26, 27, 28,
             *[-1] * 9]
    assert len(slots) == 48

    def options(b):  # type: ignore[no-untyped-def]
        tflite.BidirectionalSequenceLSTMOptionsStart(b)
        tflite.BidirectionalSequenceLSTMOptionsAddFusedActivationFunction(b, TANH)
        tflite.BidirectionalSequenceLSTMOptionsAddMergeOutputs(b, True)
        return tflite.BuiltinOptions.BidirectionalSequenceLSTMOptions, tflite.BidirectionalSequenceLSTMOptionsEnd(b)

    op = (tflite.BuiltinOperator.BIDIRECTIONAL_SEQUENCE_LSTM, slots, [29], options)
    return tb.one_subgraph_model(tensors, [op], [0], [29])


def bidirectional_rnn(steps: int, batch: int, inputs: int, units: int) -> bytes:
    """BIDIRECTIONAL_SEQUENCE_RNN, batch-major, outputs merged, no aux input."""
    tensors = [{"name": "x", "shape": [batch, steps, inputs]}]
    for prefix in ("fw_", "bw_"):
        tensors += [weight(f"{prefix}w", units, inputs), weight(f"{prefix}r", units, units),
                    weight(f"{prefix}b", units), state(f"{prefix}h", batch, units)]
    tensors.append({"name": "y", "shape": [batch, steps, 2 * units]})

    def options(b):  # type: ignore[no-untyped-def]
        tflite.BidirectionalSequenceRNNOptionsStart(b)
        tflite.BidirectionalSequenceRNNOptionsAddFusedActivationFunction(b, TANH)
        tflite.BidirectionalSequenceRNNOptionsAddMergeOutputs(b, True)
        return tflite.BuiltinOptions.BidirectionalSequenceRNNOptions, tflite.BidirectionalSequenceRNNOptionsEnd(b)

    op = (tflite.BuiltinOperator.BIDIRECTIONAL_SEQUENCE_RNN, [*range(9), -1, -1, -1], [9], options)
    return tb.one_subgraph_model(tensors, [op], [0], [9])


def litert_runs(path: Path) -> None:
    from ai_edge_litert.interpreter import Interpreter

    interpreter = Interpreter(model_path=str(path))
    interpreter.allocate_tensors()
    detail = interpreter.get_input_details()[0]
    interpreter.set_tensor(detail["index"], np.ones(detail["shape"], np.float32))
    interpreter.invoke()
    out = interpreter.get_output_details()[0]
    assert np.isfinite(interpreter.get_tensor(out["index"])).all()


def tflite_lstm_hand(steps: int, batch: int, inputs: int, cells: int, directions: int, peepholes: bool) -> int:
    weights = 4 * cells * inputs + 4 * cells * cells + (3 * cells if peepholes else 0)
    return directions * steps * batch * (weights + 4 * cells + 13 * cells)


TFLITE_CASES = {
    "unidirectional_lstm": (unidirectional_lstm, (6, 2, 3, 5),
                            lambda s, b, i, c: tflite_lstm_hand(s, b, i, c, 1, True),
                            lambda s, b, i, c: 4 * c * (i + c) + 3 * c + 4 * c),
    "bidirectional_lstm": (bidirectional_lstm, (4, 3, 5, 2),
                           lambda s, b, i, c: tflite_lstm_hand(s, b, i, c, 2, False),
                           lambda s, b, i, c: 2 * (4 * c * (i + c) + 4 * c)),
    "bidirectional_rnn": (bidirectional_rnn, (7, 2, 4, 3),
                          lambda s, b, i, u: 2 * s * b * (u * (i + u) + u + 2 * u),
                          lambda s, b, i, u: 2 * (u * (i + u) + u)),
}


@pytest.mark.parametrize("name", sorted(TFLITE_CASES))
def test_tflite_recurrent_macs_and_params_match_hand_counts(name: str, tmp_path: Path) -> None:
    build, sizes, macs, params = TFLITE_CASES[name]
    path = tmp_path / f"{name}.tflite"
    path.write_bytes(build(*sizes))
    litert_runs(path)
    row = metrics_rows(path, tmp_path / "m.csv")["0:0"]
    assert int(row["macs"]) == macs(*sizes)  # the fused tanh is among the 13 (LSTM) or 2 (RNN) per unit
    assert int(row["params"]) == params(*sizes)
    assert int(row["weight_bytes"]) == 4 * params(*sizes)


def test_torch_exported_bilstm_and_its_int8_copy(tmp_path: Path) -> None:
    """nn.LSTM(64 → 128, 2 layers, bidirectional, batch-first) + Linear as torch.onnx.export writes it (initial
    states from Shape → Expand, a Transpose around each LSTM), then quantize_dynamic: both count the same MACs for
    each LSTM as the hand count, and the same parameters."""
    import torch
    from onnxruntime.quantization import QuantType, quantize_dynamic

    class Tagger(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lstm = torch.nn.LSTM(64, 128, num_layers=2, bidirectional=True, batch_first=True)
            self.fc = torch.nn.Linear(256, 32)

        def forward(self, x):  # type: ignore[no-untyped-def]
            return self.fc(self.lstm(x)[0])

    steps = 30
    float_path, int8_path = tmp_path / "tagger.onnx", tmp_path / "tagger_int8.onnx"
    torch.onnx.export(Tagger().eval(), (torch.zeros(1, steps, 64),), str(float_path), dynamo=False,
                      input_names=["x"], opset_version=17)
    quantize_dynamic(str(float_path), str(int8_path), weight_type=QuantType.QInt8)
    for path in (float_path, int8_path):
        runs(path, [1, steps, 64])
    expected = [hand_macs("LSTM", steps, 1, width, 128, 2, False) for width in (64, 256)]
    counted = {}
    for path, kind in ((float_path, "LSTM"), (int8_path, "DynamicQuantizeLSTM")):
        rows = metrics_rows(path, tmp_path / f"{path.stem}.csv")
        nodes = onnx.load(path).graph.node
        lstms = [rows[f"0:{i}"] for i, n in enumerate(nodes) if n.op_type == kind]
        assert [int(r["macs"]) for r in lstms] == expected
        counted[kind] = [int(r["params"]) for r in lstms]
    assert counted["LSTM"] == counted["DynamicQuantizeLSTM"] == [2 * (4 * 128 * (w + 128) + 8 * 128) for w in (64, 256)]
