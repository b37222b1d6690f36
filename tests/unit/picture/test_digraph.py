"""``Digraph`` writes the very DOT text ``graphviz.Digraph`` writes, for every hostile payload as a node name,
a port, an attribute key or value, a label (plain, HTML-like or ``NoHtml``), a cluster's name and attributes."""

from __future__ import annotations

import graphviz
import pytest
from graphviz import nohtml

from payloads import PAYLOADS
from renderer.picture.digraph import Digraph, a_list, attr_list, dot_edge_end

TEXTS = [p.text for p in PAYLOADS] + ["", "node", "EDGE", "Strict", "-4.2", ".42", "4.", "a_b9", "9a", "<x>", "<",
                                      "a\\", "a\\\\", '\\\\"', "x:y:ne", "é", "<<b>x</b>>"]


def build(cls: type[graphviz.Digraph], text: str) -> str:
    dot = cls("annograph")
    dot.attr("graph", rankdir="TB", id=text)
    dot.attr("node", shape="plain", fontname=text)
    dot.node(text, label=text, tooltip=nohtml(text), **{"class": f"op {text}", "id": "op-0-0"})
    dot.node("b", label=nohtml(text), _attributes={"z": text, "a": "1"})
    dot.edge(text, "b", label=text, id=text)
    dot.edge(f"{text}:{text}:ne", f"b:{text}", _attributes=[("y", text), ("x", None)])
    dot.edges([("b", text), (f"c:{text}", "d")])
    with dot.subgraph(name=f"cluster_{text}") as inner:
        inner.attr(label=text, color="transparent")
        inner.node(f"in {text}", label=f"<<B>{text}</B>>")
    return dot.source


@pytest.mark.filterwarnings("ignore::graphviz.exceptions.DotSyntaxWarning")
@pytest.mark.parametrize("text", TEXTS, ids=range(len(TEXTS)))
def test_same_source_as_graphviz(text: str) -> None:
    ours = build(Digraph, text)
    assert ours == build(graphviz.Digraph, text)
    assert ours.count("\n") >= 12  # every statement is there


@pytest.mark.parametrize("text", TEXTS, ids=range(len(TEXTS)))
def test_quoting_functions_match(text: str) -> None:
    from graphviz import quoting

    assert dot_edge_end(f"{text}:p q") == quoting.quote_edge(f"{text}:p q")
    kwargs = {"b": text, "a": nohtml(text), "c": None}
    assert a_list(text, kwargs=kwargs, attributes=[("z", text)]) == quoting.a_list(text, kwargs=kwargs,
                                                                                   attributes=[("z", text)])
    assert attr_list() == quoting.attr_list() == ""
    assert attr_list(None, kwargs={"k": text}) == quoting.attr_list(None, kwargs={"k": text})


def test_odd_backslashes_warn_as_the_package_does() -> None:
    with pytest.warns(graphviz.exceptions.DotSyntaxWarning):
        Digraph().node("a\\")


def test_subgraphs_are_ours() -> None:
    dot = Digraph()
    with dot.subgraph(name="cluster_x") as inner:
        assert type(inner) is Digraph
