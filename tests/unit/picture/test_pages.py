"""Big models: the overview and its linked pages, focused views, checked by parsing what was written."""

from __future__ import annotations

import csv
import html as html_lib
import math
import re
import subprocess
from collections import deque
from pathlib import Path
from urllib.parse import unquote

import onnx
import pytest
from onnx import TensorProto, helper

import renderer
from conftest import ONNX, SVG_NS, XLINK_NS, legend_texts, legend_where, parse_svg, run_cli, transformer_models
from renderer.picture.folding import fold
from renderer.picture.grouping.scopes import scope_of
from renderer.picture.pages import WRAPPER_SHARE, needs_pages, plan
from wheel_models import wheel_model

MAX_PAGE_PT = 14_400  # 200 in, what PDF viewers open
MIN_TEXT_PT = 8


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 3,591-operator BERT-like encoder with torch-style scoped names (40 layers), above the auto threshold."""
    path = tmp_path_factory.mktemp("big") / "bert40.onnx"
    transformer_models().write(path, 40, "scoped")
    return path


@pytest.fixture(scope="module")
def big_report(big: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The default report of ``big`` as SVG (overview + pages) with a known latency per operator."""
    folder = tmp_path_factory.mktemp("report")
    notes = folder / "latency.csv"
    _latency_file(renderer.load_model(big), notes)
    out = folder / "bert.svg"
    run = run_cli("render", big, "-a", notes, "--color-by", "latency_us", "-o", out, "--no-sidecar", timeout=600)
    assert run.returncode == 0, run.stderr
    return out, notes


def _latency_file(model: renderer.core.ir.Model, path: Path) -> dict[str, float]:
    """A latency per operator, different for each: ``(index * 37) % 101 + 1`` µs."""
    values = {}
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["id", "latency_us", "max_error"])
        for node in model.main.nodes:
            value = float((node.index * 37) % 101 + 1)
            values[f"0:{node.index}"] = value
            writer.writerow([f"0:{node.index}", value, value / 1000])
    return values


def _pages(overview: Path) -> dict[Path, object]:
    folder = overview.with_name(overview.name + ".pages")
    files = [overview] + sorted(folder.glob("page-*.svg"))
    return {f: parse_svg(f) for f in files}


def _ids(root: object, prefix: str) -> list[str]:
    return [g.get("id") for g in root.iter(f"{SVG_NS}g") if (g.get("id") or "").startswith(prefix)]  # type: ignore[attr-defined]


def _drawn(model: renderer.core.ir.Model) -> list[renderer.core.ir.Node]:
    folding = fold(model)
    return [n for n in model.nodes() if folding.is_drawn(n)]


def test_big_model_gets_an_overview_and_every_operator_is_on_exactly_one_page(big: Path,
                                                                              big_report: tuple[Path, Path]) -> None:
    model = renderer.load_model(big)
    drawn = _drawn(model)
    assert needs_pages(model, fold(model).is_drawn)  # the default switches to pages here
    pages = _pages(big_report[0])
    assert len(pages) > 10
    seen: dict[str, int] = {}
    for root in pages.values():
        for ident in _ids(root, "op-"):
            seen[ident] = seen.get(ident, 0) + 1
    assert sorted(seen) == sorted(n.element_id for n in drawn)
    assert set(seen.values()) == {1}
    overview = pages[big_report[0]]
    assert len(_ids(overview, "op-")) + len(_ids(overview, "box-")) + len(_ids(overview, "run-")) <= 60


def test_grouping_follows_the_names(big: Path, big_report: tuple[Path, Path]) -> None:
    """Every operator on a layer's page carries that layer's scope in its name; small layers share a page
    (``encoder/layer.2, layer.3``), which then holds exactly the layers it names."""
    model = renderer.load_model(big)
    by_id = {n.element_id: n for n in model.nodes()}
    covered: list[int] = []
    for path, root in _pages(big_report[0]).items():
        texts = [t.text or "" for t in root.iter(f"{SVG_NS}text")]
        group = texts[texts.index("group") + 1] if "group" in texts else ""  # the legend's row naming the page
        match = re.fullmatch(r"encoder/layer\.(\d+)(?:(?:, | … )layer\.(\d+))?", group)
        if path.name == big_report[0].name or not match:
            continue
        first, last = int(match.group(1)), int(match.group(2) or match.group(1))
        scopes = [scope_of(by_id[i]) for i in _ids(root, "op-")]
        assert scopes and all(s[0] == "encoder" for s in scopes), path
        layers = sorted({int(s[1].removeprefix("layer.")) for s in scopes})
        assert layers == list(range(first, last + 1)), (path, group)
        covered += layers
    assert sorted(covered) == list(range(40))


