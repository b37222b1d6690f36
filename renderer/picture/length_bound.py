"""How long a page laid out by ``dot`` is at least, along its ranks, read from what its emission recorded
(``columns.Columns.labels`` and ``ties``), without laying it out.

An edge puts its head at least one rank after its tail, and ``dot`` keeps at least ``ranksep`` between the
nodes of one rank and the next; so a chain of edges is at least as long as its nodes' heights and a
``ranksep`` between each two. A node's height is at least its HTML label's: the table's border, and each row's
cell padding and borders around the largest font in it (a line of text is never shorter than its font size).
Whatever else dot adds (clusters' margins and titles, edge labels, taller neighbours on a rank) only lengthens
the page, so the bound is never over the laid-out length. ``rank=same`` rows may flatten an edge: a source with
them gets no bound (0).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from renderer.picture import graphviz_run
from renderer.picture.columns import Columns

POINTS_PER_INCH = 72.0
DEFAULT_RANKSEP = 0.5
"""Inches: dot's ``ranksep`` when the graph names none."""
DEFAULT_FONT = 14.0
"""Points: dot's ``fontsize`` when nothing names one (a lower font size only shortens the bound)."""

_PAD = re.compile(r"\bpad=\"?([0-9.]+)")
_RANKSEP = re.compile(r"\branksep=\"?([0-9.]+)")
_RANKDIR = re.compile(r"\brankdir=\"?(\w+)")
_TAG = re.compile(r"<(/?)(TABLE|TR|TD|BR)\b([^>]*)>", re.I)
_FONT_SIZE = re.compile(r'POINT-SIZE="([0-9.]+)"', re.I)
_NUMBER_ATTR = re.compile(r'\b(BORDER|CELLBORDER|CELLPADDING|CELLSPACING)="([0-9]+)"', re.I)


class TooLong(graphviz_run.TooBig):
    """A page found longer than its caller allows without laying it out (``least_length``)."""

    def __init__(self, length: float) -> None:
        super().__init__(0.0, length)
        self.args = (f"the picture is at least {length:,.0f} pt long",)


def check_length(source: str, columns: Columns, max_side: float) -> None:
    """Raise ``TooLong`` when the layout of ``source`` would be over ``max_side`` points along its ranks for
    sure (``least_length``): the page is not laid out only to be refused."""
    length = least_length(source, columns)
    if length > max_side:
        raise TooLong(length)


def least_length(source: str, columns: Columns) -> float:
    """Points that the layout of ``source`` (emitted into ``columns``) is at least long along its ranks, its
    ``pad`` (4 pt a side unless named) included as ``graphviz_run.laid_out_size`` counts it; 0 when no bound is
    known (ranks left to right, ``rank=same`` rows)."""
    head = source[:4096]
    rankdir = _RANKDIR.search(head)
    if (rankdir and rankdir.group(1) not in ("TB", "BT")) or "rank=same" in source:
        return 0.0
    found = _RANKSEP.search(head)
    ranksep = (float(found.group(1)) if found else DEFAULT_RANKSEP) * POINTS_PER_INCH
    font = _node_font(head)
    heights = {name: label_height(label, font) for name, label in columns.labels.items()}
    chain = longest_chain(heights, columns.ties, ranksep)
    pad = _PAD.search(head)
    return chain + 2 * (float(pad.group(1)) * POINTS_PER_INCH if pad else 4.0) if chain else 0.0


def _node_font(head: str) -> float:
    """The ``fontsize`` of the source's ``node [...]`` defaults (points)."""
    found = re.search(r"\bnode \[[^\]]*\bfontsize=\"?([0-9.]+)", head)
    return float(found.group(1)) if found else DEFAULT_FONT


def longest_chain(heights: dict[str, float], ties: Iterable[tuple[str, str]], gap: float) -> float:
    """The longest chain of ``ties`` (tail, head): its nodes' ``heights`` and ``gap`` between each two; a node
    on a cycle, or after one, is left out (dot turns an edge of a cycle round)."""
    feeds: dict[str, list[str]] = {}
    waiting = dict.fromkeys(heights, 0)
    for tail, head in ties:
        if tail in heights and head in heights and tail != head:
            feeds.setdefault(tail, []).append(head)
            waiting[head] += 1
    reach = {name: heights[name] for name, count in waiting.items() if not count}
    ready = list(reach)
    best = max(reach.values(), default=0.0)
    while ready:
        name = ready.pop()
        for head in feeds.get(name, ()):
            reach[head] = max(reach.get(head, 0.0), reach[name] + gap + heights[head])
            waiting[head] -= 1
            if not waiting[head]:
                ready.append(head)
                best = max(best, reach[head])
    return best


def label_height(label: str, font: float) -> float:
    """Points that a node of ``label`` is at least high: an HTML-like table's (``<<TABLE ...>>``), 0 for any
    other label (an invisible point, plain text: left out of the bound)."""
    text = label.strip()
    if not (text.startswith("<") and text[1:].lstrip().upper().startswith("<TABLE")):
        return 0.0
    return _table_height(text[1:-1], font)


def _table_height(html: str, font: float) -> float:
    """The outermost table of ``html``: twice its border, and for each of its own rows (not a nested table's)
    the cell padding and cell borders around the largest font in that row, with cell spacing between."""
    depth = 0
    rows: list[str] = []
    table = ""
    start = 0
    for match in _TAG.finditer(html):
        closing, tag = match.group(1), match.group(2).upper()
        if tag == "TABLE":
            depth += -1 if closing else 1
            if depth == 1 and not closing:
                table = match.group(3)
        elif tag == "TR" and depth == 1:
            if closing:
                rows.append(html[start:match.start()])
            else:
                start = match.end()
    numbers = {k.upper(): float(v) for k, v in _NUMBER_ATTR.findall(table)}
    border = numbers.get("BORDER", 1.0)
    cell = 2 * (numbers.get("CELLPADDING", 2.0) + numbers.get("CELLBORDER", border))
    spacing = numbers.get("CELLSPACING", 2.0)
    heights = [cell + max((float(size) for size in _FONT_SIZE.findall(row)), default=font) for row in rows]
    return 2 * border + sum(heights) + spacing * (len(heights) + 1) if heights else 0.0
