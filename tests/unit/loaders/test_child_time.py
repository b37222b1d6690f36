"""A child run's time is CPU time (``renderer/loaders/child_time.py``): what it answers does not depend on how
loaded the machine is. Real children: a Python child that burns CPU, sleeps or answers, and onnxruntime's shape
runs of the silero VAD sample, each kept off the CPU (SIGSTOP) for longer than its whole budget, the way a loaded
machine keeps it waiting. No test here asserts how fast anything is."""

from __future__ import annotations

import math
import os
import re
import signal
import subprocess
import sys
import threading
from collections import deque
from pathlib import Path
from typing import Any

import pytest

from conftest import ROOT
from renderer.loaders import child_time, isolated

CHILD = '''
import time

from renderer.loaders import isolated


def _handle(request):
    if request["burn"] == "for ever":
        while True:
            pass
    if request["burn"] == "sleep":
        time.sleep(3600)
    started = time.process_time()
    while time.process_time() - started < request["burn"]:
        pass
    return {"burned": time.process_time() - started, "pad": len(request.get("pad", ""))}


if __name__ == "__main__":
    isolated.serve(_handle, "the burner")
'''


@pytest.fixture
def burner(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """The module name of a child that burns the CPU seconds it is asked for (or for ever, or sleeps), on the
    children's path."""
    (tmp_path / "burner_child.py").write_text(CHILD)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    return "burner_child"


def _burn(module: str, burn: float | str, seconds: float, pad: str = "") -> tuple[dict[str, Any] | None, str]:
    return isolated.exchange(module, {"burn": burn, "pad": pad}, "the burner", "to burn",
                             isolated.Limits(1 << 30, seconds))


def _kept_off_the_cpu(monkeypatch: pytest.MonkeyPatch, seconds: float, which: str = "") -> list[int]:
    """Make every child (whose request holds ``which``) wait ``seconds`` stopped before it may run, as a machine
    too busy to give it a CPU would; the children's ids, as they start."""
    wait = child_time.wait
    stopped: list[int] = []

    def frozen(process: subprocess.Popen[str], data: str, budget: float) -> Any:
        if which in data:
            os.kill(process.pid, signal.SIGSTOP)
            stopped.append(process.pid)
            timer = threading.Timer(seconds, os.kill, (process.pid, signal.SIGCONT))
            timer.start()
        return wait(process, data, budget)

    monkeypatch.setattr(child_time, "wait", frozen)
    return stopped


def test_a_child_burning_cpu_for_ever_stops_at_its_cpu_seconds(burner: str) -> None:
    answer, reason = _burn(burner, "for ever", 1.0)
    assert answer is None
    assert reason == "the burner took over 1 s of CPU time to burn (set ANNOGRAPH_RUN_SECONDS to allow more)"


def test_a_child_kept_off_the_cpu_past_its_budget_answers_as_on_an_idle_machine(
        burner: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """2.5 s stopped, on a budget of 1 s: a wall-clock limit ended it; counted in CPU time it answers."""
    stopped = _kept_off_the_cpu(monkeypatch, 2.5)
    answer, reason = _burn(burner, 0.3, 1.0)
    assert len(stopped) == 1 and reason == "", reason
    assert answer is not None and answer["burned"] >= 0.3


def test_a_request_over_the_pipes_size_reaches_a_child_slow_to_start(burner: str,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """A request of 300 kB (the int8 TTS's shape run names 1,264 tensors) to a child that reads it only after 1 s:
    the whole of it arrives (waiting in steps of a quarter second sent only what the pipe took at first, and the
    child waited for the rest until it was stopped as hung)."""
    _kept_off_the_cpu(monkeypatch, 1.0)
    answer, reason = _burn(burner, 0.0, 5.0, "x" * 300_000)
    assert reason == "" and answer is not None and answer["pad"] == 300_000


def test_a_child_that_uses_no_cpu_is_stopped_as_hung(burner: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(child_time, "STALL_SECONDS", 1.0)
    answer, reason = _burn(burner, "sleep", 30.0)
    assert answer is None
    assert reason == "the burner hung to burn: it used almost no CPU time for 1 s, and was stopped"


def test_the_wall_clock_backstop_stops_a_child_whatever_it_does(burner: str, monkeypatch: pytest.MonkeyPatch,
                                                               ) -> None:
    monkeypatch.setattr(child_time, "STALL_SHARE", 0.0)  # never hung: only the backstop is left
    monkeypatch.setattr(child_time, "STALL_SECONDS", 0.5)
    monkeypatch.setattr(child_time, "BACKSTOP_FACTOR", 1)
    answer, reason = _burn(burner, "sleep", 1.0)
    assert answer is None
    assert reason == ("the burner did not finish to burn within 1.5 s of wall-clock time, 1 times its 1 s of CPU "
                      "time and more (set ANNOGRAPH_RUN_SECONDS to allow more)")


def test_the_cpu_limit_counts_from_when_it_is_set() -> None:
    """A child that burned 0.6 s (its start and imports, in a real run) before ``limit_cpu(1)`` is stopped by
    SIGXCPU once it used a second more (the limit rounded up to whole seconds), not once it used 1 s in all; its
    CPU time is read from its resource usage."""
    code = ("import time\nfrom renderer.loaders import child_time\n"
            "while time.process_time() < 0.6: pass\n"
            "print(time.process_time(), flush=True)\nchild_time.limit_cpu(1.0)\nwhile True: pass\n")
    process = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, cwd=ROOT,
                               env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert process.stdout is not None
    with process.stdout:
        before = float(process.stdout.readline())
        _, status, usage = os.wait4(process.pid, 0)
    process.returncode = -signal.SIGXCPU  # reaped here: Popen must not wait for it again
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGXCPU
    used = usage.ru_utime + usage.ru_stime
    assert used > before + 0.9  # not 1 s from its start (resource usage and the limit's clock differ by a tick)
    assert used < math.ceil(before + 1.0) + 1  # nor a second past the limit


def test_a_slow_child_is_not_hung() -> None:
    """A child given 2 % of a CPU (a load of 100 on 2 cores) moves; one given none for the whole window is hung,
    and only once the window has passed."""
    samples: deque[tuple[float, float]] = deque()
    slow = [child_time._stalled(samples, t / 2, 0.01 * t) for t in range(0, 400)]  # 0.02 s of CPU a second
    assert not any(slow)
    samples.clear()
    still = [child_time._stalled(samples, t / 2, 5.0) for t in range(0, 400)]
    assert still.index(True) == 2 * child_time.STALL_SECONDS and all(still[still.index(True):])


def test_cpu_seconds_of_a_running_child_grow_with_what_it_burns(burner: str) -> None:
    code = "import time\nwhile time.process_time() < 0.5: pass\nprint('burned', flush=True)\ninput()\n"
    process = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               text=True)
    assert process.stdout is not None and process.stdin is not None
    assert process.stdout.readline() == "burned\n"
    used = child_time.cpu_seconds(process.pid)
    process.communicate("\n")
    assert used is not None and 0.4 <= used < 5  # /proc counts in ticks (0.49 s)
    assert child_time.cpu_seconds(process.pid) is None  # gone


def test_the_silero_formula_does_not_depend_on_the_machines_load(monkeypatch: pytest.MonkeyPatch) -> None:
    """The reported case: at a load of 14 on 2 cores, the silero VAD sample's profiled run (10 s + 20 × the plain
    run's 0.2 ms, of wall-clock time) spent its budget starting, and ``metrics`` lost the shapes inside its If
    bodies and its MACs formula. Here its budget is cut to 1 s of CPU time and each profiled child is kept off
    the CPU for 1.5 s: the shapes, the MACs and the formula come out as on an idle machine with the full budget."""
    from renderer.loaders.onnx import ort_shapes
    from renderer.loaders.registry import load_model
    from renderer.metrics import builtin as metrics
    from renderer.metrics import dim_formulas

    path = ROOT / "samples" / "onnx" / "silero_vad.onnx"
    monkeypatch.delenv(isolated.SECONDS_ENV, raising=False)

    def seen() -> tuple[list[str], str, dict[Any, Any]]:
        model = load_model(path)
        ops, _ = metrics.compute(model, {"macs"}, set(), progress=False)
        return model.notes, dim_formulas.total_line(model), {key: row["macs"] for key, row in ops.items()}

    idle = seen()
    assert any("taken from onnxruntime's profile" in note for note in idle[0]), idle[0]
    assert re.fullmatch(r"MACs = 21 \+ 238k·input\.axis0 at input\.axis1=128 \(formula of 644 counted ops; 20 n/a\)",
                        idle[1]), idle[1]
    monkeypatch.setattr(ort_shapes, "PROFILE_SECONDS", 0.5)  # rounds to 1 s of CPU time
    stopped = _kept_off_the_cpu(monkeypatch, 1.5, '"profile"')
    loaded = seen()
    assert len(stopped) >= 2  # the load's profiled run and those of the formula's loads
    assert loaded == idle
