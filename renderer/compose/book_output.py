"""Writing a book (``renderer.picture.pages``): every page laid out once, in parallel over the cores, then written as
the formats asked for.

    ``-o m.svg``   the overview in ``m.svg``, the pages in ``m.svg.pages/page-NNN.svg`` (relative links; the
                   names and links are the output plan's: ``renderer.compose.output_plan``)
    ``-o m.png``   likewise (``m.png.pages/``); ``-o m.dot`` the DOT sources likewise
    ``-o m.pdf``   one PDF, the overview first, a page each
    ``-o m.html``  one self-contained file holding every page, links turned into in-page anchors
    ``-o m.md``    the summary of the overview
"""

from __future__ import annotations

import contextvars
import os
import re
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from pathlib import Path

from renderer.compose.output_plan import OutputPlan, Written
from renderer.core import progress
from renderer.core.errors import RenderError
from renderer.core.numbers import count
from renderer.files.page_names import Links
from renderer.picture import columns, columns_kept, graphviz_run, layout_cache
from renderer.picture.columns import Columns
from renderer.picture.dot_pages import emit_page
from renderer.picture.layout_cache import LayoutCache
from renderer.picture.pages import MAX_PAGE_PT, PACK_KIND, PAGE_OPS, Book, Page, pack_budget_key, plan
from renderer.picture.scene import Scene

GRAPHVIZ_FORMATS = ("svg", "png", "pdf")
REPLANS = 2
"""Times a book is planned again because pages came out over the size limit; then it is drawn as it is."""
MIN_PAGE_OPS = 8
_ROWS = re.compile(r"\{\s*rank=same[^{}]*\}")


def produce(scene: Scene, book: Book, outputs: OutputPlan) -> Written:
    """(path, bytes) for single-file outputs, (folder path, {file name: bytes}) for page folders.

    A page laid out bigger than ``pages.MAX_PAGE_PT`` a side makes the book planned again with fewer operators
    in full on that page (``book`` is updated in place; a focused view is cut into smaller parts), at most
    ``REPLANS`` times."""
    formats = sorted({fmt for fmt in outputs.formats if fmt in GRAPHVIZ_FORMATS} | (
        {"svg"} if "html" in outputs.formats else set()))
    links = outputs.links
    budgets: dict[str, int] = {}
    for attempt in range(REPLANS + 1):
        shapes = [Columns() for _ in book.pages]
        sources: list[str] = []
        spent: list[tuple[float, int]] = []
        limit = MAX_PAGE_PT if attempt < REPLANS else None
        cache = layout_cache.for_setting(scene.options.layout_cache)
        before = cache.counts() if cache is not None else (0, 0)
        try:
            with progress.stage("layout") as facts:
                laid = lay_out_pages(book, sources, formats, scene.options.timeout, limit, shapes,
                                     lambda i, shape: emit_page(scene, book, book.pages[i], links, shape), cache,
                                     _timed(lambda i: emit_page(scene, book, book.pages[i], links, shapes[i]), spent))
                progress.detail(f"DOT {sum(t for t, _ in spent):.2f} s: {count(len(spent), 'page')}, "
                                f"{count(sum(n for _, n in spent), 'character')}, overlapping the layout")
                facts.append(count(len(laid), "page"))
                facts += [cache.said(before)] if cache is not None else []
            break
        except _PagesTooBig as e:
            _replan(scene, book, e.pages, e.sides, budgets)
    produced: Written = []
    for output in outputs.outputs:
        fmt, target = output.format, Path(output.path)
        if output.paged:
            produced += output.book_files([laid[i][fmt] if fmt != "dot" else sources[i].encode("utf-8")
                                           for i in range(len(book.pages))])
        elif fmt == "pdf":
            produced.append((target, _merge_pdfs([laid[i]["pdf"] for i in range(len(book.pages))])))
        elif fmt == "html":
            from renderer.reports import report

            svgs = [_anchored(laid[i]["svg"].decode("utf-8"), book, links) for i in range(len(book.pages))]
            produced.append((target, report.book_html(scene, book, svgs).encode("utf-8")))
        elif fmt == "md":
            from renderer.reports import report

            produced.append((target, report.markdown(scene, outputs.pictures_for(output.path)).encode("utf-8")))
        else:
            raise RenderError(f"unknown output format {fmt!r}")
    return produced


def _timed(emit: Callable[[int], str], spent: list[tuple[float, int]]) -> Callable[[int], str]:
    """``emit``, the seconds and characters of each call added to ``spent``."""

    def timed(index: int) -> str:
        started = time.perf_counter()
        source = emit(index)
        spent.append((time.perf_counter() - started, len(source)))
        return source

    return timed


class _PagesTooBig(Exception):
    def __init__(self, pages: list[Page], sides: list[float]) -> None:
        super().__init__(f"{len(pages)} pages over the size limit")
        self.pages, self.sides = pages, sides
        """The pages, and the longer side of each as laid out (points)."""