def test_every_link_reaches_an_existing_page_and_element(big_report: tuple[Path, Path]) -> None:
    pages = _pages(big_report[0])
    ids = {path.resolve(): {e.get("id") for e in root.iter() if e.get("id")} for path, root in pages.items()}  # type: ignore[attr-defined]
    links = 0
    for path, root in pages.items():
        for anchor in root.iter(f"{SVG_NS}a"):  # type: ignore[attr-defined]
            href = anchor.get(f"{XLINK_NS}href")
            if href is None:
                continue
            links += 1
            target, _, element = unquote(href).partition("#")
            assert not re.match(r"[a-z]+:", target), href  # relative, no scheme
            resolved = (path.parent / target).resolve() if target else path.resolve()
            assert resolved in ids, f"{path.name}: {href}"
            if element:
                assert element in ids[resolved], f"{path.name}: {href}"
    assert links > 100


def test_overview_box_aggregates_equal_their_members(big: Path, big_report: tuple[Path, Path]) -> None:
    """Each group box (and each cell of a repeated run) shows the sum of its members' latency, which the
    test adds up from the annotation file and the pages the box links to."""
    latency = {}
    with big_report[1].open(encoding="utf-8") as f:
        for row in csv.DictReader(f):
            latency[f"op-{row['id'].replace(':', '-')}"] = float(row["latency_us"])
    pages = _pages(big_report[0])
    ops_under: dict[Path, set[str]] = {}

    def members(path: Path) -> set[str]:  # the ops on a page and on every page its boxes link to
        if path not in ops_under:
            root = pages[path]
            found = set(_ids(root, "op-"))
            for anchor in root.iter(f"{SVG_NS}a"):  # type: ignore[attr-defined]
                parent_id = anchor.get("id") or ""
                href = unquote(anchor.get(f"{XLINK_NS}href") or "")
                if "box-" in parent_id and href and "#" not in href:
                    found |= members((path.parent / href).resolve())
            ops_under[path] = found
        return ops_under[path]

    pages = {p.resolve(): r for p, r in pages.items()}
    checked = 0
    for path, root in pages.items():
        for g in root.iter(f"{SVG_NS}g"):  # type: ignore[attr-defined]
            classes = (g.get("class") or "").split()
            if "group" not in classes:
                continue
            boxes = []  # (link, its value as shown)
            for anchor in g.iter(f"{SVG_NS}a"):
                href, tip = anchor.get(f"{XLINK_NS}href"), anchor.get(f"{XLINK_NS}title") or ""
                value = r"latency_us: ([0-9.e+k]+)$" if "run" not in classes else r": ([0-9.e+k]+)$"
                found = re.search(value, tip, re.M)
                if href and found:
                    boxes.append((href, float(found.group(1).replace("k", "e3"))))
            assert boxes, g.get("id")
            for href, shown in boxes:
                expected = math.fsum(latency[i] for i in members((path.parent / unquote(href)).resolve()))
                assert shown == pytest.approx(expected, rel=5e-3), (path.name, href)
                checked += 1
    assert checked >= 40  # the 40 layers' cells at least


def test_pages_stay_within_what_viewers_open_and_text_stays_readable(big_report: tuple[Path, Path]) -> None:
    for path, root in _pages(big_report[0]).items():
        width = float(root.get("width").removesuffix("pt"))  # type: ignore[attr-defined]
        height = float(root.get("height").removesuffix("pt"))  # type: ignore[attr-defined]
        assert width <= MAX_PAGE_PT and height <= MAX_PAGE_PT, (path.name, width, height)
        transform = next(root.iter(f"{SVG_NS}g")).get("transform")  # type: ignore[attr-defined]
        assert transform.startswith("scale(1 1)"), (path.name, transform)  # not shrunk to fit
        sizes = [float(t.get("font-size")) for t in root.iter(f"{SVG_NS}text")]  # type: ignore[attr-defined]
        assert min(sizes) >= MIN_TEXT_PT, path.name


