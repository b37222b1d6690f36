"""What the tests of the caches between renders (issue 30) share: a latency file drawn at random, and a folder's
files by name, to compare renders byte for byte."""

from __future__ import annotations

import random
from pathlib import Path


def latencies(path: Path, seed: int, count: int) -> Path:
    """A generic CSV of one latency per operator index (``count`` of them), drawn from ``seed``."""
    draw = random.Random(seed)
    path.write_text("id,latency_ms\n" + "".join(f"{i},{draw.lognormvariate(0, 1):.4f}\n" for i in range(count)))
    return path


def files(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder``, by its path relative to it."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}
