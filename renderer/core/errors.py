"""Every error annograph raises on purpose; the CLI prints these as one line."""

from __future__ import annotations


class AnnographError(Exception):
    """Base class: a problem with the user's input or environment, shown as one line."""


def first_line(e: BaseException, limit: int = 300, empty: str | None = None) -> str:
    """The first line of ``e``'s message, cut at ``limit``; ``empty`` (default: the exception's type name)
    when it has none. For wrapping a library's exception in one line of our own."""
    lines = str(e).strip().splitlines()
    if lines:
        return cut(lines[0], limit)
    return type(e).__name__ if empty is None else empty


def cut(text: str, limit: int) -> str:
    """``text`` in at most ``limit`` characters: when longer, cut after a whole word (a word longer than half the
    room is cut inside) and ended with "…"."""
    if len(text) <= limit:
        return text
    room = text[:max(0, limit - 1)]
    space = room.rfind(" ")
    return (room[:space] if space > limit // 2 else room).rstrip(" ,;:") + "…"


def unreadable(path: object, e: OSError, kind: str) -> str:
    """The one-line message for a file that cannot be opened; ``kind`` is what it should have been."""
    if isinstance(e, FileNotFoundError):
        return f"{path}: no such file"
    if isinstance(e, IsADirectoryError):
        return f"{path}: is a directory, not {kind}"
    return f"{path}: cannot read ({e.strerror})"


class UsageError(AnnographError):
    """The command line itself is wrong (a bad option value, options that do not go together), whatever the
    files hold: exit status 2, as argparse's own usage errors and POSIX tools."""


class LoaderError(AnnographError):
    """A model file is missing, of an unknown format, or corrupt."""


class AnnotationError(AnnographError):
    """An annotation file is malformed, or its ids cannot be matched under --strict."""


class OperatorDataError(AnnographError):
    """A data file of ``renderer/data`` (operator knowledge) does not fit its schema: a broken installation or a
    bad edit, never the model's fault."""


class MetricError(AnnographError):
    """A metric was asked for that no source provides, or cannot be computed."""


class RenderError(AnnographError):
    """Graphviz failed, timed out, or an output cannot be written."""


class GraphvizNotFound(RenderError):
    """The Graphviz `dot` program is not on PATH."""

    def __init__(self, program: str = "dot") -> None:
        super().__init__(
            f"the Graphviz program {program!r} was not found on PATH; install Graphviz "
            "(Debian/Ubuntu: apt-get install graphviz; macOS: brew install graphviz; "
            "conda: conda install -c conda-forge graphviz)"
        )