def test_pdf_and_html_hold_every_page(big: Path, tmp_path: Path) -> None:
    pdf, html = tmp_path / "b.pdf", tmp_path / "b.html"
    run = run_cli("render", big, "-o", pdf, "-o", html, "--no-sidecar", "--no-edge-labels", timeout=600)
    assert run.returncode == 0, run.stderr
    info = subprocess.run(["pdfinfo", str(pdf)], capture_output=True, text=True, check=True).stdout
    pages = int(re.search(r"Pages:\s+(\d+)", info).group(1))
    text = html.read_text(encoding="utf-8")
    sections = re.findall(r'<section id="([^"]+)">', text)
    assert pages == len(sections) > 10
    ids = {html_lib.unescape(i) for i in re.findall(r' id="([^"]+)"', text)}
    targets = [html_lib.unescape(t) for t in re.findall(r'href="#([^"]*)"', text)]
    assert targets and all(t in ids for t in targets)
    assert not re.search(r'href="(?!#)', text)  # one self-contained file: no link leaves it


def test_collapse_none_draws_one_picture_and_depth_limits_nesting(tmp_path: Path, big: Path) -> None:
    flat = tmp_path / "flat.dot"
    assert run_cli("render", big, "--collapse", "none", "-o", flat, "--no-sidecar").returncode == 0
    assert not (tmp_path / "flat.dot.pages").exists()
    boxes = re.findall(r"^\s*op_\d+_\d+ \[", flat.read_text(encoding="utf-8"), re.M)
    assert len(boxes) == len(_drawn(renderer.load_model(big)))
    shallow = tmp_path / "d1.dot"
    assert run_cli("render", big, "--collapse", "1", "-o", shallow, "--no-sidecar").returncode == 0
    deep = tmp_path / "d3.dot"
    assert run_cli("render", big, "--collapse", "3", "-o", deep, "--no-sidecar").returncode == 0
    count = lambda p: len(list((p.parent / (p.name + ".pages")).glob("page-*.dot")))  # noqa: E731
    assert count(shallow) < count(deep)
    bad = run_cli("render", big, "--collapse", "many", "-o", tmp_path / "x.svg")
    assert bad.returncode != 0 and bad.stderr.count("\n") == 1 and "--collapse" in bad.stderr


def test_small_models_stay_flat_by_default(tmp_path: Path) -> None:
    out = tmp_path / "r.svg"
    assert run_cli("render", ONNX / "light_inception_v1.onnx", "-o", out, "--no-sidecar").returncode == 0
    assert not (tmp_path / "r.svg.pages").exists()


def _onnx_neighbourhood(path: Path, centre: str, radius: int) -> set[str]:
    """Node names within ``radius`` hops of ``centre``, walked on the ONNX protobuf itself (weights made by
    ConstantOfShape, which the picture folds into the boxes reading them, are not operators here)."""
    graph = onnx.load(str(path)).graph
    computed = [n for n in graph.node if n.op_type not in ("Constant", "ConstantOfShape")]
    producers = {out: n.name for n in computed for out in n.output}
    consumers: dict[str, list[str]] = {}
    for n in computed:
        for name in n.input:
            consumers.setdefault(name, []).append(n.name)
    nodes = {n.name: n for n in graph.node}
    seen, queue = {centre: 0}, deque([centre])
    while queue:
        name = queue.popleft()
        if seen[name] == radius:
            continue
        node = nodes[name]
        around = [producers[i] for i in node.input if i in producers]
        around += [c for o in node.output for c in consumers.get(o, [])]
        for other in around:
            if other not in seen:
                seen[other] = seen[name] + 1
                queue.append(other)
    return set(seen)


