"""The id rules: how users name operators and tensors on the command line and in annotation files.

Operator ids, tried in this order:
    1. the operator's own name (ONNX node name),
    2. the name of one of its output tensors,
    3. ``N`` (operator N of graph 0) or ``S:N`` (operator N of graph S).
Tensor ids: the tensor's name, then ``N`` / ``S:N``. An exact name match wins over an index. A name that
matches several elements is ambiguous and reported, never guessed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from renderer.core.ir import ElementKey, Model, Node, Value

SUGGEST_BUDGET = 100
SUGGEST_CHARS = 200

# ASCII digits only: "١" or "１" is a name, never operator 1 (re's \d would take any Unicode digit).
_INDEX = re.compile(r"^\s*(?:([0-9]+)\s*:\s*)?([0-9]+)\s*$", re.ASCII)
_WHOLE = re.compile(r"[+-]?[0-9]+", re.ASCII)
MAX_DIGITS = 18  # below 2**63; longer runs of digits are no index, size or dim that can exist


def whole_number(text: str, signed: bool = False) -> int | None:
    """``text`` as an int when it is ASCII digits (with a sign when ``signed``) of at most MAX_DIGITS, else None.

    ``str.isdigit`` accepts "²" (which ``int`` refuses) and "١" (which ``int`` reads as 1); this does neither.
    """
    text = text.strip()
    if not _WHOLE.fullmatch(text) or (not signed and text[0] in "+-") or len(text.lstrip("+-")) > MAX_DIGITS:
        return None
    return int(text)


class Unresolved(Exception):
    """An id that matches nothing, or more than one element."""


class Ambiguous(Unresolved):
    """An id naming several elements; ``matches`` lists them (``2 matches: 0:1, 0:3``)."""

    def __init__(self, ident: str, keys: list[ElementKey]) -> None:
        self.matches = _keys_text(keys)
        super().__init__(f"{ident!r} is ambiguous ({self.matches})")


@dataclass(slots=True)
class IdIndex:
    """Name → element keys for one model, built once: the id rules, and the name tables tool readers match
    their own naming against (``node``, ``value``, ``producer``)."""

    model: Model
    op_names: dict[str, list[ElementKey]] = field(default_factory=dict)
    op_outputs: dict[str, list[ElementKey]] = field(default_factory=dict)
    tensor_names: dict[str, list[ElementKey]] = field(default_factory=dict)
    suggested: dict[tuple[str, str, int], list[str]] = field(default_factory=dict)

    @classmethod
    def build(cls, model: Model) -> IdIndex:
        index = cls(model)
        for graph in model.graphs:
            for node in graph.nodes:
                if node.name:
                    index.op_names.setdefault(node.name, []).append(node.key)
                for out in node.outputs:
                    if out.name:
                        index.op_outputs.setdefault(out.name, []).append(node.key)
            for value in graph.values:
                if value.name:
                    index.tensor_names.setdefault(value.name, []).append(value.key)
        return index

    def nodes_named(self, name: str) -> list[Node]:
        """Every operator whose own name is ``name``."""
        return [self.model.graphs[s].nodes[n] for _, s, n in self.op_names.get(name, [])]

    def values_named(self, name: str) -> list[Value]:
        """Every tensor called ``name``."""
        return [self.model.graphs[s].values[n] for _, s, n in self.tensor_names.get(name, [])]

    def node(self, name: str, graph: int | None = None) -> Node | None:
        """The one operator called ``name`` (in ``graph`` when given), else None (missing or ambiguous)."""
        found = [n for n in self.nodes_named(name) if graph is None or n.graph.index == graph]
        return found[0] if len(found) == 1 else None

    def value(self, name: str, graph: int | None = None) -> Value | None:
        """The one tensor called ``name`` (in ``graph`` when given), else None."""
        found = [v for v in self.values_named(name) if graph is None or v.graph.index == graph]
        return found[0] if len(found) == 1 else None

    def producer(self, tensor_name: str, graph: int | None = None) -> Node | None:
        """The operator writing the tensor called ``tensor_name``, else None."""
        value = self.value(tensor_name, graph)
        return value.producer if value is not None else None

    def operator(self, ident: str) -> ElementKey:
        """Resolve an operator id; raise Unresolved with the reason."""
        for table in (self.op_names, self.op_outputs):
            keys = table.get(ident)
            if keys:
                if len(set(keys)) > 1:
                    raise Ambiguous(ident, keys)
                return keys[0]
        return self._by_index(ident, "op")

    def tensor(self, ident: str) -> ElementKey:
        """Resolve a tensor id; raise Unresolved with the reason."""
        keys = self.tensor_names.get(ident)
        if keys:
            if len(keys) > 1:
                raise Ambiguous(ident, keys)
            return keys[0]
        return self._by_index(ident, "t")

    def _by_index(self, ident: str, kind: str) -> ElementKey:
        match = _INDEX.match(ident)
        if not match:
            raise Unresolved(f"{ident!r} matches no {'operator' if kind == 'op' else 'tensor'}")
        graph_text, item_text = match.group(1) or "0", match.group(2)
        if len(graph_text) > MAX_DIGITS or len(item_text) > MAX_DIGITS:
            raise Unresolved(f"{ident[:40]!r}: no model has that many graphs or elements")
        graph_index, item = int(graph_text), int(item_text)
        if graph_index >= len(self.model.graphs):
            raise Unresolved(f"{ident!r}: there is no graph {graph_index} (the model has {len(self.model.graphs)})")
        graph = self.model.graphs[graph_index]
        count = len(graph.nodes) if kind == "op" else len(graph.values)
        if item >= count:
            what = "operators" if kind == "op" else "tensors"
            raise Unresolved(f"{ident!r}: graph {graph_index} has {count} {what}")
        return (kind, graph_index, item)

    def suggest(self, ident: str, kind: str, n: int = 2) -> list[str]:
        """Close names for an unmatched id.

        Each call compares ``ident`` with every name of the model, so the answers are cached, names are
        compared by their first ``SUGGEST_CHARS`` characters, and only the first ``SUGGEST_BUDGET`` distinct
        ids get suggestions (a million-row file of unknown ids must not cost a million scans of the model).
        """
        key = (ident, kind, n)
        cached = self.suggested.get(key)
        if cached is not None:
            return cached
        if len(self.suggested) >= SUGGEST_BUDGET:
            return []
        names = list(self.op_names) + list(self.op_outputs) if kind == "op" else list(self.tensor_names)
        short: dict[str, str] = {}
        for name in names:
            short.setdefault(name[:SUGGEST_CHARS], name)
        import difflib

        found = difflib.get_close_matches(ident[:SUGGEST_CHARS], list(short), n=n, cutoff=0.6)
        self.suggested[key] = [short[f] for f in found]
        return self.suggested[key]


def _keys_text(keys: list[ElementKey]) -> str:
    shown = ", ".join(f"{k[1]}:{k[2]}" for k in keys[:4])
    return f"{len(keys)} matches: {shown}{', …' if len(keys) > 4 else ''}"
