"""From a loaded model and its annotations to finished files: the heatmaps, the DOT, Graphviz, the reports."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from renderer.colour.heatmap import (
    NO_COLOR,
    DefaultMetric,
    Heatmap,
    build,
    builtin_default,
    default_metric,
    operator_metrics,
)
from renderer.compose.output_plan import OutputPlan, Written, bytes_plan
from renderer.core import escape
from renderer.core.errors import RenderError
from renderer.core.ir import Model, Node
from renderer.core.numbers import count, format_number
from renderer.core.options import RenderOptions
from renderer.core.progress import detail, note, stage, waiting, warn
from renderer.core.records import Annotations, AnnotationSet
from renderer.picture import columns, columns_kept, dot, graphviz_run, layout_cache, length_bound
from renderer.picture.columns import Columns
from renderer.picture.folding import Folding, fold
from renderer.picture.scene import Scene

if TYPE_CHECKING:
    from renderer.picture.pages import Book

def prepare(model: Model, annotations: Annotations | None, options: RenderOptions) -> Scene:
    """Add built-in metrics that are asked for, fit the heatmaps, and return the scene to draw.

    The one place a render's colour metric is decided when the caller named none (``options.color_by`` None):
    ``default_colour``, said on stderr (``say_default``), kept in ``Scene.colour_choice``; so the command line,
    ``renderer.render``, ``show`` and the Sphinx directive draw the same picture from the same inputs."""
    from renderer.metrics import builtin

    annotations = annotations.copy() if annotations is not None else Annotations()  # the caller's stay as given
    folding = fold(model, options.show_constants)
    choice = None
    if options.color_by is None:
        choice = default_colour(model, [annotations], options.show_constants, folding)
        options = replace(options, color_by=choice.metric or NO_COLOR)
        say_default(choice)
    color_by = None if options.color_by == NO_COLOR else options.color_by
    pinning_said = bool(color_by) and _say_what_to_pin(model, annotations, color_by)
    wanted = {n for n in (color_by, options.edge_by) if n} | set(options.show or [])
    with stage("metrics") as facts:  # its passes count operators, tensors and weight values on their own bars
        annotations = builtin.augment(model, annotations, wanted, options)
        facts.append(", ".join(sorted(wanted & {*builtin.OP_METRICS, *builtin.ALL_TENSOR_METRICS})) or "none built in")
    heatmap: Heatmap | None = None
    edge_map: Heatmap | None = None
    if color_by:
        heatmap = build(color_by, annotations, "op", options.cmap, options.norm, options.vmin, options.vmax,
                        options.center, undrawn=folding.hidden)
        if heatmap.empty and not pinning_said:
            warn(f"--color-by {color_by}: {heatmap.empty}; every box is drawn n/a")
        elif choice is None and not heatmap.empty:
            _say_uncounted(annotations, heatmap.metric, folding)
    if options.edge_by:
        edge_map = build(options.edge_by, annotations, "t", options.edge_cmap or "ice", "linear")
    return Scene(model, annotations, options, heatmap, edge_map, builtin.totals(model), folding,
                     colour_choice=choice)


def default_colour(model: Model, runs: list[Annotations], show_constants: bool = False,
                   folding: Folding | None = None) -> DefaultMetric:
    """The metric that colours when the caller names none, and why: one rule for ``prepare`` (one set of
    annotations) and ``batch`` (one per run), and the metric ``diff`` compares by default.

    One set: its default metric (``heatmap.default_metric``: the only numeric operator metric, else a tool's
    main one). Several runs: the only numeric operator metric of them all, else the main metric each of them
    declares. When they bring no numeric operator metric at all, a built-in one (``heatmap.builtin_default``:
    MACs, else weight bytes); when they bring several and none is the default, no metric (plain boxes), and
    ``why`` asks for ``--color-by``. ``folding``: the model's, when the caller has it already."""
    if len(runs) == 1:
        chosen = default_metric(runs[0])
    else:
        chosen = _runs_default(runs)
    if chosen.metric is None and not chosen.why:
        chosen = builtin_default(model, (folding or fold(model, show_constants)).is_drawn)
    return chosen


