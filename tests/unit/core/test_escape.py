"""``renderer/core/escape.py``: a table of hostile strings × every escaping function, with the text each rule must
give; then the same strings through the real consumers (Graphviz, an XML parser, markdown-it as GitHub reads a
comment, URL decoding), checking that what a reader sees is the cleaned text, as typed."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import unquote_to_bytes

import pytest

from conftest import ROOT, SVG_NS, parse_svg, run_cli
from payloads import markdown_tokens
from renderer.core import escape

B = "\\"  # one backslash, to keep the table readable
HOSTILE = {
    "plain": "conv1/Conv_0",
    "markup": '<b onclick="x">&amp;</b>',
    "quotes": "it's \"q\"",
    "escstring": "a\\N\\G\\n",
    "newlines": "a\nb\r\nc\td",
    "controls": "a\x00b\x1b\x7f\x85",
    "bidi": "abc\u202edef\u200b",
    "not_xml": "x\ud800y\uffff",
    "gfm": "*a* [l](u) @team #1 www.x.io",
    "backticks": "``a`|b",
    "long": "x" * 300,
    "entity": "&lt;x&gt;",
}
CLEANED_CONTROLS = f"a{B}x00b{B}x1b{B}x7f{B}x85"

EXPECTED: dict[str, dict[str, str]] = {
    "clean": {
        "plain": "conv1/Conv_0",
        "markup": '<b onclick="x">&amp;</b>',
        "quotes": "it's \"q\"",
        "escstring": "a\\N\\G\\n",
        "newlines": "a b c d",
        "controls": CLEANED_CONTROLS,
        "bidi": "abc<U+202E>def<U+200B>",
        "not_xml": "x\ufffdy\ufffd",
        "gfm": "*a* [l](u) @team #1 www.x.io",
        "backticks": "``a`|b",
        "long": "x" * 199 + "…",
        "entity": "&lt;x&gt;",
    },
    "html_text": {
        "plain": "conv1/Conv_0",
        "markup": "&lt;b onclick=&quot;x&quot;&gt;&amp;amp;&lt;/b&gt;",
        "quotes": "it&#x27;s &quot;q&quot;",
        "escstring": f"a{B * 2}N{B * 2}G{B * 2}n",
        "newlines": "a b c d",
        "controls": CLEANED_CONTROLS.replace(B, B * 2),
        "bidi": "abc&lt;U+202E&gt;def&lt;U+200B&gt;",
        "not_xml": "x\ufffdy\ufffd",
        "gfm": "*a* [l](u) @team #1 www.x.io",
        "backticks": "``a`|b",
        "long": "x" * 59 + "…",
        "entity": "&amp;lt;x&amp;gt;",
    },
    "svg_text": {
        "plain": "conv1/Conv_0",
        "markup": "&lt;b onclick=&quot;x&quot;&gt;&amp;amp;&lt;/b&gt;",
        "quotes": "it&#x27;s &quot;q&quot;",
        "escstring": "a\\N\\G\\n",
        "newlines": "a b c d",
        "controls": CLEANED_CONTROLS,
        "bidi": "abc&lt;U+202E&gt;def&lt;U+200B&gt;",
        "not_xml": "x\ufffdy\ufffd",
        "gfm": "*a* [l](u) @team #1 www.x.io",
        "backticks": "``a`|b",
        "long": "x" * 199 + "…",
        "entity": "&amp;lt;x&amp;gt;",
    },
    "attr": {
        "plain": "conv1/Conv_0",
        "markup": '<b onclick="x">&amp;amp;</b>',
        "quotes": "it's \"q\"",
        "escstring": f"a{B * 2}N{B * 2}G{B * 2}n",
        "newlines": f"a{B}nb{B}nc d",
        "controls": CLEANED_CONTROLS.replace(B, B * 2),
        "bidi": "abc<U+202E>def<U+200B>",
        "not_xml": "x\ufffdy\ufffd",
        "gfm": "*a* [l](u) @team #1 www.x.io",
        "backticks": "``a`|b",
        "long": "x" * 199 + "…",
        "entity": "&amp;lt;x&amp;gt;",
    },
    "tooltip": {
        "plain": "conv1/Conv_0",
        "markup": '<b onclick="x">&amp;amp;</b>',
        "quotes": "it's \"q\"",
        "escstring": f"a{B * 4}N{B * 4}G{B * 4}n",
        "newlines": f"a{B}nb{B}nc d",
        "controls": CLEANED_CONTROLS.replace(B, B * 4),
        "bidi": "abc<U+202E>def<U+200B>",
        "not_xml": "x\ufffdy\ufffd",
        "gfm": "*a* [l](u) @team #1 www.x.io",
        "backticks": "``a`|b",
        "long": "x" * 300,
        "entity": "&amp;lt;x&amp;gt;",
    },
    "href": {
        "plain": "conv1/Conv_0",
        "markup": "%3Cb%20onclick%3D%22x%22%3E%26amp%3B%3C/b%3E",
        "quotes": "it%27s%20%22q%22",
        "escstring": "a%5CN%5CG%5Cn",
        "newlines": "a%0Ab%0D%0Ac%09d",
        "controls": "a%00b%1B%7F%C2%85",
        "bidi": "abc%E2%80%AEdef%E2%80%8B",
        "not_xml": "x%3Fy%EF%BF%BF",
        "gfm": "%2Aa%2A%20%5Bl%5D%28u%29%20%40team%20#1%20www.x.io",
        "backticks": "%60%60a%60%7Cb",
        "long": "x" * 300,
        "entity": "%26lt%3Bx%26gt%3B",
    },
    "markdown_cell": {
        "plain": "`conv1/Conv_0`",
        "markup": '`<b onclick="x">&amp;</b>`',
        "quotes": "it's \"q\"",
        "escstring": "`a\\N\\G\\n`",
        "newlines": "a b c d",
        "controls": f"`{CLEANED_CONTROLS}`",
        "bidi": "`abc<U+202E>def<U+200B>`",
        "not_xml": "x\ufffdy\ufffd",
        "gfm": "`*a* [l](u) @team #1 www.x.io`",
        "backticks": "``` ``a`\\|b ```",
        "long": "x" * 119 + "…",
        "entity": "`&lt;x&gt;`",
    },
    "markdown_code": {
        "plain": "`conv1/Conv_0`",
        "markup": '`<b onclick="x">&amp;</b>`',
        "quotes": "`it's \"q\"`",
        "escstring": "`a\\N\\G\\n`",
        "newlines": "`a b c d`",
        "controls": f"`{CLEANED_CONTROLS}`",
        "bidi": "`abc<U+202E>def<U+200B>`",
        "not_xml": "`x\ufffdy\ufffd`",
        "gfm": "`*a* [l](u) @team #1 www.x.io`",
        "backticks": "``` ``a`|b ```",
        "long": "`" + "x" * 79 + "…`",
        "entity": "`&lt;x&gt;`",
    },
    # the string as both the label and the linked path
    "markdown_link": {
        "plain": "[`conv1/Conv_0`](conv1/Conv_0)",
        "markup": '[`<b onclick="x">&amp;</b>`](%3Cb%20onclick%3D%22x%22%3E%26amp%3B%3C/b%3E)',
        "quotes": "[`it's \"q\"`](it%27s%20%22q%22)",
        "escstring": "[`a\\N\\G\\n`](a%5CN%5CG%5Cn)",
        "newlines": "[`a b c d`](a%0Ab%0D%0Ac%09d)",
        "controls": f"[`{CLEANED_CONTROLS}`](a%00b%1B%7F%C2%85)",
        "bidi": "[`abc<U+202E>def<U+200B>`](abc%E2%80%AEdef%E2%80%8B)",
        "not_xml": "[`x\ufffdy\ufffd`](x%3Fy%EF%BF%BF)",
        "gfm": "[`*a* [l](u) @team #1 www.x.io`](%2Aa%2A%20%5Bl%5D%28u%29%20%40team%20%231%20www.x.io)",
        "backticks": "[``` ``a`|b ```](%60%60a%60%7Cb)",
        "long": "[`" + "x" * 119 + "…`](" + "x" * 300 + ")",
        "entity": "[`&lt;x&gt;`](%26lt%3Bx%26gt%3B)",
    },
    # DOT syntax only, by the graphviz package's rule: what reaches it was made safe by the functions above
    "dot_id": {
        "plain": '"conv1/Conv_0"',
        "markup": '<b onclick="x">&amp;</b>',
        "quotes": '"it\'s \\"q\\""',
        "escstring": '"a\\N\\G\\n"',
        "newlines": '"a\nb\r\nc\td"',
        "controls": '"a\x00b\x1b\x7f\x85"',
        "bidi": '"abc\u202edef\u200b"',
        "not_xml": '"x\ud800y\uffff"',
        "gfm": '"*a* [l](u) @team #1 www.x.io"',
        "backticks": '"``a`|b"',
        "long": "x" * 300,
        "entity": '"&lt;x&gt;"',
    },
}

FUNCTIONS = {
    "clean": escape.clean,
    "html_text": escape.html_text,
    "svg_text": escape.svg_text,
    "attr": escape.attr,
    "tooltip": lambda text: escape.tooltip([text]),
    "href": escape.href,
    "markdown_cell": escape.markdown_cell,
    "markdown_code": escape.markdown_code,
    "markdown_link": lambda text: escape.markdown_link(text, text),
    "dot_id": escape.dot_id,
}


DECODERS = {"svg_text_of", "svg_tooltip_of", "svg_title_of", "svg_href_of", "svg_name_of"}
"""What Graphviz writes into the SVG for text the functions above wrote into the DOT: checked against Graphviz's
own drawing on every payload in tests/unit/picture/test_layout_cache.py (test_the_svg_put_back_is_graphvizs_own),
and, for the plain names ``dot_names`` stands in for, in tests/unit/picture/test_dot_names.py."""


def test_the_table_covers_every_escaping_function() -> None:
    public = {name for name, value in vars(escape).items()
              if callable(value) and not name.startswith("_") and getattr(value, "__module__", "") == escape.__name__}
    assert DECODERS <= public
    assert public - {"html_label"} - DECODERS == set(FUNCTIONS) == set(EXPECTED)
    assert all(set(column) == set(HOSTILE) for column in EXPECTED.values())


@pytest.mark.parametrize("function,case", [(f, c) for f in EXPECTED for c in HOSTILE])
def test_escaping_table(function: str, case: str) -> None:
    assert FUNCTIONS[function](HOSTILE[case]) == EXPECTED[function][case]


def test_plain_labels_and_tooltips_are_never_read_as_html() -> None:
    from graphviz.quoting import NoHtml

    assert isinstance(escape.attr("<b>"), NoHtml) and isinstance(escape.tooltip(["<b>"]), NoHtml)
    assert escape.html_label("<B>x</B>") == "<<B>x</B>>"


def test_clean_keeps_the_tail_of_a_long_name_with_middle() -> None:
    name = "If_0_else_branch/" + "layer." * 40 + "3/conv/Conv"
    cut = escape.clean(name, 60, middle=True)
    head, tail = cut.split("…")
    assert len(cut) == 60 and name.startswith(head) and name.endswith(tail) and tail.endswith("/conv/Conv")
    assert escape.clean("a\nb", newlines=True) == "a\nb" and escape.clean("a\r\nb", newlines=True) == "a\nb"


def test_a_link_to_a_file_name_that_is_not_utf8_finds_its_bytes() -> None:
    """Python keeps such a name's bytes as lone surrogates; the link percent-encodes the bytes themselves."""
    name = b"m\xff \xfe.svg".decode("utf-8", "surrogateescape")
    assert unquote_to_bytes(escape.href(name)) == b"m\xff \xfe.svg"
    assert escape.markdown_link(name, name).endswith("(m%FF%20%FE.svg)")


