"""Long pages wrapped into side-by-side columns, so that no page is a strip.

A page is laid out once as it is. When its long side is over ``LONG_SIDE_PT`` and more than ``MAX_ASPECT``
times its short side, and that long side runs along the ranks (a chain drawn top to bottom), the page's
top-level items (an operator, a group's box, a stub, a group drawn in full as a cluster, a subgraph's body) are
cut into consecutive bands where the first layout put them, each band a column: a cluster without a frame
(``column-N`` in the SVG, for rows too), the columns side by side in reading order (an invisible head on top
of each, the heads on one rank, tied left to right). Under ``--rankdir LR`` the same bands are rows stacked top
to bottom. The cuts fall between items where the fewest edges cross, never through a cluster. An edge from one
column to another runs to a stub at its tail and from a stub at its head, one pair for each two columns, so no
edge runs the length of the page; between a column and the next, the pair is the turn, drawn bold in the link
colour ("continues in column 2 →" at the foot, "column 2, continued from column 1" on top). A mostly empty page
may have its first column drawn across the top instead, the others side by side under it (``Columns.under``):
a long chain under a wide band of other flows (``cut_levels``).

A page that long across its ranks instead (the branches of an If side by side, each with its outputs) is cut the
same way across the ranks, and the bands are stacked along them (``row-N`` in the SVG, titled "row 1 of 2" at
its top left): the nodes that end a band (feeding none of its own) over an invisible node, over the nodes that
start the next, so the first layout's left part reads first, above the rest. Only those are tied: an invisible
edge is routed like any other, around the frames in its way, and widens the page as far as it bends.

Same input, same bytes: the bands come from dot's own (deterministic) first layout. The page in columns is
emitted again by replaying what its first emission did on its ``Sheet`` (``replay``: the lines of its nodes and
of the edges within a column as written then), not by making its labels and tooltips anew.
"""

from __future__ import annotations

import contextlib
import functools
import math
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import graphviz

from renderer.core import escape
from renderer.core.errors import RenderError
from renderer.picture import graphviz_run
from renderer.picture.digraph import Digraph

LONG_SIDE_PT = 3000.0
"""A page may be long and narrow up to this long a side; past it, at most ``MAX_ASPECT`` : 1."""
MAX_ASPECT = 3.0
TARGET_ASPECT = 1.6
"""Width / height that the columns aim at: a 1,600 × 1,000 window."""
MAX_COLUMNS = 12
TRIES = 4
"""Layouts of one page at most: as it is, in columns, and up to twice more with the count of columns corrected."""
CUT_WINDOW = 0.25
"""A cut may move this share of a column's length from its even place, to where fewer edges cross."""
PAGED_STRIP_PT = 9000.0
"""A flat picture laid out as a strip longer than this is drawn as an overview with pages instead (each page then
in columns where it needs them): an overview reads at a glance where a picture of many columns does not."""
SEQUENCE_GAIN = 1.25
"""The cut in reading order replaces the cut between items only when that makes the longest band this much
shorter: the cut between items keeps the first layout's order across flows, on a page of one flow the same."""
RANK_GAP_PT = 0.35 * 72 + 12
"""What dot puts between two ranks (``ranksep``) and an edge's label, roughly."""
PAD_PT = 2 * 0.3 * 72
"""What the emitters' ``pad`` (0.3 in each side; 0.15 on a page laid out again tight) adds to the size dot's
``-Tplain`` gives: ``Columns.pad``, read from the source by ``lay_out``."""
TURN_COLOR = "#1a4f8b"
STUB_FILL = "#f4f4f4"

_NODE = re.compile(rb"^node (\S+) (-?[0-9.e+-]+) (-?[0-9.e+-]+) ([0-9.e+-]+) ([0-9.e+-]+) ", re.M)
_EDGE = re.compile(rb"^edge (\S+) (\S+) ", re.M)
_GRAPH = re.compile(rb"^graph [0-9.e+-]+ ([0-9.e+-]+) ([0-9.e+-]+)", re.M)


