"""``renderer/picture/skeleton.py``: where an HTML label ends (a lone ``<`` refuses the skeleton), and that what
follows a label is still stood in for; the SVG put back is checked against Graphviz's own in test_layout_cache."""

from __future__ import annotations

import re

import pytest

from renderer.picture import skeleton


def test_a_label_ends_at_the_first_bracket_that_closes_no_tag_and_what_follows_is_stood_in_for() -> None:
    source = ('digraph g {\n\tn [label=<<TABLE><TR><TD TITLE="t 1" BGCOLOR="#a1b2c3">x &lt; 12.5 ms</TD></TR>'
              '</TABLE>> tooltip="after 3" fillcolor="#102030"]\n\tm [tooltip="q \\"<\\" 4"]\n}\n')
    frame = skeleton.skeleton(source)
    assert [t.original for t in frame.tokens] == ["t 1", "#a1b2c3", "x &lt; 12.5 ms", '"after 3"', "#102030",
                                                  '"q \\"<\\" 4"']
    assert "x &lt; 00.0 ms" in frame.text and "12.5" not in frame.text and '"after 3"' not in frame.text
    assert frame.restore(frame.text) == source


@pytest.mark.parametrize("label", ["<<TABLE><TR><TD>a < b</TD></TR></TABLE>>", "<<TABLE><TR><TD>open"])
def test_a_label_with_a_lone_bracket_or_no_end_is_refused(label: str) -> None:
    with pytest.raises(skeleton.Unskeletal):
        skeleton.skeleton(f"digraph g {{\n\tn [label={label}]\n}}\n")


def test_a_label_seen_before_is_stood_in_for_as_when_read_anew() -> None:
    label = ('<<TABLE><TR><TD TITLE="op 7" BGCOLOR="#a1b2c3"><FONT COLOR="#102030">12.5 ms</FONT></TD>'
             '<TD HREF="p.svg">x &amp; 3</TD></TR></TABLE>>')
    first = f'digraph g {{\n\tn [label={label} tooltip="t 1" fillcolor="#405060"]\n}}\n'
    # the label again, after other tokens (a page's columns replay its first emission's lines)
    again = (f'digraph g {{\n\tsubgraph cluster_col0 {{\n\t\tm [tooltip="u 2" color="#708090"]\n'
             f'\t\tn [label={label} tooltip="t 2" fillcolor="#405060"]\n\t}}\n}}\n')  # its line another
    skeleton._label_parts.cache_clear()
    fresh = skeleton.skeleton(again)
    skeleton.skeleton(first)
    kept = skeleton.skeleton(again)
    assert skeleton._label_parts.cache_info().hits >= 1
    assert kept == fresh
    assert [t.original for t in kept.tokens][:3] == ['"u 2"', "#708090", "op 7"]
    assert kept.restore(kept.text) == again


def test_a_labels_text_is_stood_in_for_in_the_ink_of_the_fonts_around_it() -> None:
    """A run of text with a digit between two tags takes the colour of the innermost ``FONT`` naming one around
    it, the default black outside any; a ``FONT`` without a colour keeps its parent's; a run at the label's own
    ``<`` or ``>`` is not between two tags and stays as it is."""
    label = ('<7<TABLE BGCOLOR="#a1b2c3"><TR><TD><FONT COLOR="#FF0000">12 ms<FONT POINT-SIZE="8">3</FONT></FONT>'
             '4</TD></TR></TABLE>8>')
    frame = skeleton.skeleton(f"digraph g {{\n\tn [label={label}]\n}}\n")
    assert [(t.original, t.ink) for t in frame.tokens] == [
        ("#a1b2c3", None), ("#FF0000", None), ("12 ms", "#ff0000"), ("3", "#ff0000"), ("4", "")]
    assert "<7<TABLE" in frame.text and "</TABLE>8>" in frame.text and ">000000 ms<" in frame.text
    assert frame.restore(frame.text) == f"digraph g {{\n\tn [label={label}]\n}}\n"


@pytest.mark.parametrize(("head", "stood_in"), [
    ("digraph g {\n", True), ('digraph g {\n\tedge [fontcolor="#333333"]\n', True),
    ('digraph g {\n\tn0 [fontcolor="#333333"]\n', True), ('fontcolor="#333333"\ndigraph g {\n', False),
    ('digraph g {\n\tnode [fontsize=10 fontcolor="#333333"]\n', False),
    ('digraph g {\n\n\n\tgraph\n\t[fontcolor="#333333"]\n', False),
    ('digraph g {\n\tsubgraph s {\n\t\tfontcolor="#333333"\n\t}\n', False),
])
def test_a_labels_digits_are_stood_in_for_only_when_no_default_fontcolor_is_named(head: str, stood_in: bool) -> None:
    frame = skeleton.skeleton(f"{head}\tn [label=<<TABLE><TR><TD>12.5 ms</TD></TR></TABLE>>]\n}}\n")
    assert ("12.5" not in frame.text) is stood_in


def test_colour_tokens_pass_over_the_colours_the_text_names_and_come_back() -> None:
    # a plain label naming #000001 and #000003 (kept as they are): the stood-in colours take #000002, #000004, …
    source = ('digraph g {\n\ta [label="#000001 #000003" fillcolor="#aabbcc" color="#112233"]\n'
              '\tb [color="#445566" fontcolor="#778899"]\n}\n')
    frame = skeleton.skeleton(source)
    assert frame.colours == {"#000002": 0, "#000004": 1, "#000005": 2, "#000006": 3}
    assert 'label="#000001 #000003"' in frame.text and "#aabbcc" not in frame.text
    assert frame.restore(frame.text) == source
    plain = skeleton.skeleton(source.replace('label="#000001 #000003" ', ""))
    assert list(plain.colours) == ["#000001", "#000002", "#000003", "#000004"]


