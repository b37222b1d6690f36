"""``renderer/metrics/tflite_ops.py``: a custom operator the data knows by its custom code is costed like the builtin
it stands for. MediaPipe's selfie segmentation (held out: tests/support/wheel_models.py) ends in
Convolution2DTransposeBias, its one custom op: before, its headline read "+1 op n/a" and the last upsampling layer
counted nothing."""

from __future__ import annotations

import csv
from pathlib import Path

import flatbuffers

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


def test_mediapipes_face_mesh_attention_ops_are_counted(tmp_path: Path) -> None:
    """MediaPipe's face mesh with attention (mediapipe 0.10.21, face_landmark_with_attention.tflite, 712 ops) crops
    its eye and lip regions with three custom ops, which read "+11 ops n/a" in its headline. Built here with the
    shapes that model has: Landmarks2TransformMatrix [1, 468, 3] -> [1, 4, 4] (one operation per coordinate
    read), TransformTensorBilinear [1, 48, 48, 32] -> [1, 16, 16, 32] (bilinear sampling, counted as
    RESIZE_BILINEAR: 4 per output element), TransformLandmarks [1, 80, 2] -> [1, 80, 2] (3 per coordinate)."""
    import tflite

    import tflite_build as fb

    b = flatbuffers.Builder(4096)
    names = ["Landmarks2TransformMatrix", "TransformTensorBilinear", "TransformLandmarks"]
    codes = [fb.opcode(b, tflite.BuiltinOperator.CUSTOM, name) for name in names]
    shapes = [("landmarks", [1, 468, 3]), ("features", [1, 48, 48, 32]), ("points", [1, 80, 2]),
              ("matrix", [1, 4, 4]), ("crop", [1, 16, 16, 32]), ("moved", [1, 80, 2])]
    tensors = [fb.tensor(b, name, shape) for name, shape in shapes]
    ops = [fb.operator(b, 0, [0], [3], custom=b""), fb.operator(b, 1, [1, 3], [4], custom=b""),
           fb.operator(b, 2, [2, 3], [5], custom=b"")]
    path = tmp_path / "crops.tflite"
    path.write_bytes(fb.model(b, codes=codes, subgraphs=[fb.subgraph(b, "main", tensors, ops, [0, 1, 2], [4, 5])],
                              buffers=[fb.buffer(b, None)]))
    out = tmp_path / "m.csv"
    done = run_cli("metrics", path, "-o", out)
    assert done.returncode == 0, done.stderr
    with out.open(newline="", encoding="utf-8") as f:
        rows = {row["id"]: row for row in csv.DictReader(f) if row["kind"] == "operator"}
    assert [int(rows[f"0:{i}"]["macs"]) for i in range(3)] == [468 * 3, 16 * 16 * 32 * 4, 80 * 2 * 3]
    assert "n/a" not in done.stderr.splitlines()[-1], done.stderr