def test_focus_draws_exactly_the_neighbourhood(tmp_path: Path) -> None:
    path = ONNX / "light_resnet50.onnx"
    model = renderer.load_model(path)
    centre = next(n for n in model.main.nodes[40:] if n.op_type == "Conv")
    out = tmp_path / "f.svg"
    run = run_cli("render", path, "--focus", f"0:{centre.index}", "--radius", "3", "-o", out, "--no-sidecar")
    assert run.returncode == 0, run.stderr
    root = parse_svg(out)
    by_name = {n.name or n.display_name: n.element_id for n in model.main.nodes}
    assert all(n.name for n in onnx.load(str(path)).graph.node if n.op_type != "ConstantOfShape")  # walked by name
    expected = {by_name[name] for name in _onnx_neighbourhood(path, centre.name, 3)}
    assert set(_ids(root, "op-")) == expected
    assert not (tmp_path / "f.svg.pages").exists()
    stubs = [g for g in root.iter(f"{SVG_NS}g") if "stub" in (g.get("class") or "").split()]
    assert stubs  # the edges leaving the neighbourhood end in named stubs


def test_top_k_pages_hold_the_hottest_operators(tmp_path: Path) -> None:
    path = ONNX / "light_resnet50.onnx"
    model = renderer.load_model(path)
    notes = tmp_path / "lat.csv"
    values = _latency_file(model, notes)
    drawn = {f"0:{n.index}" for n in _drawn(model)}
    hottest = sorted(drawn, key=lambda k: (-values[k], k))[:3]
    out = tmp_path / "top.svg"
    run = run_cli("render", path, "-a", notes, "--color-by", "latency_us", "--top", "3", "--radius", "1",
                  "-o", out, "--no-sidecar")
    assert run.returncode == 0, run.stderr
    index = parse_svg(out)
    assert len(_ids(index, "box-")) == 3
    pages = sorted((tmp_path / "top.svg.pages").glob("page-*.svg"))
    assert len(pages) == 3
    for rank, (page, ident) in enumerate(zip(pages, hottest), 1):
        root = parse_svg(page)
        element = "op-" + ident.replace(":", "-")
        node = model.main.nodes[int(ident.split(":")[1])]
        around = [v.producer for v in node.inputs if v is not None and v.producer is not None]
        around += [c for v in node.outputs for c in v.consumers]
        expected = {element} | {n.element_id for n in around if f"0:{n.index}" in drawn}
        assert set(_ids(root, "op-")) == expected, rank
        title = "".join(t.text or "" for t in root.iter(f"{SVG_NS}text"))
        assert f"#{rank}" in title
    together = tmp_path / "one.svg"
    run = run_cli("render", path, "-a", notes, "--color-by", "latency_us", "--top", "3", "--radius", "0",
                  "--together", "-o", together, "--no-sidecar")
    assert run.returncode == 0, run.stderr
    assert sorted(_ids(parse_svg(together), "op-")) == sorted("op-" + i.replace(":", "-") for i in hottest)
    default = run_cli("render", path, "--top", "3", "-o", tmp_path / "d.svg", "--no-sidecar")
    assert default.returncode == 0, default.stderr  # the default heat (built-in MACs) ranks them
    assert "macs" in "".join(t.text or "" for t in parse_svg(tmp_path / "d.svg").iter(f"{SVG_NS}text"))
    no_metric = run_cli("render", path, "--top", "3", "--color-by", "none", "-o", tmp_path / "x.svg", "--no-sidecar")
    assert no_metric.returncode != 0 and "--color-by" in no_metric.stderr


@pytest.mark.parametrize(("command", "focus", "crumb"), [
    ("render", ["--focus", "4"], "Conv 0:4"),
    ("render", ["--focus", "4", "--focus", "2", "--together"], "Conv 0:4, Relu 0:2"),
    ("diff", ["--focus", "4", "--together"], "Conv 0:4"),
])
def test_a_one_page_focus_names_itself_not_an_overview(tmp_path: Path, command: str, focus: list[str],
                                                        crumb: str) -> None:
    """A focused view on one page read "overview" and "(overview of 0 pages)" in its legend."""
    model = tmp_path / "tiny_cnn.onnx"  # diff's legend names the model's path: the checkout's may say "overview"
    model.write_bytes((ONNX / "tiny_cnn.onnx").read_bytes())
    models = [model, model] if command == "diff" else [model]
    out = tmp_path / "focus.svg"
    run = run_cli(command, *models, *focus, "--radius", "1", "-o", out, "--no-sidecar")
    assert run.returncode == 0, run.stderr
    assert not (tmp_path / "focus.svg.pages").exists()
    assert legend_where(out) == ([crumb], "(focus, 1 hop)")
    assert not [text for text in legend_texts(out) if "overview" in text]


