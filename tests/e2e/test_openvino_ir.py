"""An OpenVINO IR (``.xml`` + ``.bin``) made by the real ``openvino`` from a small ONNX model, as a model: every
layer drawn once, MACs of the conv and the linear by hand, params and MACs equal to the ONNX model's, weights
from the ``.bin`` (float16 too), name scopes as groups, every command, bad files refused in one line."""

from __future__ import annotations

import csv
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from conftest import ONNX, one_line_error, run_cli
from openvino_models import CONV, LINEAR, SVG, free_onnx, save_ir, small_set, svg_boxes

NOT_OPERATORS = ("Parameter", "Const", "Result")


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return small_set(tmp_path_factory.mktemp("openvino_ir"))


def _layers(xml: Path) -> list[ET.Element]:
    return list(ET.parse(xml).getroot().iterfind("layers/layer"))


def _metrics(model: Path, tmp_path: Path) -> tuple[dict[str, dict[str, str]], str]:
    """Operator rows of ``annograph metrics`` by operator name (from ``info``), and its summary line."""
    from renderer.loaders.registry import load_model

    table = tmp_path / f"{model.stem}.csv"
    run = run_cli("metrics", model, "-o", table)
    assert run.returncode == 0, run.stderr
    names = {f"0:{n.index}": n.name for n in load_model(model).main.nodes}
    rows = {names[r["id"]]: r for r in csv.DictReader(table.open(encoding="utf-8")) if r["kind"] == "operator"}
    return rows, run.stderr


@pytest.mark.parametrize("which", ["ir", "fp16"])
def test_every_layer_drawn_once(which: str, made: dict[str, Path], tmp_path: Path) -> None:
    """Every layer but Parameter/Const/Result is one box (``--show-constants``: none folded), with its type,
    opset and data attributes; Parameter and Result are the graph's ends."""
    from renderer.loaders.registry import load_model

    xml = made[which]
    layers = [la for la in _layers(xml) if la.get("type") not in NOT_OPERATORS]
    model = load_model(xml)
    assert model.format == "openvino" and [n.name for n in model.main.nodes] == [la.get("name") for la in layers]
    assert [v.name for v in model.main.inputs] == ["x"] and [v.name for v in model.main.outputs] == ["y"]
    svg = tmp_path / "ir.svg"
    run = run_cli("render", xml, "-o", svg, "--show-constants", "--collapse", "none")
    assert run.returncode == 0, run.stderr
    boxes = svg_boxes(svg)
    assert sorted(boxes) == sorted(la.get("name") for la in layers)
    for layer in layers:
        tip = boxes[layer.get("name")][1]
        assert f"version = {layer.get('version')}" in tip
        for key, text in (layer.find("data").attrib if layer.find("data") is not None else {}).items():
            assert f"{key} = " in tip and "".join(text.split()) in "".join(tip.split()), (key, tip)


def test_conv_and_linear_macs_by_hand(made: dict[str, Path], tmp_path: Path) -> None:
    """The IR keeps a bias as the Add after its layer (``<name>/WithoutBiases``, ``<name>``): the pair counts
    what the ONNX Conv / Gemm counts."""
    rows, _ = _metrics(made["ir"], tmp_path)
    conv_outputs = 8 * 16 * 16  # 1×8×16×16, 3×3 over 3 channels
    assert int(rows["block/conv/WithoutBiases"]["macs"]) == conv_outputs * CONV[1] * CONV[2] * CONV[3]
    assert int(rows["block/conv"]["macs"]) == conv_outputs  # its bias Add
    assert int(rows["block/dw"]["macs"]) == conv_outputs * 9  # depthwise: 9 weights per output
    assert int(rows["head/fc/WithoutBiases"]["macs"]) == LINEAR[0] * LINEAR[1]  # 1×128 · 128×10
    assert int(rows["head/fc"]["macs"]) == LINEAR[0]
    assert int(rows["block/pool"]["macs"]) == 8 * 8 * 8 * 4 and int(rows["block/avg"]["macs"]) == 8 * 4 * 4 * 4
    assert int(rows["block/conv/WithoutBiases"]["params"]) == 8 * 27 and int(rows["head/fc"]["params"]) == 10
    onnx_rows, _ = _metrics(made["onnx"], tmp_path)
    assert int(onnx_rows["block/conv"]["macs"]) == conv_outputs * 27 + conv_outputs
    assert int(onnx_rows["head/fc"]["macs"]) == LINEAR[0] * LINEAR[1] + LINEAR[0]


