"""One Graphviz layout per picture, whatever the number of formats written (issue 12): ``dot`` runs once to lay the
picture out (``-Tdot``: positions only, what the layout cache keeps, issue 30), and ``neato -n2`` draws from that
laid-out graph: the SVG and the PDF in one run, a PNG in a run of its own. Counted with shims in front of both
programs; every render here that counts them says ``--no-layout-cache``, so that each lays out. A layout made with
other fonts is not taken from the cache."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import ONNX, run_cli
from renderer.picture.layout_cache import LayoutCache


def _shimmed(tmp_path: Path) -> tuple[dict[str, str], Path]:
    shims, log = tmp_path / "bin", tmp_path / "runs.log"
    shims.mkdir()
    for program in ("dot", "neato"):
        real = shutil.which(program)
        assert real, f"{program} is not installed"
        shim = shims / program
        shim.write_text(f'#!/bin/sh\necho "{program} $*" >> "{log}"\nexec "{real}" "$@"\n', encoding="utf-8")
        shim.chmod(0o755)
    return {"PATH": f"{shims}{os.pathsep}{os.environ['PATH']}"}, log


def test_three_formats_share_one_layout(tmp_path: Path) -> None:
    env, log = _shimmed(tmp_path)
    model = ONNX / "tiny_cnn.onnx"
    outputs = [tmp_path / f"a.{fmt}" for fmt in ("svg", "png", "pdf")]
    run = run_cli("render", model, "-q", "--no-sidecar", "--no-layout-cache", *[a for o in outputs for a in ("-o", o)],
                  env=env)
    assert run.returncode == 0, run.stderr
    lines = log.read_text(encoding="utf-8").splitlines()
    assert [line.split()[0] for line in lines] == ["dot", "neato", "neato"], lines
    assert "-Tdot" in lines[0] and "-Tsvg" in lines[0]  # the skeleton's layout and drawing, the SVG's source
    assert "-n2" in lines[1] and "-Tpdf" in lines[1] and "-Tpng" in lines[2]
    assert "-Tsvg" not in lines[1] + lines[2]
    assert outputs[1].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and outputs[2].read_bytes()[:5] == b"%PDF-"

    log.write_text("", encoding="utf-8")  # the SVG is the one a single-format render lays out
    alone = tmp_path / "alone.svg"
    run = run_cli("render", model, "-q", "--no-sidecar", "--no-layout-cache", "-o", alone, env=env)
    assert run.returncode == 0 and log.read_text(encoding="utf-8").split()[0] == "dot"
    assert alone.read_bytes() == outputs[0].read_bytes()


def test_each_page_is_laid_out_once_and_drawn_once_per_other_format(tmp_path: Path) -> None:
    """Each page of a book is laid out and drawn as SVG by one ``dot`` run, and its PDF drawn by one ``neato -n2``
    run (none for an SVG alone), its PNG in one with the pages of the same size cap; its PDF is the same bytes as
    a PDF rendered alone; a PNG alone is as big as the SVG page at 110 dpi."""
    import struct

    env, log = _shimmed(tmp_path)
    model = ONNX / "light_resnet50.onnx"  # an overview and pages
    runs = {}
    (tmp_path / "alone").mkdir()  # the same name as the PDF beside the SVG: its links name the SVG's file
    for outputs in ([tmp_path / "svg.svg"], [tmp_path / "both.svg", tmp_path / "both.pdf"],
                    [tmp_path / "alone" / "both.pdf"], [tmp_path / "alone.png"]):
        log.write_text("", encoding="utf-8")
        run = run_cli("render", model, "-q", "--no-sidecar", "--no-layout-cache",
                      *[a for o in outputs for a in ("-o", o)], env=env)
        assert run.returncode == 0, run.stderr
        runs[str(outputs[-1])] = sorted(line.split()[0] for line in log.read_text(encoding="utf-8").splitlines())
    layouts = runs[str(tmp_path / "svg.svg")]
    assert set(layouts) == {"dot"}, runs  # no drawing beyond the layouts' own
    for other in ("both.pdf", "alone/both.pdf"):  # the overview and two pages, drawn once each
        assert runs[str(tmp_path / other)] == layouts + ["neato"] * 3, runs
    # the overview's PNG alone (no size cap), the two pages' PNGs in one run (``draw_pngs``)
    assert runs[str(tmp_path / "alone.png")] == layouts + ["neato"] * 2, runs
    assert (tmp_path / "both.pdf").read_bytes() == (tmp_path / "alone" / "both.pdf").read_bytes()
    svg = (tmp_path / "both.svg").read_text(encoding="utf-8")
    width, height = (float(v) for v in re.search(r'<svg width="([0-9.]+)pt" height="([0-9.]+)pt"', svg).groups())
    pixels = struct.unpack(">II", (tmp_path / "alone.png").read_bytes()[16:24])
    assert abs(pixels[0] - width * 110 / 72) <= 2 and abs(pixels[1] - height * 110 / 72) <= 2, (pixels, width, height)


def test_a_layout_over_the_pdf_cap_keeps_its_svg() -> None:
    """The PDF's size cap (199 inches) is a graph attribute of the run that draws it: a layout bigger than it has
    its SVG drawn in a run of its own, the same bytes as the SVG drawn alone; the PDF is scaled to the cap."""
    import io

    from pypdf import PdfReader

    from renderer.picture.graphviz_run import MAX_PDF_INCHES, render_formats, run_dot

    chain = "digraph g { node [shape=box, height=1]; " + " -> ".join(f"n{i}" for i in range(180)) + " }"
    result = render_formats(chain, ["svg", "pdf"], max_side=10**6)
    assert result["svg"] == render_formats(chain, ["svg"], max_side=10**6)["svg"]
    assert run_dot(chain, "svg").count(b"<g id=\"node") == result["svg"].count(b"<g id=\"node") == 180
    box = PdfReader(io.BytesIO(result["pdf"])).pages[0].mediabox
    assert float(box.height) <= MAX_PDF_INCHES * 72 + 72 and float(box.height) > 10_000, box


def test_a_layout_made_with_other_fonts_is_not_reused(tmp_path: Path) -> None:
    """Graphviz measures text in the fonts fontconfig finds: after a render with the machine's fonts, one whose
    fontconfig offers only a serif font (``FONTCONFIG_FILE``) with the same cache folder lays out anew and writes
    the bytes of an uncached render with those fonts (the layout cache keys on ``layout_setting``); the serif
    layout does differ (else the test would prove nothing)."""
    if shutil.which("fc-match") is None:
        pytest.skip("no fontconfig here")
    found = subprocess.run(["fc-match", "-f", "%{file}", "serif"], capture_output=True, text=True, check=False)
    serif = Path(found.stdout)
    if found.returncode != 0 or not serif.is_file():
        pytest.skip("fontconfig has no serif font here")
    (tmp_path / "fonts").mkdir()
    shutil.copy(serif, tmp_path / "fonts" / serif.name)
    config = tmp_path / "fonts.conf"
    config.write_text(f'<?xml version="1.0"?><fontconfig><dir>{tmp_path / "fonts"}</dir>'
                      f"<cachedir>{tmp_path / 'fc-cache'}</cachedir></fontconfig>")
    model, cache, serif_only = ONNX / "tiny_cnn.onnx", tmp_path / "cache", {"FONTCONFIG_FILE": str(config)}
    runs = [("machine.svg", {}, ["--layout-cache", cache]), ("cached.svg", serif_only, ["--layout-cache", cache]),
            ("plain.svg", serif_only, ["--no-layout-cache"])]
    for name, env, flags in runs:
        run = run_cli("render", model, "-q", "-o", tmp_path / name, *flags, env=env)
        assert run.returncode == 0, run.stderr
    machine, cached, plain = ((tmp_path / name).read_bytes() for name, _, _ in runs)
    assert cached == plain and machine != plain
    kept = LayoutCache(cache)  # two layouts (beside each, what its columns check decided: ``columns_kept``)
    assert sum(len(kept.get(path.stem) or ()) == 3 for path in cache.glob("*.layout")) == 2


def test_pages_that_differ_only_in_names_are_laid_out_once_while_sharing(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two pages of one structure (the same labels, other operator numbers, cluster names and ids) make one
    ``dot`` run while ``sharing``; each page's SVG is the one it gets laid out alone."""
    from renderer.picture import graphviz_run

    def page(first: int) -> str:
        a, b, c = (f"op_0_{first + k}" for k in range(3))
        return (f'digraph annograph {{\n\tgraph [compound=true id="page-{first}-svg"]\n'
                f'\t{a} [label=<<TABLE><TR><TD>MatMul</TD></TR></TABLE>> id="op-0-{first}" shape=plain]\n'
                f'\tsubgraph cluster_g{first} {{\n\t\tgraph [id="cl-{first}"]\n'
                f'\t\t{b} [label="Add" id="op-0-{first + 1}" fillcolor="#a1b2c3" style=filled]\n'
                f'\t\t{c} [label="Relu" id="op-0-{first + 2}" tooltip="op {first}"]\n\t}}\n'
                f'\t{a} -> {b} [id="t-{first}" lhead=cluster_g{first}]\n\t{b} -> {c}\n}}\n')

    alone = [graphviz_run.render_formats(page(n), ["svg"], check=lambda plain: None)["svg"] for n in (7, 4321)]
    runs = []
    real = graphviz_run._lay_out
    monkeypatch.setattr(graphviz_run, "_lay_out", lambda *a, **k: runs.append(1) or real(*a, **k))
    with graphviz_run.sharing():
        shared = [graphviz_run.render_formats(page(n), ["svg"], check=lambda plain: None)["svg"] for n in (7, 4321)]
    assert len(runs) == 1 and shared == alone
    assert b"op_0_4322" in shared[1] and b"op_0_8" in shared[0] and b"agn0q" not in shared[0] + shared[1]


