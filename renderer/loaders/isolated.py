"""Run a runtime (LiteRT, onnxruntime) on a model in a child Python process, under one resource policy.

A model that passed our loader can still crash a runtime's native code, loop for ever, or ask for all the memory
(a few hundred bytes can describe a Loop of 2^62 steps or a tensor of gigabytes): that must cost one line, not the
machine. Every child run (the shape runs, ``compare``) goes through ``run`` here, and this module alone decides
what a run may take:

* memory: what the model's sizes explain (``Sizes``): its file, its inputs and the activations static shapes
  announce, ``FACTOR`` times over plus ``FLOOR``; and for each tensor the run keeps whose size nothing static
  announces (a shape run exposes them all as outputs), as much as the largest tensor the model holds or is fed
  (a weight at float32, an input array, a static activation). Never more than the machine can give now
  (``MemAvailable``, the cgroup's ``memory.max`` or v1 limit less its usage, this process's ``RLIMIT_AS``). The
  child enforces it as an address-space limit counted from its size once the runtime is imported, so a tiny model
  can never take gigabytes (a few unknown tensors times its largest of a few bytes is nothing): outputs that
  outgrow what the model explains end the run at once. A real model keeping thousands of tensors (a TTS
  vocoder's [1, 128, frames × 60] activations, sized by predicted durations) gets what those tensors can take.
* time: ``seconds`` of CPU time, all the child's threads together, counted from when it starts its work
  (``child_time``): ``SECONDS`` plus what filling the memory the sizes explain takes at a slow pace (a tiny model
  gets 30 s). Not wall-clock time: what a run answers must not depend on how loaded the machine is (same input,
  same bytes out); wall-clock time only stops a child that hangs.

``ANNOGRAPH_RUN_MEMORY`` (bytes, or ``512MiB``, ``8GiB``) and ``ANNOGRAPH_RUN_SECONDS`` replace the computed
memory and time of every run (still capped by what the machine has), for a model that legitimately needs more,
or for tests that want a small limit.

The child is ``python -m MODULE`` for a module that calls ``serve``: it reads one JSON request on stdin and prints
one JSON answer as the last line of its stdout, ``{"error": reason}`` on failure.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from renderer.core.escape import clean
from renderer.core.numbers import format_bytes
from renderer.loaders import child_time

FLOOR = 1 << 30
"""Memory any run may take beyond the runtime itself, whatever the model (a model of 300 bytes gets this)."""
FACTOR = 4
"""Memory per byte the model's known sizes account for (weights held twice, activations, their copies)."""
MACHINE_SHARE = 0.8
"""Share of what the machine has available now that one run may take."""
SECONDS = 30.0
"""CPU seconds any run may take, plus one per ``BYTES_PER_SECOND`` of known sizes, or per ``FACTOR`` ×
``BYTES_PER_SECOND`` of the memory the run may take beyond ``FLOOR`` (its unknown tensors' share included) where
that is more."""
BYTES_PER_SECOND = 8 << 20
COUNTS_ENV = "ANNOGRAPH_RUN_COUNTS_FD"
"""The file descriptor a child writes its progress to (``report``), set by ``run`` when someone counts."""
MEMORY_ENV = "ANNOGRAPH_RUN_MEMORY"
SECONDS_ENV = "ANNOGRAPH_RUN_SECONDS"
_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10, "m": 1 << 20, "mb": 1 << 20, "mib": 1 << 20,
          "g": 1 << 30, "gb": 1 << 30, "gib": 1 << 30}


@dataclass(frozen=True, slots=True)
class Limits:
    """What one child run may take.

    Attributes:
        memory: bytes of address space beyond the runtime's own once it is imported.
        seconds: CPU seconds, all the child's threads together (``child_time``).
        memory_from: what set ``memory`` (the model's sizes, ``ANNOGRAPH_RUN_MEMORY``, the machine).
    """

    memory: int
    seconds: float
    memory_from: str = "what the model's sizes explain"
    """Where ``memory`` came from, for the messages."""
    explained: str = ""
    """How the model's sizes make up their share (``Sizes.explain``), for ``-v``."""


