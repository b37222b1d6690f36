"""Runs the Graphviz ``dot`` program. The only module that starts a subprocess."""

from __future__ import annotations

import contextlib
import contextvars
import functools
import hashlib
import math
import os
import re
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from typing import TYPE_CHECKING

from renderer.core.errors import GraphvizNotFound, RenderError
from renderer.core.numbers import format_number
from renderer.picture import dot_names, skeleton

if TYPE_CHECKING:
    from renderer.picture.layout_cache import LayoutCache


class LayoutTimeout(RenderError):
    """Graphviz ran past its time."""


class TooBig(RenderError):
    """A layout came out bigger than the caller allows a side (raised before any PNG or PDF is drawn)."""

    def __init__(self, width: float, height: float) -> None:
        super().__init__(f"the picture is {width:,.0f} × {height:,.0f} pt")
        self.width, self.height = width, height

FORMATS = frozenset({"svg", "pdf", "png"})
MAX_PDF_INCHES = 199
PNG_DPI = 110
MAX_PNG_PIXELS = 32000

# Fixed so PDF output carries the same creation date on every run (cairo honours SOURCE_DATE_EPOCH).
SOURCE_DATE_EPOCH = "315532800"
FIXED_PDF_DATE = b"19800101000000"


def dot_program() -> str:
    path = shutil.which("dot")
    if path is None:
        raise GraphvizNotFound("dot")
    return path


@functools.lru_cache(maxsize=1)
def graphviz_version() -> str:
    """What ``dot -V`` says (the layout cache keys layouts by it). Its plugins are not loaded (``GVBINDIR`` names
    no folder): the line is the library's own version, the same with them or without, and loading them was nine
    tenths of the run (5 ms CPU of every render)."""
    try:
        with stopping_kills_children():  # a stopped annograph leaves no dot behind, this one included
            done = subprocess.run([dot_program(), "-V"], capture_output=True, timeout=30, check=False,
                                  env={**os.environ, "GVBINDIR": os.devnull})
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    return (done.stderr + done.stdout).decode("utf-8", "replace").strip()


_SETTING: list[str] = []
_SETTING_LOCK = threading.Lock()


def layout_setting() -> str:
    """What decides a layout besides its DOT, by which the layout cache keys it: ``dot -V``, and the fonts
    fontconfig offers (Graphviz measures text in the fonts it finds: a font installed or removed, or another
    ``FONTCONFIG_FILE``, lays out anew). Found once a process, under a lock: the pages laid out at once would
    each run ``fc-list`` otherwise."""
    with _SETTING_LOCK:
        if not _SETTING:
            _SETTING.append(f"{graphviz_version()}\nfonts {_fonts()}")
        return _SETTING[0]


def _fonts() -> str:
    """SHA-256 of the fonts ``fc-list`` lists (file and version, sorted); ``none`` without fontconfig's tools."""
    program = shutil.which("fc-list")
    if program is None:
        return "none"
    try:
        with stopping_kills_children():
            done = subprocess.run([program, "-f", "%{file} %{fontversion}\n"], capture_output=True, timeout=30,
                                  check=False)
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    return hashlib.sha256(b"".join(sorted(done.stdout.splitlines(keepends=True)))).hexdigest()


