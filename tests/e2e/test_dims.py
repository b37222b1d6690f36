"""A ``--dim`` that pins nothing is a one-line error: a typo, a model without free dims, a TFLite axis it does not
have, a dim inside the graph. Over several models a name needs to be free in one of them only. Names split at
the last ``=``, so dims named ``seq len`` and ``a=b`` can be pinned (and their MACs counted)."""

from __future__ import annotations

import contextlib
import csv
import io
import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import registry
import renderer
from conftest import ONNX, TFLITE, run_cli
from renderer.core.errors import AnnographError, LoaderError

BERT = ONNX / "bert_scoped.onnx"
TINY = ONNX / "tiny_cnn.onnx"
# MatMul of a [dim, FEATURES] input by a [FEATURES, CLASSES] weight: dim × FEATURES × CLASSES MACs
FEATURES, CLASSES = 16, 4


def matmul_model(folder: Path, dim: str, name: str = "free.onnx") -> Path:
    """One MatMul whose input's first dim is the symbolic ``dim``."""
    weight = numpy_helper.from_array(np.ones((FEATURES, CLASSES), np.float32), "w")
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [dim, FEATURES])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [weight])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path = folder / name
    onnx.save(model, path)
    return path


def cli(*argv: str | Path) -> tuple[int, str]:
    """(exit status, stderr) of ``annograph argv`` in this process."""
    from renderer.commands.cli import main

    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = main([str(a) for a in argv])
    return code, err.getvalue()


def refused(code: int, err: str, *fragments: str, status: int = 1) -> str:
    """The one error line, checked for exit ``status`` (2 for a malformed option) and each fragment."""
    lines = err.splitlines()
    assert code == status and len(lines) == 1 and lines[0].startswith("annograph: error: "), (code, err)
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
    return lines[0]


def test_a_misspelt_dim_is_an_error_that_suggests_the_right_one(tmp_path: Path) -> None:
    """The command line of the report: ``sequenc`` was silently ignored with exit 0."""
    out = tmp_path / "x.svg"
    run = run_cli("render", BERT, "--color-by", "macs", "--dim", "batch=1", "--dim", "sequenc=16", "-o", out)
    line = refused(run.returncode, run.stderr, f"{BERT}: ", "--dim 'sequenc=16'", "did you mean 'sequence'?",
                   "its free input dims are 'batch', 'sequence'")
    assert line.count("--dim") == 1 and not out.exists() and not list(tmp_path.iterdir())


def ignored(code: int, err: str, *fragments: str) -> str:
    """The one warning line of a run that went on (exit 0), checked for each fragment."""
    lines = [line for line in err.splitlines() if "pins nothing" in line]
    assert code == 0 and len(lines) == 1 and lines[0].endswith("; ignored"), (code, err)
    assert not lines[0].startswith("annograph: error")
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
    return lines[0]


def test_a_model_without_free_dims_has_nothing_to_pin_and_says_so(tmp_path: Path) -> None:
    """Nothing is lost when every input shape is fixed, so the run goes on with a warning (a loop passing
    ``--dim batch=1`` to every model keeps working); the picture is the one drawn without the flag."""
    out, plain = tmp_path / "x.svg", tmp_path / "plain.svg"
    ignored(*cli("render", TINY, "--dim", "batch=1", "-o", out), f"{TINY}: --dim 'batch=1' pins nothing",
            "this model has no free input dims")
    assert cli("render", TINY, "-o", plain)[0] == 0 and out.read_bytes() == plain.read_bytes()
    for command in (["metrics", TINY, "-o", tmp_path / "m.csv"],
                    ["export", TINY, "--to", "json", "-o", tmp_path / "e.json"], ["info", TINY]):
        ignored(*cli(*command, "--dim", "batch=1"), f"{TINY}: --dim 'batch=1' pins nothing")
    assert (tmp_path / "m.csv").exists() and (tmp_path / "e.json").exists()


