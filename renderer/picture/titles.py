"""The titles of the groups drawn on one page, told apart.

A group's own title is its label (``grouping``), but a label repeats across a model: every layer has an ``output``,
both branches of an If hold an ``encoder``, a ModuleList's children are ``0``, ``1``… So on each page:

1. A bare index is never a title: it takes its parent's name, as torch writes module paths (``down.0``); with no
   named parent, what it computes (``0 · Conv Relu``).
2. While titles repeat, each repeated one is qualified by its next enclosing name: a scope (``attention/output``),
   or the branch of the body it is in (``then: encoder``, ``else: encoder``; a body's name when its owner does not
   say which branch it is). Cut-out runs and packed pages are passed over: their names say where, not what.
3. Titles still alike when the names run out are numbered in model order (``stft (2 of 2)``).
4. Cut to the room a box has, titles stay different: two that would read alike are each cut around the first
   character telling it from the other (``time_distributed_33_1/part 1 of 2 · …`` keeps its ``33``; cut in its
   middle it read ``time_distribute…f 2 · …``, as its neighbour ``…_32_1/…`` did).

Pure: groups in, text out (escaped where it is drawn).
"""

from __future__ import annotations

import os
from collections import Counter, defaultdict
from collections.abc import Iterator

from renderer.core.escape import ELLIPSIS
from renderer.core.ir import Graph, SubgraphRef
from renderer.picture.grouping.group import Group
from renderer.picture.grouping.names import SYNTHETIC_KINDS, computes

PASSED_OVER = SYNTHETIC_KINDS | {"packed"}
"""Kinds whose names are no qualifier (``pages.PACK_KIND`` is ``packed``)."""


def is_index(label: str) -> bool:
    """Whether ``label`` is a bare index (``0``, ``12``): no title on its own."""
    return label.isascii() and label.isdigit()


def _starts_with_index(label: str) -> bool:
    """``0``, or a chain of scopes drawn as one that starts with one (``0/block``)."""
    return is_index(label.split("/", 1)[0])


def own_title(group: Group, fmt: str = "onnx") -> str:
    """``group``'s title before any page tells it apart from others: its label, a bare index given its parent's
    name (rule 1; ``fmt``, the model's format, names what it computes)."""
    label = group.label
    if not _starts_with_index(label):
        return label
    dotted = _dotted(group)
    if dotted != label:
        return dotted
    parent = next(_qualifiers(group), "")
    return f"{parent}{label} · {computes(group.members(), fmt)}"


def _dotted(group: Group) -> str:
    """A label starting with a bare index after its parent's name, ``down.0``, ``down.0/block`` (as it is when
    there is none, or a branch)."""
    parent = next(_qualifiers(group), None)
    return f"{parent}.{group.label}" if parent is not None and not parent.endswith(": ") else group.label


def distinct_titles(items: list[tuple[int, Group, str]]) -> dict[int, str]:
    """Titles for the items drawn on one page, all different (rules 2 and 3).

    Args:
        items: (key, group, title) in model order: the key the caller looks its title up by, the group whose
            enclosing names qualify it, and its own title (``own_title``, or a run box's).

    Returns:
        key → title.
    """
    titles = {key: title for key, _, title in items}
    chains: dict[int, Iterator[str]] = {}
    for key, group, _ in items:
        chains[key] = _qualifiers(group)
        if _starts_with_index(group.label):  # its title holds its parent's name already
            next(chains[key], None)
    while True:
        counts = Counter(titles.values())
        moved = False
        for key in [key for key, _, _ in items if counts[titles[key]] > 1]:
            qualifier = next(chains[key], None)
            if qualifier is not None:
                titles[key] = qualifier + titles[key] if qualifier.endswith(": ") else f"{qualifier}/{titles[key]}"
                moved = True
        if not moved:
            return _numbered(items, titles)


def _numbered(items: list[tuple[int, Group, str]], titles: dict[int, str]) -> dict[int, str]:
    counts = Counter(titles.values())
    seen: Counter[str] = Counter()
    out = {}
    for key, _, _ in items:
        title = titles[key]
        if counts[title] > 1:
            seen[title] += 1
            title = f"{title} ({seen[title]} of {counts[title]})"
        out[key] = title
    return out


def _qualifiers(group: Group) -> Iterator[str]:
    """The names enclosing ``group``, nearest first: a scope's label (a bare index with its parent's, ``down.0``),
    a body's branch as ``then: ``, the root's scope; cut-out runs passed over."""
    parent = group.parent
    while parent is not None:
        if parent.kind == "graph" and parent.graph is not None:
            yield f"{_branch(parent.graph)}: "
        elif parent.kind == "root":
            if parent.scope:
                yield parent.scope[-1]
            return
        elif parent.kind not in PASSED_OVER:
            yield _dotted(parent) if _starts_with_index(parent.label) else parent.label
        parent = parent.parent


def _branch(graph: Graph) -> str:
    """Which body of its owner ``graph`` is: the owner's attribute naming it (``then_branch`` → ``then``, a Loop's
    ``body``), else the graph's own name."""
    owner = graph.parent
    if owner is not None:
        for name, value in owner.attributes.items():
            refs = value if isinstance(value, list) else [value]
            if any(isinstance(v, SubgraphRef) and v.index == graph.index for v in refs):
                return name.removesuffix("_branch")
    return graph.name or f"graph {graph.index}"



def cut_apart(titles: dict[int, str], limit: int, qualified: set[int]) -> dict[int, str]:
    """Each title in at most ``limit`` characters (rule 4): cut at its end, or in its middle when it is
    ``qualified`` (its enclosing name and its own both stay in view); titles that differ but would be cut alike
    are each cut around the first character that tells it from the others."""
    cut = {key: _cut_around(title, len(title) - 1 if key in qualified else 0, limit) for key, title in titles.items()}
    alike: defaultdict[str, list[int]] = defaultdict(list)
    for key, text in cut.items():
        alike[text].append(key)
    for keys in alike.values():
        for key in keys:
            others = [titles[k] for k in keys if titles[k] != titles[key]]
            if others:
                cut[key] = _cut_around(titles[key], max(len(os.path.commonprefix([titles[key], o])) for o in others),
                                       limit)
    return cut


def _cut_around(text: str, at: int, limit: int) -> str:
    """``text`` in ``limit`` characters with its character ``at`` in view: its head, then a window about it (a
    third of the room for the head, as ``escape.clean`` cuts in the middle; ``at`` its last: the same cut)."""
    room = limit - 1
    if len(text) <= limit:
        return text
    if at < room:
        return text[:room] + ELLIPSIS
    head = room // 3
    window = room - head  # what follows the first ellipsis, a last one included
    start = max(head, min(at - (window - 1) // 2, len(text) - window))
    rest = text[start:]
    return text[:head] + ELLIPSIS + (rest if len(rest) <= window else rest[:window - 1] + ELLIPSIS)
