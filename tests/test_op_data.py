"""Operator knowledge lives in ``renderer/data/*-ops.json``; graph-valued attributes are typed, not text."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import ONNX, TFLITE, ROOT, run_cli

import renderer
from renderer import categories
from renderer.ir import SubgraphRef


@pytest.mark.parametrize("fmt", ["onnx", "tflite"])
def test_roles_name_known_operators_and_control_flow_is_category_control(fmt: str) -> None:
    data = json.loads((ROOT / f"renderer/data/{fmt}-ops.json").read_text(encoding="utf-8"))
    known = {op for ops in data["categories"].values() for op in ops}
    assert set(data["roles"]) >= {"runs_subgraphs", "weight_layout", "weight_cast", "dequantize"}
    for role, ops in data["roles"].items():
        assert ops and set(ops) <= known, (fmt, role, set(ops) - known)
        assert len(ops) == len(set(ops)), (fmt, role)
    assert all(categories.category(fmt, op) == "control" for op in data["roles"]["runs_subgraphs"])


@pytest.mark.parametrize("path", [ONNX / "control_flow.onnx", ONNX / "silero_vad.onnx", TFLITE / "okay_nabu.tflite"])
def test_every_operator_with_subgraphs_is_control_flow_in_the_data(path: Path) -> None:
    model = renderer.load_model(path)
    runners = [n for n in model.nodes() if n.subgraphs]
    assert runners
    for node in runners:
        assert categories.runs_subgraphs(model.format, node.op_type), node.op_type
    from renderer import metrics

    totals = metrics.model_costs(model).totals()
    uncountable = [n for n in model.nodes() if categories.runs_subgraphs(model.format, n.op_type)]
    assert totals["macs_uncounted"] <= sum(len(g.nodes) for g in model.graphs) - len(uncountable)


def test_graph_attributes_are_typed_and_text_that_looks_like_one_is_shown(tmp_path: Path) -> None:
    import onnx
    from onnx import TensorProto, helper

    model = renderer.load_model(ONNX / "control_flow.onnx")
    gate = next(n for n in model.main.nodes if n.op_type == "If")
    branches = [gate.attributes["then_branch"], gate.attributes["else_branch"]]
    assert all(isinstance(b, SubgraphRef) for b in branches)
    assert {b.index for b in branches} == {g.index for g in gate.subgraphs}
    assert model.graphs[branches[0].index].name == "gate/then"
    assert str(branches[0]) == f"graph {branches[0].index}"

    node = helper.make_node("Scale", ["x"], ["y"], name="s", domain="example.custom", mode="graph 7 fast")
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    path = tmp_path / "m.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                      helper.make_opsetid("example.custom", 1)]), path)
    out = tmp_path / "m.dot"
    run = run_cli("render", path, "-o", out, "--no-sidecar")
    assert run.returncode == 0, run.stderr
    assert "mode=graph 7 fast" in out.read_text(encoding="utf-8")
