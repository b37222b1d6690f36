"""Per-node params and MACs cross-checked against onnx-tool, run for real on three real models of different kinds.

For every node both tools count:
    * MACs are equal, except for the op types listed in ``renderer.metrics.builtin``'s table of intended differences
      (onnx-tool weights functions by x86 instruction cost); for those that are elementwise in both tools the
      ratio onnx-tool / ours must be one constant per op type, which still checks that both count the same
      elements.
    * params are equal once the documented differences are added to onnx-tool's number: a constant already
      counted at an earlier node (onnx-tool counts a shared tensor at its first reader only), a scalar constant
      (onnx-tool's volume of a 0-d shape is 0; ours is 1), the weight behind a DequantizeLinear (ours also
      counts it at the op that uses the dequantized weight), and the scales and zero points of Q/DQ nodes (ours
      counts none). The adjustments are computed here from the raw
      ONNX graph and onnx-tool's own list of constants.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import onnx
import pytest

from conftest import ROOT
from renderer.loaders.registry import load_model
from renderer.metrics import builtin as metrics

ONNX = ROOT / "samples" / "onnx"

# Op types whose MACs differ by convention (documented in renderer/metrics/builtin.py).
INTENDED = {"Div", "Softmax", "BatchNormalization", "LayerNormalization", "GlobalAveragePool", "Erf"}
# Of those, the ones both tools count per element, so that onnx-tool / ours is one constant per op type.
PROPORTIONAL = {"Div", "Softmax", "BatchNormalization"}

# file, --dim values, onnx-tool input shapes, least share of nodes whose params match with no adjustment (the
# quantized model has scalar scales and zero points on every Q/DQ node, so nearly all of its nodes need one).
CASES = {
    "cnn": ("light_resnet50.onnx", {}, None, 0.95),
    "transformer": ("tiny_transformer.onnx", {"batch": 1, "seq": 8}, {"tokens": (1, 8, 64)}, 0.7),
    "quantized": ("tiny_cnn_qdq_u8.onnx", {}, None, 0.0),
}


def onnx_tool_profile(path: Path, inputs: dict[str, tuple[int, ...]] | None):
    """onnx-tool's per-node profile: {first output name: (op_type, macs, params)} and its node order."""
    import onnx_tool

    model = onnx_tool.Model(str(path), {"constant_folding": True, "verbose": False})
    graph = model.graph
    graph.graph_reorder_nodes()
    graph.shape_infer({k: np.zeros(v, np.float32) for k, v in inputs.items()} if inputs else None)
    graph.profile()
    nodes = {}
    for node in graph.nodemap.values():
        nodes[node.output[0]] = (node.op_type, int(node.macs[0]), int(node.params))
    return graph, nodes


def expected_param_adjustment(graph, raw: onnx.ModelProto) -> dict[str, int]:
    """What ours adds to onnx-tool's params per node (see the module docstring), keyed by first output."""
    dq_inputs = {n.output[0]: n.input[0] for n in raw.graph.node if n.op_type == "DequantizeLinear"}
    constants = set(graph.initials)
    seen: set[str] = set()
    adjust: dict[str, int] = {}
    quantization = {"QuantizeLinear": (1, 2), "DequantizeLinear": (1, 2)}
    for node in graph.nodemap.values():  # the order graph.profile() walks
        extra = 0
        scales = {node.input[slot] for slot in quantization.get(node.op_type, ()) if slot < len(node.input)}
        for name in dict.fromkeys(i for i in node.input if i):
            if name in constants and name in scales:
                shape = graph.tensormap[name].get_shape()
                extra -= 0 if name in seen else math.prod(shape) if len(shape) else 0  # theirs at its first reader
                seen.add(name)
            elif name in constants:
                shape = graph.tensormap[name].get_shape()
                if len(shape) == 0:
                    extra += 1
                elif name in seen:
                    extra += math.prod(shape)
                seen.add(name)
            elif node.op_type != "DequantizeLinear" and name in dq_inputs and dq_inputs[name] in constants:
                extra += math.prod(graph.tensormap[dq_inputs[name]].get_shape())
        adjust[node.output[0]] = extra
    return adjust


@pytest.mark.parametrize("case", sorted(CASES))
def test_params_and_macs_match_onnx_tool(case: str) -> None:
    file, dims, inputs, least_exact = CASES[case]
    path = ONNX / file
    graph, theirs = onnx_tool_profile(path, inputs)
    adjust = expected_param_adjustment(graph, onnx.load(str(path)))
    model = load_model(path, dims=dims)
    ours_by_output = {}
    computed, _ = metrics.compute(model, set(metrics.CHEAP_OP_METRICS), set())
    for node in model.main.nodes:
        ours_by_output[node.outputs[0].name] = (node.op_type, computed[node.key])

    compared = equal_macs = exact_params = 0
    ratios: dict[str, set[float]] = {}
    for output, (op_type, their_macs, their_params) in theirs.items():
        assert output in ours_by_output, f"{op_type} writing {output} missing from our model"
        our_type, ours = ours_by_output[output]
        assert our_type == op_type
        compared += 1
        assert isinstance(ours["macs"], int), (output, ours["macs"])
        if op_type in INTENDED:
            if op_type in PROPORTIONAL:
                ratios.setdefault(op_type, set()).add(their_macs / ours["macs"])
        else:
            assert ours["macs"] == their_macs, (case, op_type, output, ours["macs"], their_macs)
            equal_macs += 1
        assert ours["params"] == their_params + adjust[output], (case, op_type, output, ours["params"], their_params)
        exact_params += adjust[output] == 0
    for op_type, values in ratios.items():
        assert len(values) == 1, (case, op_type, values)
    print(f"{case}: {compared} nodes compared; MACs equal on {equal_macs}, documented convention on "
          f"{compared - equal_macs}; params equal on {exact_params} without adjustment")
    assert compared >= 30
    assert equal_macs >= compared * 0.6
    assert exact_params >= compared * least_exact


def test_intended_differences_are_the_documented_ones() -> None:
    doc = metrics.__doc__ or ""
    for op_type in INTENDED - {"Div", "Erf"}:
        assert op_type in doc, op_type
    assert "Div" in doc and "Erf" in doc and "first reader only" in doc and "DequantizeLinear" in doc
