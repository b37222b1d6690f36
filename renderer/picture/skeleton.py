"""A picture's DOT with the text that does not decide its geometry stood in for, and put back after the layout.

The layout cache (``layout_cache``) keys a layout by the skeleton: the DOT as emitted with every fill, border and
text colour, every tooltip and link, and every digit of an HTML label's text stood in for. A re-render with new
numbers (a profile, an error heatmap) has the same skeleton, so its layout is found again. Stand-ins:

    fillcolor="#A1B2C3"     →  fillcolor="#000005"    (DOT ``*color``, HTML ``*COLOR``: a colour token, below)
    tooltip="…", href="…"   →  tooltip=agv0q7z        (DOT ``tooltip``, ``href``, ``URL``; HTML ``TITLE``,
                                                       ``TOOLTIP``, ``HREF``)
    >macs: <B>51.4M</B>     →  >macs: <B><FONT COLOR="#000009">000000M</FONT></B>  (HTML text with digits)

Text of a label that is wholly a number, a value a box or the legend shows (``0.9864``, ``-3.2``, ``12.3k``,
``97.7 MiB``), is laid out as a fixed-width field: ``VALUE_WIDTH`` zeros (one a character when longer), its unit
as it is. A digit elsewhere (an operator's number, a shape, a name) is a zero. Digits are as wide as each other
in the fonts Graphviz draws with (tabular figures) and wider than a point or a sign, so the real text always fits
the room laid out for it, and a re-render whose values move (0.9864 → 12.35, 99.99 → 100) has the same skeleton;
a value with another unit (1234 → 12.3k) or ``n/a`` makes another one.
Everything else, names and structure included, is the skeleton's own text.

Graphviz draws the skeleton once (``dot -Tsvg -Tdot``); both are kept. ``restore`` puts the real text back into
the laid-out DOT (PDF and PNG are drawn from it), ``fill_svg`` into the drawn SVG, in the form Graphviz itself
writes (``escape.svg_*_of``), so the SVG of a cached layout is made exactly as a fresh one is, with no Graphviz
run. Text whose SVG form cannot be told (a backslash, an unusual entity), a colour not of six hex digits, and a
label's text drawn in a colour its label does not name (``FONT COLOR``) are not stood in for: they stay in the
skeleton and so in its key.
A string token is ``agv<k>q<i>z``, with ``k`` the smallest number whose prefix the source never holds; a colour
token is a ``#rrggbb`` the skeleton names nowhere else (Graphviz writes six-digit colours into SVG as they are,
lower-cased, and named colours by name). A token that does not come back exactly once into the laid-out DOT
refuses the skeleton (``Unskeletal``).
"""

from __future__ import annotations

import functools
import itertools
import re
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import NamedTuple

from renderer.core import escape

_TAG_SPLIT = re.compile(r"(<[^<>]*>)")
"""An HTML label cut into its runs of text (even places) and its whole tags (odd places): inside a label every
``<`` opens a tag closed by the next ``>``; the first and last pieces hold the label's own ``<`` and ``>``."""
_TAG_STOOD_IN = re.compile(r'<FONT\b[^<>]*>|<[^<>]*\b(?:[A-Z]*COLOR|TITLE|HREF|TOOLTIP)="[^<>]*>')
"""A tag the skeleton reads: a ``FONT`` (the ink of the text inside), or one naming a colour, a title or a link."""
_FONT_COLOR = re.compile(r'\bCOLOR="([^"]*)"')
_HTML_LABEL = r"<(?:[^<>]++|<[^<>]*+>)*+>"
"""An HTML label: its text and whole tags, up to the first ``>`` that closes no tag (possessive: no backtracking)."""
_OUTSIDE = re.compile(r'\b(tooltip|href|URL|[a-z]*color)=("[^"\\]*(?:\\.[^"\\]*)*")|"[^"\\]*(?:\\.[^"\\]*)*"'
                      rf"|=({_HTML_LABEL})|=<", re.DOTALL)
