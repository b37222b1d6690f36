"""Which format a file is written in: the one an option names, else the one its extension stands for."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from renderer.core.errors import AnnographError


def chosen_format(path: str | Path, fmt: str | None, extensions: Mapping[str, str], what: str,
                  error: type[AnnographError] = AnnographError) -> str:
    """``fmt`` when given (it must be one of ``extensions``' formats), else the format of ``path``'s extension.

    Args:
        path: the file to write.
        fmt: the format an option names, or None.
        extensions: extension (lower case, with the dot) → format.
        what: the kind of file, for messages ("output", "metrics file").
        error: the AnnographError subclass to raise.
    """
    if fmt:
        known = sorted(set(extensions.values()))
        if fmt not in known:
            raise error(f"unknown {what} format {fmt!r} (use one of {', '.join(known)})")
        return fmt
    suffix = Path(path).suffix.lower()
    if suffix not in extensions:
        raise error(f"{path}: unknown {what} extension {suffix or '(none)'!r} (use {', '.join(extensions)})")
    return extensions[suffix]
