"""Names of the groups no scope names (stages, gathered runs, blocks) and the marks of repeated siblings."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from renderer.core.ir import Node
from renderer.picture.grouping.group import TWIN_KINDS, Group

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


def number_series(root: Group) -> None:
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


def name_synthetic(root: Group, fmt: str) -> None:
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


def mark_repeats(root: Group) -> None:
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

        level: set[Node] = set()

        def apart(a: Group, b: Group) -> bool:
            if not level:
                level.update(group.members())
            return _apart(a, b, level, order)

        i = 0
        while i < len(items):
            head = items[i]
            j = i + 1
            if isinstance(head, Group) and head.kind in TWIN_KINDS:
                while (j < len(items) and isinstance(items[j], Group) and items[j].size == head.size
                       and signature(items[j]) == signature(head) and not apart(items[j - 1], items[j])):
                    j += 1
                if j - i > 1:
                    head.repeat = j - i
                    for twin in items[i + 1:j]:
                        twin.twin_of = head
            i = j


def _apart(first: Group, second: Group, level: set[Node], order: dict[Node, int]) -> bool:
    """Whether a path from ``first`` to ``second`` runs through an operator of their level outside both (the
    fused MLP between the attention groups of a GPT-2 after onnxruntime's optimizer): one box for the two would
    draw edges out of itself and back in. Only operators before ``second``'s last are looked at."""
    own, ends = set(first.members()), set(second.members())
    last = max((order.get(n, 0) for n in ends), default=0)
    stack = [c for n in own for v in n.outputs for c in v.consumers
             if c in level and c not in own and c not in ends and order.get(c, 0) < last]
    seen = set(stack)
    while stack:
        for value in stack.pop().outputs:
            for reader in value.consumers:
                if reader in ends:
                    return True
                if reader in level and reader not in own and reader not in seen and order.get(reader, 0) < last:
                    seen.add(reader)
                    stack.append(reader)
    return False