"""What the skeleton reads outside HTML labels: an attribute it may stand in for, a quoted string (read past), an
HTML label (read whole), or the start of one without its end."""
_OUTSIDE_LINE = re.compile(_OUTSIDE.pattern + '|"', re.DOTALL)
"""``_OUTSIDE`` on one line, and a quote that opens no string closed on the line (``_line_parts``)."""
_HTML_ATTR = re.compile(r'\b([A-Z]*COLOR|TITLE|HREF|TOOLTIP)="([^"<>]*)"')
_HEX6 = re.compile(r"#[0-9a-fA-F]{6}")
_ANY_HEX = re.compile(r"#[0-9a-fA-F]{6}")
_DIGIT_OR_ENTITY = re.compile(r"&#?\w+;|[0-9]")
_VALUE = re.compile(r"(\s*)(-?[0-9][0-9.,]*(?:e[+-][0-9]+)?)(\s*[A-Za-z%\u00b5]{0,3}\s*)")
_DIGIT = re.compile(r"[0-9]")
_TEXT_FILL = re.compile(r'(<text [^>]*?fill=")(#[0-9a-f]{6})("[^>]*>)([^<]*)(</text>)')
_QUOTED_HEX = re.compile(r'"#([0-9a-f]{6})"')
"""A quoted colour (its ``#`` outside the group: the search then starts from the literal ``"#``, 2× faster)."""
_COLOUR_SLOT = "\x00"
_STRING_SLOT = "\x01"
"""A string token's place in a line's skeleton (``_line_parts``); a source holding one is read whole."""
_FONTCOLOR_AT = r"\s*(?:(?:node|graph)\s*\[[^\n]*)?\bfontcolor="
"""A default ``fontcolor`` (of the graph, or of its nodes) named at the start of a line."""
_FONTCOLOR_FIRST = re.compile(_FONTCOLOR_AT)
_FONTCOLOR_LINE = re.compile("\n" + _FONTCOLOR_AT)
"""Searched for after a newline: 8× faster than a search for ``^`` in MULTILINE mode, which tries every place."""
_NODE_HEAD = re.compile(r'\s*(?!(?:node|edge|graph|subgraph)\b)(?:"[^"\n]*"|[\w.]+)\s*\[[^\n]*$')
VALUE_WIDTH = 6
"""Digits a value of a label is laid out with at least (module docstring)."""
LABELS_KEPT = 2048
"""HTML labels, tooltips and links whose stand-ins are kept (``_label_parts``, ``_outside_svg``): a page laid out
again in columns replays the lines of its first emission, so its second source holds the first one's labels; a
page is some hundred of them."""
LINES_KEPT = 8192
"""Lines whose skeletons are kept (``_line_parts``): a page laid out again in columns replays its first
emission's lines; a page is about a hundred and the next pages' emission runs ahead of its layout."""


def _first(span: tuple[int, int, str | None]) -> int:
    return span[0]


@functools.lru_cache(maxsize=8)
def _token(prefix: str) -> re.Pattern[str]:
    return re.compile(rf"{prefix}([0-9]+)z")


class Unskeletal(Exception):
    """The source cannot be stood in for (an HTML label without its end), or a token did not come back."""


class Token(NamedTuple):
    """What a token stands for: ``original`` as in the source; ``svg`` as Graphviz writes it into SVG (for a
    label's text, its text node); ``ink``: for a label's text, its colour as Graphviz writes it (lower-case hex,
    or ``""`` for the default black, which Graphviz writes no ``fill`` for), else None."""

    original: str
    svg: str
    ink: str | None = None


