"""The layout cache (issue 30): a re-render with new numbers reuses the layout and writes the very bytes a render
without the cache writes, on every format and on a book of pages; two processes share a folder; a corrupt,
foreign or hostile entry is ignored and written over; the folder stays under its cap, least recently used out."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from cache_runs import files as _files
from cache_runs import latencies as _latencies
from conftest import ONNX, ROOT, parse_svg, run_cli
from payloads import PAYLOADS, Payload

SVG_NS = "{http://www.w3.org/2000/svg}"
FORMATS = ("svg", "pdf", "png", "dot", "html")




def _entries(cache: Path) -> dict[str, float]:
    return {p.name: p.stat().st_mtime for p in cache.glob("*.layout")}


def _render(model: Path, annotations: Path, out: Path, *flags: str) -> None:
    out.mkdir(parents=True, exist_ok=True)
    outputs = [a for fmt in FORMATS for a in ("-o", str(out / f"m.{fmt}"))]
    run = run_cli("render", model, "-q", "--no-sidecar", "-a", annotations, *outputs, *flags, cwd=out)
    assert run.returncode == 0, run.stderr


def _fills(files: dict[str, bytes]) -> list[str]:
    """The fills of every operator box of the SVG pictures."""
    return [str(p.get("fill")) for name, data in sorted(files.items()) if name.endswith(".svg")
            for g in parse_svg(data).iter(f"{SVG_NS}g") if " op " in f" {g.get('class')} "
            for p in g.iter(f"{SVG_NS}polygon")]


@pytest.mark.parametrize("model, count", [("light_resnet50.onnx", 415), ("tiny_cnn.onnx", 64)])
def test_a_cached_render_is_the_bytes_of_an_uncached_one(tmp_path: Path, model: str, count: int) -> None:
    """light_resnet50 is drawn as an overview and pages, tiny_cnn as one picture: after a render with one latency
    file, a render with another one reuses every layout (no entry is added) and writes each format, pages
    included, byte for byte as a render with ``--no-layout-cache``; the two latency files do colour differently."""
    cache = tmp_path / "cache"
    first, second = _latencies(tmp_path / "a.csv", 1, count), _latencies(tmp_path / "b.csv", 2, count)
    _render(ONNX / model, first, tmp_path / "first", "--layout-cache", str(cache))
    laid = _entries(cache)
    assert laid
    _render(ONNX / model, second, tmp_path / "cached", "--layout-cache", str(cache))
    assert set(_entries(cache)) == set(laid), "the re-render laid out anew"
    _render(ONNX / model, second, tmp_path / "plain", "--no-layout-cache")
    cached, plain = _files(tmp_path / "cached"), _files(tmp_path / "plain")
    assert cached.keys() == plain.keys() and len(cached) >= len(FORMATS)
    assert [name for name in cached if cached[name] != plain[name]] == []
    fills, before = _fills(cached), _fills(_files(tmp_path / "first"))
    assert len(fills) == len(before) > 20 and fills != before
    for name, data in cached.items():
        if name.endswith(".svg"):
            assert parse_svg(data).findall(f".//{SVG_NS}g")


def test_two_processes_share_a_cache(tmp_path: Path) -> None:
    """Two renders started at once on one empty folder both finish with the bytes of an uncached render."""
    cache, model = tmp_path / "cache", ONNX / "light_resnet50.onnx"
    notes = _latencies(tmp_path / "a.csv", 3, 415)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    runs = []
    for k in range(2):
        (tmp_path / f"p{k}").mkdir()
        runs.append(subprocess.Popen([sys.executable, "-m", "renderer", "render", str(model), "-q", "--no-sidecar",
                                      "-a", str(notes), "-o", "m.svg", "-o", "m.pdf", "--layout-cache", str(cache)],
                                     cwd=tmp_path / f"p{k}", env=env, stderr=subprocess.PIPE))
    for run in runs:
        assert run.wait(timeout=600) == 0, run.stderr.read() if run.stderr else ""
    (tmp_path / "plain").mkdir()
    run = run_cli("render", model, "-q", "--no-sidecar", "-a", notes, "-o", "m.svg", "-o", "m.pdf",
                  "--no-layout-cache", cwd=tmp_path / "plain")
    assert run.returncode == 0, run.stderr
    plain = _files(tmp_path / "plain")
    assert _files(tmp_path / "p0") == plain and _files(tmp_path / "p1") == plain
    assert _entries(cache) and not list(cache.glob(".*.part"))


def _svg(model: Path, cache: Path | None) -> bytes:
    import renderer
    from renderer.compose.rendering import render_bytes
    from renderer.core.options import RenderOptions

    options = RenderOptions(layout_cache=str(cache) if cache else "")
    return render_bytes(renderer.load_model(str(model)), None, options, "svg")


def test_corrupt_foreign_and_hostile_entries_are_ignored_and_rewritten(tmp_path: Path) -> None:
    """Every entry of a rendered model spoiled in turn (cut short, garbage, another key's entry under its name, a
    well-formed entry whose positioned graph carries markup but no valid signature, a link to /dev/zero, a FIFO):
    the render is still the uncached bytes, without the markup, and the entry is valid again afterwards."""
    from renderer.picture.layout_cache import for_setting

    model, cache = ONNX / "tiny_cnn.onnx", tmp_path / "cache"
    plain = _svg(model, None)
    assert _svg(model, cache) == plain
    names = sorted(_entries(cache))
    good = {name: (cache / name).read_bytes() for name in names}
    other = next(iter(good.values()))
    head, _, body = good[names[0]].partition(b"\n")[2].partition(b"\n")
    hostile = b"annograph-layout\n" + head + b"\n" + body.replace(b"label=<", b'label=<<B>x</B>', 1).replace(
        b"digraph", b'digraph {stylesheet="evil.css"} digraph', 1)
    spoils = {"cut": lambda data: data[: len(data) // 2], "garbage": lambda data: os.urandom(len(data)),
              "foreign": lambda data: other if data != other else good[names[-1]], "hostile": lambda data: hostile}
    lookup = for_setting(str(cache))
    assert lookup is not None
    for kind, spoil in spoils.items():
        for name in names:
            (cache / name).write_bytes(spoil(good[name]))
        assert _svg(model, cache) == plain, kind
        assert all(lookup.get(name[:-7]) is not None for name in names), kind
    for name in names:
        (cache / name).unlink()
        if name == names[0]:
            (cache / name).symlink_to("/dev/zero")
        else:
            os.mkfifo(cache / name)
    assert _svg(model, cache) == plain
    assert b"evil.css" not in plain
    assert all(lookup.get(name[:-7]) is not None for name in names)


_NAMED_PAGES = [
    'digraph g {\n subgraph cluster { graph [id="c-1"]\n b_2 [label="y" id="op-0-2"] }\n a_1 [label="x" id="op-0-1"]'
    '\n a_1 -> b_2 [lhead=cluster id="e-1"]\n}\n',
    "digraph { subgraph cluster { a } }",
    "digraph { a -> b }",
]


@pytest.mark.parametrize("text", _NAMED_PAGES)
def test_a_pages_names_are_kept_beside_its_layout(tmp_path: Path, text: str) -> None:
    """``LayoutCache.named`` is ``dot_names.named``, kept: another cache on the folder reads it back without a new
    entry (a cluster named ``cluster`` has the empty name in SVG; a text without names keeps none), and a spoiled
    entry is made anew."""
    from renderer.picture import dot_names
    from renderer.picture.layout_cache import LayoutCache

    expected, cache = dot_names.named(text), LayoutCache(tmp_path)
    assert cache.named(text) == expected
    entries = _entries(tmp_path)
    assert len(entries) == 1 and cache.counts() == (0, 0)  # not counted as a layout (``said``)
    again = LayoutCache(tmp_path, secret=cache._key())
    assert again.named(text) == expected and _entries(tmp_path).keys() == entries.keys()
    entry = tmp_path / next(iter(entries))
    kept = entry.read_bytes()
    entry.write_bytes(kept[:-1] + bytes([kept[-1] ^ 1]))
    assert again.named(text) == expected and entry.read_bytes() == kept


def test_the_folder_keeps_to_its_cap_least_recently_used_out(tmp_path: Path) -> None:
    """A folder capped at three entries' size keeps the three most recently used: a read refreshes an entry; files
    of the folder that are not entries are never removed."""
    from renderer.picture.layout_cache import LayoutCache

    model, source = ONNX / "tiny_cnn.onnx", tmp_path / "source"
    _svg(model, source)
    found = LayoutCache(source)
    laid = [(n[:-7], p) for n in sorted(_entries(source)) if (p := found.get(n[:-7])) is not None and len(p) == 3]
    assert laid  # a layout: the positioned graph, its places, its drawing (beside its names and its columns)
    name, parts = laid[0]
    size = (source / f"{name}.layout").stat().st_size
    folder = tmp_path / "capped"
    folder.mkdir()
    (folder / "notes.txt").write_text("mine")
    capped = LayoutCache(folder, cap=3 * size + size // 2, secret=found._key())
    keys = [f"{k:064x}" for k in range(5)]
    for k, key in enumerate(keys[:3]):
        capped.put(key, *parts)
        os.utime(folder / f"{key}.layout", (1000 + k, 1000 + k))
    assert capped.get(keys[0]) == parts  # now the most recently used
    capped.put(keys[3], *parts)
    assert sorted(_entries(folder)) == sorted(f"{k}.layout" for k in (keys[0], keys[2], keys[3]))
    capped.put(keys[4], *parts)
    assert sorted(_entries(folder)) == sorted(f"{k}.layout" for k in (keys[0], keys[3], keys[4]))
    assert (folder / "notes.txt").read_text() == "mine"


def test_the_tests_never_touch_the_user_cache() -> None:
    """The session's folder and key (conftest), never the user's."""
    import platformdirs

    from renderer.picture.layout_cache import default_folder

    assert not str(default_folder()).startswith(platformdirs.user_cache_dir("annograph"))
    assert not os.environ["ANNOGRAPH_CACHE_KEY"].startswith(platformdirs.user_config_dir("annograph"))


_GEOMETRY = re.compile(r'\b(x|y|cx|cy|rx|ry|points|d|width|height|viewBox|transform)="[^"]*"')


def _drawn(source: str) -> str:
    done = subprocess.run(["dot", "-Tsvg"], input=source.encode(), capture_output=True, check=True)
    return done.stdout.decode("utf-8")


def _put_back(source: str) -> tuple[str, int]:
    """The SVG a render makes of ``source``: its skeleton drawn by Graphviz, the real text put back in Python;
    and how many tokens the skeleton had."""
    from renderer.picture import skeleton

    frame = skeleton.skeleton(source)
    return frame.fill_svg(_drawn(frame.text)), len(frame.tokens)


def _hostile_dot(text: str) -> str:
    """A node and an edge carrying ``text`` everywhere annograph puts model or annotation text, escaped by
    ``renderer.escape``: an HTML label's text in a ``FONT COLOR`` and outside any, a cell's title, a tooltip,
    a link; with colours to stand in for."""
    from graphviz.quoting import quote

    from renderer.core import escape

    cell = escape.html_text(text, 200)
    label = (f'<<TABLE BGCOLOR="#A1B2C3" COLOR="#102030"><TR><TD><FONT COLOR="#ffffff" POINT-SIZE="9">{cell}: <B>'
             f'12.5 ms</B></FONT></TD><TD TITLE="{escape.html_text(text, 160)}" HREF="{escape.href(text)}">'
             f'{cell} 3</TD></TR></TABLE>>')
    return (f"digraph g {{\n\tnode [fontname=Helvetica shape=plain]\n"
            f"\tn [label={label} tooltip={quote(escape.tooltip([text, '4.5 ms']))} href={quote(escape.href(text))}]\n"
            f'\tn -> m [color="#606060" tooltip={quote(escape.tooltip([text]))}]\n}}\n')


@pytest.mark.parametrize("payload", [p for p in PAYLOADS if p.name != "big"], ids=lambda p: p.name)
def test_the_svg_put_back_is_graphvizs_own(payload: Payload) -> None:
    """The real text put back into the skeleton's SVG (``Skeleton.fill_svg``, escaped by ``escape.svg_*_of``) is
    what Graphviz writes drawing the real DOT: the two SVGs are the same once the places and sizes are set
    aside (the skeleton's values are laid out as wider fields), on every hostile payload; and the skeleton did
    stand the label's values, colours and links in (else there would be nothing to compare)."""
    source = _hostile_dot(payload.text + " 0:1")
    put_back, tokens = _put_back(source)
    assert tokens >= 7, tokens
    assert _GEOMETRY.sub("", put_back) == _GEOMETRY.sub("", _drawn(source))
    assert parse_svg(put_back.encode()).findall(f".//{SVG_NS}text")


def test_a_models_svg_put_back_is_graphvizs_own(tmp_path: Path) -> None:
    """On a real model's overview and pages (light_resnet50 coloured by a latency file, thousands of tokens):
    the SVG put back is Graphviz's own drawing of the real DOT, places and sizes set aside."""
    _render(ONNX / "light_resnet50.onnx", _latencies(tmp_path / "a.csv", 5, 415), tmp_path / "out", "--no-layout-cache")
    pages = sorted((tmp_path / "out").rglob("*.dot"))
    assert len(pages) >= 3
    for page in pages:
        source = page.read_text(encoding="utf-8")
        put_back, tokens = _put_back(source)
        assert tokens > 300, (page, tokens)
        assert _GEOMETRY.sub("", put_back) == _GEOMETRY.sub("", _drawn(source)), page
