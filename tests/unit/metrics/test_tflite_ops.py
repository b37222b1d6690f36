"""``renderer/metrics/tflite_ops.py``: a custom operator the data knows by its custom code is costed like the builtin
it stands for. MediaPipe's selfie segmentation (held out: tests/support/wheel_models.py) ends in
Convolution2DTransposeBias, its one custom op: before, its headline read "+1 op n/a" and the last upsampling layer
counted nothing."""

from __future__ import annotations

import csv
from pathlib import Path

from conftest import parse_svg, run_cli, svg_groups, tooltip_of
from renderer.loaders.registry import load_model
from wheel_models import wheel_model


def test_mediapipes_transposed_convolution_with_bias_is_counted(tmp_path: Path) -> None:
    """MACs by hand from the tensors' shapes: each input element times the filter's output channels × kernel
    (input [1, 128, 128, 16], filter [O=1, 2, 2, I=16]), plus one add per output element for the bias; its
    filter and bias are its parameters; the box is a layer's, its tooltip says the MACs."""
    path = wheel_model("selfie_segmentation")
    model = load_model(path)
    custom = [node for node in model.nodes() if node.domain == "custom"]
    assert [node.op_type for node in custom] == ["Convolution2DTransposeBias"]
    node = custom[0]
    source, kernel, bias = (value.type.shape for value in node.inputs)
    assert kernel[3] == source[3] == 16 and node.outputs[0].type.shape == (1, 256, 256, 1)
    by_hand = 128 * 128 * 16 * (kernel[0] * kernel[1] * kernel[2]) + 256 * 256

    out = tmp_path / "m.csv"
    done = run_cli("metrics", path, "-o", out)
    assert done.returncode == 0, done.stderr
    with out.open(newline="", encoding="utf-8") as f:
        rows = {row["id"]: row for row in csv.DictReader(f) if row["kind"] == "operator"}
    row = rows[f"0:{node.index}"]
    assert int(row["macs"]) == by_hand == 1_114_112
    assert int(row["params"]) == 2 * 2 * 16 + 1
    assert "n/a" not in done.stderr.splitlines()[-1], done.stderr

    svg = tmp_path / "m.svg"
    done = run_cli("render", path, "-o", svg, "--collapse", "none", "--no-sidecar")
    assert done.returncode == 0, done.stderr
    box = svg_groups(parse_svg(svg), "op")[f"op-0-{node.index}"]
    assert "cat-layer" in box.get("class", "").split()  # was cat-other, its header grey
    assert "\nmacs: 1.11M\n" in tooltip_of(box), tooltip_of(box)
