"""A TensorRT engine's layer graph (``trtexec --exportLayerInfo``, TREx's published sample files in
``samples/tensorrt/``) as a model: every command on it, its profile's times on the right boxes, fused names
shortened, MACs by hand, bad files refused in one line."""

from __future__ import annotations

import csv
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from conftest import ROOT, one_line_error, run_cli

SAMPLES = ROOT / "samples" / "tensorrt"
MOBILENET = SAMPLES / "mobilenet.qat.onnx.engine.graph.json"
MOBILENET_PROFILE = SAMPLES / "mobilenet.qat.onnx.engine.profile.json"
RESNET = SAMPLES / "resnet50_tf_fp32.onnx.engine.graph.json"
RESNET_PROFILE = SAMPLES / "resnet50_tf_fp32.onnx.engine.profile.json"
SVG = "{http://www.w3.org/2000/svg}"
XLINK = "{http://www.w3.org/1999/xlink}"


def _render(tmp_path: Path, graph: Path, *args: str | Path) -> ET.Element:
    out = tmp_path / "engine.svg"
    run = run_cli("render", graph, "-o", out, "--collapse", "none", *args)
    assert run.returncode == 0, run.stderr
    return ET.parse(out).getroot()


def _boxes(root: ET.Element) -> dict[str, tuple[str, str]]:
    """op id → (the box's text, its tooltip)."""
    found: dict[str, tuple[str, str]] = {}
    for group in root.iter(f"{SVG}g"):
        ident = group.get("id", "")
        if ident.startswith("op-") and "op" in group.get("class", "").split():
            assert ident not in found, f"{ident} drawn twice"
            text = " ".join(" ".join("".join(t.itertext()) for t in group.iter(f"{SVG}text")).split())
            link = next(group.iter(f"{SVG}a"), None)
            tip = (link.get(f"{XLINK}title") or link.get("title") or "") if link is not None else ""
            found[ident] = (text, tip)
    return found


def _layers(path: Path) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))["Layers"]


@pytest.mark.parametrize("graph", [MOBILENET, RESNET], ids=["mobilenet-qat", "resnet50-fp32"])
def test_every_layer_drawn_once_with_the_bindings_as_ends(graph: Path, tmp_path: Path) -> None:
    from renderer.loaders.registry import load_model

    layers = _layers(graph)
    model = load_model(graph)
    assert model.format == "tensorrt" and [n.name for n in model.main.nodes] == [la["Name"] for la in layers]
    bindings = json.loads(graph.read_text(encoding="utf-8"))["Bindings"]
    assert [v.name for v in model.main.inputs] + [v.name for v in model.main.outputs] == bindings
    boxes = _boxes(_render(tmp_path, graph))
    assert sorted(boxes) == sorted(f"op-0-{i}" for i in range(len(layers)))
    ends = [g.get("class") for g in ET.parse(tmp_path / "engine.svg").getroot().iter(f"{SVG}g")
            if g.get("class") in ("node graph-input", "node graph-output")]
    assert sorted(ends) == ["node graph-input", "node graph-output"]


def test_fused_names_are_short_and_list_their_parts(tmp_path: Path) -> None:
    boxes = _boxes(_render(tmp_path, MOBILENET))
    text, tip = boxes["op-0-1"]  # features.0.0.weight + QuantizeLinear_8 + Conv_12 + PWN(Clip_16)
    assert "features.0.0.weight +3 fused" in text
    assert "QuantizeLinear_8 + Conv_12" not in text, "the full fused name belongs in the tooltip only"
    assert "name: features.0.0.weight + QuantizeLinear_8 + Conv_12 + PWN(Clip_16)" in tip
    assert "fused = features.0.0.weight, QuantizeLinear_8, Conv_12, Clip_16" in tip
    assert "LayerType = CaskConvolution" in tip and "precision = int8" in tip
    text, _ = boxes["op-0-0"]  # QuantizeLinear_2: one part, shown as it is
    assert "QuantizeLinear_2" in text and "fused" not in text


@pytest.mark.parametrize(("graph", "profile"), [(MOBILENET, MOBILENET_PROFILE), (RESNET, RESNET_PROFILE)],
                         ids=["mobilenet-qat", "resnet50-fp32"])
