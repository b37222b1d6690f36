"""End to end: real models → annotated pictures, checked by parsing what comes out."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import renderer
from conftest import (
    ONNX,
    ROOT,
    SVG_NS,
    TFLITE,
    first_fill,
    one_line_error,
    parse_svg,
    run_cli,
    svg_groups,
    tooltip_of,
)
from renderer.colour.maps import contrast_ratio, get_cmap, text_color, to_hex
from renderer.picture.folding import fold

TINY_CNN = ONNX / "tiny_cnn.onnx"
FACE = TFLITE / "face_detection_short_range.tflite"
NABU = TFLITE / "okay_nabu.tflite"


def drawn_ops(model: renderer.core.ir.Model) -> list:  # type: ignore[name-defined]
    folding = fold(model)
    return [n for n in model.nodes() if folding.is_drawn(n)]


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


# -- one SVG node per operator, with its documented id ---------------------------------------------------------


@pytest.mark.parametrize("model_path", [TINY_CNN, ONNX / "control_flow.onnx", FACE, NABU], ids=lambda p: p.name)
def test_one_svg_group_per_operator_with_its_id(model_path: Path, tmp_path: Path) -> None:
    out = tmp_path / "m.svg"
    run = run_cli("render", model_path, "-o", out, "--no-sidecar")
    assert run.returncode == 0, run.stderr
    model = renderer.load_model(model_path)
    ops = svg_groups(parse_svg(out), "op")
    expected = {n.element_id for n in drawn_ops(model)}
    assert set(ops) == expected
    for node in drawn_ops(model):
        group = ops[node.element_id]
        assert f"cat-{node.category}" in group.get("class").split()
        texts = " ".join(t.text or "" for t in group.iter(f"{SVG_NS}text"))
        assert node.op_type in texts


def test_tensor_edges_carry_ids_and_tooltips(tmp_path: Path) -> None:
    out = tmp_path / "m.svg"
    assert run_cli("render", TINY_CNN, "-o", out, "--no-sidecar").returncode == 0
    model = renderer.load_model(TINY_CNN)
    edges = svg_groups(parse_svg(out), "tensor")
    conv_out = model.main.nodes[0].outputs[0]
    assert conv_out.element_id in edges
    assert conv_out.name in tooltip_of(edges[conv_out.element_id])


def test_subgraphs_are_clusters(tmp_path: Path) -> None:
    out = tmp_path / "cf.svg"
    assert run_cli("render", ONNX / "control_flow.onnx", "-o", out, "--no-sidecar").returncode == 0
    root = parse_svg(out)
    clusters = svg_groups(root, "cluster")
    model = renderer.load_model(ONNX / "control_flow.onnx")
    assert len(model.graphs) > 1
    assert {f"graph-{g.index}" for g in model.graphs[1:]} <= set(clusters)


# -- the heatmap ------------------------------------------------------------------------------------------------


def test_fills_follow_the_colour_map(tmp_path: Path) -> None:
    model = renderer.load_model(TINY_CNN)
    ops = drawn_ops(model)
    values = {n.name: float(i * 3 + 1) for i, n in enumerate(ops[:10])}
    operators = [{"id": k, "meta": {"latency_ms": v}} for k, v in values.items()]
    notes = write(tmp_path / "lat.json", json.dumps({"operators": operators}))
    out = tmp_path / "m.svg"
    run = run_cli("render", TINY_CNN, "-a", notes, "--color-by", "latency_ms", "--cmap", "viridis",
                  "--vmin", "0", "--vmax", "40", "-o", out, "--no-sidecar")
    assert run.returncode == 0, run.stderr
    groups = svg_groups(parse_svg(out), "op")
    from matplotlib import colormaps

    cmap = colormaps["viridis"]
    by_name = {n.name: n for n in ops}
    for name, value in values.items():
        expected = to_hex(cmap(value / 40))
        assert first_fill(groups[by_name[name].element_id]) == expected, name
    without = [n for n in ops if n.name not in values]
    assert without and all(first_fill(groups[n.element_id]) == "#e6e6e6" for n in without)


def test_own_colour_map_log_norm_and_centre() -> None:
    from renderer.colour.maps import Scale, own_colormaps

    heat = own_colormaps()["heat"]["colors"]
    scale = Scale.fit([1.0, 10.0, 100.0], cmap="heat", norm="log")
    assert scale.color(1.0) == heat[0]
    assert scale.color(100.0) == heat[-1]
    assert scale.position(10.0) == pytest.approx(0.5)
    centred = Scale.fit([-4.0, 0.0, 2.0], center=0.0)
    assert centred.cmap_name == "diverging"
    assert centred.position(0.0) == pytest.approx(0.5)
    assert centred.position(-4.0) == 0.0 and centred.position(2.0) == 1.0
    quantile = Scale.fit([1, 2, 3, 1000], norm="quantile")
    assert quantile.position(3) == pytest.approx(2 / 3)
    assert Scale.fit([5.0, 5.0]).position(5.0) == 0.0  # one value: the low end
    assert Scale.fit([1.0]).color(None) == "#e6e6e6"


@pytest.mark.parametrize("cmap", ["heat", "traffic", "ice", "diverging", "viridis", "coolwarm", "gray", "jet"])
def test_text_is_readable_on_every_fill(cmap: str) -> None:
    colors = get_cmap(cmap)
    for i in range(64):
        fill = to_hex(colors(i / 63))
        assert contrast_ratio(fill, text_color(fill)) >= 4.5, (cmap, fill)


def test_category_headers_are_readable() -> None:
    from renderer.colour.maps import category_colors

    for name, fill in category_colors().items():
        assert contrast_ratio(fill, text_color(fill)) >= 4.5, name


def test_style_overrides_win(tmp_path: Path) -> None:
    notes = write(tmp_path / "s.yaml", """
