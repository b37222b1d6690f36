"""ONNX operator costs on models onnxruntime's own quantizer writes: each quantized operator costs what the float
operator it replaces does."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import ROOT
from ort_quantized import quantize_static_random
from renderer.loaders.registry import load_model
from renderer.metrics import builtin as metrics

TINY_CNN = ROOT / "samples" / "onnx" / "tiny_cnn.onnx"


def quantize_qoperator(source: Path, target: Path) -> Path:
    """onnxruntime's static quantizer in its QOperator format (QLinearConv, QGemm, QLinearSoftmax…), uint8."""
    from onnxruntime.quantization import QuantFormat, QuantType

    return quantize_static_random(source, target, quant_format=QuantFormat.QOperator,
                                  activation_type=QuantType.QUInt8, weight_type=QuantType.QUInt8)


@pytest.fixture(scope="module")
def qoperator(tmp_path_factory) -> Path:  # type: ignore[no-untyped-def]
    return quantize_qoperator(TINY_CNN, tmp_path_factory.mktemp("qop") / "tiny_cnn.qop.onnx")


def by_type(path: Path) -> dict[str, dict[str, object]]:
    model = load_model(path)
    values, _ = metrics.compute(model, {"macs", "params"}, set(), progress=False)
    return {node.op_type: values[node.key] for node in model.main.nodes}


def test_quantized_operators_cost_what_the_float_ones_do(qoperator: Path) -> None:
    """QGemm (com.microsoft) and QLinearSoftmax had no formula (MACs n/a), and the params of both counted their
    scales and zero points."""
    float_ops, quantized = by_type(TINY_CNN), by_type(qoperator)
    assert {"QGemm", "QLinearSoftmax", "QLinearConv"} <= set(quantized)
    for float_type, quantized_type in (("Gemm", "QGemm"), ("Softmax", "QLinearSoftmax")):
        macs = quantized[quantized_type]["macs"]
        assert isinstance(macs, int) and macs > 0, (quantized_type, macs)
        assert macs == float_ops[float_type]["macs"], quantized_type
        assert quantized[quantized_type]["params"] == float_ops[float_type]["params"], quantized_type


def test_fused_embedding_layer_norm_costs_the_ops_it_replaces(tmp_path: Path) -> None:
    """onnxruntime's transformer optimizer fuses BERT's embeddings (two Gathers, the Add, the LayerNormalization)
    into com.microsoft EmbedLayerNormalization, whose MACs were n/a; now the Add's and the LayerNormalization's
    of the unfused model, plus one add per element of the attention mask it sums into the mask index."""
    from onnxruntime.transformers import optimizer

    source = ROOT / "samples" / "onnx" / "bert_scoped.onnx"
    fused = tmp_path / "bert_fused.onnx"
    optimizer.optimize_model(str(source), model_type="bert", num_heads=0, hidden_size=0).save_model_to_file(str(fused))
    model = load_model(fused)
    node = next(node for node in model.main.nodes if node.op_type == "EmbedLayerNormalization")
    values, _ = metrics.compute(model, {"macs"}, set(), progress=False)
    plain = load_model(source)
    unfused, _ = metrics.compute(plain, {"macs"}, set(), progress=False)
    replaced = sum(unfused[n.key]["macs"] for n in plain.main.nodes  # type: ignore[misc]
                   if n.name in ("/embeddings/Add", "/embeddings/LayerNorm/LayerNormalization"))
    mask = node.inputs[7]
    assert mask is not None and mask.type is not None and mask.type.static_shape == (1, 64)
    assert values[node.key]["macs"] == replaced + 64 == 64 * 32 * 6 + 64


def test_bnb4_matmuls_count_the_float_matmuls(tmp_path: Path) -> None:
    """onnxruntime's bitsandbytes quantizer (MatMulBnb4Quantizer, NF4) turns each MatMul with a stored B into
    com.microsoft MatMulBnb4 (B packed two values a byte): its MACs were n/a and its params B's bytes; now the
    float MatMul's MACs and K × N params."""
    import onnx
    from onnxruntime.quantization.matmul_bnb4_quantizer import MatMulBnb4Quantizer

    source = ROOT / "samples" / "onnx" / "bert_scoped.onnx"
    quantizer = MatMulBnb4Quantizer(onnx.load(str(source)), MatMulBnb4Quantizer.NF4, 64)
    quantizer.process()
    target = tmp_path / "bert_bnb4.onnx"
    onnx.save(quantizer.model.model, str(target))
    plain, packed = load_model(source), load_model(target)
    before, _ = metrics.compute(plain, {"macs", "params"}, set(), progress=False)
    after, _ = metrics.compute(packed, {"macs", "params"}, set(), progress=False)
    float_by_output = {node.outputs[0].name: before[node.key] for node in plain.main.nodes if node.op_type == "MatMul"}
    quantized = [node for node in packed.main.nodes if node.op_type == "MatMulBnb4"]
    assert len(quantized) >= 4
    for node in quantized:
        float_values = float_by_output[node.outputs[0].name]
        assert after[node.key]["macs"] == float_values["macs"] > 0, node.name
        assert after[node.key]["params"] == float_values["params"] > 0, node.name


def test_newer_standard_operators_have_a_cost(tmp_path: Path) -> None:
    """Standard operators of opsets 24-28 that were in no table ('no formula', category other): a KV cache's
    TensorScatter and BitCast move data (0), CumProd reads each input element once, SwiGLU does 4 per output."""
    import onnx
    from onnx import TensorProto, helper

    floats = [1, 4, 8, 16]
    nodes = [helper.make_node("TensorScatter", ["cache", "update"], ["present"], axis=2),
             helper.make_node("CumProd", ["present", "axis"], ["product"]),
             helper.make_node("SwiGLU", ["product", "present"], ["gated"]),
             helper.make_node("BitCast", ["gated"], ["bits"], to=TensorProto.INT32)]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("cache", TensorProto.FLOAT, floats),
                     helper.make_tensor_value_info("update", TensorProto.FLOAT, [1, 4, 1, 16])],
        [helper.make_tensor_value_info("bits", TensorProto.INT32, floats)],
        [helper.make_tensor("axis", TensorProto.INT64, [], [3])])
    path = tmp_path / "newer.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 28)]), path)
    macs = {op: values["macs"] for op, values in by_type(path).items()}
    elements = 4 * 8 * 16
    assert macs == {"TensorScatter": 0, "CumProd": elements, "SwiGLU": 4 * elements, "BitCast": 0}


def test_topk_compares_each_input_element_once(tmp_path: Path) -> None:
    """A mixture-of-experts gate exported by torch picks its top 2 of 8 experts per token with TopK, which had no
    formula ('n/a', the model's only one): it reads each gate score once, as ArgMax and the reductions do."""
    torch = pytest.importorskip("torch")

    class Gate(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.score = torch.nn.Linear(16, 8)

        def forward(self, x):  # type: ignore[no-untyped-def]
            weights, experts = self.score(x).softmax(-1).topk(2, -1)
            return weights, experts

    path = tmp_path / "gate.onnx"
    torch.onnx.export(Gate().eval(), (torch.randn(1, 5, 16),), path, dynamo=False, opset_version=17)
    macs = {op: values["macs"] for op, values in by_type(path).items()}
    assert macs["TopK"] == 5 * 8 and isinstance(macs["MatMul"], int)
