"""From a loaded model and its annotations to finished files: the heatmaps, the DOT, Graphviz, the reports."""

from __future__ import annotations

from pathlib import Path

from . import atomic, dot, graphviz_run
from .annotations import Annotations
from .annotations.records import AnnotationSet
from .errors import RenderError
from .folding import fold
from .heatmap import Heatmap, build
from .ir import Model
from .options import RenderOptions

OUTPUT_FORMATS: dict[str, str] = {
    ".svg": "svg", ".pdf": "pdf", ".png": "png", ".dot": "dot", ".gv": "dot", ".html": "html", ".htm": "html",
    ".md": "md",
}
"""File extension → output format. The injection and determinism tests iterate over the formats."""


def output_format(path: str | Path, fmt: str | None = None) -> str:
    if fmt:
        if fmt not in set(OUTPUT_FORMATS.values()):
            raise RenderError(f"unknown output format {fmt!r} (use one of {', '.join(sorted(set(OUTPUT_FORMATS.values())))})")
        return fmt
    suffix = Path(path).suffix.lower()
    if suffix not in OUTPUT_FORMATS:
        raise RenderError(f"{path}: unknown output extension {suffix or '(none)'!r} (use {', '.join(OUTPUT_FORMATS)})")
    return OUTPUT_FORMATS[suffix]


def prepare(model: Model, annotations: Annotations | None, options: RenderOptions) -> dot.Scene:
    """Add built-in metrics that are asked for, fit the heatmaps, and return the scene to draw."""
    from . import metrics as builtin

    annotations = annotations.copy() if annotations is not None else Annotations()  # the caller's stay as given
    wanted = {n for n in (options.color_by, options.edge_by) if n} | set(options.show or [])
    annotations = builtin.augment(model, annotations, wanted, options)
    heatmap: Heatmap | None = None
    edge_map: Heatmap | None = None
    folding = fold(model, options.show_constants)
    if options.color_by:
        heatmap = build(options.color_by, annotations, "op", options.cmap, options.norm, options.vmin, options.vmax,
                        options.center, undrawn=folding.hidden)
    if options.edge_by:
        edge_map = build(options.edge_by, annotations, "t", options.edge_cmap or "ice", "linear")
    return dot.Scene(model, annotations, options, heatmap, edge_map, builtin.totals(model), folding)


def to_dot(model: Model, annotations: Annotations | None = None, options: RenderOptions | None = None) -> str:
    """The DOT source of the annotated picture."""
    return dot.emit(prepare(model, annotations, options or RenderOptions()))


def _produce(scene: dot.Scene, source: str, fmt: str, svg_cache: dict[str, bytes]) -> bytes:
    if fmt == "dot":
        return source.encode("utf-8")
    if fmt == "md":
        from . import report

        return report.markdown(scene).encode("utf-8")
    if fmt in ("svg", "html") and "svg" not in svg_cache:
        svg_cache["svg"] = graphviz_run.run_dot(source, "svg", timeout=scene.options.timeout)
    if fmt == "svg":
        return svg_cache["svg"]
    if fmt == "html":
        from . import report

        return report.html(scene, svg_cache["svg"].decode("utf-8")).encode("utf-8")
    if fmt in graphviz_run.FORMATS:
        return graphviz_run.run_dot(source, fmt, timeout=scene.options.timeout)
    raise RenderError(f"unknown output format {fmt!r}")


def render_bytes(
    model: Model, annotations: Annotations | None = None, options: RenderOptions | None = None, fmt: str = "svg",
) -> bytes:
    """The picture (or report) as bytes in ``fmt``: svg, pdf, png, dot, html or md."""
    scene = prepare(model, annotations, options or RenderOptions())
    return _produce(scene, dot.emit(scene), fmt, {})


def render(
    model: Model, annotations: Annotations | None = None, options: RenderOptions | None = None,
    output: str | Path | list[str | Path] | None = None, fmt: str | None = None,
) -> bytes:
    """Render, and write each of ``output`` atomically (format from its extension unless ``fmt``).

    The layout is computed once for all outputs. Every output is produced before any is written, so a
    failure leaves all existing files as they were. Returns the bytes of the last output (SVG when none).
    """
    scene = prepare(model, annotations, options or RenderOptions())
    source = dot.emit(scene)
    if output is None:
        return _produce(scene, source, fmt or "svg", {})
    outputs = output if isinstance(output, list) else [output]
    svg_cache: dict[str, bytes] = {}
    produced = [(path, _produce(scene, source, output_format(path, fmt), svg_cache)) for path in outputs]
    atomic.write_all(produced)
    return produced[-1][1]


__all__ = ["OUTPUT_FORMATS", "AnnotationSet", "output_format", "prepare", "render", "render_bytes", "to_dot"]