@dataclass(slots=True)
class Columns:
    """How a page's items are cut into columns: filled in by the emitter (``atoms``, through ``Sheet``) and by
    the layout (``column``, ``count``).

    Attributes:
        rankdir: the page's ``rankdir`` (TB: columns left to right; LR: rows top to bottom).
        along_only: a page whose items are already wrapped across its ranks (the overview's rows): cut into
            columns only when it is a strip along its ranks even so, or mostly empty (``_sparse_try``), never
            into bands stacked along them.
        atoms: each top-level item (a node's or a cluster's name) → the names of the nodes in it, in the order
            the emitter declared them.
        column: atom → its column, from 0; empty while the page is one column.
        count: columns.
        first: the first layout (``-Tplain``), which the cuts are chosen from.
        stacked: the bands are stacked along the ranks (a page wide across them: rows top to bottom), not side by
            side across them.
        labels: each node's label as emitted (``length_bound`` reads the page's least length from them).
        ties: the (tail, head) of every edge emitted within a column, which ranks its head after its tail.
        script: what the first emission did on its ``Sheet`` (``replay`` does it again in columns, the labels
            and tooltips not made anew), and ``blank``, the graph as it was before.
        shapes: for a mostly empty page (``_sparse_try``), each try's (whether it is a strip, whether an edge runs
            back to an earlier band, area per drawn box).
        partable: the emitter would frame some group in parts (its members far apart along the ranks), and
            ``parted``: it does (a mostly empty page's second try).
        wrappable: the emitter would write some stub's text in lines when ``parted``: a mostly empty page that
            is no strip is emitted so, as it is when ``partable``.
        spreadable: the emitter would draw a stub to or from another page again at a far end (an edge of it
            runs beside the page): a strip whose first layout is mostly empty is emitted so (``parted``) before
            it is cut into columns, as it is when ``partable``.
        backward: the emission in bands has an edge from a band to an earlier one (read against the order).
        under: the first column is drawn above the others, they side by side under it (a mostly empty page's try
            between the columns and the rows: a wide band of branches first, then a long chain).
        pad: what the source's ``pad`` adds to the width and height of its ``-Tplain`` layout (points).
        levels: the try with the first column above the others is cut by flows (``cut_levels``: the longest flow,
            a chain beside the others, in columns under them), or was to be and there was none.
        sliceable: the emitter draws some group in full as a frame, which it can slice into bands of ranks.
        sliced: where the bands are cut along the ranks of the first layout (points, ``_slice_try``): the emitter
            draws each frame crossing a cut as one frame a band ("<title> · part 2 of 3"), and each item goes
            into the band its place in the first layout falls in. Empty: frames drawn whole.
        reslice: ``sliced`` was just set: ``lay_out`` emits the page anew, then assigns its bands (``_sliced``).
        edges: the (tail, head) of the edges of ``first`` when only they are at hand (a decision read back,
            ``columns_kept``); None: read from ``first``.
        turnable: the page is drawn left to right and may be drawn top to bottom instead when that leaves it
            mostly empty (``lay_out``), and ``turned``: it is (the emitter draws it with ``rankdir=TB``).
        measured: the last layout checked: whether it is a strip, and its area per drawn box.
    """

    rankdir: str = "TB"
    along_only: bool = False
    atoms: dict[str, list[str]] = field(default_factory=dict)
    column: dict[str, int] = field(default_factory=dict)
    count: int = 1
    first: bytes = b""
    stacked: bool = False
    labels: dict[str, str] = field(default_factory=dict)
    ties: list[tuple[str, str]] = field(default_factory=list)
    script: list[tuple[Any, ...]] | None = None
    blank: graphviz.Digraph | None = None
    shapes: list[tuple[bool, bool, float]] = field(default_factory=list)
    partable: bool = False
    wrappable: bool = False
    parted: bool = False
    spreadable: bool = False
    backward: bool = False
    under: bool = False
    levels: bool = False
    pad: float = PAD_PT
    sliceable: bool = False
    sliced: list[float] = field(default_factory=list)
    reslice: bool = False
    edges: list[tuple[str, str]] | None = None
    turnable: bool = False
    turned: bool = False
    measured: tuple[bool, float] | None = None
    _node_column: dict[str, int] = field(default_factory=dict)
    _centres: dict[str, float] = field(default_factory=dict)

    def of(self, name: str) -> int | None:
        """The column of node ``name`` (None: not cut into columns, or not a node of this page)."""
        if not self.column:
            return None
        if not self._node_column:
            self._node_column = {n: self.column[a] for a, names in self.atoms.items() if a in self.column
                                 for n in names}
        return self._node_column.get(name)

    def band(self, name: str) -> int | None:
        """The band of ``sliced`` that node ``name``'s centre in the first layout falls in (None: not in it)."""
        if not self._centres:
            self._centres = {n: (start + end) / 2 for n, (start, end) in _spans(self).items()}
        centre = self._centres.get(name)
        return None if centre is None else sum(centre > c for c in self.sliced)

    def assign(self, column: dict[str, int], count: int) -> None:
        self.column, self.count, self._node_column = column, count, {}

    def turn(self) -> None:
        """Start again from the page's first emission, drawn top to bottom (``turned``)."""
        fresh = Columns(rankdir="TB", turned=True)
        for name in Columns.__dataclass_fields__:
            setattr(self, name, getattr(fresh, name))

    @property
    def word(self) -> str:
        """What a band is called: a column (side by side), or under ``--rankdir LR`` a row; stacked, the other."""
        return "column" if (self.rankdir in ("TB", "BT")) != self.stacked else "row"


class Reshape(Exception):
    """A layout too long for its width: lay the page out again in ``columns`` (already assigned)."""


class LongStrip(graphviz_run.TooBig):
    """A flat picture's first layout is a strip longer than ``PAGED_STRIP_PT`` (``lay_out``'s ``pages_over``)."""



