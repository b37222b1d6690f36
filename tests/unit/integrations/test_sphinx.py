"""The Sphinx extension on real Sphinx builds of a small project: the picture in the built page (its boxes
counted, its fills read), drawn again only when an input's bytes change, errors as warnings naming the document
and line, LaTeX and text builders, hostile names, and a light import."""

from __future__ import annotations

import io
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

import payloads as P
from conftest import ROOT, SVG_NS, parse_svg, run_cli, svg_groups, tooltip_of
from picture_checks import LATENCY, TINY_CNN, check_tiny_cnn, inlined_prefix, latencies, page_ids

INLINE_ID = re.compile(r'id="ag[0-9a-f]{8}-')
CONF = 'project = "annograph test"\nextensions = ["renderer.integrations.sphinx"]\n'
DIRECTIVE = """\
Model
=====

Before the picture.

.. annograph:: models/tiny_cnn.onnx
   :annotations: models/tiny_cnn.latency.yaml
   :cmap: viridis
   :alt: tiny_cnn coloured by latency

After the picture.
"""


@dataclass
class Build:
    out: Path
    warnings: str

    def page(self, name: str = "index") -> str:
        return (self.out / f"{name}.html").read_text(encoding="utf-8")


def build(src: Path, builder: str = "html") -> Build:
    """One real Sphinx build of ``src`` into ``src/../build/BUILDER`` (doctrees kept between builds)."""
    from sphinx.application import Sphinx
    from sphinx.util.docutils import docutils_namespace, patch_docutils

    out, doctrees = src.parent / "build" / builder, src.parent / "build" / "doctrees"
    warnings = io.StringIO()
    with patch_docutils(src), docutils_namespace():
        app = Sphinx(src, src, out, doctrees, builder, status=io.StringIO(), warning=warnings)
        app.build()
    return Build(out, re.sub(r"\x1b\[[0-9;]*m", "", warnings.getvalue()))  # without the terminal colours


def divs(page: str) -> list[str]:
    """The HTML the directive wrote: each ``<div class="annograph…">…</div>`` (an SVG holds no div)."""
    return re.findall(r'<div class="annograph[^"]*".*?</svg>\s*</div>', page, re.S)


def svg_of(div: str) -> str:
    return div[div.index("<svg"):].removesuffix("</div>").strip()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    src = tmp_path / "src"
    (src / "models").mkdir(parents=True)
    shutil.copy(TINY_CNN, src / "models")
    shutil.copy(LATENCY, src / "models")
    (src / "conf.py").write_text(CONF, encoding="utf-8")
    (src / "index.rst").write_text(DIRECTIVE, encoding="utf-8")
    return src


def _cache(src: Path) -> dict[str, int]:
    """The drawn pictures in the doctree folder: file name → mtime (ns)."""
    folder = src.parent / "build" / "doctrees" / "annograph"
    return {p.name: p.stat().st_mtime_ns for p in folder.glob("*.svg")}


