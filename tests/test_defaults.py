"""Defaults that tell the truth: one stderr line says which input dims to pin when a shape metric colours the
boxes; a scale over one value fills the boxes with the map's low end and the legend says "all values 0"; the
Python API merges the model's own and sidecar annotations as the CLI does, and rendering leaves its inputs alone."""

from __future__ import annotations

from pathlib import Path

import onnx
import pytest
from conftest import ONNX, first_fill, parse_svg, run_cli, svg_groups


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
    run = run_cli("render", model, "--color-by", "macs", "-o", tmp_path / "free.svg")
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
