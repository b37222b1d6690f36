"""A laid-out SVG turned into a template: the bytes Graphviz wrote, cut at the few places one picture of a batch
differs from another (box fills, text colours, the value row, the value in the tooltip).

The layout is rendered once with placeholders: every drawn operator box filled with ``SENTINEL_FILL`` and
carrying one value row ``KEY: VALUE`` of fixed width. The stdlib XML parser (expat) walks the SVG and reports
the byte offset of every element, so the cuts land exactly on attribute values and text; everything else stays
byte for byte as Graphviz wrote it, which is why every picture of a batch has identical geometry.
"""

from __future__ import annotations

import re
import xml.parsers.expat
from dataclasses import dataclass

from renderer.core.errors import RenderError
from renderer.core.ir import ElementKey

Slot = tuple[str, ElementKey | None]
"""(kind, operator): kinds ``fill`` (box background), ``ink`` (a text colour on the box), ``key`` (the metric
name in the value row), ``value`` (the value), ``tip`` (``key: value`` in the tooltip), ``colorbar`` (the
caption block, operator None), ``overview`` (the overview's file name in a link between the pages of a book,
operator None); and on a book's pages, for the group box (or run cell) leading to page P, key ``("g", P, 0)``:
``gfill``, ``gink`` and ``gtip`` (inserted at the end of its tooltip)."""

_OP_ID = re.compile(r"^op-(\d+)-(\d+)$")
_BOX_ID = re.compile(r"^a_box-(\d+)$")
"""The link of a group box (or of one cell of a run of repeated groups) leading to page N."""
_POINTS_Y = re.compile(r"[-\d.]+,([-\d.]+)")
_SVG_SIZE = re.compile(rb'<svg width="([\d.]+)pt" height="([\d.]+)pt"\s+'
                       rb'viewBox="([-\d.]+) ([-\d.]+) ([\d.]+) ([\d.]+)"')
_GRAPH_TRANSLATE = re.compile(rb'(<g id="[^"]*" class="graph" transform="[^"]*translate\()([-\d.]+) ([-\d.]+)\)')
"""The graph's own group: ``id="graph"`` in a flat picture, ``id="overview-svg"``/``page-001-svg`` on a page."""


@dataclass(slots=True)
class Template:
    """Bytes between slots: ``parts[0] slot[0] parts[1] … slot[n-1] parts[n]``."""

    parts: list[bytes]
    slots: list[Slot]

    def fill(self, tables: dict[str, bytes | dict[ElementKey, bytes]]) -> bytes:
        """The picture: each slot replaced by ``tables[kind]`` (one text for every operator) or
        ``tables[kind][operator]``."""
        out = [self.parts[0]]
        for (kind, key), part in zip(self.slots, self.parts[1:]):
            table = tables[kind]
            out.append(table if isinstance(table, bytes) else table[key])  # type: ignore[index]
            out.append(part)
        return b"".join(out)

    def operators(self) -> set[ElementKey]:
        return {key for _, key in self.slots if key is not None}


def add_caption_space(svg: bytes, height: float, min_width: float) -> tuple[bytes, float]:
    """Grow the canvas by ``height`` points at the top (the graph moves down) and to at least ``min_width``;
    mark where the caption block goes. Returns the new SVG and the canvas width."""
    size = _SVG_SIZE.search(svg)
    move = _GRAPH_TRANSLATE.search(svg)
    if size is None or move is None:
        raise RenderError("unexpected SVG from Graphviz: no size or graph transform to extend")
    width_pt, height_pt = float(size.group(1)), float(size.group(2))
    view_w, view_h = float(size.group(5)), float(size.group(6))
    new_w = max(view_w, min_width)
    header = (f'<svg width="{max(width_pt, min_width):.0f}pt" height="{height_pt + height:.0f}pt"\n'
              f' viewBox="{size.group(3).decode()} {size.group(4).decode()} {new_w:.2f} '
              f'{view_h + height:.2f}"').encode()
    shifted = move.group(1) + f"{move.group(2).decode()} {float(move.group(3)) + height:.2f})".encode()
    svg = svg[: move.start()] + CAPTION_MARK + shifted + svg[move.end():]
    svg = svg[: size.start()] + header + svg[size.end():]
    return svg, new_w


