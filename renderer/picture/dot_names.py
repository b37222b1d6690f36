"""A skeleton's names stood in for by numbered tokens, so that pages of one structure are one layout.

The pages of a model's repeated blocks (a transformer's layers, a vocoder's residual blocks) differ, once their
skeleton (``skeleton``) stands in for colours, tooltips and the digits of labels, only in names: each page's
operators, clusters and element ids carry their own numbers. Here each such name becomes ``<prefix><i>z``, ``i``
counting names in order of first appearance (``cluster<prefix><i>z`` for a cluster, which Graphviz knows by its
name's start); ``graphviz_run`` lays out that canonical text, once for every page that has it, and ``back`` puts
the names into its ``-Tdot``, ``-Tplain`` and SVG, as Graphviz writes them there.

A name is stood in for only where it does not decide the geometry: a node's name when its statement gives it a
``label`` (a node without one shows its name), a subgraph's name, and the values of ``id``, ``lhead`` and
``ltail``; a name of other characters than letters, digits, ``_``, ``.`` and ``-`` is left as it is. A source
with a label escape that draws a name (``\\N``, ``\\G``, ``\\E``, ``\\T``, ``\\H``) or a ``node [label=…]``
default keeps every name.
"""

from __future__ import annotations

import functools
import re
import threading
from dataclasses import dataclass

from renderer.core import escape

_QUOTED = r'"[^"\\]*+(?:\\.[^"\\]*+)*+"'
_HTML = r"<(?:<[^<>]*+>|[^<>]++)*+>"
"""A quoted string and an HTML-like string: each matches one way only (up to the first quote no backslash escapes,
up to the first ``>`` that closes no tag), so possessive runs, which the regex engine takes in one step rather
than a character at a time, give the same lexemes."""
_NAME = (r"[^\x00-\x40\x5b-\x5e\x60\x7b-\x7f\U00010000-\U0010ffff]"
         r"(?:[^\x00-\x2f\x3a-\x40\x5b-\x5e\x60\x7b-\x7f\U00010000-\U0010ffff]+|(?=[\U00010000-\U0010ffff])\w)*+")
"""A DOT name (a letter, ``_`` or any character of the BMP past ASCII, then those, digits and any word character),
written as classes of few ranges: one range up to U+FFFF takes ``re`` ~10 ms to compile (a table of the whole
BMP), paid by every render."""
_LEXEME = (
    r"//[^\n]*|/\*.*?\*/|^#[^\n]*"  # comments
    rf"|{_QUOTED}|{_HTML}"
    rf"|\[label=({_HTML})(?:{_QUOTED}|{_HTML}|[^\]\"<]+)*\]"  # an attribute list, one lexeme (``_ATTRIBUTE``
    rf"|\[(?:{_QUOTED}|{_HTML}|[^\]\"<]+)*\]"  # reads it); one that starts with an HTML label: where it ends
    rf"|->|--|{_NAME}|-?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)|\S")
_ID = rf"{_QUOTED}|{_NAME}|-?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)"
_ATTRIBUTE = rf"({_ID})\s*=\s*({_ID}|{_HTML})|{_QUOTED}|{_HTML}"
"""In an attribute list: a key and its value (either quoted or not), or a string that is neither."""
_SIMPLE = re.compile(r"[A-Za-z0-9_.\-]+")
_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
"""A cluster's name stood in for: a DOT ID unquoted, so that what follows ``cluster`` is one too."""
_DRAWS_NAME = re.compile(r"\\[NGETH]")
_KEYWORDS = frozenset({"node", "edge", "graph", "digraph", "subgraph", "strict"})
_NAMED_VALUES = frozenset({"id", "lhead", "ltail"})
_CLUSTER = "cluster"
NAMES_KEPT = 8192
"""Names whose DOT and SVG forms are kept (``_forms``): a page laid out again in columns has its first layout's."""


@functools.cache
def _lexers() -> tuple[re.Pattern[str], re.Pattern[str]]:
    """``_LEXEME`` and ``_ATTRIBUTE`` compiled, when a text is first read: a re-render finds its pages' names in
    the layout cache (``LayoutCache.named``) and reads none, and the two take 1.4 ms to compile."""
    return re.compile(_LEXEME, re.DOTALL | re.MULTILINE), re.compile(_ATTRIBUTE, re.DOTALL)


@dataclass(frozen=True, slots=True)
class Named:
    """``text``: the source with its names stood in for, token ``i`` being ``prefix`` + i + ``z``; ``dot[i]`` and
    ``svg[i]``: what it stands for, as Graphviz writes it into ``-Tdot`` and ``-Tplain``, and into SVG."""

    text: str
    prefix: str
    dot: tuple[bytes, ...] = ()
    svg: tuple[bytes, ...] = ()

    def back(self, output: bytes, svg: bool = False) -> bytes:
        """``output`` (Graphviz's ``-Tdot`` or ``-Tplain`` of ``text``; its SVG when ``svg``) with each name back:
        in DOT and plain as a DOT ID (``escape.dot_id``), in SVG as Graphviz escapes text (``-`` as ``&#45;``)."""
        if not self.dot:
            return output
        forms = self.svg if svg else self.dot
        parts = _token(self.prefix).split(output)
        parts[1::2] = [forms[int(number)] for number in parts[1::2]]
        return b"".join(parts)


