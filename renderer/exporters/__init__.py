"""Exporters: annotations out to other viewers and formats (``registry`` lists them), annotations embedded into a
copy of the model (``embed_onnx``, ``embed_tflite``), ids that resolve back (``stable_ids``), the metric table of
``annograph metrics`` (``metric_table``).
"""

from __future__ import annotations

from renderer.exporters.protocol import Exporter, ExportOptions, ExportResult
from renderer.exporters.registry import EXPORTERS, exporter, exporter_modules

__all__ = [
    "EXPORTERS",
    "Exporter",
    "ExportOptions",
    "ExportResult",
    "exporter",
    "exporter_modules",
]