@dataclass(frozen=True, slots=True)
class Skeleton:
    """``text``: the DOT to lay out; string token ``i`` is ``prefix`` + i + ``z``; ``colours[c]``: the index of the
    token colour ``c`` stands for (a colour or a label's text)."""

    text: str
    prefix: str
    tokens: tuple[Token, ...]
    colours: dict[str, int]

    def restore(self, positioned: str) -> str:
        """``positioned`` (Graphviz's ``-Tdot`` of ``text``) with every token's real text back."""
        if not self.tokens:
            return positioned
        seen = bytearray(len(self.tokens))
        pattern = re.compile(rf'<FONT COLOR="(#[0-9a-f]{{6}})">([^<]*)</FONT>|"(#[0-9a-f]{{6}})"'
                             rf'|{self.prefix}([0-9]+)z')

        def back(match: re.Match[str]) -> str:
            last = match.lastindex  # 2: a FONT around text, 3: a quoted colour, 4: a string token
            index = int(match[4]) if last == 4 else self.colours.get(match[1] if last == 2 else match[3], -1)
            if index < 0:
                return match[0]
            if index >= len(seen) or seen[index]:
                raise Unskeletal(f"token {index} came back twice or unknown")
            seen[index] = 1
            token = self.tokens[index]
            if last == 2:  # a label's text, or a colour of a FONT around text
                if token.ink is not None:
                    return token.original
                return f'<FONT COLOR="{token.original}">{match[2]}</FONT>'
            return token.original if last == 4 else f'"{token.original}"'

        restored = pattern.sub(back, positioned)
        if not all(seen):
            raise Unskeletal("a token did not come back")
        return restored

    def fill_svg(self, drawn: str) -> str:
        """``drawn`` (Graphviz's ``-Tsvg`` of ``text``) with every token's real text back, as Graphviz writes it.

        Three searches, each from a literal start (``<text ``, ``"#``, the prefix), put together in the order of
        the text, as one search of the three ways would find them (it tries them at every ``<``, ``"`` and ``a``
        of the SVG: 20 % slower): a text's span is whole (a colour or token inside it stays as it is), and no
        span of the other two overlaps another (a token holds no quote, a colour no ``g``)."""
        if not self.tokens:
            return drawn
        spans = [*self._texts(drawn), *self._colours(drawn)]
        spans += [(m.start(), m.end(), self.tokens[int(m[1])].svg) for m in _token(self.prefix).finditer(drawn)]
        spans.sort(key=_first)
        pieces, at = [], 0
        for start, end, put in spans:
            if start < at:  # inside a text's span
                continue
            pieces += [drawn[at:start], drawn[start:end] if put is None else put]
            at = end
        pieces.append(drawn[at:])
        return "".join(pieces)

    def _texts(self, drawn: str) -> Iterator[tuple[int, int, str | None]]:
        """Each ``<text>`` with a fill: its span, and it with its token's colour or text back (None: as it is)."""
        for match in _TEXT_FILL.finditer(drawn):
            index = self.colours.get(match[2], -1)
            if index < 0:
                yield match.start(), match.end(), None
                continue
            token = self.tokens[index]
            start, _, rest, text, end = match.groups()
            if token.ink is None:
                put = f"{start}{token.svg}{rest}{text}{end}"
            elif not token.ink:  # the default black: no fill at all
                put = f"{start[:-7]}{rest[1:]}{token.svg}{end}"
            else:
                put = f"{start}{token.ink}{rest}{token.svg}{end}"
            yield match.start(), match.end(), put

    def _colours(self, drawn: str) -> Iterator[tuple[int, int, str]]:
        """Each quoted colour token: its span and its colour."""
        for match in _QUOTED_HEX.finditer(drawn):
            index = self.colours.get(f"#{match[1]}", -1)
            if index >= 0:
                yield match.start(), match.end(), f'"{self.tokens[index].svg}"'