def test_tflite_dims_are_its_dynamic_input_axes(tmp_path: Path) -> None:
    """A TFLite model pins by axis: a name that is no dynamic input axis is refused; those that are still pin."""
    from unit.loaders.tflite.test_loader import build_dynamic_sequence_model

    static = TFLITE / "face_detection_short_range.tflite"
    ignored(*cli("metrics", static, "--dim", "foo=3", "-o", tmp_path / "static.csv"),
            f"{static}: --dim 'foo=3' pins nothing: this model has no free input dims")
    dynamic = tmp_path / "dyn.tflite"
    dynamic.write_bytes(build_dynamic_sequence_model())
    refused(*cli("metrics", dynamic, "--dim", "axis2=8", "-o", tmp_path / "m.csv"),
            f"{dynamic}: --dim 'axis2=8' pins nothing", "its free input dims are 'axis0', 'batch', 'axis1'")
    assert not (tmp_path / "m.csv").exists()
    model = renderer.load_model(dynamic, dims={"batch": 2, "axis1": 8})
    assert model.main.inputs[0].type.shape == (2, 8, 16)
    assert model.pinnable_dims == ["axis0", "batch", "axis1"]


def test_a_dim_inside_the_graph_is_not_an_input_dim(tmp_path: Path) -> None:
    """The detector's value_info carries ``floor(height/2 - 1/2) + 1``: a free dim of the file, but no input's, so
    it cannot be pinned (the hints name input dims only)."""
    model, out = registry.dims_model(), tmp_path / "x.dot"
    refused(*cli("render", model, "--dim=floor(height/2 - 1/2) + 1=5", "-o", out),
            f"{model}: --dim 'floor(height/2 - 1/2) + 1=5' names a dim inside the graph, not an input's",
            "pin those ('batch', 'height', 'width')")
    refused(*cli("render", model, "--dim=heigth=5", "-o", out), "did you mean 'height'?")
    assert not out.exists()


def test_names_with_spaces_and_equals_signs_pin(tmp_path: Path) -> None:
    """``--dim "seq len=8"`` and ``--dim "a=b=4"``: the MACs of the MatMul are counted from the pinned size."""
    for dim, argument, size in (("seq len", "seq len=8", 8), ("a=b", "a=b=4", 4)):
        model = matmul_model(tmp_path, dim, f"{size}.onnx")
        out = tmp_path / f"{size}.csv"
        code, err = cli("metrics", model, "--dim", argument, "-o", out)
        assert code == 0, err
        with out.open(newline="") as file:
            row = next(r for r in csv.DictReader(file) if r["kind"] == "operator")
        assert int(row["macs"]) == size * FEATURES * CLASSES
    refused(*cli("metrics", tmp_path / "4.onnx", "--dim", "a=4", "-o", tmp_path / "a.csv"),
            "--dim 'a=4' pins nothing", "its free input dims are 'a=b'")
    for value in ("\u00b2", "nan", "-1", ""):
        refused(*cli("metrics", tmp_path / "4.onnx", f"--dim=a=b={value}", "-o", tmp_path / "a.csv"),
                f"--dim 'a=b={value}': expected NAME=VALUE with a whole number", status=2)
    refused(*cli("metrics", tmp_path / "4.onnx", "--dim=--", "-o", tmp_path / "a.csv"),
            "--dim '--': expected NAME=VALUE", status=2)
    assert not (tmp_path / "a.csv").exists()


def test_over_several_models_a_dim_needs_to_be_free_in_one(tmp_path: Path) -> None:
    """``render A B -o folder/``: ``seq len`` is A's only; the typo is neither's, and nothing is made."""
    free = matmul_model(tmp_path, "seq len")
    folder = tmp_path / "out"
    code, err = cli("render", free, TINY, "--show", "macs", "--dim", "seq len=8", "-o", f"{folder}/")
    assert code == 0, err
    assert sorted(p.name for p in folder.iterdir()) == ["free.svg", "tiny_cnn.svg"]
    assert f">{8 * FEATURES * CLASSES}<" in (folder / "free.svg").read_text(encoding="utf-8")
    other = tmp_path / "typo"
    refused(*cli("render", free, TINY, "--dim", "seq lne=8", "-o", f"{other}/"),
            f"{free}, {TINY}: --dim 'seq lne=8' pins nothing: none of these 2 models has a free input dim called "
            "'seq lne' (did you mean 'seq len'?); their free input dims are 'seq len'")
    assert not other.exists()


