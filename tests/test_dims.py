"""``--dim`` pins input dims for real: a detector whose value_info carries the derived dims that onnxruntime's
symbolic shape inference writes (``floor(DynamicDimension.1/2 - 1/2) + 1``) gets real MAC counts once its input
dims are pinned, and every hint names input dims only."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from renderer import metrics
from renderer.loaders import load_model

INPUT_DIMS = ("DynamicDimension.0", "DynamicDimension.1", "DynamicDimension.2")
# (in channels, out channels) of the three stride-2 3×3 convolutions
CONVS = ((3, 8), (8, 16), (16, 16))


@pytest.fixture(scope="module")
def detector(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A detector-like backbone (stride-2 Conv + Relu ×3 on a dynamic N×3×H×W input), saved after onnxruntime's
    symbolic shape inference, as exporters that run it write them."""
    pytest.importorskip("sympy")
    from onnxruntime.tools.symbolic_shape_infer import SymbolicShapeInference

    rng = np.random.default_rng(0)
    nodes, weights, x = [], [], "images"
    for i, (cin, cout) in enumerate(CONVS):
        weights.append(numpy_helper.from_array(rng.standard_normal((cout, cin, 3, 3)).astype(np.float32), f"c{i}.w"))
        nodes.append(helper.make_node("Conv", [x, f"c{i}.w"], [f"c{i}_out"], name=f"conv{i}", strides=[2, 2],
                                      pads=[1, 1, 1, 1], kernel_shape=[3, 3]))
        nodes.append(helper.make_node("Relu", [f"c{i}_out"], [f"r{i}"], name=f"relu{i}"))
        x = f"r{i}"
    graph = helper.make_graph(
        nodes, "detector",
        [helper.make_tensor_value_info("images", TensorProto.FLOAT, [INPUT_DIMS[0], 3, *INPUT_DIMS[1:]])],
        [helper.make_tensor_value_info(x, TensorProto.FLOAT, None)], weights)
    model = SymbolicShapeInference.infer_shapes(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]),
                                                auto_merge=True)
    derived = [d.dim_param for vi in model.graph.value_info for d in vi.type.tensor_type.shape.dim]
    assert "floor(DynamicDimension.1/2 - 1/2) + 1" in derived  # the file really carries derived expressions
    path = tmp_path_factory.mktemp("dims") / "detector.onnx"
    onnx.save(model, path)
    return path


def conv_macs(height: int, width: int, batch: int = 1) -> list[int]:
    macs = []
    for cin, cout in CONVS:
        height, width = (height + 1) // 2, (width + 1) // 2
        macs.append(batch * cout * height * width * cin * 9)
    return macs


def test_pinned_input_dims_replace_derived_symbolic_shapes(detector: Path) -> None:
    model = load_model(detector, dims={"DynamicDimension.0": 1, "DynamicDimension.1": 64, "DynamicDimension.2": 48})
    ops, _ = metrics.compute(model, {"macs", "output_bytes"}, set(), progress=False)
    convs = [n for n in model.main.nodes if n.op_type == "Conv"]
    assert [ops[n.key]["macs"] for n in convs] == conv_macs(64, 48)
    assert all(isinstance(ops[n.key]["output_bytes"], int) for n in model.main.nodes)
    assert convs[0].outputs[0].type.shape == (1, 8, 32, 24)
    assert model.main.outputs[0].type.shape == (1, 16, 8, 6)


def test_hints_name_input_dims_only(detector: Path) -> None:
    model = load_model(detector, dims={"DynamicDimension.0": 1})
    ops, _ = metrics.compute(model, {"macs"}, set(), progress=False)
    reasons = [ops[n.key]["macs"] for n in model.main.nodes]
    assert all(isinstance(r, str) and r.startswith("n/a (") for r in reasons)
    for reason in reasons:
        advice = reason[reason.index("pin"):]
        assert "floor" not in advice, reason  # never asks to pin an expression
        assert "--dim DynamicDimension.1=N --dim DynamicDimension.2=N" in advice, reason
        assert "DynamicDimension.0" not in advice, reason  # pinned already
    free = load_model(detector)
    ops, _ = metrics.compute(free, {"macs"}, set(), progress=False)
    reason = ops[free.main.nodes[0].key]["macs"]
    assert "--dim DynamicDimension.0=N --dim DynamicDimension.1=N --dim DynamicDimension.2=N" in reason, reason
    partly = load_model(detector, dims={"DynamicDimension.0": 1, "DynamicDimension.1": 64})
    ops, _ = metrics.compute(partly, {"macs"}, set(), progress=False)
    reason = ops[partly.main.nodes[0].key]["macs"]
    assert "--dim DynamicDimension.2=N" in reason and "DynamicDimension.1=" not in reason, reason
