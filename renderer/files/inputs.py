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

import contextlib
import io
import os
import select
import stat
import struct
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from renderer.core.errors import AnnographError, first_line, unreadable
from renderer.core.numbers import format_limit

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
_out_of_memory: list[str] = []  # the file being read when memory ran out (innermost first)


@contextlib.contextmanager
def reading(path: str | Path) -> Iterator[None]:
    """Run the block as the reading of ``path``: when memory runs out in it, ``read_when_out_of_memory`` names it."""
    try:
        yield
    except MemoryError:
        if not _out_of_memory:
            _out_of_memory.append(str(path))
        raise


def read_when_out_of_memory() -> str | None:
    """The file whose reading ran out of memory (the innermost ``reading`` block), None when memory ran out
    elsewhere or not at all."""
    return _out_of_memory[0] if _out_of_memory else None


def is_stream(path: str | Path) -> bool:
    """True for anything that exists and is neither a regular file nor a folder: pipe, FIFO, device, socket."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return False
    return not stat.S_ISREG(mode) and not stat.S_ISDIR(mode)


def read_already(path: str | Path) -> bytes | None:
    """What has been read from the pipe or device at ``path`` (a model the loader took whole, which a child
    process cannot read again); None for a regular file or a stream nothing was read from."""
    if not is_stream(path):
        return None
    try:
        info = os.stat(path)
    except (OSError, ValueError):
        return None
    stream = _streams.get((info.st_dev, info.st_ino))
    return None if stream is None else bytes(stream.data)


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
            raise error(f"{path}: more than {format_limit(limit)} from a pipe or device, "
                        f"more than annograph reads as {kind}")
        return bytes(stream.data)
    try:
        size = os.stat(path).st_size
        if size > limit:
            raise error(f"{path}: {format_limit(size)} is more than annograph reads as {kind} ({format_limit(limit)})")
        with open(path, "rb") as f:
            return f.read(limit + 1)
    except OSError as e:
        raise error(unreadable(path, e, kind)) from None


def chunks(path: str | Path, limit: int, error: type[AnnographError], kind: str) -> Iterator[bytes]:
    """The file in chunks of ``CHUNK`` bytes, refused with ``error`` (before the first chunk for a regular file) when
    it holds more than ``limit`` bytes; a stream is read once, through its bounded buffer."""
    if is_stream(path):
        data = read_bytes(path, limit, error, kind)
        yield from (data[start:start + CHUNK] for start in range(0, len(data), CHUNK))
        return
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size > limit:
                raise error(f"{path}: {format_limit(size)} is more than annograph reads as {kind} "
                            f"({format_limit(limit)})")
            while chunk := f.read(CHUNK):
                yield chunk
    except OSError as e:
        raise error(unreadable(path, e, kind)) from None


def open_text(path: str | Path, error: type[AnnographError], kind: str, limit: int = ANNOTATION_LIMIT) -> IO[str]:
    """The file for streaming text reads (UTF-8, BOM skipped, newlines kept as they are), refused with ``error``
    when it holds more than ``limit`` bytes (as ``read_bytes`` refuses it)."""
    if is_stream(path):
        data = read_bytes(path, limit, error, kind)
        return io.TextIOWrapper(io.BytesIO(data), encoding="utf-8-sig", newline="")
    try:
        handle = open(path, encoding="utf-8-sig", newline="")
    except OSError as e:
        raise error(unreadable(path, e, kind)) from None
    size = os.fstat(handle.fileno()).st_size
    if size > limit:
        handle.close()
        raise error(f"{path}: {format_limit(size)} is more than annograph reads as {kind} ({format_limit(limit)})")
    return handle


def forget() -> None:
    """Drop the buffers of every stream read (the CLI calls this when a command ends)."""
    for stream in _streams.values():
        _close(stream)
    _streams.clear()
    _out_of_memory.clear()


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


NPZ_LIMIT = 4 << 30
"""Largest total of the sizes an ``.npz`` file's members declare (what its arrays would take once inflated)."""
NPZ_MEMBERS = 100_000
"""Most members an ``.npz`` file may list (its central directory is read whole)."""
_DIRECTORY_LIMIT = 64 << 20
"""Largest central directory read (64 MiB: NPZ_MEMBERS members of names up to ~600 bytes)."""
_NPY_HEADER_LIMIT = 10_000
_NAME_SHOWN = 60


