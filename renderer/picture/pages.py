"""Which operators go on which page when a model is too big for one picture.

A *book* is an overview page plus detail pages, planned from the group tree (``renderer.picture.grouping``): each page
belongs to one group and draws that group's operators in full, the smaller of its sub-groups inline (as
clusters), and the rest as one box each, linked to their own pages. Every drawn operator is on exactly one page.
Focused views (``--focus``, ``--top``) are books too, whose pages may share operators.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from renderer.core.ir import Graph, Model, Node, Value
from renderer.files.page_names import page_stem
from renderer.picture.grouping.build import group_model, repeated_runs
from renderer.picture.grouping.group import Group
from renderer.picture.grouping.names import display_path, name_run

NodeKey = tuple[str, int, int]

AUTO_COLLAPSE_OPS = 1500
"""``--collapse auto`` draws one flat picture up to this many drawn operators (see benchmarks/bench_big.py)."""
AUTO_COLLAPSE_SPAN = 1200
"""...and while its long edges make at most this many virtual nodes (ranks an edge crosses without an end).
dot's time grows with them far faster than with operators: measured (CPU time of ``dot -Tsvg``, shape chains
folded) on the generated BERT encoders, where an attention mask reaches every layer, 960 virtual nodes (285
operators) took 0.8 s, 1,460 (353) 3.5 s, 2,064 (421) 13 s, 3,584 (557) 87 s; face_detection with its 74 weight
DEQUANTIZE ops drawn makes 58."""
PAGE_OPS = 90
"""Operators drawn in full on one detail page, at most (the tallest page stays under ``MAX_PAGE_PT``)."""
MAX_PAGE_PT = 199 * 72
"""No page is bigger than this a side: PDF viewers open pages up to 200 in, and ``graphviz_run`` shrinks a PDF
page over 199 in to fit (which would shrink its text). A flat picture laid out bigger is drawn as pages
instead, and a page laid out bigger is planned again with fewer operators."""
RANK_PT = 60
"""Least height a rank of operators takes (a box of one header row and one row of text, and the gap to the
next rank): a flat picture with more ranks than ``MAX_PAGE_PT / RANK_PT`` is drawn as pages without trying.
Measured on the light_* CNNs and a torch-exported CNN chain: 75-100 pt a rank with the default rows."""
OVERVIEW_BOXES = 60
"""Items (boxes and operators) on a page of boxes, at most: an overview must stay readable."""
OVERVIEW_INLINE_OPS = 4
"""The overview draws a group in full only when it is this small; bigger ones are boxes."""
PACK_SHARE = 3
"""Sibling groups of at most 1/3 of a page's operators (30) share pages: a 40-operator transformer layer keeps
its own page, while the 6-12-operator blocks of a CNN chain are drawn ten to a page instead of one each."""
WRAPPER_SHARE = 0.85
"""A group holding at least this share of its parent's operators is looked through on the overview (drawn as a
frame of its own operators and its groups' boxes), level after level: the wrapper scope of an export, such as
sentence-transformers' ``model.0/auto_model`` beside its pooling (91 % of paraphrase-MiniLM-L3's operators; its
``encoder``, 92 % of it, then shows its layers). Below 90 % so that a small model's few operators of pre- and
post-processing (11 beside a 3-layer BERT) still leave it a wrapper. The next shares of a group with groups of its
own among the held-out models and samples: 88 % (a Loop body in its LSTM's scope, chars2vec), 82 % (magika's
``MagikaV2`` beside its input's operators), both drawn as one picture; then 78 % (basic-pitch's ``cq_t2010v2_1``)."""
PACK_KIND = "packed"
"""``Group.kind`` of the made-up group of a page holding several small sibling groups (not in the tree)."""


@dataclass(slots=True, eq=False)
class Inline:
    """A sub-group drawn inside its parent's page as a cluster of its operators."""

    group: Group
    ops: list[Node] = field(default_factory=list)
    inlines: list[Inline] = field(default_factory=list)
    boxes: list[list[Group]] = field(default_factory=list)


