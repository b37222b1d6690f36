"""Progress bars and -q / -v: bars on a terminal's stderr only, the same bytes either way, every command alike.

The terminal is a real pseudo-terminal (``pty.openpty``) holding the CLI's stderr, as when a person runs it.
"""

from __future__ import annotations

import fcntl
import os
import re
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest

import renderer
from conftest import ONNX, ROOT, SAMPLES, run_cli, transformer_models
from renderer.commands.cli import COMMANDS, build_parser

STAGE = re.compile(r"^annograph: [A-Za-z][\w ]* \d+\.\d\d s(: |$)", re.M)  # "load 0.09 s: …"
# a child that shows its spinner at once (in a test run the step would be over before the usual wait)
NO_WAIT = ("import sys; from renderer.core import progress; from renderer.commands import cli; "
           "progress.WAIT_BEFORE_SPINNER = 0")


def _on_terminal(args: list[str | Path], code: str | None = None, columns: int = 100,
                 timeout: float = 300) -> tuple[int, bytes, bytes]:
    """(exit status, what reached the terminal, stdout) of ``python -m renderer ARGS`` (or ``python -c CODE``)
    with stderr on a pseudo-terminal."""
    import pty

    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 30, columns, 0, 0))  # a new pty is 0 columns wide
    env = dict(os.environ, PYTHONPATH=str(ROOT), COLUMNS=str(columns))
    command = [sys.executable, "-c", code] if code else [sys.executable, "-m", "renderer", *map(str, args)]
    process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=follower, env=env,
                               cwd=ROOT)
    os.close(follower)
    shown = b""
    while True:  # read while it runs: once the terminal's other end is closed, Linux answers EIO
        try:
            chunk = os.read(leader, 65536)
        except OSError:
            break
        if not chunk:
            break
        shown += chunk
    os.close(leader)
    stdout = process.stdout.read() if process.stdout else b""
    return process.wait(timeout=timeout), shown, stdout


@pytest.fixture(scope="module")
def big_weight(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A MatMul whose weight is just big enough for the weight pass to show a bar."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    from renderer.metrics.data import PROGRESS_MIN_ELEMENTS

    side = int(PROGRESS_MIN_ELEMENTS**0.5) + 1
    weight = (np.arange(side * side, dtype=np.float32) % 7 - 3).reshape(side, side)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"], name="project")], "big",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, side])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, side])],
        [numpy_helper.from_array(weight, "w")],
    )
    path = tmp_path_factory.mktemp("big") / "big_weight.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def test_weights_bar_on_a_terminal_only(big_weight: Path, tmp_path: Path) -> None:
    status, shown, stdout = _on_terminal(["metrics", big_weight, "-o", tmp_path / "tty.csv"])
    assert status == 0 and stdout == b""
    assert re.search(rb"reading weights: +\d+%\|", shown), shown[-300:]
    piped = run_cli("metrics", big_weight, "-o", tmp_path / "pipe.csv")
    assert piped.returncode == 0 and piped.stdout == ""
    assert "\r" not in piped.stderr and "%|" not in piped.stderr
    assert piped.stderr.startswith("annograph: wrote metrics of 1 operators")  # the normal summary, nothing else
    assert (tmp_path / "tty.csv").read_bytes() == (tmp_path / "pipe.csv").read_bytes()
    import csv

    import numpy as np

    row = next(r for r in csv.DictReader((tmp_path / "pipe.csv").open()) if r["id"] == "0:0")
    values = np.arange(int(row["params"]), dtype=np.int64) % 7 - 3  # the weight as the fixture made it
    assert (float(row["weight_min"]), float(row["weight_max"])) == (-3.0, 3.0)
    assert float(row["weight_zero_fraction"]) == pytest.approx(np.mean(values == 0), rel=1e-4)


