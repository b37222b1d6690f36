"""``annograph export``: generic CSV/JSON round trips, Netron attachments, Model Explorer node data checked
with Model Explorer's own Python package when it is installed."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ONNX, ROOT, one_line_error, run_cli
from renderer.annotations.registry import load_annotations, read_file
from renderer.exporters.protocol import ExportOptions
from renderer.exporters.registry import exporter
from renderer.loaders.registry import load_model

FIXTURES = ROOT / "tests" / "fixtures"
DEBUGGER = FIXTURES / "tflite_debugger"

ANNOTATIONS = """graph: {title: "Tiny CNN", meta: {Device: "NPU, rev 2"}}
operators:
  - {id: stem/conv, meta: {latency_us: 13.25, note: "tiled, x4"}, style: {fillcolor: "#ff0000"}}
  - {id: block1/relu1_out, meta: {latency_us: 2}}
  - {id: "0:17", meta: {latency_us: 0.5, ratio: 1e-07}}
tensors:
  - {id: stem/conv_out, meta: {bytes: 65536}, style: {color: "#00ff00", penwidth: 3}}
"""


@pytest.fixture
def cnn_notes(tmp_path: Path) -> Path:
    path = tmp_path / "notes.yaml"
    path.write_text(ANNOTATIONS)
    return path


def plain(notes):  # type: ignore[no-untyped-def]
    """Annotations as comparable data: values with numbers as floats, and styles."""

    def norm(values):  # type: ignore[no-untyped-def]
        out = {}
        for k, v in values.items():
            try:
                out[k] = float(v)
            except (TypeError, ValueError):
                out[k] = v
        return out

    return (
        {k: (norm(e.values), e.style) for k, e in notes.ops.items()},
        {k: (norm(e.values), e.style) for k, e in notes.tensors.items()},
        norm(notes.graph.values),
    )


@pytest.mark.parametrize("fmt", ["csv", "json"])
def test_generic_round_trip_through_render(cnn_notes: Path, tmp_path: Path, fmt: str) -> None:
    model = load_model(ONNX / "tiny_cnn.onnx")
    original = load_annotations(cnn_notes, model)  # with the model's own, as export writes them
    assert original.graph.values["license"] == "Apache-2.0"
    out = tmp_path / f"export.{fmt}"
    run = run_cli("export", ONNX / "tiny_cnn.onnx", "-a", cnn_notes, "--to", fmt, "-o", out, "--no-sidecar")
    assert run.returncode == 0, run.stderr
    again = load_annotations(out, model, embedded=False)  # the export holds the model's own already
    assert again.coverage[0].source == "generic" and not again.coverage[0].unmatched
    assert plain(again) == plain(original)
    svg = tmp_path / "back.svg"
    run = run_cli("render", ONNX / "tiny_cnn.onnx", "-a", out, "--color-by", "latency_us", "-o", svg)
    assert run.returncode == 0, run.stderr


def test_csv_cuts_text_no_csv_reader_could_read_back(tmp_path: Path) -> None:
    notes = tmp_path / "long.json"
    notes.write_text(json.dumps({"operators": [{"id": "stem/conv", "meta": {"latency_us": 3, "log": "x" * 150_000}}]}))
    out = tmp_path / "export.csv"
    run = run_cli("export", ONNX / "tiny_cnn.onnx", "-a", notes, "--to", "csv", "-o", out, "--no-sidecar")
    assert run.returncode == 0, run.stderr
    assert "'log' cut to 100,000 characters" in run.stderr
    again = load_annotations(out, load_model(ONNX / "tiny_cnn.onnx"))
    (entry,) = again.ops.values()
    assert entry.values["log"] == "x" * 99_999 + "…" and float(entry.values["latency_us"]) == 3


def test_tflite_ids_round_trip(tmp_path: Path) -> None:
    model = load_model(DEBUGGER / "tiny_keras_int8.tflite")
    original = load_annotations(DEBUGGER / "layer_stats.csv", model)
    for name in ("generic_csv", "generic_json"):
        module = __import__(f"renderer.exporters.{name}", fromlist=["export"])
        out = tmp_path / f"x{module.EXTENSION}"
        out.write_text(module.export(model, original, ExportOptions()).text)
        assert plain(load_annotations(out, model)) == plain(original)


def test_netron_attachment_round_trip(cnn_notes: Path, tmp_path: Path) -> None:
    model = load_model(ONNX / "tiny_cnn.onnx")
    original = load_annotations(cnn_notes, model)
    out = tmp_path / "cnn.attachment.json"
    run = run_cli("export", ONNX / "tiny_cnn.onnx", "-a", cnn_notes, "--to", "netron", "-o", out)
    assert run.returncode == 0, run.stderr
    doc = json.loads(out.read_text())
    assert doc["signature"] == "netron:attachment"
    conv = [i for i in doc["metrics"] if i.get("target") == "stem/conv"]
    assert conv == [{"kind": "node", "target": "stem/conv", "name": "latency_us", "value": 13.25}]
    assert {
        "kind": "node",
        "target": "stem/conv",
        "name": "note",
        "value": "tiled, x4",
        "type": "string",
    } in doc["metadata"]
    assert {"kind": "model", "target": "", "name": "title", "value": "Tiny CNN", "type": "string"} in doc[
        "metadata"
    ]
    again = read_file(out, model)
    assert again.source == "netron"
    back = load_annotations(out, model)
    assert {k: e.values for k, e in back.ops.items()} == {k: e.values for k, e in original.ops.items()}
    assert back.graph.values["Device"] == "NPU, rev 2"


def test_netron_tflite_uses_identifiers(tmp_path: Path) -> None:
    model = load_model(DEBUGGER / "tiny_keras_int8.tflite")
    notes = load_annotations(DEBUGGER / "layer_stats.csv", model)
    text = exporter("netron").export(model, notes, ExportOptions()).text
    doc = json.loads(text)
    nodes = {i["identifier"] for i in doc["metrics"] if i["kind"] == "node"}
    assert nodes == {str(k[2]) for k in notes.ops}
    out = tmp_path / "a.json"
    out.write_text(text)
    assert {k: e.values for k, e in load_annotations(out, model).ops.items()} == {
        k: e.values for k, e in notes.ops.items()
    }


def test_model_explorer_export_and_read_back(cnn_notes: Path, tmp_path: Path) -> None:
    model = load_model(ONNX / "tiny_cnn.onnx")
    out = tmp_path / "me.json"
    run = run_cli("export", ONNX / "tiny_cnn.onnx", "-a", cnn_notes, "--to", "model-explorer", "-o", out)
    assert run.returncode == 0, run.stderr
    doc = json.loads(out.read_text())
    assert doc["name"] == "latency_us" and doc["results"]["stem/conv"] == {
        "value": 13.25,
        "bgColor": "#ff0000",
    }
    assert [g["stop"] for g in doc["gradient"]] == [0.0, 0.25, 0.5, 0.75, 1.0]
    back = load_annotations(out, model)
    original = load_annotations(cnn_notes, model)
    assert {k: e.values["latency_us"] for k, e in back.ops.items()} == {
        k: e.values["latency_us"] for k, e in original.ops.items()
    }
    conv = next(n for n in model.main.nodes if n.name == "stem/conv")
    assert back.ops[conv.key].style == {"fillcolor": "#ff0000"}


def _model_explorer_python() -> str | None:
    """A Python that can import Model Explorer's package: this one, or $ANNOGRAPH_MODEL_EXPLORER_PYTHON."""
    try:
        import model_explorer  # noqa: F401

        return sys.executable
    except ImportError:
        pass
    candidate = os.environ.get("ANNOGRAPH_MODEL_EXPLORER_PYTHON")
    if candidate and shutil.which(candidate):
        done = subprocess.run([candidate, "-c", "import model_explorer"], capture_output=True, check=False)
        if done.returncode == 0:
            return candidate
    return None