def test_focus_views_on_pages_of_their_own_count_them(tmp_path: Path) -> None:
    """Two --focus ids: an index page of the two views (not an "overview"), each view a page numbered of 2."""
    out = tmp_path / "focus.svg"
    run = run_cli("render", ONNX / "tiny_cnn.onnx", "--focus", "4", "--focus", "2", "--radius", "1", "-o", out,
                  "--no-sidecar")
    assert run.returncode == 0, run.stderr
    assert legend_where(out) == (["hot spots"], "(focus, 1 hop · index of 2 pages)")
    pages = tmp_path / "focus.svg.pages"
    assert legend_where(pages / "page-001.svg") == (["hot spots", "Conv 0:4"], "(focus, 1 hop · page 1 of 2)")
    assert legend_where(pages / "page-002.svg") == (["hot spots", "Relu 0:2"], "(focus, 1 hop · page 2 of 2)")


def test_a_huge_radius_stops_when_the_graph_is_covered(tmp_path: Path) -> None:
    """--radius 99999999999999999999 used to spin on an empty frontier; it draws the whole connected graph."""
    run = run_cli("render", ONNX / "tiny_cnn.onnx", "--focus", "stem/conv", "--radius", "9" * 20,
                  "-o", tmp_path / "x.svg", "--no-sidecar", timeout=120)  # the hang bound
    assert run.returncode == 0, run.stderr
    assert len(_ids(parse_svg(tmp_path / "x.svg"), "op-")) == 18  # every drawn operator of tiny_cnn


@pytest.mark.parametrize(("flag", "value"), [("--top", "0"), ("--top", "-5"), ("--radius", "-1"), ("--top", "x")])
def test_counts_out_of_range_are_usage_errors(flag: str, value: str, tmp_path: Path) -> None:
    run = run_cli("render", ONNX / "tiny_cnn.onnx", flag, value, "-o", tmp_path / "x.svg")
    assert run.returncode == 2 and flag in run.stderr and "Traceback" not in run.stderr, run.stderr
    assert len(run.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "x.svg").exists()


def test_focus_on_an_unknown_id_is_one_line(tmp_path: Path) -> None:
    run = run_cli("render", ONNX / "tiny_cnn.onnx", "--focus", "nope", "-o", tmp_path / "x.svg", "--no-sidecar")
    assert run.returncode != 0 and run.stderr.count("\n") == 1 and "--focus" in run.stderr
    assert not (tmp_path / "x.svg").exists()


def test_pages_folder_never_replaces_foreign_files(tmp_path: Path, big: Path) -> None:
    folder = tmp_path / "b.svg.pages"
    folder.mkdir()
    (folder / "notes.txt").write_text("mine", encoding="utf-8")
    run = run_cli("render", big, "-o", tmp_path / "b.svg", "--no-sidecar", "--no-edge-labels")
    assert run.returncode != 0 and "notes.txt" in run.stderr
    assert (folder / "notes.txt").read_text(encoding="utf-8") == "mine"
    assert not (tmp_path / "b.svg").exists()


def test_same_input_same_pages(tmp_path: Path, big: Path, big_report: tuple[Path, Path]) -> None:
    again = tmp_path / "bert.svg"
    run = run_cli("render", big, "-a", big_report[1], "--color-by", "latency_us", "-o", again, "--no-sidecar",
                  timeout=600, env={"PYTHONHASHSEED": "7"})
    assert run.returncode == 0, run.stderr
    first = {p.name: p.read_bytes() for p in _pages(big_report[0])}
    second = {p.name: p.read_bytes() for p in _pages(again)}
    assert first == second