def render_formats(source: str, formats: list[str], timeout: float | None = None,
                   max_side: float | None = None, palette_png: bool = False,
                   check: Callable[[bytes], None] | None = None, cache: LayoutCache | None = None,
                   later: bool = False) -> dict[str, bytes]:
    """``source`` laid out once and rendered to each of ``formats`` (svg, png, pdf), in two steps that every
    render takes, so that a layout found in ``cache`` draws the very bytes a fresh one does:

    1. the layout and its drawing: ``dot -Tdot -Tsvg`` of the source's skeleton (``skeleton``: colours,
       tooltips, links and the digits of labels stood in for), or the same found in ``cache``
       (``layout_cache``), keyed by it;
    2. the real text put back: into that SVG by ``Skeleton.fill_svg``, in Python, as Graphviz writes it (an
       SVG alone runs no Graphviz when the layout is cached); into the laid-out DOT, from which ``neato -n2``,
       which keeps every position, draws the PDF and the PNG, each in a run of its own.
    A source the skeleton cannot stand in for is laid out and drawn as it is (``_render_direct``).

    ``palette_png``: PNG with at most 256 colours, written by gd from cairo's drawing (``-Tpng:cairo:gd``): 3×
    less CPU than cairo's own PNG writer, whose filtering and compression take two thirds of a page's time
    (measured with perf on a 1,293 × 3,812 px page: 0.08 s against 0.25 s); gd's palette is then snapped to
    the colours the source names (``snap_palette``), so fills and the white ground keep their exact colours.

    ``check``: given the layout in ``-Tplain`` form (every node's place and size), before anything is drawn;
    it may raise to refuse the layout (``renderer.picture.columns`` asks for a page in columns).

    ``later``: the PDF and the PNG are returned undrawn (``Undrawn``, for ``draw_all``): ``columns`` may try a
    layout, accept it and still draw an earlier one (a mostly empty page), whose drawing is then all that counts.

    Raises:
        TooBig: the layout, padding included, is over ``max_side`` points wide or high.
    """
    for fmt in formats:
        if fmt not in FORMATS:
            raise RenderError(f"unknown Graphviz output format {fmt!r} (use one of {', '.join(sorted(FORMATS))})")
    deadline = None if timeout is None else time.monotonic() + timeout
    try:
        frame = skeleton.kept(source)
    except skeleton.Unskeletal:
        return _render_direct(source, formats, timeout, max_side, palette_png, check)
    names, positioned, places, drawn = _positions(frame.text, check is not None, deadline, timeout, cache)
    width, height = laid_out_size(positioned)
    if max_side is not None and max(width, height) > max_side:
        raise TooBig(width, height)
    if check is not None:
        check(places)
    try:
        result = {"svg": frame.fill_svg(names.back(drawn, svg=True).decode("utf-8")).encode("utf-8")} \
            if "svg" in formats else {}
        runs = _drawing_runs(formats)
        real = frame.restore(names.back(positioned).decode("utf-8")).encode("utf-8") if runs else b""
    except (skeleton.Unskeletal, UnicodeDecodeError):
        return _render_direct(source, formats, timeout, max_side, palette_png, check)
    if runs:
        real = _with_corners(real, positioned, frame.prefix)
    for fmt in runs:
        result[fmt] = Undrawn(real, fmt, max_side, palette_png, source)
    ordered = {fmt: result[fmt] for fmt in formats}
    return ordered if later else draw_all(ordered, deadline, timeout)


class Undrawn(bytes):
    """A PDF or PNG of ``render_formats`` not drawn yet: the laid-out graph with its real text (these bytes), and
    how ``neato -n2`` is to draw it."""

    fmt: str
    max_side: float | None
    palette: bool
    source: str

    def __new__(cls, real: bytes, fmt: str, max_side: float | None, palette: bool, source: str) -> Undrawn:
        made = super().__new__(cls, real)
        made.fmt, made.max_side, made.palette, made.source = fmt, max_side, palette, source
        return made


def draw_all(laid: dict[str, bytes], deadline: float | None, timeout: float | None) -> dict[str, bytes]:
    """``laid`` (formats of ``render_formats``) with each ``Undrawn`` one drawn, in a ``neato -n2`` run of its own,
    by ``deadline`` (``timeout``: the whole budget, named if it runs out)."""
    return {fmt: draw(data, deadline, timeout) if isinstance(data, Undrawn) else data for fmt, data in laid.items()}


def draw(undrawn: Undrawn, deadline: float | None, timeout: float | None) -> bytes:
    """One ``Undrawn`` drawn: the PDF with its dates pinned, a palette PNG snapped to its source's colours."""
    return _finished(undrawn, _draw(bytes(undrawn), undrawn.fmt, deadline, timeout, undrawn.max_side,
                                    undrawn.palette))


def _finished(undrawn: Undrawn, data: bytes) -> bytes:
    if undrawn.fmt == "png" and undrawn.palette:
        return snap_palette(data, undrawn.source)
    return _fixed_pdf_dates(data) if undrawn.fmt == "pdf" else data


PNGS_A_RUN = 8
"""PNGs that ``draw_pngs`` draws in one ``neato -n2`` run at most (a book's pages: a few runs share the cores)."""


