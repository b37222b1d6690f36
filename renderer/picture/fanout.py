"""Tensors read by many boxes on one page: drawn once, with a short labelled stub at each far reader.

An attention mask, position ids, a rotary cache or a noise input is read by every layer. Drawn as an edge to each
reader, two dozen edges run the length of the page beside its column and set its width (a TTS page of one mask
and its readers was 273,437 pt² a box, mostly empty). The rule, for every page and every single picture:

* A reader of a tensor is *far* when it sits more than ``NEAR_RANKS`` ranks below the tensor's nearest reader on
  the page (an edge to it would run past that reader, beside the column).
* A tensor with at least ``FAR_READERS`` far readers (operators or group boxes) keeps its edges to the near ones,
  where it is drawn; each far reader gets a stub of its own just above it, ``x_mask · from Cast 0:12`` (the
  tensor, and the operator or input that gives it), linked to that operator and naming both in full in its
  tooltip. Its edge to the reader is still the tensor's edge (``t-S-N.K``, its tooltip and shape).
* One or two far readers keep their edges: a residual connection, a UNet's skip, a LayerNorm's output read by Q,
  K and V and by the Add after the attention. Unless the far reader *floats* in a frame: every edge into it is
  long, so nothing holds it next to its own readers (a ``Where`` that turns the mask into each layer's bias), and
  drawn as high as its inputs allow it would sit more than ``1 + NEAR_RANKS`` ranks above everything else in its
  frame (the cluster of the group it belongs to). dot may put it anywhere along that edge, often at the top, and
  the frame reaches up with it: three layers on one page became a staircase of frames side by side (a BERT after
  onnxruntime's transformer optimizer, 2,348 × 6,791 pt, 177,170 pt² a box). It gets its stub whatever the count.
  Outside frames a floating reader keeps its edge: dot draws it well enough (an embedding's Gather of the ids).

Ranks are estimated before Graphviz lays anything out (``settled_ranks``): the longest path from the page's
sources, then each item with at least as many readers as inputs pulled down next to its readers, as dot's edge
length minimisation does (a MatMul of a style vector and a weight sits just above the norm it scales).
A tensor read by more than six group boxes is one edge to the overview's note ``to 40 groups`` instead.

Fan-in is the mirror (``far_writers``): a join (a Concat, a group box) fed from many places
along a chain (harmonic stacking: a level of a downsampling chain each, basic-pitch's CONCATENATION of eight
EXPAND_DIMS) draws its edges from the chain's length, beside it, as wide as the page. A writer is *far* when it sits
more than ``NEAR_RANKS`` ranks above the join's latest writer, its rank as early as its own inputs allow (an edge to
a far join is long whichever end dot moves it to); a writer hanging from nothing else (a lone source, or a chain
from one) is never far: dot draws it next to the join. With at least ``FAR_READERS`` far writers, each one's edge
ends in a stub just below it, ``to Concat 0:77``, and the join reads one note, ``from 8 further up``, instead.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping

FAR_READERS = 3
"""Far readers of one tensor on one page from which each gets a stub instead of an edge (a mask read by three
layers, a style vector by every AdaIN of a vocoder's resblocks, position ids by each layer)."""
NEAR_RANKS = 1
"""Readers this many ranks below the nearest reader are near (parallel branches reading one tensor)."""
LOOSE_RANKS = 2
"""A reader of a page's source only is drawn beside its own readers (``loose_edges``) when they are further down
than this many ranks."""


def far_readers(fans: list[tuple[Hashable, list[tuple[str, str]]]], edges: list[tuple[str, str]],
                stubbed: Callable[[str], bool],
                frames: Mapping[str, tuple[str, ...]] | None = None) -> dict[Hashable, set[str]]:
    """Which readers of each crowded tensor get a stub instead of an edge.

    Args:
        fans: (tensor key, its edges on the page as (source, reader) dot names).
        edges: every edge of the page, for the ranks.
        stubbed: whether a reader may be given a stub (an operator or a group box; not a graph output, nor a
            stub leading to another page).
        frames: each name's frames (clusters), outermost first; none: no floating reader is looked for.

    Returns:
        tensor key → the readers drawn with a stub (only tensors that have some).
    """
    least = 1 if frames else FAR_READERS
    shared = [(key, pairs) for key, pairs in fans if len({end for _, end in pairs}) > least]
    if not shared:
        return {}
    rank = settled_ranks(edges)
    floating = _floating(edges, rank, frames) if frames else set()
    far: dict[Hashable, set[str]] = {}
    for key, pairs in shared:
        readers = {end for _, end in pairs}
        nearest = min(rank.get(r, 0) for r in readers)
        stubs = {r for r in readers if stubbed(r) and rank.get(r, 0) > nearest + NEAR_RANKS}
        if len(readers) <= FAR_READERS or len(stubs) < FAR_READERS:
            stubs &= floating
        if stubs:
            far[key] = stubs
    return far


def _floating(edges: list[tuple[str, str]], rank: dict[str, int], frames: Mapping[str, tuple[str, ...]]) -> set[str]:
    """The framed names every edge into which spans more than ``1 + NEAR_RANKS`` ranks and which, as high as
    their inputs allow, would sit that far above the rest of their innermost frame (module docstring)."""
    long_in: dict[str, bool] = {}
    for a, b in edges:
        if a != b and frames.get(b):
            long_in[b] = long_in.get(b, True) and rank.get(b, 0) - rank.get(a, 0) > 1 + NEAR_RANKS
    candidates = [name for name, long in long_in.items() if long]
    if not candidates:
        return set()
    names = list(dict.fromkeys(name for edge in edges for name in edge))
    top = longest_path_ranks(names, edges)
    highest: dict[tuple[str, ...], list[tuple[int, str]]] = {}  # frame → its two highest members
    for name in names:
        path = frames.get(name, ())
        for k in range(1, len(path) + 1):
            best = highest.setdefault(path[:k], [])
            best.append((top[name], name))
            best.sort()
            del best[2:]
    found = set()
    for name in candidates:
        path = frames[name]
        others = next(([r for r, n in highest[path[:k]] if n != name] for k in range(len(path), 0, -1)
                       if any(n != name for _, n in highest[path[:k]])), [])
        if others and others[0] - top[name] > 1 + NEAR_RANKS:
            found.add(name)
    return found


def settled_ranks(edges: list[tuple[str, str]]) -> dict[str, int]:
    """The ranks of the names in ``edges`` as dot would give them, roughly (module docstring)."""
    names = list(dict.fromkeys(name for edge in edges for name in edge))
    rank = longest_path_ranks(names, edges)
    inputs: dict[str, int] = dict.fromkeys(names, 0)
    readers: dict[str, list[str]] = {name: [] for name in names}
    for a, b in dict.fromkeys(edges):
        if a != b:
            inputs[b] += 1
            readers[a].append(b)
    for name in sorted(names, key=lambda n: -rank[n]):  # readers first: their ranks are settled
        after = [rank[r] for r in readers[name] if rank[r] > rank[name]]
        if after and len(readers[name]) >= inputs[name]:
            rank[name] = max(rank[name], min(after) - 1)
    return rank


def longest_path_ranks(names: list[str], edges: list[tuple[str, str]]) -> dict[str, int]:
    """Each name's rank: 0 for sources, else one more than its highest-ranked predecessor (Kahn's order; a
    name on a cycle keeps the rank its visited predecessors give it)."""
    known = set(names)
    after: dict[str, list[str]] = {n: [] for n in names}
    waiting = dict.fromkeys(names, 0)
    for a, b in dict.fromkeys(edges):
        if a in known and b in known and a != b:
            after[a].append(b)
            waiting[b] += 1
    rank = dict.fromkeys(names, 0)
    ready = [n for n in names if waiting[n] == 0]
    while ready:
        name = ready.pop()
        for other in after[name]:
            rank[other] = max(rank[other], rank[name] + 1)
            waiting[other] -= 1
            if waiting[other] == 0:
                ready.append(other)
    return rank


def far_writers(joins: list[tuple[Hashable, list[tuple[str, str]]]], edges: list[tuple[str, str]],
                stubbed: Callable[[str], bool]) -> dict[Hashable, set[str]]:
    """Which writers of each crowded join get a stub instead of an edge (``far_readers``' mirror, module
    docstring).

    Args:
        joins: (join key, its edges on the page as (writer, join) dot names).
        edges: every edge of the page, for the ranks.
        stubbed: whether a writer's edge may end in a stub.

    Returns:
        join key → the writers whose edge ends in a stub (only joins that have some).
    """
    crowded = [(key, pairs) for key, pairs in joins if len({start for start, _ in pairs}) > FAR_READERS]
    if not crowded:
        return {}
    into = {pair for _, pairs in crowded for pair in pairs}
    rank = settled_ranks([edge for edge in edges if edge not in into])  # each writer where its inputs put it
    loose = loose_items(edges)
    far: dict[Hashable, set[str]] = {}
    for key, pairs in crowded:
        writers = {start for start, _ in pairs} - loose
        latest = max((rank.get(w, 0) for w in writers), default=0)
        stubs = {w for w in writers if stubbed(w) and rank.get(w, 0) < latest - NEAR_RANKS}
        if len(stubs) >= FAR_READERS:
            far[key] = stubs
    return far


def loose_items(edges: list[tuple[str, str]]) -> set[str]:
    """The names dot may draw anywhere above their one reader: a source read once, or read once and fed only by
    such (a chain hanging from a stub)."""
    inputs: dict[str, set[str]] = {}
    readers: dict[str, int] = {}
    for a, b in dict.fromkeys(edges):
        if a != b:
            inputs.setdefault(b, set()).add(a)
            inputs.setdefault(a, set())
            readers[a] = readers.get(a, 0) + 1
    loose = {name for name, fed in inputs.items() if not fed and readers.get(name) == 1}
    grown = True
    while grown:
        more = {name for name, fed in inputs.items()
                if name not in loose and fed and fed <= loose and readers.get(name) == 1}
        loose |= more
        grown = bool(more)
    return loose


def loose_edges(edges: list[tuple[str, str]]) -> set[tuple[str, str]]:
    """The edges drawn with weight 0: from a source of the page (a stub from another page, a graph input: a name
    no edge leads to) with more than one reader, to a reader fed by sources only whose own nearest reader is more
    than ``LOOSE_RANKS`` ranks further down. They still rank the reader below its source but no longer pull it
    up to the first rank, so it sits with what it feeds: the input step of each cell of an unrolled LSTM (a Gemm
    of one slice of the input) beside its cell, not all of them on the first rank with the cells in a staircase
    below. Branches of one length (a detector's neck reading four scales) stay side by side; a reader with a
    producer on the page is ranked by it anyway; a source of one reader keeps the weight that pulls it down."""
    fed: dict[str, set[str]] = {}
    after: dict[str, set[str]] = {}
    for tail, head in edges:
        if tail != head:
            fed.setdefault(head, set()).add(tail)
            after.setdefault(tail, set()).add(head)
    rank = longest_path_ranks(list(dict.fromkeys(name for edge in edges for name in edge)), edges)
    loose = set()
    for tail, head in edges:
        if tail in fed or len(after.get(tail, ())) < 2 or any(producer in fed for producer in fed.get(head, ())):
            continue
        if min((rank[reader] for reader in after.get(head, ())), default=0) > rank[head] + LOOSE_RANKS:
            loose.add((tail, head))
    return loose
