"""OpenVINO's execution graph (a small ONNX model compiled on CPU by the real ``openvino`` with ``PERF_COUNT``,
``get_runtime_model()`` serialized) as a model of what ran: every primitive drawn once, coloured by its
execTimeMcs by default with the times equal to the file's, originalLayersNames in the box, MACs of the fused
convolution and fully connected layers by hand, every command, and the same times mapped onto the ONNX nodes."""

from __future__ import annotations

import csv
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from conftest import one_line_error, run_cli
from openvino_models import CONV, LINEAR, small_set, svg_boxes
from picture_checks import close

NOT_PRIMITIVES = ("Input", "Const", "Output")


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return small_set(tmp_path_factory.mktemp("openvino_exec"))


def _primitives(xml: Path) -> list[ET.Element]:
    return [la for la in ET.parse(xml).getroot().iterfind("layers/layer") if la.get("type") not in NOT_PRIMITIVES]


def _tip_value(tip: str, key: str) -> str | None:
    return next((line.split(": ", 1)[1] for line in tip.splitlines() if line.startswith(f"{key}: ")), None)


@pytest.mark.parametrize("which", ["exec", "exec_ir"])
def test_every_primitive_drawn_once_with_its_time(which: str, made: dict[str, Path], tmp_path: Path) -> None:
    from renderer.loaders.registry import load_model

    xml = made[which]
    primitives = _primitives(xml)
    model = load_model(xml)
    assert model.format == "openvino-exec" and [n.name for n in model.main.nodes] == [p.get("name") for p in primitives]
    svg = tmp_path / "exec.svg"
    run = run_cli("render", xml, "-o", svg, "--show-constants", "--collapse", "none")
    assert run.returncode == 0, run.stderr
    assert "colouring by exec_time_us" in run.stderr, run.stderr
    boxes = svg_boxes(svg)
    assert sorted(boxes) == sorted(p.get("name") for p in primitives)
    timed = {}
    for layer in primitives:
        data = layer.find("data").attrib
        text, tip, fill = boxes[layer.get("name")]
        assert f"primitiveType = {data['primitiveType']}" in tip and f"execTimeMcs: {data['execTimeMcs']}" in tip
        if data["originalLayersNames"]:
            assert f"originalLayersNames = {data['originalLayersNames']}" in tip
            assert f"originalLayersNames={data['originalLayersNames']}"[:40] in text
        if data["execTimeMcs"] == "not_executed":
            assert _tip_value(tip, "exec_status") == "not_executed" and _tip_value(tip, "exec_time_us") is None
        else:
            assert close(_tip_value(tip, "exec_time_us"), float(data["execTimeMcs"])), (tip, data["execTimeMcs"])
            timed[layer.get("name")] = (float(data["execTimeMcs"]), fill)
    assert len(timed) >= 6
    slowest, fastest = max(timed.values()), min(timed.values())
    assert slowest[0] == fastest[0] or slowest[1] != fastest[1], "coloured by execTimeMcs"


def test_fused_conv_and_fully_connected_macs_by_hand(made: dict[str, Path], tmp_path: Path) -> None:
    """The plugin fused each bias (and ReLU) into its layer: a primitive counts its ONNX layer's MACs."""
    from renderer.loaders.registry import load_model

    table = tmp_path / "exec.csv"
    run = run_cli("metrics", made["exec"], "-o", table)
    assert run.returncode == 0, run.stderr
    names = {f"0:{n.index}": (n.name, n.op_type) for n in load_model(made["exec"]).main.nodes}
    rows = {names[r["id"]]: r for r in csv.DictReader(table.open(encoding="utf-8")) if r["kind"] == "operator"}
    conv = next(r for (name, kind), r in rows.items() if kind == "Convolution" and "dw" not in name)
    outputs = 8 * 16 * 16
    assert int(conv["macs"]) == outputs * CONV[1] * CONV[2] * CONV[3] + outputs
    assert int(conv["params"]) == 8 * 27 + 8
    linear = next(r for (name, kind), r in rows.items() if kind == "FullyConnected" and name == "head/fc")
    assert int(linear["macs"]) == LINEAR[0] * LINEAR[1] + LINEAR[0] and int(linear["params"]) == 1290
    pools = [r for (_, kind), r in rows.items() if kind == "Pooling"]
    assert pools and all(r["macs"].startswith("n/a") for r in pools)  # the file states no window


def test_times_map_onto_the_onnx_nodes(made: dict[str, Path]) -> None:
    """The same file as an annotation source on the ONNX model it was compiled from: each primitive's time on
    the first node its originalLayersNames name (``openvino-exec-graph``)."""
    from renderer.annotations.registry import load_annotations
    from renderer.loaders.registry import load_model

    model = load_model(made["onnx"])
    index = {node.name: node.key for node in model.main.nodes}
    times = load_annotations(made["exec"], model, embedded=False).ops
    for layer in _primitives(made["exec"]):
        data = layer.find("data").attrib
        first = data["originalLayersNames"].split(",")[0].removesuffix("/WithoutBiases")
        if data["execTimeMcs"] != "not_executed" and first in index:
            assert times[index[first]].values["exec_time_us"] == float(data["execTimeMcs"])
    assert times[index["head/relu"]].values["time_on"] == "head/fc"  # fused into the fully connected layer


def test_info_diff_batch_and_html(made: dict[str, Path], tmp_path: Path) -> None:
    info = run_cli("info", made["exec"])
    assert info.returncode == 0 and "openvino-exec · execution graph v11" in info.stdout, info.stderr
    diff = run_cli("diff", made["exec"], made["exec_ir"], "-o", tmp_path / "diff.svg")
    assert diff.returncode == 0, diff.stderr
    batch = run_cli("batch", made["ir"], "-a", made["exec"], made["exec_ir"], "-o", tmp_path / "batch")
    assert batch.returncode == 0, batch.stderr
    assert len(list((tmp_path / "batch").rglob("*.svg"))) >= 2 and (tmp_path / "batch" / "index.html").is_file()
    html = tmp_path / "exec.html"
    run = run_cli("render", made["exec"], "-o", html)
    assert run.returncode == 0, run.stderr
    assert "brgemm" in html.read_text(encoding="utf-8") or "gemm" in html.read_text(encoding="utf-8")


@pytest.mark.parametrize(("edit", "expected"), [
    ('execTimeMcs="not_executed" originalLayersNames="x"', None),
    ("</edges> => ", "invalid XML"),
], ids=["input-untimed", "truncated"])
def test_bad_exec_graph_is_one_line(edit: str, expected: str | None, made: dict[str, Path], tmp_path: Path) -> None:
    text = made["exec"].read_text(encoding="utf-8")
    if expected is None:  # a primitive's time that is no number
        layer = _primitives(made["exec"])[0].get("name")
        start = text.index(f'name="{layer}"')
        cut = text.index('execTimeMcs="', start) + len('execTimeMcs="')
        text = text[:cut] + "NaN" + text[text.index('"', cut):]
        expected = "execTimeMcs 'NaN' is not a finite number"
    else:
        old, new = edit.split(" => ")
        text = text.replace(old, new, 1)
    xml = tmp_path / "bad.exec.xml"
    xml.write_text(text, encoding="utf-8")
    line = one_line_error(run_cli("render", xml, "-o", tmp_path / "out.svg"))
    assert expected in line and str(xml) in line, line
    assert not (tmp_path / "out.svg").exists()
