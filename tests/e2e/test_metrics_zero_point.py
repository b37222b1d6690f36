"""Zero-point-aware sparsity on TFLite weights whose zero points are not 0.

``samples/tflite/tiny_keras_int8_asymmetric.tflite`` (made by ``samples/tools/make_asymmetric_tflite.py``)
has per-channel int8 weights with zero points such as 3, -5, 7: a weight element is "zero" when it equals
its channel's zero point, not when its byte is 0. The expected values are read here from the raw
flatbuffer with the ``tflite`` package, independently of annograph's loader.
"""

from __future__ import annotations

import numpy as np
import pytest
import tflite

from conftest import TFLITE
from renderer.loaders.registry import load_model
from renderer.metrics import builtin as metrics

ASYMMETRIC = TFLITE / "tiny_keras_int8_asymmetric.tflite"
WEIGHTED = {"CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED"}


def raw_sparsity(path) -> dict[int, tuple[float, float]]:  # type: ignore[no-untyped-def]
    """{operator index: (fraction of weights equal to their channel's zero point, fraction of 0 bytes)}."""
    fb = tflite.Model.GetRootAsModel(path.read_bytes(), 0)
    graph = fb.Subgraphs(0)
    found = {}
    for i in range(graph.OperatorsLength()):
        op = graph.Operators(i)
        code = fb.OperatorCodes(op.OpcodeIndex())
        if tflite.opcode2name(max(code.BuiltinCode(), code.DeprecatedBuiltinCode())) not in WEIGHTED:
            continue
        tensor = graph.Tensors(int(op.InputsAsNumpy()[1]))
        weights = fb.Buffers(tensor.Buffer()).DataAsNumpy().view(np.int8).reshape(tensor.ShapeAsNumpy())
        quant = tensor.Quantization()
        axis = quant.QuantizedDimension()
        zero = quant.ZeroPointAsNumpy()
        expanded = np.expand_dims(zero, [d for d in range(weights.ndim) if d != axis])
        found[i] = (float(np.mean(weights == expanded)), float(np.mean(weights == 0)))
    return found


def test_the_sample_has_non_zero_weight_zero_points() -> None:
    model = load_model(ASYMMETRIC)
    weights = [n.inputs[1] for n in model.main.nodes if n.op_type in WEIGHTED]
    assert len(weights) == 4
    for value in weights:
        assert value is not None and value.quantization is not None
        assert value.initializer is not None and value.initializer.dtype == "int8"
        assert (np.asarray(value.quantization.zero_point) != 0).all(), value.name


def test_tflite_sparsity_counts_weights_equal_to_their_zero_point() -> None:
    expected = raw_sparsity(ASYMMETRIC)
    model = load_model(ASYMMETRIC)
    ours, _ = metrics.compute(model, {"sparsity", "effective_macs", "macs"}, set(), progress=False)
    assert sorted(expected) == [1, 2, 3, 7]
    for index, (sparsity, zero_bytes) in expected.items():
        values = ours[("op", 0, index)]
        assert sparsity > 0 and sparsity != pytest.approx(zero_bytes), index  # the zero point matters here
        assert values["sparsity"] == pytest.approx(sparsity, abs=1e-6), index
        assert isinstance(values["effective_macs"], int) and values["effective_macs"] < values["macs"]