@dataclass(frozen=True, slots=True)
class Sizes:
    """What a model explains of one run's memory, from what is known before it runs.

    Attributes:
        known: bytes of the model's file and external data, its inputs, the activations static shapes announce.
        unknown: tensors the run keeps at once (exposed as outputs) whose size nothing static announces.
        largest: bytes of the largest tensor the model holds or is fed (a weight counted at float32, as the
            runtime computes with a quantized one; an input array; a static activation): what one of the
            ``unknown`` tensors is allowed.
    """

    known: int
    unknown: int = 0
    largest: int = 0

    def memory(self) -> int:
        """``FLOOR`` + ``FACTOR`` × ``known`` + ``unknown`` × ``largest``."""
        return FLOOR + FACTOR * max(0, self.known) + max(0, self.unknown) * max(0, self.largest)

    def explain(self) -> str:
        """``1.0 GiB + 4 × 48.1 MiB known + 1264 tensors of unknown size × 10.0 MiB``."""
        text = f"{format_bytes(FLOOR)} + {FACTOR} × {format_bytes(max(0, self.known))} known"
        if self.unknown > 0 and self.largest > 0:
            text += f" + {self.unknown} tensors of unknown size × {format_bytes(self.largest)}"
        return text


def together(sizes: Iterable[Sizes]) -> Sizes:
    """The sizes of several models run in one process (``compare``'s two): known bytes and unknown tensors add up,
    the largest tensor is the largest of all."""
    sizes = list(sizes)
    return Sizes(sum(s.known for s in sizes), sum(s.unknown for s in sizes), max((s.largest for s in sizes), default=0))


def limits(sizes: Sizes | int, max_seconds: float | None = None) -> Limits:
    """The limits of a run whose model explains ``sizes`` (a number: its known bytes alone, no tensor of unknown
    size kept); ``max_seconds`` caps the CPU time (a command's ``--timeout``)."""
    if not isinstance(sizes, Sizes):
        sizes = Sizes(int(sizes))
    memory = sizes.memory()
    machine = int(available_memory() * MACHINE_SHARE)
    filled = max(0, min(memory, machine) - FLOOR) // (FACTOR * BYTES_PER_SECOND)  # the unknown tensors' share too
    seconds = SECONDS + max(max(0, sizes.known) // BYTES_PER_SECOND, filled)
    if max_seconds is not None:
        seconds = min(seconds, max_seconds)
    source = f"what {MEMORY_ENV} sets" if os.environ.get(MEMORY_ENV) else "what the model's sizes explain"
    memory = _from_env(MEMORY_ENV, memory, parse_bytes)
    seconds = _from_env(SECONDS_ENV, seconds, _parse_seconds)
    if machine < memory:
        memory, source = machine, "what the machine has available now"
    return Limits(memory, seconds, source, "" if os.environ.get(MEMORY_ENV) else sizes.explain())


def available_memory() -> int:
    """Bytes the machine can give a new process now: the least of ``MemAvailable``, the cgroup limits (v2, v1) less
    their usage, and this process's address-space limit."""
    found = [_meminfo_available(), *_cgroup_headroom()]
    try:
        import resource

        soft = resource.getrlimit(resource.RLIMIT_AS)[0]
        if soft != resource.RLIM_INFINITY:
            found.append(soft)
    except ImportError:  # Windows: no rlimits
        pass
    known = [n for n in found if n is not None and n >= 0]
    return min(known) if known else 1 << 62


def _meminfo_available() -> int | None:
    try:
        text = Path("/proc/meminfo").read_text()
    except OSError:
        return None
    match = re.search(r"^MemAvailable:\s+(\d+) kB", text, re.M)
    return int(match.group(1)) * 1024 if match else None


def _cgroup_headroom() -> list[int]:
    """Limit less usage of this process's cgroup and each of its parents (v2), or of its v1 memory cgroup."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return []
    found = []
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if controllers == "":  # cgroup v2: every level up to the root may limit
            folder = Path("/sys/fs/cgroup") / path.lstrip("/")
            for level in [folder, *folder.parents]:
                found.append(_headroom(level / "memory.max", level / "memory.current"))
                if level == Path("/sys/fs/cgroup"):
                    break
        elif "memory" in controllers.split(","):
            folder = Path("/sys/fs/cgroup/memory") / path.lstrip("/")
            found.append(_headroom(folder / "memory.limit_in_bytes", folder / "memory.usage_in_bytes"))
    return [n for n in found if n is not None]


def _headroom(limit_file: Path, usage_file: Path) -> int | None:
    try:
        limit_text = limit_file.read_text().strip()
        if limit_text == "max" or int(limit_text) >= 1 << 60:  # v1 writes "no limit" as a huge number
            return None
        return max(0, int(limit_text) - int(usage_file.read_text().strip()))
    except (OSError, ValueError):
        return None


def parse_bytes(text: str) -> int:
    """``"512MiB"`` → 536870912; plain numbers are bytes. ValueError for anything else."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*", text)
    if not match or match.group(2).lower() not in _UNITS:
        raise ValueError(f"{text!r} is not a size (bytes, or a number with KiB, MiB or GiB)")
    return int(float(match.group(1)) * _UNITS[match.group(2).lower()])