class _Builder:
    """The tokens of one skeleton as they are made; colour tokens are slots (``_COLOUR_SLOT``, in the text in the
    order they are made) until every other text is known."""

    def __init__(self, source: str | None) -> None:
        """``source`` None: a line's tokens (``_line_parts``), a string's stand-in written as ``_STRING_SLOT``."""
        k = 0
        while source is not None and f"agv{k}q" in source:
            k += 1
        self.prefix = f"agv{k}q" if source is not None else None
        self.tokens: list[Token] = []
        self.slots: list[int] = []
        """The token of each colour slot, in the order of the slots in the text."""

    def string(self, original: str, svg: str | None) -> str:
        return original if svg is None else self.add(Token(original, svg), False)

    def colour(self, original: str, ink: str | None = None, svg: str = "") -> str:
        return self.add(Token(original, svg or original.lower(), ink), True)

    def add(self, token: Token, colour: bool) -> str:
        """The next token, ``token``: a colour's slot, or a string's stand-in."""
        self.tokens.append(token)
        number = len(self.tokens) - 1
        if colour:
            self.slots.append(number)
            return _COLOUR_SLOT
        return _STRING_SLOT if self.prefix is None else f"{self.prefix}{number}z"

    def line(self, parts: _LineParts) -> str:
        """A line's skeleton (``_line_parts``) with this builder's next tokens."""
        text, tokens, colours, strings = parts
        base = len(self.tokens)
        self.tokens += tokens
        if len(colours) == len(tokens):
            self.slots += range(base, base + len(tokens))
        else:
            self.slots += [base + i for i in colours]
        if not strings:
            return text
        pieces = text.split(_STRING_SLOT)
        joined: list[str] = [""] * (2 * len(strings) + 1)
        joined[0::2], joined[1::2] = pieces, [f"{self.prefix}{base + i}z" for i in strings]
        return "".join(joined)

    def finish(self, text: str) -> Skeleton:
        """``text`` with each colour slot given a ``#rrggbb`` that ``text`` names nowhere else: the slots in
        order take #000001, #000002, … passing over those it names."""
        taken = {int(found[1:], 16) for found in _ANY_HEX.findall(text)}
        parts = text.split(_COLOUR_SLOT)
        slots = len(parts) - 1
        if slots != len(self.slots):
            raise Unskeletal("a colour slot lost")
        if any(0 < number <= slots for number in taken):
            numbers = itertools.islice((n for n in itertools.count(1) if n not in taken), slots)
            values = [f"#{number:06x}" for number in numbers]
        else:
            values = _first_colours(slots)
        colours = dict(zip(values, self.slots))
        joined: list[str] = [""] * (2 * slots + 1)
        joined[0::2], joined[1::2] = parts, values
        return Skeleton("".join(joined), self.prefix, tuple(self.tokens), colours)


_COLOURS_MADE = ["#000000"]
"""``_COLOURS_MADE[n]`` is ``#`` and ``n`` in six hex digits (``_first_colours``)."""
_COLOURS_LOCK = threading.Lock()


def _first_colours(count: int) -> list[str]:
    """``#000001`` to the ``count``-th, kept as made: formatting them anew for every page was a third of a
    skeleton's ``finish`` (a page of a 20,000-operator model has some hundred colour tokens)."""
    if len(_COLOURS_MADE) <= count:
        with _COLOURS_LOCK:  # pages are read in threads: one grows the list at a time
            _COLOURS_MADE.extend(f"#{number:06x}" for number in range(len(_COLOURS_MADE), count + 1))
    return _COLOURS_MADE[1:count + 1]


def skeleton(source: str) -> Skeleton:
    """``source`` with its non-geometric text stood in for (module docstring)."""
    if _COLOUR_SLOT in source:
        raise Unskeletal("a NUL in the source")
    black = not (_FONTCOLOR_FIRST.match(source) or _FONTCOLOR_LINE.search(source))
    if _STRING_SLOT not in source:
        build = _Builder(source)
        lines = []
        for line in source.split("\n"):
            body = line.lstrip("\t")
            parts = _line_parts(body, black)
            if parts is None:
                break
            lines.append(line[:len(line) - len(body)] + build.line(parts) if parts[1] else line)
        else:
            return build.finish("\n".join(lines))
    build = _Builder(source)
    return build.finish(_OUTSIDE.sub(_stand_in(source, black, build), source))


@functools.lru_cache(maxsize=8)
def kept(source: str) -> Skeleton:
    """``skeleton(source)``, the last few kept: a page's first emission is read once for its decision's key
    (``columns_kept``) and once to be laid out."""
    return skeleton(source)


def _stand_in(source: str, black: bool, build: _Builder) -> Callable[[re.Match[str]], str]:
    """The replacement of each ``_OUTSIDE`` match in ``source`` (``black``: no default ``fontcolor``)."""

    def stand_in(match: re.Match[str]) -> str:
        if match.lastindex == 3:  # an HTML label
            ink = "" if black and _plain_node(source, match.start(), match.end()) else None
            return "=" + _label(match[3], build, ink)
        if match[0] == "=<":
            raise Unskeletal("an HTML label without its end")
        return _outside(match[0], match[1], match[2], build)

    return stand_in