def test_timeout_covers_the_whole_report_and_names_the_page(tmp_path: Path, big: Path) -> None:
    """A stand-in ``dot`` that never finishes: the one --timeout ends the report, naming a page."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "dot").write_text("#!/bin/sh\nsleep 30\n", encoding="utf-8")
    (bin_dir / "dot").chmod(0o755)
    out = tmp_path / "b.svg"
    run = run_cli("render", big, "--timeout", "2", "-o", out, "--no-sidecar", "--color-by", "none",
                  "--keep-free-dims", env={"PATH": f"{bin_dir}:/usr/bin:/bin"}, timeout=60)  # no shape run's note
    assert run.returncode != 0 and run.stderr.count("\n") == 1, run.stderr
    assert re.search(r"did not finish page \d+ \(.+\) within the 2 s of --timeout", run.stderr), run.stderr
    assert not out.exists() and not (tmp_path / "b.svg.pages").exists()


def test_flat_names_give_the_repeated_layers_as_one_run(tmp_path: Path) -> None:
    """No usable names (node_MatMul_64): the 40 layers are found as 40 identical blocks, drawn as one run box
    with a linked cell each, as the scoped export's layers are; nothing is named by operator indices."""
    path = tmp_path / "flat.onnx"
    transformer_models().write(path, 40, "flat")
    out = tmp_path / "flat.svg"
    run = run_cli("render", path, "-o", out, "--no-sidecar", timeout=600)
    assert run.returncode == 0, run.stderr
    root = parse_svg(out)
    texts = [t.text or "" for t in root.iter(f"{SVG_NS}text")]
    assert "repeated block" in " ".join(texts) and len(_ids(root, "run-")) == 1
    cells = [a for a in root.iter(f"{SVG_NS}a")
             if re.fullmatch(r"block \d+ of 40\b.*", a.get(f"{XLINK_NS}title") or "")]
    assert len(cells) == 40
    assert not any(re.search(r"\bops? \d+[–-]\d+|#\w+\d|\bstage \d", t) for t in texts)


def test_error_metrics_aggregate_to_the_worst_member(tmp_path: Path, big: Path, big_report: tuple[Path, Path]) -> None:
    """An error metric's group value is its worst member's (max), and ``--aggregate mean`` overrides it."""
    errors = {}
    with big_report[1].open(encoding="utf-8") as f:
        for row in csv.DictReader(f):
            errors[f"op-{row['id'].replace(':', '-')}"] = float(row["max_error"])
    for rule, combine in (("", max), ("mean", lambda xs: math.fsum(xs) / len(xs))):
        out = tmp_path / f"e{rule}.svg"
        extra = ["--aggregate", rule] if rule else []
        run = run_cli("render", big, "-a", big_report[1], "--color-by", "max_error", *extra, "-o", out,
                      "--no-sidecar", "--no-edge-labels", timeout=600)
        assert run.returncode == 0, run.stderr
        cells = 0
        for anchor in parse_svg(out).iter(f"{SVG_NS}a"):
            href, tip = anchor.get(f"{XLINK_NS}href"), anchor.get(f"{XLINK_NS}title") or ""
            found = re.fullmatch(r"encoder/layer\.\d+: ([0-9.e+-]+)", tip)
            if not (href and found):
                continue
            page = parse_svg(tmp_path / unquote(href))
            members = [errors[i] for i in _ids(page, "op-")]
            assert float(found.group(1)) == pytest.approx(combine(members), rel=5e-3), (rule, href)
            cells += 1
        assert cells == 40, rule


def test_overview_draws_repeated_layers_once_with_a_cell_each(tmp_path: Path) -> None:
    """The torch-exported 12-layer encoder: one box for the 12 identical layers, a linked cell per layer."""
    out = tmp_path / "bert.svg"
    run = run_cli("render", ONNX / "bert_scoped.onnx", "-o", out, "--no-sidecar")
    assert run.returncode == 0, run.stderr
    root = parse_svg(out)
    runs = _ids(root, "run-")
    assert len(runs) == 1
    cells = [a.get(f"{XLINK_NS}href") for a in root.iter(f"{SVG_NS}a")
             if re.fullmatch(r"encoder/layer\.\d+\b.*", a.get(f"{XLINK_NS}title") or "")]
    assert len(cells) == len(set(cells)) == 12
    model = renderer.load_model(ONNX / "bert_scoped.onnx")
    names = {n.element_id: n.name for n in model.nodes()}
    drawn_here = [names[i] for i in _ids(root, "op-")]
    assert drawn_here and not any("/encoder/" in name for name in drawn_here)  # no layer drawn on the overview


def _first_texts(root: object, cls: str) -> list[str]:
    """The first text line of each ``<g>`` of class ``cls`` (a group box's title, a frame's caption), in order."""
    found = []
    for g in root.iter(f"{SVG_NS}g"):  # type: ignore[attr-defined]
        texts = [" ".join(t.text.split()) for t in g.iter(f"{SVG_NS}text") if t.text and t.text.strip()]
        if cls in (g.get("class") or "").split() and texts:
            found.append(texts[0])
    return found


