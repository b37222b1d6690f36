"""A zip member's inflation bounded by what the central directory declares, before any of it is inflated.

``zipfile`` stops inflating a member at the size its directory entry declares (and fails its CRC past it), so the
declared size bounds the work; a loader bounds that size, and here its ratio to the compressed bytes: a zip bomb
is a small member declaring a huge size. ExecuTorch's ETRecords and torch.export's archives are written stored
(ratio 1); JSON deflates to about a tenth, a bomb to a thousandth.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from renderer.core.errors import AnnographError
from renderer.core.escape import clean

MAX_INFLATION = 100
"""How many times its compressed bytes a member may declare (plus ``SLACK``)."""
SLACK = 1 << 20
_STORED = 0  # zipfile.ZIP_STORED


def check_inflation(info: Any, path: str | Path, error: type[AnnographError], what: str) -> None:
    """``error`` naming ``path`` and the member when ``info`` (a ``zipfile.ZipInfo`` of ``what``) declares more
    than ``MAX_INFLATION`` times its compressed size."""
    if info.compress_type == _STORED or info.file_size <= MAX_INFLATION * info.compress_size + SLACK:
        return
    raise error(f"{path}: {what} {clean(info.filename, 80)!r} would inflate {info.compress_size:,} bytes to "
                f"{info.file_size:,} ({info.file_size // max(info.compress_size, 1):,} times, more than "
                f"{MAX_INFLATION}: a zip bomb's, not read)")


__all__ = ["MAX_INFLATION", "check_inflation"]
