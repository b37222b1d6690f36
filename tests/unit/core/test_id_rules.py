"""The bounds of ``N`` / ``S:N`` ids: the last element resolves, one past it never does."""

from __future__ import annotations

from pathlib import Path

import pytest

import renderer
from conftest import ONNX, run_cli
from renderer.core.id_rules import IdIndex, Unresolved

TINY_CNN = ONNX / "tiny_cnn.onnx"  # 18 operators, 45 tensors in graph 0
CONTROL_FLOW = ONNX / "control_flow.onnx"  # graphs of 4, 3, 2 and 5 operators


def test_one_past_the_last_operator_and_tensor_is_unresolved() -> None:
    index = IdIndex.build(renderer.load_model(TINY_CNN))
    assert index.operator("17") == ("op", 0, 17)
    assert index.operator("0:17") == ("op", 0, 17)
    assert index.tensor("0:44") == ("t", 0, 44)
    for ident in ("18", "0:18", "0:19"):
        with pytest.raises(Unresolved, match="has 18 operators"):
            index.operator(ident)
    with pytest.raises(Unresolved, match="has 45 tensors"):
        index.tensor("0:45")
    with pytest.raises(Unresolved, match="no graph 1"):
        index.operator("1:0")


def test_one_past_the_end_of_each_subgraph_is_unresolved() -> None:
    index = IdIndex.build(renderer.load_model(CONTROL_FLOW))
    for graph, count in enumerate((4, 3, 2, 5)):
        assert index.operator(f"{graph}:{count - 1}") == ("op", graph, count - 1)
        with pytest.raises(Unresolved):
            index.operator(f"{graph}:{count}")
    with pytest.raises(Unresolved, match="no graph 4"):
        index.operator("4:0")


def test_one_past_the_end_in_a_file_is_reported_unmatched(tmp_path: Path) -> None:
    notes = tmp_path / "n.yaml"
    notes.write_text("operators:\n  - {id: '0:17', x: 1}\n  - {id: '0:18', x: 2}\n", encoding="utf-8")
    run = run_cli("render", TINY_CNN, "-a", notes, "-o", tmp_path / "m.svg", "--no-sidecar")
    assert run.returncode == 0, run.stderr
    assert "matched 1/2 operators" in run.stderr, run.stderr
    assert "0:18" in run.stderr
