"""With no --color-by, a single numeric metric in the annotations colours the boxes, or else the main metric
of the tool that wrote them (an ORT profile's latency_us), and stderr says so."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import FIXTURES, ONNX, SAMPLES, SVG_NS, first_fill, parse_svg, run_cli, svg_groups
from picture_checks import PROFILE, TINY_CNN, profile_latencies, viridis_hex


def fills(svg: Path) -> set[str | None]:
    return {first_fill(g) for g in svg_groups(parse_svg(svg), "op").values()}


def test_single_metric_colours_without_color_by(tmp_path: Path) -> None:
    svg = tmp_path / "a.svg"
    run = run_cli("render", ONNX / "tiny_cnn.onnx", "-a", SAMPLES / "annotations" / "tiny_cnn.latency.yaml", "-o", svg)
    assert run.returncode == 0, run.stderr
    assert "colouring by latency_us" in run.stderr
    explicit = tmp_path / "b.svg"
    run = run_cli("render", ONNX / "tiny_cnn.onnx", "-a", SAMPLES / "annotations" / "tiny_cnn.latency.yaml",
                  "--color-by", "latency_us", "-o", explicit)
    assert "colouring by" not in run.stderr
    assert svg.read_bytes() == explicit.read_bytes()
    assert len(fills(svg)) > 5


def test_several_metrics_and_no_main_one_leave_boxes_plain_and_say_so(tmp_path: Path) -> None:
    two = tmp_path / "two.csv"
    two.write_text("id,latency_us,error\nstem/conv,3,0.5\nstem/bn,4,0.25\n")
    svg = tmp_path / "two.svg"
    run = run_cli("render", ONNX / "tiny_cnn.onnx", "-a", two, "-o", svg)
    assert run.returncode == 0, run.stderr
    assert "colouring by" not in run.stderr
    assert ("no default colour metric, the annotations bring several metrics and no tool declares one its main: "
            "error, latency_us; choose one with --color-by") in run.stderr
    assert fills(svg) == {"#ffffff"}


# ---- no numeric metric in the annotations: the built-in heat ---------------------------------------------------

def hand_macs(model_path: Path) -> dict[str, int]:
    """Conv and Gemm MACs of an ONNX model, from its weights and inferred output shapes (not annograph's)."""
    import math

    import onnx

    model = onnx.shape_inference.infer_shapes(onnx.load(model_path))
    shapes = {v.name: [d.dim_value for d in v.type.tensor_type.shape.dim]
              for v in [*model.graph.value_info, *model.graph.output]}
    weights = {t.name: list(t.dims) for t in model.graph.initializer}
    macs = {}
    for node in model.graph.node:
        if node.op_type == "Conv":
            kernel = weights[node.input[1]]
            out = shapes[node.output[0]]
            macs[node.name] = math.prod(out) * math.prod(kernel[1:]) + (math.prod(out) if len(node.input) > 2 else 0)
        elif node.op_type == "Gemm":
            k, n = weights[node.input[1]][::-1] if any(a.name == "transB" and a.i for a in node.attribute) \
                else weights[node.input[1]]
            macs[node.name] = shapes[node.output[0]][0] * k * n + shapes[node.output[0]][0] * n
    return macs


def luminance(colour: str) -> float:
    r, g, b = (int(colour[i:i + 2], 16) / 255 for i in (1, 3, 5))
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def test_no_metric_in_the_annotations_colours_by_builtin_macs(tmp_path: Path) -> None:
    svg, explicit, text = tmp_path / "a.svg", tmp_path / "b.svg", tmp_path / "text.csv"
    run = run_cli("render", TINY_CNN, "-o", svg)
    assert run.returncode == 0 and run.stderr == "", run.stderr  # routine: the legend says it, -v too
    verbose = run_cli("render", TINY_CNN, "-v", "-o", tmp_path / "v.svg")
    assert ("annograph: colouring by macs, built in, known for 5 of 5 drawn layer and attention operators; "
            "--color-by to choose "
            "another, --color-by none for plain boxes") in verbose.stderr.splitlines()
    assert run_cli("render", TINY_CNN, "--color-by", "macs", "-o", explicit).returncode == 0
    assert svg.read_bytes() == explicit.read_bytes()
    assert "macs" in legend_text(svg) and "built in" in legend_text(svg)
    expected = hand_macs(TINY_CNN)
    assert len(expected) == 5  # four Conv and one Gemm
    drawn = box_fills(svg)
    ranked = sorted(expected, key=expected.get)
    assert [luminance(drawn[name]) for name in ranked] == sorted((luminance(drawn[n]) for n in ranked), reverse=True)
    assert drawn[ranked[-1]] != drawn[ranked[0]]
    text.write_text("id,note\nstem/conv,tiled\n")  # annotations without a number colour by the built-in too
    run = run_cli("render", TINY_CNN, "-a", text, "-v", "-o", tmp_path / "text.svg")
    assert run.returncode == 0 and "colouring by macs, built in" in run.stderr, run.stderr


def test_color_by_none_draws_plain_boxes_and_says_nothing(tmp_path: Path) -> None:
    svg = tmp_path / "plain.svg"
    run = run_cli("render", TINY_CNN, "-a", PROFILE, "--color-by", "none", "-o", svg)
    assert run.returncode == 0 and "colouring by" not in run.stderr, run.stderr
    assert fills(svg) == {"#ffffff"}
    assert "box fill" not in legend_text(svg)


def test_mostly_unknown_macs_colour_by_weight_bytes(tmp_path: Path) -> None:
    """bert_scoped's batch and sequence dims kept free: most MACs are unknown, weights are not."""
    svg = tmp_path / "bert.svg"
    run = run_cli("render", ONNX / "bert_scoped.onnx", "--collapse", "none", "--keep-free-dims", "-o", svg)
    assert run.returncode == 0, run.stderr
    [said] = [line for line in run.stderr.splitlines() if "colouring by" in line]
    assert said.startswith("annograph: colouring by weight_bytes, built in (MACs are known for only ")
    assert "pin free input dims with --dim" in said
    assert "weight_bytes (B)" in legend_text(svg)
    pinned = run_cli("render", ONNX / "bert_scoped.onnx", "--collapse", "none", "-v", "--dim", "batch=1",
                     "--dim", "sequence=16", "-o", tmp_path / "pinned.svg")
    assert pinned.returncode == 0 and "colouring by macs, built in" in pinned.stderr, pinned.stderr


def test_the_python_api_applies_the_default_as_the_command_does(tmp_path: Path) -> None:
    """renderer.render with RenderOptions() writes the bytes ``annograph render`` writes, with and without
    annotations; the API prints nothing unless asked (quiet by default)."""
    import renderer

    model = renderer.load_model(TINY_CNN)
    for name, files in (("plain", []), ("profile", [PROFILE])):
        cli, api = tmp_path / f"cli-{name}.svg", tmp_path / f"api-{name}.svg"
        assert run_cli("render", TINY_CNN, *[a for f in files for a in ("-a", f)], "-o", cli).returncode == 0
        renderer.render(model, renderer.load_annotations(files, model), renderer.RenderOptions(), output=api)
        assert api.read_bytes() == cli.read_bytes(), name
    assert renderer.show(TINY_CNN).options.color_by == "macs"
    assert renderer.show(TINY_CNN, color_by="none").options.color_by == "none"


# ---- a tool's main metric: when the annotations bring several metrics --------------------------------------

QDQ_LOSS = FIXTURES / "qdq_loss" / "tiny_cnn_qdq_u8.json"


def box_fills(svg: Path | str) -> dict[str, str | None]:
    """Operator name → box fill, the name read from tiny_cnn as loaded."""
    import renderer

    names = {n.element_id: n.name for n in renderer.load_model(TINY_CNN).nodes()}
    return {names[key]: first_fill(g) for key, g in svg_groups(parse_svg(svg), "op").items()}


def legend_text(svg: Path) -> str:
    legend = next(g for g in parse_svg(svg).iter(f"{SVG_NS}g") if g.get("id") == "legend")
    return " ".join(t.text or "" for t in legend.iter(f"{SVG_NS}text"))


def assert_viridis(fills: dict[str, str | None], values: dict[str, float]) -> None:
    lo, hi = min(values.values()), max(values.values())
    assert fills == {name: viridis_hex(v, lo, hi) for name, v in values.items()}
    assert len(set(fills.values())) >= 10, fills  # the boxes really spread over the map


def test_ort_profile_colours_by_its_latency_without_color_by(tmp_path: Path) -> None:
    svg = tmp_path / "a.svg"
    run = run_cli("render", TINY_CNN, "-a", PROFILE, "--cmap", "viridis", "-o", svg)
    assert run.returncode == 0, run.stderr
    said = "colouring by latency_us, the main metric of tiny_cnn.ort_profile.json (ort); --color-by to choose"
    assert f"annograph: {said} another" == run.stderr.splitlines()[-1]
    assert_viridis(box_fills(svg), profile_latencies()[0])
    assert "latency_us (µs)" in legend_text(svg)
    explicit = tmp_path / "b.svg"
    assert run_cli("render", TINY_CNN, "-a", PROFILE, "--cmap", "viridis", "--color-by", "latency_us",
                   "-o", explicit).returncode == 0
    assert svg.read_bytes() == explicit.read_bytes()
    quiet = run_cli("render", TINY_CNN, "-a", PROFILE, "-q", "-o", tmp_path / "q.svg")
    assert quiet.returncode == 0 and "colouring by" not in quiet.stderr


def test_color_by_another_metric_still_wins(tmp_path: Path) -> None:
    svg = tmp_path / "a.svg"
    run = run_cli("render", TINY_CNN, "-a", PROFILE, "--cmap", "viridis", "--color-by", "latency_first_us",
                  "-o", svg)
    assert run.returncode == 0 and "colouring by" not in run.stderr, run.stderr
    assert_viridis(box_fills(svg), profile_latencies()[1])
    assert "latency_first_us (µs)" in legend_text(svg) and "latency_us (µs)" not in legend_text(svg)


def test_a_clashing_name_colours_by_the_qualified_main_metric(tmp_path: Path) -> None:
    """The sample YAML has latency_us too, so the profile's is ``ort.latency_us``: that one colours."""
    svg = tmp_path / "a.svg"
    run = run_cli("render", TINY_CNN, "-a", PROFILE, "-a", SAMPLES / "annotations" / "tiny_cnn.latency.yaml",
                  "--cmap", "viridis", "-o", svg)
    assert run.returncode == 0, run.stderr
    assert "colouring by ort.latency_us, the main metric of tiny_cnn.ort_profile.json (ort)" in run.stderr
    assert_viridis(box_fills(svg), profile_latencies()[0])
    assert "ort.latency_us (µs)" in legend_text(svg)


def test_two_different_main_metrics_give_no_default_and_say_so(tmp_path: Path) -> None:
    svg, summary = tmp_path / "a.svg", tmp_path / "a.md"
    run = run_cli("render", TINY_CNN, "-a", PROFILE, "-a", QDQ_LOSS, "-o", svg, "--summary", summary)
    assert run.returncode == 0, run.stderr
    [said] = [line for line in run.stderr.splitlines() if "main metric" in line]
    assert said == ("annograph: no default colour metric, the annotations bring several main metrics: "
                    "latency_us, the main metric of tiny_cnn.ort_profile.json (ort); xmodel_err, the main "
                    "metric of tiny_cnn_qdq_u8.json (qdq-loss); choose one with --color-by")
    assert set(box_fills(svg).values()) == {"#ffffff"}
    assert "No colour metric" in summary.read_text(encoding="utf-8")


@pytest.mark.parametrize(("model", "notes", "metric"), [
    (FIXTURES / "tflite_debugger" / "tiny_keras_float.tflite",
     FIXTURES / "tflite_benchmark" / "tiny_keras_float.benchmark_model.cpu.txt", "latency_us"),
    (FIXTURES / "tflite_debugger" / "tiny_keras_float.tflite",
     FIXTURES / "tflite_benchmark" / "tiny_keras_float.litert_profile.builtin.txt", "latency_us"),
    (FIXTURES / "tflite_debugger" / "tiny_keras_int8.tflite",
     FIXTURES / "tflite_debugger" / "layer_stats.csv", "rmse_per_scale"),
    (TINY_CNN, QDQ_LOSS, "xmodel_err"),
])
def test_each_tool_colours_by_its_main_metric(model: Path, notes: Path, metric: str, tmp_path: Path) -> None:
    svg = tmp_path / "a.svg"
    run = run_cli("render", model, "-a", notes, "-o", svg)
    assert run.returncode == 0, run.stderr
    assert f"colouring by {metric}, the main metric of {notes.name} (" in run.stderr
    explicit = tmp_path / "b.svg"
    assert run_cli("render", model, "-a", notes, "--color-by", metric, "-o", explicit).returncode == 0
    assert svg.read_bytes() == explicit.read_bytes()
    assert len({first_fill(g) for g in svg_groups(parse_svg(svg), "op").values()}) >= 4
    assert metric in legend_text(svg)


def test_qdq_loss_without_a_float_model_colours_by_qdq_err(tmp_path: Path) -> None:
    data = json.loads(QDQ_LOSS.read_text(encoding="utf-8"))
    data["activations"] = {name: {"qdq_err": body["qdq_err"]} for name, body in data["activations"].items()}
    notes = tmp_path / "qdq.json"
    notes.write_text(json.dumps(data), encoding="utf-8")
    run = run_cli("render", TINY_CNN, "-a", notes, "-o", tmp_path / "a.svg")
    assert run.returncode == 0, run.stderr
    assert "colouring by qdq_err, the main metric of qdq.json (qdq-loss)" in run.stderr


def test_onnx_tool_declares_no_main_metric(tmp_path: Path) -> None:
    run = run_cli("render", TINY_CNN, "-a", FIXTURES / "onnx_tool" / "tiny_cnn.csv", "-o", tmp_path / "a.svg")
    assert run.returncode == 0 and "colouring by" not in run.stderr, run.stderr


def test_the_python_api_and_batch_pick_the_same_default(tmp_path: Path) -> None:
    import renderer

    picture = renderer.show(TINY_CNN, PROFILE, cmap="viridis")
    assert picture.options.color_by == "latency_us"
    assert any(note.startswith("colouring by latency_us, the main metric") for note in picture.notes)
    assert_viridis(box_fills(picture.svg), profile_latencies()[0])
    out = tmp_path / "batch"
    run = run_cli("batch", TINY_CNN, "-a", PROFILE, "-o", out)
    assert run.returncode == 0, run.stderr
    assert "colouring by latency_us, the main metric of tiny_cnn.ort_profile.json (ort)" in run.stderr
    [svg] = out.glob("*.svg")
    assert "latency_us" in svg.name