def _parse_seconds(text: str) -> float:
    value = float(text)
    if not 0 < value < 1e7:
        raise ValueError(f"{text!r} is not a number of seconds above 0")
    return value


def _from_env(name: str, default: Any, parse: Callable[[str], Any]) -> Any:
    from renderer.core.errors import AnnographError

    text = os.environ.get(name)
    if not text:
        return default
    try:
        return parse(text)
    except ValueError as e:
        raise AnnographError(f"{name}: {e}") from None


def run(module: str, request: dict[str, Any], runtime: str, doing: str, limit: Limits | float,
        arrays: dict[str, Any] | None = None, counted: Callable[[int, int], None] | None = None,
        ) -> tuple[dict[str, Any], str]:
    """Run ``python -m module`` on ``request`` under ``limit``: (its answer, "") or ({}, why not, in one line).
    Arguments as for ``exchange``."""
    answer, reason = exchange(module, request, runtime, doing, limit, arrays, counted)
    return answered(answer, reason)


@dataclass(frozen=True)
class Kept:
    """Where a run's answer is kept in the results cache (``files.disk_cache``): ``kind`` for the bytes of
    ``files`` (the model and whatever else the child reads) and ``fields`` (the request but its path, the
    runtime's version), when ``lasting`` says another run would answer the same (not one that ran out of memory)."""

    kind: str
    files: Sequence[Path]
    fields: dict[str, Any]
    lasting: Callable[[dict[str, Any]], bool]


def remembered(kept: Kept, module: str, request: dict[str, Any], runtime: str, doing: str,
               limit: Callable[[], Limits]) -> tuple[dict[str, Any], str]:
    """``run``'s outcome, the child's answer taken from or kept in the results cache as ``kept`` says when a render
    keeps results (``disk_cache.using``): a re-render starts no child (nor works out the run's ``limit``). A run
    over time or killed gives no answer and is never kept."""
    return answered(*kept_exchange(kept, module, request, runtime, doing, limit))


def kept_exchange(kept: Kept, module: str, request: dict[str, Any], runtime: str, doing: str,
                  limit: Callable[[], Limits]) -> tuple[dict[str, Any] | None, str]:
    """``remembered``'s outcome as ``exchange`` gives it: the child's answer whole, its ``error`` included."""
    from renderer.files import disk_cache

    if disk_cache.results() is None:
        return exchange(module, request, runtime, doing, limit())
    found = disk_cache.recall(kept.kind, kept.files, kept.fields)
    if isinstance(found, dict):
        return found, ""
    answer, reason = exchange(module, request, runtime, doing, limit())
    if answer is not None and kept.lasting(answer):
        disk_cache.keep(kept.kind, kept.files, kept.fields, answer)
    elif answer is not None:
        _PASSING[0] += 1
    return answer, reason


