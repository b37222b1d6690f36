"""Every rule that makes model and annotation text safe, in one place.

Names and annotation text are hostile until they pass through here. Four destinations:
    * ``html_text``: content of a Graphviz HTML-like label (the operator boxes, legend, title).
    * ``attr``: a plain (non-HTML) label or other escString attribute; Graphviz escString sequences such as
      ``\\N`` or ``\\G`` are neutralised, quotes and ``<…>`` kept literal.
    * ``tooltip``: a hover text. Graphviz reads tooltips through one more unescaping pass than labels, so
      they need their own rule; never pass a tooltip through ``attr``.
    * ``markdown_cell``: a cell of a Markdown table, as escaped prose.
    * ``markdown_code`` / ``markdown_link``: names in a Markdown document read on GitHub (the PR summary), as
      code spans: nothing inside one is markup, a link, an autolink, a mention (``@user``) or an issue
      reference (``#1``), and the text shows as written.

Backslashes, as Graphviz 2.43+ treats them (checked by tests/test_injection.py on the real ``dot``):
    * HTML-like label text goes through the object substitution (``\\N`` → node name, ``\\G`` → graph name…),
      where ``\\\\`` stands for one backslash: each backslash is doubled.
    * Plain labels: substitution without backslash collapsing, then the line-break pass turns ``\\\\`` into
      one backslash: doubled as well.
    * Tooltips: entities decoded, then a pass that turns ``\\\\`` into ``\\`` (and ``\\n`` into a newline),
      then the substitution, where ``\\\\`` is again one backslash: each backslash becomes four.
HTML reports are escaped by jinja2's autoescape. Links (``href``) only ever hold page file names and element ids
that annograph makes, percent-encoded by ``href``; no model or annotation text reaches them.
"""

from __future__ import annotations

import html
import re
from typing import Any

from graphviz import nohtml
from graphviz import quoting as _dot
from graphviz.quoting import NoHtml

# C0 controls other than tab and newline, DEL, C1 controls: invalid or invisible in XML/SVG output.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
# Bidirectional overrides and isolates ("Trojan Source"), zero-width marks, and the BOM.
_BIDI = re.compile(r"[\u061c\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff]")
# Lone surrogates, and the two noncharacters XML 1.0 forbids (U+FFFE, U+FFFF): Graphviz refuses them in labels,
# and in a tooltip they make the SVG not well-formed. Shown as U+FFFD.
_NOT_XML = re.compile(r"[\ud800-\udfff\ufffe\uffff]")

ELLIPSIS = "…"


def clean(value: Any, limit: int = 200, newlines: bool = False, middle: bool = False) -> str:
    """``value`` as printable text: controls shown as ``\\xNN``, bidi controls as ``<U+202E>``, lone surrogates and
    U+FFFE/U+FFFF as U+FFFD, cut at ``limit``: its end cut off, or with ``middle`` its middle, so a long name
    keeps the distinctive tail (``If_0_else_br…/layer.3/conv/Conv``).

    >>> clean("a\\x00b\\u202ec"), clean("x" * 10, limit=4), clean("abcdefghij", limit=7, middle=True)
    ('a\\\\x00b<U+202E>c', 'xxx…', 'ab…ghij')
    """
    text = value if isinstance(value, str) else str(value)
    if len(text) > limit:
        text = _elided(text, limit, middle)
    if text.isprintable():  # no control, format (bidi, zero-width), surrogate or unassigned character: as it is
        return text
    if newlines and text.replace("\n", "").isprintable():  # lines of such text: as they are
        return text
    if not newlines:
        text = text.replace("\r\n", " ").replace("\n", " ").replace("\r", " ")
    else:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = text.replace("\t", " ")
    text = _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)
    text = _BIDI.sub(lambda m: f"<U+{ord(m.group()):04X}>", text)
    return _NOT_XML.sub("\ufffd", text)


def _elided(text: str, limit: int, middle: bool) -> str:
    """``text`` in ``limit`` characters with ``…`` for what was left out: its end, or its middle (a third of
    the room for the head, the rest for the tail)."""
    room = max(limit - 1, 0)
    if not middle or room < 3:
        return text[:room] + ELLIPSIS
    head = room // 3
    return text[:head] + ELLIPSIS + text[len(text) - (room - head):]


