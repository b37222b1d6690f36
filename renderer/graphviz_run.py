"""Runs the Graphviz ``dot`` program. The only module that starts a subprocess."""

from __future__ import annotations

import os
import re
import shutil
import subprocess

from .errors import GraphvizNotFound, RenderError

FORMATS = frozenset({"svg", "pdf", "png"})
MAX_PDF_INCHES = 199
PNG_DPI = 110
MAX_PNG_PIXELS = 32000

# Fixed so PDF output carries the same creation date on every run (cairo honours SOURCE_DATE_EPOCH).
SOURCE_DATE_EPOCH = "315532800"
FIXED_PDF_DATE = b"19800101000000"


def dot_program() -> str:
    path = shutil.which("dot")
    if path is None:
        raise GraphvizNotFound("dot")
    return path


def run_dot(source: str, fmt: str, timeout: float | None = None, dpi: int | None = None) -> bytes:
    """Lay out ``source`` and return the ``fmt`` bytes.

    Raises:
        GraphvizNotFound: no ``dot`` on PATH.
        RenderError: Graphviz failed (any non-zero exit, including 1, where it still prints a picture with
            broken labels), was killed, or ran past ``timeout`` seconds.
    """
    if fmt not in FORMATS:
        raise RenderError(f"unknown Graphviz output format {fmt!r} (use one of {', '.join(sorted(FORMATS))})")
    command = [dot_program(), f"-T{fmt}"]
    if fmt == "pdf":
        # PDF readers refuse pages over 200 inches (Acrobat's limit): scale big graphs down to fit.
        command = [command[0], "-Tpdf:cairo", f"-Gsize={MAX_PDF_INCHES},{MAX_PDF_INCHES}"]
    elif fmt == "png":
        # cairo cannot make images over 32767 pixels a side
        inches = MAX_PNG_PIXELS // (dpi or PNG_DPI)
        command = [command[0], "-Tpng:cairo", f"-Gdpi={dpi or PNG_DPI}", f"-Gsize={inches},{inches}"]
    env = dict(os.environ, SOURCE_DATE_EPOCH=SOURCE_DATE_EPOCH)
    try:
        done = subprocess.run(command, input=source.encode("utf-8"), capture_output=True, timeout=timeout, env=env,
                              check=False)
    except subprocess.TimeoutExpired:
        raise RenderError(f"Graphviz did not finish within {timeout:g} s (raise --timeout, or render a subgraph)") from None
    except OSError as e:
        raise RenderError(f"cannot run Graphviz: {e}") from None
    if done.returncode != 0:
        message = _first_error(done.stderr)
        raise RenderError(f"Graphviz failed with exit status {done.returncode}: {message}")
    if not done.stdout:
        raise RenderError("Graphviz produced no output")
    return _fixed_pdf_dates(done.stdout) if fmt == "pdf" else done.stdout


_PDF_DATE = re.compile(rb"/(CreationDate|ModDate) \(D:([0-9]+)")


def _fixed_pdf_dates(pdf: bytes) -> bytes:
    """Cairo before 1.17 ignores SOURCE_DATE_EPOCH: pin the dates, keeping lengths so the xref offsets hold."""
    return _PDF_DATE.sub(lambda m: b"/" + m.group(1) + b" (D:" + FIXED_PDF_DATE[: len(m.group(2))].ljust(len(m.group(2)), b"0"), pdf)


def _first_error(stderr: bytes) -> str:
    lines = [ln.strip() for ln in stderr.decode("utf-8", "replace").splitlines() if ln.strip()]
    for line in lines:
        if line.lower().startswith("error"):
            return line[:300]
    return lines[0][:300] if lines else "no message"