@functools.lru_cache(maxsize=8)
def _token(prefix: str) -> re.Pattern[bytes]:
    return re.compile(rf"{prefix}([0-9]+)z".encode())  # a literal start: found by a fast search


def named(text: str) -> Named:
    """``text`` with its names stood in for (module docstring); the text itself when none can be.

    A text of the same shape as one named lately (``_Twin``: the same text but for the stood-in names, as the
    pages of a model's repeated blocks are) is named by reading its names off between the other's pieces."""
    shape = _shape(text)
    twin = _TWINS.get(shape)
    if twin is not None:
        found = twin.named(text)
        if found is not None:
            return found
    spots = None if _DRAWS_NAME.search(text) else _spots(text)
    if not spots:
        return Named(text, "")
    prefix = _free_prefix(text)
    tokens: dict[str, str] = {}  # each name's token, in order of first appearance
    numbers: dict[str, int] = {}
    parts, start, number = [], 0, []
    for begin, end, name in spots:
        token = tokens.get(name)
        if token is None:
            numbers[name] = len(tokens)
            token = tokens[name] = f"{_CLUSTER if name.startswith(_CLUSTER) else ''}{prefix}{len(tokens)}z"
        parts += [text[start:begin], token]
        number.append(numbers[name])
        start = end
    forms = [_forms(name) for name in tokens]
    made = Named("".join(parts) + text[start:], prefix, tuple(f[0] for f in forms), tuple(f[1] for f in forms))
    twin = _Twin.of(text, spots, number, made, spots.loose)
    if twin is not None:
        with _TWINS_LOCK:
            if len(_TWINS) >= TWINS_KEPT:
                _TWINS.pop(next(iter(_TWINS)), None)
            _TWINS[shape] = twin
    return made


def _free_prefix(text: str) -> str:
    """The first token prefix ``agnKq`` that ``text`` does not hold."""
    k = 0
    while f"agn{k}q" in text:
        k += 1
    return f"agn{k}q"


def _shape(text: str) -> tuple[int, int, int]:
    """What texts of one shape (``_Twin``) share, cheap to count: the length but for digits, lines, lists."""
    return len(text) - sum(map(text.count, "0123456789")), text.count("\n"), text.count("[")


TWINS_KEPT = 32
"""Texts kept as ``_Twin``s, one a shape."""
_PLAIN_AT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_QUOTED_AT = re.compile(r'"[A-Za-z0-9_.\-]+"')
_NOT_NAMES = _KEYWORDS | {"digraph", "graph", "strict"}


@dataclass(frozen=True, slots=True)
class _Twin:
    """A text ``named`` read, cut at the names it stood in for: ``pieces`` between them, each name's
    ``number`` (its token), whether it was ``quoted`` (``"name"``, else a plain DOT ID) and whether it is a
    cluster's; the names of nodes it left as they are (``loose``, given no label). A text made of the same
    pieces with other names, each of the same form and none of them loose, lexes as this one does (a plain
    name, a quoted one and the pieces around them read alike whatever the name), so ``named`` finds the same
    spots in it: its ``Named`` is this one's with the other names."""

    pieces: tuple[str, ...]
    number: tuple[int, ...]
    quoted: tuple[bool, ...]
    cluster: tuple[bool, ...]
    loose: frozenset[str]
    made: Named

    @classmethod
    def of(cls, text: str, spots: list[tuple[int, int, str]], number: list[int], made: Named,
           loose: frozenset[str]) -> _Twin | None:
        pieces, quoted, start = [], [], 0
        for begin, end, _ in spots:
            word = text[begin:end]
            quote = _QUOTED_AT.fullmatch(word) is not None
            if not quote and _PLAIN_AT.fullmatch(word) is None:
                return None
            pieces.append(text[start:begin])
            quoted.append(quote)
            start = end
        pieces.append(text[start:])
        return cls(tuple(pieces), tuple(number), tuple(quoted),
                   tuple(name.startswith(_CLUSTER) for _, _, name in spots), loose, made)

    def named(self, text: str) -> Named | None:
        """``named(text)`` when ``text`` is these pieces with other names (the class doc), else None."""
        pieces = self.pieces
        if not text.startswith(pieces[0]):
            return None
        names: list[str | None] = [None] * len(self.made.dot)
        at = len(pieces[0])
        for gap, (token, quote, cluster) in enumerate(zip(self.number, self.quoted, self.cluster)):
            match = (_QUOTED_AT if quote else _PLAIN_AT).match(text, at)
            if match is None:
                return None
            at = match.end()
            name = match.group(0)[1:-1] if quote else match.group(0)
            if names[token] is None:
                if name.startswith(_CLUSTER) != cluster or not _stands(name) or name.lower() in _NOT_NAMES \
                        or name in self.loose:
                    return None
                names[token] = name
            elif names[token] != name:
                return None
            if not text.startswith(pieces[gap + 1], at):
                return None
            at += len(pieces[gap + 1])
        if at != len(text) or len(set(names)) != len(names):
            return None
        if _free_prefix(text) != self.made.prefix:
            return None
        forms = [_forms(name) for name in names]  # type: ignore[arg-type]
        return Named(self.made.text, self.made.prefix, tuple(f[0] for f in forms), tuple(f[1] for f in forms))