def test_a_page_drawn_as_first_laid_out_takes_the_layout_made_to_measure_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """A page laid out with its ``-Tplain`` (to measure it, columns) and then drawn as it was, without, is one
    ``dot`` run while ``sharing``; its SVG is the one it gets laid out alone."""
    from renderer.picture import graphviz_run

    text = ('digraph annograph {\n\tgraph [id="page-svg"]\n\top_0_1 [label="MatMul" id="op-0-1"]\n'
            '\top_0_2 [label="Add" id="op-0-2"]\n\top_0_1 -> op_0_2\n}\n')
    alone = graphviz_run.render_formats(text, ["svg"])["svg"]
    runs = []
    real = graphviz_run._lay_out
    monkeypatch.setattr(graphviz_run, "_lay_out", lambda *a, **k: runs.append(a[1]) or real(*a, **k))
    with graphviz_run.sharing():
        measured = graphviz_run.render_formats(text, ["svg"], check=lambda plain: None)["svg"]
        drawn = graphviz_run.render_formats(text, ["svg"])["svg"]
    assert runs == [["svg", "plain"]] and measured == drawn == alone, runs


def test_no_two_dot_runs_of_a_render_lay_out_the_same_text(tmp_path: Path) -> None:
    """The int8 TTS at 2 layers (tests/support/tts_int8.py): pages laid out as strips to measure them and then
    kept as they were laid out used to be laid out a second time from the same text."""
    import hashlib

    import tts_int8

    model = tts_int8.save_int8(tmp_path / "tts.onnx", 2)
    shims, inputs = tmp_path / "bin", tmp_path / "inputs"
    shims.mkdir()
    inputs.mkdir()
    real = shutil.which("dot")
    assert real, "dot is not installed"
    shim = shims / "dot"  # keeps each run's standard input
    shim.write_text(f'#!/bin/sh\nt=$(mktemp -p "{inputs}")\ncat > "$t"\nexec "{real}" "$@" < "$t"\n', encoding="utf-8")
    shim.chmod(0o755)
    run = run_cli("render", model, "-q", "--no-sidecar", "--no-layout-cache", "-o", tmp_path / "tts.svg",
                  env={"PATH": f"{shims}{os.pathsep}{os.environ['PATH']}"})
    assert run.returncode == 0, run.stderr
    texts = [hashlib.sha256(p.read_bytes()).hexdigest() for p in inputs.iterdir() if p.stat().st_size]
    assert len(texts) > 5 and len(set(texts)) == len(texts), len(texts) - len(set(texts))