@dataclass(slots=True, eq=False)
class Page:
    """One picture of a book.

    Attributes:
        index: 0 for the overview, then depth-first in model order: a page's own pages follow it in the order of
            their boxes as a reader follows it (``in_model_order``), frames' boxes where the frames are.
        group: the group it shows (for focus pages, a made-up group holding the neighbourhood).
        ops: operators drawn in full directly on the page (not in a cluster).
        inlines: sub-groups drawn in full as clusters.
        boxes: sub-groups drawn as one box each, linked to their pages; a run of several structurally
            identical siblings (``grouping.repeated_runs``) is one box, with a linked cell per instance.
        parent: the page holding this page's box, None for the overview.
        highlight: operators to mark (the hot spots of a ``--top`` page).
        io_graphs: graphs whose input/output tensors are drawn on this page.
    """

    index: int
    group: Group
    ops: list[Node] = field(default_factory=list)
    inlines: list[Inline] = field(default_factory=list)
    boxes: list[list[Group]] = field(default_factory=list)
    parent: Page | None = None
    highlight: list[Node] = field(default_factory=list)
    io_graphs: list[int] = field(default_factory=list)
    title: str = ""

    @property
    def stem(self) -> str:
        """``overview`` or ``page-NNN``: the page's file name without extension, and its anchor."""
        return page_stem(self.index)

    def _clusters(self) -> list[Inline]:
        found: list[Inline] = []
        stack = list(self.inlines)
        while stack:
            inline = stack.pop()
            found.append(inline)
            stack.extend(inline.inlines)
        return found

    def drawn_ops(self) -> list[Node]:
        """Every operator drawn in full on this page, clusters included."""
        return self.ops + [node for inline in self._clusters() for node in inline.ops]

    def all_boxes(self) -> list[list[Group]]:
        """Every box (a run of one or more groups) on the page, clusters included."""
        return self.boxes + [run for inline in self._clusters() for run in inline.boxes]

    def boxes_in_order(self) -> list[list[Group]]:
        """``all_boxes`` in model order: the page's group's children in turn, a cluster's boxes where the cluster
        is (``all_boxes`` gives the page's own boxes before its clusters')."""
        runs = {id(run[0]): run for run in self.all_boxes()}
        clusters = {id(inline.group) for inline in self._clusters()}
        found: list[list[Group]] = []
        pending = list(reversed(_as_read(self.group.children)))
        while pending:
            group = pending.pop()
            if id(group) in runs:
                found.append(runs[id(group)])
            elif id(group) in clusters:
                pending.extend(reversed(_as_read(group.children)))
        return found

    def crumbs(self) -> list[Page]:
        """The pages from the overview down to this one."""
        chain: list[Page] = []
        page: Page | None = self
        while page is not None:
            chain.append(page)
            page = page.parent
        return chain[::-1]


@dataclass(slots=True, eq=False)
class Book:
    """The pages of one report, and where each operator and group lives.

    Attributes:
        pages: overview first.
        page_of_op: operator key → the page drawing it in full (for links); focus books may leave ops out.
        page_of_group: id(group) → the page showing that group (its own page).
        kind: ``groups`` (overview + detail pages) or ``focus``.
        refit: see below.
    """

    pages: list[Page]
    page_of_op: dict[NodeKey, Page]
    page_of_group: dict[int, Page]
    kind: str = "groups"
    refit: Callable[[list[tuple[Page, float]]], Book] | None = None
    """For a focus book: its views planned again, those of the given pages (laid out over ``MAX_PAGE_PT``,
    with their longer side) cut into smaller parts."""

    def box_key(self, group: Group) -> str:
        """What tells ``group``'s box apart in element ids: its page's number, and for a group sharing a page
        with its siblings (packed), its place on that page (``12-3``)."""
        page = self.page_of_group[id(group)]
        if page.group is group or page.group.kind != PACK_KIND:
            return str(page.index)
        return f"{page.index}-{1 + next(i for i, g in enumerate(page.group.children) if g is group)}"


