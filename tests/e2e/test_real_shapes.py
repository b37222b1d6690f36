"""Shapes that depend on input values come from real values: ``--inputs FILE.npz`` (one onnxruntime run on them) or
an onnxruntime profile given with ``-a`` (the shapes it recorded, no run). Without either, the run on zero inputs
stays, and when it fails or makes a degenerate size, one line says which sizes depend on input values and how to
give real ones. Free dims, unnamed ones included, are named in every hint, ``metrics`` too.

The model is the TTS-like transformer of tts_transformer.py with a ``speed`` input (a speed of 0 fails the run)
and a decoder as long as its predicted durations; the profile is onnxruntime's own, written in the test."""

from __future__ import annotations

import contextlib
import csv
import io
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest

import tts_transformer
from conftest import ONNX, parse_svg

SEQUENCE = 12
SILERO = ONNX / "silero_vad.onnx"


def cli(*argv: str | Path) -> tuple[int, str]:
    """(exit status, stderr) of ``annograph argv`` in this process."""
    from renderer.commands.cli import main

    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = main([str(a) for a in argv])
    return code, err.getvalue()


def feeds() -> dict[str, np.ndarray]:
    ids = (np.arange(SEQUENCE, dtype=np.int64).reshape(1, SEQUENCE) * 7) % tts_transformer.VOCAB
    return {"input_ids": ids, "attention_mask": np.ones_like(ids), "speed": np.array([1.0], np.float32)}


@pytest.fixture(scope="module")
def tts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The model, real inputs as .npz, and onnxruntime's profile of two runs on them (default optimizations, so
    some nodes are fused away as in any real profile)."""
    import onnxruntime as ort

    folder = tmp_path_factory.mktemp("real")
    model = folder / "tts.onnx"
    onnx.save(tts_transformer.build(speed=True), model)
    np.savez(folder / "inputs.npz", **feeds())
    options = ort.SessionOptions()
    options.enable_profiling = True
    options.profile_file_prefix = str(folder / "ort")
    session = ort.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])
    for _ in range(2):
        mel = session.run(["mel"], feeds())[0]
    profile = Path(session.end_profiling())
    return {"model": model, "inputs": folder / "inputs.npz", "profile": profile, "frames": int(mel.shape[1])}


def macs_by_index(path: Path) -> dict[int, str]:
    """Operator index → the ``macs`` cell of a ``metrics`` CSV."""
    with path.open(encoding="utf-8", newline="") as f:
        return {int(row["id"].split(":")[1]): row["macs"] for row in csv.DictReader(f)
                if row["kind"] == "operator" and row["id"].startswith("0:")}


def coverage(macs: dict[int, str]) -> float:
    return sum(1 for v in macs.values() if not v.startswith("n/a")) / len(macs)


def node_index(model: Path) -> dict[str, int]:
    return {node.name: i for i, node in enumerate(onnx.load(model).graph.node)}


def test_zero_inputs_that_fail_say_which_sizes_depend_on_values(tts: dict[str, Any], tmp_path: Path) -> None:
    out = tmp_path / "m.csv"
    code, err = cli("metrics", tts["model"], "-o", out, "--dim", "batch=1", "--dim", f"sequence={SEQUENCE}")
    assert code == 0, err
    line = next(line for line in err.splitlines() if "could not run it" in line)
    assert "could not run it on zero inputs" in line and "Range operator can not be zero" in line, line
    assert "36 of them depend on input values ('/decoder/Range_265_output_0'" in line, line
    assert line.endswith("give real input values with --inputs FILE.npz, or an onnxruntime profile with -a"), line
    assert coverage(macs_by_index(out)) < 0.8  # the decoder and the attention go without


def test_inputs_give_every_shape_from_one_run_on_them(tts: dict[str, Any], tmp_path: Path) -> None:
    out = tmp_path / "m.csv"
    code, err = cli("metrics", tts["model"], "-o", out, "--inputs", tts["inputs"])
    assert code == 0, err
    assert f"were taken from one onnxruntime run on the inputs of {tts['inputs']}" in err, err
    assert "free" not in err and "--dim" not in err  # the arrays' shapes pinned batch and sequence
    macs = macs_by_index(out)
    assert coverage(macs) == 1.0, [v for v in macs.values() if v.startswith("n/a")][:3]
    frames = tts["frames"]
    assert frames > 1  # real inputs: one frame per predicted duration, not the single frame of zeros
    index = node_index(tts["model"])
    fc1 = next(i for name, i in index.items() if name.startswith("/decoder/layer.0/fc1/MatMul"))
    assert int(macs[fc1]) == frames * tts_transformer.HIDDEN * tts_transformer.FFN


def test_a_profile_gives_the_shapes_it_recorded(tts: dict[str, Any], tmp_path: Path) -> None:
    out = tmp_path / "m.csv"
    code, err = cli("metrics", tts["model"], "-o", out, "-a", tts["profile"])
    assert code == 0, err
    assert f"were taken from the onnxruntime profile {tts['profile']} (its first run)" in err, err
    macs = macs_by_index(out)
    assert coverage(macs) >= 0.99, [v for v in macs.values() if v.startswith("n/a")][:3]
    # the MACs are those of the profile's own shapes: every MatMul onnxruntime ran as itself
    index = node_index(tts["model"])
    events = [e for e in json.loads(tts["profile"].read_text()) if e.get("cat") == "Node"
              and e["name"].endswith("_kernel_time") and e["args"].get("op_name") == "MatMul"
              and e["name"].removesuffix("_kernel_time") in index]
    checked = {}
    for event in events:
        name = event["name"].removesuffix("_kernel_time")
        (left,), (result,) = [list(s.values()) for s in event["args"]["input_type_shape"][:1]], \
            [list(s.values()) for s in event["args"]["output_type_shape"]]
        checked[name] = int(macs[index[name]]) == math.prod(result[0]) * left[0][-1]
    assert len(checked) >= 10 and any("/decoder/" in n for n in checked) and all(checked.values()), checked


def test_render_takes_inputs_and_profiles(tts: dict[str, Any], tmp_path: Path) -> None:
    """The picture's header shows the MACs of the real run, the same through --inputs and through the profile."""
    totals = {}
    for name, option in (("inputs", ["--inputs", tts["inputs"]]), ("profile", ["-a", tts["profile"]])):
        out = tmp_path / f"{name}.svg"
        code, err = cli("render", tts["model"], *option, "--color-by", "macs", "-o", out)
        assert code == 0, err
        texts = [t.text or "" for t in parse_svg(out).iter("{http://www.w3.org/2000/svg}text")]
        totals[name] = next(t for t in texts if t.startswith("MACs"))
    assert totals["inputs"] == totals["profile"] and "n/a" not in totals["inputs"], totals