def test_the_overview_looks_through_a_wrapper_scope(tmp_path: Path) -> None:
    """A sentence-transformers export (paraphrase-MiniLM-L3, held out, not tuned on) wraps its BERT in one scope,
    ``model.0/auto_model`` (111 of its 122 drawn operators), beside the pooling ``model.1``. Its overview drew two
    boxes, that scope (100 % of the MACs; its page the 4.72 : 1 strip of issue 26) and the pooling; now the wrapper
    and its encoder (92 % of it) are frames, the embeddings drawn in full, the 3 layers one run box with a cell
    linked to each layer's own page."""
    out = tmp_path / "m.svg"
    run = run_cli("render", wheel_model("paraphrase_minilm_l3"), "-o", out, "--no-sidecar", timeout=600)
    assert run.returncode == 0, run.stderr
    root = parse_svg(out)
    assert _first_texts(root, "cluster") == ["model.0/auto_model", "embeddings", "encoder"]
    assert sorted(_first_texts(root, "group")) == ["layer.0 … layer.2 × 3", "model.1"]
    cells = {a.get(f"{XLINK_NS}href"): m.group(1) for a in root.iter(f"{SVG_NS}a")
             if (m := re.match(r"model\.0/auto_model/encoder/(layer\.\d) ", a.get(f"{XLINK_NS}title") or ""))}
    assert sorted(cells.values()) == ["layer.0", "layer.1", "layer.2"]
    for href in cells:
        page = parse_svg(tmp_path / unquote(href))
        assert len(_ids(page, "op-")) == 34, href  # the whole layer, drawn in full
    assert len(_ids(root, "op-")) == 11  # 2 loose, the wrapper's 5 (the attention mask) and the embeddings' 4


def _wrapped_model(path: Path, outside: int) -> Path:
    """A Keras-like export: ``functional_1`` holds 5 operators of its own and 8 blocks of 6 (53 in all), beside 2
    loose operators and a head scope of ``outside`` operators."""
    nodes = []
    x = "x"

    def op(op_type: str, name: str) -> None:
        nonlocal x
        nodes.append(helper.make_node(op_type, [x], [f"{name}:0"], name=name))
        x = f"{name}:0"

    op("Relu", "Relu_in")
    for j in range(5):
        op("Neg" if j % 2 else "Abs", f"functional_1/op_{j}")
    for k in range(8):
        for j, op_type in enumerate(("Sigmoid", "Relu", "Tanh", "Neg", "Abs", "Exp")):
            op(op_type, f"functional_1/block_{k}/{op_type}_{j}")
    for j in range(outside):
        op("Sigmoid" if j % 2 else "Relu", f"head/op_{j}")
    op("Relu", "Relu_out")
    graph = helper.make_graph(nodes, "wrapped", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                              [helper.make_tensor_value_info(x, TensorProto.FLOAT, [1, 4])])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return path


@pytest.mark.parametrize("outside", [5, 12])
def test_a_group_holding_nearly_all_operators_is_opened_on_the_overview(tmp_path: Path, outside: int) -> None:
    """A wrapper of 53 operators beside 2 loose ones and a head of 5 (88 %) is looked through: the overview draws it
    as a frame of its own 5 operators and its blocks' run box; beside a head of 12 (79 %) it stays a box."""
    model = renderer.load_model(_wrapped_model(tmp_path / "w.onnx", outside))
    book = plan(model, fold(model).is_drawn, force=True)
    assert book is not None
    overview = book.pages[0]
    boxes = [[g.label for g in run] for run in overview.all_boxes()]
    wrapper = 53 / (53 + 2 + outside)
    if wrapper >= WRAPPER_SHARE:
        assert [i.group.label for i in overview.inlines] == ["functional_1"]
        assert sorted(boxes) == [["block_0", *[f"block_{k}" for k in range(1, 8)]], ["head"]]
        # the small blocks share a page, numbered before the head's: in the order the overview is read
        assert [p.title for p in book.pages[1:]] == ["block_0 … block_7", "head"]
    else:
        assert not overview.inlines and sorted(boxes) == [["functional_1"], ["head"]]


