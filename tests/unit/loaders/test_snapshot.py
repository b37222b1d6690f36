"""A loaded model kept in the results cache (issue 30): a re-render restores it instead of loading the file, and
writes the bytes an uncached render writes on every format; a spoiled, foreign or hostile entry is a miss, loaded
anew and written over, and never runs code; two processes fill one folder at once; a changed file is a miss."""

from __future__ import annotations

import io
import os
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from cache_runs import files as _files
from cache_runs import latencies as _latencies
from conftest import ONNX, ROOT, TFLITE, parse_svg, run_cli
from renderer.files import disk_cache
from renderer.loaders import snapshot

FORMATS = ("svg", "pdf", "png", "dot", "html")
RESTORED = "the model as loaded before, from the results cache"
"""What ``-v`` says when the model comes from the cache (``snapshot.load``)."""




def _render(model: Path, out: Path, *flags: str | Path) -> str:
    """``render`` of every format into ``out``; its ``-v`` stderr."""
    out.mkdir(parents=True, exist_ok=True)
    outputs = [a for fmt in FORMATS for a in ("-o", str(out / f"m.{fmt}"))]
    run = run_cli("render", model, "-v", "--no-sidecar", *outputs, *flags, cwd=out)
    assert run.returncode == 0, run.stderr
    return run.stderr


def _same_as_uncached(tmp_path: Path, model: Path, *flags: str | Path) -> dict[str, bytes]:
    """Render ``model`` into an empty cache, then again (restored), then with ``--no-layout-cache``: the second
    and third write the same bytes; the files of the second."""
    cache = tmp_path / "cache"
    assert RESTORED not in _render(model, tmp_path / "first", *flags, "--layout-cache", cache)
    assert list(cache.glob("*.results"))
    said = _render(model, tmp_path / "cached", *flags, "--layout-cache", cache)
    assert RESTORED in said
    _render(model, tmp_path / "plain", *flags, "--no-layout-cache")
    cached, plain = _files(tmp_path / "cached"), _files(tmp_path / "plain")
    assert cached.keys() == plain.keys() and len(cached) >= len(FORMATS)
    assert [name for name in cached if cached[name] != plain[name]] == []
    assert parse_svg(cached["m.svg"]).findall(".//{http://www.w3.org/2000/svg}g")
    return cached


@pytest.mark.parametrize("model, flags", [
    (ONNX / "light_resnet50.onnx", ()),  # an overview and pages
    (ONNX / "control_flow.onnx", ()),  # subgraphs: operators reading the outer graph's tensors
    (ONNX / "tiny_cnn_qdq_s8_perchannel.onnx", ("--color-by", "sparsity", "--show", "weight_mean")),
    (ONNX / "tiny_transformer.onnx", ("--dim", "batch=2")),
    (TFLITE / "tiny_keras_int8_asymmetric.tflite", ("--color-by", "weight_std")),  # quantization arrays
    (TFLITE / "face_detection_short_range.tflite", ()),
])
def test_a_restored_model_draws_the_bytes_of_a_loaded_one(tmp_path: Path, model: Path, flags: tuple[str, ...]) -> None:
    """Every format, pages included, with metrics that read every weight (restored models read large constants
    from a fresh load, small ones from the entry), ``--dim`` and TFLite's quantization arrays."""
    _same_as_uncached(tmp_path, model, *flags)


def test_annotations_change_and_the_model_does_not(tmp_path: Path) -> None:
    """The re-render with other latencies restores the model and writes the bytes of an uncached render with them."""
    model, cache = ONNX / "tiny_cnn.onnx", tmp_path / "cache"
    first, second = _latencies(tmp_path / "a.csv", 1, 64), _latencies(tmp_path / "b.csv", 2, 64)
    _render(model, tmp_path / "first", "-a", first, "--layout-cache", cache)
    assert RESTORED in _render(model, tmp_path / "cached", "-a", second, "--layout-cache", cache)
    _render(model, tmp_path / "plain", "-a", second, "--no-layout-cache")
    assert _files(tmp_path / "cached") == _files(tmp_path / "plain")
    assert _files(tmp_path / "cached") != _files(tmp_path / "first")


WEIGHTS = 64 * 32 * 3 * 3
"""More than ``snapshot.SMALL``: a restored model reads them from a fresh load."""


