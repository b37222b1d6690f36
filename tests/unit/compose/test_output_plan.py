"""The output plan (``renderer.compose.output_plan``): each output's format, its pages folder, the page file
names and the links between them, the pictures a summary links to, and the refusal of outputs that are inputs;
then a real book written through it, its files and links read back."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

import payloads as P
from conftest import ONNX, ROOT, one_line_error, run_cli
from renderer.compose.output_plan import (
    FOLDER_FORMATS,
    MAX_PICTURES,
    OUTPUT_FORMATS,
    PICTURE_FORMATS,
    Output,
    OutputPlan,
    bytes_plan,
    folder_names,
    output_format,
)
from renderer.core.errors import RenderError, UsageError
from renderer.files.page_names import Links, is_page_file, page_file, page_stem, pages_folder, pages_path

FORMATS = P.output_formats()


@pytest.mark.parametrize("ext", sorted(OUTPUT_FORMATS))
def test_each_extension_names_its_format_in_any_case(ext: str) -> None:
    plan = OutputPlan.build([f"out{ext}", f"dir/OUT{ext.upper()}"])
    assert plan.formats == [OUTPUT_FORMATS[ext]] * 2
    assert plan.names == [f"out{ext}", f"dir/OUT{ext.upper()}"]


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_named_format_wins_over_the_extension(fmt: str) -> None:
    assert OutputPlan.build(["picture.svg", "no-extension"], fmt).formats == [fmt, fmt]
    assert bytes_plan(fmt).outputs == (Output(f"model.{fmt}", fmt),)


def test_unknown_formats_are_one_line_errors_naming_the_file() -> None:
    with pytest.raises(RenderError, match=r"^m\.jpeg: unknown output extension '\.jpeg' \(use \.svg, "):
        OutputPlan.build(["a.svg", "m.jpeg"])
    unknown = r"^unknown output format 'jpeg' \(use one of dot, html, md, pdf, png, svg\)$"
    with pytest.raises(RenderError, match=unknown):
        OutputPlan.build(["x.svg"], "jpeg")
    with pytest.raises(RenderError, match="unknown output extension"):
        output_format("README")
    with pytest.raises(RenderError, match="unknown output format 'gif'"):
        bytes_plan("gif")


@pytest.mark.parametrize("fmt", FORMATS)
def test_folder_outputs_are_named_after_the_model_and_format(fmt: str, tmp_path: Path) -> None:
    names = folder_names(tmp_path, "tiny_cnn", [fmt, "svg"])
    assert names == [str(tmp_path / f"tiny_cnn.{fmt}"), str(tmp_path / "tiny_cnn.svg")]
    assert OutputPlan.build(names).formats == [fmt, "svg"]


def test_a_folder_output_refuses_an_unknown_format_by_its_option() -> None:
    with pytest.raises(UsageError, match=r"^--format 'jpg': use some of dot, html, md, pdf, png, svg$"):
        folder_names("out", "m", ["svg", "jpg"])


def test_page_names_round_trip_and_nothing_else_is_a_page_file() -> None:
    assert page_stem(0) == "overview" and page_stem(7) == "page-007" and page_stem(1234) == "page-1234"
    for index in (1, 9, 10, 99, 100, 999, 1000, 12345):
        for ext in FOLDER_FORMATS:
            name = page_file(index, ext)
            assert is_page_file(name, {ext}) and not is_page_file(name, set(FOLDER_FORMATS) - {ext}), name
    for name in ("page-000.svg", "page-1.svg", "page-01.svg", "page-0001.svg", "page-notes.dot", "overview.svg",
                 "page-001.svg.bak", "page-001", "xpage-001.svg", "page-001.SVG"):
        assert not is_page_file(name, FOLDER_FORMATS), name


@pytest.mark.parametrize("fmt", FORMATS)
def test_each_format_keeps_a_book_in_a_pages_folder_or_in_its_file(fmt: str, tmp_path: Path) -> None:
    output = Output(str(tmp_path / f"m.{fmt}"), fmt)
    assert output.pages == tmp_path / f"m.{fmt}.pages" == pages_path(output.path)
    assert pages_folder(f"m.{fmt}") == f"m.{fmt}.pages"
    assert output.paged == (fmt in ("svg", "png", "dot"))
    assert output.book_files([b"only"]) == [(Path(output.path), b"only")]
    files = output.book_files([b"overview", b"one", b"two"])
    assert files == [(Path(output.path), b"overview"),
                     (tmp_path / f"m.{fmt}.pages", {f"page-001.{fmt}": b"one", f"page-002.{fmt}": b"two"})]


class _Page:
    def __init__(self, index: int) -> None:
        self.index = index


def test_links_between_the_overview_and_its_pages() -> None:
    links = Links("m.svg")
    overview, one, two = _Page(0), _Page(1), _Page(2)
    assert links.folder == "m.svg.pages"
    assert [links.file(p) for p in (overview, one)] == ["m.svg", "m.svg.pages/page-001.svg"]  # type: ignore[arg-type]
    assert links.href(overview, one, "op-0-3") == "m.svg.pages/page-001.svg#op-0-3"  # type: ignore[arg-type]
    assert links.href(one, overview) == "../m.svg"  # type: ignore[arg-type]
    assert links.href(one, two) == "page-002.svg"  # type: ignore[arg-type]
    assert links.href(two, two, "box-4") == "#box-4"  # type: ignore[arg-type]
    assert Links('a "b"<c>.svg').href(overview, one) == "a%20%22b%22%3Cc%3E.svg.pages/page-001.svg"  # type: ignore[arg-type]


def test_links_name_the_svg_output_else_the_first_as_svg() -> None:
    assert OutputPlan.build(["d/a.png", "d/b.svg", "c.svg"]).links == Links("b.svg")
    assert OutputPlan.build(["d/a.png", "a.pdf"]).links == Links("a.svg")
    assert OutputPlan.build(["d/a.dot"], "svg").links == Links("a.svg")
    assert OutputPlan(()).links == Links("model.svg")


def test_a_summary_links_to_the_pictures_relative_to_itself(tmp_path: Path) -> None:
    names = [tmp_path / "pics" / f"m.{fmt}" for fmt in FORMATS] + [tmp_path / "other.SVG"]
    plan = OutputPlan.build(names)
    pictures = plan.pictures_for(tmp_path / "notes" / "summary.md")
    assert pictures == [f"../pics/m.{fmt}" for fmt in FORMATS if fmt in PICTURE_FORMATS] + ["../other.SVG"]
    assert "dot" not in PICTURE_FORMATS and "md" not in PICTURE_FORMATS
    many = OutputPlan.build([f"p{i}.svg" for i in range(MAX_PICTURES + 5)])
    assert len(many.pictures_for("s.md")) == MAX_PICTURES


def test_an_output_that_is_an_input_is_refused_in_any_spelling_before_its_format(tmp_path: Path) -> None:
    model = tmp_path / "m.onnx"
    model.write_bytes(b"model")
    (tmp_path / "link.svg").symlink_to(model)
    spellings = [model, f"{tmp_path}/./m.onnx", f"{tmp_path}/sub/../m.onnx", tmp_path / "link.svg"]
    (tmp_path / "sub").mkdir()
    for spelling in spellings:
        with pytest.raises(RenderError, match="is an input of this run"):
            OutputPlan.build(["ok.svg", spelling], inputs=[model])
    with pytest.raises(RenderError, match="is an input of this run"):
        OutputPlan.build(["ok.svg"], inputs=[model], also=[model])
    plan = OutputPlan.build([tmp_path / "ok.svg"], inputs=[model, model, tmp_path / "missing.yaml"])
    assert plan.inputs == (str(model), str(tmp_path / "missing.yaml"))


def test_inputs_found_later_are_refused_and_kept_for_the_write(tmp_path: Path) -> None:
    sidecar = tmp_path / "m.annotations.yaml"
    sidecar.write_text("ops: {}\n")
    plan = OutputPlan.build([tmp_path / "m.svg"], also=[tmp_path / "s.md"])
    assert plan.with_inputs([sidecar]).inputs == (str(sidecar),)
    over = OutputPlan.build([tmp_path / "m.svg"], also=[sidecar])
    with pytest.raises(RenderError, match="m.annotations.yaml: is an input of this run"):
        over.with_inputs([sidecar])
    guarded = OutputPlan.build([tmp_path / "m.svg"]).with_inputs([sidecar])
    with pytest.raises(RenderError, match="is an input of this run"):
        guarded.write([(tmp_path / "m.svg", b"<svg/>"), (sidecar, b"lost")])
    assert sidecar.read_text() == "ops: {}\n" and not (tmp_path / "m.svg").exists()


def test_a_book_is_written_where_the_plan_says_and_links_as_it_says(tmp_path: Path) -> None:
    """A real model drawn as pages (DOT: no layout), through ``render``: the overview and each page file are
    where the plan names them, and every link in the overview's DOT is one of the plan's links."""
    from renderer.compose.rendering import render
    from renderer.core.options import RenderOptions
    from renderer.integrations.loading import load

    loaded = load(str(ONNX / "tiny_transformer.onnx"), [], RenderOptions(collapse=1, color_by="macs"))
    plan = OutputPlan.build([tmp_path / "t.dot", tmp_path / "t.md"])
    render(loaded.model, loaded.annotations, loaded.options, output=plan)
    dot_output = plan.outputs[0]
    pages = sorted(os.listdir(dot_output.pages))
    assert pages and all(is_page_file(name, {"dot"}) for name in pages), pages
    assert pages == [page_file(i, "dot") for i in range(1, len(pages) + 1)]
    hrefs = set(re.findall(r'href="([^"#]*)', (tmp_path / "t.dot").read_text(encoding="utf-8"))) - {""}
    assert hrefs and hrefs <= {plan.links.file(_Page(i)) for i in range(1, len(pages) + 1)}, hrefs  # type: ignore[arg-type]
    assert "t.svg.pages/page-001.svg" in hrefs
    summary = (tmp_path / "t.md").read_text(encoding="utf-8")
    assert "t.dot" not in summary  # a DOT source is not a picture the summary links to


def _diff_sides(folder: Path) -> list[str]:
    before, after = folder / "before.yaml", folder / "after.yaml"
    before.write_text("operators:\n  - {id: stem/conv, latency_us: 10}\n", encoding="utf-8")
    after.write_text("operators:\n  - {id: stem/conv, latency_us: 15}\n", encoding="utf-8")
    return ["diff", str(ROOT / "samples" / "onnx" / "tiny_cnn.onnx"), "--before", str(before), "--after", str(after),
            "--metric", "latency_us"]


def test_diff_writes_its_pictures_and_summary_together(tmp_path: Path) -> None:
    """The summary is written in the same all-or-nothing write as the pictures: when it cannot be written,
    the pictures are not either (they were, before the summary failed), and the old files stay as they were."""
    old = {tmp_path / "d.dot": b"old picture", tmp_path / "d.md": b"old report"}
    for path, data in old.items():
        path.write_bytes(data)
    failed = run_cli(*_diff_sides(tmp_path), "-o", tmp_path / "d.dot", "-o", tmp_path / "d.md",
                     "--summary", tmp_path / "missing" / "summary.md")
    assert "summary.md: the folder" in one_line_error(failed) and "does not exist" in failed.stderr
    assert {path: path.read_bytes() for path in old} == old
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(".")]

    done = run_cli(*_diff_sides(tmp_path), "-o", tmp_path / "d.dot", "--summary", tmp_path / "s.md")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "d.dot").read_bytes().startswith(b"digraph")
    summary = (tmp_path / "s.md").read_text(encoding="utf-8")
    assert "latency_us" in summary and "d.dot" not in summary  # a DOT source is not a linked picture


def test_diff_refuses_a_summary_over_a_sidecar_it_finds(tmp_path: Path) -> None:
    """Two models: their sidecars are read, so neither picture nor summary may be one (refused before any write;
    the summary by a ``.md`` link to the sidecar, as it takes only ``.md`` names)."""
    model = tmp_path / "m.onnx"
    model.write_bytes((ROOT / "samples" / "onnx" / "tiny_cnn.onnx").read_bytes())
    sidecar = tmp_path / "m.annotations.yaml"
    sidecar.write_text("operators:\n  - {id: stem/conv, latency_us: 10}\n", encoding="utf-8")
    (tmp_path / "s.md").symlink_to(sidecar)
    run = run_cli("diff", model, model, "--metric", "macs", "-o", tmp_path / "d.dot", "--summary", tmp_path / "s.md")
    assert "is an input of this run" in one_line_error(run)
    assert sidecar.read_text(encoding="utf-8").startswith("operators:") and not (tmp_path / "d.dot").exists()