def _runs_default(runs: list[Annotations]) -> DefaultMetric:
    found = sorted({m for notes in runs for m in operator_metrics(notes)})
    defaults = {default_metric(notes).metric for notes in runs}
    if len(found) == 1:
        return DefaultMetric(found[0], "the only numeric operator metric of the runs")
    if len(defaults) == 1 and None not in defaults:
        return DefaultMetric(defaults.pop(), f"the main metric of each of the {len(runs)} runs")
    if not found:
        return DefaultMetric(None)
    return DefaultMetric(None, f"the runs bring several metrics; choose with --color-by (e.g. --color-by "
                               f"{','.join(found[:3])}); they are: {', '.join(found[:20])}")


def say_default(choice: DefaultMetric | None) -> None:
    """The line saying which metric colours and why: a note, or a ``-v`` detail when the choice is routine."""
    if choice is not None and choice.said:
        (detail if choice.routine else note)(choice.said)


def _say_what_to_pin(model: Model, annotations: Annotations, metric: str) -> bool:
    """One warning when the colour metric needs shapes that free input dims leave unknown; True when said."""
    from renderer.core.records import metric_value
    from renderer.metrics.builtin import pin_advice

    given = {key for key, entry in annotations.ops.items() if metric_value(entry.values.get(metric)) is not None}
    advice = pin_advice(model, metric, given)
    if advice:
        warn(advice)
    return bool(advice)


UNCOUNTED_LISTED = 3


def _say_uncounted(annotations: Annotations, metric: str, folding: Folding) -> None:
    """One warning when drawn operators have no value of the colour metric for want of a formula (``no formula``,
    ``custom op``): their boxes are n/a, so the hottest coloured boxes may not be the costliest operators. Free
    dims have their own line and control flow is counted in its subgraphs, so neither is said here."""
    reasons: dict[str, int] = {}
    for key, entry in annotations.ops.items():
        value = entry.values.get(metric)
        if key in folding.hidden or not isinstance(value, str) or not value.startswith("n/a ("):
            continue
        reason = value[5:-1]
        if reason.startswith(("no formula", "custom op")):
            reasons[reason] = reasons.get(reason, 0) + 1
    if not reasons:
        return
    ranked = sorted(reasons.items(), key=lambda item: (-item[1], item[0]))
    listed = ", ".join(f"{reason} ×{n}" for reason, n in ranked[:UNCOUNTED_LISTED])
    more = f" and {len(ranked) - UNCOUNTED_LISTED} more" if len(ranked) > UNCOUNTED_LISTED else ""
    warn(f"--color-by {metric}: {count(sum(reasons.values()), 'operator')} drawn n/a ({listed}{more}); "
         "the hottest boxes are of the operators that have a value")


def to_dot(model: Model, annotations: Annotations | None = None, options: RenderOptions | None = None) -> str:
    """The DOT source of the annotated picture (of the overview, when the model is drawn as a book of pages)."""
    scene = prepare(model, annotations, options or RenderOptions())
    book = plan_book(scene)
    if book is None:
        return dot.emit(scene)
    from renderer.picture.dot_pages import emit_page

    return emit_page(scene, book, book.pages[0], bytes_plan("svg").links)


def plan_book(scene: Scene, force: bool = False) -> Book | None:
    """The pages to draw: a focused view, an overview with detail pages, or None for one flat picture.
    ``force``: pages, because the flat picture came out too big (``lay_out_flat``)."""
    from renderer.picture import pages

    opts = scene.options
    if opts.focus or opts.top:
        return _focus(scene)
    return pages.plan(scene.model, scene.folding.is_drawn, opts.collapse, force=force)


def flat_limit(scene: Scene) -> float | None:
    """The biggest side a flat picture may have before it is drawn as pages instead (None: no limit, as
    ``--collapse none`` asks for one picture whatever its size)."""
    from renderer.picture.pages import MAX_PAGE_PT

    return MAX_PAGE_PT if scene.options.collapse == "auto" else None