def test_a_re_render_imports_neither_onnx_nor_numpy(tmp_path: Path) -> None:
    """What a restored model saves: the re-render (other latencies) imports no onnx and no numpy at all."""
    model, cache = ONNX / "light_resnet50.onnx", tmp_path / "cache"
    first, second = _latencies(tmp_path / "a.csv", 1, 415), _latencies(tmp_path / "b.csv", 2, 415)
    _render(model, tmp_path / "first", "-a", first, "--layout-cache", cache)
    code = ("import sys\nfrom renderer.commands.cli import main\n"
            f"main(['render', {str(model)!r}, '-q', '--no-sidecar', '-a', {str(second)!r}, '-o', 'm.svg',"
            f" '--layout-cache', {str(cache)!r}])\n"
            "print(sorted(m for m in ('onnx', 'numpy', 'google.protobuf') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)), check=True)
    assert done.stdout.strip() == "[]", done.stdout + done.stderr
    _render(model, tmp_path / "plain", "-a", second, "--no-layout-cache")
    assert (tmp_path / "m.svg").read_bytes() == (tmp_path / "plain" / "m.svg").read_bytes()


def _external_model(folder: Path) -> Path:
    """A Conv whose weight lives in an external-data file beside the model."""
    weight = numpy_helper.from_array(np.arange(WEIGHTS, dtype=np.float32).reshape(64, 32, 3, 3), "w")
    graph = helper.make_graph([helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 32, 8, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [weight])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    path = folder / "ext.onnx"
    onnx.save(proto, path, save_as_external_data=True, all_tensors_to_one_file=True, location="ext.onnx.data",
              size_threshold=0)
    return path


def test_a_changed_file_is_a_miss(tmp_path: Path) -> None:
    """The model's external data changed (the model file not): the snapshot is not used, and the picture shows the
    new weights' statistics; the model copied to another path is kept under that path."""
    model, cache = _external_model(tmp_path), tmp_path / "cache"
    flags = ("--color-by", "weight_max", "--show", "weight_max", "--layout-cache", cache)
    _render(model, tmp_path / "a", *flags)
    assert RESTORED in _render(model, tmp_path / "b", *flags)
    data = model.with_name("ext.onnx.data")
    data.write_bytes(np.full(WEIGHTS, 7.0, dtype=np.float32).tobytes())
    assert RESTORED not in _render(model, tmp_path / "c", *flags)
    _render(model, tmp_path / "d", *flags[:-2], "--no-layout-cache")
    assert _files(tmp_path / "c") == _files(tmp_path / "d") != _files(tmp_path / "a")
    moved = tmp_path / "moved"
    moved.mkdir()
    for name in ("ext.onnx", "ext.onnx.data"):
        (moved / name).write_bytes((tmp_path / name).read_bytes())
    assert RESTORED not in _render(moved / "ext.onnx", tmp_path / "e", *flags)


def _entry(cache: Path) -> Path:
    """The snapshot's entry among the folder's results (the one holding a pickle)."""
    found = [p for p in cache.glob("*.results") if b"\n\x80" in p.read_bytes()[:400]]
    assert len(found) == 1, found
    return found[0]


class _Hostile:
    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, ...]:
        return (Path.touch, (self.marker,))


def test_spoiled_foreign_and_hostile_entries_are_misses_and_rewritten(tmp_path: Path) -> None:
    """The snapshot's entry cut short, garbage, another entry under its name, and, signed with the right key, a
    pickle that would run code (``Path.touch``) and one of an unknown class: each is a miss (the model is loaded,
    the marker file never made), the render writes the uncached bytes, and the entry is restorable afterwards."""
    model, cache = ONNX / "tiny_cnn.onnx", tmp_path / "cache"
    _render(model, tmp_path / "plain", "--no-layout-cache")
    plain = _files(tmp_path / "plain")
    _render(model, tmp_path / "first", "--layout-cache", cache)
    entry = _entry(cache)
    good, other = entry.read_bytes(), next(p for p in cache.glob("*.layout")).read_bytes()
    marker = tmp_path / "ran"
    store = disk_cache.DiskCache(cache, suffix="results")
    key = entry.name.split(".")[0]
    signed = {"hostile": pickle.dumps({"model": _Hostile(marker)}), "unknown": pickle.dumps(
        {"graphs": [subprocess.CompletedProcess([], 0)]})}
    spoils = {"cut": good[: len(good) // 2], "garbage": os.urandom(len(good)), "foreign": other, **signed}
    for kind, data in spoils.items():
        if kind in signed:
            store.put(key, data)
        else:
            entry.write_bytes(data)
        said = _render(model, tmp_path / kind, "--layout-cache", cache)
        assert RESTORED not in said, kind
        assert _files(tmp_path / kind) == plain, kind
        assert not marker.exists()
        assert RESTORED in _render(model, tmp_path / f"{kind}-again", "--layout-cache", cache), kind


def test_two_processes_keep_one_snapshot(tmp_path: Path) -> None:
    """Two first renders at once on one empty folder both write the uncached bytes, leave no partial file, and
    the entry they wrote restores."""
    model, cache = ONNX / "light_squeezenet.onnx", tmp_path / "cache"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    runs = []
    for k in range(2):
        (tmp_path / f"p{k}").mkdir()
        runs.append(subprocess.Popen([sys.executable, "-m", "renderer", "render", str(model), "-q", "--no-sidecar",
                                      "-o", "m.svg", "-o", "m.png", "--layout-cache", str(cache)],
                                     cwd=tmp_path / f"p{k}", env=env, stderr=subprocess.PIPE))
    for run in runs:
        assert run.wait(timeout=600) == 0, run.stderr.read() if run.stderr else ""  # the hang bound
    (tmp_path / "plain").mkdir()
    run = run_cli("render", model, "-q", "--no-sidecar", "-o", "m.svg", "-o", "m.png", "--no-layout-cache",
                  cwd=tmp_path / "plain")
    assert run.returncode == 0, run.stderr
    plain = _files(tmp_path / "plain")
    assert _files(tmp_path / "p0") == plain == _files(tmp_path / "p1")
    assert not list(cache.glob(".*.part"))
    _entry(cache)
    assert RESTORED in _render(model, tmp_path / "again", "--layout-cache", cache)


def test_outside_a_render_nothing_is_kept(tmp_path: Path) -> None:
    """``load`` outside ``disk_cache.using`` (``info``, ``metrics``) loads the file and keeps nothing; a snapshot
    of a model holding an object no entry may hold is not made."""
    calls = []

    def fresh():  # type: ignore[no-untyped-def]
        from renderer.loaders.registry import load_model

        calls.append(1)
        return load_model(ONNX / "tiny_cnn.onnx")

    model = snapshot.load(ONNX / "tiny_cnn.onnx", {}, [], fresh)
    assert calls == [1] and model.format == "onnx"
    model.graphs[0].nodes[0].attributes["odd"] = subprocess.CompletedProcess([], 0)
    assert snapshot.snapshot(model, {}) is None
    del model.graphs[0].nodes[0].attributes["odd"]
    assert snapshot.snapshot(model, {}) is not None


def test_large_constants_are_read_from_a_fresh_load(tmp_path: Path) -> None:
    """A restored model holds small constants' bytes and reads a larger one from the file, the same values."""
    from renderer.loaders.registry import load_model

    path = _external_model(tmp_path)
    loaded = load_model(path)
    data = snapshot.snapshot(loaded, {})
    assert data is not None and len(data) < WEIGHTS  # the weights are not in it
    restored = snapshot._restore(data, path, {}, lambda: loaded)
    assert restored is not None and restored is not loaded
    weight = next(v for v in restored.main.values if v.name == "w").initializer
    assert isinstance(weight.reader, snapshot._Reload)
    assert np.array_equal(weight.numpy(), np.arange(WEIGHTS, dtype=np.float32).reshape(64, 32, 3, 3))
    assert [n.op_type for n in restored.main.nodes] == [n.op_type for n in loaded.main.nodes]
    assert [str(v.type) for v in restored.main.values] == [str(v.type) for v in loaded.main.values]


def test_a_load_whose_run_ran_out_of_memory_is_not_kept(tmp_path: Path) -> None:
    """A shape run stopped at its memory limit may answer another time: the model it left with unknown shapes is
    not kept (the run's answer is not either), so the next render loads and runs it again."""
    import hostile_models

    model, cache = tmp_path / "growing.onnx", tmp_path / "cache"
    model.write_bytes(hostile_models.growing_loop())
    out = tmp_path / "low"
    out.mkdir()
    run = run_cli("render", model, "-v", "--no-sidecar", "-o", "m.svg", "--layout-cache", cache, cwd=out,
                  env={"ANNOGRAPH_RUN_MEMORY": "160MiB"})
    assert run.returncode == 0, run.stderr
    assert "needed more than the 160.0 MiB" in run.stderr
    assert not [p for p in cache.glob("*.results") if b"\n\x80" in p.read_bytes()[:400]]


@pytest.mark.parametrize("name", ["getattr", "eval", "exec", "__import__"])
def test_the_unpickler_refuses_builtins_that_reach_code(name: str) -> None:
    """``getattr`` would walk from an allowed class to a function's globals and on to ``eval``: a pickle that
    names it is refused however it is signed."""
    import builtins

    data = pickle.dumps(getattr(builtins, name))
    with pytest.raises(pickle.UnpicklingError):
        snapshot._Restricted(io.BytesIO(data)).load()