def test_the_summary_links_a_picture_whose_name_is_not_utf8(tmp_path: Path) -> None:
    """Was an internal error (UnicodeEncodeError) when a summary linked such a picture."""
    picture = tmp_path / b"m\xff.svg".decode("utf-8", "surrogateescape")
    done = run_cli("render", ROOT / "samples" / "onnx" / "tiny_cnn.onnx", "-o", picture, "-o", tmp_path / "s.md")
    assert done.returncode == 0, done.stderr
    links = [t.attrGet("href") for t in markdown_tokens((tmp_path / "s.md").read_text(encoding="utf-8"))
             if t.type == "link_open"]  # type: ignore[attr-defined]
    assert [unquote_to_bytes(link) for link in links] == [b"m\xff.svg"]
    assert (tmp_path / b"m\xff.svg".decode("utf-8", "surrogateescape")).is_file()


# -- the real consumers ---------------------------------------------------------------------------------------------

def _graphviz_svg() -> object:
    """One node per hostile string: an HTML-like label of html_text and the tooltip, and a twin with a plain
    label (attr); written by the graphviz package as annograph writes its DOT, laid out by the real ``dot``."""
    import graphviz

    graph = graphviz.Digraph()
    for i, text in enumerate(HOSTILE.values()):
        graph.node(f"h{i}", id=f"h{i}", label=escape.html_label(escape.html_text(text, 400)),
                   tooltip=escape.tooltip([text]))
        graph.node(f"p{i}", id=f"p{i}", label=escape.attr(text, 400))
    return parse_svg(graph.pipe(format="svg"))


