"""Page geometry (issue 17): no page of any model, in any format, over 199 in a side; no PDF page shrunk;
compact pages; small sibling groups packed onto shared pages; a 20k-operator model in a readable number of
pages. Checked by parsing what was written: SVG width/height, PDF MediaBox (pypdf), PNG header."""

from __future__ import annotations

import io
import re
from pathlib import Path
from urllib.parse import unquote

import onnx
import pytest

import renderer
from conftest import ONNX, SVG_NS, XLINK_NS, legend_texts, legend_where, parse_svg, run_cli, transformer_models
from renderer.picture.folding import fold

MAX_SIDE_PT = 199 * 72  # what graphviz_run leaves unshrunk in a PDF; under the 200 in PDF viewers open
MAX_AREA_PER_BOX = 150_000  # pt² of page per drawn box (operators, group boxes, stubs, model inputs/outputs)
PNG_DPI = 110
LOWERED = 5000  # the size limit a test lowers, to see pages planned again
CNN_CHAIN = ONNX / "cnn_chain.onnx"  # samples/make_cnn_chain.py: 550 drawn operators, ~54,000 pt tall flat
LIGHT = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"


def _book(overview: Path) -> list[Path]:
    folder = overview.with_name(overview.name + ".pages")
    return [overview] + sorted(folder.glob(f"page-*{overview.suffix}"))


def _svg_size(root) -> tuple[float, float]:  # type: ignore[no-untyped-def]
    return float(root.get("width").removesuffix("pt")), float(root.get("height").removesuffix("pt"))


def _boxes(root) -> int:  # type: ignore[no-untyped-def]
    """Drawn boxes: every Graphviz node but the legend and the stubs that turn from one column to another."""
    return sum(1 for g in root.iter(f"{SVG_NS}g") if "node" in (g.get("class") or "").split()
               and "column-stub" not in (g.get("class") or "").split() and not (g.get("id") or "").endswith("-legend"))


def _drawn_ids(path: Path) -> list[str]:
    model = renderer.load_model(path)
    folding = fold(model)
    return [n.element_id for n in model.nodes() if folding.is_drawn(n)]


def _check_book(overview: Path, model: Path, compact: bool = True) -> list[tuple[float, float, int]]:
    """Every page within the size limit and (``compact``) at most ``MAX_AREA_PER_BOX`` a box, every drawn
    operator on exactly one page, text unshrunk. Returns (width, height, boxes) per page."""
    seen: dict[str, int] = {}
    sizes = []
    for path in _book(overview):
        root = parse_svg(path)
        width, height = _svg_size(root)
        boxes = _boxes(root)
        assert max(width, height) <= MAX_SIDE_PT, (path.name, width, height)
        # the overview too: light_densenet121's grid of 12 boxes held 166,238 pt² a box before its rows were
        # sized by their text, ranked over the whole page and aligned across its clusters
        assert not compact or width * height / boxes <= MAX_AREA_PER_BOX, (path.name, width, height, boxes)
        transform = next(root.iter(f"{SVG_NS}g")).get("transform")
        assert transform.startswith("scale(1 1)"), (path.name, transform)
        for g in root.iter(f"{SVG_NS}g"):
            ident = g.get("id") or ""
            if ident.startswith("op-"):
                seen[ident] = seen.get(ident, 0) + 1
        sizes.append((width, height, boxes))
    assert sorted(seen) == sorted(_drawn_ids(model))
    assert set(seen.values()) == {1}
    return sizes


@pytest.fixture(scope="module")
def chain_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("chain") / "chain.svg"
    run = run_cli("render", CNN_CHAIN, "-o", out, "--no-sidecar", "--keep-free-dims", timeout=600)
    assert run.returncode == 0, run.stderr
    return out


def test_a_long_cnn_chain_continues_over_pages_within_the_limit(chain_report: Path) -> None:
    """Flat, the 550-operator chain lays out ~54,000 pt tall: it is drawn as pages instead, each a page's worth
    of blocks (the 6-12-operator blocks packed together), linked through stubs."""
    sizes = _check_book(chain_report, CNN_CHAIN)
    assert 4 <= len(sizes) <= 12
    detail = [boxes for _, _, boxes in sizes[1:]]
    assert sum(30 <= b <= 100 for b in detail) >= len(detail) - 2, detail  # packed, not a page per block
    stubs = [g for path in _book(chain_report)[1:] for g in parse_svg(path).iter(f"{SVG_NS}g")
             if "stub" in (g.get("class") or "").split()]
    assert len(stubs) >= len(sizes) - 2  # each page continues from the one before


