"""From a loaded model and its annotations to finished files: the heatmaps, the DOT, Graphviz, the reports."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from . import atomic, dot, escape, graphviz_run
from .annotations import Annotations
from .annotations.records import AnnotationSet
from .errors import RenderError
from .file_formats import chosen_format
from .folding import fold
from .heatmap import NO_COLOR, Heatmap, build
from .colors import format_number
from .ir import Model, Node
from .options import RenderOptions
from .progress import count, stage, waiting


if TYPE_CHECKING:
    from .pages import Book

OUTPUT_FORMATS: dict[str, str] = {
    ".svg": "svg", ".pdf": "pdf", ".png": "png", ".dot": "dot", ".gv": "dot", ".html": "html", ".htm": "html",
    ".md": "md",
}
"""File extension → output format. The injection and determinism tests iterate over the formats."""


def output_format(path: str | Path, fmt: str | None = None) -> str:
    """The picture format of ``path``: ``fmt`` when given, else its extension's (see ``OUTPUT_FORMATS``)."""
    return chosen_format(path, fmt, OUTPUT_FORMATS, "output", RenderError)


def prepare(model: Model, annotations: Annotations | None, options: RenderOptions) -> dot.Scene:
    """Add built-in metrics that are asked for, fit the heatmaps, and return the scene to draw."""
    from . import metrics as builtin

    annotations = annotations.copy() if annotations is not None else Annotations()  # the caller's stay as given
    if options.color_by is None:  # the API's default is the command line's
        from .loading import default_color, say_default

        options, default = default_color(options, annotations, model)
        say_default(default)
    color_by = None if options.color_by == NO_COLOR else options.color_by
    wanted = {n for n in (color_by, options.edge_by) if n} | set(options.show or [])
    with stage("metrics") as facts:  # its passes count operators, tensors and weight values on their own bars
        annotations = builtin.augment(model, annotations, wanted, options)
        facts.append(", ".join(sorted(wanted & {*builtin.OP_METRICS, *builtin.ALL_TENSOR_METRICS})) or "none built in")
    heatmap: Heatmap | None = None
    edge_map: Heatmap | None = None
    folding = fold(model, options.show_constants)
    if color_by:
        heatmap = build(color_by, annotations, "op", options.cmap, options.norm, options.vmin, options.vmax,
                        options.center, undrawn=folding.hidden)
    if options.edge_by:
        edge_map = build(options.edge_by, annotations, "t", options.edge_cmap or "ice", "linear")
    return dot.Scene(model, annotations, options, heatmap, edge_map, builtin.totals(model), folding)


def to_dot(model: Model, annotations: Annotations | None = None, options: RenderOptions | None = None) -> str:
    """The DOT source of the annotated picture (of the overview, when the model is drawn as a book of pages)."""
    scene = prepare(model, annotations, options or RenderOptions())
    book = plan_book(scene)
    if book is None:
        return dot.emit(scene)
    from .dot_pages import Links, emit_page

    return emit_page(scene, book, book.pages[0], Links("model.svg"))


def plan_book(scene: dot.Scene, force: bool = False) -> Book | None:
    """The pages to draw: a focused view, an overview with detail pages, or None for one flat picture.
    ``force``: pages, because the flat picture came out too big (``lay_out_flat``)."""
    from . import pages

    opts = scene.options
    if opts.focus or opts.top:
        return _focus(scene)
    return pages.plan(scene.model, scene.folding.is_drawn, opts.collapse, force=force)


def flat_limit(scene: dot.Scene) -> float | None:
    """The biggest side a flat picture may have before it is drawn as pages instead (None: no limit, as
    ``--collapse none`` asks for one picture whatever its size)."""
    from .pages import MAX_PAGE_PT

    return MAX_PAGE_PT if scene.options.collapse == "auto" else None


def lay_out_flat(scene: dot.Scene, source: str, formats: list[str]) -> dict[str, bytes]:
    """One Graphviz layout of the flat picture in ``formats``.

    Raises:
        graphviz_run.TooBig: over ``flat_limit`` a side (the caller draws pages instead).
    """
    return graphviz_run.render_formats(source, formats, timeout=scene.options.timeout, max_side=flat_limit(scene))


def _focus(scene: dot.Scene) -> Book:
    from . import pages
    from .id_rules import IdIndex, Unresolved

    opts, model = scene.options, scene.model
    if opts.radius < 0:
        raise RenderError(f"--radius {opts.radius}: use 0 or more hops")
    centres: list[Node] = []
    labels: list[str] = []
    if opts.focus:
        index = IdIndex.build(model)
        for ident in opts.focus:
            try:
                _, graph, number = index.operator(ident)
            except Unresolved as e:
                raise RenderError(f"--focus {escape.clean(ident, 80)}: {e}") from None
            node = model.graphs[graph].nodes[number]
            if scene.folding.is_hidden(node):
                raise RenderError(f"--focus {escape.clean(ident, 80)}: operator {graph}:{number} is folded into the box "
                                  "that reads it; add --show-constants to draw it")
            centres.append(node)
            labels.append(f"{node.op_type} {graph}:{number}")
    if opts.top:
        heat = scene.heatmap
        if heat is None:
            raise RenderError("--top needs a colour metric: add --color-by METRIC")
        if opts.top < 1:
            raise RenderError(f"--top {opts.top}: use 1 or more")
        hottest = sorted(heat.values.items(), key=lambda item: (-item[1], item[0]))[: opts.top]
        for rank, ((_, graph, number), value) in enumerate(hottest, 1):
            node = model.graphs[graph].nodes[number]
            centres.append(node)
            labels.append(f"#{rank} {node.op_type} {graph}:{number}  {heat.metric} {format_number(value)}")
        if not hottest:
            raise RenderError(f"--top: no operator has a value of {heat.metric}")
    return pages.focus_book(model, centres, opts.radius, scene.folding.is_drawn, opts.focus_together, labels)