@pytest.mark.parametrize("which", ["ir", "fp16"])
def test_params_and_macs_equal_the_onnx_models(which: str, made: dict[str, Path]) -> None:
    from renderer.loaders.registry import load_model
    from renderer.metrics.op_costs import ModelCosts

    ours = ModelCosts.build(load_model(made[which])).totals()
    onnx = ModelCosts.build(load_model(made["onnx"])).totals()
    assert ours["params"] == onnx["params"] == 8 * 27 + 8 + 8 * 9 + 2 + 1280 + 10 + 50
    assert ours["macs"] == onnx["macs"] and ours["macs_uncounted"] == 0
    assert ours["weight_bytes"] == (onnx["weight_bytes"] if which == "ir" else ours["weight_bytes"])


def test_weights_come_from_the_bin(made: dict[str, Path]) -> None:
    import numpy as np
    import onnx
    from onnx import numpy_helper

    from renderer.loaders.registry import load_model

    stored = {t.name: numpy_helper.to_array(t) for t in onnx.load(made["onnx"]).graph.initializer}
    for which, dtype in (("ir", "float32"), ("fp16", "float16")):
        values = {v.name: v for v in load_model(made[which]).main.values if v.is_constant}
        conv = values["conv.w"].initializer
        assert conv.dtype == dtype and conv.shape == CONV
        assert np.allclose(conv.numpy().astype(np.float32), stored["conv.w"], atol=1e-2)
        assert values["fc.w"].initializer.numpy().shape == LINEAR


def test_fp16_converts_fold_into_their_readers(made: dict[str, Path], tmp_path: Path) -> None:
    """The decompression Converts of a float16 IR are folded: the layer reading one lists the stored tensor."""
    svg = tmp_path / "fp16.svg"
    run = run_cli("render", made["fp16"], "-o", svg, "--collapse", "none")
    assert run.returncode == 0, run.stderr
    boxes = svg_boxes(svg)
    assert not any(tip.startswith("Convert") for _, tip, _ in boxes.values())
    assert any("float16→float32" in text for text, _, _ in boxes.values())


def test_name_scopes_are_groups(made: dict[str, Path], tmp_path: Path) -> None:
    """The layers' ``block/`` and ``head/`` scopes: an overview one level deep draws them as groups."""
    svg = tmp_path / "groups.svg"
    run = run_cli("render", made["ir"], "-o", svg, "--collapse", "1")
    assert run.returncode == 0, run.stderr
    labels = {next(g.iter(f"{SVG}text")).text for g in ET.parse(svg).getroot().iter(f"{SVG}g")
              if g.get("class") in ("cluster", "node group")}
    assert labels == {"block", "head"}, labels


def test_info_diff_batch_and_html(made: dict[str, Path], tmp_path: Path) -> None:
    info = run_cli("info", made["ir"])
    assert info.returncode == 0 and "openvino · IR v11" in info.stdout and "block/dw" in info.stdout, info.stderr
    diff = run_cli("diff", made["ir"], made["fp16"], "-o", tmp_path / "diff.svg")
    assert diff.returncode == 0, diff.stderr
    batch = run_cli("batch", made["ir"], made["fp16"], "-a", made["exec_ir"], "-o", tmp_path / "batch")
    assert batch.returncode == 0, batch.stderr
    assert len(list((tmp_path / "batch").rglob("*.svg"))) >= 2 and (tmp_path / "batch" / "index.html").is_file()
    html = tmp_path / "ir.html"
    run = run_cli("render", made["ir"], "-o", html)
    assert run.returncode == 0, run.stderr
    assert "head/fc/WithoutBiases" in html.read_text(encoding="utf-8")


def test_execution_graph_times_land_on_the_ir_layers(made: dict[str, Path], tmp_path: Path) -> None:
    """The ``openvino-exec-graph`` reader on the IR the graph was compiled from: each executed primitive's
    execTimeMcs on the first IR layer its originalLayersNames names (every name is an IR layer's)."""
    from renderer.annotations.registry import load_annotations
    from renderer.loaders.registry import load_model

    model = load_model(made["ir"])
    index = {node.name: node.key for node in model.main.nodes}
    annotations = load_annotations(made["exec_ir"], model, embedded=False)
    expected = {}
    for layer in _layers(made["exec_ir"]):
        data = layer.find("data").attrib
        if data["execTimeMcs"] != "not_executed" and data["originalLayersNames"]:
            first = data["originalLayersNames"].split(",")[0]
            expected[index[first]] = expected.get(index[first], 0) + float(data["execTimeMcs"])
    assert len(expected) >= 6  # the convolutions, pools, the two fully connected layers
    assert {k: e.values["exec_time_us"] for k, e in annotations.ops.items() if "exec_time_us" in e.values} \
        == pytest.approx(expected)


