"""OpenVINO layer costs on IRs the real openvino converts from ONNX models: each layer costs what the ONNX
operator it came from does, but for what the conversion changes."""

from __future__ import annotations

from pathlib import Path

import pytest

from openvino_models import save_ir
from recurrent_models import BATCH, HIDDEN, STEPS, two_bilstm
from renderer.loaders.registry import load_model
from renderer.metrics import builtin as metrics

pytest.importorskip("openvino")


def macs_of(path: Path, op_type: str) -> list[object]:
    model = load_model(path)
    values, _ = metrics.compute(model, {"macs"}, set(), progress=False)
    return [values[node.key]["macs"] for node in model.main.nodes if node.op_type == op_type]


def test_lstm_sequences_count_the_onnx_lstms(tmp_path: Path) -> None:
    """Two bidirectional ONNX LSTMs become two LSTMSequence layers, whose MACs were n/a ('no formula'). Each now
    counts the ONNX LSTM's: the weights once per step and batch row, 13 per hidden unit, one add per bias element;
    OpenVINO sums ONNX's two biases (8·H a direction) into one (4·H), one add per step, row and element fewer."""
    source = tmp_path / "two_bilstm.onnx"
    two_bilstm(source)
    ir = save_ir(source, tmp_path / "two_bilstm.xml")
    onnx_macs, ir_macs = macs_of(source, "LSTM"), macs_of(ir, "LSTMSequence")
    assert len(onnx_macs) == len(ir_macs) == 2 and all(isinstance(m, int) and m > 0 for m in onnx_macs)
    summed_bias = STEPS * BATCH * 2 * 4 * HIDDEN
    assert ir_macs == [m - summed_bias for m in onnx_macs]  # type: ignore[operator]


def test_einsum_counts_the_onnx_einsum(tmp_path: Path) -> None:
    """A grouped linear layer as DeepFilterNet writes it (Einsum btgi,gih->btgh over a stored weight) converted by
    openvino: the IR's Einsum had no formula (MACs n/a); now ONNX's, from the same equation and shapes."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    weight = numpy_helper.from_array(np.random.default_rng(0).standard_normal((4, 16, 32)).astype(np.float32), "w")
    graph = helper.make_graph(
        [helper.make_node("Einsum", ["x", "w"], ["y"], name="grouped_linear", equation="btgi,gih->btgh")], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 4, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 4, 32])], [weight])
    source = tmp_path / "grouped.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), source)
    ir = save_ir(source, tmp_path / "grouped.xml")
    assert macs_of(ir, "Einsum") == macs_of(source, "Einsum") == [8 * 4 * 16 * 32]


def test_elementwise_and_normalization_layers_count_as_onnx(tmp_path: Path) -> None:
    """HardSigmoid, Tan, Asinh (and the other inverse and hyperbolic functions) were not in the IR's table,
    GroupNormalization and NormalizeL2 had no formula: MACs n/a (a MobileNetV3's two HardSigmoids so). Now each
    counts as the ONNX operator it is converted from."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    nodes = [helper.make_node("HardSigmoid", ["x"], ["a"]), helper.make_node("Tan", ["a"], ["b"]),
             helper.make_node("Asinh", ["b"], ["c"]),
             helper.make_node("GroupNormalization", ["c", "scale", "bias"], ["d"], num_groups=2),
             helper.make_node("LpNormalization", ["d"], ["y"], axis=1, p=2)]
    affine = [numpy_helper.from_array(np.ones(8, np.float32), "scale"),
              numpy_helper.from_array(np.zeros(8, np.float32), "bias")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 4, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 4, 4])], affine)
    source = tmp_path / "layers.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)]), source)
    ir = save_ir(source, tmp_path / "layers.xml")
    for onnx_type, ir_type in (("HardSigmoid", "HardSigmoid"), ("Tan", "Tan"), ("Asinh", "Asinh"),
                               ("GroupNormalization", "GroupNormalization"), ("LpNormalization", "NormalizeL2")):
        ours = macs_of(ir, ir_type)
        assert ours == macs_of(source, onnx_type) and isinstance(ours[0], int) and ours[0] >= 128, ir_type