def test_zero_inputs_that_make_one_frame_are_called_out(tmp_path: Path) -> None:
    """Without ``speed`` the zero run succeeds, but masked-out zeros give a decoder of one frame: said, not silent."""
    model = tmp_path / "tts.onnx"
    onnx.save(tts_transformer.build(), model)
    code, err = cli("metrics", model, "-o", tmp_path / "m.csv", "--dim", "batch=1", "--dim", f"sequence={SEQUENCE}")
    assert code == 0, err
    (line,) = [line for line in err.splitlines() if "zero inputs" in line]
    assert "zero inputs made '/decoder/Range_264_output_0' [1]: give real input values with --inputs FILE.npz" in line


@pytest.mark.parametrize(("arrays", "fragment"), [
    ({"input_ids": np.zeros((1, 4), np.int64)}, "no array for input 'attention_mask'"),
    ({**feeds(), "extra": np.zeros(1)}, "array 'extra' is not an input of the model"),
    ({**feeds(), "speed": np.zeros((2, 2), np.float32)}, "array 'speed' is 2×2, but the model's input is 1"),
    ({**feeds(), "input_ids": np.zeros(4, np.int64)},
     "array 'input_ids' is 4, but the model's input is batch×sequence"),
])
def test_inputs_that_do_not_fit_are_one_line_errors(tts: dict[str, Any], tmp_path: Path, arrays: dict,
                                                    fragment: str) -> None:
    inputs_refused(tts["model"], arrays, tmp_path, fragment)


