"""No run loses a user's data: outputs are written to a temporary file and renamed, a failed run leaves every
existing output as it was and no temporary file behind, and in a batch one failing model does not cost the
others. Failures are real ones (a missing or failing ``dot``, a file-size limit hit while writing, an
annotation error after the model loaded), run through the CLI in subprocesses."""

from __future__ import annotations

import os
import resource
import shutil
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

import payloads as P
import registry
from conftest import ONNX, ROOT, TFLITE, one_line_error, run_cli

OLD = b"<svg>the user's previous picture</svg>\n"
FORMATS = P.output_formats()


def leftovers(folder: Path) -> list[str]:
    """Temporary files an interrupted write could leave (atomic.py names them .NAME.*.tmp)."""
    return sorted(p.name for p in folder.rglob("*") if p.name.endswith(".tmp") or p.name.startswith(".out"))


def existing_outputs(folder: Path) -> dict[Path, bytes]:
    """An old file at every output path the render will produce, one per registered format."""
    files = {folder / f"out{P.extension(fmt)}": OLD + fmt.encode() for fmt in FORMATS}
    for path, data in files.items():
        path.write_bytes(data)
    return files


def outputs_args(files: dict[Path, bytes]) -> list[str]:
    return [a for path in files for a in ("-o", str(path))]


def assert_untouched(files: dict[Path, bytes]) -> None:
    for path, data in files.items():
        assert path.read_bytes() == data, f"{path.name} was changed by a failed run"


def fake_dot(folder: Path, script: str) -> dict[str, str]:
    """A PATH whose ``dot`` is ``script`` (a shell script), for failures the real dot will not produce on demand."""
    bin_dir = folder / "bin"
    bin_dir.mkdir()
    program = bin_dir / "dot"
    program.write_text("#!/bin/sh\n" + script + "\n", encoding="utf-8")
    program.chmod(0o755)
    return {"PATH": f"{bin_dir}{os.pathsep}/usr/bin{os.pathsep}/bin"}


# ---- a failed run keeps what was there -----------------------------------------------------------------------


def test_annotation_error_after_the_model_loaded(tmp_path: Path) -> None:
    files = existing_outputs(tmp_path)
    bad = tmp_path / "bad.yaml"
    bad.write_text("operators:\n  - id: stem/conv\n    meta: {latency: 1}\n  - meta: {no: id}\n", encoding="utf-8")
    line = one_line_error(run_cli("render", ONNX / "tiny_cnn.onnx", "-a", bad, *outputs_args(files)))
    assert "bad.yaml:4" in line
    assert_untouched(files)
    assert leftovers(tmp_path) == []


def test_missing_dot_program(tmp_path: Path) -> None:
    files = existing_outputs(tmp_path)
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    run = run_cli("render", ONNX / "tiny_cnn.onnx", *outputs_args(files), env={"PATH": str(empty)})
    line = one_line_error(run)
    assert run.stderr.strip() == line, "one line only"
    assert "'dot' was not found" in line and "install Graphviz" in line and "apt-get install graphviz" in line
    assert_untouched(files)  # the .dot and .md outputs need no Graphviz, yet nothing was written
    assert leftovers(tmp_path) == []


def test_graphviz_exit_status_1_writes_nothing(tmp_path: Path) -> None:
    """Graphviz exiting 1 still prints a picture (with labels replaced): it must not reach the user's file."""
    files = existing_outputs(tmp_path)
    env = fake_dot(tmp_path, 'cat > /dev/null; echo "<svg>half</svg>"; '
                             'echo "Error: syntax error in line 3" >&2; exit 1')
    line = one_line_error(run_cli("render", ONNX / "tiny_cnn.onnx", *outputs_args(files), env=env))
    assert "exit status 1" in line and "syntax error in line 3" in line
    assert_untouched(files)
    assert leftovers(tmp_path) == []


def test_graphviz_killed_or_too_slow(tmp_path: Path) -> None:
    files = existing_outputs(tmp_path)
    env = fake_dot(tmp_path, "kill -9 $$")
    line = one_line_error(run_cli("render", ONNX / "tiny_cnn.onnx", *outputs_args(files), env=env))
    assert "Graphviz" in line
    slow = tmp_path / "slow"
    slow.mkdir()
    env = fake_dot(slow, "sleep 30")
    line = one_line_error(run_cli("render", ONNX / "tiny_cnn.onnx", "--timeout", "0.5", *outputs_args(files), env=env))
    assert "did not finish within 0.5 s" in line
    assert_untouched(files)
    assert leftovers(tmp_path) == []