def test_without_its_bin_the_shapes_remain(made: dict[str, Path], tmp_path: Path) -> None:
    xml = tmp_path / "alone.xml"
    xml.write_bytes(made["ir"].read_bytes())
    from renderer.loaders.registry import load_model
    from renderer.metrics.op_costs import ModelCosts

    model = load_model(xml)
    assert any("no alone.bin" in note for note in model.notes)
    assert ModelCosts.build(model).totals()["params"] == ModelCosts.build(load_model(made["ir"])).totals()["params"]


def _bad(made: dict[str, Path], tmp_path: Path, edit: str, bin_bytes: bytes | None = None) -> Path:
    text = made["ir"].read_text(encoding="utf-8")
    old, new = edit.split(" => ")
    assert old in text
    xml = tmp_path / "bad.xml"
    xml.write_text(text.replace(old, new, 1), encoding="utf-8")
    xml.with_suffix(".bin").write_bytes(made["ir"].with_suffix(".bin").read_bytes() if bin_bytes is None
                                        else bin_bytes)
    return xml


@pytest.mark.parametrize(("edit", "expected"), [
    ('offset="0" size="864" => offset="999999" size="864"', "reach past the end of bad.bin"),
    ('offset="0" size="864" => offset="0" size="100"', "100 bytes for 216 float32 values"),
    ('from-layer="0" => from-layer="77"', "no such output port"),
    ('<net name => <!DOCTYPE net [<!ENTITY a "aaaaaaaaaa">]><net name', "a DOCTYPE"),
    ("<dim>16</dim> => <dim>sixteen</dim>", "dim 'sixteen' is not a size"),
    ("</layers> => ", "invalid XML"),
], ids=["offset", "size", "edge", "doctype", "dim", "truncated"])
def test_bad_ir_is_one_line(edit: str, expected: str, made: dict[str, Path], tmp_path: Path) -> None:
    xml = _bad(made, tmp_path, edit)
    line = one_line_error(run_cli("render", xml, "-o", tmp_path / "out.svg"))
    assert expected in line and str(xml) in line, line
    assert not (tmp_path / "out.svg").exists()



def _relu_ir(folder: Path) -> Path:
    """An IR without weights (x → ReLU → y): its ``.bin`` is empty, no tensor names it."""
    import onnx
    from onnx import TensorProto, helper

    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="relu")], "relu",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])])
    onnx.save(helper.make_model(graph), folder / "relu.onnx")
    return save_ir(folder / "relu.onnx", folder / "relu.xml")


def test_no_output_replaces_the_bin(made: dict[str, Path], tmp_path: Path) -> None:
    """The ``.bin`` beside the IR is an input of the run (``Model.side_files``), weights read from it or none:
    an output named as it is refused in one line naming it, before anything is written, its bytes unchanged."""
    xml = tmp_path / "model.xml"
    xml.write_bytes(made["ir"].read_bytes())
    xml.with_suffix(".bin").write_bytes(made["ir"].with_suffix(".bin").read_bytes())
    for model in (xml, _relu_ir(tmp_path)):
        weights = model.with_suffix(".bin")
        before, files = weights.read_bytes(), sorted(tmp_path.iterdir())
        for run in [("render", model, "-o", weights), ("metrics", model, "-o", weights),  # by extension
                    ("diff", "--before", made["exec_ir"], "--after", made["exec_ir"], model, "-o", weights)]:
            error = one_line_error(run_cli(*run))
            assert error.startswith(f"annograph: error: {weights}: "), error
        for run in [("metrics", model, "--table-format", "json", "-o", weights),
                    ("export", model, "--to", "json", "-o", weights)]:
            error = one_line_error(run_cli(*run))
            assert error == f"annograph: error: {weights}: is an input of this run; write the output to another " \
                            "file", (run, error)
        assert weights.read_bytes() == before and sorted(tmp_path.iterdir()) == files