operators:
  - {id: "stem/conv", latency_ms: 3, style: {fillcolor: "#ff0000"}}
  - {id: "block1/add", latency_ms: 1}
tensors:
  - id: image
    meta: {bytes: 4096}
    style: {color: "#d62728", penwidth: 3}
""")
    out = tmp_path / "m.svg"
    run = run_cli("render", TINY_CNN, "-a", notes, "--color-by", "latency_ms", "-o", out, "--no-sidecar")
    assert run.returncode == 0, run.stderr
    root = parse_svg(out)
    model = renderer.load_model(TINY_CNN)
    conv = next(n for n in model.nodes() if n.name == "stem/conv")
    assert first_fill(svg_groups(root, "op")[conv.element_id]) == "#ff0000"
    image = next(v for v in model.values() if v.name == "image")
    edge = svg_groups(root, "tensor")[image.element_id]
    path = next(edge.iter(f"{SVG_NS}path"))
    assert path.get("stroke") == "#d62728"
    assert float(path.get("stroke-width")) == 3


def test_fillcolor_none_and_transparency_show_as_on_white(tmp_path: Path) -> None:
    """``fillcolor: none`` drew a black box (the alpha of #00000000 was cut off); a colour with alpha is mixed
    over the white page, ``none``/``transparent`` are white, and the text on them is black."""
    notes = write(tmp_path / "s.yaml", """
operators:
  - {id: 0, latency_ms: 3, style: {fillcolor: none}}
  - {id: 1, latency_ms: 1, style: {fillcolor: transparent, color: none}}
  - {id: 2, latency_ms: 2, style: {fillcolor: "#ff000080"}}
  - {id: 3, latency_ms: 2, style: {fillcolor: "#0000FFFF"}}
""")
    out = tmp_path / "m.svg"
    run = run_cli("render", TINY_CNN, "-a", notes, "--color-by", "latency_ms", "-o", out, "--no-sidecar")
    assert run.returncode == 0, run.stderr
    ops = svg_groups(parse_svg(out), "op")
    fills = [first_fill(ops[f"op-0-{i}"]) for i in range(4)]
    assert fills == ["#ffffff", "#ffffff", "#ff7f7f", "#0000ff"], fills
    model = renderer.load_model(TINY_CNN)
    for i in range(3):
        name = model.main.nodes[i].name
        inks = {t.get("fill") for t in ops[f"op-0-{i}"].iter(f"{SVG_NS}text") if t.text == name}
        assert inks == {"#000000"}, (i, name, inks)  # the name row, on the box's own fill


def test_edge_width_by_builtin_bytes(tmp_path: Path) -> None:
    out = tmp_path / "m.svg"
    assert run_cli("render", TINY_CNN, "--edge-by", "bytes", "-o", out, "--no-sidecar").returncode == 0
    widths = [float(p.get("stroke-width", 1)) for g in svg_groups(parse_svg(out), "tensor").values()
              for p in g.iter(f"{SVG_NS}path")]
    assert min(widths) < max(widths)


def test_tooltips_carry_meta_and_legend_is_present(tmp_path: Path) -> None:
    notes = write(tmp_path / "m.csv", "id,latency_ms,note\nstem/conv,4.5 ms,tiled x4\n3,1.25,\n")
    out = tmp_path / "m.svg"
    run = run_cli("render", TINY_CNN, "-a", notes, "--color-by", "latency_ms", "-o", out, "--no-sidecar")
    assert run.returncode == 0, run.stderr
    root = parse_svg(out)
    groups = svg_groups(root, "op")
    assert "note: tiled x4" in tooltip_of(groups["op-0-0"])
    assert "latency_ms: 4.5 ms" in tooltip_of(groups["op-0-0"])
    assert "latency_ms: 1.25" in tooltip_of(groups["op-0-3"])
    legend = next(g for g in root.iter(f"{SVG_NS}g") if g.get("id") == "legend")
    legend_text = " ".join(t.text or "" for t in legend.iter(f"{SVG_NS}text"))
    assert "latency_ms (ms)" in legend_text
    assert "n/a" in legend_text
    fills = [p.get("fill") for p in legend.iter(f"{SVG_NS}polygon")]
    assert get_cmap("heat") and to_hex(get_cmap("heat")(0.0)) in fills and to_hex(get_cmap("heat")(1.0)) in fills


def test_graph_title_and_meta(tmp_path: Path) -> None:
    notes = write(tmp_path / "g.json", json.dumps({"graph": {"title": "CNN on NPU X", "meta": {"Device": "NPU-X"}}}))
    out = tmp_path / "m.svg"
    assert run_cli("render", TINY_CNN, "-a", notes, "-o", out, "--no-sidecar").returncode == 0
    text = " ".join(t.text or "" for t in parse_svg(out).iter(f"{SVG_NS}text"))
    assert "CNN on NPU X" in text and "NPU-X" in text


# -- annotation syntaxes mean the same ------------------------------------------------------------------------


def test_json_yaml_csv_and_netron_text_agree(tmp_path: Path) -> None:
    model = renderer.load_model(TINY_CNN)
    files = [
        write(tmp_path / "a.yaml", "operators:\n  - id: 4\n    meta: {latency_ms: 13.0, note: x}\n"
              "    style: {fillcolor: '#ff0000'}\ntensors:\n  - {id: image, meta: {bytes: 4096}}\n"),
        write(tmp_path / "a.json", json.dumps({"operators": {"4": {"meta": {"latency_ms": 13.0, "note": "x"},
                                                                   "style": {"fillcolor": "#ff0000"}}},
                                               "tensors": {"image": {"bytes": 4096}}})),
        write(tmp_path / "a.csv", "id,kind,latency_ms,note,style.fillcolor,bytes\n4,operator,13.0,x,#ff0000,\n"
              "image,tensor,,,,4096\n"),
        write(tmp_path / "a.txt", "operator_id: 4\noperator_meta: \"latency_ms: 13.0; note: x\"\n"
              "operator_style: \"fillcolor: 0xFF0000;\"\ntensor_id: image\ntensor_meta: \"bytes: 4096\"\n"),
    ]
    results = []
    for path in files:
        notes = renderer.load_annotations(path, model)
        op = notes.ops[("op", 0, 4)]
        tensor = notes.tensors[next(v.key for v in model.values() if v.name == "image")]
        results.append((float(op.values["latency_ms"]), op.values["note"], op.style, float(tensor.values["bytes"])))
    assert all(r == results[0] for r in results), results
    assert results[0] == (13.0, "x", {"fillcolor": "#ff0000"}, 4096.0)


def test_ids_by_name_output_tensor_and_index() -> None:
    model = renderer.load_model(ONNX / "unnamed_nodes.onnx")
    from renderer.core.id_rules import IdIndex, Unresolved

    index = IdIndex.build(model)
    node = next(n for n in model.main.nodes if n.op_type != "Constant")
    assert index.operator(node.outputs[0].name) == node.key
    assert index.operator(str(node.index)) == node.key
    assert index.operator(f"0:{node.index}") == node.key
    with pytest.raises(Unresolved):
        index.operator("0:9999")
    control = renderer.load_model(ONNX / "control_flow.onnx")
    sub = control.graphs[1]
    assert IdIndex.build(control).operator("1:0") == sub.nodes[0].key


@pytest.mark.parametrize("ident", ["\u0661", "\uff11", "0:\uff11", "\u00b2", "\u0661:0", "9" * 5000, "0:" + "9" * 30])
def test_ids_are_ascii_digits_only(ident: str) -> None:
    """Unicode digits are names, never indices: re's \\d read "١" and "１" as operator 1, and "²" (which passes
    isdigit but not int) or 5000 digits raised inside the reader."""
    from renderer.core.id_rules import IdIndex, Unresolved, whole_number

    index = IdIndex.build(renderer.load_model(TINY_CNN))
    with pytest.raises(Unresolved):
        index.operator(ident)
    with pytest.raises(Unresolved):
        index.tensor(ident)
    assert whole_number(ident) is None
    numbers = (whole_number("12"), whole_number(" 7 "), whole_number("-3"), whole_number("-3", signed=True))
    assert numbers == (12, 7, None, -3)


def test_unicode_digit_ids_are_reported_unmatched(tmp_path: Path) -> None:
    notes = write(tmp_path / "u.yaml", "operators:\n  - {id: \u0661, x: 1}\n  - {id: '\uff11', x: 2}\n"
                  "  - {id: 1, x: 3}\n")
    run = run_cli("render", TINY_CNN, "-a", notes, "-o", tmp_path / "m.svg", "--no-sidecar")
    assert run.returncode == 0, run.stderr
    assert "matched 1/3 operators; 2 ids unmatched: \u0661; \uff11" in run.stderr


def test_numbers_too_large_for_a_float_are_text(tmp_path: Path) -> None:
    """An integer of 400 digits in JSON, YAML, embedded annotations (like 1e400 or 1.7e308: no colour scale can
    hold it) is shown as text and kept off the scale, without a numpy warning."""
    big = "9" * 400
    files = [write(tmp_path / "big.json", '{"operators": [{"id": 0, "latency_ms": %s}, {"id": 1, "latency_ms": 2},'
                   ' {"id": 2, "latency_ms": 3}]}' % big),
             write(tmp_path / "big.yaml", f"operators:\n  - {{id: 3, x_ms: {big}}}\n  - {{id: 4, x_ms: 1.7e308}}\n"
                   "  - {id: 5, x_ms: -1.7e308}\n  - {id: 6, x_ms: .inf}\n  - {id: 7, x_ms: .nan}\n"
                   "  - {id: 8, x_ms: 1}\n  - {id: 9, x_ms: 4}\n")]
    out = tmp_path / "m.svg"
    for color in ("latency_ms", "x_ms"):
        run = run_cli("render", TINY_CNN, *[a for f in files for a in ("-a", f)], "--color-by", color, "-o", out,
                      "--show", "all", "--no-sidecar", env={"PYTHONWARNINGS": "error"})
        assert run.returncode == 0 and "Warning" not in run.stderr, run.stderr
        root = parse_svg(out)
        groups = svg_groups(root, "op")
        tips = {key: tooltip_of(g) for key, g in groups.items()}
        assert "9.99e+399" in tips["op-0-0"] and "latency_ms: 2" in tips["op-0-1"]
        assert "1.7e308" in tips["op-0-4"] and "-1.7e308" in tips["op-0-5"] and "inf" in tips["op-0-6"]
        fills = {key: first_fill(g) for key, g in groups.items()}
        drawn = ("op-0-1", "op-0-2") if color == "latency_ms" else ("op-0-8", "op-0-9")
        off_scale = ("op-0-0",) if color == "latency_ms" else ("op-0-3", "op-0-4", "op-0-5", "op-0-6", "op-0-7")
        assert fills[drawn[0]] != fills[drawn[1]]  # the finite values span the whole map
        assert len({fills[k] for k in off_scale}) == 1 and fills[off_scale[0]] not in {fills[k] for k in drawn}


@pytest.mark.parametrize("option", ["vmin", "vmax", "center"])
@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf"), 1.7e308])
def test_non_finite_scale_options_are_refused_by_the_api(option: str, value: float) -> None:
    """The CLI refuses them in argparse; RenderOptions from Python reach Scale.fit, which says the same."""
    from renderer.colour.maps import Scale
    from renderer.core.errors import MetricError

    with pytest.raises(MetricError, match=f"--{option} .* is not a finite number"):
        Scale.fit([1.0, 2.0], **{option: value})


def test_coverage_counts_operators_and_tensors_apart(tmp_path: Path) -> None:
    """1 operator and 3 unknown tensor ids is 1/1 operators and 0/3 tensors (it said "matched 1/4 operators")."""
    notes = write(tmp_path / "c.yaml", "operators:\n  - {id: stem/conv, x: 1}\ntensors:\n  - {id: nope1, x: 1}\n"
                  "  - {id: nope2, x: 2}\n  - {id: nope3, x: 3}\n  - {id: image, x: 4}\n")
    run = run_cli("render", TINY_CNN, "-a", notes, "-o", tmp_path / "m.svg", "--no-sidecar")
    assert run.returncode == 0, run.stderr
    assert "matched 1/1 operators, 1/4 tensors; 3 ids unmatched: nope1; nope2; nope3" in run.stderr, run.stderr


def test_ambiguous_id_says_where_not_did_you_mean(tmp_path: Path) -> None:
    """An id naming two operators is reported with its matches; it used to print "dup (did you mean dup?)"."""
    import onnx
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["a"], name="dup"), helper.make_node("Neg", ["a"], ["y"], name="dup")],
        "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
    )
    model = tmp_path / "dup.onnx"
    onnx.save(helper.make_model(graph), model)
    notes = write(tmp_path / "d.yaml", "operators:\n  - {id: dup, x: 1}\n  - {id: 0:1, x: 2}\n")
    run = run_cli("render", model, "-a", notes, "-o", tmp_path / "m.svg", "--no-sidecar")
    assert run.returncode == 0, run.stderr
    assert "matched 1/2 operators; 1 ids unmatched: dup (ambiguous, 2 matches: 0:0, 0:1)" in run.stderr, run.stderr
    assert "did you mean" not in run.stderr


def test_name_wins_over_index(tmp_path: Path) -> None:
    import onnx
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["a"], name="1"), helper.make_node("Neg", ["a"], ["y"], name="first")],
        "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
    )
    path = tmp_path / "n.onnx"
    onnx.save(helper.make_model(graph), path)
    from renderer.core.id_rules import IdIndex

    index = IdIndex.build(renderer.load_model(path))
    assert index.operator("1") == ("op", 0, 0)  # the node named "1", not operator 1
    assert index.operator("0:1") == ("op", 0, 1)


def test_unmatched_ids_are_reported_with_suggestions(tmp_path: Path) -> None:
    notes = write(tmp_path / "u.yaml", "operators:\n  - {id: stem/conv, x: 1}\n  - {id: stem/conf, x: 2}\n"
                  "  - {id: '0:999', x: 3}\n")
    out = tmp_path / "m.svg"
    run = run_cli("render", TINY_CNN, "-a", notes, "-o", out, "--no-sidecar")
    assert run.returncode == 0
    assert "matched 1/3 operators" in run.stderr
    assert "stem/conf (did you mean stem/conv" in run.stderr
    strict = run_cli("render", TINY_CNN, "-a", notes, "-o", tmp_path / "s.svg", "--strict", "--no-sidecar")
    line = one_line_error(strict)
    assert f"{notes}:3" in line and "stem/conf" in line
    assert not (tmp_path / "s.svg").exists()


def test_tflite_ids_and_annotations(tmp_path: Path) -> None:
    model = renderer.load_model(FACE)
    conv = next(n for n in model.main.nodes if n.op_type == "CONV_2D")
    out_name = conv.outputs[0].name
    notes = write(tmp_path / "t.csv", f"id,latency_us\n{conv.index},120\n\"{out_name}\",130\n")
    result = renderer.load_annotations(notes, model)
    assert result.ops[conv.key].values["latency_us"] == "130"
    out = tmp_path / "f.svg"
    assert run_cli("render", FACE, "-a", notes, "--color-by", "latency_us", "-o", out).returncode == 0
    assert "latency_us: 130" in tooltip_of(svg_groups(parse_svg(out), "op")[conv.element_id])


# -- every output format is a real file --------------------------------------------------------------------------


def test_every_output_format(tmp_path: Path) -> None:
    outs = [tmp_path / f"m.{ext}" for ext in ("svg", "pdf", "png", "dot", "html", "md")]
    args = [a for o in outs for a in ("-o", o)]
    run = run_cli("render", TINY_CNN, "--color-by", "macs", *args, "--no-sidecar")
    assert run.returncode == 0, run.stderr
    assert outs[1].read_bytes().startswith(b"%PDF-")
    if shutil.which("pdfinfo"):
        info = subprocess.run(["pdfinfo", str(outs[1])], capture_output=True, text=True, check=True).stdout
        assert re.search(r"^Pages:\s+1$", info, re.M), info
        assert "1980" in info  # the fixed creation date
    png = outs[2].read_bytes()
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    width, height = int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")
    assert width > 200 and height > 200
    dot = outs[3].read_text()
    assert dot.startswith("digraph") and 'id="op-0-0"' in dot
    rendered = subprocess.run(["dot", "-Tsvg"], input=dot, capture_output=True, text=True)
    assert rendered.returncode == 0 and not rendered.stderr
    from html.parser import HTMLParser

    from payloads import check_html

    page = outs[4].read_text()
    HTMLParser().feed(page)
    assert "<svg" in page and "id=\"op-0-0\"" in page  # the report writes its pages anew (reports/page_svg.py)
    check_html(outs[4].read_bytes())  # no script but our own, allowed by its hash
    md = outs[5].read_text()
    assert md.startswith("### `tiny_cnn.onnx`") and "| 1 | `stem/conv` | `Conv` |" in md  # the PR summary


def test_python_api(tmp_path: Path) -> None:
    model = renderer.load_model(TINY_CNN)
    notes = renderer.load_annotations(write(tmp_path / "a.yaml", "operators: {'stem/conv': {latency_ms: 2}}\n"), model)
    out = tmp_path / "api.svg"
    data = renderer.render(model, notes, renderer.RenderOptions(color_by="latency_ms"), output=out)
    assert out.read_bytes() == data
    assert 'id="op&#45;0&#45;0"' in data.decode()
    assert renderer.to_dot(model).startswith("digraph")


def test_show_constants_draws_them(tmp_path: Path) -> None:
    folded = renderer.to_dot(renderer.load_model(ONNX / "unnamed_nodes.onnx"))
    shown = renderer.to_dot(renderer.load_model(ONNX / "unnamed_nodes.onnx"),
                            options=renderer.RenderOptions(show_constants=True))
    assert "cat-data" not in folded and "cat-data" in shown  # the Constant nodes holding the weights
    cnn = renderer.to_dot(renderer.load_model(TINY_CNN), options=renderer.RenderOptions(show_constants=True))
    assert 'id="const-0-1"' in cnn  # an initializer as its own node


def test_float16_weights_fold_into_their_consumers(tmp_path: Path) -> None:
    """face_detection stores its weights as float16 behind 74 DEQUANTIZE ops: each is drawn inside the
    operator that reads it (``float16→float32``), unless constants are shown; colours fit the drawn boxes."""
    model = renderer.load_model(FACE)
    widening = [n for n in model.main.nodes if n.op_type == "DEQUANTIZE"]
    assert len(widening) == 74
    assert all(fold(model).is_hidden(n) and not fold(model, True).is_hidden(n) for n in widening)
    out = tmp_path / "face.svg"
    run = run_cli("render", FACE, "-o", out, "--no-sidecar", "--color-by", "macs")
    assert run.returncode == 0, run.stderr
    ops = svg_groups(parse_svg(out), "op")
    assert len(ops) == 164 - 74 and not {n.element_id for n in widening} & set(ops)
    conv = next(n for n in model.main.nodes if n.op_type == "CONV_2D")
    filter_shape = "×".join(map(str, conv.inputs[1].producer.inputs[0].type.shape))
    texts = " ".join(t.text or "" for t in ops[conv.element_id].iter(f"{SVG_NS}text"))
    assert f"filter [{filter_shape}] float16→float32" in texts
    from renderer.compose.rendering import prepare

    scene = prepare(model, None, renderer.RenderOptions(color_by="macs"))
    assert scene.heatmap is not None and not {n.key for n in widening} & set(scene.heatmap.values)
    legend_group = next(g for g in parse_svg(out).iter(f"{SVG_NS}g") if g.get("id") == "legend")
    legend = " ".join(t.text or "" for t in legend_group.iter(f"{SVG_NS}text"))
    assert "164 (74 folded into the boxes that read them)" in legend

    # annotations of a folded op stay visible, in the tooltip of the box it is drawn in
    profile = ROOT / "tests/fixtures/tflite_benchmark/face_detection.benchmark_model.cpu.txt"
    annotated = tmp_path / "annotated.svg"
    assert run_cli("render", FACE, "-a", profile, "-o", annotated, "--no-sidecar").returncode == 0
    widen = conv.inputs[1].producer
    drawn = {}  # the annotated picture may be drawn as pages (its labels are longer): the box is on one of them
    for picture in [annotated, *sorted(annotated.parent.glob(f"{annotated.name}.pages/*.svg"))]:
        drawn.update(svg_groups(parse_svg(picture), "op"))
    tooltip = tooltip_of(drawn[conv.element_id])
    assert f"folded DEQUANTIZE {widen.graph.index}:{widen.index}: " in tooltip and "latency_us" in tooltip

    shown = tmp_path / "shown.svg"
    assert run_cli("render", FACE, "-o", shown, "--no-sidecar", "--show-constants").returncode == 0
    assert len(svg_groups(parse_svg(shown), "op")) == 164


# -- bad input: one line, non-zero exit, no output left ---------------------------------------------------------


def test_missing_model(tmp_path: Path) -> None:
    line = one_line_error(run_cli("render", tmp_path / "nope.onnx", "-o", tmp_path / "x.svg"))
    assert "nope.onnx: no such file" in line
    assert not (tmp_path / "x.svg").exists()


def test_unknown_format_by_magic_bytes(tmp_path: Path) -> None:
    fake = tmp_path / "model.onnx.txt"
    fake.write_bytes(b"GIF89a not a model at all")
    line = one_line_error(run_cli("info", fake))
    assert "unknown model format" in line and str(fake) in line
    disguised = tmp_path / "image.onnx"
    disguised.write_bytes(b"\x89PNG\r\n\x1a\n" + b"\x00" * 64)
    assert str(disguised) in one_line_error(run_cli("info", disguised))


def test_tflite_detected_by_content_not_extension(tmp_path: Path) -> None:
    renamed = tmp_path / "model.bin"
    shutil.copy(NABU, renamed)
    assert renderer.load_model(renamed).format == "tflite"
    onnx_renamed = tmp_path / "other.bin"
    shutil.copy(TINY_CNN, onnx_renamed)
    assert renderer.load_model(onnx_renamed).format == "onnx"


@pytest.mark.parametrize("source", [TINY_CNN, FACE], ids=lambda p: p.suffix)
def test_truncated_model(source: Path, tmp_path: Path) -> None:
    broken = tmp_path / f"broken{source.suffix}"
    broken.write_bytes(source.read_bytes()[: len(source.read_bytes()) // 3])
    line = one_line_error(run_cli("render", broken, "-o", tmp_path / "x.svg"))
    assert str(broken) in line
    assert not (tmp_path / "x.svg").exists()


@pytest.mark.parametrize("name,text,where", [
    ("bad.yaml", "operators:\n  - id: 1\n    meta: {a: 1\n", ":4"),
    ("bad.json", '{"operators": [\n {"id": 1,}\n]}', ":2"),
    ("bad.csv", "name,value\nx,1\n", ":1"),
    ("bad2.csv", "id,a\n1,2\n3,4,5\n", ":3"),
    ("bad.txt", "operator_id: 1\noperator_meta: no pairs here\n", ":2"),
    ("badstyle.yaml", "operators:\n  - id: 1\n    style: {fillcolor: 'javascript:alert(1)'}\n", ":2"),
])
def test_annotation_syntax_errors_name_file_and_line(name: str, text: str, where: str, tmp_path: Path) -> None:
    notes = write(tmp_path / name, text)
    line = one_line_error(run_cli("render", TINY_CNN, "-a", notes, "-o", tmp_path / "x.svg", "--no-sidecar"))
    assert f"{notes}{where}" in line, line
    assert not (tmp_path / "x.svg").exists()


def test_unknown_metric_lists_known_ones(tmp_path: Path) -> None:
    notes = write(tmp_path / "a.yaml", "operators:\n  - {id: 0, latency_ms: 1}\n")
    line = one_line_error(run_cli("render", TINY_CNN, "-a", notes, "--color-by", "latency", "-o", tmp_path / "x.svg",
                                  "--no-sidecar"))
    assert "latency_ms" in line and "unknown operator metric 'latency'" in line


def test_missing_dot_program(tmp_path: Path) -> None:
    import sys

    out = tmp_path / "x.svg"
    out.write_text("precious")
    run = run_cli("render", TINY_CNN, "-o", out, "--no-sidecar",
                  env={"PATH": str(Path(sys.executable).parent) + "/nowhere"})
    line = one_line_error(run)
    assert "'dot' was not found" in line and "apt-get install graphviz" in line
    assert out.read_text() == "precious"


def test_help_is_instant_and_imports_nothing_heavy() -> None:
    import sys

    code = ("import sys, renderer.commands.cli as c\n"
            "try:\n    c.main(['--help'])\nexcept SystemExit:\n    pass\n"
            "heavy = [m for m in ('onnx', 'numpy', 'matplotlib', 'tflite', 'jinja2', 'graphviz') if m in sys.modules]\n"
            "print('HEAVY', heavy)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT)
    assert "HEAVY []" in done.stdout, done.stdout + done.stderr


def test_source_gradient_and_thresholds_colour_when_no_cmap_is_given() -> None:
    from renderer.colour.maps import Scale

    graded = Scale.fit([0.0, 10.0], stops=[(0.0, "#000000"), (1.0, "#ffffff")])
    assert graded.color(0.0) == "#000000" and graded.color(10.0) == "#ffffff"
    assert graded.color(5.0) in ("#7f7f7f", "#808080")
    stepped = Scale.fit([1.0, 5.0, 50.0], thresholds=[(2.0, "#00ff00"), (10.0, "#ff0000")])
    assert [stepped.color(v) for v in (1.0, 5.0, 50.0)] == ["#00ff00", "#ff0000", "#e6e6e6"]
    assert stepped.ticks() == [2.0, 10.0]


def test_onnx_value_metadata_props_become_tensor_annotations(tmp_path: Path) -> None:
    import onnx
    from onnx import TensorProto, helper

    out_info = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])
    entry = out_info.metadata_props.add()
    entry.key, entry.value = "arena offset", "0x400"
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="r")], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])], [out_info])
    path = tmp_path / "vm.onnx"
    onnx.save(helper.make_model(graph), path)
    svg = tmp_path / "vm.svg"
    assert run_cli("render", path, "-o", svg).returncode == 0
    model = renderer.load_model(path)
    y = next(v for v in model.values() if v.name == "y")
    assert y.metadata == {"arena offset": "0x400"}
    edge = svg_groups(parse_svg(svg), "tensor")[y.element_id]
    assert "arena offset: 0x400" in tooltip_of(edge)


def test_a_metric_with_no_numbers_says_why(tmp_path: Path) -> None:
    """A known metric without a number anywhere draws every box n/a and says why in one line (exit 0)."""
    svg = tmp_path / "x.svg"
    run = run_cli("render", TINY_CNN, "--color-by", "weight_max", "--max-tensor-elements", "1", "-o", svg,
                  "--no-sidecar")
    assert run.returncode == 0, run.stderr
    lines = [line for line in run.stderr.splitlines() if "weight_max" in line]
    assert len(lines) == 1 and "'weight_max' has no numeric value" in lines[0] and "skipped" in lines[0]
    assert "every box is drawn n/a" in lines[0]
    boxes = svg_groups(parse_svg(svg), "op")
    assert boxes and len({first_fill(group) for group in boxes.values()}) == 1  # one n/a fill for all


def test_operators_without_a_formula_are_named_in_one_line(tmp_path: Path) -> None:
    """--color-by macs with custom ops among counted ones: the boxes are n/a and one line names why, so the hottest
    coloured box is not mistaken for the costliest operator."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    weight = numpy_helper.from_array(np.ones((8, 8), np.float32), "w")
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"], name="mm"),
             helper.make_node("Fancy", ["h"], ["g"], name="f1", domain="vendor.ops"),
             helper.make_node("Fancy", ["g"], ["k"], name="f2", domain="vendor.ops"),
             helper.make_node("Relu", ["k"], ["y"], name="relu")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8])], [weight],
                              value_info=[helper.make_tensor_value_info(n, TensorProto.FLOAT, [2, 8]) for n in "hgk"])
    path = tmp_path / "custom.onnx"
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid("vendor.ops", 1)]
    onnx.save(helper.make_model(graph, opset_imports=opsets), path)
    svg = tmp_path / "custom.svg"
    run = run_cli("render", path, "--color-by", "macs", "-o", svg, "--no-sidecar")
    assert run.returncode == 0, run.stderr
    lines = [line for line in run.stderr.splitlines() if "drawn n/a" in line]
    assert lines == ["annograph: --color-by macs: 2 operators drawn n/a (custom op vendor.ops.Fancy ×2); the hottest "
                     "boxes are of the operators that have a value"], run.stderr
    default = run_cli("render", path, "-o", svg, "--no-sidecar")  # the default colour says nothing of it
    assert default.returncode == 0 and "drawn n/a" not in default.stderr, default.stderr
