"""Shapes inside If branches and Loop/Scan bodies from real values, and ``--inputs`` on TFLite models.

onnxruntime cannot expose a subgraph's tensors as outputs, but its profile records the input and output shapes of
every node it runs, inside subgraphs too: the ``--inputs`` run is profiled when subgraphs lack shapes, and a
profile given with ``-a`` is read the same way. A branch the run did not take keeps unknown shapes, and the note
says how many. silero_vad (its operators sit in If branches, one per sample rate) and a Loop/Scan model built here
are checked against onnxruntime's own profile of the same inputs, read independently. A TFLite model with a
dynamic dim (built here with the flatbuffers builder) is resized to the arrays and run once in LiteRT."""

from __future__ import annotations

import html
import json
import math
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from conftest import ONNX, TFLITE
from e2e.test_real_shapes import cli, inputs_refused
from registry import bodies_inputs, bodies_model, dynamic_reshape_tflite

SILERO = ONNX / "silero_vad.onnx"
CONTROL_FLOW = {"If", "Loop", "Scan"}


def metrics(model: Path, out: Path, *options: str | Path) -> tuple[dict[str, Any], str]:
    """Operator id → its ``macs`` from ``annograph metrics -o out.json``, and the command's stderr."""
    code, err = cli("metrics", model, "-o", out, *options)
    assert code == 0, err
    return {op["id"]: op["meta"]["macs"] for op in json.loads(out.read_text())["operators"]}, err


def vad_inputs(rate: int) -> dict[str, np.ndarray]:
    samples = 512 if rate == 16000 else 256
    audio = np.random.default_rng(0).standard_normal((1, samples)).astype(np.float32)
    return {"input": audio, "state": np.zeros((2, 1, 128), np.float32), "sr": np.array(rate, np.int64)}