CAPTION_MARK = b"<!-- annograph batch caption -->\n"


def canvas_height(svg: bytes) -> float:
    """The viewBox height of ``svg``."""
    size = _SVG_SIZE.search(svg)
    if size is None:
        raise RenderError("unexpected SVG from Graphviz: no viewBox")
    return float(size.group(6))


def build(svg: bytes, sentinel_fill: str, key_text: str, value_text: str, overview: bytes = b"") -> Template:
    """Cut ``svg`` (laid out with the placeholders) into a template. Raises RenderError when a drawn operator
    has no placeholder where one is expected (the SVG was not made by the batch layout). ``overview``: the
    placeholder file name of a book's overview, cut wherever a link (``xlink:href``) holds it."""
    cutter = _Cutter(svg, sentinel_fill, key_text, value_text, overview)
    try:
        cutter.parser.Parse(svg, True)
    except xml.parsers.expat.ExpatError as e:
        raise RenderError(f"Graphviz wrote SVG that does not parse ({e})") from None
    cuts = cutter.cuts
    mark = svg.find(CAPTION_MARK)
    if mark >= 0:
        cuts.append((mark, mark + len(CAPTION_MARK), ("colorbar", None)))
    template = _assemble(svg, cuts)
    _check_placeholders(template.slots)
    return template


def _assemble(svg: bytes, cuts: list[tuple[int, int, Slot]]) -> Template:
    """The template of ``svg`` cut at ``cuts`` (start, end, slot), in byte order; RenderError where two overlap."""
    cuts.sort(key=lambda c: c[0])
    parts, slots, at = [], [], 0
    for start, end, slot in cuts:
        if start < at:
            raise RenderError(f"overlapping template cuts at byte {start}")
        parts.append(svg[at:start])
        slots.append(slot)
        at = end
    parts.append(svg[at:])
    return Template(parts, slots)


def _check_placeholders(slots: list[Slot]) -> None:
    """RenderError naming the first operator whose box lacks its fill, key or value slot."""
    kinds_by_op: dict[ElementKey, set[str]] = {}
    for kind, key in slots:
        if key is not None and key[0] == "op":
            kinds_by_op.setdefault(key, set()).add(kind)
    incomplete = [k for k, kinds in kinds_by_op.items() if not {"fill", "value", "key"} <= kinds]
    if incomplete:
        raise RenderError(f"operator {incomplete[0][1]}:{incomplete[0][2]}: its box has no value placeholder "
                          "in the layout")


