"""LLMs made by onnxruntime-genai's model builder (tests/genai_models.py): what annograph counts on them."""

from __future__ import annotations

from collections import Counter

import pytest


@pytest.mark.parametrize("precision", ["int4", "fp32"])
def test_the_builder_makes_the_model_people_ship(genai_model, precision: str) -> None:
    import onnx

    from genai_models import CONFIG

    path = genai_model(precision)
    model = onnx.load(str(path), load_external_data=False)
    ops = Counter(node.op_type for node in model.graph.node)
    layers = CONFIG["num_hidden_layers"]
    assert ops["GroupQueryAttention"] == layers
    assert ops["MatMulNBits" if precision == "int4" else "MatMul"] == 5 * layers + 1  # qkv, o, gate, up, down; lm_head
    inputs = {i.name for i in model.graph.input}
    assert {f"past_key_values.{n}.{kv}" for n in range(layers) for kv in ("key", "value")} <= inputs
    assert (path.parent / "model.onnx.data").stat().st_size > 0
    assert any(t.data_location == onnx.TensorProto.EXTERNAL for t in model.graph.initializer)