def png_run(undrawn: Undrawn) -> tuple[object, ...] | None:
    """What an ``Undrawn`` shares with those ``draw_pngs`` may draw in the same run (its command line); none for a
    PDF, drawn alone: the order in which cairo writes a page's clusters and the glyphs of its fonts follows the
    addresses of their names in the process (cgraph keeps subgraphs in that order), which the graphs drawn before
    it move, so a PDF drawn after others comes out other bytes than alone (36 of bert-3.6k's 41 pages did, the
    same picture); a PNG's pixels do not depend on that order (its clusters do not overlap)."""
    return None if undrawn.fmt != "png" else (undrawn.max_side, undrawn.palette)


def draw_pngs(undrawn: list[Undrawn], deadline: float | None, timeout: float | None) -> list[bytes]:
    """PNGs of one ``png_run`` drawn by one ``neato -n2`` run, the graphs one after another on its input, the PNGs
    one after another on its output: the same bytes as each drawn alone (``draw``; every page of the int8 TTS,
    bert-3.6k, light_resnet50 and the bert samples), for a fifth less of Graphviz's CPU (the int8 TTS's 47 pages:
    11.3 -> 9.1 s in runs of 8): the program's start-up (linking cairo, pango and gd, reading fontconfig's
    setup: ~13 ms), the fonts' loading and hinting and the first touch of the image buffers are paid once a run."""
    if len(undrawn) == 1:
        return [draw(undrawn[0], deadline, timeout)]
    first = undrawn[0]
    if any(png_run(one) != png_run(first) or png_run(one) is None for one in undrawn):
        raise ValueError("draw_pngs draws PNGs of one png_run")
    data = _draw(b"\n".join(undrawn), "png", deadline, timeout, first.max_side, first.palette)
    pngs = _pngs(data)
    if len(pngs) != len(undrawn):
        raise RenderError(f"Graphviz drew {len(pngs)} PNGs of {len(undrawn)} graphs")
    return [_finished(one, png) for one, png in zip(undrawn, pngs)]


def _pngs(data: bytes) -> list[bytes]:
    """The PNG files written one after another in ``data``, each up to its ``IEND`` chunk."""
    found, start = [], 0
    while data.startswith(b"\x89PNG\r\n\x1a\n", start):
        end = next((at + 12 + length for at, length, kind in _chunks(data, start) if kind == b"IEND"), None)
        if end is None:
            break
        found.append(data[start:end])
        start = end
    return found


def _positions(text: str, places: bool, deadline: float | None, timeout: float | None,
               cache: LayoutCache | None) -> tuple[dot_names.Named, bytes, bytes, bytes]:
    """The layout of ``text`` (``-Tdot``), its ``-Tplain`` when ``places`` (else empty) and its drawing
    (``-Tsvg``). While ``sharing``, those of ``text`` with its names stood in for (``dot_names``), laid out once
    for every page of that text (pages of one structure), the names put back into the plain; the ``-Tdot`` and
    the SVG are left with the stand-ins (``Named.back`` puts them back: a layout the check refuses is never
    drawn) and returned with them."""
    shared = _SHARING.get()
    if shared is None:
        return dot_names.Named(text, ""), *_canonical_positions(text, places, deadline, timeout, cache)
    names = dot_names.named(text) if cache is None else cache.named(text)
    placed = None if places else shared.made_with_places(names.text)
    if placed is not None:  # a page kept as first laid out: the layout made to measure it is the same
        if cache is not None:  # kept as its own entry too, for a re-render that asks for it alone
            cache.put(cache.key(names.text, False, layout_setting()), placed[0], b"", placed[2])
        return names, placed[0], b"", placed[2]
    laid = shared.get((names.text, places), lambda: _canonical_positions(names.text, places, deadline, timeout,
                                                                        cache))
    return names, laid[0], names.back(laid[1]), laid[2]