def plan(model: Model, drawn: Callable[[Node], bool], collapse: str | int = "auto",
         page_ops: int = PAGE_OPS, overview_boxes: int = OVERVIEW_BOXES, force: bool = False,
         budgets: dict[str, int] | None = None) -> Book | None:
    """The book for ``model``, or None when it is drawn as one flat picture.

    ``force``: pages even when ``collapse`` is ``auto`` and the model looked small enough (its flat picture,
    once laid out, was over ``MAX_PAGE_PT``). ``budgets``: group path → fewer operators in full on that
    group's page than ``page_ops`` (its page, once laid out, was over the limit).
    """
    if collapse == "none":
        return None
    if collapse == "auto" and not force and not needs_pages(model, drawn):
        return None
    depth = collapse if isinstance(collapse, int) else None
    root = group_model(model, drawn, max_items=overview_boxes, max_depth=depth)
    book = Book([], {}, {})
    _add_page(book, root, None, _Budgets(page_ops, overview_boxes, budgets or {}))
    in_model_order(book)
    graph_owner = _graph_groups(root)
    for graph in model.graphs:
        group = graph_owner.get(graph.index, root) if graph.index else root
        if graph.index and graph.index not in graph_owner:  # a body merged into a group (--collapse N)
            page = next((book.page_of_op[n.key] for n in graph.nodes if n.key in book.page_of_op), None)
            if page is not None:
                page.io_graphs.append(graph.index)
                continue
        page = book.page_of_group.get(id(group))
        while page is None and group.parent is not None:  # inlined into an ancestor's page
            group = group.parent
            page = book.page_of_group.get(id(group))
        (page or book.pages[0]).io_graphs.append(graph.index)
    return book


def in_model_order(book: Book) -> None:
    """Number the pages of ``book`` depth-first with each page's own pages in the order of their boxes on it
    (``Page.boxes_in_order``): the order a reader follows the overview. Planned box after box, a page's own
    boxes were numbered before those inside its frames (paraphrase-MiniLM-L3's pooling ``model.1``, the last part
    of the model, was page 1, before the layers of the encoder framed above it)."""
    below: dict[int, list[Page]] = {}
    for page in book.pages[1:]:
        below.setdefault(id(page.parent), []).append(page)
    ordered: list[Page] = []
    pending = [book.pages[0]]
    while pending:
        page = pending.pop()
        ordered.append(page)
        place = {id(group): (i, j) for i, run in enumerate(page.boxes_in_order()) for j, group in enumerate(run)}
        own = sorted(below.get(id(page), []), key=lambda child: place.get(id(_first(child)), (len(place), 0)))
        pending.extend(reversed(own))
    for index, page in enumerate(ordered):
        page.index = index
    book.pages[:] = ordered


def _as_read(groups: list[Group]) -> list[Group]:
    """Sibling groups in the order their results come: by the last of their operators in graph order (the first
    says little: exporters and quantizers hoist a group's constants, weight casts and shape reads to the top of
    the graph, so a TTS's decoder came before its encoder). Siblings of different graphs keep their order."""
    graph = groups[0].graph if groups else None
    if any(group.graph is not graph for group in groups):
        return groups
    last = {id(group): max((node.index for node in group.members() if node.graph is graph), default=-1)
            for group in groups}
    return sorted(groups, key=lambda group: last[id(group)])


def _first(page: Page) -> Group:
    """The group whose box leads to ``page``: its own, or the first of a packed page's."""
    return page.group.children[0] if page.group.kind == PACK_KIND else page.group


def needs_pages(model: Model, drawn: Callable[[Node], bool]) -> bool:
    """Whether one flat picture of ``model`` would be too big, too tall or too slow to lay out."""
    count = 0
    span = 0
    ranks = 0
    for graph in model.graphs:
        nodes = [n for n in graph.nodes if drawn(n)]
        count += len(nodes)
        graph_span, graph_ranks = _long_edge_span(graph, nodes)
        span += graph_span
        ranks = max(ranks, graph_ranks)  # a body is drawn beside its owner: the tallest graph is a lower bound
    return count > AUTO_COLLAPSE_OPS or span > AUTO_COLLAPSE_SPAN or ranks * RANK_PT > MAX_PAGE_PT


