"""Writing outputs so that a failed run never leaves a half-written file or loses an existing one."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from .errors import RenderError


def write_bytes(path: str | Path, data: bytes) -> None:
    """Write ``data`` to a temporary file beside ``path``, then rename it over ``path``."""
    path = Path(path)
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
        os.replace(temp, path)
    except OSError as e:
        _remove(temp)
        raise RenderError(f"{path}: cannot write ({e.strerror})") from None
    except BaseException:
        _remove(temp)
        raise


def write_text(path: str | Path, text: str) -> None:
    write_bytes(path, text.encode("utf-8"))


def _remove(temp: str) -> None:
    try:
        os.unlink(temp)
    except OSError:
        pass
