"""The results a model's load and metrics take long to make, kept between renders (issue 30): a re-render with new
numbers runs no onnxruntime child and fits no formula again, and writes the bytes a render without the cache
writes, on every format and on a book of pages; two processes fill one folder at once; a spoiled entry is a miss
and is written again; results and layouts share the folder's cap."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import onnx
import pytest

import tts_transformer
from cache_runs import files as _files
from cache_runs import latencies as _latencies
from conftest import ROOT, parse_svg
from renderer.files import disk_cache

FORMATS = ("svg", "pdf", "png", "dot", "html")
RAN = "onnxruntime, to run the model, may take"
"""What ``-v`` says when an onnxruntime child is started (``isolated.exchange``)."""



def _render(model: Path, annotations: Path, out: Path, *flags: str | Path) -> subprocess.Popen[bytes]:
    """``render`` into ``out`` (every format, pages as an overview: ``--collapse 1``), started, not waited for."""
    out.mkdir(parents=True, exist_ok=True)
    outputs = [a for fmt in FORMATS for a in ("-o", f"m.{fmt}")]
    return subprocess.Popen([sys.executable, "-m", "renderer", "render", str(model), "-v", "--no-sidecar",
                             "--collapse", "1", "-a", str(annotations), *outputs, *map(str, flags)],
                            cwd=out, env=dict(os.environ, PYTHONPATH=str(ROOT)), stderr=subprocess.PIPE)


def _finish(run: subprocess.Popen[bytes]) -> str:
    _, err = run.communicate(timeout=900)  # the hang bound
    assert run.returncode == 0, err.decode()
    return err.decode()



def test_a_re_render_takes_the_models_results_from_the_cache(tmp_path: Path) -> None:
    """The TTS-like transformer (free dims assumed, shapes from onnxruntime runs, MACs formulas in the tooltips):
    two first renders at once on an empty folder write the same bytes and keep the shape runs' answers and the
    formulas; a render with other latencies then starts no onnxruntime child, loads no model (it is restored,
    ``loaders.snapshot``), adds no entry, and writes every format, pages included, byte for byte as a render
    with ``--no-layout-cache``, which does run onnxruntime."""
    model = tmp_path / "tts.onnx"
    onnx.save(tts_transformer.build(), model)
    count = len(onnx.load(str(model), load_external_data=False).graph.node)
    cache = tmp_path / "cache"
    first, second = _latencies(tmp_path / "a.csv", 1, count), _latencies(tmp_path / "b.csv", 2, count)
    runs = [_render(model, first, tmp_path / f"first{k}", "--layout-cache", cache) for k in range(2)]
    said = [_finish(run) for run in runs]
    assert all(RAN in err for err in said)
    assert _files(tmp_path / "first0") == _files(tmp_path / "first1")
    kept = sorted(p.name for p in cache.glob("*.results"))
    assert len(kept) >= 2 and not list(cache.glob(".*.part"))  # the shape runs' answers and the formulas
    cached = _finish(_render(model, second, tmp_path / "cached", "--layout-cache", cache))
    assert RAN not in cached
    assert sorted(p.name for p in cache.glob("*.results")) == kept
    plain = _finish(_render(model, second, tmp_path / "plain", "--no-layout-cache"))
    assert RAN in plain
    loads = "shapes: onnx shape inference"  # said by each load: the formulas' loads at other dims too
    assert cached.count(loads) == 0 < plain.count(loads), (cached.count(loads), plain.count(loads))  # restored
    ours, theirs = _files(tmp_path / "cached"), _files(tmp_path / "plain")
    assert ours.keys() == theirs.keys() and len(ours) > len(FORMATS)  # the pages too
    assert [name for name in ours if ours[name] != theirs[name]] == []
    drawn = b"".join(data for name, data in ours.items() if name.endswith(".svg"))
    # the formulas, in the tooltips: in the batch alone, the sequence held at 128, since 8997109 (the transformer's
    # total is no polynomial of both: its decoder's Range reads a value)
    assert b"k\xc2\xb7batch at sequence=128 (of the assumed dims)" in drawn  # says what it holds, since 2db40ef
    assert parse_svg(ours["m.svg"]).findall(".//{http://www.w3.org/2000/svg}g")


def test_a_result_is_plain_signed_json_and_a_spoiled_one_is_a_miss(tmp_path: Path) -> None:
    """A result comes back for the same file bytes and fields only; an entry cut short, garbage, changed without
    its signature, or another result's under its name is a miss, and keeping it again makes it good. Outside a
    render (``using``) nothing is kept or found."""
    model, folder = tmp_path / "m.onnx", tmp_path / "cache"
    model.write_bytes(b"model bytes")
    value = {"shapes": {"y": [1, [2, 3]]}, "ones": []}
    assert disk_cache.results() is None
    disk_cache.keep("kind", [model], {"dims": 1}, value)
    assert not folder.exists()
    with disk_cache.using(str(folder)):
        assert disk_cache.recall("kind", [model], {"dims": 1}) is None
        disk_cache.keep("kind", [model], {"dims": 1}, value)
        disk_cache.keep("kind", [model], {"dims": 2}, {"other": True})
        assert disk_cache.recall("kind", [model], {"dims": 1}) == value
        assert disk_cache.recall("other kind", [model], {"dims": 1}) is None
        entries = sorted(folder.glob("*.results"))
        assert len(entries) == 2
        mine = next(p for p in entries if b'"shapes"' in p.read_bytes())
        other = next(p for p in entries if p != mine)
        good = mine.read_bytes()
        spoils = [good[: len(good) // 2], os.urandom(len(good)), good.replace(b"[2,3]", b"[2,4]"), other.read_bytes(),
                  good.replace(b'"ones":[]', b'"ones":[0]')]
        for spoiled in spoils:
            mine.write_bytes(spoiled)
            assert disk_cache.recall("kind", [model], {"dims": 1}) is None
        disk_cache.keep("kind", [model], {"dims": 1}, value)
        assert disk_cache.recall("kind", [model], {"dims": 1}) == value
        model.write_bytes(b"the model changed")
        assert disk_cache.recall("kind", [model], {"dims": 1}) is None
        assert disk_cache.recall("kind", [tmp_path / "gone.onnx"], {"dims": 1}) is None
    with disk_cache.using(disk_cache.OFF):
        assert disk_cache.results() is None


def test_a_result_kept_by_other_code_is_a_miss(tmp_path: Path, monkeypatch) -> None:
    """An edited checkout keeps its version string: results are keyed on the package's code and data too, so a
    formula or shape answer made by the code before an edit is not served after it."""
    model, folder = tmp_path / "m.onnx", tmp_path / "cache"
    model.write_bytes(b"model bytes")
    digest = disk_cache.code_digest()
    assert len(digest) == 64 and digest == disk_cache.code_digest()
    with disk_cache.using(str(folder)):
        disk_cache.keep("kind", [model], {}, {"macs": 1})
        assert disk_cache.recall("kind", [model], {}) == {"macs": 1}
        monkeypatch.setattr(disk_cache, "code_digest", lambda: "0" * 64)
        assert disk_cache.recall("kind", [model], {}) is None


def test_results_and_layouts_share_the_folders_cap(tmp_path: Path) -> None:
    """Entries of both kinds count against one cap; the least recently used go first, whatever their kind."""
    secret, keys = os.urandom(32), [f"{k:064x}" for k in range(6)]
    probe = tmp_path / "probe"
    disk_cache.DiskCache(probe, secret=secret).put(keys[0], b"x" * 100)
    size = next(probe.iterdir()).stat().st_size
    shared = tmp_path / "shared"
    layouts = disk_cache.DiskCache(shared, cap=4 * size, secret=secret, suffix="layout")
    results = disk_cache.DiskCache(shared, cap=4 * size, secret=secret, suffix="results")
    for k, key in enumerate(keys[:4]):
        (layouts if k % 2 else results).put(key, b"x" * 100)
        os.utime(next(shared.glob(f"{key}.*")), (1000 + k, 1000 + k))
    assert results.get(keys[0]) == (b"x" * 100,)  # now the most recently used
    layouts.put(keys[4], b"y" * 100)
    left = sorted(p.name for p in shared.iterdir())
    assert f"{keys[1]}.layout" not in left and f"{keys[0]}.results" in left and f"{keys[4]}.layout" in left
    assert sum(p.stat().st_size for p in shared.iterdir()) <= 4 * size


def test_a_big_file_s_digest_is_kept_by_its_identity_until_it_changes(tmp_path: Path, monkeypatch) -> None:
    """A file of ``KEPT_DIGEST_BYTES`` or more, unchanged for ``SETTLED_SECONDS``, has its SHA-256 read back from
    the results cache (no pass over its bytes); one changed just now is not kept; changed in place (same size,
    its time set back) it is hashed again; a spoiled entry is a miss."""
    import hashlib
    import os

    big, folder = tmp_path / "big.onnx", tmp_path / "cache"
    data = os.urandom(disk_cache.KEPT_DIGEST_BYTES)
    big.write_bytes(data)
    with disk_cache.using(str(folder)):
        assert disk_cache.file_digest(big) == hashlib.sha256(data).hexdigest()
        assert not folder.exists() or not list(folder.glob("*.results"))  # changed just now: not kept
        monkeypatch.setattr(disk_cache, "SETTLED_SECONDS", -1)
        disk_cache._digest.cache_clear()
        assert disk_cache.file_digest(big) == hashlib.sha256(data).hexdigest()
        [entry] = folder.glob("*.results")
        disk_cache._digest.cache_clear()
        with monkeypatch.context() as hashing:
            hashing.setattr(hashlib, "file_digest", lambda *_: pytest.fail("hashed again"))
            assert disk_cache.file_digest(big) == hashlib.sha256(data).hexdigest()
        entry.write_bytes(entry.read_bytes().replace(hashlib.sha256(data).hexdigest().encode(), b"0" * 64))
        disk_cache._digest.cache_clear()
        assert disk_cache.file_digest(big) == hashlib.sha256(data).hexdigest()  # spoiled: hashed, written over
        before = os.stat(big)
        changed = bytes([data[0] ^ 1]) + data[1:]
        big.write_bytes(changed)
        os.utime(big, ns=(before.st_atime_ns, before.st_mtime_ns))
        assert disk_cache.file_digest(big) == hashlib.sha256(changed).hexdigest()