_PASSING = [0]


def passing() -> int:
    """How many runs of this process gave an answer another run might not give (none: over time, killed; over
    memory): what a load made of them is not kept either (``loaders.snapshot``)."""
    return _PASSING[0]


def version(package: str) -> str:
    """The installed distribution's version, "" when it is not installed (a cache key's part)."""
    from importlib import metadata

    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return ""


def answered(answer: dict[str, Any] | None, reason: str = "") -> tuple[dict[str, Any], str]:
    """``exchange``'s outcome as ``run`` gives it: (the answer, "") or ({}, the child's error or ``reason``)."""
    if answer is None:
        return {}, reason
    if "error" in answer:
        return {}, str(answer["error"])
    return answer, ""


def exchange(module: str, request: dict[str, Any], runtime: str, doing: str, limit: Limits | float,
             arrays: dict[str, Any] | None = None, counted: Callable[[int, int], None] | None = None,
             ) -> tuple[dict[str, Any] | None, str]:
    """``_exchange``, counted by ``passing`` when it gives no answer or one over memory."""
    answer, reason = _exchange(module, request, runtime, doing, limit, arrays, counted)
    if answer is None or answer.get("memory"):
        _PASSING[0] += 1
    return answer, reason


def _exchange(module: str, request: dict[str, Any], runtime: str, doing: str, limit: Limits | float,
              arrays: dict[str, Any] | None = None, counted: Callable[[int, int], None] | None = None,
              ) -> tuple[dict[str, Any] | None, str]:
    """Run ``python -m module`` on ``request`` under ``limit``: (the child's answer as it gave it, its ``error``
    included, "") or (None, why it gave none: over time, killed, no answer).

    Args:
        module: the child's module name (``__name__`` of a module that calls ``serve``).
        request: JSON-serializable request.
        runtime: the runtime's name for messages (``LiteRT``).
        doing: what it does, for the messages (``to prepare the model``).
        limit: the run's ``Limits`` (from ``limits``); a number is a timeout for a model that explains nothing.
        arrays: numpy arrays for the child (a model's inputs), handed over in a temporary ``.npz`` file whose
            path is the request's ``feeds``.
        counted: called (from another thread) with each ``(done, total)`` the child ``report``s.
    """
    if arrays is not None:
        import tempfile

        import numpy as np

        with tempfile.TemporaryDirectory(prefix="annograph-inputs-") as folder:
            feeds = str(Path(folder) / "feeds.npz")
            np.savez(feeds, **arrays)
            return _exchange(module, {**request, "feeds": feeds}, runtime, doing, limit, counted=counted)
    with _piped_copy(request) as request:
        return _exchange_files(module, request, runtime, doing, limit, counted)