def test_the_page_holds_the_picture_and_it_is_drawn_again_only_when_an_input_changes(
        project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import renderer.integrations.sphinx

    drawn: list[str] = []
    real_draw = renderer.integrations.sphinx.draw
    monkeypatch.setattr(renderer.integrations.sphinx, "draw", lambda *a: (drawn.append(a[0]), real_draw(*a))[1])

    first = build(project)
    assert first.warnings == ""
    [div] = divs(first.page())
    assert 'aria-label="tiny_cnn coloured by latency"' in div
    check_tiny_cnn(svg_of(div), inlined=True)
    shipped = list((first.out / "_images").glob("annograph-*.svg"))
    assert [p.name for p in shipped] == list(_cache(project)), "the picture is in _images under its hash"
    check_tiny_cnn(shipped[0].read_bytes())
    assert f'href="_images/{shipped[0].name}"' in first.page()
    assert len(drawn) == 1
    cached = _cache(project)

    build(project)  # nothing changed: the page is not even read again
    assert len(drawn) == 1 and _cache(project) == cached

    doctree = project.parent / "build" / "doctrees" / "index.doctree"
    read_at = doctree.stat().st_mtime_ns
    later = os.stat(project / "models" / "tiny_cnn.latency.yaml").st_mtime + 10
    os.utime(project / "models" / "tiny_cnn.latency.yaml", (later, later))
    build(project)  # a dependency's time changed, its bytes did not: read again, not drawn again
    assert doctree.stat().st_mtime_ns != read_at, "the annotation file is a dependency of the page"
    assert len(drawn) == 1 and _cache(project) == cached

    annotation = project / "models" / "tiny_cnn.latency.yaml"
    values = latencies(annotation)
    coolest = min(values, key=values.__getitem__)
    text = annotation.read_text(encoding="utf-8")
    annotation.write_text(text.replace(f"latency_us: {values[coolest]:.2f}", "latency_us: 999.0", 1), encoding="utf-8")
    assert latencies(annotation)[coolest] == 999.0
    later += 10
    os.utime(annotation, (later, later))
    changed = build(project)
    assert len(drawn) == 2 and len(_cache(project)) == 2
    [div] = divs(changed.page())
    fills = check_tiny_cnn(svg_of(div), annotation, inlined=True)
    assert fills[coolest] == "#fde725"  # viridis at 1.0: the formerly coolest box is now the hottest


def _three_pictures(project: Path) -> Build:
    """A page with tiny_cnn twice (the same directive) and control_flow, built."""
    shutil.copy(P.SAMPLES / "onnx" / "control_flow.onnx", project / "models")
    (project / "index.rst").write_text(DIRECTIVE + "\n" + DIRECTIVE.split("\n", 3)[3] + "\n.. annograph:: "
                                       "models/control_flow.onnx\n   :collapse: none\n", encoding="utf-8")
    return build(project)


def test_pictures_on_one_page_share_no_id(project: Path, tmp_path: Path) -> None:
    """The same model twice and another model on one page: every id of the page is unique, every reference in a
    picture names an id of that picture, the shipped files keep Graphviz's ids, and a second build of the same
    source elsewhere writes the same page."""
    result = _three_pictures(project)
    assert result.warnings == ""
    page = result.page()
    found = divs(page)
    assert len(found) == 3
    prefixes = [inlined_prefix(svg_of(div)) for div in found]
    assert len(set(prefixes)) == 3
    ids = page_ids(page)
    assert len(ids) == len(set(ids)), sorted({i for i in ids if ids.count(i) > 1})[:5]
    assert sum(i.startswith(tuple(prefixes)) for i in ids) > 2 * 18  # the pictures' ids are on the page
    first, second = (check_tiny_cnn(svg_of(div), inlined=True) for div in found[:2])
    assert first == second  # the same picture, only its ids differ
    assert svg_of(found[0]).replace(prefixes[0], prefixes[1]) == svg_of(found[1])
    for shipped in (result.out / "_images").glob("annograph-*.svg"):
        assert not INLINE_ID.search(shipped.read_text(encoding="utf-8")), shipped.name
    copy = tmp_path / "again" / "src"
    shutil.copytree(project, copy, ignore=shutil.ignore_patterns("build"))
    assert build(copy).page() == page


def test_the_page_with_three_pictures_opens_in_chromium_without_errors(project: Path) -> None:
    """Debian's chromium reads the built page as a browser does: no console error, three pictures, no id twice
    in the document, and any in-picture reference (``href="#…"``, ``url(#…)``) finds an element of its own
    picture (these pictures hold none; ``test_inline_svg`` has Graphviz's gradients and links)."""
    from playwright.sync_api import sync_playwright

    from e2e.test_html_report import ARGS, CHROMIUM

    result = _three_pictures(project)
    problems: list[str] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        try:
            page = browser.new_page()
            page.on("console", lambda m: m.type == "error" and problems.append(m.text))
            page.on("pageerror", lambda e: problems.append(str(e)))
            page.goto((result.out / "index.html").resolve().as_uri())
            page.wait_for_load_state("load")
            found = page.evaluate("""() => {
                const ids = [...document.querySelectorAll('[id]')].map(e => e.id);
                const svgs = [...document.querySelectorAll('div.annograph svg')];
                const stray = [];
                for (const svg of svgs) {
                    for (const e of svg.querySelectorAll('*')) {
                        for (const a of e.attributes) {
                            const refs = [...a.value.matchAll(/^#(.+)$|url\\(#([^)]+)\\)/g)].map(m => m[1] || m[2]);
                            for (const r of a.name.endsWith('href') || a.value.includes('url(') ? refs : []) {
                                const target = document.getElementById(r);
                                if (!target || target.closest('svg') !== svg) stray.push(r);
                            }
                        }
                    }
                }
                return {ids: ids.length, unique: new Set(ids).size, svgs: svgs.length,
                        boxes: svgs.map(s => s.querySelectorAll('g.op').length), stray};
            }""")
        finally:
            browser.close()
    assert problems == []
    assert found["svgs"] == 3 and found["ids"] == found["unique"] > 3 * 18, found
    assert found["boxes"][:2] == [18, 18] and found["stray"] == [], found


def test_a_wide_picture_scales_to_the_text_column_and_links_to_its_full_size(project: Path) -> None:
    """control_flow is over 900 pt wide: in Chromium it takes the text column's width, no more, keeps its
    proportions (no clipping, no scroll bar), and the link under it opens the file drawn at its full size."""
    from playwright.sync_api import sync_playwright

    from e2e.test_html_report import ARGS, CHROMIUM

    shutil.copy(P.SAMPLES / "onnx" / "control_flow.onnx", project / "models")
    (project / "index.rst").write_text("Wide\n====\n\n.. annograph:: models/control_flow.onnx\n   :collapse: none\n",
                                       encoding="utf-8")
    result = build(project)
    assert result.warnings == ""
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto((result.out / "index.html").resolve().as_uri())
            page.wait_for_load_state("load")
            found = page.evaluate("""() => {
                const div = document.querySelector('div.annograph'), svg = div.querySelector('svg');
                const column = div.parentElement.getBoundingClientRect(), box = svg.getBoundingClientRect();
                const link = document.querySelector('p.annograph-link a');
                return {column: column.width, width: box.width, height: box.height, scroll: div.scrollWidth,
                        client: div.clientWidth, href: link.getAttribute('href'), text: link.textContent};
            }""")
        finally:
            browser.close()
    full = parse_svg(result.out / found["href"])
    natural_w, natural_h = (float(full.get(side).removesuffix("pt")) for side in ("width", "height"))
    assert natural_w > 900  # wider than the 660 px column at its natural size
    assert found["width"] <= found["column"] + 0.5 and found["width"] > 0.9 * found["column"], found
    assert found["column"] < natural_w * 4 / 3  # the column is narrower than the picture's natural size
    assert found["height"] / found["width"] == pytest.approx(natural_h / natural_w, rel=0.01), found
    assert found["scroll"] <= found["client"], found  # nothing left to scroll to
    assert found["text"] == "open the picture at full size"
    assert full.find(f"{SVG_NS}g") is not None  # the full-size file is the drawn picture


def test_errors_are_warnings_naming_the_document_and_line(project: Path) -> None:
    (project / "models" / "broken.onnx").write_bytes(b"not a model at all")
    (project / "index.rst").write_text(
        "Errors\n======\n\n"
        ".. annograph:: models/missing.onnx\n\n"                       # line 4
        ".. annograph:: models/broken.onnx\n\n"                        # line 6
        ".. annograph:: models/tiny_cnn.onnx\n   :collapse: deep\n\n"   # line 8
        ".. annograph:: models/tiny_cnn.onnx\n   :annotations: models/nope.yaml\n\n"  # line 11
        ".. annograph:: models/tiny_cnn.onnx\n   :dims: batch\n\n"      # line 14
        ".. annograph:: models/tiny_cnn.onnx\n   :dims: batch=1\n\n"    # line 17: tiny_cnn has no free dims: drawn
        "Text after.\n", encoding="utf-8")
    result = build(project)
    lines = [line for line in result.warnings.splitlines() if line.strip()]
    assert "Traceback" not in result.warnings
    index = str(project / "index.rst")
    expected = {4: "missing.onnx", 6: "broken.onnx", 8: "--collapse 'deep'", 11: "nope.yaml", 14: "--dim 'batch'",
                17: "tiny_cnn.onnx: --dim 'batch=1' pins nothing"}
    assert len(lines) == len(expected), lines
    for line, (number, word) in zip(lines, sorted(expected.items())):
        assert line.startswith(f"{index}:{number}: WARNING: annograph: ") and word in line, line
    # only the last directive draws: its dims pin nothing in a model whose inputs are all fixed, and lose nothing
    assert "Text after." in result.page() and len(divs(result.page())) == 1
    assert lines[-1].endswith("(every input shape is fixed); ignored")



def test_a_missing_model_is_read_again_once_it_is_there(project: Path) -> None:
    """A directive whose model is missing (or of no known format) warns and still notes the model as a
    dependency, so the next build reads the page again: put in place, the model is drawn."""
    (project / "index.rst").write_text(DIRECTIVE.replace("tiny_cnn.onnx", "later.onnx"), encoding="utf-8")
    first = build(project)
    assert f"{project / 'index.rst'}:6: WARNING: annograph: " in first.warnings and "later.onnx" in first.warnings
    assert not divs(first.page())
    shutil.copy(TINY_CNN, project / "models" / "later.onnx")
    second = build(project)
    assert second.warnings == ""
    [div] = divs(second.page())
    check_tiny_cnn(svg_of(div), inlined=True)

def _names(svg: str | bytes) -> list[str]:
    """The ``name:`` line of each operator box's tooltip."""
    return sorted(line for group in svg_groups(parse_svg(svg), "op").values()
                  for line in tooltip_of(group).splitlines() if line.startswith("name: "))


def test_an_etrecord_names_the_program_and_is_a_dependency(project: Path, executorch_portable: Path) -> None:
    """``:etrecord:`` names a program alone in its folder as ``render --etrecord`` does (the shipped SVG is the
    command's bytes); the ETRecord given, or the one beside a program, is hashed into the key and noted as a
    dependency: spoiled, the page is read again and warns at the directive's line; removed from beside the
    program, the boxes are the program's own. On an ONNX model it is a warning."""
    shutil.copy(executorch_portable / "portable.pte", project / "models")
    (project / "records").mkdir()
    record = project / "records" / "portable.etrecord"
    shutil.copy(executorch_portable / "portable.etrecord", record)
    (project / "index.rst").write_text(
        "ET\n==\n\n.. annograph:: models/portable.pte\n   :etrecord: records/portable.etrecord\n\n"  # line 4
        ".. annograph:: models/tiny_cnn.onnx\n   :etrecord: records/portable.etrecord\n", encoding="utf-8")  # 7
    first = build(project)
    index = project / "index.rst"
    assert first.warnings.strip().startswith(f"{index}:7: WARNING: annograph: ") and \
        "is for ExecuTorch programs" in first.warnings and len(first.warnings.strip().splitlines()) == 1
    [shipped] = first.out.glob("_images/annograph-*.svg")
    cli = project.parent / "cli.svg"
    done = run_cli("render", project / "models" / "portable.pte", "--etrecord", record, "-o", cli)
    assert done.returncode == 0, done.stderr
    assert shipped.read_bytes() == cli.read_bytes()
    named = _names(shipped.read_bytes())
    assert len(named) >= 4 and "name: aten_convolution_default" in named
    good = record.read_bytes()
    record.write_bytes(good[:3000])
    spoiled = build(project)
    assert f"{index}:4: WARNING: annograph: {record}: " in spoiled.warnings, spoiled.warnings
    record.unlink()
    (project / "index.rst").write_text("ET\n==\n\n.. annograph:: models/portable.pte\n", encoding="utf-8")
    beside = project / "models" / "portable.etrecord"
    beside.write_bytes(good)
    [div] = divs(build(project).page())
    assert _names(svg_of(div)) == named
    beside.unlink()
    bare = build(project)
    assert bare.warnings == ""
    [div] = divs(bare.page())
    assert _names(svg_of(div)) == [f"name: kernel_{i}" for i in range(5) if f"name: kernel_{i}" in svg_of(div)]
    assert len(_names(svg_of(div))) == len(named)


def test_unmatched_ids_are_coverage_warnings(project: Path) -> None:
    (project / "models" / "other.yaml").write_text("operators:\n  - id: no/such/op\n    meta: {latency_us: 1}\n",
                                                   encoding="utf-8")
    (project / "index.rst").write_text("X\n=\n\n.. annograph:: models/tiny_cnn.onnx\n   :annotations: "
                                       "models/tiny_cnn.latency.yaml, models/other.yaml\n", encoding="utf-8")
    result = build(project)
    [warning] = result.warnings.splitlines()
    assert "index.rst:4: WARNING: annograph: " in warning and "no/such/op" in warning
    assert "[annograph.coverage]" in warning
    assert len(divs(result.page())) == 1


def test_latex_gets_a_pdf_and_text_the_alt_text(project: Path) -> None:
    latex = build(project, "latex")
    assert latex.warnings == ""
    tex = next(latex.out.glob("*.tex")).read_text(encoding="utf-8")
    [name] = re.findall(r"\\sphinxincludegraphics\[[^]]*\]\{(annograph-\w+\.pdf)\}", tex)
    assert (latex.out / name).read_bytes().startswith(b"%PDF-")
    text = build(project, "text")
    assert "[tiny_cnn coloured by latency]" in (text.out / "index.txt").read_text(encoding="utf-8")


def test_a_big_model_is_an_overview_linking_to_its_pages(project: Path) -> None:
    from renderer.loaders.registry import load_model
    from renderer.picture.folding import fold
    from renderer.picture.pages import plan

    shutil.copy(P.SAMPLES / "onnx" / "bert_scoped.onnx", project / "models")
    (project / "index.rst").write_text("Big\n===\n\n.. annograph:: models/bert_scoped.onnx\n   :color-by: macs\n"
                                       "   :dims: batch=1, sequence=32\n", encoding="utf-8")
    result = build(project)
    assert result.warnings == ""
    model = load_model(project / "models" / "bert_scoped.onnx")
    book = plan(model, fold(model).is_drawn)
    [div] = divs(result.page())
    root = parse_svg(svg_of(div))
    links = {v for e in root.iter() for k, v in e.attrib.items() if k.endswith("href")}
    [picture] = (result.out / "_images").glob("annograph-*.svg")
    pages = sorted((result.out / "_images" / f"{picture.name}.pages").glob("*.svg"))
    assert len(pages) == len(book.pages) - 1
    assert {link.split("#")[0] for link in links} == {f"_images/{picture.name}.pages/{p.name}" for p in pages}
    for page in pages:  # links between the page files only; the rest as every SVG output is checked
        data = page.read_text(encoding="utf-8")
        links = re.findall(r'href="([^"]*)"', data)
        assert links and all(re.fullmatch(rf"(\.\./{picture.name}|page-\d+\.svg)(#[\w.:-]+)?", x) for x in links)
        in_page = re.sub(r'href="[^"#]*(#[^"]*)?"', lambda m: f'href="{m.group(1) or "#top"}"', data)
        P.check_svg(in_page.encode("utf-8"))


def test_hostile_names_through_the_directive_are_inert(project: Path) -> None:
    """Every payload in every field of a model (one directive each), and as the alt text; a hostile file name."""
    blocks = []
    for k, payload in enumerate(P.PAYLOADS):
        P.hostile_onnx(payload.text, project / "models" / f"m{k}.onnx")
        alt = " ".join(payload.text.split()) if payload.short else ""
        blocks.append(f".. annograph:: models/m{k}.onnx\n   :collapse: none\n" + (f"   :alt: {alt}\n" if alt else ""))
    hostile_file = "<img src=x onerror=alert(1)>.onnx"
    shutil.copy(TINY_CNN, project / "models" / hostile_file)
    blocks.append(f".. annograph:: models/{hostile_file}\n")
    (project / "index.rst").write_text("Hostile\n=======\n\n" + "\n".join(blocks), encoding="utf-8")
    result = build(project)
    assert "Traceback" not in result.warnings
    found = divs(result.page())
    assert len(found) == len(P.PAYLOADS) + 1, result.warnings[:2000]
    for payload, div in zip([*P.PAYLOADS, None], found):
        visible = "\n".join(P.svg_texts(P.check_svg(svg_of(div).encode("utf-8"))))
        P.check_html(div.encode("utf-8"))
        if payload is not None and payload.short:
            assert " ".join(payload.text.split()) in " ".join(visible.replace("\xa0", " ").split())
    assert len(svg_groups(parse_svg(svg_of(found[-1])), "op")) == 18
    assert "&lt;img src=x onerror=alert(1)&gt;.onnx" in found[-1]


def test_importing_the_extension_is_light() -> None:
    code = ("import sys, renderer.integrations.sphinx; "
            "print(sorted(m for m in ('onnx', 'numpy', 'matplotlib', 'tflite') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "[]", (done.stdout, done.stderr)