CHECK = r"""
import json, sys
from model_explorer import node_data_builder as ndb

path, model_path = sys.argv[1], sys.argv[2]
doc = json.load(open(path))

def graph_data(body):
    return ndb.GraphNodeData(
        results={k: ndb.NodeDataResult(**v) for k, v in body["results"].items()},
        name=body.get("name"),
        gradient=[ndb.GradientItem(**g) for g in body.get("gradient", [])],
        thresholds=[ndb.ThresholdItem(**t) for t in body.get("thresholds", [])])

if "results" in doc:
    rebuilt = json.loads(graph_data(doc).to_json_string())
else:
    rebuilt = json.loads(ndb.ModelNodeData(graphsData={g: graph_data(b) for g, b in doc.items()}).to_json_string())
assert rebuilt == doc, (rebuilt, doc)

nodes = {}
if model_path.endswith(".tflite"):
    import ai_edge_model_explorer_adapter as adapter
    graphs = json.loads(adapter.ConvertFlatbufferDirectlyToJson(adapter.VisualizeConfig(), model_path))
    for collection in graphs:
        for graph in collection["subgraphs"]:
            nodes[graph["id"]] = {n["id"]: n["label"] for n in graph["nodes"]}
print(json.dumps(nodes))
"""


@pytest.mark.parametrize(
    "model_path,annotations",
    [
        (ONNX / "tiny_cnn.onnx", None),
        (DEBUGGER / "tiny_keras_int8.tflite", DEBUGGER / "layer_stats.csv"),
    ],
)
def test_model_explorer_package_accepts_the_file(
    cnn_notes: Path, tmp_path: Path, model_path: Path, annotations: Path | None
) -> None:
    python = _model_explorer_python()
    if python is None:
        pytest.skip(
            "Model Explorer's Python package (ai-edge-model-explorer) is not installed; set "
            "ANNOGRAPH_MODEL_EXPLORER_PYTHON to a Python that has it"
        )
    out = tmp_path / "node_data.json"
    run = run_cli("export", model_path, "-a", annotations or cnn_notes, "--to", "model-explorer", "-o", out)
    assert run.returncode == 0, run.stderr
    done = subprocess.run(
        [python, "-c", CHECK, str(out), str(model_path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    nodes = json.loads(done.stdout.strip().splitlines()[-1])
    if model_path.suffix == ".tflite":  # Model Explorer's own ids for this model: graph name, operator index
        model = load_model(model_path)
        doc = json.loads(out.read_text())
        for graph_id, body in doc.items():
            assert graph_id in nodes
            for key in body["results"]:
                node = model.graphs[[g.name for g in model.graphs].index(graph_id)].nodes[int(key)]
                assert nodes[graph_id][key] == node.op_type.lower()


ONNX_ADAPTER = r"""
import json, sys
from model_explorer_onnx.main import ONNXAdapter

graphs = ONNXAdapter().convert(sys.argv[1], {})["graphs"]
print(json.dumps({g.id: {n.id: n.label for n in g.nodes} for g in graphs}))
"""


@pytest.mark.parametrize("name", ["tiny_cnn", "unnamed_nodes", "control_flow", "silero_vad"])
def test_model_explorer_onnx_adapter_finds_every_value(tmp_path: Path, name: str) -> None:
    """Every operator's value, exported, lands on the node Model Explorer's ONNX adapter draws for it (same op
    type), and every operator node the adapter draws has its value: unnamed nodes, duplicate names, If branches
    embedded in their graph, Loop bodies as graphs of their own."""
    python = _model_explorer_python()
    if python is None or subprocess.run(
        [python, "-c", "import model_explorer_onnx"], capture_output=True, check=False
    ).returncode:
        pytest.skip("model-explorer-onnx is not installed next to ai-edge-model-explorer")
    model_path = ONNX / f"{name}.onnx"
    model = load_model(model_path)
    ops = [node for graph in model.graphs for node in graph.nodes]
    notes = tmp_path / "every_op.json"
    notes.write_text(json.dumps({"operators": [
        {"id": f"{n.graph.index}:{n.index}", "meta": {"serial": i + 1}} for i, n in enumerate(ops)
    ]}))
    out = tmp_path / "node_data.json"
    run = run_cli("export", model_path, "-a", notes, "--to", "model-explorer", "-o", out)
    assert run.returncode == 0, run.stderr
    done = subprocess.run(
        [python, "-c", ONNX_ADAPTER, str(model_path)], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr
    drawn = json.loads(done.stdout.strip().splitlines()[-1])
    doc = json.loads(out.read_text())
    bodies = {model.main.name or "<main>": doc} if "results" in doc else doc
    found = {}
    for graph_id, body in bodies.items():
        for node_id, result in body["results"].items():
            op = ops[int(result["value"]) - 1]
            assert drawn[graph_id][node_id] == op.op_type, (graph_id, node_id, op.op_type)
            found[(graph_id, node_id)] = op
    shown = {
        (graph_id, node_id)
        for graph_id, nodes in drawn.items()
        for node_id, label in nodes.items()
        if not node_id.startswith("[value] ") and label not in ("(Phi)", "(Capture)")  # the adapter's own
    }
    assert shown == set(found)
    assert len(set(map(id, found.values()))) == len(found)
    left_out = len(ops) - len(found)
    if left_out:
        assert f"{left_out} operators left out" in run.stderr
    back = load_annotations(out, model, sidecar=False, embedded=False)
    assert sorted(back.ops) == sorted(op.key for op in found.values())


def test_model_explorer_needs_a_numeric_metric(tmp_path: Path) -> None:
    notes = tmp_path / "text.yaml"
    notes.write_text("operators:\n  - {id: stem/conv, meta: {note: hello}}\n")
    error = one_line_error(
        run_cli(
            "export", ONNX / "tiny_cnn.onnx", "-a", notes, "--to", "model-explorer", "-o", tmp_path / "x.json"
        )
    )
    assert "no numeric operator values" in error
    assert not (tmp_path / "x.json").exists()
    error = one_line_error(
        run_cli(
            "export",
            ONNX / "tiny_cnn.onnx",
            "-a",
            notes,
            "--to",
            "model-explorer",
            "--metric",
            "latency",
            "-o",
            tmp_path / "x.json",
        )
    )
    assert "latency" in error