class _Shared:
    """Layouts made while ``sharing``: each text laid out once, a page of the same text waiting for it."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.made: dict[tuple[str, bool], Future[tuple[bytes, bytes, bytes]]] = {}

    def made_with_places(self, text: str) -> tuple[bytes, bytes, bytes] | None:
        """The layout of ``text`` made (or being made) with its ``-Tplain``, if one is; none if it failed."""
        with self.lock:
            future = self.made.get((text, True))
        if future is None:
            return None
        try:
            return future.result()
        except Exception:  # noqa: BLE001 (that page's own deadline or error: this page lays out for itself)
            return None

    def get(self, key: tuple[str, bool], make: Callable[[], tuple[bytes, bytes, bytes]]
            ) -> tuple[bytes, bytes, bytes]:
        with self.lock:
            future = self.made.get(key)
            mine = future is None
            if future is None:
                future = self.made[key] = Future()
        if not mine:
            try:
                return future.result()
            except Exception:  # noqa: BLE001 (its page's own deadline or error: this page tries for itself)
                return make()
        try:
            future.set_result(make())
        except BaseException as e:
            future.set_exception(e)
            with self.lock:
                self.made.pop(key, None)
            raise
        return future.result()


_SHARING: contextvars.ContextVar[_Shared | None] = contextvars.ContextVar("annograph_sharing", default=None)


@contextlib.contextmanager
def sharing() -> Iterator[None]:
    """While inside: pages whose texts are the same once their names are stood in for (``dot_names``) are laid
    out once, in this context and the copies made of it (a book's pages)."""
    token = _SHARING.set(_Shared())
    try:
        yield
    finally:
        _SHARING.reset(token)


def _canonical_positions(text: str, places: bool, deadline: float | None, timeout: float | None,
                         cache: LayoutCache | None) -> tuple[bytes, bytes, bytes]:
    """``_positions`` of ``text`` as it is: from ``cache``, else from one ``dot`` run, then kept there."""
    key = cache.key(text, places, layout_setting()) if cache is not None else ""
    found = cache.get(key) if cache is not None else None
    if found is not None and len(found) == 3:
        return found[0], found[1], found[2]
    laid, positioned = _lay_out(text, ["svg"] + (["plain"] if places else []), deadline, timeout)
    if cache is not None:
        cache.put(key, positioned, laid.get("plain", b""), laid["svg"])
    return positioned, laid.get("plain", b""), laid["svg"]


def _with_corners(real: bytes, positioned: bytes, prefix: str) -> bytes:
    """``real`` with an invisible point at two corners of the layout's bounding box: ``neato -n2`` draws within
    the box of what it draws (a layout's empty band, left by invisible column stubs, would be cut off), and the
    PDF and PNG must have the SVG's size. ``prefix`` makes names the source never holds."""
    box = _BOUNDING_BOX.search(positioned)
    end = real.rfind(b"}")
    if box is None or end < 0:
        return real
    x0, y0, x1, y1 = (v.decode() for v in box.groups())
    corners = "".join(f'\t{prefix}corner{i} [label="" pos="{x},{y}" shape=point style=invis width=0 height=0]\n'
                      for i, (x, y) in enumerate(((x0, y0), (x1, y1))))
    return real[:end] + corners.encode() + real[end:]


def _drawing_runs(formats: list[str]) -> list[str]:
    """The formats other than SVG (made from the skeleton's own drawing), each drawn by a ``neato -n2`` run of its
    own: PDF and PNG each alone (the PDF's size cap and the PNG's ``dpi`` are graph attributes of the run)."""
    return [fmt for fmt in ("pdf", "png") if fmt in formats]


def _draw(positioned: bytes, fmt: str, deadline: float | None, timeout: float | None,
          max_side: float | None, palette: bool) -> bytes:
    """One ``neato -n2`` run drawing ``fmt`` from the laid-out graph (a PNG capped at ``max_side``)."""
    return _run([_program("neato"), "-n2"] + _format_args(fmt, palette=palette, max_side=max_side)[1:], positioned,
                _left(deadline, timeout), timeout)


def _render_direct(source: str, formats: list[str], timeout: float | None = None,
                   max_side: float | None = None, palette_png: bool = False,
                   check: Callable[[bytes], None] | None = None) -> dict[str, bytes]:
    """``render_formats`` without the skeleton: one ``dot`` run writes the SVG, the PDF and the laid-out graph
    from the same layout; PNG is drawn from that laid-out graph by ``neato -n2``. For a source whose skeleton
    does not come back whole from Graphviz (never for annograph's own DOT so far)."""
    # one run writing to a pipe; the size is in the SVG's header
    if formats == ["svg"] and max_side is not None and check is None:
        svg = run_dot(source, "svg", timeout=timeout)
        width, height = svg_size(svg)
        if max(width, height) > max_side:
            raise TooBig(width, height)
        return {"svg": svg}
    if len(formats) <= 1 and max_side is None and check is None and not (palette_png and "png" in formats):
        return {fmt: run_dot(source, fmt, timeout=timeout) for fmt in formats}
    deadline = None if timeout is None else time.monotonic() + timeout
    drawn = _drawn_in_layout_run(formats)
    result, positioned = _lay_out(source, drawn + (["plain"] if check else []), deadline, timeout, max_side,
                                  palette_png)
    places = result.pop("plain", b"")
    width, height = laid_out_size(positioned)
    if max_side is not None and max(width, height) > max_side:
        raise TooBig(width, height)
    if check is not None:
        check(places)
    if "pdf" in result and max(width, height) > MAX_PDF_INCHES * 72 - 2 * PDF_SLACK_PT:
        result, positioned = _lay_out(source, [f for f in drawn if f != "pdf"], deadline, timeout)  # scaled
    neato = [_program("neato"), "-n2", "-Gpad=0"]
    for fmt in formats:
        if fmt not in result:
            result[fmt] = _run(neato + _format_args(fmt, palette=palette_png)[1:], positioned,
                               _left(deadline, timeout), timeout)
    if "png" in result and palette_png:
        result["png"] = snap_palette(result["png"], source)
    if "pdf" in result:
        result["pdf"] = _fixed_pdf_dates(result["pdf"])
    return result


def _drawn_in_layout_run(formats: list[str]) -> list[str]:
    """The formats the layout's own ``dot`` run draws: each that changes no other's bytes there. SVG and PDF
    together (the PDF's size cap scales only layouts over it); PNG only alone (its ``dpi`` would scale the
    others)."""
    drawn = [fmt for fmt in formats if fmt in ("svg", "pdf")]
    return drawn or [fmt for fmt in formats if fmt == "png"]


PDF_SLACK_PT = 8
"""A layout this close to the PDF's size cap is drawn again without the PDF, in case the cap scaled it."""


def _lay_out(source: str, formats: list[str], deadline: float | None, timeout: float | None,
             max_side: float | None = None, palette: bool = False) -> tuple[dict[str, bytes], bytes]:
    """One ``dot`` run: each of ``formats`` drawn, and the laid-out graph (``-Tdot``). A PNG drawn here is
    capped at ``max_side`` (a page over it is drawn again as pages, never at full size).

    One graph a run, though a run costs about 16 ms of start-up (linking, fontconfig): Graphviz 2.43 carries
    state from one graph of a run to the next (cgraph orders subgraphs by the addresses of their names, so by the
    heap's history; the graph's id and an HTML label's link ids count on over the run), so a page laid out after
    others in one ``dot`` run can come out other than alone (issue 30: two copies of a bert_scoped page in one
    run, ``-O``, were laid out differently from each other and from the page alone)."""
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory(prefix="annograph-") as folder:
        laid = Path(folder) / "page.gv"
        command = [dot_program(), "-Tdot", "-o", str(laid)]
        files = {}
        for fmt in formats:
            files[fmt] = Path(folder) / f"page.{fmt}"
            command += _format_args(fmt, palette=palette, max_side=max_side)[1:] + ["-o", str(files[fmt])]
        _run(command, source.encode("utf-8"), _left(deadline, timeout), timeout)
        return {fmt: path.read_bytes() for fmt, path in files.items()}, laid.read_bytes()


_BOUNDING_BOX = re.compile(rb'\bbb="([-0-9.e+]+),([-0-9.e+]+),([-0-9.e+]+),([-0-9.e+]+)"')
_PAD = re.compile(rb'\bpad="?([0-9.]+)')


_HEX_COLOUR = re.compile(r"#([0-9a-fA-F]{6})\b")
SNAP_DISTANCE = 8
"""A palette colour this close (in each channel) to a colour of the source is that colour."""


def snap_palette(png: bytes, source: str) -> bytes:
    """``png`` with each palette entry close to a colour named in ``source`` (or white, or black) set to it:
    gd's quantizer moves every colour a few levels (white comes out 252,254,252). Only the PLTE chunk is
    rewritten, not the pixels."""
    import struct
    import zlib

    # sorted: a tie between two colours goes the same way in every process (a set's order follows str hashing)
    wanted = sorted({(255, 255, 255), (0, 0, 0)} | {tuple(bytes.fromhex(h)) for h in set(_HEX_COLOUR.findall(source))})
    for position, length, kind in _chunks(png, 0):
        if kind == b"PLTE":
            body = bytearray(png[position + 8:position + 8 + length])
            for at in range(0, length - 2, 3):
                near = nearest_colour(wanted, body[at], body[at + 1], body[at + 2])
                if near is not None:
                    body[at:at + 3] = bytes(near)
            crc = struct.pack(">I", zlib.crc32(b"PLTE" + bytes(body)))
            return png[:position + 8] + bytes(body) + crc + png[position + 12 + length:]
        if kind == b"IDAT":
            break
    return png


def _chunks(data: bytes, start: int) -> Iterator[tuple[int, int, bytes]]:
    """The chunks of the PNG file at ``start`` of ``data``: each one's position, data length and kind, up to its
    ``IEND`` or the end of ``data``."""
    import struct

    position = start + 8
    while position + 8 <= len(data):
        length, kind = struct.unpack(">I4s", data[position:position + 8])
        yield position, length, kind
        position += 12 + length


def nearest_colour(wanted: list[tuple[int, ...]], red: int, green: int, blue: int) -> tuple[int, ...] | None:
    """The colour of ``wanted`` (sorted) nearest to ``(red, green, blue)``, the greatest difference of a channel
    the distance, the first in order of the nearest ones; none when it is over ``SNAP_DISTANCE``. Only the colours
    whose red is within ``SNAP_DISTANCE`` can be, a run of the sorted list found by bisection: a page's palette is
    256 entries and its source names some hundred colours (the whole list walked for each entry was 9 ms a page)."""
    import bisect

    best, near = SNAP_DISTANCE + 1, None
    for colour in wanted[bisect.bisect_left(wanted, (red - SNAP_DISTANCE,)):
                         bisect.bisect_left(wanted, (red + SNAP_DISTANCE + 1,))]:
        distance = max(abs(colour[0] - red), abs(colour[1] - green), abs(colour[2] - blue))
        if distance < best:
            best, near = distance, colour
    return near


_SVG_SIZE = re.compile(rb'<svg width="([0-9.]+)pt" height="([0-9.]+)pt"')


def svg_size(svg: bytes) -> tuple[float, float]:
    """Width and height in points of an SVG Graphviz wrote."""
    found = _SVG_SIZE.search(svg[:2048])
    if found is None:
        raise RenderError("Graphviz wrote an SVG without a size")
    return float(found.group(1)), float(found.group(2))


def laid_out_size(positioned: bytes) -> tuple[float, float]:
    """Width and height in points of a ``-Tdot`` layout as drawn: the graph's bounding box (the first one
    written) plus its ``pad`` (inches, 4 pt by default) on each side."""
    head = positioned[:4096]
    box = _BOUNDING_BOX.search(positioned)
    if box is None:
        raise RenderError("Graphviz wrote a layout without a bounding box")
    both = margin(head)
    x0, y0, x1, y1 = (float(v) for v in box.groups())
    return x1 - x0 + both, y1 - y0 + both


def margin(head: bytes | str) -> float:
    """Points that the ``pad`` (inches, 4 pt by default) of a DOT source or layout beginning with ``head`` adds to
    its width and height (both sides)."""
    start = head[:4096]
    pad = _PAD.search(start.encode("utf-8") if isinstance(start, str) else start)
    return 2 * (float(pad.group(1)) * 72 if pad else 4.0)


def _left(deadline: float | None, timeout: float | None) -> float | None:
    """What is left of ``timeout`` by ``deadline``: at least 0.1 s (never more than the whole budget)."""
    return None if deadline is None else max(min(0.1, timeout or 0.1), deadline - time.monotonic())


def _program(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise GraphvizNotFound(name)
    return path


def _format_args(fmt: str, dpi: int | None = None, palette: bool = False, max_side: float | None = None) -> list[str]:
    """The program and output arguments for ``fmt`` (the program slot filled with ``dot``); a PNG is capped at
    ``max_side`` points a side when given."""
    if fmt == "pdf":
        # PDF readers refuse pages over 200 inches (Acrobat's limit): scale big graphs down to fit.
        return ["dot", "-Tpdf:cairo", f"-Gsize={MAX_PDF_INCHES},{MAX_PDF_INCHES}"]
    if fmt == "png":
        # cairo cannot make images over 32767 pixels a side
        inches: float = MAX_PNG_PIXELS // (dpi or PNG_DPI)
        if max_side is not None:  # a little over, so that a page of exactly max_side is never scaled
            inches = min(inches, math.ceil(max_side / 72 * 100 + 1) / 100)
        return ["dot", "-Tpng:cairo:gd" if palette else "-Tpng:cairo", f"-Gdpi={dpi or PNG_DPI}",
                f"-Gsize={inches},{inches}"]
    return ["dot", f"-T{fmt}"]


def _run(command: list[str], data: bytes, timeout: float | None, budget: float | None = None) -> bytes:
    """Run one Graphviz program; ``timeout`` is what is left of the ``budget`` the user gave."""
    env = dict(os.environ, SOURCE_DATE_EPOCH=SOURCE_DATE_EPOCH)
    # a PNG page's buffers are hundreds of MB touched once: huge pages save a tenth of its CPU in page faults
    env.setdefault("GLIBC_TUNABLES", "glibc.malloc.hugetlb=1")
    try:
        with stopping_kills_children():
            done = subprocess.run(command, input=data, capture_output=True, timeout=timeout, env=env, check=False)
    except subprocess.TimeoutExpired:
        # callers pass what is left of the user's budget, a hair under it when the first run starts: say it to 0.01 s
        limit = budget if budget is not None else timeout
        limit = math.ceil(round(limit * 100, 6)) / 100 if limit else limit
        raise LayoutTimeout(f"Graphviz did not finish within {format_number(limit)} s "
                            "(raise --timeout, or render a subgraph)") from None
    except OSError as e:
        raise RenderError(f"cannot run Graphviz: {e}") from None
    if done.returncode == -signal.SIGXFSZ:  # Graphviz writes its own files now (the PDF, the positions)
        raise RenderError("cannot write Graphviz's output: the file size limit was reached")
    if done.returncode != 0:
        message = _first_error(done.stderr)
        raise RenderError(f"Graphviz failed with exit status {done.returncode}: {message}")
    return done.stdout


def run_dot(source: str, fmt: str, timeout: float | None = None, dpi: int | None = None) -> bytes:
    """Lay out ``source`` and return the ``fmt`` bytes.

    Raises:
        GraphvizNotFound: no ``dot`` on PATH.
        RenderError: Graphviz failed (any non-zero exit, including 1, where it still prints a picture with
            broken labels), was killed, or ran past ``timeout`` seconds.
    """
    if fmt not in FORMATS:
        raise RenderError(f"unknown Graphviz output format {fmt!r} (use one of {', '.join(sorted(FORMATS))})")
    command = [dot_program()] + _format_args(fmt, dpi)[1:]
    stdout = _run(command, source.encode("utf-8"), timeout)
    if not stdout:
        raise RenderError("Graphviz produced no output")
    return _fixed_pdf_dates(stdout) if fmt == "pdf" else stdout


@contextlib.contextmanager
def stopping_kills_children() -> Iterator[None]:
    """While a child runs: SIGTERM and SIGHUP raise SystemExit (status 128 + signal) instead of ending Python at
    once, so ``subprocess.run`` kills the child on the way out rather than leaving ``dot`` running for minutes.
    Handlers someone else installed are kept; off the main thread (where Python cannot set handlers) nothing
    changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, _frame: object) -> None:
        raise SystemExit(128 + signum)

    previous = {}
    for number in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(number) == signal.SIG_DFL:
            previous[number] = signal.signal(number, stop)
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


_PDF_DATE = re.compile(rb"/(CreationDate|ModDate) \(D:([0-9]+)")


def _fixed_pdf_dates(pdf: bytes) -> bytes:
    """Cairo before 1.17 ignores SOURCE_DATE_EPOCH: pin the dates, keeping lengths so the xref offsets hold."""
    def pinned(m: re.Match[bytes]) -> bytes:
        return b"/" + m.group(1) + b" (D:" + FIXED_PDF_DATE[: len(m.group(2))].ljust(len(m.group(2)), b"0")

    return _PDF_DATE.sub(pinned, pdf)


def _first_error(stderr: bytes) -> str:
    lines = [ln.strip() for ln in stderr.decode("utf-8", "replace").splitlines() if ln.strip()]
    for line in lines:
        if line.lower().startswith("error"):
            return line[:300]
    return lines[0][:300] if lines else "no message"
