"""OpenVINO's reshape runs kept in the results cache as onnxruntime's shape runs are (issue 30): a re-render of an
IR with free dims starts no openvino child and writes every format byte for byte as a render without the cache;
the key is the ``.xml`` and ``.bin`` bytes (a copy elsewhere hits it) and the input shapes (other dims run again);
a spoiled entry is a miss, run again and written over; an answer over memory is never kept, a lasting error is."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from conftest import run_cli
from openvino_models import free_onnx, save_ir, small_onnx
from renderer.files import disk_cache
from renderer.loaders import isolated
from renderer.loaders.openvino import ov_shapes

FORMATS = ("svg", "pdf", "png", "dot", "html")
RAN = "OpenVINO, to reshape the model, may take"
"""What ``-v`` says when an openvino child is started (``isolated.exchange``)."""


def _render(xml: Path, out: Path, *flags: str | Path) -> str:
    """``render -v`` of ``xml`` into ``out`` in every format; what it said."""
    out.mkdir(parents=True)
    outputs = [a for fmt in FORMATS for a in ("-o", out / f"m.{fmt}")]
    run = run_cli("render", xml, "-v", "--no-sidecar", *outputs, *flags)
    assert run.returncode == 0, run.stderr
    return run.stderr


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def _entries(cache: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(cache.glob("*.results"))}


def test_a_re_render_starts_no_openvino_child(tmp_path: Path) -> None:
    """The free IR's first render reshapes it in a child and keeps the answer; the next (and one of a copy of
    the IR in another folder) starts none, adds no entry and writes what ``--no-layout-cache`` writes; other
    dims run again; a spoiled entry is run again, written over, and then read."""
    xml = save_ir(free_onnx(tmp_path / "free.onnx"), tmp_path / "free.xml")
    cache = tmp_path / "cache"
    assert _render(xml, tmp_path / "first", "--layout-cache", cache).count(RAN) == 1
    kept = _entries(cache)
    assert len(kept) == 1 and b'"shapes"' in next(iter(kept.values()))
    assert RAN not in _render(xml, tmp_path / "cached", "--layout-cache", cache)
    assert _entries(cache).keys() == kept.keys()
    plain = _render(xml, tmp_path / "plain", "--no-layout-cache")
    assert RAN in plain
    theirs = _files(tmp_path / "plain")
    assert b"batch=1, x.axis1=128 assumed" in theirs["m.svg"] and b"[1,128,32]" in next(iter(kept.values()))
    assert _files(tmp_path / "cached") == theirs == _files(tmp_path / "first")
    copy = tmp_path / "elsewhere" / "copy.xml"
    copy.parent.mkdir()
    shutil.copyfile(xml, copy)
    shutil.copyfile(xml.with_suffix(".bin"), copy.with_suffix(".bin"))
    assert RAN not in _render(copy, tmp_path / "copy", "--layout-cache", cache)
    assert RAN in _render(xml, tmp_path / "batch3", "--layout-cache", cache, "--dim", "batch=3")
    assert len(_entries(cache)) == 2
    entry = cache / next(iter(kept))
    for spoiled in (kept[entry.name][:-7], kept[entry.name].replace(b"[1,128,32]", b"[1,128,33]")):
        entry.write_bytes(spoiled)
        name = f"spoiled{len(spoiled)}"
        assert RAN in _render(xml, tmp_path / name, "--layout-cache", cache)
        assert _files(tmp_path / name) == theirs and entry.read_bytes() == kept[entry.name]
    assert RAN not in _render(xml, tmp_path / "again", "--layout-cache", cache)


def test_a_lasting_error_is_kept_one_over_memory_is_not(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A reshape OpenVINO refuses (3 input channels made 5) fails the same every time: kept, and recalled with no
    child; a run over its memory limit would not fail so with more: not kept. Outside a render nothing is kept."""
    xml = save_ir(small_onnx(tmp_path / "small.onnx"), tmp_path / "small.xml")
    cache = tmp_path / "cache"
    wrong = {"x": [1, 5, 16, 16]}
    _, _, reason = ov_shapes.reshaped(xml, wrong)
    assert reason.startswith("OpenVINO cannot reshape the model to these input shapes (") and not cache.exists()
    with disk_cache.using(str(cache)):
        assert ov_shapes.reshaped(xml, wrong) == ({}, set(), reason)
        assert len(_entries(cache)) == 1
        monkeypatch.setenv(isolated.MEMORY_ENV, "1MiB")
        _, _, over = ov_shapes.reshaped(xml, {"x": [2, 3, 16, 16]})
        # OpenVINO may throw std::bad_alloc where we catch it, or on a thread of its own (the child aborts)
        assert over.startswith(("OpenVINO needed more than the 1.0 MiB of memory its run may take",
                                "OpenVINO stopped with SIG")), over
        assert "1.0 MiB" in over
        assert len(_entries(cache)) == 1

        def no_child(*args: object, **kwargs: object) -> None:
            raise AssertionError("an openvino child was started")

        monkeypatch.setattr(isolated, "exchange", no_child)
        assert ov_shapes.reshaped(xml, wrong) == ({}, set(), reason)