def html_text(value: Any, limit: int = 60, middle: bool = False) -> str:
    """Text for a cell of an HTML-like label: one line, entities for ``& < > " '`` (``middle``: see ``clean``).

    >>> html_text('<b onclick="x">&')
    '&lt;b onclick=&quot;x&quot;&gt;&amp;'
    """
    return html.escape(clean(value, limit, middle=middle), quote=True).replace("\\", "\\\\")


def svg_text(value: Any, limit: int = 200) -> str:
    """Text or an attribute value written straight into SVG (XML) by annograph itself, not through Graphviz:
    one line, entities for ``& < > " '``, backslashes as they are.

    >>> svg_text('<tspan x="1">&')
    '&lt;tspan x=&quot;1&quot;&gt;&amp;'
    """
    return html.escape(clean(value, limit), quote=True)


def attr(value: Any, limit: int = 200) -> NoHtml:
    """A plain label or other escString attribute: never read as HTML, backslash escapes disabled, newlines
    kept as ``\\n``. Not for tooltips (see ``tooltip``)."""
    return _esc_string(value, limit, backslash="\\\\")


def tooltip(lines: list[str], limit: int = 4000) -> NoHtml:
    """A hover text from lines (each already plain text, not escaped)."""
    return _esc_string("\n".join(lines), limit, backslash="\\" * 4)


def _esc_string(value: Any, limit: int, backslash: str) -> NoHtml:
    text = clean(value, limit, newlines=True)
    # Graphviz decodes entities in labels and tooltips, so escape & ourselves: a literal "&lt;" then shows as typed.
    text = text.replace("&", "&amp;")
    return nohtml(text.replace("\\", backslash).replace("\n", "\\n"))


# What Graphviz 2.43 writes into SVG for text it was given (``svg_*_of``): the layout cache draws a picture's
# skeleton once and puts the real text into that SVG itself (renderer/picture/skeleton.py), so these must give
# Graphviz's very bytes. Each returns None for text whose SVG form it cannot tell (a backslash sequence Graphviz
# substitutes, an entity it may read otherwise): the skeleton keeps such text, so Graphviz draws it.
_PLAIN_ENTITY = re.compile(r"&(?:amp|lt|gt|quot|apos|#[0-9]{1,7}|#x[0-9a-fA-F]{1,6});")
_GV_XML = {"&": "&amp;", "<": "&lt;", ">": "&gt;", "-": "&#45;", '"': "&quot;", "'": "&#39;", "\n": "&#10;",
           "\r": "&#13;", " ": "&#160;"}
_LINK_CHARS = re.compile(r"[A-Za-z0-9%/#._~:?=+,;@!$*()-]+")


_SECOND_SPACE = re.compile(r"(?<= ) ")
_CONTINUED = re.compile(r"\\\\\n")


def _graphviz_xml(text: str) -> str:
    """``text`` escaped as Graphviz's ``xml_string0(text, raw)`` escapes it (every ``&``; a space after a space
    as ``&#160;``; ``-`` as ``&#45;``; newlines as character references). ``&`` goes first and no escape holds
    another escaped character or a space, so one replacement after another is the single pass Graphviz makes."""
    for char, escaped in _GV_XML.items():
        if char != " " and char in text:
            text = text.replace(char, escaped)
    return _SECOND_SPACE.sub("&#160;", text) if "  " in text else text


def _decoded(text: str) -> str | None:
    """``text`` with its entities decoded as Graphviz's HTML lexer and tooltip reader decode them; None when it
    holds an ``&`` that is not one of the plain XML or numeric entities."""
    if "&" in text and text.count("&") != len(_PLAIN_ENTITY.findall(text)):
        return None
    decoded = html.unescape(text)
    return None if _NOT_XML.search(decoded) or _CONTROL.search(decoded) else decoded


def svg_text_of(label_text: str) -> str | None:
    """The SVG text node Graphviz writes for ``label_text``, a run of an HTML-like label's text as written in
    the DOT (``html_text``'s output): entities decoded, then escaped as Graphviz escapes. None for text with a
    backslash (Graphviz's object substitution reads it) or an entity other than the plain ones.

    >>> svg_text_of("a &amp;  b-1 &#x27;x&#x27;")
    'a &amp; &#160;b&#45;1 &#39;x&#39;'
    """
    decoded = _decoded(label_text)
    if decoded is None or "\\" in decoded or "\n" in decoded or "\r" in decoded:
        return None
    return _graphviz_xml(decoded)


