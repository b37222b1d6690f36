"""A model file as read-only bytes: memory-mapped where possible, so weights are views, not copies."""

from __future__ import annotations

import mmap
from pathlib import Path

from renderer.core.errors import LoaderError, unreadable
from renderer.files import inputs


def map_file(path: Path) -> bytes | mmap.mmap:
    """The file's bytes: mapped when it is a regular file, else read once through ``inputs`` (bounded)."""
    if inputs.is_stream(path):
        return inputs.read_bytes(path, inputs.MODEL_LIMIT, LoaderError, "a model file")
    try:
        with open(path, "rb") as f:
            try:
                return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
            except (OSError, ValueError):  # empty file, or a file system / special file that cannot be mapped
                return f.read()
    except OSError as e:
        raise LoaderError(unreadable(path, e, "a model file")) from None