def test_layout_bar_on_a_terminal_and_not_with_quiet(tmp_path: Path) -> None:
    """Laying out the pages of a big model: a bar on a terminal; -q draws none and says nothing. The files are
    the same bytes whichever way it ran (same name in three folders: the overview links to its pages by name)."""
    model = ONNX / "bert_scoped.onnx"  # dims kept free: no shape run, whose note -q would still print
    tty, quiet, piped = (tmp_path / name / "m.svg" for name in ("tty", "quiet", "piped"))
    for path in (tty, quiet, piped):
        path.parent.mkdir()
    status, shown, _ = _on_terminal(["render", model, "-o", tty, "--no-sidecar", "--keep-free-dims"])
    assert status == 0
    assert re.search(rb"layout: +\d+%.*page", shown), shown[-300:]
    status, shown, _ = _on_terminal(["render", model, "-o", quiet, "--no-sidecar", "--keep-free-dims", "-q"])
    assert status == 0 and shown == b""
    run = run_cli("render", model, "-o", piped, "--no-sidecar", "--keep-free-dims")
    assert run.returncode == 0 and "\r" not in run.stderr and "%|" not in run.stderr
    files = sorted(p.relative_to(piped.parent) for p in piped.parent.rglob("*") if p.is_file())
    assert len(files) > 2  # the overview and its pages
    for other in (tty, quiet):
        assert sorted(p.relative_to(other.parent) for p in other.parent.rglob("*") if p.is_file()) == files
        for name in files:
            assert (other.parent / name).read_bytes() == (piped.parent / name).read_bytes(), name


@pytest.mark.parametrize(("command", "bar"), [("batch", rb"batch: +\d+%\|.*model"),
                                            ("compare", rb"running both models: \d\d:\d\d")])
def test_batch_and_compare_bars(command: str, bar: bytes, tmp_path: Path) -> None:
    """Models done of a batch; both models run and measured by compare's bounded child (an elapsed-time line,
    from 0 s here instead of 1): on a terminal only, the same files as when piped."""
    import shutil

    (tmp_path / "tty").mkdir()
    (tmp_path / "piped").mkdir()
    args = {folder: _invocation(command, tmp_path / folder) for folder in ("tty", "piped")}
    if command == "batch":  # a bar needs two models at least
        shutil.copy(ONNX / "tiny_cnn.onnx", tmp_path / "twin.onnx")
        args = {folder: [tmp_path / "twin.onnx", *given] for folder, given in args.items()}
    code = (f"{NO_WAIT}; "
            f"sys.exit(cli.main({[command, *map(str, args['tty'])]!r}))")
    status, shown, _ = _on_terminal([], code)
    assert status == 0 and re.search(bar, shown), shown[-300:]
    piped = run_cli(command, *args["piped"])
    assert piped.returncode == 0 and "\r" not in piped.stderr and "%|" not in piped.stderr
    files = sorted(p.relative_to(tmp_path / "piped") for p in (tmp_path / "piped").rglob("*") if p.is_file())
    assert files and files == sorted(p.relative_to(tmp_path / "tty") for p in (tmp_path / "tty").rglob("*")
                                     if p.is_file())
    for name in files:
        assert (tmp_path / "tty" / name).read_bytes() == (tmp_path / "piped" / name).read_bytes(), name


def test_elapsed_time_while_dot_runs(tmp_path: Path) -> None:
    """One long Graphviz run has no steps to count: an elapsed-time line stands in (here from 0 s instead of 1)."""
    out = tmp_path / "one.svg"
    code = (f"{NO_WAIT}; "
            f"sys.exit(cli.main(['render', {str(ONNX / 'light_resnet50.onnx')!r}, '-o', {str(out)!r}, "
            "'--no-sidecar', '--collapse', 'none']))")
    status, shown, _ = _on_terminal([], code)
    assert status == 0 and out.exists()
    assert re.search(rb"dot: \d\d:\d\d", shown), shown[-300:]


def _bar_segments(shown: bytes) -> list[str]:
    """What the bars drew: each state between carriage returns, the run's own message lines left out."""
    text = re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", shown.decode("utf-8", "replace"))
    return [piece for piece in re.split(r"[\r\n]", text) if piece.strip() and not piece.startswith("annograph: ")]