def svg_tooltip_of(quoted: str) -> str | None:
    """The ``xlink:title`` value Graphviz writes for a DOT ``tooltip`` given as the quoted string ``quoted``
    (``tooltip``'s output): unquoted, entities decoded, ``\\\\`` to ``\\`` and ``\\n`` to a newline, then the
    object substitution (``\\\\`` to ``\\``), then escaped. None for any other backslash sequence (``\\N``: a name)
    or an empty tooltip (Graphviz writes none).
    """
    if len(quoted) < 3 or quoted[0] != '"' or quoted[-1] != '"':
        return None
    text = quoted[1:-1]
    if "\\\n" in text:  # a backslash before a newline: maybe two (``_CONTINUED``)
        text = _CONTINUED.sub("", text)
    text = text.replace('\\"', '"')
    decoded = _decoded(text)
    if decoded is None:
        return None
    once = _backslashes(decoded, newline=True)
    twice = None if once is None else _backslashes(once, newline=False)
    return None if not twice else _graphviz_xml(twice)


def _backslashes(text: str, newline: bool) -> str | None:
    """One Graphviz backslash pass: ``\\\\`` is ``\\`` (and ``\\n`` a newline when ``newline``); None for any other."""
    if "\\" not in text:
        return text
    if newline and "\\\\" not in text and text.count("\\") == text.count("\\n"):
        return text.replace("\\n", "\n")  # the usual tooltip: lines joined by \n, no other backslash
    parts = re.split(r"(\\.?)", text, flags=re.DOTALL)
    out = []
    for part in parts:
        if part == "\\\\":
            part = "\\"
        elif newline and part == "\\n":
            part = "\n"
        elif part.startswith("\\"):
            return None
        out.append(part)
    return "".join(out)


def svg_title_of(attribute: str) -> str | None:
    """The ``xlink:title`` Graphviz writes for an HTML-like label's ``TITLE`` (or ``TOOLTIP``) value as written
    in the DOT; None for one with a backslash or an entity other than the plain ones."""
    decoded = _decoded(attribute)
    return None if decoded is None or not decoded or "\\" in decoded else _graphviz_xml(decoded)


def svg_name_of(name: str) -> str:
    """A node's, cluster's or id's ``name`` as Graphviz writes it into SVG (its ``<title>``, comment and ``id``)."""
    return _graphviz_xml(name)


def svg_href_of(value: str) -> str | None:
    """The ``xlink:href`` Graphviz writes for a link ``href``'s output (quoted for a DOT attribute, bare for an
    HTML one): the same characters. None for a link with any character ``href`` would have percent-encoded."""
    bare = value[1:-1] if value.startswith('"') and value.endswith('"') and len(value) >= 2 else value
    return bare if _LINK_CHARS.fullmatch(bare) else None


def href(path: str) -> str:
    """A link target we compute (a page file and an element id) for Graphviz's ``href``: every character
    outside ``[A-Za-z0-9._~/#-]`` percent-encoded, so a file name the user chose cannot break out either.

    >>> href('m "1".svg.pages/page-002.svg#op-0-5')
    'm%20%221%22.svg.pages/page-002.svg#op-0-5'
    """
    from urllib.parse import quote

    return quote(_url_bytes(path), safe="/#-._~")


def _url_bytes(text: str) -> bytes:
    """``text`` as the bytes a link percent-encodes: a file name that is not UTF-8 (its bytes kept by Python as
    lone surrogates) as those bytes, so the link finds the file; any other lone surrogate as ``?``."""
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return text.encode("utf-8", "replace")


def html_label(markup: str) -> str:
    """Our own HTML-like label markup (built only from html_text pieces) in the form the graphviz package passes
    through unquoted."""
    return f"<{markup}>"


# What GitHub may turn live in Markdown text: markup characters, autolinks (``www.``, ``https://``, ``a@b.c``),
# mentions (``@user``, ``@org/team``), issue references (``#1``), math (``$x$``), and a dot between letters
# (a bare domain, linked by some renderers).
_LIVE_IN_GFM = re.compile(r"[\\|`*_\[\]#!~<>&@$:=]|www\.|[^\W\d_]\.[^\W\d_]", re.IGNORECASE)


