"""What a page of a picture holds, read from its SVG text (issue 26): the boxes a reader counts, and the page's area
over them. One definition for tests/unit/picture/test_columns.py, test_fanout.py and benchmarks/page_shapes.py.

A box is an operator, a group box or a graph input/output. Stubs (a column's turn, "continued from", a stub copied
at a far end, a far reader's ``tensor · from Op``) and the legend are not: a page full of copied stubs is still
mostly empty.
"""

from __future__ import annotations

import html
import re
from pathlib import Path

MAX_AREA_PER_BOX = 150_000
"""Issue 26: no page holds more than this many pt² a box."""
BOX_CLASSES = frozenset({"op", "group", "graph-input", "graph-output"})
_SIZE = re.compile(r'<svg width="([0-9.]+)pt" height="([0-9.]+)pt"')
_NODE_CLASS = re.compile(r'<g id="[^"]*" class="node ([^"]*)"')  # Graphviz writes "-" as "&#45;"


def size(text: str) -> tuple[float, float]:
    """The page's width and height in points."""
    found = _SIZE.search(text)
    if found is None:
        raise ValueError("no <svg width=…pt height=…pt>")
    return float(found.group(1)), float(found.group(2))


def boxes(text: str) -> int:
    """How many operators, group boxes and graph inputs/outputs the page draws."""
    return sum(1 for classes in _NODE_CLASS.findall(text) if BOX_CLASSES & set(html.unescape(classes).split()))


def area_per_box(page: Path | str) -> float:
    """pt² of the page over its boxes (a page of none counts as of one)."""
    text = page.read_text(encoding="utf-8") if isinstance(page, Path) else page
    width, height = size(text)
    return width * height / max(1, boxes(text))
