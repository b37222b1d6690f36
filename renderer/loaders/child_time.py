"""The time a child run (``isolated``) may take, counted in CPU time, so that what it answers does not depend on
how loaded the machine is: same input, same bytes out.

A wall-clock limit made the output depend on the load: at a load of 14 on 2 cores, the profiled run of the silero
VAD sample (10 s + 20 × the plain run's time) spent its 10 s starting Python and importing onnxruntime, and the
metrics lost the shapes inside its If bodies and with them the MACs formula. So a run's budget is CPU seconds,
all its threads together, counted from when the child starts its work (``limit_cpu``: ``RLIMIT_CPU``, the kernel
stops it with SIGXCPU): a run that fits on an idle machine fits on a loaded one, which only gives it its CPU
seconds later.

Wall-clock time only stops a child that hangs (``wait``): one whose CPU time moved by less than ``STALL_SHARE``
of one CPU over the last ``STALL_SECONDS`` (a deadlock, a wait on nothing), and, as a last backstop (where the
child's CPU time cannot be read, or it creeps on), one still running after ``BACKSTOP_FACTOR`` times its CPU
seconds plus ``STALL_SECONDS``. A child that gets a small share of a busy machine still moves: at a load of 100
on 2 cores it gets 2 % of a CPU.
"""

from __future__ import annotations

import collections
import math
import os
import time
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    import subprocess
    import threading

STALL_SECONDS = 60.0
"""Wall-clock seconds over which a child must use at least ``STALL_SHARE`` of one CPU, or it is stopped as hung."""
STALL_SHARE = 0.01
BACKSTOP_FACTOR = 20
"""A child still running after this many times its CPU seconds, plus ``STALL_SECONDS``, of wall-clock time is
stopped whatever it does."""
POLL_SECONDS = 0.25
"""How often the parent looks at a running child's CPU time (a child that ends is seen at once)."""

Stopped = Literal["hung", "backstop"]
"""Why ``wait`` stopped a child."""


def limit_cpu(seconds: float) -> None:
    """In the child: stop this process (SIGXCPU) once it has used ``seconds`` of CPU time more than it has now,
    rounded up to whole seconds (the limit's unit). Nothing where there are no rlimits (Windows: ``wait``'s
    backstop still bounds the run)."""
    try:
        import resource
    except ImportError:
        return
    value = math.ceil(time.process_time() + seconds)
    soft, hard = resource.getrlimit(resource.RLIMIT_CPU)
    if hard != resource.RLIM_INFINITY:
        value = min(value, hard)
    if soft == resource.RLIM_INFINITY or value < soft:
        resource.setrlimit(resource.RLIMIT_CPU, (value, hard))


def cpu_seconds(pid: int) -> float | None:
    """The CPU time (user and system, all threads) process ``pid`` has used, None where /proc cannot tell."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as file:
            text = file.read()
    except OSError:
        return None
    fields = text[text.rfind(b")") + 2:].split()  # the name, in parentheses, may hold spaces
    try:
        return (int(fields[11]) + int(fields[12])) / _ticks()
    except (IndexError, ValueError):
        return None


def _ticks() -> int:
    try:
        return os.sysconf("SC_CLK_TCK")
    except (AttributeError, ValueError, OSError):
        return 100


def backstop(seconds: float) -> float:
    """Wall-clock seconds after which a child given ``seconds`` of CPU time is stopped whatever it does."""
    return STALL_SECONDS + BACKSTOP_FACTOR * seconds


def wait(process: subprocess.Popen[str], data: str, seconds: float) -> tuple[str, str] | Stopped:
    """Send ``data`` to ``process``, given ``seconds`` of CPU time, and take its stdout and stderr once it ends;
    or kill it when it hangs (``"hung"``, seen by a thread watching its CPU time) or runs past ``backstop``
    (``"backstop"``). One ``communicate`` call sends the whole request: one that timed out and is called again
    sends no more of it (a request over the pipe's 64 KiB, the int8 TTS's 1,264 tensor names, left the child
    waiting for the rest)."""
    import signal
    import subprocess
    import threading

    hung: list[bool] = []
    done = threading.Event()
    watcher = threading.Thread(target=_watch, args=(process, done, hung), daemon=True)
    watcher.start()
    try:
        ended = process.communicate(data, timeout=backstop(seconds))
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        return "backstop"
    finally:
        done.set()
        watcher.join()
    if hung and process.returncode == -signal.SIGKILL:  # (not a child that ended as it was found hung)
        return "hung"
    return ended


def _watch(process: subprocess.Popen[str], done: threading.Event, hung: list[bool]) -> None:
    """Until ``done``: look at ``process``'s CPU time every ``POLL_SECONDS``, and kill it once it is ``_stalled``
    (``hung`` then holds True)."""
    samples: collections.deque[tuple[float, float]] = collections.deque()
    while not done.wait(POLL_SECONDS):
        used = cpu_seconds(process.pid)
        if used is not None and _stalled(samples, time.monotonic(), used):
            hung.append(True)
            process.kill()
            return


def _stalled(samples: collections.deque[tuple[float, float]], now: float, used: float) -> bool:
    """Whether the CPU time ``used`` by ``now`` moved by less than ``STALL_SHARE`` of the wall-clock time since the
    last of ``samples`` (times and CPU times of earlier looks) at least ``STALL_SECONDS`` old; ``samples`` keeps
    what later looks need."""
    samples.append((now, used))
    while len(samples) > 1 and samples[1][0] <= now - STALL_SECONDS:
        samples.popleft()
    then, was = samples[0]
    return now - then >= STALL_SECONDS and used - was < STALL_SHARE * (now - then)