def ort_profile(model: Path | bytes, feeds: dict[str, np.ndarray], prefix: Path, optimized: bool = True) -> Path:
    """onnxruntime's profile of two runs on ``feeds``: with its default optimizations, as a user's profile has, or
    without any, so that every operator that runs has an event of its own."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    if not optimized:
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.enable_profiling = True
    options.profile_file_prefix = str(prefix)
    session = ort.InferenceSession(model if isinstance(model, bytes) else str(model), options,
                                   providers=["CPUExecutionProvider"])
    for _ in range(2):
        session.run(None, feeds)
    return Path(session.end_profiling())


def kernel_events(profile: Path) -> dict[str, dict[str, Any]]:
    """Node name → the args of its first kernel event in the profile."""
    events: dict[str, dict[str, Any]] = {}
    for event in json.loads(profile.read_text()):
        if event.get("cat") == "Node" and event["name"].endswith("_kernel_time"):
            events.setdefault(event["name"].removesuffix("_kernel_time"), event["args"])
    return events


def operator_ids(model: Path) -> dict[str, tuple[str, str]]:
    """Node name → (its ``S:N`` id, op type), over every graph of the model as annograph numbers them."""
    from renderer.loaders.registry import load_model

    loaded = load_model(model, shape_run=False)
    return {node.name: (f"{graph.index}:{node.index}", node.op_type)
            for graph in loaded.graphs for node in graph.nodes if node.name}


@pytest.fixture(scope="module")
def vad(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    folder = tmp_path_factory.mktemp("vad")
    found: dict[str, Any] = {"ids": operator_ids(SILERO)}
    for rate in (16000, 8000):
        np.savez(folder / f"{rate}.npz", **vad_inputs(rate))
        found[rate] = {"inputs": folder / f"{rate}.npz",
                       "profile": ort_profile(SILERO, vad_inputs(rate), folder / f"ort{rate}"),
                       "every_node": ort_profile(SILERO, vad_inputs(rate), folder / f"all{rate}", optimized=False)}
    return found


def ran_and_idle(ids: dict[str, tuple[str, str]], profile: Path) -> tuple[set[str], set[str]]:
    """Ids of the operators (not If/Loop/Scan) the profiled run ran, and of those in graphs it never entered."""
    ran_names = set(kernel_events(profile))
    ran = {op_id for name, (op_id, op) in ids.items() if name in ran_names and op not in CONTROL_FLOW}
    entered = {op_id.split(":")[0] for op_id in ran}
    idle = {op_id for op_id, op in ids.values() if op_id.split(":")[0] not in entered and op not in CONTROL_FLOW}
    return ran, idle


def conv_macs(args: dict[str, Any]) -> int:
    """A Conv's MACs from the shapes onnxruntime recorded: output elements × weight elements per output channel,
    plus one per output element for the bias (as annograph and onnx-tool count it)."""
    (out,) = [list(s.values())[0] for s in args["output_type_shape"]]
    weight = list(args["input_type_shape"][1].values())[0]
    bias = len(args["input_type_shape"]) > 2
    return math.prod(out) * (math.prod(weight[1:]) + bias)


def test_inputs_give_macs_to_every_operator_the_run_took(vad: dict[str, Any], tmp_path: Path) -> None:
    """Before: 38 operators of silero_vad had no MACs with real inputs (21 MACs in all). Now every operator the
    16 kHz run took has them; the n/a left are all in branches it did not take (the 8 kHz model), said so."""
    macs, err = metrics(SILERO, tmp_path / "m.json", "--inputs", vad[16000]["inputs"])
    ran, idle = ran_and_idle(vad["ids"], vad[16000]["every_node"])
    assert len(ran) > 90
    missing = sorted(i for i in ran if not isinstance(macs[i], int))
    assert missing == [], [(i, macs[i]) for i in missing[:3]]
    without = {i for i, v in macs.items() if isinstance(v, str) and "control flow" not in v}
    assert without and without <= idle, sorted(without - idle)[:5]
    said = f": the onnxruntime run on the inputs of {vad[16000]['inputs'].name} did not take this subgraph)"
    assert all(macs[i].startswith("n/a (unknown shape of ") and macs[i].endswith(said) for i in without), \
        [macs[i] for i in without][:2]
    assert "tensors inside If/Loop/Scan bodies were taken from onnxruntime's profile of a run on the inputs of" \
        in err, err
    assert re.search(r"; \d+ tensors in subgraphs the run did not take \(If branches, Loop bodies\) keep no shape",
                     err), err
    # the numbers are those of the run's own shapes: every Conv it ran (STFT, encoder, decoder)
    events = kernel_events(vad[16000]["every_node"])
    convs = {vad["ids"][name][0]: conv_macs(args) for name, args in events.items()
             if args.get("op_name") == "Conv" and name in vad["ids"]}
    assert len(convs) == 6 and all(macs[i] == expected for i, expected in convs.items()), (convs, macs)
    assert sum(v for v in macs.values() if isinstance(v, int)) > 500_000


def test_a_profile_gives_the_same_macs_as_the_run(vad: dict[str, Any], tmp_path: Path) -> None:
    from_run, _ = metrics(SILERO, tmp_path / "run.json", "--inputs", vad[16000]["inputs"])
    from_profile, err = metrics(SILERO, tmp_path / "profile.json", "-a", vad[16000]["profile"])
    assert "in subgraphs the run did not take" in err and "it did not record" not in err, err
    said = {"run": "the onnxruntime run on the inputs of 16000.npz", "profile": "the profiled onnxruntime run"}
    assert {i: v.replace(said["profile"], said["run"]) if isinstance(v, str) else v
            for i, v in from_profile.items()} == from_run


def test_the_other_rate_takes_the_other_branch(vad: dict[str, Any], tmp_path: Path) -> None:
    """8 kHz runs the If's other branch: its operators get MACs, the 16 kHz branch's go without."""
    macs, _ = metrics(SILERO, tmp_path / "m.json", "--inputs", vad[8000]["inputs"])
    ran, idle = ran_and_idle(vad["ids"], vad[8000]["every_node"])
    ran16, _ = ran_and_idle(vad["ids"], vad[16000]["every_node"])
    assert ran.isdisjoint(ran16 - ran) and all(isinstance(macs[i], int) for i in ran)
    stft = {name: op_id for name, (op_id, _) in vad["ids"].items() if name.endswith("/stft/Conv")}
    (taken,) = [op_id for name, op_id in stft.items() if "else_branch" in name]
    (idle_conv,) = [op_id for name, op_id in stft.items() if "then_branch" in name]
    args = kernel_events(vad[8000]["every_node"])[next(n for n, i in stft.items() if i == taken)]
    assert macs[taken] == conv_macs(args) and macs[idle_conv].startswith("n/a")


def test_the_picture_shows_the_branch_macs(vad: dict[str, Any], tmp_path: Path) -> None:
    """The tooltip of the 16 kHz STFT Conv says its MACs (198k: 258×3 outputs × 256 taps), not n/a."""
    out = tmp_path / "vad.svg"
    code, err = cli("render", SILERO, "--inputs", vad[16000]["inputs"], "--color-by", "macs", "-o", out)
    assert code == 0, err
    pictures = [out, *sorted((tmp_path / "vad.svg.pages").glob("*.svg"))]
    tips = [html.unescape(t) for p in pictures for t in re.findall(r'xlink:title="([^"]*)"', p.read_text())]
    (tip,) = {t for t in tips if t.startswith("Conv") and "name: If_0_then_branch__Inline_0__/stft/Conv\n" in t}
    assert "\nmacs: 198k\n" in tip, tip


@pytest.fixture(scope="module")
def bodies(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("bodies")
    (folder / "bodies.onnx").write_bytes(bodies_model())
    np.savez(folder / "inputs.npz", **bodies_inputs())
    return {"model": folder / "bodies.onnx", "inputs": folder / "inputs.npz",
            "profile": ort_profile(bodies_model(), bodies_inputs(), folder / "ort")}


def test_loop_and_scan_bodies_get_shapes_from_the_run_and_the_profile(bodies: dict[str, Path],
                                                                       tmp_path: Path) -> None:
    """Both bodies reshape by the value of ``rows`` (8): static inference leaves their MatMuls without a shape. The
    Scan runs its body once per row of ``batch`` (2): its MatMul counts both runs (``body_runs``)."""
    ids = operator_ids(bodies["model"])
    matmuls = [ids["loop/matmul"][0], ids["scan/matmul"][0]]
    before, err = metrics(bodies["model"], tmp_path / "zeros.json")
    assert all(before[i].startswith("n/a") for i in matmuls), before
    for option in (["--inputs", bodies["inputs"]], ["-a", bodies["profile"]]):
        after, err = metrics(bodies["model"], tmp_path / "m.json", *option)
        assert [after[i] for i in matmuls] == [8 * 8 * 8, 2 * 8 * 8 * 8], (option, after)
        assert not [v for v in after.values() if isinstance(v, str) and "control flow" not in v], after
        assert "did not take" not in err, err


def test_a_loop_that_never_runs_says_its_body_has_no_shapes(bodies: dict[str, Path], tmp_path: Path) -> None:
    np.savez(tmp_path / "none.npz", **bodies_inputs(steps=0))
    ids = operator_ids(bodies["model"])
    macs, err = metrics(bodies["model"], tmp_path / "m.json", "--inputs", tmp_path / "none.npz")
    assert macs[ids["loop/matmul"][0]].startswith("n/a") and macs[ids["scan/matmul"][0]] == 2 * 512, macs
    assert "; 2 tensors in subgraphs the run did not take (If branches, Loop bodies) keep no shape" in err, err


def test_a_profile_too_long_to_make_costs_one_line(bodies: dict[str, Path], tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A Loop of 50,000 steps records an event per node and step: the profiled run gets a budget from the plain
    run's CPU time, and past it the bodies keep no shapes, said in one line; the command still succeeds."""
    from renderer.loaders.onnx import ort_shapes

    monkeypatch.setattr(ort_shapes, "PROFILE_SECONDS", 0.5)
    monkeypatch.setattr(ort_shapes, "PROFILE_FACTOR", 1)
    monkeypatch.delenv("ANNOGRAPH_RUN_SECONDS", raising=False)
    np.savez(tmp_path / "long.npz", **bodies_inputs(steps=50_000))
    ids = operator_ids(bodies["model"])
    macs, err = metrics(bodies["model"], tmp_path / "m.json", "--inputs", tmp_path / "long.npz")
    (line,) = [line for line in err.splitlines() if "bodies" in line]
    assert line.startswith(f"annograph: {bodies['model']}: the shapes inside If/Loop/Scan bodies were not recorded: "
                           "onnxruntime took over "), line
    assert line.endswith(" s of CPU time to record the shapes inside its subgraphs (set ANNOGRAPH_RUN_SECONDS to "
                         "allow more)")
    assert macs[ids["loop/matmul"][0]].startswith("n/a")