@contextlib.contextmanager
def _piped_copy(request: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """``request``, its model ``path`` a temporary copy of the bytes we took when the model came from a pipe (the
    child cannot read the pipe again)."""
    from renderer.files.inputs import read_already

    piped = read_already(request["path"]) if isinstance(request.get("path"), str) else None
    if piped is None:
        yield request
        return
    import tempfile

    with tempfile.TemporaryDirectory(prefix="annograph-model-") as folder:
        copy = Path(folder) / (Path(request["path"]).name or "model")
        copy.write_bytes(piped)
        yield {**request, "path": str(copy)}


def _exchange_files(module: str, request: dict[str, Any], runtime: str, doing: str, limit: Limits | float,
                    counted: Callable[[int, int], None] | None) -> tuple[dict[str, Any] | None, str]:
    import json
    import subprocess
    import sys

    from renderer.core.progress import detail

    if not isinstance(limit, Limits):
        limit = limits(0, float(limit))
    detail(f"{runtime}, {doing}, may take {format_bytes(limit.memory)} of memory ({_sources(limit)}) and "
           f"{limit.seconds:g} s of CPU time")
    env = dict(os.environ)  # the child imports this package from where this process found it
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(Path(__file__).resolve().parents[2]), env.get("PYTHONPATH")]))
    env["MALLOC_ARENA_MAX"] = "2"  # one 64 MiB arena per thread would count against the address-space limit
    env["PYTHONWARNINGS"] = "ignore"
    with _counts(counted, env) as passed, subprocess.Popen(
            [sys.executable, "-m", module], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True, env=env, errors="replace", pass_fds=passed) as process:
        try:
            ended = child_time.wait(process, json.dumps({**request, "limits": asdict(limit)}), limit.seconds)
        except BaseException:  # interrupted (Ctrl-C): the child does not outlive the command
            process.kill()
            raise
    if isinstance(ended, str):
        return None, _stopped(ended, runtime, doing, limit)
    stdout, said = ended
    try:
        answer = json.loads(stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return None, _died(process.returncode, runtime, doing, limit, said)
    if not isinstance(answer, dict):
        return None, f"{runtime} failed on the model (no answer)"
    return answer, ""


def _stopped(why: child_time.Stopped, runtime: str, doing: str, limit: Limits) -> str:
    """The line for a child ``child_time.wait`` stopped: it hung, or ran past the wall-clock backstop."""
    if why == "hung":
        return (f"{runtime} hung {doing}: it used almost no CPU time for {child_time.STALL_SECONDS:g} s, and was "
                "stopped")
    return (f"{runtime} did not finish {doing} within {child_time.backstop(limit.seconds):g} s of wall-clock time, "
            f"{child_time.BACKSTOP_FACTOR} times its {limit.seconds:g} s of CPU time and more (set {SECONDS_ENV} to "
            "allow more)")


def _sources(limit: Limits) -> str:
    """Where the memory came from, with what the model's sizes explain where known."""
    if not limit.explained:
        return limit.memory_from
    if limit.memory_from.startswith("what the model's sizes"):
        return f"{limit.memory_from}: {limit.explained}"
    return f"{limit.memory_from}; the model's sizes explain {limit.explained}"


@contextlib.contextmanager
def _counts(counted: Callable[[int, int], None] | None, env: dict[str, str]) -> Iterator[tuple[int, ...]]:
    """Around the child's run: a pipe for its ``report``s (its end named in ``env``, and the file descriptors
    to pass it), read by a thread calling ``counted``; nothing without ``counted``."""
    if counted is None:
        yield ()
        return
    import threading

    reading, writing = os.pipe()
    env[COUNTS_ENV] = str(writing)
    reader = threading.Thread(target=_read_counts, args=(reading, counted), daemon=True)
    reader.start()
    try:
        yield (writing,)
    finally:
        os.close(writing)  # with the child's copy closed too (it ended), the reader meets the pipe's end
        reader.join()


def _read_counts(reading: int, counted: Callable[[int, int], None]) -> None:
    with os.fdopen(reading, "rb") as pipe:
        for line in iter(pipe.readline, b""):
            numbers = line.split()
            if len(numbers) == 2 and all(n.isdigit() for n in numbers):  # anything else is not ours: skipped
                counted(int(numbers[0]), int(numbers[1]))


def report(done: int, total: int) -> None:
    """In the child: ``done`` of ``total`` steps, for the parent's progress bar (nothing when it draws none)."""
    where = os.environ.get(COUNTS_ENV, "")
    if where.isdigit():
        try:
            os.write(int(where), f"{done} {total}\n".encode())
        except OSError:  # the parent stopped listening: the run goes on
            pass


def _died(status: int, runtime: str, doing: str, limit: Limits, said: str = "") -> str:
    """The line for a child that gave no answer: killed by a signal (its memory or CPU limit, a crash), or exited.
    A child aborted after its stderr (``said``) told of a failed allocation (a C++ ``std::bad_alloc`` thrown on a
    runtime's own thread ends in SIGABRT, not in an error we can catch) is over its memory; otherwise the line
    ends with the last thing it said."""
    import signal

    last = next((line.strip() for line in reversed(said.splitlines()) if line.strip()), "")
    told = f": {clean(last, 160)}" if last else ""
    if status >= 0:
        return f"{runtime} failed on the model (exit status {status}){told}"
    try:
        name = signal.Signals(-status).name
    except ValueError:
        name = f"signal {-status}"
    if name == "SIGXCPU":
        return f"{runtime} took over {limit.seconds:g} s of CPU time {doing} (set {SECONDS_ENV} to allow more)"
    if name in ("SIGABRT", "SIGSEGV", "SIGBUS") and allocation_failed(said):
        return over_memory(runtime, limit)
    return (f"{runtime} stopped with {name} {doing}, under a limit of {format_bytes(limit.memory)} of memory "
            f"({limit.memory_from}){told}")


def over_memory(runtime: str, limit: Limits | dict[str, Any]) -> str:
    """The line for a run that asked for more memory than its limit (a ``Limits`` or its JSON form)."""
    if isinstance(limit, dict):
        limit = Limits(**limit)
    if limit.memory_from.startswith("what the machine"):
        advice = ""
    else:
        advice = "; raise it to allow more" if MEMORY_ENV in limit.memory_from else f"; set {MEMORY_ENV} to allow more"
    return (f"{runtime} needed more than the {format_bytes(limit.memory)} of memory its run may take "
            f"({limit.memory_from}{advice})")


def serve(handler: Callable[[dict[str, Any]], dict[str, Any]], runtime: str = "the runtime",
          preload: Iterable[str] = ()) -> None:
    """The child's side: one request from stdin, the modules in ``preload`` (or the request's ``preload``)
    imported, the request's limits set,
    one answer line to stdout, and the process ends there (no teardown: nothing follows the answer). A
    ``MemoryError`` (numpy over the limit) is ``over_memory``'s line for ``runtime``."""
    import importlib
    import json
    import sys
    import warnings

    warnings.simplefilter("ignore")
    request = json.loads(sys.stdin.read())
    for name in request.get("preload", preload):
        try:
            importlib.import_module(name)
        except ImportError:  # the handler says what is missing
            pass
    limit = Limits(**request["limits"])
    over = {"error": over_memory(runtime, limit), "memory": True}  # made now: nothing may need memory once it is out
    _apply(limit)
    try:
        answer = handler(request)
    except MemoryError:
        answer = over
    print(json.dumps(answer), flush=True)
    sys.stderr.flush()
    os._exit(0)  # answered: the runtime's sessions and modules are not torn down (~0.1 s CPU of the int8 TTS's run)


def _apply(limit: Limits) -> None:
    """Cap this process's address space at its size now plus ``limit.memory``, and its CPU time at what it used
    so far plus ``limit.seconds``."""
    child_time.limit_cpu(limit.seconds)
    try:
        import resource
    except ImportError:  # not on Windows; the parent's backstop still bounds the run
        return
    _lower(resource, resource.RLIMIT_AS, own_size() + limit.memory)


def _lower(resource: Any, kind: int, value: int) -> None:
    soft, hard = resource.getrlimit(kind)
    if hard != resource.RLIM_INFINITY:
        value = min(value, hard)
    if soft == resource.RLIM_INFINITY or value < soft:
        resource.setrlimit(kind, (value, hard))


def own_size() -> int:
    """This process's address space now (``VmSize``), 0 where /proc cannot tell."""
    try:
        match = re.search(r"^VmSize:\s+(\d+) kB", Path("/proc/self/status").read_text(), re.M)
    except OSError:
        return 0
    return int(match.group(1)) * 1024 if match else 0


def allocation_failed(message: str) -> bool:
    """Whether a runtime's error text says an allocation failed (the address-space limit was reached)."""
    text = message.lower()
    return any(word in text for word in ("bad_alloc", "failed to allocate", "allocation fail", "unable to allocate",
                                         "cannot allocate", "out of memory", "memoryerror"))
