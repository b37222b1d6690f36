"""A group of the tree: its kind, members, children and label; what ``build`` makes and the pages draw."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from renderer.core.ir import Graph, Node

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
            self._members = collect(self, self._order or {})
        return iter(self._members)

    @property
    def size(self) -> int:
        """How many operators are in this group and below."""
        if self._members is None:
            self._members = collect(self, self._order or {})
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


def collect(group: Group, order: dict[Node, int]) -> list[Node]:
    nodes = [n for g in group.walk() for n in g.nodes]
    if order:
        nodes.sort(key=order.__getitem__)
    return nodes