class Sheet:
    """What an emitter draws its page into instead of the ``graphviz.Digraph`` itself: nodes and clusters
    declared at its top level go into their column's cluster, and an edge between two columns does not rank
    its ends. Records every top-level item's nodes in ``columns.atoms``. ``finish`` before reading the source."""

    def __init__(self, graph: graphviz.Digraph, columns: Columns | None, atom: str | None = None,
                 root: Sheet | None = None, script: list[tuple[Any, ...]] | None = None) -> None:
        self.graph, self.columns, self.atom = graph, columns, atom
        self.root = root or self
        self._script = script
        if root is None and columns is not None:
            columns.backward = False
        if root is None and columns is not None and not columns.column:  # the first emission: recorded
            columns.blank, columns.script = graph.copy(), []
            columns.labels, columns.ties = {}, []
            self._script = columns.script
        self._bands: dict[int, graphviz.Digraph] = {}
        self._stubs: set[str] = set()
        self._crossed: set[tuple[str, str]] = set()

    def _record(self, atom: str, name: str) -> None:
        if self.columns is not None:
            names = self.columns.atoms.setdefault(atom, [])
            if name not in names:
                names.append(name)

    def _band(self, atom: str) -> graphviz.Digraph:
        """The graph an item declared at the top level goes into: its column's cluster, or the page."""
        columns = self.columns
        if self.atom is not None or columns is None or atom not in columns.column:
            return self.graph
        return self.root._column_graph(columns.column[atom])

    def _column_graph(self, number: int) -> graphviz.Digraph:
        band = self._bands.get(number)
        if band is None:
            band = self._bands[number] = Digraph(name=f"cluster_col{number}")
            # nothing a cluster inside would take for its own (a nested cluster inherits what is not set on it)
            band.attr(label="", color="transparent", id=f"column-{number + 1}")
            if self.columns is not None and self.columns.stacked:  # ``row-N``: bands along the ranks, titled
                word = self.columns.word
                text = f"{word} {number + 1} of {self.columns.count}"
                band.attr(id=f"{word}-{number + 1}", labeljust="l", label=escape.html_label(
                    f'<FONT POINT-SIZE="14" COLOR="{TURN_COLOR}"><B>{escape.html_text(text)}</B></FONT>'))
        return band

    def node(self, name: str, **attrs: object) -> None:
        self._record(self.atom or name, name)
        band = self._band(self.atom or name)
        band.node(name, **attrs)  # type: ignore[arg-type]
        if self._script is not None and self.columns is not None:  # the first emission: kept for ``replay``
            self._script.append(("node", name, band.body[-1]))
            self.columns.labels[name] = str(attrs.get("label", ""))

    def _node_line(self, name: str, line: str) -> None:
        """``node`` again, from the line its first emission wrote (the same in any cluster)."""
        self._record(self.atom or name, name)
        self._band(self.atom or name).body.append(line)

    def edge(self, tail: str, head: str, **attrs: object) -> None:
        """An edge; between two columns, it runs to a stub at its tail ("to column 3") and from a stub at its
        head ("from column 1"), the stubs of a column and the next drawn as the turn."""
        self._edge(tail, head, attrs, None)

    def _edge(self, tail: str, head: str, attrs: dict[str, object], line: str | None) -> None:
        """``edge``; ``line``: what the first emission wrote for it, when it was not cut into columns."""
        columns = self.columns
        start = end = None
        if columns is not None and columns.column:
            start, end = columns.of(tail), columns.of(head)
        if start is None or end is None or start == end:
            if line is None:
                self.graph.edge(tail, head, **attrs)  # type: ignore[arg-type]
            else:
                self.graph.body.append(line)
            if self._script is not None and columns is not None:
                self._script.append(("edge", tail, head, attrs, self.graph.body[-1]))
                if str(attrs.get("constraint", "true")) != "false" and str(attrs.get("minlen", "1")) != "0":
                    columns.ties.append((tail, head))
        elif attrs.get("style") != "invis":
            self.root._cross(tail, head, start, end, attrs)

    def _cross(self, tail: str, head: str, start: int, end: int, attrs: dict[str, object]) -> None:
        if self.columns is not None and end < start:
            self.columns.backward = True
        out, into = self._stub(start, end, "to"), self._stub(end, start, "from")
        if (tail, out) not in self._crossed:
            self._crossed.add((tail, out))
            self.graph.edge(tail, out, **{k: v for k, v in attrs.items() if k != "lhead"})  # type: ignore[arg-type]
        head_side = {k: v for k, v in attrs.items() if k not in ("ltail", "label")}
        if "id" in attrs:
            head_side["id"] = f"{attrs['id']}-c"
        self.graph.edge(into, head, **head_side)  # type: ignore[arg-type]

    def _stub(self, here: int, there: int, way: str) -> str:
        """The stub in column ``here`` for edges to (``way`` "to") or from column ``there``; between a column
        and the next, the turn: "continues in column 2 →" at the foot, "column 2, continued from column 1" on top."""
        name = f"col{way}_{here}_{there}"
        if name not in self._stubs:
            self._stubs.add(name)
            turn = abs(here - there) == 1 and (there > here) == (way == "to")
            band = self.columns.word if self.columns is not None else "column"
            text = (f"continues in {band} {there + 1} →" if way == "to" else
                    f"{band} {here + 1}, continued from {band} {there + 1}") if turn else f"{way} {band} {there + 1}"
            shown = f"<B>{text}</B>" if turn else text
            font = f'<FONT POINT-SIZE="{10 if turn else 8}" COLOR="{TURN_COLOR}">{shown}</FONT>'
            label = (f'<TABLE BORDER="{2 if turn else 1}" CELLBORDER="0" CELLPADDING="4" '
                     f'COLOR="{TURN_COLOR if turn else "#9a9a9a"}" BGCOLOR="{STUB_FILL}" STYLE="rounded">'
                     f"<TR><TD>{font}</TD></TR></TABLE>")
            self._column_graph(here).node(
                name, label=escape.html_label(label), id=f"col-{way}-{here + 1}-{there + 1}",
                tooltip=escape.tooltip([f"{way} {band} {there + 1} (the {band}s read in order, {band} 1 first)"]),
                **{"class": "column-stub" + (" turn" if turn else "")})
        return name

    def attr(self, *args: object, **attrs: object) -> None:
        if self._script is not None:
            self._script.append(("attr", args, attrs))
        self.graph.attr(*args, **attrs)  # type: ignore[arg-type]

    @contextlib.contextmanager
    def subgraph(self, name: str | None = None) -> Iterator[Sheet]:
        atom = self.atom or name
        parent = self._band(atom) if atom is not None else self.graph
        inside: list[tuple[Any, ...]] | None = None
        if self._script is not None:
            inside = []
            self._script.append(("subgraph", name, inside))
        with parent.subgraph(name=name) as inner:
            yield Sheet(inner, self.columns, atom, self.root, inside)

    def finish(self) -> None:
        """The columns' clusters, in order, each under an invisible head: the heads on one rank outside the
        clusters, tied left to right (a flat edge orders its ends only outside clusters)."""
        columns = self.columns
        if columns is None or not columns.column:
            return
        numbers = sorted(self._bands)
        for number in numbers:
            self.graph.subgraph(self._bands[number])
        if columns.stacked:
            self._stack(numbers)
            return
        numbers = numbers[1:] if columns.under else numbers
        firsts: dict[int, str] = {}
        for atom, number in columns.column.items():
            if number not in firsts and columns.atoms.get(atom) and atom != "legend":
                firsts[number] = columns.atoms[atom][0]
        with self.graph.subgraph() as same:
            same.attr(rank="same")
            for number in numbers:
                same.node(f"colhead_{number}", **_INVISIBLE)
        for number in numbers:
            if number in firsts:
                self.graph.edge(f"colhead_{number}", firsts[number], style="invis", weight="10")
        # over every node that starts its column too: the heads then sit above all the columns, and dot's
        # crossing minimisation, which keeps the heads in order but orders the clusters as it likes (a flat edge
        # between clusters is dropped), draws the columns in the heads' order (layout_cdla page 12 had 3, 2, 4, 1)
        ends, starts = self._ends_and_starts()
        if columns.under:  # the heads of the columns under the first, after its ends
            self.graph.node("colsep_under", **_INVISIBLE)
            for name in ends.get(numbers[0] - 1, []):
                self.graph.edge(name, "colsep_under", style="invis", weight="0")
            for number in numbers:
                self.graph.edge("colsep_under", f"colhead_{number}", style="invis", weight="0")
        for number, names in starts.items():
            if number not in numbers:
                continue
            for name in names:
                if name != firsts.get(number):
                    self.graph.edge(f"colhead_{number}", name, style="invis", weight="0")
        for left, right in zip(numbers, numbers[1:]):
            self.graph.edge(f"colhead_{left}", f"colhead_{right}", style="invis", weight="100")

    def _stack(self, numbers: list[int]) -> None:
        """Each band after the one before it along the ranks: the nodes of a band that feed none of its own (its
        ends) over an invisible node, and that node over the nodes of the next band that none of its own feeds
        (its starts); the edges within a band rank the rest."""
        ends, starts = self._ends_and_starts()
        for left, right in zip(numbers, numbers[1:]):
            separator = f"colsep_{left}"
            self.graph.node(separator, **_INVISIBLE)
            for name in ends.get(left, []):
                self.graph.edge(name, separator, style="invis", weight="0")
            for name in starts.get(right, []):
                self.graph.edge(separator, name, style="invis", weight="0")

    def _ends_and_starts(self) -> tuple[dict[int, list[str]], dict[int, list[str]]]:
        """Each band's nodes that feed none of its own (its ends) and that none of its own feeds (its starts),
        the stubs to other bands among the ends, those from them among the starts."""
        columns = self.columns
        assert columns is not None
        band = {name: number for atom, number in columns.column.items() for name in columns.atoms.get(atom, [])}
        fed: set[str] = set()
        feeding: set[str] = set()
        for tail, head in _names(columns.first) if columns.edges is None else columns.edges:
            if tail in band and band.get(head) == band[tail]:
                feeding.add(tail)
                fed.add(head)
        ends: dict[int, list[str]] = {}
        starts: dict[int, list[str]] = {}
        for name, number in band.items():
            if name not in feeding:
                ends.setdefault(number, []).append(name)
            if name not in fed:
                starts.setdefault(number, []).append(name)
        for stub in sorted(self._stubs):
            number = int(stub.split("_")[1])
            (ends if stub.startswith("colto") else starts).setdefault(number, []).append(stub)
        return ends, starts


