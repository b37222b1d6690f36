"""The one composer (``renderer.compose.rendering``): every way in draws the picture ``annograph render`` draws.

The command, ``renderer.render``, ``renderer.render_bytes``, ``renderer.show`` (Jupyter) and the Sphinx
directive's ``draw`` all go through ``rendering.compose`` (scene → one picture or a book of pages, with the
fallback to pages when one picture comes out too big → the outputs), and the default colour metric is decided
in one place, ``rendering.prepare``. Each test here draws a real sample through each way with the same options
and compares the bytes (and the pages folder) with the command's.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import ONNX, SVG_NS, parse_svg, run_cli
from page_boxes import MAX_AREA_PER_BOX, area_per_box
from picture_checks import PROFILE, TINY_CNN
from wheel_models import wheel_model

# (model, annotation files): a flat picture coloured by its profile's main metric (the default); a model
# planned as one picture whose layout is too big for a page (drawn as pages); a big model planned as pages.
CASES = {
    "flat": (TINY_CNN, [PROFILE]),
    "too-big": (ONNX / "light_resnet50.onnx", []),
    "book": (ONNX / "bert_scoped.onnx", []),
}
DEFAULT_COLOUR = {"flat": "latency_us", "too-big": "macs", "book": "macs"}
"""The default each case is coloured by: the profile's main metric; built-in MACs; built-in MACs too (bert_scoped's
free input dims are assumed, batch 1 and sequence 128, so its MACs are known)."""


def files_of(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` by its relative path."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module", params=sorted(CASES))
def drawn(request, tmp_path_factory) -> tuple[str, Path, list[Path], Path]:  # type: ignore[no-untyped-def]
    """A case drawn by the command into ``cli/model.svg`` (and its pages), with its defaults."""
    name = request.param
    model, notes = CASES[name]
    folder = tmp_path_factory.mktemp(f"cli-{name}")
    run = run_cli("render", model, *[a for n in notes for a in ("-a", n)], "-o", folder / "model.svg",
                  "-o", folder / "model.html")
    assert run.returncode == 0, run.stderr
    return name, model, notes, folder


def test_the_api_writes_the_commands_files(drawn, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    import renderer

    name, model_path, notes, cli = drawn
    model = renderer.load_model(str(model_path))
    annotations = renderer.load_annotations([str(n) for n in notes], model)
    renderer.render(model, annotations, renderer.RenderOptions(),
                    output=[tmp_path / "model.svg", tmp_path / "model.html"])
    assert files_of(tmp_path) == files_of(cli)
    assert (name == "flat") == (not (cli / "model.svg.pages").exists())  # the cases are what they say


def test_render_bytes_is_the_commands_picture(drawn) -> None:  # type: ignore[no-untyped-def]
    import renderer
    from renderer.compose.rendering import render_bytes

    _, model_path, notes, cli = drawn
    model = renderer.load_model(str(model_path))
    annotations = renderer.load_annotations([str(n) for n in notes], model)
    assert render_bytes(model, annotations, fmt="svg") == (cli / "model.svg").read_bytes()
    assert render_bytes(model, annotations, fmt="html") == (cli / "model.html").read_bytes()


def test_show_draws_the_commands_picture(drawn) -> None:  # type: ignore[no-untyped-def]
    import renderer

    name, model_path, notes, cli = drawn
    picture = renderer.show(model_path, [str(n) for n in notes])
    assert picture.svg.encode("utf-8") == (cli / "model.svg").read_bytes()
    pages = cli / "model.svg.pages"
    assert picture.pages == 1 + (len(list(pages.iterdir())) if pages.exists() else 0)
    assert picture.options.color_by == DEFAULT_COLOUR[name]


def test_the_sphinx_directive_draws_the_commands_picture(drawn, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("sphinx", reason="the [sphinx] extra is not installed")
    from renderer.integrations.sphinx import draw

    _, model_path, notes, cli = drawn
    draw(str(model_path), [str(n) for n in notes], {}, True, tmp_path / "model.svg")
    drawn_files = {k: v for k, v in files_of(tmp_path).items() if not k.endswith(".notes.json")}
    assert drawn_files == {k: v for k, v in files_of(cli).items() if not k.startswith("model.html")}


def test_the_default_colour_is_decided_once_and_said_by_the_api_too(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    """``prepare`` decides the default colour metric for every caller and says the pin advice (a warning, which
    the quiet API prints too) as the command does; the scene keeps the choice."""
    import renderer
    from renderer.compose.rendering import prepare

    model_path = ONNX / "bert_scoped.onnx"  # free input dims kept free: MACs unknown until they are pinned
    run = run_cli("render", model_path, "--color-by", "macs", "--keep-free-dims", "-o", tmp_path / "cli.svg")
    assert run.returncode == 0 and "--dim" in run.stderr, run.stderr
    model = renderer.load_model(str(model_path), assume_dims=False)
    scene = prepare(model, None, renderer.RenderOptions())
    chosen = scene.colour_choice
    assert chosen is not None and chosen.builtin and scene.options.color_by == chosen.metric
    capsys.readouterr()
    prepare(model, None, renderer.RenderOptions(color_by="macs"))
    advice = capsys.readouterr().err
    assert advice.strip() and advice.strip() in run.stderr
    assert prepare(model, None, renderer.RenderOptions(color_by="macs")).colour_choice is None


def test_a_strip_that_would_be_an_overview_of_one_page_is_one_picture_in_columns(tmp_path: Path) -> None:
    """madmom's key CNN (held out, not tuned on: 98 operators, three blocks alike) laid out flat is a strip of
    556 × 10,531 pt, longer than ``columns.PAGED_STRIP_PT``; its book is an overview (29 operators and one run box,
    1,512 × 1,130 pt) and ONE page (1,193 × 2,826 pt): a click on the way to the rest. It is drawn as one picture
    in columns instead, what ``--collapse none`` draws byte for byte: 1,895 × 2,460 pt, every operator on it."""
    import renderer
    from renderer.picture.folding import fold

    path = wheel_model("madmom_key_cnn")
    out, whole = tmp_path / "m.svg", tmp_path / "whole.svg"
    for target, extra in ((out, []), (whole, ["--collapse", "none"])):
        run = run_cli("render", path, "-o", target, "--no-sidecar", *extra, timeout=600)
        assert run.returncode == 0, run.stderr
    assert not out.with_name("m.svg.pages").exists()
    assert out.read_bytes() == whole.read_bytes()
    root = parse_svg(out)
    width, height = (float(root.get(side).removesuffix("pt")) for side in ("width", "height"))
    assert max(width, height) <= 3000 or max(width, height) <= 3 * min(width, height), (width, height)
    assert area_per_box(out) <= MAX_AREA_PER_BOX
    model = renderer.load_model(path)
    folding = fold(model)
    drawn = sum(1 for n in model.nodes() if folding.is_drawn(n))
    ids = [g.get("id") or "" for g in root.iter(f"{SVG_NS}g")]
    assert sum(1 for i in ids if i.startswith("op-")) == drawn == 98
    assert sum(1 for i in ids if i.startswith("column-")) >= 2  # drawn in columns
