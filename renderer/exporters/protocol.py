"""What an exporter module provides (``Exporter``), the choices some formats need (``ExportOptions``) and what an
export gives back (``ExportResult``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from renderer.core.ir import Model
from renderer.core.records import Annotations


@dataclass(slots=True)
class ExportOptions:
    """Choices some formats need.

    Attributes:
        metric: the one operator metric a Model Explorer node data file carries (default: the first numeric one).
        cmap: colour map for Model Explorer's gradient (default as ``render`` picks it).
    """

    metric: str | None = None
    cmap: str | None = None


@dataclass(slots=True)
class ExportResult:
    text: str
    notes: list[str] = field(default_factory=list)


class Exporter(Protocol):
    """An exporter module: a model's annotations written in another tool's format.

    Attributes:
        NAME: the ``--to`` value (``model-explorer``, ``netron``, ``csv``, ``json``).
        DESCRIPTION: one line for ``--help``.
        EXTENSION: the usual file extension, with the dot.
    """

    NAME: str
    DESCRIPTION: str
    EXTENSION: str

    def export(self, model: Model, annotations: Annotations, options: ExportOptions) -> ExportResult:
        """The file's text plus notes on what could not be expressed in the format."""
        ...
