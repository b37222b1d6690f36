"""Exporters: annotations out to other viewers and formats.

Each exporter module exposes:
    NAME: str              the ``--to`` value (``model-explorer``, ``netron``, ``csv``, ``json``)
    DESCRIPTION: str       one line for ``--help``
    EXTENSION: str         the usual file extension, with the dot
    export(model, annotations, options: ExportOptions) -> ExportResult
                           the file's text plus notes on what could not be expressed in the format

``embed_onnx`` / ``embed_tflite`` write annotations into a copy of the model instead (``annograph embed``).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from types import ModuleType

from ..errors import AnnographError

EXPORTERS: tuple[str, ...] = ("model_explorer", "netron", "generic_csv", "generic_json")


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


def exporter_modules() -> list[ModuleType]:
    return [importlib.import_module(f"{__name__}.{name}") for name in EXPORTERS]


def exporter(name: str) -> ModuleType:
    """The exporter whose NAME is ``name``, or an AnnographError listing them."""
    for module in exporter_modules():
        if module.NAME == name:
            return module
    raise AnnographError(
        f"unknown export format {name!r} (use one of {', '.join(m.NAME for m in exporter_modules())})"
    )
