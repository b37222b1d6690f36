"""The overview of a big model, read as a person would: groups named by the model, each box's share of the
cost, one edge between groups that feed each other. Real exported models, checked by parsing the SVG."""

from __future__ import annotations

import csv
import math
import re
from pathlib import Path

import onnx
import pytest
from onnx import TensorProto, helper

import renderer
from conftest import ONNX, SVG_NS, XLINK_NS, parse_svg, run_cli, transformer_models
from renderer.picture.folding import fold

INDEX_RANGE = re.compile(r"\bops? \d+\s*[–-]\s*\d+|\bstages? \d")
INTERNAL_ID = re.compile(r"#(?:stage|gathered|graph|block)\d|\bbox-\d|\brun-\d")
COUNTED = re.compile(r"^\d[\d,]* (?:ops|groups|operators)\b|\b\d+ groups?, \d+ ops?\b")
SHARE = re.compile(r"([0-9]+\.[0-9]) % of (\S+)")


def _pages(overview: Path) -> list[Path]:
    folder = overview.with_name(overview.name + ".pages")
    return [overview, *sorted(folder.glob("page-*.svg"))]


def _texts(element) -> list[str]:  # type: ignore[no-untyped-def]
    return [t.text or "" for t in element.iter(f"{SVG_NS}text")]


def _by_class(root, name: str) -> list:  # type: ignore[no-untyped-def]
    return [g for g in root.iter(f"{SVG_NS}g") if name in (g.get("class") or "").split()]


def _names_on(path: Path) -> list[tuple[str, str]]:
    """(what, text) for every group title, stub label, breadcrumb and link title on one page."""
    root = parse_svg(path)
    found = []
    for box in _by_class(root, "group"):
        texts = [t for t in _texts(box) if t.strip()]
        found.append(("group title", texts[0]))
    for stub in _by_class(root, "stub"):
        found.append(("stub", " ".join(_texts(stub))))
    for cluster in _by_class(root, "cluster"):
        found.append(("cluster title", " ".join(_texts(cluster))[:200]))
    legend = next((g for g in root.iter(f"{SVG_NS}g") if (g.get("id") or "").endswith("-legend")), None)
    if legend is not None:
        found += [("crumb", (a.get(f"{XLINK_NS}title") or "")) for a in legend.iter(f"{SVG_NS}a")]
    for anchor in root.iter(f"{SVG_NS}a"):
        found.append(("link title", anchor.get(f"{XLINK_NS}title") or ""))
    return found


def _render(model: Path, out: Path, *args: str) -> Path:
    run = run_cli("render", model, "-o", out, "--no-sidecar", *args, timeout=600)
    assert run.returncode == 0, run.stderr
    return out


@pytest.fixture(scope="module")
def flat40(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return transformer_models().write(tmp_path_factory.mktemp("flat") / "flat40.onnx", 40, "flat")


CASES = [
    ("bert_scoped.onnx", ["--collapse", "2"]),
    ("bert_dynamo.onnx", ["--collapse", "2"]),
    ("unnamed_nodes.onnx", ["--collapse", "1"]),
    ("silero_vad.onnx", ["--collapse", "3"]),
    ("light_resnet50.onnx", ["--collapse", "2"]),
    ("light_inception_v1.onnx", ["--collapse", "2"]),
]


@pytest.mark.parametrize(("name", "args"), CASES + [("flat40", [])], ids=[c[0] for c in CASES] + ["flat40"])
def test_groups_stubs_crumbs_and_links_are_named_by_the_model(name: str, args: list[str], tmp_path: Path,
                                                             flat40: Path) -> None:
    """No page of a scoped, dynamo, unnamed, If-bodied, CNN or flat-named model names a group, stub or
    breadcrumb by operator index ranges, counts or internal ids (``#stage5``, ``box-12``)."""
    model = flat40 if name == "flat40" else ONNX / name
    overview = _render(model, tmp_path / "m.svg", *args)
    pages = _pages(overview)
    checked = 0
    for page in pages:
        for what, text in _names_on(page):
            assert not INDEX_RANGE.search(text), (page.name, what, text)
            assert not INTERNAL_ID.search(text), (page.name, what, text)
            if what != "link title":  # a box's tooltip may count its operators; its name may not
                assert not COUNTED.search(text), (page.name, what, text)
            checked += 1
    assert checked > (3 if name == "unnamed_nodes.onnx" else 10)


def _latency(model: Path, path: Path) -> dict[str, float]:
    values = {}
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["id", "latency_us"])
        for node in renderer.load_model(model).main.nodes:
            values[f"op-0-{node.index}"] = value = float((node.index * 37) % 101 + 1)
            writer.writerow([f"0:{node.index}", value])
    return values