def lay_out_flat(scene: Scene, source: str, formats: list[str],
                 shape: Columns | None = None, paged: bool = True) -> tuple[str, dict[str, bytes]]:
    """The flat picture laid out in ``formats``: once, or again in columns when it comes out a long strip
    (``columns.lay_out``; ``shape``: what the emission of ``source`` recorded). Returns the source drawn too.

    Raises:
        graphviz_run.TooBig: over ``flat_limit`` a side, or (``--collapse auto`` and ``paged``) a strip longer
            than ``columns.PAGED_STRIP_PT`` (``columns.LongStrip``): the caller draws pages instead.
    """
    cache = layout_cache.for_setting(scene.options.layout_cache)
    if cache is not None:  # what keys the cache (``dot -V``, the fonts) is found once, outside the user's budget
        graphviz_run.layout_setting()
    timeout = scene.options.timeout
    deadline = None if timeout is None else time.monotonic() + timeout

    def render(text: str, check: Callable[[bytes], None] | None) -> dict[str, bytes]:
        left = None if deadline is None or timeout is None else max(min(timeout, 0.1), deadline - time.monotonic())
        return graphviz_run.render_formats(text, formats, timeout=left, max_side=flat_limit(scene), check=check,
                                           cache=cache, later=True)

    if shape is None:
        drawn, laid = source, render(source, None)
    else:
        limit = flat_limit(scene)
        if limit is not None:  # drawn as pages for sure: not laid out only to find that out
            length_bound.check_length(source, shape, limit)
        pages_over = columns.PAGED_STRIP_PT if limit is not None and paged else None
        drawn, laid = columns_kept.lay_out(source, shape, lambda again: dot.emit(scene, again), render, cache,
                                           f"flat {limit}", pages_over)
    # the PDF and PNG of the layout kept, not of those tried on the way (``columns``)
    return drawn, graphviz_run.draw_all(laid, deadline, timeout)


def _focus(scene: Scene) -> Book:
    from renderer.core.id_rules import IdIndex, Unresolved
    from renderer.picture import pages

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
                raise RenderError(f"--focus {escape.clean(ident, 80)}: operator {graph}:{number} is folded into "
                                  "the box that reads it; add --show-constants to draw it")
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


def _produce_all(scene: Scene, source: str, plan: OutputPlan, shape: Columns | None = None,
                 paged: bool = True) -> list[bytes]:
    """Every output of ``plan`` as one flat picture, from one Graphviz layout (two or three when it is laid
    out again in columns: ``lay_out_flat``, ``paged`` passed on); a Markdown summary links to the plan's
    pictures."""
    formats = plan.formats
    laid_out = sorted({f for f in formats if f in graphviz_run.FORMATS} | ({"svg"} if "html" in formats else set()))
    cache = layout_cache.for_setting(scene.options.layout_cache)
    before = cache.counts() if cache is not None else (0, 0)
    with stage("layout") as facts, waiting("dot"):
        source, laid = lay_out_flat(scene, source, laid_out, shape, paged) if laid_out else (source, {})
        sizes = ", ".join(f"{fmt} {len(data):,} bytes" for fmt, data in sorted(laid.items()))
        facts.append(sizes or "no Graphviz output")
        facts += [cache.said(before)] if cache is not None and laid_out else []
    produced = []
    for k, fmt in enumerate(formats):
        if fmt == "dot":
            produced.append(source.encode("utf-8"))
        elif fmt in laid:
            produced.append(laid[fmt])
        elif fmt == "md":
            from renderer.reports import report

            pictures = plan.pictures_for(plan.outputs[k].path)
            produced.append(report.markdown(scene, pictures).encode("utf-8"))
        elif fmt == "html":
            from renderer.reports import report

            produced.append(report.html(scene, laid["svg"].decode("utf-8")).encode("utf-8"))
        else:
            raise RenderError(f"unknown output format {fmt!r}")
    return produced


@dataclass(slots=True)
class Drawing:
    """What the composer made of one scene.

    Attributes:
        scene: what was drawn (its options with the colour metric decided, ``Scene.colour_choice``).
        book: the pages planned, or None for one flat picture.
        produced: the plan's files, not yet written (``OutputPlan.write``): per output, in order, (path, bytes),
            and for a book drawn as page files also (pages folder, {page file name: bytes}) after it.
    """

    scene: Scene
    book: Book | None
    produced: Written = field(default_factory=list)

    @property
    def pages(self) -> int:
        """How many pictures the drawing has: 1 for one flat picture, else the overview and its pages."""
        return 1 if self.book is None else len(self.book.pages)


def compose(model: Model, annotations: Annotations | None, options: RenderOptions | None,
            plan: OutputPlan) -> Drawing:
    """The one composer of a picture: model + annotations + options → scene (``prepare``) → one flat picture
    or a book of pages → every file of ``plan`` (``draw``). ``render``, ``render_bytes``, ``show``, the Sphinx
    directive and ``batch`` draw through it. Nothing is written; results the metrics take long to make are kept
    where the layouts are (``files.disk_cache``)."""
    from renderer.files import disk_cache

    options = options or RenderOptions()
    with disk_cache.using(options.layout_cache):
        return draw(prepare(model, annotations, options), plan)