# ---- TFLite: --inputs resizes the inputs and runs the model once -----------------------------------------------


@pytest.fixture(scope="module")
def dynamic(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("dynamic")
    (folder / "dynamic.tflite").write_bytes(dynamic_reshape_tflite())
    np.savez(folder / "inputs.npz", tokens=np.ones((2, 12, 16), np.float32), new_shape=np.array([12, 64], np.int32))
    return {"model": folder / "dynamic.tflite", "inputs": folder / "inputs.npz"}


def test_tflite_inputs_resize_and_run_the_model(dynamic: dict[str, Path], tmp_path: Path) -> None:
    """tokens 2×12×16 → dense 2×12×32 → reshaped by the values [12, 64] → 12×8: the last FULLY_CONNECTED has
    12 rows, which only a run knows (LiteRT's preparation leaves a shape read from an input's values at 1)."""
    macs, err = metrics(dynamic["model"], tmp_path / "m.json", "--inputs", dynamic["inputs"])
    assert macs == {"0:0": 2 * 12 * 16 * 32, "0:1": 0, "0:2": 12 * 64 * 8}, macs
    assert f"shapes of 4 tensors with dynamic dims were taken from one LiteRT run on the inputs of " \
           f"{dynamic['inputs']}" in err, err
    assert "depend on input values" not in err, err
    prepared, _ = metrics(dynamic["model"], tmp_path / "dims.json", "--dim", "batch=2", "--dim", "axis1=12")
    assert prepared["0:0"] == macs["0:0"] and prepared["0:2"] != macs["0:2"]
    out = tmp_path / "dynamic.svg"
    code, err = cli("render", dynamic["model"], "--inputs", dynamic["inputs"], "-o", out)
    assert code == 0, err
    tips = [html.unescape(t) for t in re.findall(r'xlink:title="([^"]*)"', out.read_text())]
    assert any(t.startswith("mixed ") and "float32[12×8]" in t for t in tips), [t for t in tips if "mixed" in t]
    import renderer

    shapes = {v.name: v.type.shape for v in renderer.load_model(dynamic["model"], inputs=dynamic["inputs"]).main.values}
    assert shapes["regrouped"] == (12, 64) and shapes["mixed"] == (12, 8), shapes


VALUE_SIZED = ("unknown size of mixed: it follows from the values of 'new_shape', which --dim cannot pin; pass them "
               "with --inputs FILE.npz")


def test_tflite_dims_leave_sizes_read_from_input_values_unknown(dynamic: dict[str, Path], tmp_path: Path) -> None:
    """With --dim alone, LiteRT's preparation left the rows after the RESHAPE at the file's placeholder 1 (the
    last FULLY_CONNECTED counted 512 MACs instead of 6,144): they are unknown now, the n/a names the input whose
    values decide them and --inputs, and one line names the tensors."""
    dims = ("--dim", "batch=2", "--dim", "axis1=12")
    macs, err = metrics(dynamic["model"], tmp_path / "m.json", *dims)
    assert macs == {"0:0": 2 * 12 * 16 * 32, "0:1": 0, "0:2": f"n/a ({VALUE_SIZED})"}, macs
    (note,) = [line for line in err.splitlines() if "input values" in line]
    assert note == f"annograph: {dynamic['model']}: 2 tensor sizes depend on input values ('regrouped', 'mixed'; " \
                   "from the values of 'new_shape'), which --dim cannot give: they are left unknown; --inputs " \
                   "FILE.npz gives their real sizes", err
    out = tmp_path / "dims.svg"
    code, err = cli("render", dynamic["model"], *dims, "-o", out)
    assert code == 0 and note in err.splitlines(), err
    tips = [html.unescape(t) for t in re.findall(r'xlink:title="([^"]*)"', out.read_text())]
    (last,) = {t for t in tips if t.startswith("FULLY_CONNECTED") and "operator 0:2" in t}
    assert "→ mixed float32[?×8]" in last and f"macs: n/a ({VALUE_SIZED})" in last, last
    assert any(t.startswith("FULLY_CONNECTED") and "macs: 12.3k" in t for t in tips), tips


def shape_reshape_tflite() -> bytes:
    """tokens[-1, -1, 16] → FULLY_CONNECTED (keep dims) → dense → RESHAPE to SHAPE(dense) → FULLY_CONNECTED →
    [-1, 8]: the reshape's shape is read from a tensor's shape, not from an input's values."""
    import flatbuffers
    import tflite

    import tflite_build as fb

    T, ops = tflite.TensorType, tflite.BuiltinOperator
    b = flatbuffers.Builder(4096)
    codes = [fb.opcode(b, ops.FULLY_CONNECTED), fb.opcode(b, ops.SHAPE), fb.opcode(b, ops.RESHAPE)]
    buffers = [fb.buffer(b, None), fb.buffer(b, np.ones((32, 16), np.float32).tobytes()),
               fb.buffer(b, np.ones((8, 32), np.float32).tobytes())]
    tensors = [fb.tensor(b, "tokens", [1, 1, 16], T.FLOAT32, signature=[-1, -1, 16]),
               fb.tensor(b, "dense/w", [32, 16], T.FLOAT32, buffer=1),
               fb.tensor(b, "dense", [1, 1, 32], T.FLOAT32, signature=[-1, -1, 32]),
               fb.tensor(b, "dense_shape", [3], T.INT32),
               fb.tensor(b, "same", [1, 1, 32], T.FLOAT32, signature=[-1, -1, 32]),
               fb.tensor(b, "mix/w", [8, 32], T.FLOAT32, buffer=2),
               fb.tensor(b, "mixed", [1, 8], T.FLOAT32, signature=[-1, 8])]
    keep, flat = fb.fully_connected_options(b, keep_num_dims=True), fb.fully_connected_options(b)
    tflite.ShapeOptionsStart(b)
    tflite.ShapeOptionsAddOutType(b, T.INT32)
    shape = tflite.ShapeOptionsEnd(b)
    reshape = fb.reshape_options(b)
    operators = [fb.operator(b, 0, [0, 1, -1], [2], tflite.BuiltinOptions.FullyConnectedOptions, keep),
                 fb.operator(b, 1, [2], [3], tflite.BuiltinOptions.ShapeOptions, shape),
                 fb.operator(b, 2, [2, 3], [4], tflite.BuiltinOptions.ReshapeOptions, reshape),
                 fb.operator(b, 0, [4, 5, -1], [6], tflite.BuiltinOptions.FullyConnectedOptions, flat)]
    return fb.model(b, codes=codes, subgraphs=[fb.subgraph(b, "main", tensors, operators, [0], [6])], buffers=buffers)


def test_tflite_sizes_read_from_a_shape_stay_counted(tmp_path: Path) -> None:
    """A RESHAPE to SHAPE(dense) follows the inputs' shapes, which LiteRT prepares: no unknown size, no note."""
    model = tmp_path / "shaped.tflite"
    model.write_bytes(shape_reshape_tflite())
    macs, err = metrics(model, tmp_path / "m.json", "--dim", "batch=2", "--dim", "axis1=12")
    assert macs == {"0:0": 2 * 12 * 16 * 32, "0:1": 0, "0:2": 0, "0:3": 2 * 12 * 32 * 8}, macs
    assert "input values" not in err and "n/a" not in err, err


@pytest.mark.parametrize("path", sorted(TFLITE.glob("*.tflite")), ids=lambda path: path.name)
def test_tflite_samples_have_no_size_read_from_input_values(path: Path, tmp_path: Path) -> None:
    from renderer.loaders.registry import load_model
    from renderer.loaders.value_sizes import tflite_value_sized

    model = load_model(path)
    assert model.main.nodes and tflite_value_sized(model.main) == {}
    _, err = metrics(path, tmp_path / "m.json")
    assert "input values" not in err, err


@pytest.mark.parametrize(("name", "arrays"), [
    ("face_detection_short_range.tflite", {"input": np.zeros((1, 128, 128, 3), np.float32)}),
    ("okay_nabu.tflite", {"serving_default_input_audio:0": np.zeros((1, 3, 40), np.int8)}),
])
def test_tflite_without_dynamic_dims_says_the_values_are_not_needed(name: str, arrays: dict[str, np.ndarray],
                                                                     tmp_path: Path) -> None:
    inputs = tmp_path / "inputs.npz"
    np.savez(inputs, **arrays)
    plain, _ = metrics(TFLITE / name, tmp_path / "plain.json")
    given, err = metrics(TFLITE / name, tmp_path / "given.json", "--inputs", inputs)
    assert given == plain
    (note,) = [line for line in err.splitlines() if "static" in line]
    assert note == f"annograph: {TFLITE / name}: every tensor shape is static (no dynamic dims), so the input " \
                   f"values of {inputs} are not needed for them", err


@pytest.mark.parametrize(("arrays", "fragment"), [
    ({"tokens": np.ones((2, 12, 16), np.float32)}, "no array for input 'new_shape'"),
    ({"tokens": np.ones((2, 12, 16), np.float32), "new_shape": np.array([12, 64], np.int32), "x": np.ones(1)},
     "array 'x' is not an input of the model"),
    ({"tokens": np.ones((2, 12, 8), np.float32), "new_shape": np.array([12, 64], np.int32)},
     "array 'tokens' is 2×12×8, but the model's input is ?×?×16"),
    ({"tokens": np.ones((2, 12, 16), np.float32), "new_shape": np.array([[12, 64]], np.int32)},
     "array 'new_shape' is 1×2, but the model's input is 2"),
    ({"tokens": np.array([["a"]]), "new_shape": np.array([12, 64], np.int32)}, "array 'tokens': holds string"),
])
def test_tflite_inputs_that_do_not_fit_are_one_line_errors(dynamic: dict[str, Path], tmp_path: Path,
                                                           arrays: dict[str, np.ndarray], fragment: str) -> None:
    inputs_refused(dynamic["model"], arrays, tmp_path, fragment)


def test_a_tflite_run_that_fails_says_why_in_one_note(dynamic: dict[str, Path], tmp_path: Path) -> None:
    """A reshape to [5, 64] cannot hold 2×12×32 values: LiteRT refuses, the note says so and the file loads with
    the shapes LiteRT prepares for the arrays' shapes (the first FULLY_CONNECTED on 2×12 rows)."""
    bad = tmp_path / "odd.npz"
    np.savez(bad, tokens=np.ones((2, 12, 16), np.float32), new_shape=np.array([5, 64], np.int32))
    macs, err = metrics(dynamic["model"], tmp_path / "m.json", "--inputs", bad)
    (note,) = [line for line in err.splitlines() if "LiteRT" in line]
    assert "4 tensors have dynamic dims, and LiteRT could not run the model on these inputs" in note, note
    assert note.endswith("; shapes are those LiteRT prepares for the arrays' shapes"), note
    assert macs["0:0"] == 2 * 12 * 16 * 32
