"""With no --color-by, a single numeric metric in the annotations colours the boxes, and stderr says so."""

from __future__ import annotations

from pathlib import Path

from conftest import ONNX, SAMPLES, first_fill, parse_svg, run_cli, svg_groups


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


def test_several_metrics_or_none_leave_boxes_plain(tmp_path: Path) -> None:
    two = tmp_path / "two.csv"
    two.write_text("id,latency_us,error\nstem/conv,3,0.5\nstem/bn,4,0.25\n")
    svg = tmp_path / "two.svg"
    run = run_cli("render", ONNX / "tiny_cnn.onnx", "-a", two, "-o", svg)
    assert run.returncode == 0, run.stderr
    assert "colouring by" not in run.stderr
    assert fills(svg) == {"#ffffff"}
    text = tmp_path / "text.csv"
    text.write_text("id,note\nstem/conv,tiled\n")
    run = run_cli("render", ONNX / "tiny_cnn.onnx", "-a", text, "-o", tmp_path / "text.svg")
    assert run.returncode == 0 and "colouring by" not in run.stderr
