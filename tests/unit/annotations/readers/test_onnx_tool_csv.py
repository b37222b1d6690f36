"""The onnx-tool profile CSV reader, on CSVs that onnx-tool writes during the test run."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

from conftest import ONNX, one_line_error, run_cli
from renderer.annotations.readers import onnx_tool_csv
from renderer.annotations.registry import load_annotations, read_file
from renderer.core.errors import AnnotationError
from renderer.loaders.registry import load_model

onnx_tool = pytest.importorskip("onnx_tool")


def profile_csv(model_path: Path, out: Path, inputs: dict | None = None) -> Path:
    model = onnx_tool.Model(str(model_path))
    model.graph.shape_infer(inputs)
    model.graph.profile()
    model.graph.print_node_map(str(out))
    return out


def rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def number(text: str) -> float:
    return float(text.rstrip("%"))


def test_values_map_to_named_nodes_and_total_becomes_graph_values(tmp_path: Path) -> None:
    path = profile_csv(ONNX / "tiny_cnn.onnx", tmp_path / "cnn.csv")
    head = path.read_text()[:4096]
    assert onnx_tool_csv.match(path, head)
    model = load_model(ONNX / "tiny_cnn.onnx")
    notes = load_annotations(path, model)
    assert notes.coverage[0].matched_ops == len(model.main.nodes) and not notes.coverage[0].unmatched
    by_name = {model.main.nodes[k[2]].name: e for k, e in notes.ops.items()}
    table = rows(path)
    assert table[-1]["Name"] == "Total"
    for row in table[:-1]:
        entry = by_name[row["Name"]]
        for column in ("Forward_MACs", "Memory", "Params", "FPercent", "MPercent", "PPercent"):
            assert entry.values[column] == pytest.approx(number(row[column])), (row["Name"], column)
        assert entry.values["OutShape"] == row["OutShape"]
    assert notes.graph.values["total_Forward_MACs"] == int(table[-1]["Forward_MACs"])
    assert notes.graph.values["total_Params"] == int(table[-1]["Params"])
    assert notes.metrics["Forward_MACs"].unit == "MACs" and notes.metrics["FPercent"].unit == "%"


def test_unnamed_nodes_use_onnx_tool_numbering(tmp_path: Path) -> None:
    path = profile_csv(ONNX / "unnamed_nodes.onnx", tmp_path / "unnamed.csv")
    model = load_model(ONNX / "unnamed_nodes.onnx")
    notes = load_annotations(path, model)
    table = rows(path)[:-1]
    assert notes.coverage[0].matched_ops == len(table) == len(model.main.nodes)
    for row in table:  # onnx-tool counts Constant nodes, unlike onnxruntime
        op_type, index = row["Name"].rsplit("_", 1)
        node = model.main.nodes[int(index)]
        assert node.op_type == op_type == row["Type"]
        assert notes.ops[node.key].values["Forward_MACs"] == int(row["Forward_MACs"])


def test_transformer_with_symbolic_dims(tmp_path: Path) -> None:
    tokens = np.zeros((1, 7, 64), dtype=np.float32)
    path = profile_csv(ONNX / "tiny_transformer.onnx", tmp_path / "tr.csv", {"tokens": tokens})
    model = load_model(ONNX / "tiny_transformer.onnx")
    run = run_cli(
        "render",
        ONNX / "tiny_transformer.onnx",
        "-a",
        path,
        "--color-by",
        "Forward_MACs",
        "-o",
        tmp_path / "tr.svg",
    )
    assert run.returncode == 0, run.stderr
    assert f"matched {len(model.main.nodes)}/{len(model.main.nodes)} operators" in run.stderr


def test_rows_naming_nothing_are_reported(tmp_path: Path) -> None:
    path = profile_csv(ONNX / "tiny_cnn.onnx", tmp_path / "cnn.csv")
    text = path.read_text().replace("stem/conv,", "stem/gone,", 1).replace("head/fc,Gemm", "Gemm_99,Gemm", 1)
    edited = tmp_path / "edited.csv"
    edited.write_text(text)
    model = load_model(ONNX / "tiny_cnn.onnx")
    notes = load_annotations(edited, model)
    assert notes.coverage[0].unmatched == ["stem/gone", "Gemm_99"]
    with pytest.raises(AnnotationError, match="stem/gone"):
        load_annotations(edited, model, strict=True)


def test_malformed_csv_names_the_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("Name,Type,Forward_MACs,FPercent\nstem/conv,Conv,1,2%\nstem/bn,BatchNormalization,3\n")
    model = load_model(ONNX / "tiny_cnn.onnx")
    with pytest.raises(AnnotationError, match=r"bad\.csv:3: 3 cells but 4 columns"):
        read_file(bad, model)
    error = one_line_error(run_cli("render", ONNX / "tiny_cnn.onnx", "-a", bad, "-o", tmp_path / "x.svg"))
    assert "bad.csv:3" in error


@pytest.mark.slow
def test_a_million_rows_stream(tmp_path: Path) -> None:
    model = load_model(ONNX / "tiny_cnn.onnx")
    big = tmp_path / "big.csv"
    with open(big, "w") as f:
        f.write("Name,Type,Forward_MACs,FPercent,Memory,MPercent,Params,PPercent,InShape,OutShape\n")
        f.write("stem/conv,Conv,458752,26.34%,67328,17.85%,448,7.26%,1x3x32x32,1x16x32x32\n")
        f.writelines(f"extra_{i},Relu,{i},0.00%,0,0.00%,0,0.00%,1x1,1x1\n" for i in range(1_000_000))
        f.write("Total,_,1,100%,1,100%,1,100%,_,_\n")
    aset = read_file(big, model)
    assert len(aset.operators) == 1 and len(aset.unmatched) == 1_000_000
    assert aset.graph.values["total_Params"] == 1
