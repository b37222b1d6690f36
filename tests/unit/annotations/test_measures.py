"""renderer/annotations/measures.py: the one parser of the numbers tool readers take, and what the readers do with
numbers no float holds (issue 31: a 4,000-digit Vela cycle count was an internal OverflowError, two finite rows
summed to ``inf`` in the boxes and the summary, an OpenVINO time of -5 ms was accepted silently)."""

from __future__ import annotations

from pathlib import Path

import pytest

import registry
from conftest import ONNX, TFLITE, one_line_error, run_cli

TINY_INT8 = TFLITE / "tiny_keras_int8_asymmetric.tflite"


@pytest.mark.parametrize(("text", "value"), [
    ("12", 12), (" -3 ", -3), ("1.5", 1.5), ("2.3%", 2.3), ("1e-3", 0.001), ("", None), ("  ", None),
    ("1.7e308", 1.7e308), ("9" * 308, int("9" * 308)), ("0" * 500 + "7", 7),
])
def test_numbers_a_float_holds_are_read(text: str, value: object) -> None:
    from renderer.annotations.measures import parse

    assert parse(text) == value


@pytest.mark.parametrize(("text", "why"), [
    ("9" * 310, "past the float range"), ("-" + "9" * 4000, "past the float range"), ("1e400", "past the float range"),
    ("-1e309", "past the float range"), ("nan", "not a finite number"), ("NaN", "not a finite number"),
    ("inf", "not a finite number"), ("-Infinity", "not a finite number"), ("fast", "not a number"),
    ("\u0661", "not a number"), ("0x10", "not a number"),
])
def test_numbers_no_float_holds_are_refused_saying_why(text: str, why: str) -> None:
    from renderer.annotations.measures import parse

    with pytest.raises(ValueError, match=why):
        parse(text)


def test_a_refused_cell_names_file_line_column_and_column_name() -> None:
    from renderer.annotations.measures import Where, measure
    from renderer.core.errors import AnnotationError

    with pytest.raises(AnnotationError, match=r"^f.csv:3:42: Op Cycles '9{24}… \(4,000 characters\)' is past the "
                                              r"float range$"):
        measure("9" * 4000, Where("f.csv", 3, 42), "Op Cycles")
    with pytest.raises(AnnotationError, match=r"^f.csv:2:7: realTime \(ms\) '-5' is negative"):
        measure("-5", Where("f.csv", 2, 7), "realTime (ms)")
    assert measure("NaN", Where("f.csv", 2), "Op Cycles", missing=("nan",)) is None


def test_sums_past_the_float_range_are_refused() -> None:
    from renderer.annotations.measures import mean, total
    from renderer.core.errors import AnnotationError

    assert total([1.7e308, -1.7e308, 5], "f", "x") == 5 and mean([1.0, 2.0], "f", "x") == 1.5
    with pytest.raises(AnnotationError, match="^f:4: op_cycles adds up past the float range"):
        total([1.7e308, 1.7e308], "f:4", "op_cycles")
    with pytest.raises(AnnotationError, match="adds up past the float range"):
        total([int("9" * 308), int("9" * 308)], "f", "x")  # exact ints, past a float
    with pytest.raises(AnnotationError, match="adds up past the float range"):
        mean([1.7e308, 1.7e308], "f", "x")


def test_json_numbers_no_float_holds_name_line_and_column() -> None:
    from renderer.annotations.measures import finite_decoder, refused

    text = '[\n {"a": 1, "b": 1e400}\n]'
    with pytest.raises(ValueError) as caught:
        finite_decoder().decode(text)
    assert str(refused("p.json", text, 0, caught.value)) == "p.json:2:16: the number '1e400' is past the float range"


def _hostile(tmp_path: Path, reader: str, kind: str) -> Path:
    name, data = registry.READERS[reader].hostile(kind, 0)  # type: ignore[misc]
    path = tmp_path / name
    path.write_bytes(data)
    return path


@pytest.mark.parametrize(("reader", "model", "kind", "expected"), [
    ("vela", TINY_INT8, "overflow",
     ":3:42: Op Cycles '999999999999999999999999… (4,000 characters)' is past the float"),
    ("vela", TINY_INT8, "sum_overflow", ":4: Op Cycles adds up past the float range"),
    ("vela", TINY_INT8, "negative", ":3:42: Op Cycles '-5' is negative"),
    ("openvino_counters", ONNX / "tiny_cnn.onnx", "overflow", ":3:52: realTime (ms) '99999"),
    ("openvino_counters", ONNX / "tiny_cnn.onnx", "sum_overflow", ":3: realTime (ms) adds up past the float range"),
    ("openvino_counters", ONNX / "tiny_cnn.onnx", "negative", ":3:52: realTime (ms) '-5' is negative"),
    ("openvino_exec_graph", ONNX / "tiny_cnn.onnx", "nan", ":115:3: execTimeMcs 'NaN' is not a finite number"),
    ("tensorrt_profile", ONNX / "tiny_cnn.onnx", "nan", ":4:76: the number 'NaN' is not a finite number"),
    ("tensorrt_profile", ONNX / "tiny_cnn.onnx", "sum_overflow", ":5: average_ms adds up past the float range"),
])
def test_tool_files_with_numbers_no_float_holds_are_one_line_errors(reader: str, model: Path, kind: str,
                                                                     expected: str, tmp_path: Path) -> None:
    path = _hostile(tmp_path, reader, kind)
    out = tmp_path / "x.svg"
    error = one_line_error(run_cli("render", model, "-a", path, "-o", out, "--summary", tmp_path / "s.md"))
    assert f"{path}{expected}" in error, error
    assert "internal error" not in error and not out.exists() and not (tmp_path / "s.md").exists()


def test_a_main_metric_without_usable_values_is_named(tmp_path: Path) -> None:
    """An all-NaN Op Cycles column (regor writes NaN for a figure it lacks): the picture says Vela's main metric
    has no usable value, not that no tool declares one."""
    path = _hostile(tmp_path, "vela", "nan")
    run = run_cli("render", TINY_INT8, "-a", path, "-o", tmp_path / "x.svg")
    assert run.returncode == 0, run.stderr
    assert f"Vela's main metric op_cycles has no usable values ({path.name})" in run.stderr, run.stderr
    assert "no tool declares one" not in run.stderr
