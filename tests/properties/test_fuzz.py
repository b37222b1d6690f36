"""Short fuzz run: mutated and truncated real files through every registered loader and annotation reader.

Targets, seeds and mutations come from ``fuzz/harness.py`` (the long run lives there; see fuzz/README.md), so
a loader or reader added to its registry is fuzzed here without editing this file. Every input must be
accepted, or rejected with our own error type in one line naming the file; any other exception, or running
past the per-call time guard, fails the test with the input's recipe (hypothesis shrinks it).

``ANNOGRAPH_FUZZ_EXAMPLES`` sets the examples per target (default 200).
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from payloads import ROOT

_spec = importlib.util.spec_from_file_location("annograph_fuzz_harness", ROOT / "fuzz" / "harness.py")
harness = importlib.util.module_from_spec(_spec)  # type: ignore[arg-type]
sys.modules[_spec.name] = harness  # dataclasses look their module up there
_spec.loader.exec_module(harness)  # type: ignore[union-attr]

EXAMPLES = int(os.environ.get("ANNOGRAPH_FUZZ_EXAMPLES", "200"))
# a hang bound, 15× the slowest call (light_resnet50 with a 5000-digit number: 7.6 s on an idle machine; over 20 s
# under load): real hangs run for ever
PER_CALL_SECONDS = 120.0
MAX_SEED_BYTES = 100_000  # bigger seeds are for the long run (and slow to shrink a failure on)
TARGETS = harness.targets()


def _small_seeds(target):  # type: ignore[no-untyped-def]
    return [s for s in target.seeds if len(s.data) <= MAX_SEED_BYTES] or target.seeds[:1]


def _check(target, folder: Path, name: str, data: bytes) -> None:  # type: ignore[no-untyped-def]
    path = folder / name
    path.write_bytes(data)
    outcome, message = harness.check(target, path, PER_CALL_SECONDS)
    assert outcome != "FAIL", f"{target.name} on {len(data)} bytes derived from {name}:\n{message}"


def test_every_registered_module_is_a_target() -> None:
    import payloads

    names = {t.name for t in TARGETS}
    assert {f"loader-{m.FORMAT}" for m in payloads.loader_modules()} <= names
    assert {f"reader-{m.NAME}" for m in payloads.reader_modules()} <= names
    assert {f"path-{name}" for name in payloads.registry.PATHS} <= names
    assert all(t.seeds for t in TARGETS), [t.name for t in TARGETS if not t.seeds]


@pytest.mark.parametrize("target", TARGETS, ids=[t.name for t in TARGETS])
def test_seeds_and_truncations(target, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Each seed as it is, then cut at 0, 1, 2, 4… bytes and one byte short of its end."""
    for seed in _small_seeds(target):
        cuts = sorted({0, 1, len(seed.data) - 1} | {2**k for k in range(1, 40) if 2**k < len(seed.data)})
        _check(target, tmp_path, seed.name, seed.data)
        for cut in cuts:
            _check(target, tmp_path, seed.name, seed.data[:max(cut, 0)])