_LineParts = tuple[str, tuple[Token, ...], tuple[int, ...], tuple[int, ...]]
"""A line's skeleton, colour tokens as ``_COLOUR_SLOT`` and string tokens as ``_STRING_SLOT``; its tokens; the
positions among them of the colours and of the strings."""


@functools.lru_cache(maxsize=LINES_KEPT)
def _line_parts(line: str, black: bool) -> _LineParts | None:
    """``line`` (no newline, no leading tab) read as ``skeleton`` reads it within its source; None when it may
    not be read alone: a quoted string or an HTML label not closed on it (which may be closed on a later line).
    No match of ``_OUTSIDE`` starts with a newline or a tab (nor ``\\b`` tells a tab from a start), so a source
    whose every line is closed reads as its lines each read alone; a page laid out again in columns replays its
    first emission's lines (indented anew), whose parts are found here."""
    build = _Builder(None)
    stand_in = _stand_in(line, black, build)

    def whole(match: re.Match[str]) -> str:
        if match[0] == '"':
            raise Unskeletal("a string not closed on its line")
        return stand_in(match)

    try:
        text = _OUTSIDE_LINE.sub(whole, line)
    except Unskeletal:
        return None
    colours = set(build.slots)
    return (text, tuple(build.tokens), tuple(build.slots),
            tuple(i for i in range(len(build.tokens)) if i not in colours))


def _outside(whole: str, name: str | None, value: str, build: _Builder) -> str:
    """A DOT attribute outside HTML labels, stood in for when it is a colour, a tooltip or a link."""
    if name is None:
        return whole
    if name.endswith("color"):
        return f'{name}="{build.colour(value[1:-1])}"' if _HEX6.fullmatch(value[1:-1]) else whole
    return f"{name}={build.string(value, _outside_svg(name, value))}"


@functools.lru_cache(maxsize=LABELS_KEPT)
def _outside_svg(name: str, value: str) -> str | None:
    """A tooltip's or a link's SVG form (kept: a page's columns hold its first emission's)."""
    return escape.svg_tooltip_of(value) if name == "tooltip" else escape.svg_href_of(value)


def _zeroed(text: str) -> str:
    """``text`` as laid out: a value as its field of zeros and its unit, else each digit a zero."""
    value = _VALUE.fullmatch(text)
    if value is not None:
        return value.group(1) + "0" * max(VALUE_WIDTH, len(value.group(2))) + value.group(3)
    if "&" not in text:
        return _DIGIT.sub("0", text)
    return _DIGIT_OR_ENTITY.sub(lambda m: m.group() if m.group()[0] == "&" else "0", text)


def _plain_node(source: str, start: int, end: int) -> bool:
    """Whether the HTML label between ``start`` and ``end`` is a node's whose statement names no ``fontcolor``
    (so its text is black where no ``FONT COLOR`` says otherwise, given no default one: ``_FONTCOLOR_AT``)."""
    head = source[source.rfind("\n", 0, start) + 1:start]
    tail = source[end:source.find("\n", end) % (len(source) + 1)]
    return (_NODE_HEAD.match(head) is not None and "fontcolor" not in head and "fontcolor" not in tail)


class _Recorder:
    """The calls one label's stand-ins make on a ``_Builder``, in order, each written as a NUL (never in a
    source) into the label's skeleton."""

    def __init__(self) -> None:
        self.calls: list[tuple[Token, bool]] = []

    def string(self, original: str, svg: str | None) -> str:
        return original if svg is None else self.add(Token(original, svg), False)

    def colour(self, original: str, ink: str | None = None, svg: str = "") -> str:
        return self.add(Token(original, svg or original.lower(), ink), True)

    def add(self, token: Token, colour: bool) -> str:
        self.calls.append((token, colour))
        return _COLOUR_SLOT


def _label(label: str, build: _Builder, ink: str | None) -> str:
    """``_html_skeleton`` of ``label``, the parts of a label seen lately put together again with ``build``'s
    next tokens: the same text and tokens as reading it anew."""
    return _replayed(_label_parts(label, ink), build)


_Parts = tuple[tuple[str, ...], tuple[tuple[Token, bool], ...]]


