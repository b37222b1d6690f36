"""The exporters' registry: one line per ``--to`` format (``EXPORTERS``), each module meeting ``protocol.Exporter``.

``embed_onnx`` / ``embed_tflite`` write annotations into a copy of the model instead (``annograph embed``).
"""

from __future__ import annotations

import importlib
from typing import cast

from renderer.core.errors import AnnographError
from renderer.exporters.protocol import Exporter

EXPORTERS: tuple[str, ...] = ("model_explorer", "netron", "generic_csv", "generic_json")


def exporter_modules() -> list[Exporter]:
    return [cast(Exporter, importlib.import_module(f"renderer.exporters.{name}")) for name in EXPORTERS]


def exporter(name: str) -> Exporter:
    """The exporter whose NAME is ``name``, or an AnnographError listing them."""
    for module in exporter_modules():
        if module.NAME == name:
            return module
    raise AnnographError(
        f"unknown export format {name!r} (use one of {', '.join(m.NAME for m in exporter_modules())})"
    )
