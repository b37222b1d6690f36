"""Defaults that tell the truth: one stderr line says which input dims to pin when a shape metric colours the
boxes; a scale over one value fills the boxes with the map's low end and the legend says "all values 0"; the
Python API merges the model's own and sidecar annotations as the CLI does, and rendering leaves its inputs alone."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import onnx
import pytest
from onnx import TensorProto, helper

import renderer
from conftest import ONNX, first_fill, parse_svg, run_cli, svg_groups, tooltip_of
from renderer.colour.maps import Scale

SVG_TEXT = "{http://www.w3.org/2000/svg}text"
HEAT_LOW = "#fff7d6"  # first stop of colormaps/heat.json
HEAT_HIGH = "#662506"  # its last stop


# ---- say once what to pin -------------------------------------------------------------------------------------


def _dynamic_batch_cnn(tmp_path: Path) -> Path:
    """tiny_cnn with its batch dim renamed the way tf2onnx writes an unknown one (``unk__214``)."""
    model = onnx.load(ONNX / "tiny_cnn.onnx")
    model.graph.input[0].type.tensor_type.shape.dim[0].dim_param = "unk__214"
    del model.graph.value_info[:]
    for output in model.graph.output:
        output.type.tensor_type.shape.dim[0].dim_param = "unk__214"
    path = tmp_path / "dynamic_batch.onnx"
    onnx.save(model, path)
    return path


def _pin_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "--dim" in line]


@pytest.mark.parametrize("case", ["batch-sequence", "unk-batch"])
def test_colouring_by_a_shape_metric_says_once_which_dims_to_pin(case: str, tmp_path: Path) -> None:
    if case == "batch-sequence":
        model, flags, pinned = ONNX / "tiny_transformer.onnx", "--dim batch=N --dim seq=N", ["batch=1", "seq=8"]
    else:
        model, flags, pinned = _dynamic_batch_cnn(tmp_path), "--dim unk__214=N", ["unk__214=1"]
    run = run_cli("render", model, "--color-by", "macs", "--keep-free-dims", "-o", tmp_path / "free.svg")
    assert run.returncode == 0, run.stderr
    lines = _pin_lines(run.stderr)
    assert len(lines) == 1, run.stderr
    assert lines[0].endswith(f"add {flags}"), lines[0]
    assert "operators have no macs" in lines[0]
    pin_args = [arg for dim in pinned for arg in ("--dim", dim)]
    run = run_cli("render", model, "--color-by", "macs", *pin_args, "-o", tmp_path / "pinned.svg")
    assert run.returncode == 0 and _pin_lines(run.stderr) == [], run.stderr
    fills = {first_fill(g) for g in svg_groups(parse_svg(tmp_path / "pinned.svg"), "op").values()}
    assert "#e6e6e6" not in fills  # every box has its MACs


def test_a_box_without_its_colour_metric_says_n_a_once_and_keeps_the_reason_for_the_tooltip(tmp_path: Path) -> None:
    run = run_cli("render", _dynamic_batch_cnn(tmp_path), "--color-by", "macs", "--keep-free-dims", "-o",
                  tmp_path / "free.svg")
    assert run.returncode == 0, run.stderr
    boxes = svg_groups(parse_svg(tmp_path / "free.svg"), "op")
    uncounted = 0
    for group in boxes.values():
        texts = [t.text or "" for t in group.iter(SVG_TEXT)]
        rows = [t for t in texts if t.startswith("macs:")]
        assert len(rows) == 1, texts
        if first_fill(group) == "#e6e6e6":
            uncounted += 1
            assert not any("n/a (" in t for t in texts), texts  # the box says n/a, the tooltip says why
            assert "macs: n/a (" in tooltip_of(group)
    assert uncounted > 0


# ---- a scale over one value -----------------------------------------------------------------------------------


def _data_movement_model(tmp_path: Path) -> Path:
    """Transpose → Reshape → Identity: every operator has 0 MACs."""
    shape = helper.make_tensor("shape", TensorProto.INT64, [2], [4, 6])
    graph = helper.make_graph(
        [helper.make_node("Transpose", ["x"], ["t"], name="transpose", perm=[1, 0]),
         helper.make_node("Reshape", ["t", "shape"], ["r"], name="reshape"),
         helper.make_node("Identity", ["r"], ["y"], name="identity")], "moves",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [6, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 6])], [shape])
    path = tmp_path / "moves.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


@pytest.mark.parametrize("norm", ["linear", "quantile"])
def test_one_value_fills_the_low_end_and_the_legend_says_so(norm: str, tmp_path: Path) -> None:
    out = tmp_path / "moves.svg"
    run = run_cli("render", _data_movement_model(tmp_path), "--color-by", "macs", "--norm", norm, "-o", out)
    assert run.returncode == 0, run.stderr
    root = parse_svg(out)
    fills = [first_fill(g) for g in svg_groups(root, "op").values()]
    assert len(fills) == 3 and set(fills) == {HEAT_LOW}, fills  # was the map at 0.5, #f5841e
    legend = next(g for g in root.iter("{http://www.w3.org/2000/svg}g") if g.get("id") == "legend")
    texts = [(t.text or "").strip() for t in legend.iter(SVG_TEXT)]
    assert "all values 0" in texts, texts
    assert HEAT_HIGH not in {e.get("fill") for e in legend.iter()}  # no gradient bar the boxes do not use


def test_one_value_everywhere_ranks_nothing_in_the_summary_and_the_html_report(tmp_path: Path) -> None:
    summary, html = tmp_path / "moves.md", tmp_path / "moves.html"
    run = run_cli("render", _data_movement_model(tmp_path), "--color-by", "macs", "-o", summary, "-o", html)
    assert run.returncode == 0, run.stderr
    text = summary.read_text(encoding="utf-8")
    assert "All 3 operators with a value have 0: nothing to rank." in text, text
    assert "Top " not in text and "| # |" not in text  # no table of three zeros
    page = html.read_text(encoding="utf-8")
    assert '<ol class="hot' not in page and "Hot spots" not in page
    data = json.loads(page.split('<script type="application/json" id="report-data">', 1)[1].split("</script>", 1)[0])
    num = data["fields"].index("num")  # each operator a list of its fields (explore.packed)
    assert data["hot"] == [] and [op[num] for op in data["ops"]] == [0, 0, 0]


@pytest.mark.parametrize("norm", ["linear", "log", "quantile"])
def test_a_one_value_scale_sits_at_the_low_end(norm: str) -> None:
    scale = Scale.fit([5.0, 5.0, 5.0], norm=norm)
    assert scale.position(5.0) == 0.0
    assert scale.color(5.0) == HEAT_LOW
    assert scale.single_value() == 5.0
    assert Scale.fit([1.0, 5.0], norm=norm).single_value() is None


# ---- the Python API does what the CLI does --------------------------------------------------------------------


@pytest.fixture()
def embedded(tmp_path: Path) -> Path:
    """tiny_cnn with a latency for each of its 18 operators, written into the model by ``annograph embed``, and a
    sidecar beside it giving a note to one of them."""
    model = renderer.load_model(ONNX / "tiny_cnn.onnx")
    notes = tmp_path / "notes.json"
    notes.write_text(json.dumps({"operators": [{"id": n.name, "meta": {"latency_us": 10.0 + n.index}}
                                               for n in model.main.nodes]}), encoding="utf-8")
    out = tmp_path / "cnn.onnx"
    run = run_cli("embed", ONNX / "tiny_cnn.onnx", "-a", notes, "-o", out)
    assert run.returncode == 0, run.stderr
    (tmp_path / "cnn.onnx.annotations.yaml").write_text("operators:\n  stem/conv: {owner: kernels team}\n",
                                                        encoding="utf-8")
    return out


def test_load_annotations_merges_the_models_own_and_sidecars(embedded: Path) -> None:
    model = renderer.load_model(embedded)
    notes = renderer.load_annotations([], model)
    latencies = [e.values["latency_us"] for e in notes.ops.values() if "latency_us" in e.values]
    assert len(latencies) == 18
    conv = next(n for n in model.main.nodes if n.name == "stem/conv")
    assert notes.ops[conv.key].values["owner"] == "kernels team"
    assert notes.sidecars == [str(embedded.parent / "cnn.onnx.annotations.yaml")]
    alone = renderer.load_annotations([], model, sidecar=False, embedded=False)
    assert alone.ops == {} and alone.sidecars == []
    assert "owner" not in renderer.load_annotations([], model, sidecar=False).ops[conv.key].values


def test_rendering_leaves_the_callers_annotations_alone(embedded: Path) -> None:
    model = renderer.load_model(embedded)
    notes = renderer.load_annotations([], model)
    before = copy.deepcopy(notes)
    options = renderer.RenderOptions(color_by="macs", show=["params", "sparsity"])
    first = renderer.to_dot(model, notes, options)
    assert notes == before
    assert renderer.to_dot(model, notes, options) == first


@pytest.mark.parametrize("fmt", ["svg", "md"])
def test_the_api_and_the_cli_write_the_same_bytes(fmt: str, embedded: Path, tmp_path: Path) -> None:
    cli_out, api_out = tmp_path / f"cli.{fmt}", tmp_path / f"api.{fmt}"
    run = run_cli("render", embedded, "--color-by", "latency_us", "-o", cli_out)
    assert run.returncode == 0, run.stderr
    model = renderer.load_model(embedded)
    renderer.render(model, renderer.load_annotations([], model), renderer.RenderOptions(color_by="latency_us"),
                    output=api_out)
    assert api_out.read_bytes() == cli_out.read_bytes()
    # the sidecar was read: its value is in the picture; the summary lists no values, only the coverage line
    said = b"kernels team" if fmt == "svg" else b"cnn.onnx.annotations.yaml (generic): matched 1/1"
    assert said in api_out.read_bytes()