def _long_edge_span(graph: Graph, nodes: list[Node]) -> tuple[int, int]:
    """Ranks crossed by edges without ending there, and the ranks, as dot would rank ``nodes`` (approximately:
    each node as early as its inputs allow, then pulled down next to its readers when it has at least as many
    of them as inputs, as dot's edge-length minimisation does for a weight's DEQUANTIZE)."""
    rank: dict[int, int] = {}
    inputs: dict[int, list[int]] = {}
    readers: dict[int, list[int]] = {}
    for node in nodes:
        sources = [v.producer.index for v in node.inputs if v is not None and v.producer is not None
                   and v.producer.graph is graph and v.producer.index in rank]
        inputs[node.index] = sources
        rank[node.index] = 1 + max((rank[i] for i in sources), default=-1)
        for i in sources:
            readers.setdefault(i, []).append(node.index)
    for node in reversed(nodes):
        after = readers.get(node.index)
        if after and len(after) >= len(inputs[node.index]):
            rank[node.index] = max(rank[node.index], min(rank[i] for i in after) - 1)
    span = sum(max(0, rank[r] - rank[n] - 1) for n, after in readers.items() for r in after)
    return span, 1 + max(rank.values(), default=-1)


@dataclass(frozen=True, slots=True)
class _Budgets:
    """How much one page may draw: operators in full on a detail page (``per_group`` overrides by group
    path), items on the overview."""

    page_ops: int
    overview_boxes: int
    per_group: dict[str, int]

    def ops(self, group: Group) -> int:
        return self.per_group.get(group.path, self.page_ops)

    def ops_packed(self, owner: Group | None) -> int:
        """Operators on a page packing children of ``owner``."""
        return self.per_group.get(pack_budget_key(owner), self.page_ops)


def _add_page(book: Book, group: Group, parent: Page | None, budgets: _Budgets) -> Page:
    title = display_path(group) if group.parent else "overview"
    page = Page(len(book.pages), group, list(group.nodes), parent=parent, title=title)
    book.pages.append(page)
    book.page_of_group[id(group)] = page
    for node in group.nodes:
        book.page_of_op[node.key] = page
    overview = parent is None
    page_ops = budgets.ops(group)
    _fill(page, group, page_ops - len(group.nodes), budgets.overview_boxes if overview else page_ops, book,
          OVERVIEW_INLINE_OPS if overview else page_ops)
    _add_box_pages(book, page, budgets)
    return page


def _add_box_pages(book: Book, page: Page, budgets: _Budgets) -> None:
    """A page for each box on ``page``; consecutive small sibling groups share one (packed), up to a page's
    worth of operators, so a model of many small blocks does not become as many pages. A group a packed page
    could not draw in full gets a page of its own (never packed again)."""
    boxed = [group for run in page.all_boxes() for group in run]
    packed_here = {id(g) for g in page.group.children} if page.group.kind == PACK_KIND else set()
    alone = [[g] for g in boxed if id(g) in packed_here]
    for pack in alone + _packs([g for g in boxed if id(g) not in packed_here], budgets):
        if len(pack) == 1:
            _add_page(book, pack[0], page, budgets)
        else:
            _add_pack_page(book, pack, page, budgets)


def _packs(groups: list[Group], budgets: _Budgets) -> list[list[Group]]:
    """``groups`` cut into runs of consecutive siblings that together fit one page; a group bigger than
    1 / ``PACK_SHARE`` of a page stays alone."""
    packs: list[list[Group]] = []
    total = 0
    for group in groups:
        limit = budgets.ops_packed(group.parent)
        small = group.size <= limit // PACK_SHARE
        if packs and small and packs[-1][0].parent is group.parent and total + group.size <= limit \
                and packs[-1][-1].size <= limit // PACK_SHARE:
            packs[-1].append(group)
            total += group.size
        else:
            packs.append([group])
            total = group.size
    return packs


def _add_pack_page(book: Book, groups: list[Group], parent: Page, budgets: _Budgets) -> Page:
    """One page drawing several sibling groups in full, each as a cluster."""
    label = pack_label(groups)
    owner = groups[0].parent
    pack = Group(label, f"{owner.path}/{label}" if owner is not None and owner.path else label, PACK_KIND,
                 children=list(groups), parent=owner, graph=groups[0].graph, _order=groups[0]._order)
    page = Page(len(book.pages), pack, [], parent=parent, title=label)
    book.pages.append(page)
    book.page_of_group[id(pack)] = page
    for group in groups:
        book.page_of_group[id(group)] = page
    limit = budgets.ops_packed(owner)
    _fill(page, pack, limit, limit + len(groups), book, limit)  # items: the groups' boxes turn into their ops
    _add_box_pages(book, page, budgets)
    return page