def replay(columns: Columns) -> str | None:
    """The page emitted again in its columns (assigned) from what its first emission did (``Columns.script``):
    the same source as emitting it anew, without making its labels and tooltips again. None: nothing recorded,
    (the overview's rows, written outside its ``Sheet``, are not played again: in columns it has none)."""
    if columns.script is None or columns.blank is None:
        return None
    graph = columns.blank.copy()
    sheet = Sheet(graph, columns)
    _play(sheet, columns.script)
    sheet.finish()
    return graph.source


def _play(sheet: Sheet, script: list[tuple[Any, ...]]) -> None:
    for step in script:
        if step[0] == "node":
            sheet._node_line(step[1], step[2])
        elif step[0] == "edge":
            sheet._edge(step[1], step[2], step[3], step[4])
        elif step[0] == "attr":
            sheet.attr(*step[1], **step[2])
        else:
            with sheet.subgraph(step[1]) as inner:
                _play(inner, step[2])


_INVISIBLE = {"shape": "point", "style": "invis", "width": "0", "height": "0", "label": ""}


def too_long(width: float, height: float) -> bool:
    """Whether a page of this size (points) is a strip: over ``LONG_SIDE_PT`` and ``MAX_ASPECT`` : 1."""
    long, short = max(width, height), max(1.0, min(width, height))
    return long > LONG_SIDE_PT and long > MAX_ASPECT * short


FEW_BOXES = 6
"""A page of fewer operators and group boxes than this is never cut into bands for being mostly empty: a band of
one or two boxes would take a turn at each end, as long as the boxes."""
SPARSE_PT2 = 120_000
"""Area per drawn box past which a page's first layout is mostly empty (``_sparse_try``)."""
_BOXED = re.compile(r"(op|box)_[0-9_]+")
"""Nodes that are operators or group boxes."""
_DRAWN = re.compile(rb"(op|box|in|out|const)_[0-9_]+")
"""Nodes of a layout that are drawn boxes: operators, group boxes, graph inputs and outputs, constants (stubs,
notes, the legend and the bands' own nodes are not)."""


def sparse(plain: bytes, width: float, height: float) -> bool:
    """Whether a first layout (``-Tplain``) holds over ``SPARSE_PT2`` of its area a drawn box."""
    return _density(plain, width, height) > SPARSE_PT2


def _density(plain: bytes, width: float, height: float) -> float:
    """A layout's area per drawn box (``_DRAWN``)."""
    return width * height / max(1, sum(1 for m in _NODE.finditer(plain) if _DRAWN.fullmatch(m.group(1))))


def _sparse_try(columns: Columns, plain: bytes, width: float, height: float, last: bool) -> None:
    """A mostly empty page (a chain beside a wide row of branches, a fan of groups' frames) whose first layout is
    no strip is laid out again: with its groups framed in parts where their members lie far apart and its
    stubs' long texts in lines (when the emitter would cut some, ``Columns.partable``, or break some,
    ``wrappable``), then in columns, then in one column more with the first above
    the others (``Columns.under``: a wide band, then a long chain), then, when its longest flow is such a chain
    beside the others, with that chain alone in the columns under them (``cut_levels``), then in rows, its shape
    kept from each try
    (``Columns.shapes``): ``lay_out`` draws the try that is no strip, reads in order (no edge back to an earlier
    band: rows cut across the ranks may put a join above the branches it reads) and holds the least area a box.
    An overview (``Columns.along_only``: its rows wrap it already) is tried framed in parts and in columns only."""
    columns.shapes.append((too_long(width, height), columns.backward, _density(plain, width, height)))
    if last:
        return
    if not columns.column:
        if (columns.partable or columns.wrappable) and not columns.parted:  # emitted anew: its frames differ
            columns.parted, columns.script, columns.atoms = True, None, {}
            raise Reshape()
        if sum(1 for m in _NODE.finditer(plain) if _BOXED.fullmatch(m.group(1).decode("utf-8", "replace"))) < FEW_BOXES:
            return
        columns.first, columns.stacked = plain, False
    elif columns.stacked or columns.along_only:
        return
    elif not columns.levels and _under(columns):
        raise Reshape()
    else:
        columns.under, columns.stacked = False, True
    size = _GRAPH.search(columns.first)
    assert size is not None
    first_width, first_height = float(size.group(1)), float(size.group(2))
    along, across = (first_height, first_width) if columns.rankdir in ("TB", "BT") else (first_width, first_height)
    aim = _aim(columns.rankdir)
    for stacked in (True,) if columns.stacked else (False,) if columns.along_only else (False, True):
        columns.stacked = stacked
        count = round(math.sqrt(across / (aim * along))) if stacked else math.ceil(math.sqrt(aim * along / across))
        assignment = cut(columns, max(2, min(MAX_COLUMNS, count)))
        if assignment and assignment != columns.column:
            columns.assign(assignment, 1 + max(assignment.values()))
            raise Reshape()