def test_links_into_a_shared_page_land_on_their_group(chain_report: Path) -> None:
    """A box whose group shares a page with its siblings links to that page at the group's first operator,
    so no two boxes link to the same place."""
    pages = {p.resolve(): parse_svg(p) for p in _book(chain_report)}
    ids = {p: {e.get("id") for e in root.iter() if e.get("id")} for p, root in pages.items()}
    anchored = 0
    for path, root in pages.items():
        hrefs = []
        for g in root.iter(f"{SVG_NS}g"):
            anchor = g.find(f"{SVG_NS}a")
            if anchor is None:
                continue
            ident = anchor.get("id") or g.get("id") or ""  # a box's link, or a cell's of a run box
            href = unquote(anchor.get(f"{XLINK_NS}href") or "")
            if "box-" not in ident or not href:
                continue
            hrefs.append(href)
            target, _, element = href.partition("#")
            if element:
                assert element.startswith("op-") and element in ids[(path.parent / target).resolve()], href
                anchored += 1
        assert len(hrefs) == len(set(hrefs)), path.name
    assert anchored >= 20


def test_flat_named_chain_is_cut_into_pages_too(tmp_path: Path) -> None:
    """The same chain with its node names removed: stages, still within the limit."""
    model = onnx.load(str(CNN_CHAIN))
    for node in model.graph.node:
        node.name = ""
    path = tmp_path / "unnamed_chain.onnx"
    onnx.save(model, str(path))
    out = tmp_path / "u.svg"
    run = run_cli("render", path, "-o", out, "--no-sidecar", timeout=600)
    assert run.returncode == 0, run.stderr
    assert len(_check_book(out, path)) > 2


@pytest.mark.parametrize("name", ["light_resnet50", "light_inception_v2", "light_shufflenet", "light_densenet121"])
def test_light_cnns_fit_their_pages(tmp_path: Path, name: str) -> None:
    """onnx's light_* CNNs: 17,000-62,000 pt tall as one picture, so drawn as pages, each within the limit."""
    model = LIGHT / f"{name}.onnx"
    out = tmp_path / f"{name}.svg"
    run = run_cli("render", model, "-o", out, "--no-sidecar", timeout=600)
    assert run.returncode == 0, run.stderr
    assert len(_check_book(out, model)) > 1


@pytest.mark.parametrize("path", [LIGHT / "light_inception_v1.onnx", ONNX / "bert_dynamo.onnx",
                                  ONNX / "tiny_transformer.onnx", ONNX / "silero_vad.onnx"])
def test_models_that_fit_keep_their_limits(tmp_path: Path, path: Path) -> None:
    out = tmp_path / "m.svg"
    run = run_cli("render", path, "-o", out, "--no-sidecar", timeout=600)
    assert run.returncode == 0, run.stderr
    _check_book(out, path)


def test_inception_v1_fits_and_stays_one_picture(tmp_path: Path) -> None:
    out = tmp_path / "i.svg"
    assert run_cli("render", LIGHT / "light_inception_v1.onnx", "-o", out, "--no-sidecar").returncode == 0
    assert not out.with_name("i.svg.pages").exists()


def test_pdf_and_png_pages_are_the_svg_pages_unshrunk(tmp_path: Path, chain_report: Path) -> None:
    """The PDF holds every page at least at its SVG size (so its text keeps its size, 8 pt at least); each PNG
    page is its SVG page at 110 dpi."""
    from pypdf import PdfReader

    pdf, png = tmp_path / "c.pdf", tmp_path / "c.png"
    run = run_cli("render", CNN_CHAIN, "-o", pdf, "-o", png, "--no-sidecar", "--keep-free-dims", timeout=600)
    assert run.returncode == 0, run.stderr
    svg_sizes = [_svg_size(parse_svg(p)) for p in _book(chain_report)]
    reader = PdfReader(io.BytesIO(pdf.read_bytes()))
    assert len(reader.pages) == len(svg_sizes)
    for page, (width, height) in zip(reader.pages, svg_sizes):
        box = page.mediabox
        assert max(box.width, box.height) <= MAX_SIDE_PT
        # not scaled down to fit: neato -n2 draws the laid-out graph without the pad, to its own bounding box
        assert box.width >= 0.9 * width - 50 and box.height >= 0.9 * height - 50, (box, width, height)
    pngs = _book(png)
    assert len(pngs) == len(svg_sizes)
    _check_png_colours(pngs[1], _book(chain_report)[1])
    for path, (width, height) in zip(pngs, svg_sizes):
        data = path.read_bytes()
        assert data.startswith(b"\x89PNG\r\n\x1a\n")
        pixels = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
        # drawn from the laid-out graph like the PDF, never scaled down
        assert pixels[0] >= (0.9 * width - 50) * PNG_DPI / 72, path.name
        assert pixels[1] >= (0.9 * height - 50) * PNG_DPI / 72, path.name


