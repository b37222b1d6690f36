"""``renderer.show`` in a real notebook: a cell executed by nbclient on an ipykernel of this test's Python, its
output parsed. The kernel spec is written to a temporary folder named by JUPYTER_PATH for this test only, so
nothing outside it is touched."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

import payloads as P
from conftest import ROOT, parse_svg, run_cli, svg_groups, tooltip_of
from picture_checks import LATENCY, TINY_CNN, check_tiny_cnn, inlined_prefix, page_ids


@pytest.fixture
def kernel_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    name = "annograph-test"
    spec = tmp_path / "jupyter" / "kernels" / name
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "annograph test", "language": "python",
    }), encoding="utf-8")
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    monkeypatch.setenv("JUPYTER_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "runtime"))
    monkeypatch.setenv("IPYTHONDIR", str(tmp_path / "ipython"))
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    return name


def _run_notebook(cells: list[str], kernel_name: str, cwd: Path) -> list[dict]:  # type: ignore[type-arg]
    import nbformat
    from nbclient import NotebookClient

    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source) for source in cells])
    NotebookClient(notebook, kernel_name=kernel_name, timeout=300, resources={"metadata": {"path": str(cwd)}}).execute()
    return [cell.outputs for cell in notebook.cells]


def _svg_in(html: str) -> str:
    return html[html.index("<svg"):html.rindex("</svg>") + len("</svg>")]


def test_a_notebook_cell_displays_the_picture(kernel_name: str, tmp_path: Path) -> None:
    outputs = _run_notebook([
        "import renderer\n"
        f"picture = renderer.show({str(TINY_CNN)!r}, {str(LATENCY)!r}, cmap='viridis')\n"
        "picture",
        "picture.save('saved.svg'); picture.save('saved.png'); print(picture.pages, picture.options.color_by)",
    ], kernel_name, tmp_path)
    shown = [o for o in outputs[0] if o["output_type"] == "execute_result"]
    assert len(shown) == 1, outputs[0]
    data = shown[0]["data"]
    # the picture once: a notebook stores every form of an output, and the SVG was in two of them
    assert set(data) == {"text/html", "text/plain"}, set(data)
    html = data["text/html"]
    assert html.count("<svg") == 1
    svg = _svg_in(html)
    fills = check_tiny_cnn(svg, inlined=True)  # inlined, tooltips and all
    assert svg.startswith('<svg style="max-width:100%;height:auto"')  # scaled down to the output's width
    P.check_html(html.encode("utf-8"))
    assert "matched 18/18 operators" in html  # the coverage line, as the command prints it
    assert "tiny_cnn.onnx" in data["text/plain"] and "latency_us" in data["text/plain"]
    # the second cell: saved files, colour metric taken from the annotations as the command does
    printed = "".join(o.get("text", "") for o in outputs[1])
    assert printed.split() == ["1", "latency_us"], outputs[1]
    saved = (tmp_path / "saved.svg").read_text(encoding="utf-8")
    assert check_tiny_cnn(saved) == fills  # the file keeps Graphviz's ids
    import renderer

    model = renderer.load_model(TINY_CNN)
    renderer.render(model, renderer.load_annotations(LATENCY, model), renderer.RenderOptions(
        cmap="viridis", color_by="latency_us"), output=str(tmp_path / "rendered.svg"))
    assert (tmp_path / "rendered.svg").read_text(encoding="utf-8") == saved  # as `annograph render -o` writes it
    assert (tmp_path / "saved.png").read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    assert len(fills) == 3


def test_pictures_in_one_notebook_share_no_id(kernel_name: str, tmp_path: Path) -> None:
    """Two cells showing the same picture and one another: their outputs, put on one page as a front end does,
    share no id, each picture's references stay inside it, and a new kernel running the notebook again writes the
    same outputs."""
    cells = ["import renderer\n"
             f"renderer.show({str(TINY_CNN)!r}, {str(LATENCY)!r}, cmap='viridis')",
             f"renderer.show({str(TINY_CNN)!r}, {str(LATENCY)!r}, cmap='viridis')",
             f"renderer.show({str(P.SAMPLES / 'onnx' / 'control_flow.onnx')!r}, collapse='none')"]
    outputs = _run_notebook(cells, kernel_name, tmp_path)
    shown = [next(o["data"] for o in cell if o["output_type"] == "execute_result") for cell in outputs]
    htmls = [data["text/html"] for data in shown]
    for data in shown[:2]:
        check_tiny_cnn(_svg_in(data["text/html"]), inlined=True)
    prefixes = [inlined_prefix(_svg_in(data["text/html"])) for data in shown]
    assert len(set(prefixes)) == 3
    ids = page_ids("".join(htmls))
    assert len(ids) == len(set(ids)) > 2 * 18, sorted({i for i in ids if ids.count(i) > 1})[:5]
    assert htmls[0].replace(prefixes[0], prefixes[1]) == htmls[1]
    again = _run_notebook(cells, kernel_name, tmp_path)
    assert [next(o["data"] for o in cell if o["output_type"] == "execute_result") for cell in again] == shown


def test_show_takes_loaded_objects_and_options(tmp_path: Path) -> None:
    import renderer

    model = renderer.load_model(TINY_CNN)
    notes = renderer.load_annotations(LATENCY, model)
    picture = renderer.show(model, notes, color_by="latency_us", options=renderer.RenderOptions(cmap="viridis"))
    check_tiny_cnn(picture.svg)
    first, again = _svg_in(picture._repr_html_()), _svg_in(picture._repr_html_())  # shown twice: two prefixes
    assert inlined_prefix(first) != inlined_prefix(again)
    assert first.replace(inlined_prefix(first), inlined_prefix(again)) == again
    assert renderer.show(TINY_CNN, [LATENCY], cmap="viridis", show="none").svg != picture.svg  # no values listed
    with pytest.raises(renderer.AnnographError, match="unknown render option 'colour'"):
        renderer.show(model, colour="x")
    with pytest.raises(renderer.AnnographError, match="collapse"):
        renderer.show(model, collapse="deep")
    with pytest.raises(renderer.LoaderError, match="missing.onnx"):
        renderer.show(tmp_path / "missing.onnx")


def op_tooltips(svg: str | bytes) -> dict[str, str]:
    return {key: tooltip_of(group) for key, group in svg_groups(parse_svg(svg), "op").items()}


def test_show_takes_an_etrecord(executorch_portable: Path, tmp_path: Path) -> None:
    """``etrecord=`` names a program found alone as ``render --etrecord`` does: the SVG is the command's, byte for
    byte, every box named and grouped as the edge graph says; without it the boxes are ``kernel_I``; on an ONNX
    model it is one line naming the model."""
    import renderer

    programs = executorch_portable
    alone, record, dump = tmp_path / "portable.pte", programs / "portable.etrecord", programs / "portable.etdp"
    shutil.copy(programs / "portable.pte", alone)
    beside = renderer.load_model(programs / "portable.pte")
    picture = renderer.show(alone, dump, etrecord=str(record))
    done = run_cli("render", alone, "-a", dump, "--etrecord", record, "-o", tmp_path / "cli.svg")
    assert done.returncode == 0, done.stderr
    assert picture.svg.encode("utf-8") == (tmp_path / "cli.svg").read_bytes()
    assert picture.model.metadata["etrecord"] == str(record) and picture.options.etrecord == str(record)
    tips = op_tooltips(picture.svg)
    drawn = [node for node in beside.main.nodes if node.element_id in tips]
    assert len(drawn) == len(tips) >= 4  # the permute of a weight is folded into the addmm reading it
    for node in drawn:
        tip = tips[node.element_id]
        assert f"name: {node.name}" in tip and not node.name.startswith("kernel_"), tip
        assert "module" not in node.metadata or f"module: {node.metadata['module']}" in tip, tip
    bare = op_tooltips(renderer.show(alone, dump).svg)
    assert sorted(bare) == sorted(tips) and all("name: kernel_" in tip for tip in bare.values())
    with pytest.raises(renderer.LoaderError, match=r"tiny_cnn\.onnx: --etrecord .* is for ExecuTorch programs"):
        renderer.show(TINY_CNN, etrecord=str(record))


def test_a_big_model_shows_its_overview(tmp_path: Path) -> None:
    import renderer
    from renderer.picture.folding import fold
    from renderer.picture.pages import plan

    model = renderer.load_model(P.SAMPLES / "onnx" / "bert_scoped.onnx")
    book = plan(model, fold(model).is_drawn)
    assert book is not None and len(book.pages) > 1
    picture = renderer.show(model)
    assert picture.pages == len(book.pages)
    assert "overview of 1" in repr(picture) and "every page" in picture._repr_html_()
    drawn = [n for n in model.nodes() if fold(model).is_drawn(n)]
    assert len(svg_groups(parse_svg(picture.svg), "op")) < len(drawn)
    picture.save(tmp_path / "book.html")  # every page, in one file
    assert (tmp_path / "book.html").read_text(encoding="utf-8").count("<svg") == len(book.pages)


@pytest.mark.parametrize("payload", P.PAYLOADS, ids=[p.name for p in P.PAYLOADS])
def test_hostile_names_display_inert(payload: P.Payload, tmp_path: Path) -> None:
    """A model and annotations carrying the payload in every field, and the payload as title: both display
    forms hold no script, handler or link, and short payloads show as literal text."""
    import renderer
    from properties.test_injection import _normal, hostile_annotations

    model = renderer.load_model(P.hostile_onnx(payload.text, tmp_path / "hostile.onnx"))
    annotations = hostile_annotations(payload.text, model, tmp_path, ids=["0", "0:1"])
    picture = renderer.show(model, annotations, color_by="latency_ms", title=payload.text, show="all")
    visible = "\n".join(P.svg_texts(P.check_svg(_svg_in(picture._repr_html_()).encode("utf-8"))))
    inlined_prefix(_svg_in(picture._repr_html_()))
    page = P.check_html(picture._repr_html_().encode("utf-8"))
    if payload.short:
        assert _normal(payload.text) in _normal(visible) and _normal(payload.text) in _normal(page)
