"""What a run says on stderr, and its progress bars: one verbosity per command run, set from ``-q`` / ``-v``.

Warnings always print. Notes (coverage, summaries, "wrote X") print unless ``-q``; details (stage timings,
sizes, which path was taken) only with ``-v``. Progress bars are tqdm's, drawn only when stderr is a terminal
and the run is not quiet, so they never change what is written to files or stdout. The Python API is quiet
until someone sets a level: it prints warnings only and draws no bars.
"""

from __future__ import annotations

import contextlib
import contextvars
import enum
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

T = TypeVar("T")


class Verbosity(enum.IntEnum):
    QUIET = 0
    NORMAL = 1
    VERBOSE = 2


WAIT_BEFORE_SPINNER = 1.0
"""Seconds a step without measurable progress (one Graphviz run) goes before an elapsed-time line appears."""

_level = Verbosity.QUIET  # a module global, not per thread: the worker threads of one run share it
_open_bars = 0
_lock = threading.Lock()


def from_flags(quiet: bool, verbose: bool) -> Verbosity:
    return Verbosity.QUIET if quiet else Verbosity.VERBOSE if verbose else Verbosity.NORMAL


@contextlib.contextmanager
def verbosity(new: Verbosity) -> Iterator[None]:
    """Run the block at ``new`` (the command line sets it once per run); the previous level comes back after."""
    global _level
    previous, _level = _level, new
    try:
        yield
    finally:
        _level = previous


def silence() -> None:
    """In a worker process: warnings only and no bars (the parent reports for it; its lines would interleave)."""
    global _level
    _level = Verbosity.QUIET


def warn(message: str) -> None:
    """A line that always prints: something was skipped, cut, guessed or did not match."""
    _say(message)


def note(message: str) -> None:
    """A line of the normal report (a coverage line, a summary, "wrote X"); ``-q`` drops it."""
    if _level >= Verbosity.NORMAL:
        _say(message)


def detail(message: str) -> None:
    """A line for ``-v`` only: timings, sizes, which way something was done."""
    if _level >= Verbosity.VERBOSE:
        _say(message)


@contextlib.contextmanager
def stage(name: str) -> Iterator[list[str]]:
    """Time the block; with ``-v`` one line ``NAME 0.12 s: …`` after it, ``…`` being what the block appended
    to the list it was given (sizes, counts). Nothing when the block raises: the error says enough."""
    facts: list[str] = []
    start = time.perf_counter()
    yield facts
    if _level >= Verbosity.VERBOSE:
        _say(f"{name} {time.perf_counter() - start:.2f} s" + (f": {', '.join(facts)}" if facts else ""))


def shows_bars() -> bool:
    return _level >= Verbosity.NORMAL and _isatty()


class _NoBar:
    def update(self, n: float = 1) -> None:
        pass


@contextlib.contextmanager
def bar(total: float, desc: str, unit: str = "it", unit_scale: bool = False) -> Iterator[Any]:
    """A progress bar of ``total`` steps (``update(n)`` as they are done) on a terminal, else a no-op (also for
    a single step, which a bar would not make any clearer)."""
    if total < 2 or not shows_bars():
        yield _NoBar()
        return
    from tqdm import tqdm

    with _counted(), tqdm(total=total, desc=desc, unit=unit, unit_scale=unit_scale, file=sys.stderr,
                          leave=False, dynamic_ncols=True) as shown:
        yield shown


def each(items: Sequence[T], desc: str, unit: str) -> Iterator[T]:
    """``items`` one by one, counted by a ``bar`` (``N/M unit``) as each is done."""
    with bar(len(items), desc, unit) as shown:
        for item in items:
            yield item
            shown.update(1)


@contextlib.contextmanager
def waiting(desc: str) -> Iterator[None]:
    """Around one long step without steps of its own (a ``dot`` run): after ``WAIT_BEFORE_SPINNER`` seconds, a
    line with the elapsed time on a terminal, gone when the step ends."""
    if not shows_bars():
        yield
        return
    ticker = _Ticker(desc)
    try:
        yield
    finally:
        ticker.stop()


@contextlib.contextmanager
def waiting_then_counting(desc: str, counted_desc: str, unit: str) -> Iterator[Callable[[int, int], None]]:
    """Around a step that first runs without measurable progress and then counts (a child process running two
    models, then measuring their tensors one by one): ``waiting``'s elapsed-time line until the step calls the
    function it was given with ``(done, total)``, then a bar of ``total`` (any thread may call it)."""
    if not shows_bars():
        yield lambda done, total: None
        return
    ticker = _Ticker(desc)
    lock = threading.Lock()
    shown: list[Any] = []

    def advance(done: int, total: int) -> None:
        with lock:
            if not shown:
                if total < 2:  # one step: no clearer as a bar
                    return
                ticker.stop()
                from tqdm import tqdm

                _add_bars(1)
                shown.append(tqdm(total=total, desc=counted_desc, unit=unit, file=sys.stderr, leave=False,
                                  dynamic_ncols=True))
            shown[0].update(min(done, total) - shown[0].n)

    try:
        yield advance
    finally:
        ticker.stop()
        with lock:
            if shown:
                shown[0].close()
                _add_bars(-1)


class _Ticker:
    """``waiting``'s line: drawn by a thread from ``WAIT_BEFORE_SPINNER`` seconds on, until ``stop``."""

    def __init__(self, desc: str) -> None:
        self.done = threading.Event()
        self.thread = threading.Thread(target=_tick, args=(desc, self.done), daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.done.set()
        if self.thread is not threading.current_thread():
            self.thread.join()


def _tick(desc: str, done: threading.Event) -> None:
    if done.wait(WAIT_BEFORE_SPINNER):
        return
    from tqdm import tqdm

    with _counted(), tqdm(total=None, desc=desc, bar_format="{desc}: {elapsed}", file=sys.stderr,
                          leave=False, dynamic_ncols=True) as shown:
        while not done.wait(0.2):
            shown.refresh()


@contextlib.contextmanager
def _counted() -> Iterator[None]:
    _add_bars(1)
    try:
        yield
    finally:
        _add_bars(-1)


def _add_bars(change: int) -> None:
    global _open_bars
    with _lock:
        _open_bars += change


_HELD: contextvars.ContextVar[list[str] | None] = contextvars.ContextVar("annograph_held", default=None)


@contextlib.contextmanager
def held() -> Iterator[list[str]]:
    """Within (this context and the copies made of it): the lines warnings, notes and details would print are kept
    in the list yielded instead, for work done ahead of its turn on another thread (``loader``'s loads at other
    dims, made while a shape run's child works), said in their place by ``said`` when that work is taken."""
    lines: list[str] = []
    token = _HELD.set(lines)
    try:
        yield lines
    finally:
        _HELD.reset(token)


def said(lines: Sequence[str]) -> None:
    """Print the lines ``held`` kept (each was a warning, or a note or detail at the verbosity of the run)."""
    for line in lines:
        _say(line)


def _say(message: str) -> None:
    from renderer.core.escape import clean

    kept = _HELD.get()
    if kept is not None:
        kept.append(message)
        return
    line = f"annograph: {clean(message, 2000)}"
    if _open_bars:
        from tqdm import tqdm

        tqdm.write(line, file=sys.stderr)  # above the bar, which is drawn again below
    elif sys.stderr is not None:  # None in a program embedding us without a console
        with _lock:  # the line and its end in one write: page threads say theirs at the same time
            sys.stderr.write(line + "\n")


def _isatty() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):  # replaced or closed stderr
        return False