def _check_png_colours(png: Path, svg: Path) -> None:
    """A page's PNG (256 colours, written by gd) has the exact colours of the SVG's fills: white ground, box
    fills and header bands."""
    from PIL import Image

    with Image.open(png) as image:
        assert image.mode == "P"
        counts = {colour: n for n, colour in image.convert("RGB").getcolors(1 << 24)}
    assert max(counts, key=counts.__getitem__) == (255, 255, 255)
    fills = {e.get("fill") for e in parse_svg(svg).iter() if re.fullmatch(r"#[0-9a-f]{6}", e.get("fill") or "")}
    assert len(fills) >= 4
    for fill in fills:
        assert tuple(bytes.fromhex(fill[1:])) in counts, fill


def test_a_page_laid_out_too_big_is_planned_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                   chain_report: Path) -> None:
    """With the limit lowered to 5,000 pt, pages that come out taller (a chain of 90 operators: ~9,000 pt) are
    planned again with fewer operators until they fit."""
    from renderer.compose import book_output
    from renderer.picture import pages

    monkeypatch.setattr(pages, "MAX_PAGE_PT", LOWERED)
    monkeypatch.setattr(book_output, "MAX_PAGE_PT", LOWERED)
    model = renderer.load_model(CNN_CHAIN)
    out = tmp_path / "small.svg"
    renderer.render(model, output=out)
    files = _book(out)
    for path in files[1:]:
        width, height = _svg_size(parse_svg(path))
        assert max(width, height) <= LOWERED, (path.name, width, height)
    seen = [g.get("id") for path in files for g in parse_svg(path).iter(f"{SVG_NS}g")
            if (g.get("id") or "").startswith("op-")]
    assert sorted(seen) == sorted(_drawn_ids(CNN_CHAIN))
    assert len(files) > len(_book(chain_report))  # more pages than at the normal limit


_OP_NODE = re.compile(r"^\s*(op_\d+_\d+) \[", re.M)
_HREF = re.compile(r'href="([^"#]*)[#"]', re.I)  # a node's href, or HREF in a table cell


def test_a_20k_operator_model_has_a_readable_number_of_pages(tmp_path: Path) -> None:
    """benchmarks' scaling-20k transformer (224 layers, 19,967 operators): at most 700 pages, every drawn
    operator on exactly one, and every page reached from the overview by following box links. DOT only (the
    plan and every page's source, no layout)."""
    path = tmp_path / "t20k.onnx"
    transformer_models().write(path, 224, "scoped")
    out = tmp_path / "t.dot"
    run = run_cli("render", path, "-o", out, "--no-sidecar", timeout=600)
    assert run.returncode == 0, run.stderr
    files = _book(out)
    assert 100 < len(files) <= 700
    seen: dict[str, int] = {}
    links: dict[str, set[str]] = {}
    for file in files:
        text = file.read_text(encoding="utf-8")
        for name in _OP_NODE.findall(text):
            seen[name] = seen.get(name, 0) + 1
        links[file.stem] = {Path(unquote(h)).stem for h in _HREF.findall(text) if h}
    drawn = {i.replace("-", "_") for i in _drawn_ids(path)}
    assert set(seen) == drawn and set(seen.values()) == {1}
    reached, todo = {files[0].stem}, [files[0].stem]
    while todo:  # links name the pages' SVG files: follow them by stem
        for name in links[todo.pop()]:
            if name in links and name not in reached:
                reached.add(name)
                todo.append(name)
    assert reached == set(links)


def _focus_pages(overview: Path, limit: float = MAX_SIDE_PT) -> dict[str, list[str]]:
    """Page file name → the operators it draws, each page within the size limit, every page linked from another
    (or the first)."""
    drawn: dict[str, list[str]] = {}
    linked: set[str] = set()
    for path in _book(overview):
        root = parse_svg(path)
        width, height = _svg_size(root)
        assert max(width, height) <= limit, (path.name, width, height)
        drawn[path.name] = [g.get("id") for g in root.iter(f"{SVG_NS}g") if (g.get("id") or "").startswith("op-")]
        linked |= {unquote(a.get(f"{XLINK_NS}href") or "").split("#")[0].rsplit("/", 1)[-1]
                   for a in root.iter(f"{SVG_NS}a")}
    assert set(drawn) - {overview.name} <= linked, sorted(set(drawn) - linked)
    return drawn