_TWINS: dict[tuple[int, int, int], _Twin] = {}
_TWINS_LOCK = threading.Lock()


@functools.lru_cache(maxsize=NAMES_KEPT)
def _forms(name: str) -> tuple[bytes, bytes]:
    """A name stood in for as Graphviz writes it into ``-Tdot`` and into SVG (a cluster's without "cluster",
    which its token keeps)."""
    name = name[len(_CLUSTER):] if name.startswith(_CLUSTER) else name
    return escape.dot_id(name).encode(), escape.svg_name_of(name).encode()


class _Spots(list[tuple[int, int, str]]):
    """Spots (``_spots``), with the names of the nodes given no label (``loose``: left as they are)."""

    loose: frozenset[str] = frozenset()


def _spots(text: str) -> _Spots | None:
    """Where the names to stand in for are in ``text`` (start, end, the name), in order; None when none may be
    (a ``node [label=…]`` default). A node's name is stood in for everywhere or nowhere."""
    labelled: set[str] = set()
    nodes: list[tuple[int, int, str]] = []
    spots: list[tuple[int, int, str]] = []
    words = [m for m in _lexers()[0].finditer(text) if not m.group(0).startswith(("//", "/*", "#"))]
    previous, before = "", ""
    for at, match in enumerate(words):
        word = match.group(0)
        if word[0] == "[":
            label = _attributes(word, match.start(), spots, match.end(1) - match.start() if match[1] else 0)
            if label and previous.lower() == "node":
                return None
            if label and _is_id(previous) and before not in ("->", "--", ":", "="):
                labelled.add(_unquoted(previous))
        elif not _is_id(word) or before == ":" or word.lower() in _KEYWORDS and word[0] != '"':
            pass
        elif previous == "=":
            if _unquoted(words[at - 2].group(0)) in _NAMED_VALUES:
                spots.append((match.start(), match.end(), _unquoted(word)))
        elif previous == "subgraph":
            spots.append((match.start(), match.end(), _unquoted(word)))
        elif previous == ":" or at + 1 < len(words) and words[at + 1].group(0) == "=":
            pass
        elif previous.lower() not in ("digraph", "graph", "strict"):
            nodes.append((match.start(), match.end(), _unquoted(word)))
        previous, before = word, previous
    spots.extend(spot for spot in nodes if spot[2] in labelled)
    found = _Spots(sorted(spot for spot in spots if _stands(spot[2])))
    found.loose = frozenset(name for _, _, name in nodes if name not in labelled)
    return found


def _stands(name: str) -> bool:
    """Whether a name where names are stood in for is one (``_PLAIN`` for a cluster's, else ``_SIMPLE``)."""
    return (_PLAIN if name.startswith(_CLUSTER) else _SIMPLE).fullmatch(name) is not None


def _attributes(attributes: str, offset: int, spots: list[tuple[int, int, str]], label_end: int = 0) -> bool:
    """Add the ``_NAMED_VALUES`` of an attribute list (``[…]`` at ``offset``) to ``spots``; whether it sets
    ``label``. ``label_end``: where the HTML label the list starts with (``[label=<…>``) ends, 0 for none: the
    list is read from there, its first pair being that label (read once, by ``_LEXEME``)."""
    label = label_end > 0
    for match in _lexers()[1].finditer(attributes, label_end):
        if match.group(1) is None:
            continue
        key = _unquoted(match.group(1))
        if key == "label":
            label = True
        elif key in _NAMED_VALUES and match.group(2)[0] != "<":
            spots.append((offset + match.start(2), offset + match.end(2), _unquoted(match.group(2))))
    return label


def _unquoted(word: str) -> str:
    return word[1:-1] if len(word) >= 2 and word[0] == '"' and word[-1] == '"' else word


def _is_id(word: str) -> bool:
    """Whether ``word`` is a DOT ID: a name, a number or a quoted string (not an HTML-like one)."""
    return bool(word) and (word[0] in '"_' or word[0].isalnum() or ord(word[0]) >= 0x80
                           or (word[0] in ".-" and word[1:2].isdigit()))