def test_a_string_or_label_over_several_lines_is_read_whole_as_the_source_holds_it() -> None:
    # a tooltip whose second line reads like another statement, and a label whose text runs over a newline: read
    # line by line, the first would stand in for the inner tooltip; each is one token, or no token, as in the source
    source = ('digraph g {\n\tn [tooltip="a\n\tm [tooltip=\\"x 1\\"] 3" fillcolor="#102030"]\n'
              '\tk [label=<<TABLE><TR><TD BGCOLOR="#a1b2c3">1\n2 ms</TD></TR></TABLE>> color="#405060"]\n}\n')
    frame = skeleton.skeleton(source)
    assert [t.original for t in frame.tokens] == ['"a\n\tm [tooltip=\\"x 1\\"] 3"', "#102030", "#a1b2c3", "#405060"]
    assert frame.text == ('digraph g {\n\tn [tooltip=agv0q0z fillcolor="#000001"]\n\tk [label=<<TABLE><TR><TD '
                          'BGCOLOR="#000002">1\n2 ms</TD></TR></TABLE>> color="#000003"]\n}\n')
    assert frame.restore(frame.text) == source


def test_lines_seen_before_indented_anew_make_the_skeleton_of_reading_them_anew() -> None:
    # a page laid out again in columns: its first emission's lines inside a column's subgraph, after other tokens
    lines = ['n [label=<<TABLE><TR><TD BGCOLOR="#a1b2c3">12.5 ms</TD><TD HREF="p.svg">x 3</TD></TR></TABLE>> '
             'tooltip="t 1" fillcolor="#405060"]', 'n -> m [label="1×64" tooltip="e 2" color="#606060"]']
    first = "digraph g {\n" + "".join(f"\t{line}\n" for line in lines) + "}\n"
    again = ('digraph g {\n\tsubgraph cluster_col0 {\n\t\tm [tooltip="u 2" color="#708090"]\n'
             + "".join(f"\t\t{line}\n" for line in lines) + "\t}\n}\n")
    skeleton._line_parts.cache_clear()
    skeleton._label_parts.cache_clear()
    fresh = skeleton.skeleton(again)
    skeleton._line_parts.cache_clear()
    skeleton.skeleton(first)
    kept = skeleton.skeleton(again)
    assert skeleton._line_parts.cache_info().hits >= len(lines)
    assert kept == fresh
    assert [t.original for t in kept.tokens] == ['"u 2"', "#708090", "#a1b2c3", "12.5 ms", "p.svg", "x 3",
                                                 '"t 1"', "#405060", '"e 2"', "#606060"]
    assert kept.restore(kept.text) == again


def _one_search(frame: skeleton.Skeleton, drawn: str) -> str:
    """``fill_svg`` as one search of its three ways (what its three searches must give)."""
    pattern = re.compile(rf'(<text [^>]*?fill=")(#[0-9a-f]{{6}})("[^>]*>)([^<]*)(</text>)'
                         rf'|"(#[0-9a-f]{{6}})"|{frame.prefix}([0-9]+)z')

    def back(match: re.Match[str]) -> str:
        if match.lastindex == 7:
            return frame.tokens[int(match[7])].svg
        index = frame.colours.get(match[6] if match.lastindex == 6 else match[2], -1)
        if index < 0:
            return match[0]
        token, (start, _, rest, text, end) = frame.tokens[index], match.groups()[:5]
        if match.lastindex == 6:
            return f'"{token.svg}"'
        if token.ink is None:
            return f"{start}{token.svg}{rest}{text}{end}"
        if not token.ink:
            return f"{start[:-7]}{rest[1:]}{token.svg}{end}"
        return f"{start}{token.ink}{rest}{token.svg}{end}"

    return pattern.sub(back, drawn)


def test_the_svg_filled_by_three_searches_is_the_one_search_of_them_all() -> None:
    tokens = (skeleton.Token("t 1", "t&#160;1"), skeleton.Token("#A1B2C3", "#a1b2c3"),
              skeleton.Token("12.5", "12.5", ink="#102030"), skeleton.Token("3 ms", "3&#160;ms", ink=""),
              skeleton.Token("#405060", "#405060", ink=None))
    frame = skeleton.Skeleton("", "agv0q", tokens, {"#000002": 1, "#000003": 2, "#000004": 3, "#000005": 4})
    drawn = ('<g><a xlink:title="agv0q0z"><path fill="#000002" stroke="#000005"/>'
             '<text x="1" fill="#000003">000000</text><text x="2" fill="#000004">0 ms</text>'
             '<text x="3" fill="#000005">cluster</text><text fill="#abcdef" title="agv0q0z">"#000002"agv0q0z</text>'
             '<text fill="#000002">open "#000004" agv0q0z<text fill="#000009">x</text></a>"#000002agv0q4z</g>')
    assert frame.fill_svg(drawn) == _one_search(frame, drawn)
    assert 'fill="#102030">12.5</text>' in frame.fill_svg(drawn) and 'x="2">3&#160;ms' in frame.fill_svg(drawn)