def test_the_version_layouts_are_keyed_by_is_what_dot_says_with_its_plugins() -> None:
    """``graphviz_version`` runs ``dot -V`` without loading Graphviz's plugins (``GVBINDIR``): the line is the
    library's version, the very line a ``dot -V`` that loads them says, so the layout cache's keys are unchanged."""
    from renderer.picture import graphviz_run

    plain = subprocess.run([shutil.which("dot") or "dot", "-V"], capture_output=True, check=True)
    said = (plain.stderr + plain.stdout).decode("utf-8", "replace").strip()
    assert said.startswith("dot - graphviz version ")
    assert graphviz_run.graphviz_version() == said


def _chunks(png: bytes) -> dict[bytes, bytes]:
    """The PNG's chunks by kind (the first of each), their bodies."""
    import struct

    found, position = {}, 8
    while position + 8 <= len(png):
        length, kind = struct.unpack(">I4s", png[position:position + 8])
        found.setdefault(kind, png[position + 8:position + 8 + length])
        position += 12 + length
    return found


def test_a_palette_is_snapped_to_the_nearest_colour_its_source_names(tmp_path: Path) -> None:
    """light_resnet50's pages drawn as gd's palette PNG (``-Tpng:cairo:gd``, as a page is drawn): each palette
    entry within ``SNAP_DISTANCE`` of a colour the page's DOT names (or white, or black) becomes the nearest one,
    the first of them in sorted order on a tie, as a walk over every colour finds it; the others and the pixels
    are left as gd wrote them. ``nearest_colour`` looks only at the colours whose red is near: on ties between
    colours of other reds it takes the same one as the whole walk."""
    from renderer.picture.graphviz_run import _HEX_COLOUR, SNAP_DISTANCE, nearest_colour, snap_palette

    run = run_cli("render", ONNX / "light_resnet50.onnx", "-q", "--no-sidecar", "--no-layout-cache",
                  "-o", tmp_path / "m.svg", "-o", tmp_path / "m.dot")  # with a picture: the DOT of each page too
    assert run.returncode == 0, run.stderr
    sources = [tmp_path / "m.dot", *sorted((tmp_path / "m.dot.pages").glob("*.dot"))]
    assert len(sources) >= 3
    snapped = 0
    for path in sources:
        source = path.read_text(encoding="utf-8")
        drawn = subprocess.run([shutil.which("dot") or "dot", "-Tpng:cairo:gd", "-Gdpi=40"], input=source.encode(),
                               capture_output=True, check=True).stdout
        wanted = sorted({(255, 255, 255), (0, 0, 0)} | {tuple(bytes.fromhex(h)) for h in _HEX_COLOUR.findall(source)})
        before, after = _chunks(drawn), _chunks(snap_palette(drawn, source))
        assert after[b"IDAT"] == before[b"IDAT"] and len(after[b"PLTE"]) == len(before[b"PLTE"]) > 30
        for at in range(0, len(before[b"PLTE"]), 3):
            entry, out = tuple(before[b"PLTE"][at:at + 3]), tuple(after[b"PLTE"][at:at + 3])
            near = min(wanted, key=lambda c: max(abs(a - b) for a, b in zip(c, entry)))
            close = max(abs(a - b) for a, b in zip(near, entry)) <= SNAP_DISTANCE
            assert out == (near if close else entry), (path.name, entry, out, near)
            snapped += close and out != entry
    assert snapped > 10  # gd moves colours a few levels: the snap is at work here
    # ties: three colours 8 from (100, 100, 108), of a lower, the same and a higher red: the first sorted wins
    wanted = sorted([(100, 100, 100), (108, 92, 100), (92, 108, 100), (200, 0, 0)])
    assert nearest_colour(wanted, 100, 100, 108) == (92, 108, 100)
    assert nearest_colour(wanted, 100, 100, 109) is None
    assert nearest_colour(wanted, 101, 100, 100) == (100, 100, 100)
    for red, green, blue in ((r, g, b) for r in range(84, 118, 3) for g in range(84, 118, 5) for b in (92, 100, 109)):
        near = min(wanted, key=lambda c: max(abs(c[0] - red), abs(c[1] - green), abs(c[2] - blue)))
        close = max(abs(near[0] - red), abs(near[1] - green), abs(near[2] - blue)) <= SNAP_DISTANCE
        assert nearest_colour(wanted, red, green, blue) == (near if close else None), (red, green, blue)