def pack_label(groups: list[Group]) -> str:
    """The name of a page of several sibling groups, from theirs (``grouping.name_run``)."""
    return name_run(groups) or f"{groups[0].label} … {groups[-1].label}"


def pack_budget_key(owner: Group | None) -> str:
    """The ``budgets`` key for the pages packing the children of ``owner``."""
    return f"{owner.path if owner is not None else ''}\0packed"


def _units(group: Group) -> int:
    """Boxes that ``group``'s children take: a run of identical siblings is one."""
    return len(group.children) - sum(len(run) - 1 for run in repeated_runs(group))


def _fill(page: Page, group: Group, budget: int, limit: int, book: Book, largest: int) -> None:
    """Draw sub-groups inline (as clusters), smallest first, while the page stays within ``budget`` operators
    and ``limit`` items, never more than ``largest`` operators of one group; box the others. Structurally
    identical siblings are drawn alike: all inline, or one box for the run."""
    expanded: set[int] = set()
    items = len(page.ops) + _units(group)
    pending = sorted(group.children, key=lambda g: (g.size, g.path))
    while pending:
        first = pending[0]
        peers = [first] + ([g for g in pending if g.twin_of is first] if first.repeat > 1 else [])
        if first.twin_of is not None:
            peers = [g for g in pending if g is first.twin_of or g.twin_of is first.twin_of]
        peers += _series(first, peers, pending)
        peer_ids = {id(g) for g in peers}
        pending = [g for g in pending if id(g) not in peer_ids]
        ops = sum(len(g.nodes) for g in peers)
        grow = sum(len(g.nodes) + _units(g) for g in peers) - len({id(g.twin_of or g) for g in peers})
        opening = page.parent is None and (_units(group) == 1 and first.parent is group or _wraps(first, peers))
        # an overview of one (run) box, or a box holding nearly everything, opens it: its members drawn as
        # frames of their own operators and boxes, when that fits
        if ops > budget or items + grow > limit or (any(len(g.nodes) > largest for g in peers) and not opening) or (
                len(peers) > 1 and page.parent is None and not opening):  # the overview keeps a run as one box
            continue
        budget -= ops
        items += grow
        for g in peers:
            expanded.add(id(g))
            for node in g.nodes:
                book.page_of_op[node.key] = page
            pending.extend(g.children)
        pending.sort(key=lambda g: (g.size, g.path))
    _place(page, group, expanded)


def _wraps(first: Group, peers: list[Group]) -> bool:
    """Whether ``first`` wraps its parent's content: one group (not a run) with groups of its own, holding at least
    ``WRAPPER_SHARE`` of its parent's operators. Its box on the overview would only say "nearly everything"."""
    parent = first.parent
    return len(peers) == 1 and bool(first.children) and parent is not None and \
        first.size >= WRAPPER_SHARE * parent.size


_NUMBERED = re.compile(r"(.*\D)\d+")


def _series(first: Group, peers: list[Group], pending: list[Group]) -> list[Group]:
    """Siblings numbered in one series with ``first`` (``layer.11`` beside a run ``layer.0 … layer.10`` that
    differs from it in a detail), and their twins: drawn alike, so that identical blocks sit at one depth."""
    stem = _NUMBERED.fullmatch(first.label)
    if stem is None:
        return []
    taken = {id(g) for g in peers}
    series = [g for g in pending if id(g) not in taken and g.parent is first.parent and g.kind == first.kind
              and (m := _NUMBERED.fullmatch(g.label)) is not None and m.group(1) == stem.group(1)]
    heads = {id(g.twin_of or g) for g in series}
    return [g for g in pending if id(g) not in taken and (id(g) in heads or id(g.twin_of or g) in heads)]