def _produce_all(scene: dot.Scene, source: str, formats: list[str], paths: list[str] | None = None) -> list[bytes]:
    """Every format of one flat picture, from one Graphviz layout; ``paths``, the files they go to, let a
    Markdown summary link to the pictures."""
    laid_out = sorted({f for f in formats if f in graphviz_run.FORMATS} | ({"svg"} if "html" in formats else set()))
    with stage("layout") as facts, waiting("dot"):
        laid = lay_out_flat(scene, source, laid_out) if laid_out else {}
        facts.append(", ".join(f"{fmt} {len(data):,} bytes" for fmt, data in sorted(laid.items())) or "no Graphviz output")
    produced = []
    for k, fmt in enumerate(formats):
        if fmt == "dot":
            produced.append(source.encode("utf-8"))
        elif fmt in laid:
            produced.append(laid[fmt])
        elif fmt == "md":
            from . import report

            where = (paths[k], list(zip(paths, formats))) if paths else (None, None)
            produced.append(report.markdown(scene, *where).encode("utf-8"))
        elif fmt == "html":
            from . import report

            produced.append(report.html(scene, laid["svg"].decode("utf-8")).encode("utf-8"))
        else:
            raise RenderError(f"unknown output format {fmt!r}")
    return produced


def render_bytes(
    model: Model, annotations: Annotations | None = None, options: RenderOptions | None = None, fmt: str = "svg",
) -> bytes:
    """The picture (or report) as bytes in ``fmt``: svg, pdf, png, dot, html or md. For a model drawn as a
    book of pages: the overview (svg, png, dot), or the whole book (pdf, html)."""
    scene = prepare(model, annotations, options or RenderOptions())
    book = plan_book(scene)
    if book is None:
        try:
            return _produce_all(scene, dot.emit(scene), [fmt])[0]
        except graphviz_run.TooBig:
            book = plan_book(scene, force=True)
            assert book is not None
    from . import book_output

    outputs = [(f"model.{fmt}", fmt)]
    return book_output.produce(scene, book, outputs, book_output.links_for(outputs))[0][1]  # type: ignore[return-value]


def render(
    model: Model, annotations: Annotations | None = None, options: RenderOptions | None = None,
    output: str | Path | list[str | Path] | None = None, fmt: str | None = None,
) -> bytes:
    """Render, and write each of ``output`` atomically (format from its extension unless ``fmt``).

    The layout is computed once for all outputs. Every output is produced before any is written, so a
    failure leaves all existing files as they were; an output that is the model or an annotation file read
    is refused. Returns the bytes of the last output (SVG when none).
    A big model (``RenderOptions.collapse``) or a focused view is drawn as an overview with pages: see
    ``renderer.book_output`` for where the pages go.
    """
    from .annotations import input_paths

    options = options or RenderOptions()
    if output is None:
        return render_bytes(model, annotations, options, fmt or "svg")
    scene = prepare(model, annotations, options)
    outputs = output if isinstance(output, list) else [output]
    inputs = input_paths(model, annotations)
    atomic.refuse_inputs(outputs, inputs)  # before the layout, which can take minutes
    formats = [output_format(path, fmt) for path in outputs]
    with stage("plan") as facts:
        book = plan_book(scene)
        facts.append("one picture" if book is None else f"{len(book.pages)} pages")
    if book is None:
        with stage("DOT") as facts:
            source = dot.emit(scene)
            facts.append(count(len(source), "character"))
        try:
            produced = list(zip(outputs, _produce_all(scene, source, formats, [str(p) for p in outputs])))
        except graphviz_run.TooBig as e:
            with stage("plan") as facts:
                book = plan_book(scene, force=True)
                assert book is not None
                facts.append(f"{e}, over one page: {len(book.pages)} pages")
        else:
            _write(produced, inputs)
            return produced[-1][1]
    from . import book_output

    named = [(str(path), f) for path, f in zip(outputs, formats)]
    written = book_output.produce(scene, book, named, book_output.links_for(named))
    _write(written, inputs)
    return next(data for _, data in reversed(written) if isinstance(data, bytes))


def _write(produced: list, inputs: list) -> None:  # type: ignore[type-arg]
    with stage("write") as facts, waiting("writing"):
        atomic.write_all(produced, inputs)
        facts.extend(str(path) for path, _ in produced)


__all__ = ["OUTPUT_FORMATS", "AnnotationSet", "output_format", "prepare", "render", "render_bytes", "to_dot"]