def _replan(scene: Scene, book: Book, too_big: list[Page], sides: list[float], budgets: dict[str, int]) -> None:
    """Plan ``book`` again, with half as many operators in full on each page of ``too_big`` (a focused view:
    its parts half as big)."""
    if book.refit is not None:
        again = book.refit(list(zip(too_big, sides)))
        book.pages, book.page_of_op, book.page_of_group = again.pages, again.page_of_op, again.page_of_group
        return
    for page in too_big:
        key = pack_budget_key(page.group.parent) if page.group.kind == PACK_KIND else page.group.path
        budgets[key] = max(MIN_PAGE_OPS, budgets.get(key, PAGE_OPS) // 2)
    again = plan(scene.model, scene.folding.is_drawn, scene.options.collapse, force=True, budgets=budgets)
    assert again is not None
    book.pages, book.page_of_op, book.page_of_group = again.pages, again.page_of_op, again.page_of_group


def lay_out_pages(book: Book, sources: list[str], formats: list[str], timeout: float | None,
                  max_side: float | None = None, shapes: list[Columns] | None = None,
                  reshape: Callable[[int, Columns], str] | None = None, cache: LayoutCache | None = None,
                  emit: Callable[[int], str] | None = None) -> list[dict[str, bytes]]:
    """Each page's DOT (``sources``, in book order) laid out once and rendered to ``formats``; pages in
    parallel, a progress bar on a terminal; a page past ``timeout`` is named in the error. With ``emit`` (page
    index → its DOT), ``sources`` starts empty and is filled here in book order, each page's layout started as
    soon as its DOT is made (the next pages' emission overlaps it). With ``shapes`` (what each page's emission
    recorded) and ``reshape`` (page index, columns → its DOT again), a page laid out as a long strip is laid out
    again in columns (``columns.lay_out``), its source in ``sources`` replaced. ``cache``: where layouts are
    looked up and kept (``layout_cache``).

    Raises:
        _PagesTooBig: detail pages (and a focused view's) over ``max_side`` a side (before PNG or PDF).
    """
    if not formats:
        return [{} for _ in _started(sources, emit, len(book.pages))]
    deadline = time.monotonic() + timeout if timeout else None
    workers = max(1, min(len(book.pages), os.cpu_count() or 1))

    def one(index: int) -> dict[str, bytes]:
        again = None if reshape is None else lambda shape: reshape(index, shape)
        try:
            with progress.stage(f"layout page {book.pages[index].index}") as facts:
                sources[index], laid = _lay_out_page(sources[index], formats, deadline,
                                                     max_side if index or book.kind == "focus" else None,
                                                     shapes[index] if shapes else None, again, cache)
                facts.append(f"{book.pages[index].title}, {count(len(sources[index]), 'character')} of DOT")
            return laid
        except graphviz_run.TooBig as e:
            sides[index] = max(e.width, e.height)
            return {}
        except graphviz_run.LayoutTimeout:
            raise _late(book.pages[index], timeout) from None

    results: list[dict[str, bytes]] = [{} for _ in book.pages]
    sides: dict[int, float] = {}
    # pages that differ only in names (a model's repeated blocks) are laid out once: ``graphviz_run.sharing``
    with graphviz_run.sharing(), ThreadPoolExecutor(max_workers=workers) as pool, \
            progress.bar(len(book.pages), "layout", "page") as bar:
        futures: dict[Future[dict[str, bytes]], int] = {}
        try:
            # each page in a copy of this context: what ``files.disk_cache.using`` set holds in the workers too
            for i in _started(sources, emit, len(book.pages)):
                futures[pool.submit(contextvars.copy_context().run, one, i)] = i
            for future in as_completed(futures):
                results[futures[future]] = future.result()
                bar.update(1)
            too_big = [i for i, laid in enumerate(results) if not laid]
            if too_big:
                raise _PagesTooBig([book.pages[i] for i in too_big], [sides[i] for i in too_big])
            _draw_pages(pool, book, results, deadline, timeout)
        except BaseException:
            for future in futures:
                future.cancel()
            raise
    return results


def _draw_pages(pool: ThreadPoolExecutor, book: Book, results: list[dict[str, bytes]], deadline: float | None,
                timeout: float | None) -> None:
    """The PDFs and PNGs of ``results`` (``graphviz_run.Undrawn``) drawn, in ``pool``: only the layout each page kept
    in the end is drawn (``columns`` may try one and keep an earlier one). A PDF is drawn alone; PNGs in runs of
    ``graphviz_run.PNGS_A_RUN`` pages in book order (``graphviz_run.draw_pngs``); the biggest runs first."""
    Drawing = tuple[int, str, graphviz_run.Undrawn]
    runs: list[list[Drawing]] = []
    together: dict[object, list[Drawing]] = {}
    for index, laid in enumerate(results):
        for fmt, data in laid.items():
            if isinstance(data, graphviz_run.Undrawn):
                kind = graphviz_run.png_run(data)
                if kind is None:
                    runs.append([(index, fmt, data)])
                else:
                    together.setdefault(kind, []).append((index, fmt, data))
    step = graphviz_run.PNGS_A_RUN
    runs += [pngs[at:at + step] for pngs in together.values() for at in range(0, len(pngs), step)]
    runs.sort(key=lambda run: -sum(len(data) for _, _, data in run))

    def draw(run: list[Drawing]) -> list[bytes]:
        undrawn = [data for _, _, data in run]
        try:
            if graphviz_run.png_run(undrawn[0]) is None:
                return [graphviz_run.draw(undrawn[0], deadline, timeout)]
            return graphviz_run.draw_pngs(undrawn, deadline, timeout)
        except graphviz_run.LayoutTimeout:
            raise _late(book.pages[run[0][0]], timeout) from None

    futures = {pool.submit(contextvars.copy_context().run, draw, run): run for run in runs}
    try:
        for future in as_completed(futures):
            for (index, fmt, _), data in zip(futures[future], future.result()):
                results[index][fmt] = data
    except BaseException:
        for future in futures:
            future.cancel()
        raise


def _late(page: Page, timeout: float | None) -> RenderError:
    return RenderError(f"Graphviz did not finish page {page.index} ({page.title}) within the {timeout:g} s of "
                       "--timeout; raise --timeout, or draw less per page with --collapse DEPTH or --focus ID")


def _started(sources: list[str], emit: Callable[[int], str] | None, pages: int) -> Iterator[int]:
    """The indices of the ``pages`` in the order their layouts start: as ``emit`` fills ``sources``, else the
    biggest pages first (one long page does not start last)."""
    if emit is None:
        yield from sorted(range(len(sources)), key=lambda i: -len(sources[i]))
        return
    for i in range(pages):
        sources.append(emit(i))
        yield i


def _lay_out_page(source: str, formats: list[str], deadline: float | None, max_side: float | None,
                  shape: Columns | None, again: Callable[[Columns], str] | None,
                  cache: LayoutCache | None = None) -> tuple[str, dict[str, bytes]]:
    """One page laid out (``_render_page``) by ``deadline``; in columns when it comes out a long strip and
    ``again`` emits it anew (``columns.lay_out``; what it decides kept in ``cache``, ``columns_kept``). Returns
    the source drawn and its formats."""

    def render(text: str, check: Callable[[bytes], None] | None) -> dict[str, bytes]:
        left = None if deadline is None else max(0.1, deadline - time.monotonic())
        return _render_page(text, formats, left, max_side, check, cache)

    if shape is None or again is None:
        return source, render(source, None)
    return columns_kept.lay_out(source, shape, again, render, cache, f"page {max_side}")


def _render_page(source: str, formats: list[str], timeout: float | None, max_side: float | None,
                 check: Callable[[bytes], None] | None = None, cache: LayoutCache | None = None) -> dict[str, bytes]:
    """One page's DOT laid out and rendered to ``formats``, its PDF and PNG left undrawn (``graphviz_run.Undrawn``);
    again without the overview's rows when dot fails on them (checked the same: an overview that comes out a strip
    then is drawn in columns)."""
    try:
        return graphviz_run.render_formats(source, formats, timeout=timeout, max_side=max_side, palette_png=True,
                                           check=check, cache=cache, later=True)
    except (graphviz_run.LayoutTimeout, graphviz_run.TooBig, columns.Reshape):
        raise
    except RenderError:
        if not _ROWS.search(source):
            raise
        # dot cannot always lay out the overview's rows (rank=same): trouble in init_rank when one reaches into
        # a cluster, a spline it cannot route (Pshortestpath) in a page of operators
        return graphviz_run.render_formats(_ROWS.sub("", source), formats, timeout=timeout, palette_png=True,
                                           check=check, cache=cache, later=True)


def _merge_pdfs(pages: list[bytes]) -> bytes:
    """One PDF of the pages in order, with fixed metadata so the same input gives the same bytes."""
    import io

    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter()
    for data in pages:
        for page in PdfReader(io.BytesIO(data)).pages:
            writer.add_page(page)
    writer.add_metadata({"/Producer": "annograph", "/CreationDate": "D:19800101000000Z"})
    writer._ID = None  # type: ignore[attr-defined]  # no random file identifier
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()


_HREF = re.compile(r'(xlink:href|href)="([^"]*)"')


def _anchored(svg: str, book: Book, links: Links) -> str:
    """The page's SVG with links to page files turned into anchors within one HTML file."""
    files = {_basename(links.file(page)): page for page in book.pages}

    def swap(match: re.Match[str]) -> str:
        path, _, anchor = match.group(2).partition("#")
        page = files.get(_basename(path))
        if page is None and path:
            return match.group(0)
        return f'{match.group(1)}="#{anchor or (page.stem if page else "")}"'

    return _HREF.sub(swap, svg)


def _basename(path: str) -> str:
    from urllib.parse import unquote

    return unquote(path).rsplit("/", 1)[-1]


__all__ = ["Page", "lay_out_pages", "produce"]
