"""annograph: render ONNX and TFLite models as static, annotated Graphviz graphs.

    >>> import renderer
    >>> model = renderer.load_model("samples/onnx/tiny_cnn.onnx")       # doctest: +SKIP
    >>> notes = renderer.load_annotations("stats.yaml", model)           # doctest: +SKIP
    >>> options = renderer.RenderOptions(color_by="latency_ms")
    >>> renderer.render(model, notes, options, output="cnn.svg")         # doctest: +SKIP
    >>> renderer.show(model, notes, color_by="latency_ms")  # Jupyter displays it  # doctest: +SKIP

Heavy libraries (onnx, tflite, matplotlib, jinja2) are imported on first use, not with this package.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from renderer.core.errors import (
    AnnographError,
    AnnotationError,
    GraphvizNotFound,
    LoaderError,
    MetricError,
    RenderError,
)
from renderer.core.options import RenderOptions
from renderer.version import __version__

__all__ = [
    "AnnographError", "AnnotationError", "GraphvizNotFound", "LoaderError", "MetricError", "RenderError",
    "RenderOptions", "load_model", "load_annotations", "render", "to_dot", "show", "__version__",
]

if TYPE_CHECKING:
    from renderer.annotations.registry import load_annotations
    from renderer.compose.rendering import render, to_dot
    from renderer.integrations.notebook import show
    from renderer.loaders.registry import load_model

_LAZY = {
    "load_model": ("loaders.registry", "load_model"),
    "load_annotations": ("annotations.registry", "load_annotations"),
    "render": ("compose.rendering", "render"),
    "to_dot": ("compose.rendering", "to_dot"),
    "show": ("integrations.notebook", "show"),
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        module, attr = _LAZY[name]
        return getattr(importlib.import_module(f".{module}", __name__), attr)
    raise AttributeError(f"module 'renderer' has no attribute {name!r}")