def draw(scene: Scene, plan: OutputPlan) -> Drawing:
    """``scene`` as every file of ``plan``: one flat picture from one Graphviz layout; or a book of pages
    (``book_output``) when the model is planned as one (its size, ``--collapse DEPTH``, a focused view) or when
    the flat picture comes out over ``flat_limit`` a side (``graphviz_run.TooBig``), or a long strip whose book
    has more than one page besides its overview (``columns.LongStrip``, ``_in_columns``)."""
    with stage("plan") as facts:
        book = plan_book(scene)
        facts.append("one picture" if book is None else f"{len(book.pages)} pages")
    if book is None:
        with stage("DOT") as facts:
            shape = Columns()
            source = dot.emit(scene, shape)
            facts.append(count(len(source), "character"))
        try:
            produced: Written = [(o.path, data) for o, data in zip(plan.outputs,
                                                                    _produce_all(scene, source, plan, shape))]
            return Drawing(scene, None, produced)
        except graphviz_run.TooBig as e:
            with stage("plan") as facts:
                book = plan_book(scene, force=True)
                assert book is not None
                facts.append(f"{e}, over one page: {len(book.pages)} pages")
            if isinstance(e, columns.LongStrip) and len(book.pages) == 2:  # a book of 1 is a picture of its own
                produced = _in_columns(scene, source, plan, shape)
                if produced is not None:
                    return Drawing(scene, None, produced)
    from renderer.compose import book_output

    return Drawing(scene, book, book_output.produce(scene, book, plan))


def _in_columns(scene: Scene, source: str, plan: OutputPlan, shape: Columns) -> Written | None:
    """A long strip whose book would be an overview of one page, drawn as one picture in columns instead (the
    overview would hold a few operators and one box: a click on the way to the rest); None when that picture
    is over ``flat_limit`` a side after all."""
    with stage("plan") as facts:
        facts.append("an overview of one page says nothing: one picture in columns instead")
    try:
        return [(o.path, data) for o, data in zip(plan.outputs, _produce_all(scene, source, plan, shape, False))]
    except graphviz_run.TooBig:
        return None


def render_bytes(
    model: Model, annotations: Annotations | None = None, options: RenderOptions | None = None, fmt: str = "svg",
) -> bytes:
    """The picture (or report) as bytes in ``fmt``: svg, pdf, png, dot, html or md. For a model drawn as a
    book of pages: the overview (svg, png, dot), or the whole book (pdf, html)."""
    return compose(model, annotations, options, bytes_plan(fmt)).produced[0][1]  # type: ignore[return-value]


def render(
    model: Model, annotations: Annotations | None = None, options: RenderOptions | None = None,
    output: str | Path | list[str | Path] | OutputPlan | None = None, fmt: str | None = None,
) -> bytes:
    """Render, and write each of ``output`` atomically (format from its extension unless ``fmt``).

    ``output`` is a file, a list of files, or a command's ``OutputPlan``. The layout is computed once for all
    outputs. Every output is produced before any is written, so a failure leaves all existing files as they
    were; an output that is the model or an annotation file read is refused. Returns the bytes of the last
    output (SVG when none).
    A big model (``RenderOptions.collapse``) or a focused view is drawn as an overview with pages: see
    ``renderer.compose.book_output`` for where the pages go.
    """
    from renderer.annotations.registry import input_paths

    if output is None:
        return render_bytes(model, annotations, options, fmt or "svg")
    if not isinstance(output, OutputPlan):
        output = OutputPlan.build(output if isinstance(output, list) else [output], fmt)
    plan = output.with_inputs(input_paths(model, annotations))  # before the layout, which can take minutes
    written = compose(model, annotations, options, plan).produced
    plan.write(written)
    return next(data for _, data in reversed(written) if isinstance(data, bytes))


def produce(model: Model, annotations: Annotations | None, options: RenderOptions, plan: OutputPlan) -> Written:
    """Every file of ``plan`` (pictures, pages folders, reports), produced, not yet written (``plan.write``)."""
    return compose(model, annotations, options, plan).produced


__all__ = ["AnnotationSet", "Drawing", "compose", "default_colour", "draw", "prepare", "produce", "render",
           "render_bytes", "say_default", "to_dot"]
