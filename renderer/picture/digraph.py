"""The DOT text ``graphviz.Digraph`` writes, made by our own class with its quoting done by ``escape.dot_id``.

The package runs every ID and attribute through ``quote``, which a deprecation wrapper checks on each call: on a
20,000-operator model that is 180,000 calls and a third of the time the DOT takes to emit. Here the same rule
(``escape.dot_id``) is called directly; attributes are ordered as the package orders them (a plain dict sorted).
The class does what annograph draws with (a digraph's attributes, nodes, edges, subgraphs, its body lines, a
copy) and nothing else, so a render does not import the package (and what only it imports: logging, platform,
subprocess helpers), a tenth of what a cached re-render imports. tests/unit/picture/test_digraph.py checks the
text against the package's.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from renderer.core.escape import dot_id


def _items(mapping: Mapping[str, Any]) -> Iterable[tuple[str, Any]]:
    """``graphviz._tools.mapping_items``: a plain dict's items sorted, another mapping's in its order."""
    return sorted(mapping.items()) if type(mapping) is dict else mapping.items()


def dot_edge_end(identifier: str) -> str:
    """``node[:port[:compass]]`` with its node and port quoted (``graphviz.quoting.quote_edge``'s rule)."""
    node, _, rest = identifier.partition(":")
    parts = [dot_id(node)]
    if rest:
        port, _, compass = rest.partition(":")
        parts.append(dot_id(port))
        if compass:
            parts.append(compass)
    return ":".join(parts)


def a_list(label: str | None = None, kwargs: Mapping[str, Any] | None = None,
           attributes: Mapping[str, Any] | Iterable[tuple[str, Any]] | None = None) -> str:
    """``label=… key=value …``: ``graphviz.quoting.a_list``'s text."""
    result = [f"label={dot_id(label)}"] if label is not None else []
    if kwargs:
        result += [f"{_key(k)}={dot_id(v)}" for k, v in _items(kwargs) if v is not None]
    if attributes:
        items = _items(attributes) if hasattr(attributes, "items") else attributes
        result += [f"{_key(k)}={dot_id(v)}" for k, v in items if v is not None]
    return " ".join(result)


_KEYS: dict[str, str] = {}
KEYS_KEPT = 256


def _key(key: str) -> str:
    """``dot_id`` of an attribute's name, kept for the few names a picture uses (each of its elements has some)."""
    quoted = _KEYS.get(key) if type(key) is str else None
    if quoted is None:
        quoted = dot_id(key)
        if type(key) is str and len(_KEYS) < KEYS_KEPT:
            _KEYS[key] = quoted
    return quoted


def attr_list(label: str | None = None, kwargs: Mapping[str, Any] | None = None,
              attributes: Mapping[str, Any] | Iterable[tuple[str, Any]] | None = None) -> str:
    """`` [label=… key=value …]``, or "" when empty: ``graphviz.quoting.attr_list``'s text."""
    content = a_list(label, kwargs=kwargs, attributes=attributes)
    return f" [{content}]" if content else ""


class Digraph:
    """A directed graph's DOT source, as ``graphviz.Digraph`` writes it (subgraphs are of this class too)."""

    def __init__(self, name: str | None = None, comment: str | None = None,
                 graph_attr: Mapping[str, Any] | None = None, node_attr: Mapping[str, Any] | None = None,
                 edge_attr: Mapping[str, Any] | None = None, body: Iterable[str] | None = None,
                 strict: bool | None = False) -> None:
        self.name, self.comment, self.strict = name, comment, strict
        self.graph_attr = dict(graph_attr) if graph_attr is not None else {}
        self.node_attr = dict(node_attr) if node_attr is not None else {}
        self.edge_attr = dict(edge_attr) if edge_attr is not None else {}
        self.body: list[str] = list(body) if body is not None else []

    def copy(self) -> Digraph:
        return type(self)(self.name, self.comment, self.graph_attr, self.node_attr, self.edge_attr, self.body,
                          self.strict)

    def __iter__(self, subgraph: bool = False) -> Iterator[str]:
        """The source line by line, as a graph or (``subgraph``) as a subgraph of another."""
        if self.comment:
            yield f"// {self.comment}\n"
        if subgraph:
            if self.strict:
                raise ValueError("subgraphs cannot be strict")
            head = "subgraph {}{{\n" if self.name else "{}{{\n"
        else:
            head = "strict digraph {}{{\n" if self.strict else "digraph {}{{\n"
        yield head.format(dot_id(self.name) + " " if self.name else "")
        for kw, attrs in (("graph", self.graph_attr), ("node", self.node_attr), ("edge", self.edge_attr)):
            if attrs:
                yield f"\t{kw}{attr_list(None, kwargs=attrs)}\n"
        yield from self.body
        yield "}\n"

    @property
    def source(self) -> str:
        return "".join(self)

    def __str__(self) -> str:
        return self.source

    def node(self, name: str, label: str | None = None, _attributes: Any = None, **attrs: Any) -> None:
        self.body.append(f"\t{dot_id(name)}{attr_list(label, kwargs=attrs, attributes=_attributes)}\n")

    def edge(self, tail_name: str, head_name: str, label: str | None = None, _attributes: Any = None,
             **attrs: Any) -> None:
        self.body.append(f"\t{dot_edge_end(tail_name)} -> {dot_edge_end(head_name)}"
                         f"{attr_list(label, kwargs=attrs, attributes=_attributes)}\n")

    def edges(self, tail_head_iter: Iterable[tuple[str, str]]) -> None:
        self.body += [f"\t{dot_edge_end(tail)} -> {dot_edge_end(head)}\n" for tail, head in tail_head_iter]

    def attr(self, kw: str | None = None, _attributes: Any = None, **attrs: Any) -> None:
        """A ``graph``/``node``/``edge`` attribute statement, or (``kw`` None) the graph's own attributes."""
        if kw is not None and kw.lower() not in ("graph", "node", "edge"):
            raise ValueError(f"attr statement must target graph, node, or edge: {kw!r}")
        if attrs or _attributes:
            if kw is None:
                self.body.append(f"\t{a_list(None, kwargs=attrs, attributes=_attributes)}\n")
            else:
                self.body.append(f"\t{kw}{attr_list(None, kwargs=attrs, attributes=_attributes)}\n")

    def subgraph(self, graph: Digraph | None = None, name: str | None = None, comment: str | None = None,
                 graph_attr: Mapping[str, Any] | None = None, node_attr: Mapping[str, Any] | None = None,
                 edge_attr: Mapping[str, Any] | None = None, body: Iterable[str] | None = None) -> Any:
        """``graph``'s lines added as a subgraph; or, without it, a context manager giving a new subgraph (of
        these arguments), added when the ``with`` block ends."""
        if graph is None:
            return self._adding(type(self)(name, comment, graph_attr, node_attr, edge_attr, body, strict=None))
        if not all(a is None for a in (name, comment, graph_attr, node_attr, edge_attr, body)):
            raise ValueError("graph must be sole argument of subgraph()")
        self.body += [f"\t{line}" for line in graph.__iter__(subgraph=True)]
        return None

    @contextlib.contextmanager
    def _adding(self, subgraph: Digraph) -> Iterator[Digraph]:
        yield subgraph
        self.subgraph(subgraph)


__all__ = ["Digraph", "a_list", "attr_list", "dot_edge_end"]