def _total_macs(model: Path, tmp_path: Path, *dims: str) -> tuple[int, str]:
    table = tmp_path / f"{model.stem}{len(dims)}{'_'.join(dims)}.csv"
    run = run_cli("metrics", model, "-o", table, *[a for d in dims for a in ("--dim", d)])
    assert run.returncode == 0, run.stderr
    rows = [r for r in csv.DictReader(table.open(encoding="utf-8")) if r["kind"] == "operator"]
    assert rows and all(r["macs"] for r in rows), rows
    return sum(int(r["macs"]) for r in rows), run.stderr


def test_free_dims_are_assumed_and_pinned_as_for_onnx(tmp_path: Path) -> None:
    """An IR converted from an ONNX model with a free batch and sequence has -1 dims: they are named (``batch``,
    ``x.axis1``), assumed as ONNX's (batch 1, sequence 128) and stated in the legend, every port's shape is
    OpenVINO's at those values, so the MACs equal the ONNX model's, and ``--dim`` scales them."""
    onnx_path = free_onnx(tmp_path / "free.onnx")
    xml = save_ir(onnx_path, tmp_path / "free.xml")
    assert "<dim>-1</dim>" in xml.read_text(encoding="utf-8")
    onnx_macs, onnx_said = _total_macs(onnx_path, tmp_path)
    ir_macs, ir_said = _total_macs(xml, tmp_path)
    assert "batch=1, seq=128 assumed" in onnx_said and "batch=1, x.axis1=128 assumed (--dim to change)" in ir_said
    assert ir_macs == onnx_macs == 128 * (16 * 32 + 32 + 32 + 32 * 8)
    assert _total_macs(xml, tmp_path, "batch=4")[0] == 4 * onnx_macs == _total_macs(onnx_path, tmp_path, "batch=4")[0]
    assert _total_macs(xml, tmp_path, "batch=4", "x.axis1=32")[0] == onnx_macs
    svg = tmp_path / "free.svg"
    assert run_cli("render", xml, "-o", svg).returncode == 0
    texts = ["".join(t.itertext()) for t in ET.parse(svg).getroot().iter(f"{SVG}text")]
    assert "batch=1, x.axis1=128 assumed (--dim to change)" in texts, texts
    error = one_line_error(run_cli("render", xml, "-o", svg, "--dim", "seq=4"))
    assert "pins nothing" in error and "'batch', 'x.axis1'" in error, error


def test_assumed_sequence_stays_within_the_position_table(tmp_path: Path) -> None:
    """As for ONNX, a sequence is assumed no longer than the position-embedding table's rows (64 here)."""
    xml = save_ir(ONNX / "bert_scoped.onnx", tmp_path / "bert.xml")
    macs, said = _total_macs(xml, tmp_path)
    assert "batch=1, input_ids.axis1=64 assumed (--dim to change)" in said, said
    assert _total_macs(xml, tmp_path, "batch=3")[0] == 3 * macs


def test_free_dims_without_openvino_stay_unknown(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without openvino the inputs take the assumed values, the shapes after them stay unknown, a note says so."""
    from renderer.loaders.openvino import ov_shapes
    from renderer.loaders.registry import load_model

    xml = save_ir(free_onnx(tmp_path / "free.onnx"), tmp_path / "free.xml")
    monkeypatch.setattr(ov_shapes, "installed", lambda: False)
    model = load_model(xml)
    assert any("openvino is not installed" in note for note in model.notes), model.notes
    assert model.main.inputs[0].type.shape == (1, 128, 16)
    assert model.main.outputs[0].type.shape == (None, None, 8)


@pytest.mark.parametrize("which", ["ir", "exec_ir"])
def test_inputs_are_said_to_give_nothing(which: str, made: dict[str, Path], tmp_path: Path) -> None:
    """``--inputs`` cannot shape an OpenVINO graph (its dims do, through ``--dim``): the run says so instead of
    taking the file without a word, and the picture is the one drawn without it."""
    import numpy as np

    feeds = tmp_path / "feeds.npz"
    np.savez(feeds, x=np.zeros((1, 3, 8, 8), np.float32))
    given = run_cli("render", made[which], "--inputs", feeds, "-o", tmp_path / "given.svg")
    plain = run_cli("render", made[which], "-o", tmp_path / "plain.svg")
    assert given.returncode == 0 and plain.returncode == 0, given.stderr + plain.stderr
    assert f"{made[which]}: an OpenVINO graph's shapes come from its dims and --dim; --inputs and profiles give it " \
           "none" in given.stderr and "--inputs" not in plain.stderr
    assert (tmp_path / "given.svg").read_bytes() == (tmp_path / "plain.svg").read_bytes()