def _limit_file_size(limit: int):  # type: ignore[no-untyped-def]
    def apply() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit then fails with EFBIG
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return apply


def test_write_failing_half_way(tmp_path: Path) -> None:
    """A file-size limit makes the write itself fail after the temporary file exists (as a full disk does)."""
    old = tmp_path / "out.svg"
    old.write_bytes(OLD)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-m", "renderer", "render", str(ONNX / "tiny_cnn.onnx"), "-o", str(old)],
                          capture_output=True, text=True, env=env, cwd=ROOT, preexec_fn=_limit_file_size(4096),
                          timeout=300)
    assert done.returncode == 1, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("annograph: error:") and "cannot write" in lines[0], done.stderr
    assert "Traceback" not in done.stderr
    assert old.read_bytes() == OLD
    assert leftovers(tmp_path) == []


def test_unwritable_folder(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        folder = tmp_path / "locked"
        folder.mkdir()
        (folder / "out.svg").write_bytes(OLD)
        folder.chmod(stat.S_IRUSR | stat.S_IXUSR)
    else:  # root writes anywhere it has a permission bit for; sysfs refuses new files even to root
        folder = Path("/sys")
        if os.access(folder, os.W_OK) and not _sysfs_refuses(folder):
            pytest.skip("no folder refuses root here")
    try:
        line = one_line_error(run_cli("render", ONNX / "tiny_cnn.onnx", "-o", folder / "out.svg"))
        assert "cannot write" in line and "out.svg" in line
        if os.geteuid() != 0:
            assert (folder / "out.svg").read_bytes() == OLD
    finally:
        if os.geteuid() != 0:
            folder.chmod(0o755)


def _sysfs_refuses(folder: Path) -> bool:
    import tempfile

    try:
        fd, name = tempfile.mkstemp(dir=folder)
    except OSError:
        return True
    os.close(fd)
    os.unlink(name)
    return False


def test_output_folder_missing(tmp_path: Path) -> None:
    line = one_line_error(run_cli("render", ONNX / "tiny_cnn.onnx", "-o", tmp_path / "no" / "such" / "out.svg"))
    assert "does not exist" in line


@pytest.mark.parametrize("command", ["render", "metrics", "compare", "diff"])
def test_a_missing_output_folder_is_said_before_the_model_is_read(tmp_path: Path, command: str) -> None:
    """A model that cannot be loaded and an output in a folder that does not exist: the folder is said, so it
    was checked before the load (the int8 TTS rendered for 7.8 s before saying it)."""
    broken = tmp_path / "broken.onnx"
    broken.write_bytes(b"\x08\x07 not a model")
    out = tmp_path / "missing" / ("out.csv" if command == "metrics" else "out.html" if command == "compare"
                                  else "out.svg")
    models = [broken, broken] if command in ("compare", "diff") else [broken]
    line = one_line_error(run_cli(command, *models, "-o", out))
    assert f"the folder {out.parent} does not exist" in line, line
    assert not out.parent.exists()


def test_one_unwritable_output_of_several_changes_none(tmp_path: Path) -> None:
    """``-o a.svg -o missing/a.png``: the second cannot be written, so the first must not be replaced either."""
    files = existing_outputs(tmp_path)
    first = next(iter(files))
    one_line_error(run_cli("render", ONNX / "tiny_cnn.onnx", "-o", first, "-o", tmp_path / "missing" / "out.png"))
    assert first.read_bytes() == files[first]


# ---- atomic.py itself ------------------------------------------------------------------------------------------


def test_write_all_is_all_or_nothing(tmp_path: Path) -> None:
    from renderer.core.errors import RenderError
    from renderer.files import atomic

    a, b = tmp_path / "a.svg", tmp_path / "b.svg"
    a.write_bytes(OLD)
    with pytest.raises(RenderError, match="does not exist"):
        atomic.write_all([(a, b"new a"), (tmp_path / "missing" / "c.svg", b"new c")])
    assert a.read_bytes() == OLD and leftovers(tmp_path) == []
    atomic.write_all([(a, b"new a"), (b, b"new b")])
    assert a.read_bytes() == b"new a" and b.read_bytes() == b"new b" and leftovers(tmp_path) == []


# ---- batches ---------------------------------------------------------------------------------------------------


def test_batch_keeps_the_good_models(tmp_path: Path) -> None:
    bad = tmp_path / "broken.onnx"
    bad.write_bytes((ONNX / "tiny_cnn.onnx").read_bytes()[:500])
    out = tmp_path / "out"
    out.mkdir()
    (out / "broken.svg").write_bytes(OLD)
    run = run_cli("render", ONNX / "tiny_cnn.onnx", bad, TFLITE / "okay_nabu.tflite", "-o", f"{out}/",
                  "--format", "svg,dot", "-q")
    assert run.returncode == 1 and "Traceback" not in run.stderr, run.stderr
    errors = [ln for ln in run.stderr.splitlines() if "error" in ln]
    assert any("broken.onnx" in ln for ln in errors), run.stderr
    assert "1 of 3 models failed" in run.stderr
    for stem in ("tiny_cnn", "okay_nabu"):
        for ext in ("svg", "dot"):
            assert (out / f"{stem}.{ext}").stat().st_size > 1000, f"{stem}.{ext} missing"
    P.check_svg((out / "okay_nabu.svg").read_bytes())
    assert (out / "broken.svg").read_bytes() == OLD and not (out / "broken.dot").exists()
    assert leftovers(tmp_path) == []


# ---- an output is never an input -------------------------------------------------------------------------------


def _overwrite_cases(folder: Path) -> dict[str, tuple[list[str], Path]]:
    """name → (CLI arguments, the input file they must leave alone). Every command, default outputs, other
    spellings of the same file (./x, a/../x, a symlink, a hard link), a sidecar found automatically."""
    onnx_model = folder / "v.onnx"
    onnx_model.write_bytes((ONNX / "tiny_cnn.onnx").read_bytes())
    tfl = folder / "m.tflite"
    tfl.write_bytes((TFLITE / "okay_nabu.tflite").read_bytes())
    disguised = folder / "model.svg"  # an ONNX file with a picture's extension: the default output is itself
    disguised.write_bytes(onnx_model.read_bytes())
    notes = folder / "notes.md"
    notes.write_text("operators:\n  - {id: 0, latency_ms: 1.5}\n", encoding="utf-8")
    ann = folder / "ann.yaml"
    ann.write_text("operators:\n  - {id: 0, latency_ms: 1.5}\n", encoding="utf-8")
    sidecar_model = folder / "s.onnx"
    sidecar_model.write_bytes(onnx_model.read_bytes())
    sidecar = folder / "s.annotations.json"
    sidecar.write_text('{"operators": [{"id": 0, "latency_ms": 2}]}', encoding="utf-8")
    (folder / "link.svg").symlink_to(disguised)
    os.link(ann, folder / "hard.yaml")
    batch = folder / "batch"
    batch.mkdir()
    in_batch = batch / "m.svg"  # an ONNX model inside the output folder, named as its own output
    in_batch.write_bytes(onnx_model.read_bytes())
    batch_notes = batch / "index.html"  # annotations where ``batch -o`` writes its index
    batch_notes.write_text("operators:\n  - {id: 0, latency_ms: 1.5}\n", encoding="utf-8")
    m, a = str(onnx_model), str(ann)
    return {
        "export-json-over-model": (["export", m, "-a", a, "--to", "json", "-o", m], onnx_model),
        "metrics-json-over-model": (["metrics", m, "--table-format", "json", "-o", m], onnx_model),
        "export-over-tflite": (["export", str(tfl), "--to", "json", "-o", str(tfl)], tfl),
        # run in the model's folder: render without -o writes MODEL_STEM.svg in the current folder
        "render-default-output-is-model": (["render", disguised.name], disguised),
        "render-over-annotations": (["render", m, "-a", str(notes), "-o", str(notes)], notes),
        "render-over-model-dot-slash": (["render", str(disguised), "-o", f"{folder}/x.dot", "-o",
                                         f"{folder}/./model.svg"], disguised),
        "render-over-model-dot-dot": (["render", str(disguised), "-o", f"{batch}/../model.svg"], disguised),
        "render-over-model-symlink": (["render", str(disguised), "-o", str(folder / "link.svg")], disguised),
        "export-over-hard-link-of-annotations": (["export", m, "-a", str(folder / "hard.yaml"), "--to", "csv",
                                                  "-o", a], ann),
        "export-over-sidecar": (["export", str(sidecar_model), "--to", "json", "-o", str(sidecar)], sidecar),
        "embed-over-annotations": (["embed", m, "-a", a, "-o", a], ann),
        "embed-over-model": (["embed", str(tfl), "-a", a, "-o", str(tfl)], tfl),
        "render-batch-over-model": (["render", str(in_batch), m, "-o", f"{batch}/"], in_batch),
        "compare-over-reference": (["compare", m, str(sidecar_model), "-o", m], onnx_model),
        "batch-index-over-annotations": (["batch", m, "-a", str(batch_notes), "-o", str(batch)], batch_notes),
    }


@pytest.mark.parametrize("case", [
    "export-json-over-model", "metrics-json-over-model", "export-over-tflite", "render-default-output-is-model",
    "render-over-annotations", "render-over-model-dot-slash", "render-over-model-dot-dot",
    "render-over-model-symlink", "export-over-hard-link-of-annotations", "export-over-sidecar",
    "embed-over-annotations", "embed-over-model", "render-batch-over-model", "compare-over-reference",
    "batch-index-over-annotations"])
def test_an_output_never_overwrites_an_input(case: str, tmp_path: Path) -> None:
    args, kept = _overwrite_cases(tmp_path)[case]
    before = kept.read_bytes()
    run = run_cli(*args, cwd=kept.parent)
    assert run.returncode != 0, f"{case}: exit 0\n{run.stderr}"
    assert "Traceback" not in run.stderr, run.stderr
    assert "is an input of this run" in run.stderr, run.stderr
    assert kept.read_bytes() == before, f"{case}: {kept.name} was overwritten"
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize("command", sorted(registry.COMMANDS))
def test_commands_of_the_registry_never_overwrite_an_input(command: str, tmp_path: Path) -> None:
    """Every over-an-input run ``tests/support/registry.py`` lists for a command is refused, and writes nothing."""
    cases = registry.COMMANDS[command].over_input(tmp_path)
    assert cases
    for case, (args, kept) in cases.items():
        before = kept.read_bytes()
        run = run_cli(*args)
        assert run.returncode == 1, f"{case}: exit {run.returncode}\n{run.stderr}"
        assert "Traceback" not in run.stderr and "is an input of this run" in run.stderr, run.stderr
        assert kept.read_bytes() == before, f"{case}: {kept.name} was overwritten"
        assert not list(tmp_path.glob("*.svg")), f"{case}: wrote a picture"
    assert leftovers(tmp_path) == []


def _side_file_cases(folder: Path) -> dict[str, tuple[list[str], Path]]:
    """Runs whose output is a file a reader or loader found by itself: the layer information beside a TensorRT
    profile (issue 31: ``export … -o tiny_cnn.layers.json`` overwrote it, exit 0), an ONNX model's external data."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    model = folder / "tiny_cnn.onnx"
    model.write_bytes((ONNX / "tiny_cnn.onnx").read_bytes())
    for name in ("tiny_cnn.profile.json", "tiny_cnn.layers.json"):
        (folder / name).write_bytes((ROOT / "tests" / "fixtures" / "tensorrt" / name).read_bytes())
    profile, layers = str(folder / "tiny_cnn.profile.json"), folder / "tiny_cnn.layers.json"
    weights = numpy_helper.from_array(np.ones((4, 4), np.float32), "w")
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])], [weights])
    external = folder / "ext.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), external,
              save_as_external_data=True, location="ext.weights", size_threshold=0)
    data = folder / "ext.weights"
    np.savez(folder / "dumps.npz", y=np.ones((1, 4), np.float32))
    (folder / "layers.svg").symlink_to(layers)
    (folder / "layers.md").symlink_to(layers)
    (folder / "weights.svg").symlink_to(data)
    m = str(model)
    return {
        "export-over-layer-info": (["export", m, "-a", profile, "--to", "json", "-o", str(layers)], layers),
        "render-over-layer-info-by-a-link": (["render", m, "-a", profile, "-o", str(folder / "layers.svg")], layers),
        "render-summary-over-layer-info": (["render", m, "-a", profile, "-o", str(folder / "r.dot"), "--summary",
                                            str(folder / "layers.md")], layers),
        "diff-summary-over-layer-info": (["diff", m, "--before", profile, "--after", profile, "-o",
                                          str(folder / "d.dot"), "--summary", str(folder / "layers.md")], layers),
        "export-over-external-data": (["export", str(external), "--to", "json", "-o", str(data)], data),
        "render-over-external-data": (["render", str(external), "-o", str(folder / "weights.svg")], data),
        "metrics-over-external-data": (["metrics", str(external), "--table-format", "json", "-o", str(data)], data),
        "embed-over-external-data": (["embed", str(external), "-a", profile, "--no-sidecar", "-o", str(data)], data),
        "compare-over-external-data": (["compare", str(external), str(external), "-o", str(data)], data),
        "compare-dumps-over-external-data": (["compare", "--dumps", str(folder / "dumps.npz"),
                                              str(folder / "dumps.npz"), "--model", str(external), "-o", str(data)],
                                             data),
    }


@pytest.mark.parametrize("case", ["export-over-layer-info", "render-over-layer-info-by-a-link",
                                  "render-summary-over-layer-info", "diff-summary-over-layer-info",
                                  "export-over-external-data", "render-over-external-data",
                                  "metrics-over-external-data", "embed-over-external-data",
                                  "compare-over-external-data", "compare-dumps-over-external-data"])
def test_files_found_beside_an_input_are_inputs_too(case: str, tmp_path: Path) -> None:
    args, kept = _side_file_cases(tmp_path)[case]
    before = kept.read_bytes()
    run = run_cli(*args)
    assert run.returncode == 1, f"{case}: exit {run.returncode}\n{run.stderr}"
    assert "is an input of this run" in one_line_error(run), run.stderr
    assert kept.read_bytes() == before, f"{case}: {kept.name} was overwritten"
    assert not list(tmp_path.glob("[rd].*")) and leftovers(tmp_path) == []  # r.dot, d.dot: no picture written


def test_diff_summary_takes_only_markdown(tmp_path: Path) -> None:
    """As ``render --summary``: a summary named ``.json`` or ``.txt`` is refused before anything is read."""
    model = str(ONNX / "tiny_cnn.onnx")
    for name in ("summary.txt", "tiny_cnn.layers.json", "summary"):
        run = run_cli("diff", model, model, "--metric", "macs", "-o", tmp_path / "d.dot", "--summary",
                      tmp_path / name)
        assert f"--summary {tmp_path / name}: name a .md file" in one_line_error(run)
        assert not list(tmp_path.iterdir())


def test_refuse_inputs_compares_files_not_names(tmp_path: Path) -> None:
    from renderer.core.errors import RenderError
    from renderer.files.atomic import refuse_inputs

    model = tmp_path / "m.onnx"
    model.write_bytes(b"x")
    (tmp_path / "sub").mkdir()
    refuse_inputs([tmp_path / "new.svg", tmp_path / "sub"], [model, tmp_path / "missing.yaml"])  # no error
    for spelling in (f"{tmp_path}/./m.onnx", f"{tmp_path}/sub/../m.onnx"):
        with pytest.raises(RenderError, match="is an input of this run"):
            refuse_inputs([spelling], [model])


def test_batch_models_with_the_same_name_are_refused(tmp_path: Path) -> None:
    """``a/m.onnx b/m.onnx -o out/`` silently wrote one ``m.svg`` (the last); ``m.onnx m.tflite`` too."""
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
    (tmp_path / "a" / "m.onnx").write_bytes((ONNX / "tiny_cnn.onnx").read_bytes())
    (tmp_path / "b" / "m.onnx").write_bytes((ONNX / "unnamed_nodes.onnx").read_bytes())
    (tmp_path / "a" / "m.tflite").write_bytes((TFLITE / "okay_nabu.tflite").read_bytes())
    out = tmp_path / "out"
    for pair in (("a/m.onnx", "b/m.onnx"), ("a/m.onnx", "a/m.tflite"), ("a/m.onnx", "a/./m.onnx")):
        first, second = (str(tmp_path / p) for p in pair)
        line = one_line_error(run_cli("render", first, second, "-o", f"{out}/", "--format", "svg,dot"))
        assert f"{first} and {second} would both be written to {out}/m.svg" in line, line
        assert not out.exists()


def test_batch_where_every_model_fails_writes_no_folder(tmp_path: Path) -> None:
    bad = [tmp_path / "one.onnx", tmp_path / "two.tflite"]
    bad[0].write_bytes((ONNX / "tiny_cnn.onnx").read_bytes()[:500])
    bad[1].write_bytes(b"not a model")
    out = tmp_path / "new" / "out"
    run = run_cli("render", *bad, "-o", f"{out}/", "-q")
    assert run.returncode == 1 and "Traceback" not in run.stderr, run.stderr
    assert "all 2 models failed; nothing was written" in run.stderr
    assert "the others were written" not in run.stderr
    assert not (tmp_path / "new").exists()
    existing = tmp_path / "kept"
    existing.mkdir()
    run = run_cli("render", *bad, "-o", f"{existing}/", "-q")
    assert run.returncode == 1 and existing.is_dir() and not list(existing.iterdir())  # a user's folder stays


def _children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        found += [int(c) for c in (task / "children").read_text().split()]
    return found


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_stopping_annograph_during_layout_stops_dot(signum: int, tmp_path: Path) -> None:
    """``kill PID`` while Graphviz lays out: annograph used to die at once and leave ``dot`` running for as long
    as the layout takes. Now the signal ends the run the way Ctrl-C does: the child is killed, nothing written.
    (A ``dot`` that takes a minute, so the signal surely arrives during the layout.)"""
    env = dict(os.environ, PYTHONPATH=str(ROOT), **fake_dot(tmp_path, "exec sleep 60"))
    process = subprocess.Popen([sys.executable, "-m", "renderer", "render", str(ONNX / "tiny_cnn.onnx"), "-o",
                                str(tmp_path / "out.svg"), "-q", "--no-sidecar"], env=env, cwd=ROOT,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               # under nohup SIGHUP is ignored, and annograph rightly keeps that: start from the
                               # default disposition a terminal gives
                               preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_DFL))
    dot = None
    try:
        deadline = time.monotonic() + 120
        while dot is None and time.monotonic() < deadline and process.poll() is None:
            dot = next(iter(_children(process.pid)), None)
            time.sleep(0.05)
        assert dot is not None, "dot never started"
        time.sleep(0.3)
        process.send_signal(signum)
        process.wait(timeout=30)
        deadline = time.monotonic() + 5
        while _alive(dot) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(dot), "dot is still running after annograph stopped"
        assert process.returncode in (128 + signum, -signum), process.returncode
        assert not (tmp_path / "out.svg").exists() and leftovers(tmp_path) == []
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        if dot is not None and _alive(dot):
            os.kill(dot, signal.SIGKILL)


# ---- pages folders: only the names annograph writes are pages --------------------------------------------------

PAGED = ONNX / "bert_scoped.onnx"  # drawn as an overview and pages; DOT outputs need no layout


def paged_dot(out: Path, *args: str | Path):  # type: ignore[no-untyped-def]
    return run_cli("render", PAGED, "-o", out, "--no-sidecar", "-q", *args)


@pytest.fixture(scope="module")
def earlier_pages(tmp_path_factory) -> dict[str, bytes]:  # type: ignore[no-untyped-def]
    """The page files of a first render of the paged model, to lay into a folder as a former run would."""
    out = tmp_path_factory.mktemp("pages") / "m.dot"
    run = paged_dot(out)
    assert run.returncode == 0, run.stderr
    return {p.name: p.read_bytes() for p in sorted(out.with_name("m.dot.pages").iterdir())}


def lay_pages(folder: Path, pages: dict[str, bytes]) -> None:
    folder.mkdir()
    for name, data in pages.items():
        (folder / name).write_bytes(data)


def test_a_file_named_like_a_page_is_not_a_page(tmp_path: Path, earlier_pages: dict[str, bytes]) -> None:
    """``page-notes.dot`` (and ``page-1.dot``, ``page-000.dot``) in a pages folder are the user's: the run is
    refused and they stay."""
    for name in ("page-notes.dot", "page-1.dot", "page-000.dot", "page-0001.dot"):
        folder = tmp_path / "m.dot.pages"
        lay_pages(folder, earlier_pages)
        (folder / name).write_text("my notes", encoding="utf-8")
        run = paged_dot(tmp_path / "m.dot")
        assert run.returncode == 1 and name in run.stderr and "did not write" in run.stderr, run.stderr
        assert (folder / name).read_text(encoding="utf-8") == "my notes"
        assert not (tmp_path / "m.dot").exists() and leftovers(tmp_path) == []
        shutil.rmtree(folder)
    lay_pages(tmp_path / "m.dot.pages", earlier_pages)
    run = paged_dot(tmp_path / "m.dot")  # only pages a former run wrote: replaced
    assert run.returncode == 0, run.stderr
    assert sorted(p.name for p in (tmp_path / "m.dot.pages").iterdir()) == sorted(earlier_pages)


def test_an_input_in_the_pages_folder_is_never_replaced(tmp_path: Path, earlier_pages: dict[str, bytes]) -> None:
    folder = tmp_path / "m.dot.pages"
    lay_pages(folder, earlier_pages)
    notes = folder / "page-001.dot"  # an annotation file, stored where a page would go
    notes.write_text("operators:\n  - {id: '0', cost: 3}\n", encoding="utf-8")
    run = paged_dot(tmp_path / "m.dot", "-a", notes)
    assert run.returncode == 1 and "is an input of this run" in run.stderr, run.stderr
    assert notes.read_text(encoding="utf-8").startswith("operators:")
    assert not (tmp_path / "m.dot").exists() and leftovers(tmp_path) == []


def test_an_output_inside_the_pages_folder_is_refused_before_anything_is_written(
        tmp_path: Path, earlier_pages: dict[str, bytes]) -> None:
    folder = tmp_path / "m.dot.pages"
    lay_pages(folder, earlier_pages)
    (tmp_path / "m.dot").write_bytes(OLD)
    for inside in (folder / "extra.dot", folder / "page-001.dot", folder / "deeper" / ".." / "x.dot"):
        run = paged_dot(tmp_path / "m.dot", "-o", inside)
        assert run.returncode == 1 and "inside the pages folder" in run.stderr, run.stderr
        assert len(run.stderr.strip().splitlines()) == 1
        assert (tmp_path / "m.dot").read_bytes() == OLD
        assert {p.name: p.read_bytes() for p in folder.iterdir()} == earlier_pages
        assert leftovers(tmp_path) == []


def test_a_pages_folder_that_is_a_symlink_leaves_no_hidden_link(tmp_path: Path,
                                                                 earlier_pages: dict[str, bytes]) -> None:
    """The link is replaced by the folder of pages (as a file output replaces a link); the folder it pointed to
    is left as it was, and nothing hidden stays behind."""
    elsewhere = tmp_path / "published"
    lay_pages(elsewhere, earlier_pages)
    (tmp_path / "m.dot.pages").symlink_to(elsewhere)
    run = paged_dot(tmp_path / "m.dot")
    assert run.returncode == 0, run.stderr
    pages = tmp_path / "m.dot.pages"
    assert pages.is_dir() and not pages.is_symlink()
    assert sorted(p.name for p in pages.iterdir()) == sorted(earlier_pages)
    assert {p.name: p.read_bytes() for p in elsewhere.iterdir()} == earlier_pages
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []


def test_page_file_names_are_exact() -> None:
    from renderer.files.page_names import is_page_file

    assert is_page_file("page-001.svg", {"svg"}) and is_page_file("page-1234.dot", {"dot", "svg"})
    for name in ("page-notes.dot", "page-1.svg", "page-000.svg", "page-0001.svg", "page-001.svg.bak", "Page-001.svg",
                 "page-001.png"):
        assert not is_page_file(name, {"svg", "dot"}), name
