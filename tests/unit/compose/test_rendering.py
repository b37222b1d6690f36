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

from conftest import ONNX, run_cli
from picture_checks import PROFILE, TINY_CNN

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