def test_every_long_stage_shows_progress_within_40_columns(big_weight: Path, tmp_path: Path) -> None:
    """On a 40-column terminal: the shape run and the writing show their progress (elapsed-time lines from 0 s
    here instead of 1), the metric pass, the layout of the pages and the weight pass their bars, and no state
    of any of them is wider than the terminal (tqdm's width follows the terminal's)."""
    out = tmp_path / "bert.svg"
    code = (f"{NO_WAIT}; "
            f"sys.exit(cli.main(['render', {str(ONNX / 'bert_scoped.onnx')!r}, '-o', {str(out)!r}, '--no-sidecar', "
            "'--dim', 'batch=1', '--dim', 'sequence=16', '--color-by', 'macs', '--no-layout-cache']))")
    status, shown, _ = _on_terminal([], code, columns=40)
    assert status == 0 and out.exists()
    segments = _bar_segments(shown)
    for stage in (r"shape run \(onnxruntime\): \d\d:\d\d", r"metrics: +\d+%\|", r"layout: +\d+%\|",
                  r"writing: \d\d:\d\d"):
        assert any(re.match(stage, s) for s in segments), (stage, segments[-10:])
    assert max(map(len, segments)) <= 40, [s for s in segments if len(s) > 40][:3]
    status, shown, _ = _on_terminal(["metrics", big_weight, "-o", tmp_path / "m.csv"], columns=40)
    segments = _bar_segments(shown)
    assert status == 0 and any(re.match(r"reading weights: +\d+%", s) for s in segments), segments[-5:]
    assert max(map(len, segments)) <= 40, [s for s in segments if len(s) > 40][:3]


