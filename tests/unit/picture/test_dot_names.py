"""``renderer/picture/dot_names.py``: pages of one structure whose names differ come out as one text, and the
names put back into Graphviz's own outputs of that text give the very bytes Graphviz writes for each page."""

from __future__ import annotations

import subprocess

import pytest

from renderer.picture import dot_names


def _page(first: int, title: str = "layer") -> str:
    """A page as the emitters write one: labelled operators numbered from ``first``, a cluster, ids with ``-``,
    an edge into the cluster (``lhead``)."""
    a, b, c = (f"op_0_{first + k}" for k in range(3))
    return (f'digraph annograph {{\n\tgraph [compound=true id="page-{first}-svg"]\n'
            f'\t{a} [label=<<TABLE><TR><TD>MatMul</TD></TR></TABLE>> id="op-0-{first}" shape=plain]\n'
            f'\tsubgraph cluster_g{first} {{\n\t\tgraph [id="cl-{first}" label="{title}"]\n'
            f'\t\t{b} [label="Add" id="op-0-{first + 1}"]\n\t\t{c} [label="Relu" id="op-0-{first + 2}"]\n\t}}\n'
            f'\t{a} -> {b} [id="t-{first}" label="1×64" lhead=cluster_g{first}]\n'
            f'\t{b} -> {c} [id="t-{first + 1}"]\n}}\n')


def _graphviz(text: str, fmt: str) -> bytes:
    return subprocess.run(["dot", f"-T{fmt}"], input=text.encode(), capture_output=True, check=True).stdout


def test_pages_that_differ_in_names_are_one_text_and_each_gets_its_names_back_as_graphviz_writes_them() -> None:
    first, second = dot_names.named(_page(100)), dot_names.named(_page(2345))
    assert first.text == second.text and "op_0_" not in first.text and "cluster_g" not in first.text
    assert "clusteragn0q" in first.text  # still a cluster for Graphviz
    for page, names in ((_page(100), first), (_page(2345), second)):
        assert names.back(_graphviz(names.text, "svg"), svg=True) == _graphviz(page, "svg")
        assert names.back(_graphviz(names.text, "plain")) == _graphviz(page, "plain")
        assert names.back(_graphviz(names.text, "dot")) == _graphviz(page, "dot")


def test_a_page_with_other_text_is_another_text() -> None:
    assert dot_names.named(_page(100)).text != dot_names.named(_page(100, title="block")).text


@pytest.mark.parametrize("source, kept", [
    ('digraph g {\n\ta [label="A"]\n\tb [shape=box]\n\ta -> b\n}\n', ["b"]),  # b shows its name
    ('digraph g {\n\ta [label="A"]\n\ta -> c\n}\n', ["c"]),  # c is declared by the edge alone
    ('digraph g {\n\ta [label="A"]\n\tb [label="B"]\n\ta:p -> b:n\n}\n', ["p", ":n"]),  # ports stay
    ('digraph g {\n\t"a b" [label="A"]\n\t"a&b" [label="B"]\n\t"a b" -> "a&b"\n}\n', ['"a b"', '"a&b"']),
])
def test_a_name_that_is_drawn_or_not_plain_is_kept(source: str, kept: list[str]) -> None:
    names = dot_names.named(source)
    for name in kept:
        assert name in names.text
    assert 'label="A"' in names.text and names.back(_graphviz(names.text, "svg"), svg=True) == _graphviz(source, "svg")


@pytest.mark.parametrize("source", [
    'digraph g {\n\tnode [label="x"]\n\ta\n\tb [label="B"]\n}\n',  # a default label: a node may show its name
    'digraph g {\n\ta [label="A"]\n\tb [label="node \\N"]\n}\n',  # a label that draws a name
])
def test_a_source_that_may_draw_a_name_keeps_every_name(source: str) -> None:
    names = dot_names.named(source)
    assert names.text == source and names.back(b"a b") == b"a b"


def test_a_label_first_in_its_list_is_read_past_once_and_what_follows_it_is_stood_in_for() -> None:
    label = '<<TABLE ID="in_label"><TR><TD HREF="x">id=inside lhead=cluster_q ]</TD></TR></TABLE>>'
    source = (f'digraph g {{\n\tgraph [compound=true]\n\ta [label={label} id="op-0-1" shape=plain]\n'
              f'\tsubgraph cluster_s {{\n\t\tb [label="B" id=op_b]\n\t}}\n\ta -> b [lhead=cluster_s id="t-1"]\n}}\n')
    names = dot_names.named(source)
    assert label in names.text and "op-0-1" not in names.text and "cluster_s" not in names.text
    assert names.back(_graphviz(names.text, "svg"), svg=True) == _graphviz(source, "svg")


def _fresh(text: str) -> dot_names.Named:
    """``named(text)`` read anew, as if no text of its shape had been named before."""
    kept = dict(dot_names._TWINS)
    dot_names._TWINS.clear()
    try:
        return dot_names.named(text)
    finally:
        dot_names._TWINS.clear()
        dot_names._TWINS.update(kept)


def _shaped(a: str = "ab_1", b: str = "cd_2", c: str = "efg_3", loose: str = "gh_9", quote: bool = False,
            label: str = "MatMul") -> str:
    """A page whose stood-in names are ``a``, ``b`` and ``c`` (``c`` quoted where ``quote``), beside a node with
    no label (``loose``, kept); of one shape (its length but for digits, its lines and lists) for names as long."""
    c = f'"{c}"' if quote else c
    return (f'digraph annograph {{\n\tgraph [compound=true]\n\t{a} [label=<<B>{label}</B>> id="{a}_id"]\n'
            f'\tsubgraph cluster_{b} {{\n\t\t{b} [label="Add"]\n\t\t{c} [label="Relu"]\n\t}}\n'
            f'\t{loose} [shape=point]\n\t{a} -> {b} [lhead=cluster_{b}]\n\t{b} -> {c}\n\t{c} -> {loose}\n}}\n')


def test_a_page_of_a_shape_named_before_is_named_from_its_twin_as_if_read_anew() -> None:
    first, second = _page(100), _page(2345)
    dot_names._TWINS.clear()
    dot_names.named(first)
    twin = next(iter(dot_names._TWINS.values()))
    assert twin.named(second) is not None  # read off the twin, not lexed again
    names = dot_names.named(second)
    assert names == _fresh(second) and names.text == dot_names.named(first).text
    assert names.back(_graphviz(names.text, "svg"), svg=True) == _graphviz(second, "svg")
    dot_names._TWINS.clear()
    dot_names.named(_shaped())
    other = _shaped("ab_4", "cd_5", "efg_6")
    assert dot_names._TWINS[dot_names._shape(other)].named(other) is not None
    assert dot_names.named(other) == _fresh(other)


@pytest.mark.parametrize("other", [
    _shaped(b="gh_9"),  # a name that the first page left as it is (a node with no label)
    _shaped(b="ab_1"),  # two names that were two are one
    _shaped(c="e_3", quote=True),  # a name quoted where it was plain
    _shaped(c="node"),  # a keyword
    _shaped(label="agn0q_x"),  # a text holding the first page's prefix
    _shaped(loose="ij_9"),  # other text where nothing is stood in for
])
def test_a_page_of_the_same_shape_that_would_read_otherwise_is_read_anew(other: str) -> None:
    dot_names._TWINS.clear()
    dot_names.named(_shaped())
    [twin] = dot_names._TWINS.values()
    assert dot_names._TWINS.get(dot_names._shape(other)) is twin and twin.named(other) is None
    assert dot_names.named(other) == _fresh(other)