def _shown(root: object, ident: str) -> tuple[str, str]:
    """(the text lines of the node's label joined by newlines, its tooltip) as the SVG holds them."""
    group = next(g for g in root.iter(f"{SVG_NS}g") if g.get("id") == ident)  # type: ignore[attr-defined]
    texts = "\n".join(t.text or "" for t in group.iter(f"{SVG_NS}text"))
    link = next((a for a in group.iter(f"{SVG_NS}a")), None)
    return texts, (link.get("{http://www.w3.org/1999/xlink}title") if link is not None else "") or ""


def test_graphviz_shows_each_hostile_string_as_cleaned() -> None:
    root = _graphviz_svg()
    for i, text in enumerate(HOSTILE.values()):
        label, tip = _shown(root, f"h{i}")
        assert label.replace("\xa0", " ") == escape.clean(text, 400), (text, label)
        assert tip == escape.clean(text, 4000, newlines=True), (text, tip)
        plain, _ = _shown(root, f"p{i}")
        assert plain == escape.clean(text, 400, newlines=True), (text, plain)


def test_svg_text_parses_back_to_the_cleaned_text() -> None:
    for text in HOSTILE.values():
        root = parse_svg(f'<svg xmlns="http://www.w3.org/2000/svg"><text k="{escape.svg_text(text)}">'
                         f'{escape.svg_text(text)}</text></svg>')
        element = next(root.iter(f"{SVG_NS}text"))
        assert element.text == element.get("k") == escape.clean(text), text