def test_each_page_of_a_book_is_drawn_once_per_format(tmp_path: Path) -> None:
    """The int8 TTS at 2 layers (tests/support/tts_int8.py): pages that ``columns`` lays out more than once, and
    then keeps as first laid out, used to have the PDF and PNG of the layout put aside drawn too (31 ``neato``
    runs a format for 29 pages). Each page's PDF and PNG is drawn once: one ``neato -n2`` run for each page of
    the PDF (pages read with pypdf) and for each PNG written (the overview and the page folder)."""
    import io
    import math

    from pypdf import PdfReader

    import tts_int8
    from renderer.picture.graphviz_run import PNGS_A_RUN

    model = tts_int8.save_int8(tmp_path / "tts.onnx", 2)
    env, log = _shimmed(tmp_path)
    run = run_cli("render", model, "-q", "--no-sidecar", "--no-layout-cache", "-o", tmp_path / "m.pdf",
                  "-o", tmp_path / "m.png", env=env)
    assert run.returncode == 0, run.stderr
    runs = [line.split() for line in log.read_text(encoding="utf-8").splitlines() if line.startswith("neato")]
    pages = len(PdfReader(io.BytesIO((tmp_path / "m.pdf").read_bytes())).pages)
    pngs = [tmp_path / "m.png", *(tmp_path / "m.png.pages").glob("*.png")]
    assert pages > 10 and len(pngs) == pages, (pages, len(pngs))
    assert sum("-Tpdf:cairo" in r for r in runs) == pages, runs
    # the overview alone (no size cap), the pages in runs of PNGS_A_RUN (``draw_pngs``)
    assert sum("-Tpng:cairo:gd" in r for r in runs) == 1 + math.ceil((pages - 1) / PNGS_A_RUN), runs
    assert all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in pngs)