@pytest.mark.parametrize("target", TARGETS, ids=[t.name for t in TARGETS])
def test_mutated_inputs_fail_cleanly(target, tmp_path_factory) -> None:  # type: ignore[no-untyped-def]
    folder = tmp_path_factory.mktemp(target.name)
    seeds = _small_seeds(target)
    operation = st.tuples(st.sampled_from(harness.OPERATIONS), st.integers(0, 2**31), st.integers(0, 2**31),
                          st.binary(min_size=1, max_size=8))

    @settings(max_examples=min(EXAMPLES, target.examples or EXAMPLES), deadline=None, database=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(st.integers(0, len(seeds) - 1), st.integers(0, len(seeds) - 1), st.lists(operation, min_size=1, max_size=4))
    def run(base: int, other: int, operations: list[tuple[str, int, int, bytes]]) -> None:
        data = seeds[base].data
        for op, a, b, blob in operations:
            data = harness.apply(data, op, a, b, blob, seeds[other].data)
        _check(target, folder, seeds[base].name, data)

    run()


@pytest.mark.parametrize("target", TARGETS, ids=[t.name for t in TARGETS])
def test_extreme_numbers_fail_cleanly(target, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Each of ``harness.EXTREME_NUMBERS`` (400 and 5000 digits, 1e400, ±1.7e308, NaN, "²", "١", "１") in place of
    the first, middle and last run of digits of every small seed. The mutation is the harness's "number"
    operation, so the long run and the hypothesis run draw it too."""
    for seed in _small_seeds(target)[:6]:
        runs = len(harness._DIGITS.findall(seed.data, 0, 1 << 18))
        for a in sorted({0, runs // 2, runs - 1}) if runs else []:
            for b in range(len(harness.EXTREME_NUMBERS)):
                _check(target, tmp_path, seed.name, harness.number_edit(seed.data, a, b))


_OPENED: list[str] = []
_AUDITING: list[bool] = [False]


def _audit(event: str, args: tuple) -> None:  # type: ignore[type-arg]
    if _AUDITING[0] and event == "open" and isinstance(args[0], (str, bytes, os.PathLike)):
        _OPENED.append(os.fsdecode(args[0]))


@pytest.mark.parametrize("module", harness.payloads.reader_modules(), ids=lambda m: m.NAME)
def test_every_file_a_reader_opens_is_an_input_of_the_run(module) -> None:  # type: ignore[no-untyped-def]
    """Issue 31: a file a reader opens besides its own (a TensorRT profile's NAME.layers.json) is in the set's
    ``side_files``, so the output plan refuses to write over it. Checked for every registered reader on its real
    fixtures, in place (beside the files they come with), by the interpreter's audit events for ``open``."""
    if not _OPENED and not getattr(sys, "_annograph_audit", False):
        sys.addaudithook(_audit)  # hooks cannot be removed: it records only while _AUDITING says so
        sys._annograph_audit = True  # type: ignore[attr-defined]
    model = harness._reader_model(str(harness.payloads.reader_model(module)))
    for path in harness.payloads.reader_files(module):
        _OPENED.clear()
        _AUDITING[0] = True
        try:
            result = module.read(path, model)
        except Exception:  # noqa: BLE001  (a fixture of errors: what it opened before failing is not written over)
            continue
        finally:
            _AUDITING[0] = False
        declared = {os.path.realpath(p) for p in [result.path, *result.side_files]}
        beside = {os.path.realpath(p) for p in _OPENED if Path(p).resolve().parent == path.resolve().parent}
        assert beside <= declared, f"{module.NAME} on {path.name} opened {sorted(beside - declared)} undeclared"


HOSTILE = [(m, kind) for m in harness.payloads.reader_modules() if harness.payloads.registry.reader(m).hostile
           for kind in harness.payloads.registry.HOSTILE_KINDS]
HUGE_LINE = 3 * (1 << 24)  # three times the longest line a reader takes (lookup.MAX_LINE_CHARS)
MANY_RECORDS = 200_000  # layers for a model of about 20 operators
PEAK_BYTES = 64 << 20  # what a refusal (or a read) of those may take: less than the huge line itself


def test_the_tool_readers_have_hostile_files() -> None:
    """Every reader whose main metric is a time or a cycle count has hostile files in the registry (a reader
    added later too: it inherits the cases below)."""
    timed = {m.NAME for m in harness.payloads.reader_modules()
             if any(i.main and i.unit in ("µs", "us", "ms", "s", "cycles") for i in getattr(m, "METRICS", {}).values())}
    names = {m.NAME for m, _ in HOSTILE}
    assert {"vela", "openvino", "openvino-exec-graph", "tensorrt", "ort", "tflite-benchmark"} <= timed
    assert timed <= names, timed - names


@pytest.mark.parametrize(("module", "kind"), HOSTILE, ids=[f"{m.NAME}-{k}" for m, k in HOSTILE])
def test_hostile_numbers_lines_and_record_counts(module, kind: str, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Issue 31: overflowing, negative and NaN figures, sums past the float range, a line of 48 Mi characters and
    200,000 layers for a 20-operator model: refused in one line naming the file (``harness.check``), or read with
    every value finite and not negative; within 64 MiB of Python allocations (the line alone is 48 MiB)."""
    import math
    import tracemalloc

    from renderer.core.records import metric_value

    size = {"huge_line": HUGE_LINE, "many_records": MANY_RECORDS}.get(kind, 0)
    name, data = harness.payloads.registry.reader(module).hostile(kind, size)
    path = tmp_path / name
    path.write_bytes(data)
    del data
    model = harness._reader_model(str(harness.payloads.reader_model(module)))
    tracemalloc.start()
    try:
        outcome, message = harness.check(harness.Target(kind, [], lambda p: harness._read(module, p)), path,
                                         PER_CALL_SECONDS)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert outcome != "FAIL", message
    assert peak < PEAK_BYTES, f"{peak / 2**20:.0f} MiB reading {kind}"
    if kind in ("overflow", "sum_overflow", "negative", "huge_line", "many_records"):
        assert outcome == "error", f"{kind} accepted"
        assert "internal error" not in message and "inf" not in message.split(": ")[-1], message
        return
    if outcome == "error":
        return
    result = module.read(path, model)
    numbers = [metric_value(v) for _, entry in result.operators for v in entry.values.values()]
    assert all(n is None or (math.isfinite(n) and n >= 0) for n in numbers), numbers


def test_time_guard_stops_a_hang(tmp_path: Path) -> None:
    """The per-call guard the harness relies on really interrupts a runaway call, even one in a try block."""
    import time

    def spin(path: Path) -> None:
        try:
            while True:
                time.sleep(0.01)
        except Exception:  # the code under test swallowing errors must not swallow the guard
            pass

    target = harness.Target("spin", [], spin)
    path = tmp_path / "x"
    path.write_bytes(b"")
    started = time.monotonic()
    outcome, message = harness.check(target, path, 0.3)
    assert outcome == "FAIL" and message.startswith("hang"), message
    assert time.monotonic() - started < 30  # a hang bound (100× the guard's 0.3 s): without the guard it spins on


def test_foreign_exception_is_a_failure(tmp_path: Path) -> None:
    """The classification itself: our error naming the file passes; anything else is reported."""
    from renderer.core.errors import LoaderError

    path = tmp_path / "model.bin"
    path.write_bytes(b"x")

    def ours(p: Path) -> None:
        raise LoaderError(f"{p}: not a model")

    def nameless(p: Path) -> None:
        raise LoaderError("not a model")

    def theirs(p: Path) -> None:
        raise KeyError("boom")

    assert harness.check(harness.Target("a", [], ours), path, 5)[0] == "error"
    assert harness.check(harness.Target("b", [], nameless), path, 5)[0] == "FAIL"
    assert harness.check(harness.Target("c", [], theirs), path, 5)[0] == "FAIL"


def test_time_guard_gives_back_an_outer_timer() -> None:
    """pytest-timeout (signal method) arms SIGALRM too: the guard must hand its timer back, not cancel it."""
    import signal

    saved_handler = signal.getsignal(signal.SIGALRM)
    saved_delay, saved_interval = signal.getitimer(signal.ITIMER_REAL)
    fired: list[int] = []

    def outer(*_: object) -> None:
        fired.append(1)

    signal.signal(signal.SIGALRM, outer)
    signal.setitimer(signal.ITIMER_REAL, 30)
    try:
        with harness.time_limit(5):
            pass
        left, _ = signal.getitimer(signal.ITIMER_REAL)
        assert 25 < left <= 30 and not fired
        assert signal.getsignal(signal.SIGALRM) is outer
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, saved_handler)
        if saved_delay:
            signal.setitimer(signal.ITIMER_REAL, saved_delay, saved_interval)