@pytest.mark.parametrize("case", list(HOSTILE))
def test_markdown_shows_code_as_written_and_links_only_the_path(case: str) -> None:
    text = HOSTILE[case]
    cleaned = escape.clean(text, 120)
    tokens = markdown_tokens(f"| a |\n|---|\n| {escape.markdown_cell(text)} |\n\n{escape.markdown_link(text, text)}\n")
    kinds = [t.type for t in tokens]  # type: ignore[attr-defined]
    assert kinds.count("link_open") == 1 and not {"html_inline", "html_block", "image", "em_open"} & set(kinds)
    cell = "".join(t.content for t in tokens[kinds.index("td_open"):kinds.index("td_close")]  # type: ignore[attr-defined]
                   if t.type in ("text", "code_inline"))  # type: ignore[attr-defined]
    assert cell == cleaned
    link = tokens[kinds.index("link_open")]
    assert unquote_to_bytes(link.attrGet("href")) == escape._url_bytes(text)  # type: ignore[attr-defined]
    assert tokens[kinds.index("link_open") + 1].content == escape.clean(text, 120)  # type: ignore[attr-defined]


def _graphviz_xml_one_pass(text: str) -> str:
    """Graphviz's ``xml_string0`` written out as it reads: one character at a time."""
    table = {"&": "&amp;", "<": "&lt;", ">": "&gt;", "-": "&#45;", '"': "&quot;", "'": "&#39;", "\n": "&#10;",
             "\r": "&#13;"}
    return "".join("&#160;" if c == " " and i and text[i - 1] == " " else table.get(c, c) for i, c in enumerate(text))