def _neighbourhood_ids(path: Path, centre: str, radius: int) -> set[str]:
    from renderer.picture.pages import neighbourhood

    model = renderer.load_model(path)
    node = model.main.nodes[int(centre.split(":")[1])]
    return {n.element_id for n in neighbourhood(node, radius, fold(model).is_drawn)}


def test_a_big_focus_is_cut_into_pages_within_the_limit(tmp_path: Path) -> None:
    """--radius 50 around an operator of the 3.6k-operator transformer reaches ~1,400 drawn operators: one page
    was 42,542 pt wide. Now parts of the view continue through stubs, each page within 14,400 pt, every operator
    of the neighbourhood drawn once, the centre (highlighted) on the first page."""
    path = tmp_path / "t3600.onnx"
    transformer_models().write(path, 40, "scoped")
    out = tmp_path / "focus.svg"
    run = run_cli("render", path, "--focus", "0:1500", "--radius", "50", "-o", out, "--no-sidecar", timeout=600)
    assert run.returncode == 0, run.stderr
    drawn = _focus_pages(out)
    assert len(drawn) > 2
    seen = [ident for ids in drawn.values() for ident in ids]
    assert len(seen) == len(set(seen)) and set(seen) == _neighbourhood_ids(path, "0:1500", 50)
    assert "op-0-1500" in drawn[out.name]
    stubs = [g for g in parse_svg(out).iter(f"{SVG_NS}g") if "stub" in (g.get("class") or "").split()]
    assert any("part 2 of" in "".join(t.text or "" for t in g.iter(f"{SVG_NS}text")) for g in stubs)
    _assert_numbered_focus_pages(out, len(drawn), "(focus, 50 hops · page {} of {})")


def _assert_numbered_focus_pages(out: Path, count: int, where: str) -> None:
    """The first page of a view cut into parts is its page 1 (it read "(overview of N-1 pages)"), crumbs name the
    parts, and no legend speaks of an overview."""
    for number, path in enumerate(_book(out), 1):
        crumbs, stands = legend_where(path)
        assert stands == where.format(number, count), path.name
        assert re.fullmatch(rf".* \(part {number} of {count}\)", crumbs[-1]), crumbs
        assert len(crumbs) == (1 if number == 1 else 2) and "(part 1 of" in crumbs[0], crumbs
        assert not [text for text in legend_texts(path) if "overview" in text], path.name


def _fan_out(path: Path, readers: int) -> Path:
    """One tensor read by ``readers`` operators side by side (a wide level of a single rank)."""
    from onnx import TensorProto, helper

    nodes = [helper.make_node("Relu", ["x"], ["hub"], name="hub")]
    nodes += [helper.make_node("Sigmoid", ["hub"], [f"y{k}"], name=f"reader_{k}") for k in range(readers)]
    graph = helper.make_graph(nodes, "fan", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
                              [helper.make_tensor_value_info(f"y{k}", TensorProto.FLOAT, [1, 8])
                               for k in range(readers)])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def test_a_focus_page_laid_out_too_big_is_cut_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """200 readers of one tensor around --focus hub --radius 1: a view no prediction flags (few operators, two
    ranks), laid out ~9,000 pt wide. With the limit lowered to 5,000 pt, its layout's size cuts it into parts."""
    from renderer.compose import book_output
    from renderer.core.options import RenderOptions
    from renderer.picture import pages

    monkeypatch.setattr(pages, "MAX_PAGE_PT", LOWERED)
    monkeypatch.setattr(book_output, "MAX_PAGE_PT", LOWERED)
    model = renderer.load_model(_fan_out(tmp_path / "fan.onnx", 200))
    out = tmp_path / "fan.svg"
    renderer.render(model, options=RenderOptions(focus=["hub"], radius=1, color_by="none"), output=out)
    drawn = _focus_pages(out, LOWERED)
    seen = sorted(i for ids in drawn.values() for i in ids)
    assert len(drawn) > 1 and seen == sorted(f"op-0-{k}" for k in range(201))
    _assert_numbered_focus_pages(out, len(drawn), "(focus, 1 hop · page {} of {})")