def _replayed(parts: _Parts, build: _Builder) -> str:
    """A label cut at its tokens (``_label_parts``), put together again with ``build``'s next tokens."""
    pieces, calls = parts
    if not calls:
        return pieces[0]
    joined = [pieces[0]]
    for (token, colour), piece in zip(calls, pieces[1:]):
        joined += [build.add(token, colour), piece]
    return "".join(joined)


@functools.lru_cache(maxsize=LABELS_KEPT)
def _label_parts(label: str, ink: str | None) -> _Parts:
    """``label``'s skeleton cut at its tokens, and the tokens (``_Recorder``)."""
    record = _Recorder()
    return tuple(_html_skeleton(label, record, ink).split(_COLOUR_SLOT)), tuple(record.calls)


_Made = tuple[str, tuple[tuple[Token, bool], ...]]


@functools.lru_cache(maxsize=LABELS_KEPT)
def _tag_read(tag: str) -> tuple[str, tuple[tuple[Token, bool], ...], int, str | None]:
    """A tag of a label as ``_html_skeleton`` reads it: with its colours, title and link stood in for
    (``_html_attribute``) on a ``_Recorder``, and the calls made; whether it closes a ``FONT`` (-1), opens one (1)
    or neither (0); and the ``COLOR`` an opened ``FONT`` names (None: none). A page's labels repeat a few hundred
    tags (a table's cells, a font's colour) thousands of times."""
    if tag == "</FONT>":
        return tag, (), -1, None
    if not _TAG_STOOD_IN.fullmatch(tag):
        return tag, (), 0, None
    font = tag.startswith("<FONT")
    colour = _FONT_COLOR.search(tag) if font else None
    record = _Recorder()
    text = _HTML_ATTR.sub(lambda match: _html_attribute(match, record), tag) if "=" in tag else tag
    return text, tuple(record.calls), int(font), colour.group(1) if colour else None


@functools.lru_cache(maxsize=LABELS_KEPT)
def _text_made(text: str, ink: str | None) -> _Made:
    """``_html_text`` of a text run on a ``_Recorder``, and the calls made (a shape, an index or a value recurs)."""
    record = _Recorder()
    return _html_text(text, ink, record), tuple(record.calls)


def _html_skeleton(label: str, record: _Recorder, ink: str | None) -> str:
    """An HTML label with its colours, titles, links and texts with digits stood in for; a text only where its
    colour is known: a ``FONT COLOR`` of the label, or ``ink`` (the default black, ``""``) outside any. Read as its
    pieces (``_TAG_SPLIT``): a run of text between two tags that holds a digit, and each tag (``_tag_read``)."""
    inks: list[str | None] = [ink]
    pieces = _TAG_SPLIT.split(label)
    for k in range(1, len(pieces) - 1):
        piece = pieces[k]
        if k % 2:  # a tag
            text, made, font, colour = _tag_read(piece)
            if font < 0:
                inks.pop() if len(inks) > 1 else None
                continue
            if font:
                inks.append(inks[-1] if colour is None else colour)
        elif _DIGIT.search(piece):
            text, made = _text_made(piece, inks[-1])
        else:
            continue
        if made:
            record.calls.extend(made)
        pieces[k] = text
    return "".join(pieces)


def _html_attribute(match: re.Match[str], build: _Builder | _Recorder) -> str:
    name, value = match.group(1), match.group(2)
    if name.endswith("COLOR"):
        return f'{name}="{build.colour(value)}"' if _HEX6.fullmatch(value) else match.group(0)
    svg = escape.svg_href_of(value) if name == "HREF" else escape.svg_title_of(value)
    return f'{name}="{build.string(value, svg)}"'


def _html_text(text: str, ink: str | None, build: _Builder | _Recorder) -> str:
    """A run of text with a digit between two tags (``_html_skeleton``) in ``ink``, stood in for when it can be."""
    if ink is None or (ink and not _HEX6.fullmatch(ink)):
        return text
    svg = escape.svg_text_of(text)
    if svg is None:
        return text
    return f'<FONT COLOR="{build.colour(text, ink=ink.lower(), svg=svg)}">{_zeroed(text)}</FONT>'


__all__ = ["Skeleton", "Token", "Unskeletal", "skeleton"]
