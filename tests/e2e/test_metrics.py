"""``annograph metrics``: the file it writes is read back by ``render -a`` with the same values and colours."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from conftest import ONNX, TFLITE, first_fill, one_line_error, parse_svg, run_cli, svg_groups, tooltip_of
from renderer.annotations.registry import load_annotations
from renderer.core.records import metric_value
from renderer.loaders.registry import load_model
from renderer.metrics import builtin as metrics


def fills(svg: Path) -> dict[str, str | None]:
    return {ident: first_fill(group) for ident, group in svg_groups(parse_svg(svg), "op").items()}


@pytest.mark.parametrize("model_path", [ONNX / "tiny_cnn.onnx", TFLITE / "okay_nabu.tflite"])
def test_csv_round_trip_colours_like_the_builtin_metric(tmp_path: Path, model_path: Path) -> None:
    table = tmp_path / "metrics.csv"
    run = run_cli("metrics", model_path, "-o", table)
    assert run.returncode == 0, run.stderr
    assert "wrote metrics of" in run.stderr
    from_file, builtin = tmp_path / "file.svg", tmp_path / "builtin.svg"
    run = run_cli("render", model_path, "-a", table, "--color-by", "macs", "-o", from_file, "--no-sidecar", "--strict")
    assert run.returncode == 0, run.stderr
    run = run_cli("render", model_path, "--color-by", "macs", "-o", builtin, "--no-sidecar")
    assert run.returncode == 0, run.stderr
    a, b = fills(from_file), fills(builtin)
    assert a == b
    assert len(set(a.values())) >= 4  # a real heatmap, not one colour


def test_json_round_trip_keeps_every_value(tmp_path: Path) -> None:
    path = ONNX / "tiny_transformer.onnx"
    out = tmp_path / "m.json"
    run = run_cli("metrics", path, "-o", out, "--dim", "batch=1", "--dim", "seq=8", "-q")
    assert run.returncode == 0, run.stderr
    assert run.stderr == ""
    document = json.loads(out.read_text())
    assert {"operators", "tensors"} <= document.keys()
    model = load_model(path, dims={"batch": 1, "seq": 8})
    ops, tensors = metrics.compute(model, progress=False)
    annotations = load_annotations(out, model, strict=True)
    assert annotations.coverage[0].matched_ops == len(model.main.nodes)
    for key, values in ops.items():
        assert annotations.ops[key].values == values
    for key, values in tensors.items():
        assert annotations.tensors[key].values == values


def test_na_values_survive_as_text(tmp_path: Path) -> None:
    out = tmp_path / "m.csv"
    assert run_cli("metrics", ONNX / "tiny_transformer.onnx", "-o", out, "-q", "--keep-free-dims").returncode == 0
    model = load_model(ONNX / "tiny_transformer.onnx", assume_dims=False)  # dims left symbolic
    annotations = load_annotations(out, model)
    macs = [e.values["macs"] for e in annotations.ops.values()]
    assert all(isinstance(m, str) and m.startswith("n/a (") for m in macs if metric_value(m) is None)
    assert any(metric_value(m) is None for m in macs)
    svg = tmp_path / "m.svg"
    run = run_cli("render", ONNX / "tiny_transformer.onnx", "-a", out, "--color-by", "params", "-o", svg,
                  "--no-sidecar", "-q", "--keep-free-dims")
    assert run.returncode == 0, run.stderr
    tips = [tooltip_of(g) for g in svg_groups(parse_svg(svg), "op").values()]
    assert any("macs: n/a (symbolic dim" in t for t in tips)


def test_subset_and_tsv(tmp_path: Path) -> None:
    out = tmp_path / "m.tsv"
    run = run_cli("metrics", ONNX / "tiny_cnn.onnx", "-o", out, "--metrics", "macs,sparsity,bytes", "-q")
    assert run.returncode == 0, run.stderr
    header = out.read_text().splitlines()[0].split("\t")
    assert header == ["id", "kind", "macs", "sparsity", "bytes"]


def test_bad_inputs_fail_in_one_line(tmp_path: Path) -> None:
    assert "unknown metrics file extension" in one_line_error(
        run_cli("metrics", ONNX / "tiny_cnn.onnx", "-o", tmp_path / "m.txt"))
    assert "unknown metric 'mac'" in one_line_error(
        run_cli("metrics", ONNX / "tiny_cnn.onnx", "-o", tmp_path / "m.csv", "--metrics", "mac"))
    assert "no such file" in one_line_error(run_cli("metrics", tmp_path / "nope.onnx", "-o", tmp_path / "m.csv"))
    missing_dir = tmp_path / "no" / "m.csv"
    assert "does not exist" in one_line_error(run_cli("metrics", ONNX / "tiny_cnn.onnx", "-o", missing_dir))
    assert not list(tmp_path.iterdir())


def test_help_lists_every_metric() -> None:
    run = run_cli("metrics", "--help")
    assert run.returncode == 0
    listed = set(re.findall(r"[a-z_]+", run.stdout.split("metrics (--metrics):")[1]))
    assert set(metrics.OP_METRICS) | set(metrics.ALL_TENSOR_METRICS) <= listed
