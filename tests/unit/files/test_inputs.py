"""Inputs that are not regular files: pipes (``-a <(cat notes.yaml)``, ``render <(cat m.onnx)``), FIFOs, devices
that never end (``/dev/zero``, ``/dev/urandom``) and models symlinked to them.

Every registered loader and reader reads its seed files through a pipe and must see exactly what it sees in
the regular file (the format probe used to eat the first 4 KiB of a pipe). Endless devices are refused after
the probe, within seconds and a little memory; a FIFO nobody writes to ends the run with one line.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import payloads as P
from conftest import ONNX, ROOT


class Pipe:
    """A pipe whose read end is ``path`` (``/dev/fd/N``, as bash's ``<(…)`` gives), fed by a thread."""

    def __init__(self, data: bytes, delay: float = 0.0) -> None:
        self.read_fd, write_fd = os.pipe()
        self.path = Path(f"/dev/fd/{self.read_fd}")

        def feed() -> None:
            time.sleep(delay)
            with os.fdopen(write_fd, "wb") as f:
                try:
                    f.write(data)
                except BrokenPipeError:
                    pass

        self.thread = threading.Thread(target=feed, daemon=True)
        self.thread.start()

    def close(self) -> None:
        os.close(self.read_fd)
        self.thread.join(10)


def _summary(annotations) -> tuple:  # type: ignore[no-untyped-def]
    return (sorted((k, sorted(map(str, e.values.items()))) for k, e in annotations.ops.items()),
            sorted((k, sorted(map(str, e.values.items()))) for k, e in annotations.tensors.items()),
            sorted(map(str, annotations.graph.values.items())))


@pytest.mark.parametrize("module", P.reader_modules(), ids=lambda m: m.NAME)
def test_every_reader_sees_the_same_through_a_pipe(module, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """The reader's biggest seed that reads into something (past the 4 KiB probe where there is one), once from
    a regular file and once from a pipe, detected by content both times."""
    from renderer.annotations.registry import load_annotations
    from renderer.core.errors import AnnographError
    from renderer.files import inputs
    from renderer.loaders.registry import load_model

    models = [load_model(P.reader_model(module)), load_model(ONNX / "tiny_cnn.onnx")]
    candidates = [(s, m) for s in sorted(P.reader_seeds(module), key=lambda s: -len(s.data)) for m in models]
    for seed, model in candidates:
        regular = tmp_path / seed.name
        regular.write_bytes(seed.data)
        try:
            expected = load_annotations([regular], model)
        except AnnographError:
            continue
        if expected.ops or expected.tensors:
            break
    else:
        pytest.fail(f"{module.NAME}: no seed reads into anything")
    pipe = Pipe(seed.data)
    try:
        got = load_annotations([pipe.path], model)
    finally:
        inputs.forget()
        pipe.close()
    assert [c.source for c in got.coverage] == [c.source for c in expected.coverage] == [module.NAME]
    assert _summary(got) == _summary(expected)


@pytest.mark.parametrize("module", P.loader_modules(), ids=lambda m: m.FORMAT)
def test_every_loader_reads_a_pipe(module, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from renderer.files import inputs
    from renderer.loaders.registry import HEAD_BYTES, load_model

    seed = max((s for s in P.loader_seeds(module) if len(s.data) < 5_000_000 and module.match(s.data[:HEAD_BYTES])),
               key=lambda s: len(s.data))
    regular = tmp_path / seed.name
    regular.write_bytes(seed.data)
    expected = load_model(regular)
    pipe = Pipe(seed.data)
    try:
        got = load_model(pipe.path)
    finally:
        inputs.forget()
        pipe.close()
    assert [len(g.nodes) for g in got.graphs] == [len(g.nodes) for g in expected.graphs]
    assert [str(v.type) for v in got.values()] == [str(v.type) for v in expected.values()]


def test_process_substitution_through_the_command(tmp_path: Path) -> None:
    """``render <(cat m.onnx) -a <(cat notes.yaml)`` as bash runs it: the model renders and no annotation is lost
    (the notes were read after a 4 KiB probe had emptied the pipe)."""
    notes = tmp_path / "notes.yaml"
    notes.write_text("operators:\n" + "".join(f"  - {{id: {i}, latency_ms: {i + 0.5}, note: '{'x' * 240}'}}\n"
                                              for i in range(18)), encoding="utf-8")
    assert notes.stat().st_size > 4096
    small = tmp_path / "small.yaml"
    small.write_text("operators:\n  - {id: 3, latency_ms: 7.5}\n", encoding="utf-8")
    out = tmp_path / "m.svg"
    command = (f'"{sys.executable}" -m renderer render <(cat "{ONNX / "tiny_cnn.onnx"}") -a <(cat "{notes}") '
               f'-a <(cat "{small}") --color-by latency_ms -o "{out}"')
    done = subprocess.run(["bash", "-c", command], capture_output=True, text=True, cwd=ROOT, timeout=120,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert done.returncode == 0, done.stderr
    assert "matched 18/18 operators" in done.stderr and "matched 1/1 operators" in done.stderr, done.stderr
    assert out.stat().st_size > 1000


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom"])
def test_endless_devices_are_refused_quickly(device: str, tmp_path: Path) -> None:
    """As annotations, and as a model behind a symlink with a model's name (which made the loader read until
    memory ran out). Under a 1.5 GiB address-space limit and in a few seconds."""
    (tmp_path / "m.onnx").symlink_to(device)
    (tmp_path / "m.tflite").symlink_to(device)
    limit = "import resource, runpy, sys; resource.setrlimit(resource.RLIMIT_AS, (1536 << 20, 1536 << 20)); "
    cases = [(["render", str(ONNX / "tiny_cnn.onnx"), "-a", device], "binary file, not an annotation file"),
             (["render", str(tmp_path / "m.onnx")], "not a regular file, and not ONNX or TFLite by content"),
             (["info", str(tmp_path / "m.tflite")], "not a regular file, and not ONNX or TFLite by content")]
    for args, fragment in cases:
        done = subprocess.run([sys.executable, "-c", limit + "sys.argv = ['annograph', *sys.argv[1:]]; "
                               "runpy.run_module('renderer', run_name='__main__')", *args, "-q"] if args[0] == "render"
                              else [sys.executable, "-c", limit + "sys.argv = ['annograph', *sys.argv[1:]]; "
                                    "runpy.run_module('renderer', run_name='__main__')", *args],
                              capture_output=True, text=True, cwd=tmp_path, timeout=60,  # the hang bound
                              env=dict(os.environ, PYTHONPATH=str(ROOT)))
        lines = done.stderr.strip().splitlines()
        assert done.returncode == 1 and len(lines) == 1 and fragment in lines[0], done.stderr


def test_fifo_without_a_writer_ends_with_one_line(tmp_path: Path, monkeypatch, capsys) -> None:  # type: ignore[no-untyped-def]
    """It used to block in open() for ever. Now the wait has an end (STREAM_WAIT_SECONDS, shortened here)."""
    from renderer.commands import cli
    from renderer.files import inputs

    fifo = tmp_path / "notes.yaml"
    os.mkfifo(fifo)
    monkeypatch.setattr(inputs, "STREAM_WAIT_SECONDS", 0.5)
    started = time.monotonic()
    code = cli.main(["render", str(ONNX / "tiny_cnn.onnx"), "-a", str(fifo), "-o", str(tmp_path / "m.svg"), "-q"])
    assert code == 1 and time.monotonic() - started < 10
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"{fifo}: nothing to read for" in err[0] and "no writer" in err[0], err
    assert not (tmp_path / "m.svg").exists()


def test_fifo_whose_writer_comes_late_is_read(tmp_path: Path, monkeypatch, capsys) -> None:  # type: ignore[no-untyped-def]
    from renderer.commands import cli
    from renderer.files import inputs

    fifo = tmp_path / "notes.yaml"
    os.mkfifo(fifo)
    monkeypatch.setattr(inputs, "STREAM_WAIT_SECONDS", 20)

    def writer() -> None:
        time.sleep(1.0)
        with open(fifo, "w", encoding="utf-8") as f:
            f.write("operators:\n  - {id: 2, latency_ms: 4.5}\n")

    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    code = cli.main(["render", str(ONNX / "tiny_cnn.onnx"), "-a", str(fifo), "-o", str(tmp_path / "m.svg")])
    thread.join(10)
    assert code == 0, capsys.readouterr().err
    assert "matched 1/1 operators" in capsys.readouterr().err


def test_stream_limits(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A stream longer than what it is read as is refused (not read to its end); so is a regular file."""
    from renderer.core.errors import AnnotationError
    from renderer.files import inputs

    pipe = Pipe(b"x" * 300_000)
    try:
        with pytest.raises(AnnotationError, match="more than 97.7 KiB|more than 100000 bytes"):
            inputs.read_bytes(pipe.path, 100_000, AnnotationError, "an annotation file")
    finally:
        inputs.forget()
        pipe.close()
    big = tmp_path / "big.json"
    big.write_bytes(b"[" + b"0," * 100_000 + b"0]")
    with pytest.raises(AnnotationError, match="big.json: .* is more than annograph reads as"):
        inputs.read_bytes(big, 100_000, AnnotationError, "a JSON document")