_DOT_HTML, _DOT_ID, _DOT_ODD_BACKSLASHES = _dot.HTML_STRING.match, _dot.ID.match, _dot.FINAL_ODD_BACKSLASHES.search
_LONGEST_KEYWORD = max(map(len, _dot.KEYWORDS))


def dot_id(identifier: str) -> str:
    """``identifier`` as a DOT ID, by the ``graphviz`` package's own rule (``graphviz.quoting.quote``, whose
    patterns it uses): an HTML-like ``<…>`` string as it is unless it is ``NoHtml``, a name or number as it is,
    anything else quoted with its unescaped quotes escaped. The same text, without the per-call cost of the
    package's deprecation wrapper (a third of the DOT's emission on a 20,000-operator model)."""
    if _DOT_HTML(identifier) and not isinstance(identifier, NoHtml):
        return identifier
    if not _DOT_ID(identifier) or (len(identifier) <= _LONGEST_KEYWORD and identifier.lower() in _dot.KEYWORDS):
        if identifier.endswith("\\") and _DOT_ODD_BACKSLASHES(identifier):  # the pattern ends with a backslash
            _dot.quote(identifier)  # the package's own warning
        # its pattern matches only at a quote: a tooltip without one is not scanned position by position
        return f'"{_dot.ESCAPE_UNESCAPED_QUOTES(identifier)}"' if '"' in identifier else f'"{identifier}"'
    return identifier


def markdown_cell(value: Any, limit: int = 120) -> str:
    """Text for a Markdown table cell (or a line of prose), neutral in GFM: as it is when it is plain (words,
    numbers, units, arrows), else a code span, inside which nothing becomes a link, mention, reference, emphasis
    or math.

    >>> markdown_cell("+50 µs"), markdown_cell("+50 @team"), markdown_cell("a|b")
    ('+50 µs', '`+50 @team`', '`a\\\\|b`')
    """
    text = clean(value, limit)
    if _LIVE_IN_GFM.search(text) is None:
        return text
    return markdown_code(text, limit, cell=True)


_BACKTICKS = re.compile(r"`+")
# Characters a base URL given on the command line keeps in a Markdown link; everything else (spaces,
# ``( ) < > [ ] \\ ` "``, controls, non-ASCII) is percent-encoded so the destination can neither end early nor
# carry markup. File paths keep only ``/ - . _ ~``: a ``:`` would make ``javascript:x.svg`` a scheme, a ``#`` a
# fragment.
_URL_SAFE = ":/?#=&%@!$'*+,;-._~"
_PATH_SAFE = "/-._~"


def markdown_code(value: Any, limit: int = 80, cell: bool = False) -> str:
    """A code span showing ``value`` as written (one line, ``clean``ed, cut at ``limit``); ``cell``: for a
    table cell, where GFM splits on every pipe not preceded by a backslash, even inside a code span, and
    drops that backslash again. Empty text gives "".

    >>> markdown_code("a`b"), markdown_code("`x"), markdown_code("a|b", cell=True), markdown_code("<i>")
    ('``a`b``', '`` `x ``', '`a\\\\|b`', '`<i>`')
    """
    text = clean(value, limit)
    if not text:
        return ""
    if cell:
        text = text.replace("|", "\\|")
    fence = "`" * (max((len(run) for run in _BACKTICKS.findall(text)), default=0) + 1)
    # a code span drops one space at each end when both ends have one, and a backtick at an end would join
    # the fence: pad both ends then
    pad = " " if text[0] in "` " or text[-1] in "` " else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def markdown_link(label: Any, path: str, base: str | None = None, limit: int = 120) -> str:
    """A Markdown link to the file ``path`` (relative, ``/``-separated), after the URL ``base`` when given,
    with ``label`` shown as a code span. Both are percent-encoded outside small safe sets.

    >>> markdown_link("m (1).svg", "out/m (1).svg"), markdown_link("x", "javascript:x.svg", "https://h/a b/")
    ('[`m (1).svg`](out/m%20%281%29.svg)', '[`x`](https://h/a%20b/javascript%3Ax.svg)')
    """
    from urllib.parse import quote

    prefix = quote(_url_bytes(base), safe=_URL_SAFE).rstrip("/") + "/" if base else ""
    return f"[{markdown_code(label, limit)}]({prefix}{quote(_url_bytes(path), safe=_PATH_SAFE)})"