def inputs_refused(model: Path, arrays: dict[str, np.ndarray], tmp_path: Path, fragment: str) -> None:
    """``render --inputs`` of ``arrays`` fails in one line naming the .npz and saying ``fragment``, writing nothing."""
    bad = tmp_path / "bad.npz"
    np.savez(bad, **arrays)
    out = tmp_path / "m.svg"
    code, err = cli("render", model, "--inputs", bad, "-o", out)
    lines = err.splitlines()
    assert code == 1 and len(lines) == 1 and lines[0].startswith(f"annograph: error: {bad}: "), err
    assert fragment in lines[0], lines[0]
    assert not out.exists()


def test_batch_and_diff_take_inputs(tts: dict[str, Any], tmp_path: Path) -> None:
    """batch draws the decoder's edges with the real number of frames; diff counts every operator's MACs."""
    frames = tts["frames"]
    notes = tmp_path / "run.yaml"
    notes.write_text("operators:\n  - {id: '/output/mel', latency_us: 3}\n", encoding="utf-8")
    code, err = cli("batch", tts["model"], "-a", notes, "--inputs", tts["inputs"], "-o", tmp_path / "batch")
    assert code == 0, err
    (picture,) = (tmp_path / "batch").glob("*.svg")
    labels = {t.text for t in parse_svg(picture).iter("{http://www.w3.org/2000/svg}text") if t.text}
    assert f"1×{frames}×{tts_transformer.MELS}" in labels, sorted(labels)[:20]
    summary = tmp_path / "diff.md"
    code, err = cli("diff", tts["model"], tts["model"], "--metric", "macs", "--inputs", tts["inputs"], "-o",
                    tmp_path / "diff.dot", "--summary", summary)
    assert code == 0, err
    assert "n/a" not in summary.read_text(encoding="utf-8") and "could not run" not in err, err


def test_the_api_takes_inputs_and_profiles(tts: dict[str, Any]) -> None:
    import renderer

    frames = tts["frames"]
    for model in (renderer.load_model(tts["model"], inputs=tts["inputs"]),
                  renderer.load_model(tts["model"], profiles=[tts["profile"]]),
                  renderer.show(tts["model"], tts["profile"], color_by="macs").model,
                  renderer.show(tts["model"], color_by="macs", inputs=str(tts["inputs"])).model):
        assert model.main.outputs[1].type.shape == (1, frames, tts_transformer.MELS)


def test_metrics_reads_profiles_only(tts: dict[str, Any], tmp_path: Path) -> None:
    notes = tmp_path / "notes.yaml"
    notes.write_text("operators:\n  - {id: '/output/mel', latency_us: 3}\n", encoding="utf-8")
    code, err = cli("metrics", tts["model"], "-a", notes, "-o", tmp_path / "m.csv")
    assert code == 1 and err.strip() == (f"annograph: error: {notes}: metrics -a reads onnxruntime profiles (for the "
                                         "shapes they recorded); this file reads as generic"), err
    assert not (tmp_path / "m.csv").exists()


# ---- honest hints: free dims, unnamed ones too, named in metrics' output -----------------------------------------


def test_metrics_names_the_free_dims_to_pin(tts: dict[str, Any], tmp_path: Path) -> None:
    code, err = cli("metrics", tts["model"], "-o", tmp_path / "m.csv", "--keep-free-dims")
    assert code == 0, err
    hint, headline = err.splitlines()[-2:]
    assert "n/a" in headline, headline
    assert hint.endswith("operators have no macs while the input dims batch, sequence are free; add --dim batch=N "
                         "--dim sequence=N"), hint


def test_unnamed_dims_are_free_dims_with_names(tmp_path: Path) -> None:
    """silero_vad's inputs are [?×?] and [2×?×128]: named input.axis0, input.axis1, state.axis1; never "every input
    shape is fixed"."""
    code, err = cli("metrics", SILERO, "-o", tmp_path / "m.csv", "--keep-free-dims")
    assert code == 0 and "add --dim input.axis0=N --dim input.axis1=N --dim state.axis1=N" in err, err
    code, err = cli("metrics", SILERO, "-o", tmp_path / "m.csv", "--dim", "input.axs0=1")
    assert code == 1 and "fixed" not in err and "did you mean 'input.axis0'?" in err, err
    assert "its free input dims are 'input.axis0', 'input.axis1', 'state.axis1'" in err, err
    pinned = tmp_path / "pinned.csv"
    code, err = cli("metrics", SILERO, "-o", pinned, "--dim", "input.axis0=1", "--dim", "input.axis1=512",
                    "--dim", "state.axis1=1")
    assert code == 0 and "are free" not in err, err
    # a sample rate of 0 takes neither branch of the model's If: zero inputs fail, real ones run
    assert "could not run it on zero inputs" in err and "--inputs FILE.npz" in err, err
    inputs = tmp_path / "vad.npz"
    np.savez(inputs, input=np.zeros((1, 512), np.float32), state=np.zeros((2, 1, 128), np.float32),
             sr=np.array(16000, np.int64))
    real = tmp_path / "real.csv"
    code, err = cli("metrics", SILERO, "-o", real, "--inputs", inputs)
    assert code == 0 and "could not run" not in err, err
    assert "shapes of 4 of 4 tensors that static inference cannot reach were taken from one onnxruntime run on the " \
           f"inputs of {inputs}" in err, err