def _backslashes_one_pass(text: str, newline: bool) -> str | None:
    out, i = [], 0
    while i < len(text):
        if text[i] != B:
            out.append(text[i])
        elif text[i + 1:i + 2] in ((B, "n") if newline else (B,)):
            out.append(B if text[i + 1] == B else "\n")
            i += 1
        else:
            return None
        i += 1
    return "".join(out)


def test_the_svg_escapes_are_graphvizs_one_pass_on_any_text() -> None:
    """``_graphviz_xml`` (a replacement per character, then a space after a space) and ``_backslashes`` (a fast
    path for text whose only backslashes start ``\\n``) give what one pass over the text gives, on 3,000 random
    strings of the characters they treat (spaces in runs, entities' ``&``, backslash pairs and odd ones)."""
    import random

    draw = random.Random(30)
    alphabet = ["a", " ", " ", "-", "&", "<", ">", '"', "'", "\n", "\r", B, B + "n", B + B, "n", "é", "&#160;"]
    for _ in range(3000):
        text = "".join(draw.choice(alphabet) for _ in range(draw.randint(0, 14)))
        assert escape._graphviz_xml(text) == _graphviz_xml_one_pass(text), repr(text)
        for newline in (True, False):
            assert escape._backslashes(text, newline) == _backslashes_one_pass(text, newline), (repr(text), newline)


def test_clean_keeps_lines_of_printable_text_and_cleans_the_rest_alike_on_any_text() -> None:
    """``clean(..., newlines=True)`` (a tooltip's lines): text whose only unprintable character is the newline
    comes back as it is; with any other, each rule applies, on 3,000 random strings."""
    import random

    bidi = "\u061c\u200b\u200c\u200d\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\ufeff"

    def by_the_rules(text: str) -> str:
        text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\t", " ")
        out = []
        for c in text:
            if c != "\n" and (ord(c) < 0x20 or 0x7f <= ord(c) <= 0x9f):
                out.append(f"\\x{ord(c):02x}")
            elif c in bidi:
                out.append(f"<U+{ord(c):04X}>")
            else:
                out.append("\ufffd" if 0xd800 <= ord(c) <= 0xdfff or c in "\ufffe\uffff" else c)
        return "".join(out)

    draw = random.Random(46)
    alphabet = ["a", " ", "\n", "\r", "\r\n", "\t", "\x00", "\x85", "\u202e", "\u200b", "\ud800", "\uffff", "é",
                "\u2028", "-"]
    for _ in range(3000):
        text = "".join(draw.choice(alphabet) for _ in range(draw.randint(0, 10)))
        assert escape.clean(text, 400, newlines=True) == by_the_rules(text), repr(text)


def test_dot_ids_are_the_graphviz_packages_own_on_every_short_text() -> None:
    """``dot_id`` skips the package's backslash and quote patterns when the text has no final backslash or no quote:
    every text of up to five of the characters those patterns and the ID rule look at comes out as the package's
    ``quote`` writes it, plain and as ``NoHtml``."""
    import itertools
    import warnings

    from graphviz import quoting
    from graphviz.quoting import NoHtml

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the package warns of a final odd backslash; dot_id lets it say so too
        for length in range(6):
            for chars in itertools.product('a\\"\n<> 1', repeat=length):
                text = "".join(chars)
                assert escape.dot_id(text) == quoting.quote(text), repr(text)
                assert escape.dot_id(NoHtml(text)) == quoting.quote(NoHtml(text)), repr(text)