_PAGE_LINK = re.compile(r"(?:[^#]*/)?page-(\d+)\.svg(?:#.*)?")  # a box's link, or a packed page's box's


def _model_order(overview: Path) -> tuple[dict[int, int], dict[int, list[tuple[int, int]]]]:
    """Read from the SVGs alone: each page's parent (the first page linking to it by a box or cell with a lower
    number) and, for each page, its own pages as (the greatest main-graph operator index drawn in full on that page
    or below it, its number), in number order."""
    ops: dict[int, set[int]] = {}
    links: dict[int, set[int]] = {}
    for path, root in _pages(overview).items():
        k = 0 if path == overview else int(path.stem.split("-")[1])
        ops[k] = {int(m.group(1)) for e in root.iter() if (m := re.fullmatch(r"op-0-(\d+)", e.get("id") or ""))}
        hrefs = [e.get(f"{XLINK_NS}href") or "" for e in root.iter()]
        links[k] = {int(m.group(1)) for h in hrefs if (m := _PAGE_LINK.fullmatch(h))}
    parent: dict[int, int] = {}
    for k in sorted(links):
        parent.update((c, k) for c in sorted(links[k]) if c > k and c not in parent)
    below: dict[int, list[int]] = {}
    for c, k in sorted(parent.items()):
        below.setdefault(k, []).append(c)

    def last(k: int) -> int:
        return max([*ops[k], *(last(c) for c in below.get(k, []))], default=-1)

    return parent, {k: [(last(c), c) for c in cs] for k, cs in below.items()}


@pytest.mark.parametrize("source", ["paraphrase_minilm_l3", "bert_scoped_int8", "tts_int8"])
def test_pages_are_numbered_in_the_order_the_overview_is_read(tmp_path: Path, source: str) -> None:
    """A page's own pages are numbered in model order, depth-first, frames' boxes where the frames are: planned box
    after box, the overview's own boxes were numbered before those inside its frames, so paraphrase-MiniLM-L3's
    pooling ``model.1`` (held out; the last part of the model, boxed beside the encoder's frame) was page 1 before
    the layers, and bert_scoped_int8's pooler page 2 among its encoder's layers. Siblings come in the order of
    their last operator, not their first: onnxruntime's quantizer puts the int8 TTS's weight quantization at the
    top of the graph, so by first operators its decoder's pages came before its encoder's. Read from the SVGs:
    every page after its parent, siblings in the order of their last operator."""
    if source == "tts_int8":
        import tts_int8

        path = tts_int8.save_int8(tmp_path / "tts.onnx", 2)
    else:
        path = wheel_model(source) if source == "paraphrase_minilm_l3" else ONNX / f"{source}.onnx"
    out = tmp_path / "m.svg"
    run = run_cli("render", path, "-o", out, "--no-sidecar", timeout=600)
    assert run.returncode == 0, run.stderr
    parent, below = _model_order(out)
    pages = sorted(out.with_name(out.name + ".pages").glob("page-*.svg"))
    assert len(parent) == len(pages) >= 4 and all(k < c for c, k in parent.items())
    for k, children in below.items():  # (a packed page's last is its last box's: the TTS's "pre … post")
        assert source == "tts_int8" or children == sorted(children), (k, children)
    if source == "paraphrase_minilm_l3":
        titles = {a.get(f"{XLINK_NS}href"): (a.get(f"{XLINK_NS}title") or "").split(" ")[0]
                  for a in parse_svg(out).iter(f"{SVG_NS}a")}
        assert [titles[f"m.svg.pages/page-00{k}.svg"] for k in range(1, 5)] == [
            *(f"model.0/auto_model/encoder/layer.{j}" for j in range(3)), "model.1"]
    if source == "tts_int8":  # the encoder's layers, the predictor, then the decoder
        titles = {a.get(f"{XLINK_NS}href"): (a.get(f"{XLINK_NS}title") or "").split(" ")[0]
                  for a in parse_svg(out).iter(f"{SVG_NS}a")}
        assert [titles.get(f"m.svg.pages/page-00{k}.svg", "").rsplit("/", 1)[-1] for k in (1, 2, 3, 5)] == [
            "layer.0", "layer.1", "predictor", "resblocks.0.3"], titles