def _under(columns: Columns) -> bool:
    """Assign the next try with the first column drawn above the others, if there is one: cut as the columns
    were in one column more (``cut``), then by flows (``cut_levels``)."""
    if not columns.under:
        columns.under = True
        assignment = cut(columns, min(MAX_COLUMNS, columns.count + 1))
        if assignment and len(set(assignment.values())) >= 3:
            columns.assign(assignment, 1 + max(assignment.values()))
            return True
    columns.levels = True
    assignment = cut_levels(columns)
    if not assignment:
        return False
    columns.assign(assignment, 1 + max(assignment.values()))
    return True


def checker(columns: Columns, last: bool, pages_over: float | None = None) -> Callable[[bytes], None] | None:
    """The ``graphviz_run.render_formats`` check of one try: raise ``Reshape`` (``columns`` assigned) when the
    layout is a strip along its ranks and columns would help (emitted framed in parts first when the strip is
    mostly empty and ``Columns.partable`` or ``spreadable``), or mostly empty (``_sparse_try``); None on the last
    try. ``pages_over``: a strip longer than this on the first try raises ``LongStrip`` instead (a flat
    picture drawn as pages)."""
    if last and not columns.shapes:
        return _measure(columns) if columns.turnable else None

    def check(plain: bytes) -> None:
        size = _measured(columns, plain)
        if size is None:
            return
        width, height = size
        if columns.shapes or (not columns.column and not too_long(width, height) and sparse(plain, width, height)):
            _sparse_try(columns, plain, width, height, last)
            return
        if not too_long(width, height):
            return
        along, across = (height, width) if columns.rankdir in ("TB", "BT") else (width, height)
        aim = _aim(columns.rankdir)
        if not columns.column:
            if pages_over is not None and along > max(pages_over, across):
                raise LongStrip(width, height)
            if columns.along_only and along <= across:
                return
            if (columns.partable or columns.spreadable) and not columns.parted and sparse(plain, width, height):
                columns.parted, columns.script, columns.atoms = True, None, {}  # framed in parts first, then cut
                raise Reshape()
            columns.first, columns.stacked = plain, along <= across  # wide across the ranks: rows along them
            # bands stacked along the ranks round their count down: a last band of a few items spans the width
            count = math.ceil(math.sqrt(aim * along / across)) if not columns.stacked else \
                round(math.sqrt(across / (aim * along)))
        elif columns.stacked:  # laid out in bands already: correct their count by how far off the shape came out
            count = round(columns.count * math.sqrt(across / (aim * along)))
        else:
            count = round(columns.count * math.sqrt(aim * along / across))
            if _slice_try(columns, max(2, min(MAX_COLUMNS, count))):
                raise Reshape()
            if count == columns.count:
                return
        count = max(2, min(MAX_COLUMNS, count))
        assignment = cut(columns, count)
        if not assignment or assignment == columns.column:
            if _slice_try(columns, count, True):  # no cut between its items helps: its frames sliced, cut between nodes
                raise Reshape()
            return
        columns.assign(assignment, 1 + max(assignment.values()))
        raise Reshape()

    return check


def _measure(columns: Columns) -> Callable[[bytes], None]:
    """The check of a last try that only measures it (``Columns.measured``)."""

    def check(plain: bytes) -> None:
        _measured(columns, plain)

    return check


def _measured(columns: Columns, plain: bytes) -> tuple[float, float] | None:
    """The page's width and height from its ``-Tplain`` (None when it has none), noted in ``Columns.measured``
    with whether it is a strip and its area per drawn box."""
    size = _GRAPH.search(plain)
    if size is None:
        return None
    width, height = float(size.group(1)) * 72 + columns.pad, float(size.group(2)) * 72 + columns.pad
    columns.measured = too_long(width, height), _density(plain, width, height)
    return width, height


def _aim(rankdir: str) -> float:
    """Across / along the ranks that the columns (or rows) aim at."""
    return TARGET_ASPECT if rankdir in ("TB", "BT") else 1 / TARGET_ASPECT


SLICE_OVER = 1.0
"""A page in bands that is still a strip has its frames sliced (``_slice_try``) when one item is this many times as
long as the bands it is cut into should be."""


def _slice_try(columns: Columns, count: int, stuck: bool = False) -> bool:
    """Whether a page already in bands along its ranks, and a strip still, is to be emitted anew with its frames
    sliced into ``count`` bands (``Columns.sliced``; ``lay_out`` then assigns each item the band it lies in,
    ``_sliced``): a group drawn in full is one item, never cut, and under ``--rankdir LR``, where a chain is about
    three times as long as drawn top to bottom, one frame can be longer than a whole row should be (PP-OCRv5 det
    page 1: three frames of 5,500 pt, one a row, 6,621 × 825 pt). The cuts fall between nodes near their even
    places where the fewest edges cross (``_cuts``); only when some item is over ``SLICE_OVER`` times as long as
    an even band, or the cut between items (``cut``) is ``stuck``: it finds no other bands than those drawn
    (yolov8n-320 page 4, two rows of 3,559 pt, each a frame after a stretch of operators, stayed 4.86 : 1)."""
    if not columns.sliceable or columns.stacked or columns.under or columns.levels:
        return False
    spans = _spans(columns)
    parts = {a: [spans[n] for n in names if n in spans] for a, names in columns.atoms.items() if a != "legend"}
    parts = {a: p for a, p in parts.items() if p}
    if not parts:
        return False
    even = _length([s for p in parts.values() for s in p]) / count
    if not stuck and max(_length(p) for p in parts.values()) <= SLICE_OVER * even:
        return False
    centre = {n: (start + end) / 2 for n, (start, end) in spans.items()}
    nodes = sorted(spans[n] for a in parts for n in columns.atoms[a] if n in spans)
    cuts = _cuts(nodes, [(centre[t], centre[h]) for t, h in _names(columns.first) if t in centre and h in centre],
                 count)
    if not cuts or cuts == columns.sliced:
        return False
    columns.sliced, columns.reslice, columns._centres = cuts, True, {}
    columns.script, columns.atoms, columns.column, columns._node_column = None, {}, {}, {}
    return True


