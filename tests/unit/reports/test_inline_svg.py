"""``renderer.reports.inline_svg`` on SVGs the real ``dot`` writes: gradients referenced by ``url(#…)``, links to ids of
the same picture and to other files, hostile text; and what it refuses."""

from __future__ import annotations

import pytest

import payloads as P
from conftest import SVG_NS, parse_svg
from picture_checks import inlined_prefix

DOT = """digraph g {
  a [style=filled, fillcolor="red:blue", id="op-0-0", href="#op-0-1", tooltip="to b"]
  b [style=radial, fillcolor="white:green", id="op-0-1", href="page-002.svg#op-0-5", tooltip="elsewhere"]
  c [label=%s, href="#clust1"]
  subgraph cluster_x { d e }
  a -> b -> c -> d -> e
}
"""


def _svg(label: str = '"c"') -> str:
    from renderer.picture.graphviz_run import run_dot

    return run_dot(DOT % label, "svg").decode("utf-8")


def test_every_id_and_reference_is_prefixed_and_links_elsewhere_are_not() -> None:
    from renderer.reports.inline_svg import inline, prefix_for

    svg = _svg()
    assert "url(#" in svg and "<linearGradient" in svg and "<radialGradient" in svg  # Graphviz's own ids
    prefix = prefix_for("page", "1")
    out = inline(svg, prefix)
    assert inlined_prefix(out) == prefix
    root = parse_svg(out)
    ids = {e.get("id") for e in root.iter() if e.get("id")}
    before = {e.get("id") for e in parse_svg(svg).iter() if e.get("id")}
    assert ids == {prefix + i for i in before}
    assert {"graph0", "op-0-0", "a_op-0-0", "clust1", "node3", "edge1"} <= before
    links = sorted(v for e in root.iter() for k, v in e.attrib.items() if k.endswith("href"))
    assert links == [f"#{prefix}clust1", f"#{prefix}op-0-1", "page-002.svg#op-0-5"]  # a page's links stay
    fills = [e.get("fill") for e in root.iter() if (e.get("fill") or "").startswith("url(")]
    assert len(fills) == 2 and all(f.startswith(f"url(#{prefix}") for f in fills)
    assert root.tag == f"{SVG_NS}svg" and 'xlink:href="' in out and "ns0" not in out
    assert inline(svg, prefix) == out and inline(svg, prefix_for("page", "2")) != out
    assert 'href="_images/page-002.svg#op-0-5"' in inline(svg, prefix, base="_images/")


@pytest.mark.parametrize("payload", P.PAYLOADS, ids=[p.name for p in P.PAYLOADS])
def test_hostile_text_stays_text(payload: P.Payload) -> None:
    """The payload as a label and a tooltip, escaped as ``dot.py`` does: after the rewriting, the same text and
    still only text."""
    import graphviz

    from renderer.core import escape
    from renderer.picture.graphviz_run import run_dot
    from renderer.reports.inline_svg import inline, prefix_for

    graph = graphviz.Digraph()
    graph.node("a", label=escape.html_label(escape.html_text(payload.text, 2000)), id="op-0-0", href="#op-0-1",
               tooltip=escape.tooltip([payload.text]))
    graph.node("b", label=escape.attr(payload.text), id="op-0-1", style="filled", fillcolor="red:blue")
    graph.edge("a", "b")
    svg = run_dot(graph.source, "svg").decode("utf-8")
    out = inline(svg, prefix_for("x"))
    before = P.svg_texts(P.check_svg(svg.encode("utf-8")))
    assert P.svg_texts(P.check_svg(out.encode("utf-8"))) == before
    inlined_prefix(out)
    P.check_html(f"<!DOCTYPE html><html><body>{out}</body></html>".encode("utf-8"))


@pytest.mark.parametrize("svg, word", [
    ('<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>', "script"),
    ('<svg xmlns="http://www.w3.org/2000/svg"><g onclick="alert(1)"/></svg>', "onclick"),
    ('<svg xmlns="http://www.w3.org/2000/svg" xmlns:x="http://www.w3.org/1999/xlink">'
     '<a x:href="javascript:alert(1)"/></svg>', "href"),
    ('<svg xmlns="http://www.w3.org/2000/svg" xmlns:h="http://www.w3.org/1999/xhtml"><h:p/></svg>', "namespace"),
    ('<svg xmlns="http://www.w3.org/2000/svg"><g id="a">', "does not parse"),
])
def test_active_or_broken_svgs_are_refused(svg: str, word: str) -> None:
    from renderer.core.errors import RenderError
    from renderer.reports.inline_svg import inline

    with pytest.raises(RenderError, match=word):
        inline(svg, "p-")
