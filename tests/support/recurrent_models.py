"""Recurrent models made here for tests and benchmarks: two stacked bidirectional LSTMs and a classifier, in float
and as ``onnxruntime.quantization.quantize_dynamic`` makes it int8 (com.microsoft DynamicQuantizeLSTM,
DynamicQuantizeLinear + MatMulInteger)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

STEPS, BATCH, FEATURES, HIDDEN, CLASSES = 20, 1, 64, 48, 10


def two_bilstm(path: Path) -> None:
    """Two stacked bidirectional LSTMs (each output [S, 2, B, H] re-laid to [S, B, 2H]) and a classifier MatMul."""
    rng = np.random.default_rng(3)
    nodes, initializers = [], []
    x, width = "features", FEATURES
    for layer in range(2):
        initializers += [
            numpy_helper.from_array(rng.standard_normal((2, 4 * HIDDEN, width)).astype(np.float32), f"W{layer}"),
            numpy_helper.from_array(rng.standard_normal((2, 4 * HIDDEN, HIDDEN)).astype(np.float32), f"R{layer}"),
            numpy_helper.from_array(rng.standard_normal((2, 8 * HIDDEN)).astype(np.float32), f"B{layer}"),
            numpy_helper.from_array(np.array([STEPS, BATCH, 2 * HIDDEN], np.int64), f"shape{layer}"),
        ]
        nodes += [
            helper.make_node("LSTM", [x, f"W{layer}", f"R{layer}", f"B{layer}"], [f"y{layer}"], name=f"bilstm{layer}",
                             hidden_size=HIDDEN, direction="bidirectional"),
            helper.make_node("Transpose", [f"y{layer}"], [f"t{layer}"], perm=[0, 2, 1, 3]),
            helper.make_node("Reshape", [f"t{layer}", f"shape{layer}"], [f"h{layer}"]),
        ]
        x, width = f"h{layer}", 2 * HIDDEN
    initializers.append(numpy_helper.from_array(rng.standard_normal((2 * HIDDEN, CLASSES)).astype(np.float32), "Wc"))
    nodes.append(helper.make_node("MatMul", [x, "Wc"], ["logits"], name="classifier"))
    graph = helper.make_graph(
        nodes, "two_bilstm", [helper.make_tensor_value_info("features", TensorProto.FLOAT, [STEPS, BATCH, FEATURES])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [STEPS, BATCH, CLASSES])], initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, path)


def two_bilstm_pair(folder: Path) -> tuple[Path, Path]:
    """The float model and its int8 copy from ``quantize_dynamic``, written into ``folder``."""
    import logging

    from onnxruntime.quantization import QuantType, quantize_dynamic

    float_path, int8_path = folder / "two_bilstm.onnx", folder / "two_bilstm_int8.onnx"
    two_bilstm(float_path)
    logging.getLogger().setLevel(logging.ERROR)  # the quantizer's advice to pre-process first
    quantize_dynamic(str(float_path), str(int8_path), weight_type=QuantType.QInt8)
    return float_path, int8_path


def torch_gru(path: Path) -> None:
    """A torch model exported by ``torch.onnx.export`` (TorchScript, opset 17): a bidirectional GRU over 16
    features (hidden 24), a forward GRU over its 48 outputs, a linear head; batch-first [1, 10, 16] in, one ONNX GRU
    node per ``nn.GRU`` (torch's gates, ``linear_before_reset=1``)."""
    import warnings

    import torch

    class Tagger(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.both = torch.nn.GRU(16, 24, batch_first=True, bidirectional=True)
            self.forward_only = torch.nn.GRU(48, 24, batch_first=True)
            self.head = torch.nn.Linear(24, 5)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            y, _ = self.both(x)
            y, _ = self.forward_only(y)
            return self.head(y)

    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the exporter's advice about batch sizes and GRUs
        torch.onnx.export(Tagger().eval(), (torch.zeros(1, 10, 16),), str(path), dynamo=False, opset_version=17,
                          input_names=["features"], output_names=["scores"])