def test_compare_pins_unnamed_dims_by_their_names() -> None:
    """``compare``'s inputs take ``--dim input.axis1=512`` for silero_vad's unnamed dims, as the loader names them."""
    import onnxruntime as ort

    from renderer.loaders.feeds import InputSpec, concrete_shape
    from renderer.loaders.registry import load_model

    session = ort.InferenceSession(str(SILERO), providers=["CPUExecutionProvider"])
    dims = {"input.axis0": 1, "input.axis1": 512, "state.axis1": 1}
    assert set(dims) <= set(load_model(SILERO).pinnable_dims)
    notes: list[str] = []
    shapes = {i.name: concrete_shape(InputSpec(i.name, tuple(i.shape), "float32"), dims, notes)
              for i in session.get_inputs()}
    assert shapes == {"input": (1, 512), "state": (2, 1, 128), "sr": ()} and notes == [], (shapes, notes)


def test_a_profile_of_a_model_with_static_shapes_adds_no_line() -> None:
    """tiny_cnn's shapes are all static: its profile colours it and says nothing about shapes."""
    from renderer.loaders.registry import load_model

    profile = ONNX.parent / "annotations" / "tiny_cnn.ort_profile.json"
    assert load_model(ONNX / "tiny_cnn.onnx", profiles=[profile]).notes == []


def test_the_sphinx_directive_takes_inputs(tts: dict[str, Any], tmp_path: Path) -> None:
    """``:inputs:`` draws the decoder with the real number of frames; the .npz is a dependency of the page."""
    from unit.integrations.test_sphinx import CONF, build, divs, svg_of

    src = tmp_path / "src"
    (src / "models").mkdir(parents=True)
    (src / "conf.py").write_text(CONF, encoding="utf-8")
    for key in ("model", "inputs"):
        (src / "models" / tts[key].name).write_bytes(tts[key].read_bytes())
    (src / "index.rst").write_text("TTS\n===\n\n.. annograph:: models/tts.onnx\n   :color-by: macs\n"
                                   "   :inputs: models/inputs.npz\n", encoding="utf-8")
    result = build(src)
    assert result.warnings == ""
    [div] = divs(result.page())
    texts = {t.text for t in parse_svg(svg_of(div)).iter("{http://www.w3.org/2000/svg}text") if t.text}
    assert f"1×{tts['frames']}×{tts_transformer.MELS}" in texts
    macs = next(t for t in texts if t.startswith("MACs"))
    assert "n/a" not in macs, macs


def test_an_empty_size_from_zero_inputs_is_called_out(tmp_path: Path) -> None:
    """NonZero on zeros finds nothing: the sizes after it are empty, and the note says so instead of counting 0."""
    from onnx import TensorProto, helper, numpy_helper

    from renderer.loaders.registry import load_model

    graph = helper.make_graph(
        [helper.make_node("NonZero", ["x"], ["where"], name="where"),
         helper.make_node("Transpose", ["where"], ["rows"], name="rows"),
         helper.make_node("Cast", ["rows"], ["rows_f"], name="cast", to=TensorProto.FLOAT),
         helper.make_node("MatMul", ["rows_f", "w"], ["y"], name="project")], "picked",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(np.ones((1, 8), np.float32), "w")])
    path = tmp_path / "picked.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    (line,) = load_model(path).notes
    assert "4 of them depend on input values ('where', 'rows', 'rows_f', …), and zero inputs made 'where' [1×0], " \
           "'rows' [0×1], 'rows_f' [0×1] and 1 more: give real input values with --inputs FILE.npz" in line, line