def test_batch_and_diff_check_the_dims_against_every_model(tmp_path: Path) -> None:
    free = matmul_model(tmp_path, "seq len")
    notes = tmp_path / "notes.json"
    notes.write_text(json.dumps({"operators": [{"id": "0", "latency_us": 3}]}), encoding="utf-8")
    folder = tmp_path / "batch"
    code, err = cli("batch", free, TINY, "-a", notes, "--color-by", "latency_us", "--dim", "seq len=8", "-o", folder)
    assert code == 0, err
    assert (folder / "index.html").is_file()
    refused(*cli("batch", free, TINY, "-a", notes, "--dim", "seqlen=8", "-o", tmp_path / "b2"),
            "none of these 2 models has a free input dim called 'seqlen' (did you mean 'seq len'?)")
    assert not (tmp_path / "b2").exists()
    out = tmp_path / "diff.dot"
    refused(*cli("diff", TINY, free, "--before", notes, "--after", notes, "--metric", "latency_us", "--dim", "seqlen=8",
                 "-o", out),
            f"{TINY}, {free}: --dim 'seqlen=8' pins nothing")
    assert not out.exists()


def test_the_api_refuses_what_the_cli_refuses(tmp_path: Path) -> None:
    """``renderer.load_model`` and ``renderer.show`` with ``dims``: the same one-line LoaderError; the pinnable
    dims are on the model; ``check_dims=False`` leaves out the names a model does not have."""
    with pytest.raises(LoaderError, match=r"--dim 'sequenc=3' pins nothing: .*did you mean 'sequence'\?") as error:
        renderer.load_model(BERT, dims={"batch": 1, "sequenc": 3})
    assert str(error.value).startswith(f"{BERT}: ") and "\n" not in str(error.value)
    with pytest.raises(AnnographError, match="did you mean 'sequence'"):
        renderer.show(BERT, dims={"sequenc": 1})
    free = matmul_model(tmp_path, "seq len")
    model = renderer.load_model(free, dims={"seq len": 8})
    assert model.pinnable_dims == ["seq len"] and model.main.inputs[0].type.shape == (8, FEATURES)
    picture = renderer.show(free, color_by="macs", dims={"seq len": 8})
    assert f">{8 * FEATURES * CLASSES}<" in picture.svg
    lenient = renderer.load_model(free, dims={"seq len": 2, "batch": 1}, check_dims=False)
    assert lenient.main.inputs[0].type.shape == (2, FEATURES)


def test_compare_takes_axis_names_and_refuses_the_rest(tmp_path: Path) -> None:
    """``compare`` feeds inputs by dim name or by axis (``axis1``), so both count as pinnable; a name neither
    model has is refused before anything runs (and only ignored when neither has a free input dim)."""
    out = tmp_path / "e.json"
    ignored(*cli("compare", TINY, TINY, "--dim", "batch=2", "-o", tmp_path / "static.json"),
            f"{TINY}, {TINY}: --dim 'batch=2' pins nothing: none of these 2 models has free input dims")
    free = matmul_model(tmp_path, "seq len")
    refused(*cli("compare", free, free, "--dim", "seq=2", "-o", out),
            "did you mean 'seq len'?", "their free input dims are 'seq len', 'axis0', 'batch'")
    assert not out.exists()
    code, err = cli("compare", free, free, "--dim", "axis0=3", "--save-dumps", tmp_path / "r.npz", tmp_path / "c.npz",
                    "-o", out)
    assert code == 0, err
    with np.load(tmp_path / "r.npz") as dumps:
        assert dumps["y"].shape == (3, CLASSES)