def test_pngs_drawn_in_one_run_are_the_pngs_drawn_alone(tmp_path: Path) -> None:
    """light_resnet50's three pages (the overview and two pages, their DOT as written with ``-o m.dot``), laid out
    and left undrawn (``later``): drawn as PNGs by one ``neato -n2`` run (``draw_pngs``), each is the bytes it is
    drawn alone (``draw``) and ``render_formats`` draws; a PDF is never drawn with others."""
    from renderer.picture import graphviz_run

    run = run_cli("render", ONNX / "light_resnet50.onnx", "-q", "--no-sidecar", "--no-layout-cache",
                  "-o", tmp_path / "m.svg", "-o", tmp_path / "m.dot")
    assert run.returncode == 0, run.stderr
    sources = [(tmp_path / "m.dot").read_text(encoding="utf-8")] + [
        p.read_text(encoding="utf-8") for p in sorted((tmp_path / "m.dot.pages").glob("*.dot"))]
    undrawn = [graphviz_run.render_formats(s, ["png"], palette_png=True, later=True)["png"] for s in sources]
    assert len(undrawn) == 3 and all(isinstance(u, graphviz_run.Undrawn) for u in undrawn)
    together = graphviz_run.draw_pngs(undrawn, None, None)
    alone = [graphviz_run.draw(u, None, None) for u in undrawn]
    assert together == alone == [graphviz_run.render_formats(s, ["png"], palette_png=True)["png"] for s in sources]
    assert len({png[16:24] for png in together}) == 3 and all(png.endswith(b"IEND\xaeB`\x82") for png in together)
    pdf = graphviz_run.render_formats(sources[1], ["pdf"], later=True)["pdf"]
    assert graphviz_run.png_run(pdf) is None
    with pytest.raises(ValueError):
        graphviz_run.draw_pngs([undrawn[0], pdf], None, None)  # type: ignore[list-item]