class NpzArchive:
    """An ``.npz`` file (arrays saved by ``numpy.savez``), read from its headers first and its arrays one at a time.

    Opening checks what every member declares before anything is inflated: a zip archive, at most
    ``NPZ_MEMBERS`` members, each a ``.npy`` file with a readable header of a numeric dtype (``kinds``) whose
    data fits the member's declared size, and declared sizes summing to at most ``limit``. So a zip bomb, a
    member that is not an array, or a header promising more than the file holds is one line naming the file and
    the member, and ``array`` inflates one member, never more than it declared. A pipe or FIFO is read once
    through this module's bounded buffer (and its 30 s wait for a writer).

    Attributes:
        path: the file, as given.
        names: array names (member names without ``.npy``), in file order.
    """

    def __init__(self, path: str | Path, error: type[AnnographError], kind: str, limit: int | None = None,
                 kinds: str = "biuf", check_names: Callable[[list[str]], None] | None = None) -> None:
        import zipfile

        self.path, self._error, self._kind, self._kinds = path, error, kind, kinds
        limit = NPZ_LIMIT if limit is None else limit
        with reading(path):
            source: IO[bytes] = io.BytesIO(read_bytes(path, limit, error, kind)) if is_stream(path) else self._open()
            try:
                self._check_magic(source)
                self._count_members(source)
                self._zip = zipfile.ZipFile(source)
            except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, EOFError, OSError, struct.error) as e:
                source.close()
                raise error(f"{path}: not a readable .npz file ({_cut(first_line(e, 100))})") from None
            try:
                self.names, self._headers = self._read_headers(limit, check_names)
            except BaseException:
                self.close()
                raise

    def _open(self) -> IO[bytes]:
        try:
            return open(self.path, "rb")
        except OSError as e:
            raise self._error(unreadable(self.path, e, self._kind)) from None

    def _check_magic(self, source: IO[bytes]) -> None:
        start = source.read(8)
        source.seek(0)
        if start.startswith(b"\x93NUMPY"):
            raise self._error(f"{self.path}: a single .npy array, not {self._kind} (an .npz with one array per name)")
        if not start.startswith((b"PK\x03\x04", b"PK\x05\x06")):
            raise self._error(f"{self.path}: not an .npz file (no zip archive: {self._kind} is an .npz of arrays, "
                              "as numpy.savez writes)")

    def _count_members(self, source: IO[bytes]) -> None:
        """Refuse a central directory of more than ``NPZ_MEMBERS`` entries (or more than ``_DIRECTORY_LIMIT``
        bytes) before zipfile reads it whole. The entries are counted in the directory itself: the end record's
        count is only a claim (a zip64 end record patched to 1 let 150,000 headers be read)."""
        import zipfile

        end = getattr(zipfile, "_EndRecData", None)  # the end record's fields; read by zipfile itself the same way
        record = end(source) if end is not None else None
        if record is None:
            source.seek(0)
            return
        size = record[5]  # _ECD_SIZE
        start = record[9] - size  # _ECD_LOCATION: the directory ends where the end record (or zip64's) starts
        if record[0] == getattr(zipfile, "stringEndArchive64", b"PK\x06\x06"):
            start -= 56 + 20  # the zip64 end record and its locator lie between
        if size > _DIRECTORY_LIMIT:
            raise self._error(f"{self.path}: a central directory of {format_limit(size)}, more than annograph reads "
                              f"as {self._kind} ({format_limit(_DIRECTORY_LIMIT)})")
        source.seek(max(start, 0))
        directory = source.read(size)
        count, at = 0, 0
        while at + 46 <= len(directory) and directory[at:at + 4] == b"PK\x01\x02":
            count += 1
            if count > NPZ_MEMBERS:
                raise self._error(f"{self.path}: more than {NPZ_MEMBERS} members, more than annograph reads as "
                                  f"{self._kind}")
            names, extra, comment = struct.unpack_from("<HHH", directory, at + 28)
            at += 46 + names + extra + comment
        source.seek(0)

    def _read_headers(self, limit: int, check_names: Callable[[list[str]], None] | None
                      ) -> tuple[list[str], dict[str, tuple[tuple[int, ...], Any, bool]]]:
        """Every member's array header, after the names (``check_names`` may refuse them) and the declared sizes."""
        infos = [info for info in self._zip.infolist() if not info.is_dir()]
        declared = sum(info.file_size for info in infos)
        if declared > limit:
            raise self._error(f"{self.path}: its members would inflate to {format_limit(declared)}, more than "
                              f"annograph reads as {self._kind} ({format_limit(limit)})")
        names: list[str] = []
        for info in infos:
            if not info.filename.endswith(".npy"):
                raise self._error(f"{self.path}: member {_name(info.filename)} is not a .npy array ({self._kind} "
                                  "holds one .npy file per array)")
            names.append(info.filename[:-4])
        if len(set(names)) != len(names):
            twice = next(name for name, n in Counter(names).items() if n > 1)
            raise self._error(f"{self.path}: two arrays named {_name(twice)}")
        if check_names is not None:
            check_names(names)
        return names, {name: self._header(info) for name, info in zip(names, infos)}

    def _header(self, info: Any) -> tuple[tuple[int, ...], Any, bool]:
        """Shape, dtype and Fortran order of one member, checked against what it declares."""
        import math
        import zipfile

        import numpy as np

        label = f"{self.path}: array {_name(info.filename[:-4])}"
        try:
            with self._zip.open(info) as member:
                version = np.lib.format.read_magic(member)
                read = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                        else np.lib.format.read_array_header_2_0)
                shape, fortran, dtype = read(member, max_header_size=_NPY_HEADER_LIMIT)
        except (ValueError, TypeError, SyntaxError, EOFError, OSError, RuntimeError, zipfile.BadZipFile,
                NotImplementedError) as e:
            raise self._error(f"{label}: not a readable .npy header ({_cut(first_line(e, 100))})") from None
        if dtype.hasobject or dtype.fields is not None or dtype.kind not in self._kinds:
            raise self._error(f"{label}: holds {_dtype(dtype)} values, not numbers")
        data = math.prod(shape) * dtype.itemsize
        if data > info.file_size:
            raise self._error(f"{label}: its header promises {format_limit(data)}, more than the member's "
                              f"{format_limit(info.file_size)}")
        return tuple(int(n) for n in shape), dtype, bool(fortran)

    def shape(self, name: str) -> tuple[int, ...]:
        """The array's shape, from its header (nothing inflated)."""
        return self._headers[name][0]

    def dtype(self, name: str) -> Any:
        """The array's numpy dtype, from its header."""
        return self._headers[name][1]

    def nbytes(self, name: str) -> int:
        """Bytes the array takes once loaded."""
        import math

        shape, dtype, _ = self._headers[name]
        return math.prod(shape) * dtype.itemsize

    def array(self, name: str) -> Any:
        """One array, inflated now (at most the size its member declared)."""
        import zipfile

        import numpy as np

        with reading(self.path):
            return self._inflate(name, np, zipfile)

    def _inflate(self, name: str, np: Any, zipfile: Any) -> Any:
        try:
            with self._zip.open(name + ".npy") as member:
                return np.lib.format.read_array(member, allow_pickle=False, max_header_size=_NPY_HEADER_LIMIT)
        except (ValueError, EOFError, OSError, RuntimeError, zipfile.BadZipFile, NotImplementedError) as e:
            raise self._error(f"{self.path}: array {_name(name)}: {_cut(first_line(e, 100))}") from None

    def arrays(self) -> dict[str, Any]:
        """Every array by name (what fits ``limit`` already), for files as small as a model's inputs."""
        return {name: self.array(name) for name in self.names}

    def close(self) -> None:
        zipped = getattr(self, "_zip", None)
        if zipped is not None:
            zipped.close()

    def __enter__(self) -> NpzArchive:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


def _name(name: str) -> str:
    """A member or array name from a hostile file, quoted and cut."""
    return repr(name[:_NAME_SHOWN] + ("…" if len(name) > _NAME_SHOWN else ""))


def _cut(text: str) -> str:
    return text.replace("\n", " ")


def _dtype(dtype: Any) -> str:
    if dtype.hasobject:
        return "Python object"
    if dtype.fields is not None:
        return "structured"
    return {"S": "byte string", "U": "string", "V": "raw (void)", "c": "complex", "M": "date", "m": "time delta"}.get(
        dtype.kind, dtype.kind)