@pytest.mark.parametrize("naming", ["scoped", "flat"])
def test_shares_of_a_summed_metric_add_up_to_100_over_the_overview(naming: str, tmp_path: Path) -> None:
    """Every box says its share of the model's total latency (``12.3 % of latency_us``), a run of identical
    layers its share as a whole; with the share of the operators drawn in full on the overview (its legend)
    they make 100 %, and each equals the box's summed latency over the model total."""
    model = transformer_models().write(tmp_path / "m.onnx", 40, naming)
    notes = tmp_path / "latency.csv"
    latency = _latency(model, notes)
    overview = _render(model, tmp_path / "m.svg", "-a", str(notes), "--color-by", "latency_us")
    root = parse_svg(overview)
    loaded = renderer.load_model(model)
    drawn = fold(loaded).is_drawn
    total = math.fsum(latency[n.element_id] for n in loaded.main.nodes if drawn(n))  # folded constants: in no box
    shares = []
    for box in _by_class(root, "group"):
        found = list(SHARE.finditer("".join(_texts(box))))
        assert len(found) == 1 and found[0].group(2) == "latency_us", _texts(box)
        shares.append(float(found[0].group(1)))
    legend = " ".join(_texts(next(g for g in root.iter(f"{SVG_NS}g") if g.get("id") == "overview-legend")))
    here = re.search(r"operators drawn here\s+([0-9.]+) % of latency_us", legend)
    assert here, legend
    shares.append(float(here.group(1)))
    assert len(shares) >= 2 and math.isclose(sum(shares), 100.0, abs_tol=0.1), shares
    on_overview = [latency[i] for i in (g.get("id") for g in root.iter(f"{SVG_NS}g")) if i in latency]
    assert float(here.group(1)) == pytest.approx(100 * math.fsum(on_overview) / total, abs=0.1)
    for anchor in root.iter(f"{SVG_NS}a"):  # each box's tooltip gives its sum; its share is that over the total
        box = re.search(r"latency_us: ([0-9.e+k]+)$", anchor.get(f"{XLINK_NS}title") or "")
        if box and "% of" not in (anchor.get(f"{XLINK_NS}title") or ""):
            value = float(box.group(1).replace("k", "e3"))
            shown = [float(m.group(1)) for m in SHARE.finditer("".join(_texts(anchor)))]
            assert shown and shown[0] == pytest.approx(100 * value / total, abs=0.1)


def _pingpong(path: Path) -> Path:
    """Three scopes in a chain a → b → a → b: groups a and b feed each other."""
    nodes = []
    for scope in ("a", "b", "a", "b"):
        op = "Relu" if scope == "a" else "Tanh"  # not twins: two boxes, not one run
        nodes += [(op, f"/{scope}/{op}_{len(nodes) + i}") for i in range(5)]
    return _save_chain(path, nodes)


