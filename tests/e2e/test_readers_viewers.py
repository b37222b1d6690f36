"""Readers for the viewers' own files: Model Explorer node data and Netron attachments."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import ONNX, TFLITE, one_line_error, run_cli
from renderer.annotations.readers import model_explorer, netron_attachment
from renderer.annotations.registry import load_annotations, read_file
from renderer.core.errors import AnnotationError
from renderer.loaders.registry import load_model


def write(path: Path, doc: object) -> Path:
    path.write_text(json.dumps(doc))
    return path


def test_model_explorer_graph_keyed_by_node_id_and_tensor_name(tmp_path: Path) -> None:
    model = load_model(TFLITE / "okay_nabu.tflite")
    main, noop = model.graphs
    tensor = next(v.name for v in noop.nodes[4].outputs if v.name)
    path = write(
        tmp_path / "nd.json",
        {
            "main": {
                "results": {"3": {"value": 1.5, "bgColor": "#00ff00"}, "999": {"value": 1}},
                "name": "latency",
            },
            "NoOp": {"results": {tensor: {"value": 7, "textColor": "white"}, "2": {"value": "slow"}}},
            "elsewhere": {"results": {"1": {"value": 2}}},
        },
    )
    assert model_explorer.match(path, path.read_text())
    notes = load_annotations(path, model)
    assert notes.ops[main.nodes[3].key].values == {"latency": 1.5}
    assert notes.ops[main.nodes[3].key].style == {"fillcolor": "#00ff00"}
    assert notes.ops[noop.nodes[4].key].values == {"value": 7}
    assert notes.ops[noop.nodes[4].key].style == {"fontcolor": "#ffffff"}
    assert notes.ops[noop.nodes[2].key].values == {"value": "slow"}
    assert sorted(notes.coverage[0].unmatched) == ["elsewhere/1", "main/999"]


def test_model_explorer_bare_form_on_onnx(tmp_path: Path) -> None:
    model = load_model(ONNX / "tiny_cnn.onnx")
    path = write(
        tmp_path / "bare.json",
        {
            "results": {
                "stem/conv": {"value": 3},
                "head/fc_out": {"value": 4},
                "0:1": {"value": 5},
                "2": {"value": 6},
            },
            "gradient": [{"stop": 0, "bgColor": "#ffffff"}, {"stop": 1, "bgColor": "red"}],
        },
    )
    notes = load_annotations(path, model)
    by_name = {model.main.nodes[k[2]].name: e.values["value"] for k, e in notes.ops.items()}
    assert by_name == {"stem/conv": 3, "head/fc": 4, "stem/relu": 6}
    assert notes.coverage[0].unmatched == ["0:1"]  # Model Explorer ids are per graph: no S:N form


def test_model_explorer_malformed(tmp_path: Path) -> None:
    model = load_model(ONNX / "tiny_cnn.onnx")
    path = write(tmp_path / "bad.json", {"results": {"stem/conv": {"value": [1, 2]}}})
    with pytest.raises(AnnotationError, match=r"bad\.json: results\['stem/conv'\]\.value must be a number"):
        read_file(path, model)
    path = write(tmp_path / "bad2.json", {"main": {"results": {"stem/conv": {"value": 1}}}, "other": 3})
    assert not model_explorer.match(path, "{}")
    with pytest.raises(AnnotationError, match="graph ids mapping"):
        read_file(path, model, fmt="model-explorer")


def test_netron_attachment_targets_and_identifiers(tmp_path: Path) -> None:
    model = load_model(ONNX / "tiny_cnn.onnx")
    doc = {
        "signature": "netron:attachment",
        "metadata": [
            {"kind": "node", "target": "stem/conv", "name": "note", "value": "hot\nspot"},
            {"kind": "model", "target": "", "name": "device", "value": "cpu"},
        ],
        "metrics": [
            {"kind": "node", "target": "stem/conv", "name": "latency", "value": 4.5},
            {"kind": "node", "target": "head/fc_out", "name": "latency", "value": 1},
            {"kind": "value", "target": "stem/conv_out", "name": "bytes", "value": 65536},
            {"kind": "node", "target": "ghost", "name": "latency", "value": 2},
        ],
    }
    path = write(tmp_path / "a.json", doc)
    assert netron_attachment.match(path, path.read_text())
    notes = load_annotations(path, model)
    by_name = {model.main.nodes[k[2]].name: e.values for k, e in notes.ops.items()}
    assert by_name == {"stem/conv": {"note": "hot\nspot", "latency": 4.5}, "head/fc": {"latency": 1}}
    conv_out = next(v for v in model.main.values if v.name == "stem/conv_out")
    assert notes.tensors[conv_out.key].values == {"bytes": 65536}
    assert notes.graph.values["device"] == "cpu"
    assert notes.coverage[0].unmatched == ["node ghost"]

    tfl = load_model(TFLITE / "face_detection_short_range.tflite")
    ids = write(
        tmp_path / "t.json",
        {
            "signature": "netron:attachment",
            "metrics": [
                {"kind": "node", "identifier": "5", "name": "ms", "value": 1.25},
                {"kind": "tensor", "identifier": 7, "name": "zeros", "value": 0.5},
            ],
        },
    )
    tnotes = load_annotations(ids, tfl)
    assert tnotes.ops[("op", 0, 5)].values == {"ms": 1.25} and tnotes.tensors[("t", 0, 7)].values == {
        "zeros": 0.5
    }


def test_netron_malformed_is_one_line(tmp_path: Path) -> None:
    path = write(
        tmp_path / "n.json", {"signature": "netron:attachment", "metrics": [{"kind": "op", "name": "x"}]}
    )
    error = one_line_error(run_cli("render", ONNX / "tiny_cnn.onnx", "-a", path, "-o", tmp_path / "x.svg"))
    assert "n.json: metrics[0]: kind must be one of" in error