class _Cutter:
    """Walks the SVG with expat and collects the cuts (start, end, slot): inside an operator's group, its
    placeholder fill, text colours, key, value and tooltip; inside a group box of a book's page, its fill, text
    colours and tooltip end; anywhere, the overview's name in a link."""

    def __init__(self, svg: bytes, sentinel_fill: str, key_text: str, value_text: str, overview: bytes) -> None:
        self.svg, self.sentinel_fill, self.overview = svg, sentinel_fill, overview
        self.key_text, self.value_text = key_text, value_text
        self.key_row = f"{key_text}: ".encode()
        self.tip = f"{key_text}: {value_text}".encode()
        self.cuts: list[tuple[int, int, Slot]] = []
        self.op: ElementKey | None = None
        self.depth = 0
        self.header: tuple[float, float] | None = None
        self.sentinel = False
        self.text: tuple[int, int, float] | None = None
        self.group: ElementKey | None = None
        self.gdepth = 0
        self.gfilled = False
        self.parser = xml.parsers.expat.ParserCreate("utf-8")
        self.parser.StartElementHandler = self.on_start
        self.parser.EndElementHandler = self.on_end

    def tag_bounds(self) -> tuple[int, int]:
        start = self.parser.CurrentByteIndex
        return start, self.svg.index(b">", start)

    def cut_attribute(self, start: int, end: int, name: bytes, slot: Slot) -> bool:
        marker = b" " + name + b'="'
        at = self.svg.find(marker, start, end)
        if at < 0:
            return False
        value_start = at + len(marker)
        self.cuts.append((value_start, self.svg.index(b'"', value_start), slot))
        return True

    def cut_links(self, attrs: dict[str, str]) -> None:
        overview, svg = self.overview, self.svg
        if not overview or overview.decode() not in attrs.get("xlink:href", ""):
            return
        start, end = self.tag_bounds()
        at = svg.find(b' xlink:href="', start, end)
        value_end = svg.index(b'"', at + 13)
        found = svg.find(overview, at, value_end)
        while found >= 0:
            self.cuts.append((found, found + len(overview), ("overview", None)))
            found = svg.find(overview, found + len(overview), value_end)

    def group_start(self, name: str, attrs: dict[str, str]) -> bool:
        """A group box (or a run's cell) of a book's page: its fill, text colours and the end of its tooltip."""
        group = self.group
        if group is None:
            match = _BOX_ID.match(attrs.get("id", "")) if name == "g" else None
            if match:
                self.group, self.gdepth, self.gfilled = ("g", int(match.group(1)), 0), 1, False
            return match is not None
        self.gdepth += 1
        start, end = self.tag_bounds()
        filled = attrs.get("fill", "none") not in ("none", "transparent")
        if name in ("polygon", "path") and not self.gfilled and filled:
            self.gfilled = self.cut_attribute(start, end, b"fill", ("gfill", group))
        elif name == "text":
            self.cut_attribute(start, end, b"fill", ("gink", group))
        elif name == "a" and "xlink:title" in attrs:
            at = self.svg.find(b' xlink:title="', start, end)
            close = self.svg.index(b'"', at + 14)
            self.cuts.append((close, close, ("gtip", group)))
        return True

    def on_start(self, name: str, attrs: dict[str, str]) -> None:
        if name == "a":
            self.cut_links(attrs)
        if self.group_start(name, attrs):
            return
        if self.op is None:
            match = _OP_ID.match(attrs.get("id", "")) if name == "g" else None
            if match:
                self.op, self.depth = ("op", int(match.group(1)), int(match.group(2))), 1
                self.header, self.sentinel = None, False
            return
        self.depth += 1
        self.op_element(name, attrs)

    def op_element(self, name: str, attrs: dict[str, str]) -> None:
        """An element inside an operator's group: the placeholder fill, the header band, the tooltip, a text."""
        start, end = self.tag_bounds()
        if name == "polygon":
            fill = attrs.get("fill", "")
            if fill == self.sentinel_fill and not self.sentinel:
                self.sentinel = True
                self.cut_attribute(start, end, b"fill", ("fill", self.op))
            elif self.sentinel and self.header is None and fill not in ("none", "transparent", ""):
                ys = [float(y) for y in _POINTS_Y.findall(attrs.get("points", ""))]
                self.header = (min(ys), max(ys)) if ys else None
        elif name == "a":
            at = self.svg.find(self.tip, start, end)
            if at >= 0:
                self.cuts.append((at, at + len(self.tip), ("tip", self.op)))
        elif name == "text":
            self.text = (start, end, float(attrs.get("y", "0")))

    def on_end(self, name: str) -> None:
        if self.group is not None:
            self.gdepth -= 1
            if self.gdepth == 0:
                self.group = None
            return
        if self.op is None:
            return
        self.depth -= 1
        if self.depth == 0:
            self.op = None
            return
        if name == "text" and self.text is not None:
            self.op_text_end()

    def op_text_end(self) -> None:
        """A text of an operator's box ends: its colour (outside the header band), and the key or value row."""
        assert self.text is not None
        start, end, y = self.text
        self.text = None
        body_start, body_end = end + 1, self.parser.CurrentByteIndex
        body = self.svg[body_start:body_end]
        if self.header is None or not self.header[0] <= y <= self.header[1]:
            self.cut_attribute(start, end, b"fill", ("ink", self.op))
        if body == self.key_row:
            self.cuts.append((body_start, body_start + len(self.key_text.encode()), ("key", self.op)))
        elif body == self.value_text.encode():
            self.cuts.append((body_start, body_end, ("value", self.op)))
