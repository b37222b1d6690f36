"""The benchmark's onnx.helper transformers are the graph torch exports (samples/onnx/bert_*.onnx)."""

from __future__ import annotations

import ast
import sys
from collections import Counter

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from conftest import ONNX, ROOT

sys.path.insert(0, str(ROOT))
from benchmarks import transformer_models  # noqa: E402

EXPORTER_ONLY = {"Constant", "Identity"}  # index constants are shared differently; Identity: see samples/README


def _layer_nodes(model: onnx.ModelProto) -> list[onnx.NodeProto]:
    return [n for n in model.graph.node if n.op_type not in EXPORTER_ONLY]


def test_scoped_build_has_torch_exports_names_and_ops() -> None:
    torch_export = onnx.load(str(ONNX / "bert_scoped.onnx"))
    built = transformer_models.build(12)
    assert Counter(n.op_type for n in _layer_nodes(built)) == Counter(n.op_type for n in _layer_nodes(torch_export))
    assert [n.name for n in _layer_nodes(built)] == [n.name for n in _layer_nodes(torch_export)]
    assert len(built.graph.node) == transformer_models.operator_count(12)


@pytest.mark.parametrize("names", transformer_models.NAME_STYLES)
def test_every_name_style_is_a_valid_model_that_runs(names: str) -> None:
    model = transformer_models.build(2, names)
    onnx.checker.check_model(model, full_check=True)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    hidden, pooled = session.run(None, {"input_ids": np.array([[3, 4, 5, 0], [6, 7, 8, 9]], np.int64)})
    assert hidden.shape == (2, 4, 32) and pooled.shape == (2, 32)
    assert np.isfinite(hidden).all()
    layer_names = [n.name for n in model.graph.node]
    if names == "scoped":
        assert "/encoder/layer.1/attention/self/Reshape" in layer_names
    else:
        assert all(name.startswith("node_") and "/" not in name for name in layer_names)


def test_dynamo_style_metadata_has_the_exporters_keys_and_format() -> None:
    torch_export = onnx.load(str(ONNX / "bert_dynamo.onnx"))
    built = transformer_models.build(2, "dynamo")
    built_keys = {p.key for n in built.graph.node for p in n.metadata_props}
    assert built_keys <= {p.key for n in torch_export.graph.node for p in n.metadata_props}
    assert {"namespace", "pkg.torch.onnx.name_scopes"} <= built_keys
    reshape = next(n for n in built.graph.node if n.op_type == "Reshape")
    scopes = ast.literal_eval(next(p.value for p in reshape.metadata_props if p.key == "pkg.torch.onnx.name_scopes"))
    assert scopes[:5] == ["", "encoder", "encoder.layer.0", "encoder.layer.0.attention",
                          "encoder.layer.0.attention.self"]
    namespace = next(p.value for p in reshape.metadata_props if p.key == "namespace")
    assert namespace.startswith(": __main__.Bert/encoder: __main__.Encoder/encoder.layer.0: __main__.Layer/")


def test_builds_are_byte_identical_and_sized_by_layers() -> None:
    assert transformer_models.build(3).SerializeToString() == transformer_models.build(3).SerializeToString()
    assert transformer_models.layers_for(3600) == 40 and transformer_models.operator_count(40) == 3591
    assert transformer_models.operator_count(transformer_models.layers_for(20_000)) == 19_967
