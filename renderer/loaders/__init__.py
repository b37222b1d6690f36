"""Model loaders: one package per format (``onnx/``, ``tflite/``), each with a ``loader`` module meeting
``protocol.Loader``, chosen by magic bytes first and extension second (``registry``); feeds for runtime runs
(``feeds``), free dims (``free_dims``), shapes that depend on values (``value_sizes``), memory-mapped reads
(``mapped``) and the one resource policy of every runtime run in a child process (``isolated``).
"""

from __future__ import annotations

from renderer.loaders.protocol import Loader, RealValues
from renderer.loaders.registry import LOADERS, check_dims, decode_text, detect, load_model, loader_modules

__all__ = [
    "LOADERS",
    "Loader",
    "RealValues",
    "check_dims",
    "decode_text",
    "detect",
    "load_model",
    "loader_modules",
]