@pytest.fixture(scope="module")
def transformer(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The 3.6k-operator BERT-like encoder of benchmarks/transformer_models.py (40 layers)."""
    path = tmp_path_factory.mktemp("t3600") / "t3600.onnx"
    transformer_models().write(path, 40, "scoped")
    return path


def _counts(segments: list[str], desc: str) -> list[tuple[int, int]]:
    """(done, total) of every state of the bar ``desc`` (``desc:  45%|████   | 1620/3591 [...]``)."""
    found = [re.match(rf"{re.escape(desc)}: +\d+%\|[^|]*\| *(\d+)/(\d+) ", s) for s in segments]
    return [(int(m.group(1)), int(m.group(2))) for m in found if m]


@pytest.mark.parametrize("columns", [100, 20])
def test_the_metric_pass_counts_operators_and_tensors(transformer: Path, columns: int, tmp_path: Path) -> None:
    """``annograph metrics`` on the 3.6k-operator transformer: a bar counting its operators (N/3,591), then its
    tensors; on a 20-column terminal no state is wider than 20; with -q nothing at all."""
    model = renderer.load_model(transformer)
    status, shown, stdout = _on_terminal(["metrics", transformer, "-o", tmp_path / "m.csv"], columns=columns)
    assert status == 0 and stdout == b""
    segments = _bar_segments(shown)
    assert any(re.match(r"metrics: +\d+%\|", s) for s in segments), segments[-5:]
    assert max(map(len, segments)) <= columns, [s for s in segments if len(s) > columns][:3]
    if columns >= 100:
        operators, tensors = _counts(segments, "metrics"), _counts(segments, "tensor sizes")
        assert operators and {total for _, total in operators} == {len(list(model.nodes()))}, operators
        assert tensors and {total for _, total in tensors} == {len(list(model.values()))}, tensors
        assert all(done <= total for done, total in operators + tensors)
    status, shown, _ = _on_terminal(["metrics", transformer, "-o", tmp_path / "q.csv", "-q"], columns=columns)
    assert status == 0 and _bar_segments(shown) == [] and b"%|" not in shown  # its warnings only (free dims)
    assert (tmp_path / "q.csv").read_bytes() == (tmp_path / "m.csv").read_bytes()


@pytest.mark.parametrize("columns", [100, 20])
def test_compare_counts_the_tensors_it_measures(transformer: Path, columns: int, tmp_path: Path) -> None:
    """``annograph compare``: while both models run in the child, an elapsed-time line (from 0 s here); then a
    bar counting the tensors measured (N/2,501, the tensors the written comparison holds), fed by the child
    through a pipe; no state wider than a 20-column terminal; nothing with -q or when stderr is a pipe."""
    out = tmp_path / "errors.json"
    code = (f"{NO_WAIT}; "
            f"sys.exit(cli.main(['compare', {str(transformer)!r}, {str(transformer)!r}, '-o', {str(out)!r}]))")
    status, shown, _ = _on_terminal([], code, columns=columns, timeout=600)
    assert status == 0, shown[-300:]
    segments = _bar_segments(shown)
    assert any(s.startswith("running both models"[:columns]) for s in segments), segments[:5]
    assert any(re.match(r"comparing: +\d+%\|", s) for s in segments), segments[-5:]
    assert max(map(len, segments)) <= columns, [s for s in segments if len(s) > columns][:3]
    if columns >= 100:
        import json

        measured = len(json.loads(out.read_text(encoding="utf-8"))["tensors"])
        counts = _counts(segments, "comparing")
        assert measured > 2000 and counts and {total for _, total in counts} == {measured}, counts[:3]
        assert [done for done, _ in counts] == sorted(done for done, _ in counts)  # counted up, never back
        status, shown, _ = _on_terminal(["compare", transformer, transformer, "-o", tmp_path / "q.json", "-q"],
                                        timeout=600)
        assert status == 0 and _bar_segments(shown) == [] and b"%|" not in shown  # its warnings only
        piped = run_cli("compare", transformer, transformer, "-o", tmp_path / "p.json", timeout=600)
        assert piped.returncode == 0 and "\r" not in piped.stderr and "%|" not in piped.stderr
        assert (tmp_path / "q.json").read_bytes() == (tmp_path / "p.json").read_bytes() == out.read_bytes()


def test_the_python_api_draws_nothing(big_weight: Path, tmp_path: Path) -> None:
    out = tmp_path / "api.svg"
    code = ("import renderer; from renderer.core.options import RenderOptions; "
            f"m = renderer.load_model({str(big_weight)!r}); "
            f"renderer.render(m, None, RenderOptions(color_by='weight_mean'), output={str(out)!r})")
    status, shown, stdout = _on_terminal([], code)
    assert status == 0 and out.exists()
    assert shown == b"" and stdout == b""


def _invocation(command: str, tmp: Path) -> list[str | Path]:
    """The smallest clean run of each command (no warning due): a command missing here fails the test."""
    model, latency = ONNX / "tiny_cnn.onnx", SAMPLES / "annotations" / "tiny_cnn.latency.yaml"
    table: dict[str, list[str | Path]] = {
        "info": [model],
        "render": [model, "-a", latency, "--no-sidecar", "-o", tmp / "out.svg"],
        "batch": [model, "-a", latency, "--color-by", "latency_us", "-o", tmp / "out"],
        "metrics": [model, "-o", tmp / "metrics.csv"],
        "compare": [model, model, "-o", tmp / "errors.json"],
        "diff": [model, "--before", latency, "--after", latency, "--metric", "latency_us", "-o", tmp / "diff.svg"],
        "embed": [model, "-a", latency, "--no-sidecar", "-o", tmp / "copy.onnx"],
        "export": [model, "-a", latency, "--no-sidecar", "--to", "csv", "-o", tmp / "out.csv"],
    }
    if command not in table:
        pytest.fail(f"tests/unit/core/test_progress.py has no minimal invocation of `annograph {command}`: add one")
    return table[command]


@pytest.mark.parametrize("command", COMMANDS)
def test_quiet_and_verbose_mean_the_same_everywhere(command: str, tmp_path: Path) -> None:
    runs = {}
    for flag in ("-q", "", "-v"):
        folder = tmp_path / (flag.strip("-") or "normal")
        folder.mkdir()
        runs[flag] = run_cli(command, *_invocation(command, folder), *([flag] if flag else []))
        assert runs[flag].returncode == 0, (flag, runs[flag].stderr)
    assert runs["-q"].stderr == ""
    assert not STAGE.search(runs[""].stderr)
    stages = STAGE.findall(runs["-v"].stderr)
    assert stages, runs["-v"].stderr
    verbose_lines = runs["-v"].stderr.splitlines()
    assert all(line in verbose_lines for line in runs[""].stderr.replace(str(tmp_path / "normal"),
                                                                         str(tmp_path / "v")).splitlines())
    assert runs["-q"].stdout == runs[""].stdout.replace(str(tmp_path / "normal"), str(tmp_path / "q"))
    both = run_cli(command, *_invocation(command, tmp_path), "-q", "-v")
    assert both.returncode == 2 and both.stdout == ""
    assert both.stderr.count("\n") == 1 and "not allowed with" in both.stderr


def test_one_help_text_for_quiet_and_verbose() -> None:
    parser = build_parser()
    commands = next(a for a in parser._actions if a.dest == "command").choices  # type: ignore[union-attr]
    helps = {
        name: sorted((tuple(a.option_strings), a.help) for a in sub._actions if a.dest in ("quiet", "verbose"))
        for name, sub in commands.items()
    }
    assert set(helps) == set(COMMANDS)
    assert len({tuple(h) for h in helps.values()}) == 1 and len(helps["info"]) == 2, helps


def test_lines_held_are_said_in_their_place(capsys: pytest.CaptureFixture[str]) -> None:
    """What work done ahead on another thread would say is kept (``progress.held``), in that thread only, and said
    when the work is taken: a warning always, a detail at -v only, as when said at once."""
    import threading

    from renderer.core import progress

    kept: list[list[str]] = []

    def ahead() -> None:
        with progress.held() as lines:
            progress.warn("a warning")
            progress.detail("a detail")
        kept.append(lines)

    with progress.verbosity(progress.Verbosity.VERBOSE):
        thread = threading.Thread(target=ahead)
        thread.start()
        thread.join()
        progress.detail("said at once")
    assert kept == [["a warning", "a detail"]]
    assert capsys.readouterr().err == "annograph: said at once\n"
    with progress.verbosity(progress.Verbosity.VERBOSE):
        progress.said(kept[0])
    assert capsys.readouterr().err == "annograph: a warning\nannograph: a detail\n"


def test_lines_said_by_many_threads_at_once_stay_whole(capsys: pytest.CaptureFixture[str]) -> None:
    """The page threads of a book say their ``-v`` lines at the same time: each reaches stderr whole, the line
    and its end in one write (a thread switch between them ran two lines together, "…DOTannograph: layout …")."""
    import threading

    from renderer.core import progress

    def say(thread: int) -> None:
        for line in range(1000):
            progress.detail(f"layout page {thread}.{line} 0.01 s")

    switching = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        with progress.verbosity(progress.Verbosity.VERBOSE):
            threads = [threading.Thread(target=say, args=(n,)) for n in range(6)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
    finally:
        sys.setswitchinterval(switching)
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 6 * 1000
    assert all(re.fullmatch(r"annograph: layout page \d\.\d+ 0\.01 s", line) for line in lines), [
        line for line in lines if not re.fullmatch(r"annograph: layout page \d\.\d+ 0\.01 s", line)][:3]
    assert sorted(lines) == sorted(f"annograph: layout page {t}.{n} 0.01 s" for t in range(6) for n in range(1000))


def test_a_line_said_without_a_stderr_is_dropped(monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """A program embedding the renderer without a console (``sys.stderr`` is None, as under pythonw) gets its
    work done: a warning then goes nowhere, neither raising nor landing on stdout among the outputs."""
    from renderer.core import progress

    monkeypatch.setattr(sys, "stderr", None)
    progress.warn("a warning")
    monkeypatch.undo()
    assert capsys.readouterr() == ("", "")
