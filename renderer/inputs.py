"""Reading input files: regular files with a size limit, anything else once, through one bounded buffer.

A pipe (``-a <(cat notes.yaml)``, ``render <(cat m.onnx)``), a FIFO or a device cannot be read twice, and some
never end (``/dev/zero``, ``/dev/urandom``). So a file that is not a regular file is read once per process, into
a buffer that refuses to grow past the limit of what it is read as; the format probe and the reader then both
read that buffer. The probe comes first and only needs the head, so a device of zeros or noise is refused after
a few KiB, not after filling memory.

A FIFO nobody writes to would block the open for ever. It is opened without blocking and waited on for
``STREAM_WAIT_SECONDS``: a writer that comes within that time is read, otherwise the run ends with a one-line
error. Waiting a little (rather than refusing at once) lets ``annograph … -a fifo & producer > fifo`` work in
either order; ending the wait means a forgotten writer is reported instead of hanging a batch job.
"""

from __future__ import annotations

import io
import os
import select
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from .errors import AnnographError, unreadable

MODEL_LIMIT = 2**31 - 1
"""Largest model read into memory from a stream (protobuf's limit for one ONNX message; TFLite flatbuffers
address 2 GiB too). Regular model files are memory-mapped and need no copy."""
ANNOTATION_LIMIT = 1 << 30
"""Largest annotation file read whole (1 GiB), from a regular file or a stream."""
STREAM_WAIT_SECONDS = 30.0
"""How long a pipe or FIFO may stay silent (no writer yet, or a writer that sends nothing)."""
CHUNK = 1 << 20


@dataclass
class _Stream:
    """What has been read so far from one non-regular file, and whether that is all of it."""

    fd: int
    data: bytearray = field(default_factory=bytearray)
    ended: bool = False


_streams: dict[tuple[int, int], _Stream] = {}


def is_stream(path: str | Path) -> bool:
    """True for anything that exists and is neither a regular file nor a folder: pipe, FIFO, device, socket."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return False
    return not stat.S_ISREG(mode) and not stat.S_ISDIR(mode)


def head(path: str | Path, size: int, error: type[AnnographError], kind: str) -> bytes:
    """The first ``size`` bytes (fewer when the file is shorter); ``error`` naming the file when it cannot be read."""
    if is_stream(path):
        stream = _open_stream(path, error, kind)
        _fill(stream, path, size, error)
        return bytes(stream.data[:size])
    try:
        with open(path, "rb") as f:
            return f.read(size)
    except OSError as e:
        raise error(unreadable(path, e, kind)) from None


def read_bytes(path: str | Path, limit: int, error: type[AnnographError], kind: str) -> bytes:
    """The whole file, refused with ``error`` when it holds more than ``limit`` bytes."""
    if is_stream(path):
        stream = _open_stream(path, error, kind)
        _fill(stream, path, limit + 1, error)
        if len(stream.data) > limit:
            raise error(f"{path}: more than {_size(limit)} from a pipe or device, more than annograph reads as {kind}")
        return bytes(stream.data)
    try:
        size = os.stat(path).st_size
        if size > limit:
            raise error(f"{path}: {_size(size)} is more than annograph reads as {kind} ({_size(limit)})")
        with open(path, "rb") as f:
            return f.read(limit + 1)
    except OSError as e:
        raise error(unreadable(path, e, kind)) from None


def open_text(path: str | Path, error: type[AnnographError], kind: str) -> IO[str]:
    """The file for streaming text reads (UTF-8, BOM skipped, newlines kept as they are)."""
    if is_stream(path):
        data = read_bytes(path, ANNOTATION_LIMIT, error, kind)
        return io.TextIOWrapper(io.BytesIO(data), encoding="utf-8-sig", newline="")
    try:
        return open(path, encoding="utf-8-sig", newline="")
    except OSError as e:
        raise error(unreadable(path, e, kind)) from None


def forget() -> None:
    """Drop the buffers of every stream read (the CLI calls this when a command ends)."""
    for stream in _streams.values():
        _close(stream)
    _streams.clear()


def _open_stream(path: str | Path, error: type[AnnographError], kind: str) -> _Stream:
    try:
        info = os.stat(path)
        key = (info.st_dev, info.st_ino)
        if key not in _streams:
            _streams[key] = _Stream(os.open(path, os.O_RDONLY | os.O_NONBLOCK))
    except OSError as e:
        raise error(unreadable(path, e, kind)) from None
    return _streams[key]


def _fill(stream: _Stream, path: str | Path, size: int, error: type[AnnographError]) -> None:
    """Read until ``stream`` holds ``size`` bytes or has ended."""
    while len(stream.data) < size and not stream.ended:
        try:
            chunk = os.read(stream.fd, min(CHUNK, size - len(stream.data)))
        except BlockingIOError:
            chunk = None
        except OSError as e:
            _close(stream)
            raise error(f"{path}: cannot read ({e.strerror})") from None
        if chunk is None or (chunk == b"" and not stream.data and not _had_writer(stream)):
            _wait(stream, path, error)
            continue
        if not chunk:
            _close(stream)
            return
        stream.data += chunk


def _had_writer(stream: _Stream) -> bool:
    """For a FIFO opened without blocking, read() says end-of-file also while no writer has come yet; poll tells
    the two apart (POLLHUP only once a writer has been and gone). Other files: their end is their end."""
    if not stat.S_ISFIFO(os.fstat(stream.fd).st_mode):
        return True
    poller = select.poll()
    poller.register(stream.fd, select.POLLIN)
    return bool(poller.poll(0))


def _wait(stream: _Stream, path: str | Path, error: type[AnnographError]) -> None:
    poller = select.poll()
    poller.register(stream.fd, select.POLLIN)
    started = time.monotonic()
    if not poller.poll(STREAM_WAIT_SECONDS * 1000):
        _close(stream)
        waited = time.monotonic() - started
        raise error(f"{path}: nothing to read for {waited:.0f} s (a pipe or FIFO with no writer?)")


def _close(stream: _Stream) -> None:
    if not stream.ended:
        stream.ended = True
        try:
            os.close(stream.fd)
        except OSError:
            pass


def _size(n: int) -> str:
    return f"{n / 2**30:.1f} GiB" if n >= 2**30 else f"{n / 2**20:.1f} MiB" if n >= 2**20 else f"{n} bytes"