def _sliced(columns: Columns) -> dict[str, int]:
    """Each item of a page emitted with its frames sliced (``Columns.sliced``) in the band its nodes lie in (a
    slice lies in one); an item the first layout lacks beside what it is tied to, or first; a lone stub with
    its readers (``_follow_neighbours``); the legend first."""
    column: dict[str, int] = {}
    for atom, names in columns.atoms.items():
        found = [b for b in (columns.band(n) for n in names) if b is not None]
        if found and atom != "legend":
            column[atom] = min(found)
    owner = {n: a for a, names in columns.atoms.items() for n in names}
    for atom in columns.atoms:
        if atom not in column:
            near = [column[owner[b]] for t, h in columns.ties for a, b in ((t, h), (h, t))
                    if owner.get(a) == atom and owner.get(b) in column]
            column[atom] = min(near, default=0)
    _follow_neighbours(column, columns.atoms, _names(columns.first))
    column["legend"] = 0
    used = {number: k for k, number in enumerate(sorted(set(column.values())))}
    return {atom: used[number] for atom, number in column.items()}


def cut(columns: Columns, count: int) -> dict[str, int]:
    """Each atom's column: ``count`` bands of about equal length along the ranks of the first layout, each cut
    between items, where the fewest edges cross near its even place; or, when that leaves a longer band (flows
    drawn side by side all along leave no gap: a page whose body is parallel branches), the items in reading
    order (``_sequence``) cut into bands as short as they can be. Empty: no place to cut."""
    spans = _spans(columns, columns.stacked)
    atoms = {}
    for atom, names in columns.atoms.items():
        placed = [spans[n] for n in names if n in spans]
        if placed and atom != "legend":
            atoms[atom] = (min(s for s, _ in placed), max(e for _, e in placed))
    if len(atoms) < 2:
        return {}
    centre = {n: (s + e) / 2 for n, (s, e) in spans.items()}
    named = [(t, h) for t, h in _names(columns.first) if t in centre and h in centre]
    cuts = _cuts(sorted(atoms.values()), [(centre[t], centre[h]) for t, h in named], count)
    parts = {a: [spans[n] for n in columns.atoms[a] if n in spans] for a in atoms}
    owner = {n: a for a, names in columns.atoms.items() if a in atoms for n in names}
    links = [(owner[t], owner[h]) for t, h in named if t in owner and h in owner and owner[t] != owner[h]]
    column = _cut_sequence(_sequence(atoms, links), parts, count)
    if cuts:
        between = {atom: sum(start >= c for c in cuts) for atom, (start, _) in atoms.items()}
        if _longest(between, parts) <= SEQUENCE_GAIN * _longest(column, parts):
            column = between
    if len(set(column.values())) < 2:
        return {}
    _follow_neighbours(column, columns.atoms, named)
    used = {number: k for k, number in enumerate(sorted(set(column.values())))}
    column = {atom: used[number] for atom, number in column.items()}  # no column left with the legend alone
    column["legend"] = 0
    return column


LEVEL_LENGTH = 1.5
"""A flow is a chain to draw in columns under the others (``cut_levels``) when it is this many times as long."""
TURN_PT = 2 * (24 + RANK_GAP_PT)
"""What the turns at both ends of a column add to its length, and the gap under the first column."""


def cut_levels(columns: Columns) -> dict[str, int]:
    """A page of separate flows, the longest a chain beside the others (basic-pitch's constant-Q page: a
    downsampling chain beside the band of its octaves): the others and the legend in column 0, drawn across the
    top (``Columns.under``), the chain cut in reading order into the columns under them (``_level_count``). An
    item of one node that only feeds or only reads (a stub, a graph input or output) goes with the first column
    of what it touches. Empty: no such chain, or it stays in one column."""
    spans = _spans(columns)
    parts = {a: [spans[n] for n in names if n in spans] for a, names in columns.atoms.items() if a != "legend"}
    parts = {a: p for a, p in parts.items() if p}
    owner = {n: a for a in parts for n in columns.atoms[a]}
    links = list(dict.fromkeys((owner[t], owner[h]) for t, h in _names(columns.first)
                               if t in owner and h in owner and owner[t] != owner[h]))
    lone = _lone(columns.atoms, parts, links)
    flows = _flows([a for a in parts if a not in lone], links)
    if len(flows) < 2:
        return {}
    chain = max(flows, key=lambda flow: _length([s for a in flow for s in parts[a]]))
    top = [n for a, names in columns.atoms.items() if a not in chain and a not in lone for n in names if n in spans]
    if _length([s for a in chain for s in parts[a]]) < LEVEL_LENGTH * _length([spans[n] for n in top]):
        return {}
    column = _level_count(columns, top, {a: parts[a] for a in chain}, links)
    if len(set(column.values())) < 2:
        return {}
    column |= {a: 0 for a in columns.atoms if a not in column and a not in lone}
    for atom in [a for a in parts if a in lone]:  # the page's order, not the hash seed's: the DOT lists ends so
        near = [column[b] for t, h in links for b in (t, h) if atom in (t, h) and b != atom and b in column]
        column[atom] = min(near, default=0)
    used = {number: k for k, number in enumerate(sorted(set(column.values())))}
    return {atom: used[number] for atom, number in column.items()}


def _level_count(columns: Columns, top: list[str], chain: dict[str, list[tuple[float, float]]],
                 links: list[tuple[str, str]]) -> dict[str, int]:
    """The chain's items (``cut_levels``) cut in reading order into columns 1, 2… under the rest (``top``): the
    fewest columns for which the page, as the first layout's sizes tell, is no strip and holds at most
    ``SPARSE_PT2`` a box; else those of least area."""
    along, across = _spans(columns), _spans(columns, True)
    drawn = max(1, sum(1 for m in _NODE.finditer(columns.first) if _DRAWN.fullmatch(m.group(1))))
    width = max(across[n][1] for n in top) - min(across[n][0] for n in top)
    band = _length([along[n] for n in top]) + TURN_PT + columns.pad
    pitch = max(across[n][1] - across[n][0] for a in chain for n in columns.atoms[a] if n in across) + RANK_GAP_PT
    inner = [(t, h) for t, h in links if t in chain and h in chain]
    order = _sequence({a: (min(s for s, _ in p), max(e for _, e in p)) for a, p in chain.items()}, inner)
    tried: list[tuple[bool, float, dict[str, int]]] = []
    for count in range(2, MAX_COLUMNS + 1):
        column = {a: 1 + k for a, k in _cut_sequence(order, chain, count).items()}
        back = True
        while back:  # items that feed each other (a group framed in parts) in one column: no edge read back
            back = False
            for tail, head in inner:
                if column[tail] > column[head]:
                    column[tail], back = column[head], True
        used = len(set(column.values()))
        size = max(width, used * pitch) + columns.pad, band + _longest(column, chain)
        over = size[0] * size[1] > SPARSE_PT2 * drawn
        if not over and not too_long(*size):  # the fewest columns that do
            return column
        tried.append((too_long(*size), size[0] * size[1], column))
    return min(tried, key=lambda t: t[:2])[2]