def test_profile_times_land_on_their_layers(graph: Path, profile: Path, tmp_path: Path) -> None:
    from renderer.annotations.registry import load_annotations
    from renderer.loaders.registry import load_model

    rows = json.loads(profile.read_text(encoding="utf-8"))[1:]
    model = load_model(graph)
    annotations = load_annotations(profile, model, embedded=False)
    index = {node.name: node.key for node in model.main.nodes}
    assert len(rows) == len(model.main.nodes)
    for row in rows:
        assert annotations.ops[index[row["name"]]].values["average_ms"] == pytest.approx(row["averageMs"])
        assert annotations.ops[index[row["name"]]].values["median_ms"] == pytest.approx(row["medianMs"])
    root = _render(tmp_path, graph, "-a", profile)
    boxes = _boxes(root)
    fills = {}
    for group in root.iter(f"{SVG}g"):
        if group.get("id", "").startswith("op-") and "op" in group.get("class", "").split():
            fills[group.get("id")] = [p.get("fill") for p in group.iter(f"{SVG}polygon")][0]
    slowest = max(rows, key=lambda r: r["averageMs"])
    fastest = min(rows, key=lambda r: r["averageMs"])
    slow_id = f"op-0-{index[slowest['name']][2]}"
    assert f"average_ms: {slowest['averageMs']:.4g}" in boxes[slow_id][0]
    assert fills[slow_id] != fills[f"op-0-{index[fastest['name']][2]}"], "coloured by average_ms by default"


def test_conv_macs_by_hand(tmp_path: Path) -> None:
    """Layer 1 of the mobilenet engine: a 3×3 convolution, 3 → 32 maps, stride 2, output 1×32×112×112, bias."""
    layer = _layers(MOBILENET)[1]
    assert layer["Kernel"] == [3, 3] and layer["OutMaps"] == 32 and layer["Groups"] == 1
    assert layer["Outputs"][0]["Dimensions"] == [1, 32, 112, 112] and layer["Weights"]["Count"] == 32 * 3 * 3 * 3
    outputs = 32 * 112 * 112
    depthwise = _layers(MOBILENET)[2]  # 3×3 depthwise over 32 maps: 9 weights per output
    assert depthwise["Groups"] == 32 and depthwise["Weights"]["Count"] == 32 * 9
    table = tmp_path / "metrics.csv"
    run = run_cli("metrics", MOBILENET, "-o", table)
    assert run.returncode == 0, run.stderr
    rows = {row["id"]: row for row in csv.DictReader(table.open(encoding="utf-8")) if row["kind"] == "operator"}
    assert int(rows["0:1"]["macs"]) == outputs * 27 + outputs
    assert int(rows["0:1"]["params"]) == 864 + 32
    assert int(rows["0:2"]["macs"]) == outputs * 9 + outputs
    assert rows["0:0"]["macs"] == "0"  # a Reformat moves data
    pooling = next(i for i, la in enumerate(_layers(MOBILENET)) if la.get("ParameterType") == "Pooling")
    window = _layers(MOBILENET)[pooling]["WindowSize"]
    out = _layers(MOBILENET)[pooling]["Outputs"][0]["Dimensions"]
    assert int(rows[f"0:{pooling}"]["macs"]) == out[0] * out[1] * out[2] * out[3] * window[0] * window[1]


def test_info_diff_batch_and_html(tmp_path: Path) -> None:
    info = run_cli("info", MOBILENET)
    assert info.returncode == 0 and "73 operators" in info.stdout, info.stderr
    diff = run_cli("diff", MOBILENET, RESNET, "-o", tmp_path / "diff.svg")
    assert diff.returncode == 0, diff.stderr
    batch = run_cli("batch", MOBILENET, "-a", MOBILENET_PROFILE, "-o", tmp_path / "batch")
    assert batch.returncode == 0, batch.stderr
    assert list((tmp_path / "batch").rglob("*.svg")) and (tmp_path / "batch" / "index.html").is_file()
    html = tmp_path / "engine.html"
    run = run_cli("render", MOBILENET, "-a", MOBILENET_PROFILE, "-o", html)
    assert run.returncode == 0, run.stderr
    assert "features.0.0.weight +3 fused" in html.read_text(encoding="utf-8")


@pytest.mark.parametrize("content", [b'{"Layers": [', b'{"Layers": 7}', b'{"Layers": [{"Name": 1}]}',
                                     b'{"Layers": [{"Name": "a", "Inputs": [{"Name": "x", "Dimensions": ["z"]}]}]}',
                                     b'{"Layers": [{"Name": "a", "Weights": {"Count": -1}}]}',
                                     b'{"Layers": [], "Bindings": NaN}'],
                         ids=["truncated", "not-a-list", "unnamed", "bad-dims", "bad-count", "nan"])
def test_bad_graph_json_is_one_line(content: bytes, tmp_path: Path) -> None:
    path = tmp_path / "bad.graph.json"
    path.write_bytes(content)
    line = one_line_error(run_cli("render", path, "-o", tmp_path / "out.svg"))
    assert str(path) in line and not (tmp_path / "out.svg").exists()