def _place(holder: Page | Inline, group: Group, expanded: set[int]) -> None:
    runs = {id(run[0]): run for run in repeated_runs(group)}
    in_run = {id(g) for run in runs.values() for g in run[1:]}
    for child in group.children:
        if id(child) in expanded:
            inline = Inline(child, list(child.nodes))
            holder.inlines.append(inline)
            _place(inline, child, expanded)
        elif id(child) in runs:
            holder.boxes.append(runs[id(child)])
        elif id(child) not in in_run:
            holder.boxes.append([child])


def _graph_groups(root: Group) -> dict[int, Group]:
    """Graph index → the ``graph`` group holding that subgraph's body."""
    found: dict[int, Group] = {}
    stack = [root]
    while stack:
        group = stack.pop()
        if group.kind == "graph" and group.graph is not None:
            found.setdefault(group.graph.index, group)
        stack.extend(group.children)
    return found


# -- focused views ---------------------------------------------------------------------------------------------


def neighbourhood(centre: Node, radius: int, drawn: Callable[[Node], bool]) -> list[Node]:
    """Drawn operators within ``radius`` hops of ``centre`` (through tensors, either direction), graph order."""
    seen = {centre.key: centre}
    frontier = [centre]
    for _ in range(radius):
        if not frontier:  # the whole connected part is in: a huge --radius must not spin on an empty frontier
            break
        following: list[Node] = []
        for node in frontier:
            for other in _adjacent(node, drawn):
                if other.key not in seen:
                    seen[other.key] = other
                    following.append(other)
        frontier = following
    return sorted(seen.values(), key=lambda n: (n.graph.index, n.index))


def _adjacent(node: Node, drawn: Callable[[Node], bool]) -> Iterable[Node]:
    """Drawn neighbours, looking through folded operators (a folded chain is part of the box that reads it)."""
    for value in node.inputs:
        if value is not None:
            yield from _drawn_producers(value, drawn)
    for value in node.outputs:
        for consumer in value.consumers:
            if drawn(consumer):
                yield consumer


def _drawn_producers(value: Value, drawn: Callable[[Node], bool]) -> Iterable[Node]:
    producer = value.producer
    if producer is None:
        return
    if drawn(producer):
        yield producer


REFIT_MARGIN = 0.9
"""A focused view laid out over ``MAX_PAGE_PT`` is cut into parts of this share of the operators that would
fit in proportion (a layout does not shrink quite in proportion to what it draws)."""


def focus_book(model: Model, centres: list[Node], radius: int, drawn: Callable[[Node], bool],
               together: bool, labels: list[str]) -> Book:
    """A page per centre (with an index page listing them), or one page holding every neighbourhood. A view
    too big for one page (as ``needs_pages`` predicts a flat picture, or laid out over ``MAX_PAGE_PT``) is
    cut into parts in graph order, continued from part to part through stubs (``Book.refit``)."""
    hoods = [neighbourhood(c, radius, drawn) for c in centres]
    if together or len(centres) == 1:
        merged: dict[NodeKey, Node] = {}
        for hood in hoods:
            merged.update((n.key, n) for n in hood)
        views = [_View(sorted(merged.values(), key=lambda n: (n.graph.index, n.index)), list(centres),
                       ", ".join(labels))]
        return _FocusPlan(model, views, single=True).book()
    views = [_View(hood, [centre], label) for centre, hood, label in zip(centres, hoods, labels)]
    return _FocusPlan(model, views, single=False).book()


@dataclass(slots=True, eq=False)
class _View:
    """One focused view: its operators (graph order), the centres among them, its name."""

    ops: list[Node]
    centres: list[Node]
    label: str


