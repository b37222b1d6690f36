"""Operators gathered into a tree of groups, so a big model can be drawn as an overview and a page per group.

Pure: IR in, group tree out (no Graphviz, no files). The rules, in the order ``group_model`` applies them:

1. **Name scopes.** An operator's scope is, first found: torch dynamo's ``pkg.torch.onnx.name_scopes`` or
   ``namespace`` node metadata; its node name split on ``/`` (the last component is the op itself, a leading
   ``/`` is not a level); for nameless nodes (TFLite, some ONNX files) the first output's name, taking the
   first of TFLite's ``;``-joined fused names. A graph uses names when at least ``SCOPED_SHARE`` of its drawn
   operators have a scope; otherwise all its operators are placed flat and cut into stages (rule 5).
2. **Subgraphs.** Every If/Loop/Scan body and TFLite subgraph is a group of kind ``graph``, placed beside the
   operator that owns it (top-level TFLite subgraphs under the root).
3. **Chains.** A scope group with no operators and one scope child becomes that child (label ``a/b``); a root
   or subgraph with only one scope child takes that scope's content (its loose operators stay beside it).
4. **Tiny leaves.** A one-operator scope group is dissolved into its parent, and so is a leaf scope group of
   at most ``INLINE_MAX`` operators when the parent's whole content fits one page (``max_items``): a page for
   a Linear's MatMul + Add helps nobody, while ``embeddings`` (3 ops) stays a box on a 400-op overview.
5. **Wide levels.** A group with more than ``max_items`` direct items (operators + child groups) is split,
   never drawn as a strip. Only operators: first a block repeated at least ``BLOCK_MIN_REPEATS`` times is
   looked for (``repeated_spans``: a flat-named transformer's layers, a CNN's identical bottlenecks); each
   repeat becomes a ``block`` group. Still only operators: cut them, in graph order, into contiguous ``stage``
   groups of ``max_items // 2`` to ``max_items`` operators at the narrowest points (fewest tensors crossing
   the cut). Mixed: each run of two or more consecutive loose operators becomes one ``gathered`` group; if
   still too wide, the items are cut into contiguous ``gathered`` runs the same way. Repeated while a level is
   too wide, so stages nest into super-stages. Cut-out runs are named last (``_name_synthetic``) by the named
   groups they hold (``layers.12 … layers.25``), else by where they sit and what they compute
   (``between embeddings and encoder · Mul Div Floor Cast``), never by operator indices or counts.
6. **One box.** While the root holds a single group (not a body), it takes that group's content if the
   level still fits: an overview of one box would only be a click on the way.
7. **Depth.** With ``max_depth``, every group at that depth takes all operators below it as its own.
8. **Repeats.** Consecutive sibling scope, subgraph or block groups with the same structure (op types in graph order,
   and the internal edges between them) are marked: the first has ``repeat = N``, the others ``twin_of`` it.

Deterministic: the tree depends only on the model and the arguments; paths are unique.
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from renderer.core.ir import Graph, Model, Node

SCOPED_SHARE = 0.3
"""Least share of a graph's drawn operators with a scope for its names to be used. Measured on the samples:
scoped files have 94-100 % (tiny_cnn_qdq 58/62, silero_vad bodies 51/53), flat or unnamed ones 0 %
(light_resnet50, face_detection: Keras layer names without ``/``). Set below the midpoint because the two
mistakes cost differently: names used wrongly leave unscoped operators at the top, where runs of them are
gathered and staged anyway; names ignored wrongly lose the whole hierarchy."""

INLINE_MAX = 3
"""Leaf scope groups this small dissolve into a parent that fits one page (a Linear is 2 ops, a GELU 5)."""

NAME_SCOPES_KEY = "pkg.torch.onnx.name_scopes"
NAMESPACE_KEY = "namespace"
NO_MODULE = "_empty_nn_module_stack_from_metadata_hook"
"""What torch.export writes as the module path of nodes its passes create outside any module."""
MAX_SCOPE_DEPTH = 32
"""Scope components beyond this are ignored (a hostile name must not make the tree arbitrarily deep)."""
_MAX_METADATA_CHARS = 20_000

KINDS = ("root", "scope", "graph", "block", "stage", "gathered")
TWIN_KINDS = frozenset({"scope", "graph", "block"})
"""Kinds that can be marked as repeats: named blocks and bodies, not the runs cut out of a level."""


@dataclass(slots=True, eq=False)
class Group:
    """A box of the overview: operators and child groups.

    Attributes:
        label: what the box shows: the scope (``layers.0``, ``encoder/layers.0`` for a collapsed chain),
            ``graph 3: body``, ``block 3 of 40``, ``layers.12 … layers.25``, ``after embeddings · MatMul Add``.
        path: unique ``/``-joined path from the root ("" for the root), an internal key never shown (see
            ``display_path``). Scope groups add their scope components; other kinds add ``#graph3``,
            ``#stage2``, ``#gathered1``, ``#block4`` (a scope component starting with ``#`` is written ``##…``).
        kind: ``root`` | ``scope`` | ``graph`` | ``block`` | ``stage`` | ``gathered`` (module docstring).
        nodes: operators placed directly here, in graph order.
        children: child groups in graph order (by their first operator).
        parent: the enclosing group, None for the root.
        repeat: N > 1 on the first of N consecutive structurally identical siblings.
        twin_of: on the others of such a run, the first one.
        scope: for ``scope`` groups, the full scope they stand for; for ``root``/``graph``, the scope
            whose content they took (rule 3), else ().
        graph: the graph whose operators this group holds (directly or below, subgraphs aside).
        position: for ``block`` groups, (k, n): the k-th of n repeats found in a flat run.
        series: for ``block`` groups of a model where several runs of repeats were found, which run (1, 2, … in
            model order; its blocks are labelled ``series 2 · block k of n``), else 0.

    The tree is read-only once ``group_model`` returns (``members`` and ``size`` are cached).
    """

    label: str
    path: str
    kind: str
    nodes: list[Node] = field(default_factory=list, repr=False)
    children: list[Group] = field(default_factory=list, repr=False)
    parent: Group | None = field(default=None, repr=False)
    repeat: int = 1
    twin_of: Group | None = field(default=None, repr=False)
    scope: tuple[str, ...] = ()
    graph: Graph | None = field(default=None, repr=False)
    position: tuple[int, int] = ()
    series: int = 0
    _parts: tuple[str, ...] = field(default=(), repr=False)
    _order: dict[Node, int] | None = field(default=None, repr=False)
    _members: list[Node] | None = field(default=None, repr=False)

    def members(self) -> Iterator[Node]:
        """Every operator in this group and below, in graph order (a subgraph's right after its owner)."""
        if self._members is None:
            self._members = _collect(self, self._order or {})
        return iter(self._members)

    @property
    def size(self) -> int:
        """How many operators are in this group and below."""
        if self._members is None:
            self._members = _collect(self, self._order or {})
        return len(self._members)

    @property
    def items(self) -> int:
        """Direct items: operators plus child groups (what one page of this group shows)."""
        return len(self.nodes) + len(self.children)

    def walk(self) -> Iterator[Group]:
        """This group and every group below it, parents before children, in order."""
        stack = [self]
        while stack:
            group = stack.pop()
            yield group
            stack.extend(reversed(group.children))

    @property
    def depth(self) -> int:
        depth, group = 0, self.parent
        while group is not None:
            depth, group = depth + 1, group.parent
        return depth


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


# -- scopes -------------------------------------------------------------------------------------------------

_QUOTED = re.compile(r"'([^'\\]*)'|\"([^\"\\]*)\"")


def scope_of(node: Node) -> tuple[str, ...]:
    """The name scope of ``node``: the components before its own name, outermost first (() when none)."""
    return _ScopeReader().scope(node)


class _ScopeReader:
    """``scope_of`` with memos keyed by the part of the text that decides the scope (names share prefixes)."""

    def __init__(self) -> None:
        self.memo: dict[tuple[str, str], tuple[str, ...]] = {}

    def scope(self, node: Node) -> tuple[str, ...]:
        meta = node.metadata
        if meta:
            text = meta.get(NAME_SCOPES_KEY)
            if text:  # the last entry is the node's own name: the text before the last comma decides
                scope = self._memo(("n", text.rpartition(",")[0]), text, _from_name_scopes)
                if scope:
                    return scope
            text = meta.get(NAMESPACE_KEY)
            if text:
                scope = self._memo(("s", text), text, _from_namespace)
                if scope:
                    return scope
        name = node.name
        if not name:
            name = next((v.name for v in node.outputs if v.name), "").split(";", 1)[0]
        head = name.rstrip("/").rpartition("/")[0]
        return self._memo(("p", head), head, _split_path) if head else ()

    def _memo(self, key: tuple[str, str], text: str,
              parse: Callable[[str], tuple[str, ...]]) -> tuple[str, ...]:
        scope = self.memo.get(key)
        if scope is None:
            scope = self.memo[key] = parse(text)
        return scope


def _split_path(head: str) -> tuple[str, ...]:
    return tuple(c for c in head.split("/") if c)[:MAX_SCOPE_DEPTH]


def _from_name_scopes(text: str) -> tuple[str, ...]:
    """``"['', 'encoder', 'encoder.layers.0', 'node_name']"``: module paths from the root, then the node."""
    if not text or len(text) > _MAX_METADATA_CHARS:
        return ()
    if "\\" in text:
        try:
            parsed = ast.literal_eval(text)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            return ()
        if not isinstance(parsed, list) or not all(isinstance(s, str) for s in parsed):
            return ()
        entries: list[str] = parsed
    else:
        if not (text.startswith("[") and text.endswith("]")):
            return ()
        entries = [a or b for a, b in _QUOTED.findall(text)]
    return _relative(entries[:-1])


def _from_namespace(text: str) -> tuple[str, ...]:
    """``": pkg.Model/enc: pkg.Encoder/node_name: aten.op"`` (torch ≥ 2.5), or the older ``"enc/enc.x"``."""
    if not text or len(text) > _MAX_METADATA_CHARS:
        return ()
    parts = text.split("/")
    if any(": " in p for p in parts):
        return _relative([p.split(": ", 1)[0] for p in parts[:-1]])
    return _relative(parts)


def _relative(paths: list[str]) -> tuple[str, ...]:
    """Module paths (``encoder``, ``encoder.layers.0``) as one component per module (``encoder``,
    ``layers.0``)."""
    out: list[str] = []
    previous = ""
    for path in paths:
        path = path.strip()
        if not path or path == previous or path == NO_MODULE:
            continue
        if previous and path.startswith(previous + "."):
            out.append(path[len(previous) + 1:])
        else:
            out.append(path)
        previous = path
    return tuple(c.replace("/", "∕") for c in out)[:MAX_SCOPE_DEPTH]


# -- building -----------------------------------------------------------------------------------------------

def _graph_order(model: Model) -> dict[Node, int]:
    """Every operator's position in one order: graph order, a subgraph's operators right after its owner."""
    owned: dict[Node, list[Graph]] = {}
    for graph in model.graphs:
        if graph.parent is not None:
            owned.setdefault(graph.parent, []).append(graph)
    if not owned:
        return {node: i for i, node in enumerate(model.nodes())}
    order: dict[Node, int] = {}
    seen: set[int] = set()
    for top in model.graphs:
        if top.parent is not None and top.parent.graph in model.graphs:
            continue
        stack: list[Iterator[Node]] = [iter(top.nodes)]
        seen.add(top.index)
        while stack:
            node = next(stack[-1], None)
            if node is None:
                stack.pop()
                continue
            order.setdefault(node, len(order))
            subs = [sub for sub in owned.get(node, ()) if sub.index not in seen]
            seen.update(sub.index for sub in subs)
            stack.extend(iter(sub.nodes) for sub in reversed(subs))  # the first subgraph is walked first
    for graph in model.graphs:  # unreachable subgraphs (an owner cycle in a broken file)
        for node in graph.nodes:
            order.setdefault(node, len(order))
    return order


def _collect(group: Group, order: dict[Node, int]) -> list[Node]:
    nodes = [n for g in group.walk() for n in g.nodes]
    if order:
        nodes.sort(key=order.__getitem__)
    return nodes


class _Builder:
    def __init__(self, model: Model, drawn: Callable[[Node], bool], max_items: int) -> None:
        self.model = model
        self.drawn = drawn
        self.max_items = max_items
        self.order = _graph_order(model)
        self.scopes = _ScopeReader()
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
        _number_series(root)
        _name_synthetic(root, model.format)
        _mark_repeats(root)
        return root

    # -- one graph --------------------------------------------------------------------------------------

    def _graph_tree(self, graph: Graph, is_root: bool) -> Group:
        label = f"graph {graph.index}: {graph.name}" if graph.name else f"graph {graph.index}"
        container = Group(label, "", "root" if is_root else "graph", graph=graph)
        nodes = [n for n in graph.nodes if self.drawn(n)]
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
                    group.nodes = _collect(group, self.order)
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


# -- repeats in a flat run ---------------------------------------------------------------------------------

BLOCK_MIN_OPS = 8
"""Fewest operators in a repeated block found in a flat run (a Conv + Relu pair repeated is no block)."""
BLOCK_MIN_REPEATS = 3
BLOCK_MAX_OPS = 1024
"""Longest block looked for: the search costs one pass over the run per candidate length."""


def repeated_spans(types: list[str], widths: list[int] | None = None, min_ops: int = BLOCK_MIN_OPS,
                   min_repeats: int = BLOCK_MIN_REPEATS, max_ops: int = BLOCK_MAX_OPS) -> list[tuple[int, int, int]]:
    """Where a run of operators repeats a block: ``(start, length, count)`` spans, in order, not overlapping.

    ``types`` is the run's op types in graph order. The span covering most operators is taken first (among
    equals, the shortest block), then the parts before and after it are searched the same way. A flat-named
    transformer's layers come out as one span of ``count`` layers; a CNN's identical bottlenecks as one per
    stage. When the part before ends like a block does (an embedding's Add + LayerNorm before layers that end
    so), the repetition starts a few operators early; with ``widths`` (tensors crossing the cut before each
    item, as ``_cut_widths`` counts them) the blocks are shifted within that slack to where their boundaries
    cross fewest tensors, the latest among equals (the part before ends with a copy of the blocks' own end):
    after the layer's last LayerNorm, not before the previous one's Add.
    """
    import numpy as np  # lazily: annograph --help stays instant

    codes: dict[str, int] = {}
    seq = np.array([codes.setdefault(t, len(codes)) for t in types], dtype=np.int64)
    spans: list[tuple[int, int, int]] = []
    pending = [(0, len(types))]
    while pending:
        low, high = pending.pop()
        best = _longest_repeat(seq[low:high], min_ops, min_repeats, max_ops)
        if best is None:
            continue
        start, length, count, slack = best
        if widths is not None and slack:
            start = min(range(start, start + slack + 1),
                        key=lambda s: (sum(widths[low + s + k * length] for k in range(count + 1)), -s))
        spans.append((low + start, length, count))
        pending += [(low, low + start), (low + start + length * count, high)]
    return sorted(spans)


def _longest_repeat(seq, min_ops: int, min_repeats: int,  # type: ignore[no-untyped-def]
                    max_ops: int) -> tuple[int, int, int, int] | None:
    """(start, length, count, slack) of the repeat covering most items; slack: how far it may start later."""
    import numpy as np

    n = len(seq)
    best: tuple[int, int, int, int, int] | None = None  # (covered, start, length, count, slack)
    for length in range(min_ops, min(max_ops, n // min_repeats) + 1):
        same = np.concatenate(([False], seq[:-length] == seq[length:], [False]))
        edges = np.flatnonzero(np.diff(same.astype(np.int8)))
        if not len(edges):
            continue
        starts, ends = edges[0::2], edges[1::2]
        k = int((ends - starts).argmax())
        span = int(ends[k] - starts[k]) + length
        count = span // length
        start = int(starts[k])
        if count >= min_repeats and (best is None or count * length > best[0]) and \
                _primitive(seq[start:start + length]):
            best = (count * length, start, length, count, span - count * length)
    return best[1:] if best else None


def _primitive(block) -> bool:  # type: ignore[no-untyped-def]
    """Whether ``block`` is no shorter block repeated (a chain of 8 Relu is no block of 8: it is Relu × 8)."""
    n = len(block)
    return not any(n % d == 0 and (block[d:] == block[:-d]).all() for d in range(1, n // 2 + 1))


# -- cutting a sequence -------------------------------------------------------------------------------------

def segment(widths: list[int], n: int, max_items: int) -> list[tuple[int, int]]:
    """Cut ``n`` items into contiguous runs ``[start, end)`` of ``max_items // 2`` to ``max_items`` items.

    ``widths[c]`` is how many tensors cross the cut before item ``c``. Each cut, taken left to right, is the
    narrowest within the allowed window; among equally narrow cuts, the one leaving a run closest to the even
    share ``n / ceil(n / max_items)``. The window keeps the remainder at least ``max_items // 2`` long, so no
    run is tiny. O(n).
    """
    if n <= max_items:
        return [(0, n)]
    if max_items < 4:  # runs of one item would not shorten the level
        return [(s, min(s + max_items, n)) for s in range(0, n, max_items)]
    least = max(1, max_items // 2)
    share = n / -(-n // max_items)
    runs: list[tuple[int, int]] = []
    start = 0
    while n - start > max_items:
        low, high = start + least, min(start + max_items, n - least)
        cut = min(range(low, high + 1), key=lambda c: (widths[c], abs(c - start - share), -c))
        runs.append((start, cut))
        start = cut
    runs.append((start, n))
    return runs


def _cut_widths(items: list[Node | Group], owner: Group, order: dict[Node, int]) -> list[int]:
    """How many tensors cross the cut before each item: produced in an earlier item, read in this one or later
    (graph outputs count as read at the end). One sweep over a difference array."""
    where: dict[Node, int] = {}
    for i, item in enumerate(items):
        if isinstance(item, Node):
            where[item] = i
        else:
            for node in _collect(item, order):
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


# -- names --------------------------------------------------------------------------------------------------

SYNTHETIC_KINDS = frozenset({"stage", "gathered"})
"""Kinds cut out of a level by ``_split_wide``: named after what they hold and where they sit, never by index."""
_CATEGORY_RANK = {c: i for i, c in enumerate((
    "layer", "attention", "pool", "normalization", "activation", "reduce", "control", "elementwise",
    "quantization", "tensor", "data", "shape", "other"))}
SUMMARY_TYPES = 4
"""Operator types a name lists for what a run of operators computes."""


def computes(nodes: Iterable[Node], fmt: str = "onnx", most: int = SUMMARY_TYPES) -> str:
    """What ``nodes`` compute, as their op types (``MatMul Softmax Add Mul …``): weight-bearing and costly
    categories before element-wise and shape plumbing, then the more frequent first."""
    from renderer.data.categories import category

    counts = Counter(n.op_type for n in nodes)
    ranked = sorted(counts, key=lambda t: (_CATEGORY_RANK.get(category(fmt, t), len(_CATEGORY_RANK)), -counts[t], t))
    return " ".join(ranked[:most]) + (" …" if len(ranked) > most else "")


def series_prefix(group: Group) -> str:
    """``series 2 · `` for a block of the second run of repeats of a model that has several, else ""."""
    return f"series {group.series} · " if group.series else ""


def _number_series(root: Group) -> None:
    """Number the runs of repeated blocks in model order when there are several (``Group.series``): two runs'
    blocks would otherwise both read ``block 1 of 3``."""
    firsts = [g for g in root.walk() if g.kind == "block" and g.position[0] == 1]
    if len(firsts) < 2:
        return
    series = 0
    for group in root.walk():  # parents before children, children in graph order: model order
        if group.kind == "block":
            series += group.position[0] == 1
            group.series = series
            group.label = f"{series_prefix(group)}block {group.position[0]} of {group.position[1]}"


def span_name(groups: list[Group]) -> str:
    """A run of sibling groups by their own names: ``layer.3``, ``layer.3, layer.4``, ``layer.3 … layer.9``."""
    if not groups:
        return ""
    if len(groups) > 2 and all(g.position for g in groups) and groups[0].position[1] == groups[-1].position[1]:
        return (f"{series_prefix(groups[0])}blocks {groups[0].position[0]}–{groups[-1].position[0]} "
                f"of {groups[0].position[1]:,}")
    first, last = groups[0].label, groups[-1].label
    return first if len(groups) == 1 else f"{first}, {last}" if len(groups) == 2 else f"{first} … {last}"


def name_run(items: Iterable[Node | Group], fmt: str = "onnx") -> str:
    """A name for items drawn together (a page packing sibling groups, a cut-out run): the named groups in it,
    first … last, and what its loose operators compute (``layer.3 … layer.9 · Add Mul``); "" for none."""
    named: list[Group] = []
    loose: list[Node] = []
    for item in items:
        if isinstance(item, Node):
            loose.append(item)
        else:
            _named_inside(item, named, loose)
    parts = [span_name(named)] if named else []
    if loose:
        parts.append(computes(loose, fmt))
    return " · ".join(parts)


def display_path(group: Group) -> str:
    """Where ``group`` is, by the model's names: its named ancestors' labels and its own, ``encoder/layer.3``
    (cut-out runs above it are skipped: their names describe a position, which the group's own name does)."""
    parts = [group.label]
    parent = group.parent
    while parent is not None and parent.parent is not None:
        if parent.kind not in SYNTHETIC_KINDS:
            parts.append(parent.label)
        parent = parent.parent
    return "/".join(reversed(parts))


def _named_inside(group: Group, named: list[Group], loose: list[Node]) -> None:
    """The named groups at the top of ``group`` (looking through cut-out runs) and the operators beside them."""
    if group.kind not in SYNTHETIC_KINDS:
        named.append(group)
        return
    order = group._order or {}
    items: list[tuple[int, Node | Group]] = [(order.get(n, 0), n) for n in group.nodes]
    items += [(order.get(next(c.members()), 0), c) for c in group.children if c.size]
    for _, item in sorted(items, key=lambda pair: pair[0]):
        if isinstance(item, Node):
            loose.append(item)
        else:
            _named_inside(item, named, loose)


def _edge_names(group: Group) -> tuple[str | None, str | None]:
    """The first and last named groups inside ``group`` (itself when named), looking through cut-out runs."""
    named: list[Group] = []
    _named_inside(group, named, [])
    if not named:
        return None, None
    return _edge_name(named[0]), _edge_name(named[-1])


def _edge_name(group: Group) -> str:
    """How a name of a place reads a group at its edge: a block of a numbered run by its run (``series 2``)."""
    return f"series {group.series}" if group.series else group.label


def _context(group: Group) -> tuple[str | None, str | None]:
    """The nearest named groups before and after ``group`` in graph order, looking outwards through the cut-out
    runs that hold it, never past a named parent (whose name the page's breadcrumb already shows)."""
    before = after = None
    current = group
    while current.parent is not None and (before is None or after is None):
        siblings = current.parent.children
        i = next(k for k, c in enumerate(siblings) if c is current)
        if before is None:
            before = next((n for c in reversed(siblings[:i]) if (n := _edge_names(c)[1])), None)
        if after is None:
            after = next((n for c in siblings[i + 1:] if (n := _edge_names(c)[0])), None)
        if current.parent.kind not in SYNTHETIC_KINDS:
            break
        current = current.parent
    return before, after


def _where(before: str | None, after: str | None) -> str:
    if before and after:
        return f"between {before} and {after}"
    if before:
        return f"after {before}"
    if after:
        return f"before {after}"
    return ""


def _name_synthetic(root: Group, fmt: str) -> None:
    """Name every cut-out run by the named groups it holds, else by where it sits and what it computes; runs
    of one level that sit alike are told apart by ``part k of n``."""
    for group in root.walk():
        runs = [c for c in group.children if c.kind in SYNTHETIC_KINDS]
        places: dict[int, str | None] = {}  # None: named by the groups it holds
        for run in runs:
            places[id(run)] = None if _edge_names(run)[0] else _where(*_context(run))
        alike = Counter(places.values())
        seen: Counter[str] = Counter()
        for run in runs:
            place = places[id(run)]
            if place is None:
                run.label = name_run([run], fmt)
                continue
            if alike[place] > 1:
                seen[place] += 1
                place = f"part {seen[place]} of {alike[place]} {place}".rstrip()
            run.label = " · ".join(p for p in (place, computes(run.members(), fmt)) if p)


# -- repeated blocks ----------------------------------------------------------------------------------------

def _signature(group: Group) -> tuple:
    """Op types in graph order, the edges between members (by local position and slot), and the tree shape."""
    members = group._members if group._members is not None else list(group.members())
    local = {node: i for i, node in enumerate(members)}
    types = tuple([f"{n.domain}:{n.op_type}" if n.domain else n.op_type for n in members])
    edges = []
    for i, node in enumerate(members):
        for slot, value in enumerate(node.inputs):
            j = local.get(value.producer) if value is not None else None  # type: ignore[arg-type]
            if j is not None:
                outputs = members[j].outputs
                edges.append((i, slot, j, outputs.index(value) if len(outputs) > 1 else 0))
    shape = (len(group.nodes), tuple((c.kind, c.size) for c in group.children))
    return group.kind, shape, types, tuple(edges)


def _mark_repeats(root: Group) -> None:
    for group in root.walk():
        if len(group.children) < 2:
            continue
        order = group._order or {}
        ranked: list[tuple[int, Node | Group]] = [(order[n], n) for n in group.nodes]
        ranked += [(order[next(c.members())], c) for c in group.children]
        ranked.sort(key=lambda pair: pair[0])
        items = [item for _, item in ranked]
        signatures: dict[int, tuple] = {}

        def signature(g: Group) -> tuple:
            if id(g) not in signatures:
                signatures[id(g)] = _signature(g)
            return signatures[id(g)]

        i = 0
        while i < len(items):
            head = items[i]
            j = i + 1
            if isinstance(head, Group) and head.kind in TWIN_KINDS:
                while (j < len(items) and isinstance(items[j], Group) and items[j].size == head.size
                       and signature(items[j]) == signature(head)):
                    j += 1
                if j - i > 1:
                    head.repeat = j - i
                    for twin in items[i + 1:j]:
                        twin.twin_of = head
            i = j