def _lone(atoms: dict[str, list[str]], parts: dict[str, list[tuple[float, float]]],
          links: list[tuple[str, str]]) -> set[str]:
    """The items of one node, no operator nor group box, that only feed or only read other items (a stub, a graph
    input or output)."""
    feeding = {t for t, _ in links}
    read = {h for _, h in links}
    return {a for a in parts if len(atoms[a]) == 1 and not _BOXED.fullmatch(atoms[a][0])
            and not (a in feeding and a in read)}


def _flows(atoms: list[str], links: list[tuple[str, str]]) -> list[list[str]]:
    """``atoms`` grouped by the links between them (connected, either way), each group and its atoms in the
    order of ``atoms``."""
    root = {a: a for a in atoms}

    def find(atom: str) -> str:
        while root[atom] != atom:
            root[atom] = root[root[atom]]
            atom = root[atom]
        return atom

    for tail, head in links:
        if tail in root and head in root:
            root[find(tail)] = find(head)
    groups: dict[str, list[str]] = {}
    for atom in atoms:
        groups.setdefault(find(atom), []).append(atom)
    return list(groups.values())


def _longest(column: dict[str, int], parts: dict[str, list[tuple[float, float]]]) -> float:
    """The length of the longest band of ``column`` (``_length``)."""
    bands: dict[int, list[tuple[float, float]]] = {}
    for atom, number in column.items():
        bands.setdefault(number, []).extend(parts[atom])
    return max(_length(spans) for spans in bands.values())


def _sequence(atoms: dict[str, tuple[float, float]], links: list[tuple[str, str]]) -> list[str]:
    """The atoms in reading order: each after the atoms that feed it, a flow followed to its end before the
    next one starts (a depth-first topological order), ties to the one drawn first in the first layout, then
    declared first."""
    feeds: dict[str, list[str]] = {a: [] for a in atoms}
    waiting = dict.fromkeys(atoms, 0)
    for tail, head in dict.fromkeys(links):
        feeds[tail].append(head)
        waiting[head] += 1
    rank = {a: (start, k) for k, (a, (start, _)) in enumerate(atoms.items())}
    order: list[str] = []
    left = set(atoms)
    while left:
        ready = [a for a in left if not waiting[a]] or list(left)  # a cycle: the first drawn goes on
        following: list[str] = []
        for placed in reversed(order):  # the latest flow with a ready next item goes on
            following = [a for a in ready if a in feeds[placed]]
            if following:
                break
        chosen = min(following or ready, key=rank.__getitem__)
        order.append(chosen)
        left.discard(chosen)
        for head in feeds[chosen]:
            waiting[head] -= 1
    return order


def _cut_sequence(order: list[str], parts: dict[str, list[tuple[float, float]]], count: int) -> dict[str, int]:
    """``order`` cut into at most ``count`` bands, as short as they can be. A band is about as long as its
    nodes' spans in the first layout cover together, with a gap after each stretch (``_length``): branches
    drawn side by side count once, and an item stretched over the first layout only by its nodes' length."""

    growing: dict[int, _Growing] = {}

    def bands(limit: float) -> list[int]:
        starts = [0]
        for k in range(1, len(order)):
            if _band_length(growing, order, parts, starts[-1], k) > limit:
                starts.append(k)
        return starts

    low = max(_length(p) for p in parts.values())
    high = _length([s for p in parts.values() for s in p])
    for _ in range(30):
        middle = (low + high) / 2
        low, high = (middle, high) if len(bands(middle)) > count else (low, middle)
    starts = bands(high)
    return {atom: sum(k >= start for start in starts[1:]) for k, atom in enumerate(order)}


def _length(spans: list[tuple[float, float]]) -> float:
    """The length that ``spans`` cover together, with a rank's gap after each stretch."""
    return _walked(sorted(spans), 0.0, -math.inf)[0]


def _walked(ordered: Iterable[tuple[float, float]], total: float, reach: float) -> tuple[float, float]:
    """``_length``'s walk over spans in order, from ``total`` and ``reach``: the two after them."""
    for start, end in ordered:
        if start > reach:
            total += RANK_GAP_PT
        if end > reach:
            total += end - max(start, reach)
            reach = end
    return total, reach


class _Growing:
    """The spans of a band from one start as it grows an atom at a time (``_band_length``): in order, the
    walk's total and reach over them, and the lengths found so far by the band's last atom."""

    def __init__(self) -> None:
        self.ordered: list[tuple[float, float]] = []
        self.total, self.reach = 0.0, -math.inf
        self.lengths: list[float] = []


def _band_length(growing: dict[int, _Growing], order: list[str], parts: dict[str, list[tuple[float, float]]],
                 first: int, last: int) -> float:
    """``_length`` of the spans of ``order[first:last + 1]``, the same float: the bisection of ``_cut_sequence``
    asks for the same bands again, and a band's new spans mostly come after all its others (the walk then goes
    on from where it was instead of starting again)."""
    band = growing.setdefault(first, _Growing())
    while len(band.lengths) <= last - first:
        new = sorted(parts[order[first + len(band.lengths)]])
        if new and band.ordered and new[0] < band.ordered[-1]:
            band.ordered = sorted(band.ordered + new)
            band.total, band.reach = _walked(band.ordered, 0.0, -math.inf)
        else:
            band.ordered += new
            band.total, band.reach = _walked(new, band.total, band.reach)
        band.lengths.append(band.total)
    return band.lengths[last - first]


def _follow_neighbours(column: dict[str, int], atoms: dict[str, list[str]], edges: list[tuple[str, str]]) -> None:
    """A lone node that only feeds (a stub, a graph input) or only reads (a graph output) nodes of one column
    goes into that column: a stub drawn at its reader never needs a stub of its own to reach it."""
    into: dict[str, set[str]] = {}
    out: dict[str, set[str]] = {}
    for tail, head in edges:
        out.setdefault(tail, set()).add(head)
        into.setdefault(head, set()).add(tail)
    owner = {n: a for a, names in atoms.items() if a in column for n in names}
    for atom, names in atoms.items():
        if atom not in column or len(names) != 1:
            continue
        name = names[0]
        ends = out.get(name, set()) if not into.get(name) else into[name] if not out.get(name) else set()
        places = {column[owner[n]] for n in ends if n in owner}
        if len(places) == 1:
            column[atom] = places.pop()


