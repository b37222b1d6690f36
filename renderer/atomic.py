"""Writing outputs so that a failed run never leaves a half-written file or loses an existing one."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from .errors import RenderError


def write_bytes(path: str | Path, data: bytes) -> None:
    """Write ``data`` to a temporary file beside ``path``, then rename it over ``path``."""
    write_all([(path, data)])


def write_text(path: str | Path, text: str) -> None:
    write_bytes(path, text.encode("utf-8"))


def write_all(items: list[tuple[str | Path, bytes]]) -> None:
    """Write several files all or nothing: every temporary file is written first, and only when all are
    complete are they renamed over their targets. A failure before that leaves every target untouched and
    removes the temporary files. (The renames themselves, within one folder each, do not fail in practice.)
    """
    staged: list[tuple[str, Path]] = []
    try:
        for path, data in items:
            staged.append((_stage(Path(path), data), Path(path)))
        for temp, path in staged:
            try:
                os.replace(temp, path)
            except OSError as e:
                raise RenderError(f"{path}: cannot write ({e.strerror})") from None
    except BaseException:
        for temp, _ in staged:
            _remove(temp)
        raise


def _stage(path: Path, data: bytes) -> str:
    """A complete temporary copy of ``data`` beside ``path``; its name."""
    directory = path.parent if str(path.parent) else Path(".")
    if not directory.is_dir():
        raise RenderError(f"{path}: the folder {directory} does not exist")
    try:
        fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    except OSError as e:
        raise RenderError(f"{path}: cannot write ({e.strerror})") from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(temp, 0o644)
    except OSError as e:
        _remove(temp)
        raise RenderError(f"{path}: cannot write ({e.strerror})") from None
    except BaseException:
        _remove(temp)
        raise
    return temp


def _remove(temp: str) -> None:
    try:
        os.unlink(temp)
    except OSError:
        pass
