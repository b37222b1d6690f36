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

from ..errors import RenderError
from ..ir import ElementKey

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
_SVG_SIZE = re.compile(rb'<svg width="([\d.]+)pt" height="([\d.]+)pt"\s+viewBox="([-\d.]+) ([-\d.]+) ([\d.]+) ([\d.]+)"')
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
              f' viewBox="{size.group(3).decode()} {size.group(4).decode()} {new_w:.2f} {view_h + height:.2f}"').encode()
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
    cuts: list[tuple[int, int, Slot]] = []
    parser = xml.parsers.expat.ParserCreate("utf-8")
    state: dict = {"op": None, "depth": 0, "header": None, "sentinel": False, "text": None, "group": None}
    key_row = f"{key_text}: ".encode()
    tip = f"{key_text}: {value_text}".encode()

    def tag_bounds() -> tuple[int, int]:
        start = parser.CurrentByteIndex
        return start, svg.index(b">", start)

    def cut_attribute(start: int, end: int, name: bytes, slot: Slot) -> bool:
        marker = b" " + name + b'="'
        at = svg.find(marker, start, end)
        if at < 0:
            return False
        value_start = at + len(marker)
        cuts.append((value_start, svg.index(b'"', value_start), slot))
        return True

    def cut_links(attrs: dict[str, str]) -> None:
        if not overview or overview.decode() not in attrs.get("xlink:href", ""):
            return
        start, end = tag_bounds()
        at = svg.find(b' xlink:href="', start, end)
        value_end = svg.index(b'"', at + 13)
        found = svg.find(overview, at, value_end)
        while found >= 0:
            cuts.append((found, found + len(overview), ("overview", None)))
            found = svg.find(overview, found + len(overview), value_end)

    def group_start(name: str, attrs: dict[str, str]) -> bool:
        """A group box (or a run's cell) of a book's page: its fill, text colours and the end of its tooltip."""
        group = state["group"]
        if group is None:
            match = _BOX_ID.match(attrs.get("id", "")) if name == "g" else None
            if match:
                state.update(group=("g", int(match.group(1)), 0), gdepth=1, gfilled=False)
            return match is not None
        state["gdepth"] += 1
        start, end = tag_bounds()
        if name in ("polygon", "path") and not state["gfilled"] and attrs.get("fill", "none") not in ("none", "transparent"):
            state["gfilled"] = cut_attribute(start, end, b"fill", ("gfill", group))
        elif name == "text":
            cut_attribute(start, end, b"fill", ("gink", group))
        elif name == "a" and "xlink:title" in attrs:
            at = svg.find(b' xlink:title="', start, end)
            close = svg.index(b'"', at + 14)
            cuts.append((close, close, ("gtip", group)))
        return True

    def on_start(name: str, attrs: dict[str, str]) -> None:
        if name == "a":
            cut_links(attrs)
        if group_start(name, attrs):
            return
        op = state["op"]
        if op is None:
            match = _OP_ID.match(attrs.get("id", "")) if name == "g" else None
            if match:
                state.update(op=("op", int(match.group(1)), int(match.group(2))), depth=1, header=None,
                             sentinel=False)
            return
        state["depth"] += 1
        start, end = tag_bounds()
        if name == "polygon":
            fill = attrs.get("fill", "")
            if fill == sentinel_fill and not state["sentinel"]:
                state["sentinel"] = True
                cut_attribute(start, end, b"fill", ("fill", op))
            elif state["sentinel"] and state["header"] is None and fill not in ("none", "transparent", ""):
                ys = [float(y) for y in _POINTS_Y.findall(attrs.get("points", ""))]
                state["header"] = (min(ys), max(ys)) if ys else None
        elif name == "a":
            at = svg.find(tip, start, end)
            if at >= 0:
                cuts.append((at, at + len(tip), ("tip", op)))
        elif name == "text":
            state["text"] = (start, end, float(attrs.get("y", "0")))

    def on_end(name: str) -> None:
        if state["group"] is not None:
            state["gdepth"] -= 1
            if state["gdepth"] == 0:
                state["group"] = None
            return
        op = state["op"]
        if op is None:
            return
        state["depth"] -= 1
        if state["depth"] == 0:
            state["op"] = None
            return
        if name != "text" or state["text"] is None:
            return
        start, end, y = state["text"]
        state["text"] = None
        body_start, body_end = end + 1, parser.CurrentByteIndex
        body = svg[body_start:body_end]
        header = state["header"]
        if header is None or not header[0] <= y <= header[1]:
            cut_attribute(start, end, b"fill", ("ink", op))
        if body == key_row:
            cuts.append((body_start, body_start + len(key_text.encode()), ("key", op)))
        elif body == value_text.encode():
            cuts.append((body_start, body_end, ("value", op)))

    parser.StartElementHandler = on_start
    parser.EndElementHandler = on_end
    try:
        parser.Parse(svg, True)
    except xml.parsers.expat.ExpatError as e:
        raise RenderError(f"Graphviz wrote SVG that does not parse ({e})") from None
    mark = svg.find(CAPTION_MARK)
    if mark >= 0:
        cuts.append((mark, mark + len(CAPTION_MARK), ("colorbar", None)))
    cuts.sort(key=lambda c: c[0])
    parts, slots, at = [], [], 0
    for start, end, slot in cuts:
        if start < at:
            raise RenderError(f"overlapping template cuts at byte {start}")
        parts.append(svg[at:start])
        slots.append(slot)
        at = end
    parts.append(svg[at:])
    template = Template(parts, slots)
    kinds_by_op: dict[ElementKey, set[str]] = {}
    for kind, key in slots:
        if key is not None and key[0] == "op":
            kinds_by_op.setdefault(key, set()).add(kind)
    incomplete = [k for k, kinds in kinds_by_op.items() if not {"fill", "value", "key"} <= kinds]
    if incomplete:
        raise RenderError(f"operator {incomplete[0][1]}:{incomplete[0][2]}: its box has no value placeholder in the layout")
    return template