def _names(plain: bytes) -> list[tuple[str, str]]:
    """The (tail, head) names of every edge of a ``-Tplain`` layout."""
    return list(_edge_names(plain))


@functools.lru_cache(maxsize=8)
def _edge_names(plain: bytes) -> tuple[tuple[str, str], ...]:
    """``_names``, kept: a page's first layout is read by its cut (``cut``) and by its sheet's ``finish``."""
    return tuple((m.group(1).decode("utf-8", "replace"), m.group(2).decode("utf-8", "replace"))
                 for m in _EDGE.finditer(plain))


def _spans(columns: Columns, across: bool = False) -> dict[str, tuple[float, float]]:
    """Each node's extent along the ranks in the first layout (points from the first rank's side); ``across``,
    across them (from the left, or the top under LR)."""
    size = _GRAPH.search(columns.first)
    height = float(size.group(2)) if size else 0.0
    vertical = (columns.rankdir in ("TB", "BT")) != across
    spans: dict[str, tuple[float, float]] = {}
    for match in _NODE.finditer(columns.first):
        x, y, w, h = (float(v) * 72 for v in match.groups()[1:])
        spans[match.group(1).decode("utf-8", "replace")] = (height * 72 - y - h / 2, height * 72 - y + h / 2) \
            if vertical else (x - w / 2, x + w / 2)
    if columns.rankdir in ("BT", "RL") and not across:
        total = max((end for _, end in spans.values()), default=0.0)
        spans = {n: (total - end, total - start) for n, (start, end) in spans.items()}
    return spans


def _cuts(spans: list[tuple[float, float]], edges: list[tuple[float, float]], count: int) -> list[float]:
    """Places to cut (along the ranks) into ``count`` bands: gaps between the items' spans, each chosen near
    its even place where the fewest edges cross it."""
    gaps: list[float] = []
    reach = spans[0][1]
    for start, end in spans[1:]:
        if start > reach:
            gaps.append((reach + start) / 2)
        reach = max(reach, end)
    if not gaps:
        return []
    low, high = spans[0][0], reach
    step = (high - low) / count
    chosen: list[float] = []
    for k in range(1, count):
        even = low + k * step
        later = [g for g in gaps if not chosen or g > chosen[-1]]
        near = [g for g in later if abs(g - even) <= CUT_WINDOW * step]
        if near:
            chosen.append(min(near, key=lambda g: (sum(1 for a, b in edges if min(a, b) < g < max(a, b)),
                                                   abs(g - even))))
        elif later:
            chosen.append(min(later, key=lambda g: abs(g - even)))
    return chosen


TURN_PT2 = 150_000
"""Area per drawn box past which a page drawn left to right is laid out top to bottom too (``lay_out``)."""


def lay_out(source: str, columns: Columns, emit: Callable[[Columns], str],
            render: Callable[[str, Callable[[bytes], None] | None], dict[str, bytes]],
            pages_over: float | None = None) -> tuple[str, dict[str, bytes]]:
    """``source`` (emitted into ``columns``) laid out by ``render(source, check)``; a strip along its ranks is
    emitted again in columns (``emit``) and laid out again, at most ``TRIES`` layouts. A page drawn left to right
    (``Columns.turnable``) that comes out mostly empty all the same (over ``TURN_PT2`` a box: a chain beside a
    legend far taller than it, a fan of branches stacked down one rank while the chain runs on) is laid out top to
    bottom as well, and the denser of the two that is no strip drawn. Returns the source drawn and what ``render``
    made of it.

    Raises:
        LongStrip: the first layout is a strip longer than ``pages_over``.
    """
    drawn, laid = _tries(source, columns, emit, render, pages_over)
    if not columns.turnable or columns.measured is None or columns.measured[1] <= TURN_PT2:
        return drawn, laid
    ahead = columns.measured
    columns.turn()
    try:
        turned, laid_turned = _tries(emit(columns), columns, emit, render, None)
    except graphviz_run.TooBig:  # over the caller's largest side top to bottom: left to right it was not
        return drawn, laid
    if columns.measured is None or columns.measured[0] > ahead[0] or columns.measured[1] >= ahead[1]:
        return drawn, laid
    return turned, laid_turned


def _tries(source: str, columns: Columns, emit: Callable[[Columns], str],
           render: Callable[[str, Callable[[bytes], None] | None], dict[str, bytes]],
           pages_over: float | None) -> tuple[str, dict[str, bytes]]:
    """``lay_out``'s layouts of one direction; ``Columns.measured`` says what the one drawn came out as, when its
    layout was checked (None: not known)."""
    previous = None
    tried = []
    for attempt in range(TRIES + 2):
        try:
            tried.append(source)
            columns.pad = graphviz_run.margin(source)
            columns.measured = None
            last = attempt == (TRIES + 1 if columns.shapes else TRIES - 1)  # a mostly empty page: two tries more
            laid = render(source, checker(columns, last, pages_over if not attempt else None))
            shapes = columns.shapes  # of the last tries: a strip framed in parts first starts them on its second
            least = min(range(len(shapes)), key=lambda k: (shapes[k], k)) if shapes else -1
            best = len(tried) - len(shapes) + least if shapes else -1
            if best in (-1, len(tried) - 1):
                return source, laid
            columns.measured = shapes[least][0], shapes[least][2]
            return tried[best], render(tried[best], None)  # a mostly empty page: its best try
        except Reshape:
            if columns.reslice:  # its frames sliced where the bands are cut: emitted so, then put in its bands
                columns.reslice = False
                emit(columns)
                assignment = _sliced(columns)
                columns.assign(assignment, 1 + max(assignment.values()))
            previous, source = source, replay(columns) or emit(columns)
        except (graphviz_run.LayoutTimeout, graphviz_run.TooBig):
            raise
        except RenderError:
            if previous is None:
                raise
            # dot could not route the edges of these columns (Graphviz 2.43: "Pshortestpath failed"): the layout
            # before them is drawn instead
            columns.measured = None
            return previous, render(previous, None)
    raise AssertionError("the last try has no check")  # pragma: no cover