@dataclass(slots=True, eq=False)
class _FocusPlan:
    """The pages of focused views; ``part_ops``: view → operators a part of it may hold, once it is cut."""

    model: Model
    views: list[_View]
    single: bool
    part_ops: dict[int, int] = field(default_factory=dict)
    view_of_page: dict[int, int] = field(default_factory=dict)

    def book(self) -> Book:
        root = Group(label="focus", path="", kind="root", nodes=[], children=[], parent=None)
        self.view_of_page = {}
        if self.single:
            view = self.views[0]
            parts = self._parts(0)
            root.nodes = parts[0]
            first = Page(0, root, parts[0], highlight=list(view.centres), title=_part_title(view.label, 0, parts))
            book = Book([first], {n.key: first for n in parts[0]}, {id(root): first}, kind="focus", refit=self.refit)
            self._add_parts(book, 0, parts, first, root)
            return book
        index = Page(0, root, [], title="hot spots")
        book = Book([index], {}, {id(root): index}, kind="focus", refit=self.refit)
        for number, view in enumerate(self.views):
            parts = self._parts(number)
            group = Group(label=view.label, path=view.label, kind="focus", nodes=view.ops, children=[], parent=root)
            root.children.append(group)
            page = Page(len(book.pages), group, parts[0], parent=index, highlight=list(view.centres),
                        title=_part_title(view.label, 0, parts))
            book.pages.append(page)
            book.page_of_group[id(group)] = page
            index.boxes.append([group])
            book.page_of_op.setdefault(view.centres[0].key, page)
            if len(parts) > 1:
                for node in parts[0]:
                    book.page_of_op.setdefault(node.key, page)
            self.view_of_page[id(page)] = number
            self._add_parts(book, number, parts, page, root)
        return book

    def _add_parts(self, book: Book, number: int, parts: list[list[Node]], first: Page, root: Group) -> None:
        """Pages for the parts after the first of view ``number`` (the first, holding a centre, is ``first``)."""
        self.view_of_page[id(first)] = number
        view = self.views[number]
        for k, ops in enumerate(parts[1:], 1):
            title = _part_title(view.label, k, parts)
            group = Group(label=title, path=f"{view.label}\0{k}", kind="focus", nodes=ops, children=[], parent=root)
            page = Page(len(book.pages), group, ops, parent=first, title=title,
                        highlight=[c for c in view.centres if any(c is n for n in ops)])
            book.pages.append(page)
            book.page_of_group[id(group)] = page
            for node in ops:
                book.page_of_op.setdefault(node.key, page)
            self.view_of_page[id(page)] = number

    def _parts(self, number: int) -> list[list[Node]]:
        """View ``number``'s operators on one page, or cut into parts in graph order, the part holding its
        first centre first."""
        view = self.views[number]
        budget = self.part_ops.get(number)
        if budget is None:
            keys = {n.key for n in view.ops}
            if not needs_pages(self.model, lambda n: n.key in keys):
                return [view.ops]
            budget = self.part_ops[number] = PAGE_OPS
        parts = _cut(view.ops, budget)
        centre = view.centres[0]
        first = next(i for i, part in enumerate(parts) if any(n is centre for n in part))
        return [parts[first], *parts[:first], *parts[first + 1:]]

    def refit(self, too_big: list[tuple[Page, float]]) -> Book:
        """The views again, those with a page in ``too_big`` (with its longer side as laid out) cut into parts
        at most half as big, and smaller still by as much as that page was over ``MAX_PAGE_PT``."""
        for page, side in too_big:
            number = self.view_of_page.get(id(page))
            if number is None:  # the index page of hot spots: boxes only
                continue
            ops = len(self.views[number].ops)
            now = min(self.part_ops.get(number, ops), ops)
            scaled = int(len(page.ops) * REFIT_MARGIN * MAX_PAGE_PT / side)
            self.part_ops[number] = max(1, min(now // 2, scaled))
        return self.book()


def _part_title(label: str, k: int, parts: list[list[Node]]) -> str:
    return label if len(parts) == 1 else f"{label} (part {k + 1} of {len(parts)})"


def _cut(ops: list[Node], budget: int) -> list[list[Node]]:
    """``ops`` in consecutive parts of at most ``budget`` operators and ``MAX_PAGE_PT / RANK_PT`` ranks."""
    parts: list[list[Node]] = [[]]
    rank: dict[NodeKey, int] = {}
    for node in ops:
        level = 1 + max((rank.get(v.producer.key, -1) for v in node.inputs
                         if v is not None and v.producer is not None), default=-1)
        if parts[-1] and (len(parts[-1]) >= budget or (level + 1) * RANK_PT > MAX_PAGE_PT):
            parts.append([])
            rank.clear()
            level = 0
        parts[-1].append(node)
        rank[node.key] = level
    return parts