def _save_chain(path: Path, nodes: list[tuple[str, str]]) -> Path:
    """A valid ONNX chain of one-input operators, (op type, node name) each, [1, 8] float tensors."""
    protos = [helper.make_node(op, [f"t{k}"], [f"t{k + 1}"], name=name) for k, (op, name) in enumerate(nodes)]
    graph = helper.make_graph(protos, "chain", [helper.make_tensor_value_info("t0", TensorProto.FLOAT, [1, 8])],
                              [helper.make_tensor_value_info(f"t{len(nodes)}", TensorProto.FLOAT, [1, 8])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path


def test_groups_that_feed_each_other_are_one_edge_with_both_counts(tmp_path: Path) -> None:
    overview = _render(_pingpong(tmp_path / "p.onnx"), tmp_path / "p.svg", "--collapse", "1")
    root = parse_svg(overview)
    boxes = {g.get("id"): " ".join(_texts(g)) for g in _by_class(root, "group")}
    assert len(boxes) == 2, boxes
    between = []
    for edge in root.iter(f"{SVG_NS}g"):
        if "edge" not in (edge.get("class") or "").split():
            continue
        title = next(edge.iter(f"{SVG_NS}title")).text or ""
        ends = title.replace("&#45;", "-").split("->")
        if all(e.startswith("box_") for e in ends):
            between.append(edge)
    assert len(between) == 1, "one edge between the two groups, not two opposing arrows"
    text = " ".join(_texts(between[0]))
    assert re.fullmatch(r"→ 2 tensors · 64 B\s+← 1×8 · 32 B", text), text  # a→b twice, b→a once
    heads = [p for p in between[0].iter(f"{SVG_NS}polygon")]
    assert len(heads) == 2, "an arrowhead at each end"


def _scoped_chain(path: Path, parts: int, prefix: str = "", loose: int = 0, loose_scope: str = "") -> Path:
    """``parts`` named groups in a chain (``/part7/Relu_3``), each unlike its neighbours (no run of twins), under
    ``prefix`` when given, after ``loose`` operators in ``loose_scope``."""
    nodes = [("Relu", f"{loose_scope}/Relu_loose{j}") for j in range(loose)]
    for i in range(parts):
        nodes += [(op, f"{prefix}/part{i}/{op}_{j}")
                  for j, op in enumerate(["Relu"] * 3 + ["Tanh"] * (1 + i % 3) + ["Sigmoid"])]
    return _save_chain(path, nodes)


def _size_pt(root) -> tuple[float, float]:  # type: ignore[no-untyped-def]
    return float(root.get("width").removesuffix("pt")), float(root.get("height").removesuffix("pt"))


WINDOW_PX = (1600, 1000)
MIN_TEXT_PX = 8
SMALLEST_BOX_TEXT_PT = 8


def _boxes_whole_on_screen(overview: Path) -> float:
    """The share of group boxes wholly inside a 1,600 × 1,000 px window showing the overview from its top left
    corner at the zoom that fits it, but never so small that the boxes' 8 pt text is under 8 px."""
    root = parse_svg(overview)
    width, height = _size_pt(root)
    px_per_pt = 4 / 3
    zoom = max(MIN_TEXT_PX / (SMALLEST_BOX_TEXT_PT * px_per_pt),
               min(WINDOW_PX[0] / (width * px_per_pt), WINDOW_PX[1] / (height * px_per_pt)))
    seen_w, seen_h = WINDOW_PX[0] / (zoom * px_per_pt), WINDOW_PX[1] / (zoom * px_per_pt)
    dx, dy = _offset(root)
    boxes = _by_class(root, "group")
    whole = 0
    for box in boxes:
        left, top, right, bottom = _extent(box)
        whole += left + dx >= 0 and top + dy >= 0 and right + dx <= seen_w and bottom + dy <= seen_h
    return whole / len(boxes)


def _offset(root) -> tuple[float, float]:  # type: ignore[no-untyped-def]
    """The graph's translation: transform="scale(1 1) rotate(0) translate(x y)"."""
    graph = next(root.iter(f"{SVG_NS}g"))
    dx, dy = map(float, re.search(r"translate\(([-0-9.]+) ([-0-9.]+)\)", graph.get("transform")).groups())
    return dx, dy


def _extent(box) -> tuple[float, float, float, float]:  # type: ignore[no-untyped-def]
    """Left, top, right, bottom of a node's drawing, from its polygons' and paths' points."""
    xs, ys = [], []
    for shape in box.iter():
        for x, y in re.findall(r"([-0-9.]+),([-0-9.]+)", shape.get("points") or shape.get("d") or ""):
            xs.append(float(x))
            ys.append(float(y))
    return min(xs), min(ys), max(xs), max(ys)


def _rows_of_boxes(root) -> list[list[str]]:  # type: ignore[no-untyped-def]
    """The group boxes' titles in rows (boxes whose heights overlap), top to bottom, each row left to right."""
    boxes = sorted((_extent(box), [t for t in _texts(box) if t.strip()][0]) for box in _by_class(root, "group"))
    rows: list[list[tuple[tuple[float, float, float, float], str]]] = []
    for extent, title in sorted(boxes, key=lambda b: b[0][1]):
        row = next((r for r in rows if any(extent[1] < e[3] and e[1] < extent[3] for e, _ in r)), None)
        if row is None:
            rows.append(row := [])
        row.append((extent, title))
    return [[title for _, title in sorted(row)] for row in rows]


def test_a_long_chain_of_groups_wraps_into_a_grid_that_suits_a_screen(tmp_path: Path) -> None:
    """40 groups in a chain were one column 4,686 pt tall; wrapped into rows they make a picture about as wide
    as a screen, most boxes whole in a 1,600 × 1,000 window at a zoom where their text is at least 8 px (all of
    them without the default heat's two rows a box; 35 of 40 with them)."""
    overview = _render(_scoped_chain(tmp_path / "c.onnx", 40), tmp_path / "c.svg", "--collapse", "1")
    root = parse_svg(overview)
    assert len(_by_class(root, "group")) == 40
    width, height = _size_pt(root)
    assert 1.0 <= width / height <= 2.5, (width, height)
    assert _boxes_whole_on_screen(overview) >= 0.8


@pytest.mark.parametrize("naming", ["scoped", "flat"])
def test_the_big_transformer_overview_fits_a_screen(naming: str, tmp_path: Path) -> None:
    model = transformer_models().write(tmp_path / "m.onnx", 40, naming)
    overview = _render(model, tmp_path / "m.svg")
    width, height = _size_pt(parse_svg(overview))
    assert 0.8 <= width / height <= 2.5, (width, height)
    assert _boxes_whole_on_screen(overview) >= 0.6


def test_an_overview_of_one_box_opens_one_level_deeper(tmp_path: Path) -> None:
    """Everything under /decoder, which holds 3 operators of its own and one group of 30 parts: the overview
    shows the parts (wrapped into a grid), not one box for all of them beside 3 operators."""
    model = _scoped_chain(tmp_path / "d.onnx", 30, prefix="/decoder/blocks", loose=3, loose_scope="/decoder")
    overview = _render(model, tmp_path / "d.svg", "--collapse", "1")
    root = parse_svg(overview)
    titles = [[t for t in _texts(box) if t.strip()][0] for box in _by_class(root, "group")]
    assert sorted(titles) == sorted(f"part{i}" for i in range(30))
    assert len([g for g in root.iter(f"{SVG_NS}g") if "op" in (g.get("class") or "").split()]) == 3


def test_a_body_is_not_linked_to_itself_nor_its_nested_outputs_drawn_on_the_overview(tmp_path: Path) -> None:
    """silero_vad at depth 1: the If's two bodies are one run box; the 62 outputs of their nested bodies stay on
    the bodies' pages (they were drawn on the overview), and no stub leads from the box to its own pages."""
    overview = _render(ONNX / "silero_vad.onnx", tmp_path / "s.svg", "--collapse", "1")
    root = parse_svg(overview)
    outputs = [g for g in root.iter(f"{SVG_NS}g") if "graph-output" in (g.get("class") or "")]
    assert len(outputs) == 2  # the model's own: output, stateN
    assert not _by_class(root, "stub")
    cells = [t for t in _texts(_by_class(root, "run")[0])]
    assert "else_branch" in cells and "then_branch" in cells


def _fan(path: Path, parts: int) -> Path:
    """``parts`` named branches, each unlike its neighbours, all reading the input and summed at the end."""
    nodes, outs = [], []
    for i in range(parts):
        previous = "x"
        for j, op in enumerate(["Relu"] * 3 + ["Tanh"] * (1 + i % 3) + ["Sigmoid"]):
            nodes.append(helper.make_node(op, [previous], [f"b{i}_{j}"], name=f"/branch{i}/{op}_{j}"))
            previous = f"b{i}_{j}"
        outs.append(previous)
    nodes.append(helper.make_node("Sum", outs, ["y"], name="/Sum"))
    graph = helper.make_graph(nodes, "fan", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path


def test_a_wide_row_of_sibling_groups_wraps_into_a_grid(tmp_path: Path) -> None:
    """40 parallel branches were one row 5,813 × 309 pt; split into rows they make a grid. Their 40 edges into
    the Sum ran between the grid's columns and spread them apart (2,217 × 1,241 pt, 62 % of the boxes whole on
    screen): they are one edge from a note "from 40 groups", and the grid is tight enough to show every box."""
    overview = _render(_fan(tmp_path / "f.onnx", 40), tmp_path / "f.svg", "--collapse", "1")
    root = parse_svg(overview)
    assert len(_by_class(root, "group")) == 40
    width, height = _size_pt(root)
    assert width / height <= 2.6 and width * height <= 1600 * 1100, (width, height)
    assert _boxes_whole_on_screen(overview) >= 0.9
    notes = {g.get("id"): [t for t in _texts(g) if t.strip()] for g in _by_class(root, "stub")}
    assert sorted(notes.values()) == [["from 40 groups"], ["to 40 groups"]], notes
    into_sum = [e for e in _by_class(root, "edge") if (e.findtext(f"{SVG_NS}title") or "").endswith("->op_0_239")]
    assert len(into_sum) == 1 and "40 tensors" in " ".join(_texts(into_sum[0])), into_sum


def test_an_overview_of_one_run_box_opens_its_members(tmp_path: Path) -> None:
    """silero_vad at depth 2: the overview would be the If and one run box of its two identical bodies; it
    draws each body instead, as a frame holding the body's own operators and a box for each of its parts
    (stft, encoder, decoder, titled by their branch: ``then: stft``), each box linking to its own place: a page of
    its own, or its first operator on a page it shares with small siblings (pages.PACK_SHARE)."""
    overview = _render(ONNX / "silero_vad.onnx", tmp_path / "s.svg", "--collapse", "2")
    root = parse_svg(overview)
    assert not _by_class(root, "run")
    frames = [" ".join(_texts(c))[:60] for c in _by_class(root, "cluster")]
    assert any("If_0_else_branch" in f for f in frames) and any("If_0_then_branch" in f for f in frames), frames
    titles = sorted([t for t in _texts(box) if t.strip()][0] for box in _by_class(root, "group"))
    assert titles == [f"{branch}: {part}" for branch in ("else", "then") for part in ("decoder", "encoder", "stft")]
    links = {a.get(f"{XLINK_NS}href") for box in _by_class(root, "group") for a in box.iter(f"{SVG_NS}a")}
    assert len(links) == 6 and 1 + len({link.partition("#")[0] for link in links}) == len(_pages(overview))


def test_a_layer_that_differs_in_a_detail_sits_beside_its_series(tmp_path: Path) -> None:
    """bert_scoped_int8: layers 0–10 are identical, layer.11 differs in a detail. It was drawn open on the
    overview (its attention's self, its dense layers as boxes there, a level below its siblings); now it is
    a box beside the run of the others, and its page is one level down, as theirs are."""
    overview = _render(ONNX / "bert_scoped_int8.onnx", tmp_path / "q.svg")  # paged by default
    root = parse_svg(overview)
    titles = sorted([t for t in _texts(box) if t.strip()][0] for box in _by_class(root, "group"))
    assert "layer.11" in titles and "self" not in titles and "intermediate_act_fn" not in titles, titles
    runs = [[t for t in _texts(run) if t.strip()][0] for run in _by_class(root, "run")]
    assert len(runs) == 1 and runs[0].startswith("layer.0 … layer.10"), runs
    crumbs = {}
    for page in _pages(overview)[1:]:
        legend = next(g for g in parse_svg(page).iter(f"{SVG_NS}g") if (g.get("id") or "").endswith("-legend"))
        texts = [t for t in _texts(legend) if t.strip()]
        crumbs[texts[texts.index("group") + 1] if "group" in texts else page.name] = len(
            [a for a in legend.iter(f"{SVG_NS}a") if a.get(f"{XLINK_NS}href")])
    assert crumbs["encoder/layer.11"] == crumbs["encoder/layer.0"] == 1, crumbs


def test_a_cnn_chains_overview_is_a_grid_not_a_column(tmp_path: Path) -> None:
    """cnn_chain.onnx: 30 blocks inside a cluster. A row reaching into a cluster made dot's ranking fail and the
    overview fell back to one 6,600 pt column; the cluster's items now get rows of their own."""
    overview = _render(ONNX / "cnn_chain.onnx", tmp_path / "c.svg")
    root = parse_svg(overview)
    width, height = _size_pt(root)
    assert 0.6 <= width / height <= 2.5 and height < 2500, (width, height)
    rows = [row for row in _rows_of_boxes(root) if len(row) > 1]
    assert len(rows) >= 4 and all(len(row) >= 4 for row in rows[:-1]), rows


def test_every_grid_row_reads_in_the_models_order(tmp_path: Path) -> None:
    """cnn_chain.onnx's blocks 31–60, wrapped into rows inside their cluster: dot put a row's first block at
    its right end (blocks.37 38 39 36 40), pulled by the invisible edges that stacked every column; each row
    now reads left to right as the model runs, and follows on from the row above."""
    overview = _render(ONNX / "cnn_chain.onnx", tmp_path / "c.svg")
    rows = [row for row in _rows_of_boxes(parse_svg(overview)) if len(row) > 1]
    numbered = [[int(t.removeprefix("blocks.")) for t in row if t.startswith("blocks.") and "…" not in t]
                for row in rows]
    assert sum(len(row) for row in numbered) == 30, rows
    flat = [n for row in numbered for n in row]
    assert flat == sorted(flat) == list(range(31, 61)), rows
