"""What an annotation reader module provides (``Reader``). ``registry.READERS`` names the modules under
``readers/`` that meet it; ``tests/unit`` checks each against it, names and parameters."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from renderer.core.ir import Model
from renderer.core.records import AnnotationSet


class Reader(Protocol):
    """A reader module: one tool's output read as annotations of a model.

    Attributes:
        NAME: short source name; qualifies clashing metrics (``ort.latency_us``) and is the
            ``--annotations-format`` value.
        DESCRIPTION: one line for ``--annotations-format`` help.
    """

    NAME: str
    DESCRIPTION: str

    def match(self, path: Path, head: str) -> bool:
        """True when the file's first ~4 KiB (``head``) look like this source's output."""
        ...

    def read(self, path: Path, model: Model) -> AnnotationSet:
        """The file's values keyed by the ids it names; AnnotationError naming the file (and line) on malformed
        input."""
        ...
