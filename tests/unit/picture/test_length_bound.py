"""``renderer/picture/length_bound.py``: how long a page is at least, before it is laid out (issue 30). The bound is
checked against dot's own layouts of real samples (never over them), and a flat picture the bound finds too long
for one page is drawn as pages without the flat layout: the Graphviz layouts are counted, and the files are the
very bytes the measured way (the flat picture laid out, then refused) writes."""

from __future__ import annotations

from pathlib import Path

import pytest

import renderer
from conftest import ONNX, TFLITE
from renderer.compose import rendering
from renderer.compose.output_plan import OutputPlan
from renderer.compose.rendering import prepare
from renderer.core.options import RenderOptions
from renderer.picture import dot, graphviz_run, length_bound
from renderer.picture.columns import Columns
from renderer.picture.pages import MAX_PAGE_PT

SAMPLES = [ONNX / "light_resnet50.onnx", ONNX / "light_inception_v1.onnx", ONNX / "bert_dynamo.onnx",
           ONNX / "silero_vad.onnx", TFLITE / "face_detection_short_range.tflite"]


def _flat(path: Path, **options: object) -> tuple[str, Columns]:
    """The flat picture's DOT of a sample, as ``annograph render`` emits it, and what its emission recorded."""
    scene = prepare(renderer.load_model(str(path)), None, RenderOptions(**options))  # type: ignore[arg-type]
    shape = Columns()
    return dot.emit(scene, shape), shape


@pytest.mark.parametrize("path", [p for p in SAMPLES if p.exists()], ids=lambda p: p.name)
def test_the_bound_is_never_over_the_laid_out_length(path: Path) -> None:
    source, shape = _flat(path)
    bound = length_bound.least_length(source, shape)
    laid = graphviz_run.run_dot(source, "svg")
    width, height = graphviz_run.svg_size(laid)
    assert 0.6 * height < bound <= height, (bound, width, height)


def test_ranks_left_to_right_have_no_bound() -> None:
    source, shape = _flat(ONNX / "tiny_cnn.onnx", rankdir="LR")
    assert shape.labels and shape.ties
    assert length_bound.least_length(source, shape) == 0.0


def test_a_chain_is_its_heights_and_a_gap_between_each_two() -> None:
    heights = {"a": 10.0, "b": 20.0, "c": 30.0, "d": 5.0, "loop1": 100.0, "loop2": 100.0}
    ties = [("a", "b"), ("b", "c"), ("a", "c"), ("d", "c"), ("loop1", "loop2"), ("loop2", "loop1"), ("c", "c")]
    assert length_bound.longest_chain(heights, ties, 25.0) == 10 + 25 + 20 + 25 + 30  # the cycle left out


def test_a_table_is_its_border_and_each_row_around_its_largest_font() -> None:
    label = ('<<TABLE BORDER="1" CELLBORDER="0" CELLSPACING="0" CELLPADDING="3"><TR><TD><FONT POINT-SIZE="11">'
             'Relu</FONT><FONT POINT-SIZE="8"> 0:1</FONT></TD></TR><TR><TD>name</TD></TR>'
             '<TR><TD><TABLE BORDER="0"><TR><TD><FONT POINT-SIZE="9">a</FONT></TD></TR>'
             '<TR><TD><FONT POINT-SIZE="9">b</FONT></TD></TR></TABLE></TD></TR></TABLE>>')
    assert length_bound.label_height(label, 10.0) == 2 * 1 + (6 + 11) + (6 + 10) + (6 + 9)
    assert length_bound.label_height("plain text", 10.0) == 0.0


def _counted(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The skeletons ``dot`` lays out from now on (each a real run)."""
    runs: list[str] = []
    real = graphviz_run._lay_out

    def counting(source: str, *args, **kwargs):  # type: ignore[no-untyped-def]
        runs.append(source)
        return real(source, *args, **kwargs)

    monkeypatch.setattr(graphviz_run, "_lay_out", counting)
    return runs


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_a_flat_picture_too_long_for_a_page_is_drawn_as_pages_without_its_layout(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    model = renderer.load_model(str(ONNX / "light_resnet50.onnx"))
    source, shape = _flat(ONNX / "light_resnet50.onnx")
    assert length_bound.least_length(source, shape) > MAX_PAGE_PT  # (dot lays it out 20,497 pt long)
    runs = _counted(monkeypatch)
    options = RenderOptions(layout_cache="")
    plan = OutputPlan.build([tmp_path / "m.svg"])
    drawing = rendering.compose(model, None, options, plan)
    predicted = list(runs)
    assert drawing.book is not None and len(drawing.book.pages) > 1
    monkeypatch.setattr(length_bound, "least_length", lambda source, shape: 0.0)  # the measured way
    measured = rendering.compose(model, None, options, plan)
    again = runs[len(predicted):]
    assert len(again) == len(predicted) + 1  # the flat picture laid out, then refused
    flat = [s for s in again if s not in predicted]
    assert len(flat) == 1 and "page-" not in flat[0][:400]  # the flat picture: no page id
    assert drawing.produced == measured.produced  # the very same files
