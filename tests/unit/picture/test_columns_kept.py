"""``renderer/picture/columns_kept.py``: what ``columns.lay_out`` decided for a page is kept beside its layouts, and a
re-render draws the same columns from it without the first layout, its check or its cut (issue 30), byte for byte
as a render without the cache; a spoiled or malformed record is ignored and written again."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import renderer
from conftest import ONNX, run_cli
from renderer.compose.rendering import render_bytes
from renderer.core.options import RenderOptions
from renderer.picture import columns, columns_kept, graphviz_run
from renderer.picture.layout_cache import for_setting
from wheel_models import wheel_model

MODEL = ONNX / "light_resnet50.onnx"
"""Drawn as an overview and pages, some first a strip, then cut into columns (rows under LR, some framed in parts)."""


def _book(cache: Path | None, rankdir: str, model: Path = MODEL) -> bytes:
    """The whole book (every page's SVG in one HTML file)."""
    options = RenderOptions(layout_cache=str(cache) if cache else "", rankdir=rankdir)
    return render_bytes(renderer.load_model(str(model)), None, options, "html")


def _notes(cache: Path) -> dict[str, tuple[bytes, ...]]:
    """The records of decisions in ``cache``, by key."""
    lookup = for_setting(str(cache))
    assert lookup is not None
    found = {path.name.removesuffix(".layout"): lookup.note(path.name.removesuffix(".layout"))
             for path in cache.glob("*.layout")}
    return {key: parts for key, parts in found.items() if parts and parts[0] == columns_kept.ENTRY}


def _refused(*_args: object, **_kwargs: object) -> object:
    raise AssertionError("a decision kept was made again")


@pytest.mark.parametrize("rankdir", ["TB", "LR"])
def test_a_rerender_draws_the_columns_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, rankdir: str) -> None:
    """The first render keeps a decision a page, some in columns (and under LR, where the flat picture is laid
    out before it is found a strip to draw as pages, that refusal); the second looks up one layout a page (the one
    drawn: no strip), never lays a page out as a strip nor cuts it, and writes the uncached bytes."""
    cache = tmp_path / "cache"
    plain = _book(None, rankdir)
    assert _book(cache, rankdir) == plain
    records = [columns_kept.decode(parts[1]) for parts in _notes(cache).values()]
    pages = [record for record in records if isinstance(record, tuple)]
    assert len(pages) >= 3 and all(records)  # one a page (and under LR the flat picture's refusal: a strip)
    assert sum(1 for made, _ in pages if made.column) >= 2
    lookup = for_setting(str(cache))
    assert lookup is not None
    before = lookup.counts()
    monkeypatch.setattr(columns, "lay_out", _refused)
    monkeypatch.setattr(columns, "cut", _refused)
    assert _book(cache, rankdir) == plain
    asked, found = (after - earlier for after, earlier in zip(lookup.counts(), before))
    assert asked == found == len(pages)


def test_a_page_drawn_top_to_bottom_is_kept_so(tmp_path: Path) -> None:
    """``annograph MODEL --rankdir LR``: yolov8n-320's page 3 (Conv, Sigmoid, Mul beside the legend, over ``TURN_PT2``
    a box left to right) is drawn top to bottom (``Columns.turned``), its other pages left to right; the records say
    so, and re-renders from them (kept, then read back) write the uncached bytes. (bert_scoped_int8's page 1 was
    the page turned here until a detail page's legend left the model's metadata to the overview: its 5 boxes left
    to right now hold 148,950 pt² a box, under ``TURN_PT2``.)"""
    model = wheel_model("yolov8n_320")
    cache = tmp_path / "cache"
    books = []
    for k, kept in enumerate([None, cache, cache]):
        out = tmp_path / f"{k}.html"
        run = run_cli(model, "-o", out, "--no-sidecar", "--rankdir", "LR",
                      *(["--layout-cache", kept] if kept else ["--no-layout-cache"]))
        assert run.returncode == 0, run.stderr
        books.append(out.read_bytes())
        if k == 1:
            records = [columns_kept.decode(parts[1]) for parts in _notes(cache).values()]
            pages = [record for record in records if isinstance(record, tuple)]
            assert any(made.turned for made, _ in pages) and not all(made.turned for made, _ in pages)
    assert books[0] == books[1] == books[2]


def test_a_spoiled_record_is_ignored_and_written_again(tmp_path: Path) -> None:
    """Each record cut short, replaced by garbage, or signed but not a record (a count that is a boolean, a column
    that is a name, no edges): the render is the uncached bytes and the record is whole again afterwards."""
    cache = tmp_path / "cache"
    plain = _book(None, "TB")
    assert _book(cache, "TB") == plain
    kept = _notes(cache)
    lookup = for_setting(str(cache))
    assert lookup is not None and kept
    record = json.loads(next(parts[1] for parts in kept.values() if b'"column": {}' not in parts[1]))
    spoils = [{**record, "count": True}, {**record, "column": {name: "2" for name in record["column"]}},
              {key: value for key, value in record.items() if key != "edges"}]
    for spoil in [None, b"garbage", *spoils]:
        for key in kept:
            if spoil is None:
                path = cache / f"{key}.layout"
                path.write_bytes(path.read_bytes()[:-40])
            else:
                data = spoil if isinstance(spoil, bytes) else json.dumps(spoil).encode()
                lookup.keep_note(key, columns_kept.ENTRY, data)
        assert _book(cache, "TB") == plain, spoil
        assert _notes(cache) == kept, spoil


def test_a_record_reads_back_as_it_was_written() -> None:
    """``Made.encode`` then ``decode``: the same decision (the first layout's edges read from its ``-Tplain``); a
    refusal reads as the ``TooBig`` it was; what is not such a record reads as None."""
    plain = b"graph 1 2 3\nnode a 1 1 1 1 a\nnode b 1 2 1 1 b\nedge a b 2 1 1 1 2 solid black\nstop\n"
    made = columns_kept.Made(True, [12.5, 300.25], {"a": 1.5, "b": 2.0}, {"a": 0, "legend": 0, "b": 1}, 2, False,
                             True, plain, True)
    read = columns_kept.decode(made.encode(True))
    assert read is not None
    again, places = read
    assert places and again.first == [("a", "b")] and list(again.column) == ["a", "legend", "b"]
    assert (again.parted, again.sliced, again.centres, again.column, again.count, again.stacked, again.under,
            again.turned) == (made.parted, made.sliced, made.centres, made.column, made.count, made.stacked,
                              made.under, True)
    for strip in (False, True):  # a long strip stays one (rendering draws it as pages only when they say more)
        refused = columns_kept.decode(json.dumps({"too_big": [1200.5, 9001.0], "strip": strip}).encode())
        assert isinstance(refused, graphviz_run.TooBig) and (refused.width, refused.height) == (1200.5, 9001.0)
        assert isinstance(refused, columns.LongStrip) == strip
    wrong = made.encode(True).replace(b'"count": 2', b'"count": "2"')
    for bad in [b'{"too_big": [1, 2], "strip": 0}', b'{"too_big": [1, "2"], "strip": false}', b"\xff", b"[]",
                b"{}", wrong]:
        assert columns_kept.decode(bad) is None
