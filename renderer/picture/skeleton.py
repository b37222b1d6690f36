"""A picture's DOT with the text that does not decide its geometry stood in for, and put back after the layout.

The layout cache (``layout_cache``) keys a layout by the skeleton: the DOT as emitted with every fill, border and
text colour, every tooltip and link, and every digit of an HTML label's text stood in for. A re-render with new
numbers (a profile, an error heatmap) has the same skeleton, so its layout is found again. Stand-ins:

    fillcolor="#a1b2c3"     →  fillcolor=TOKEN         (DOT attributes: ``tooltip``, ``href``, ``URL``, ``*color``)
    BGCOLOR="#a1b2c3"       →  BGCOLOR="TOKEN"         (HTML attributes: ``*COLOR``, ``TITLE``, ``HREF``, ``TOOLTIP``)
    >macs: <B>51.4M</B>     →  >macs: <B><FONT COLOR="TOKEN">000000M</FONT></B>  (HTML text with digits)

Text of a label that is wholly a number, a value a box or the legend shows (``0.9864``, ``-3.2``, ``12.3k``,
``97.7 MiB``), is laid out as a fixed-width field: ``VALUE_WIDTH`` zeros (one a character when longer), its unit
as it is. A digit elsewhere (an operator's number, a shape, a name) is a zero. Digits are as wide as each other
in the fonts Graphviz draws with (tabular figures) and wider than a point or a sign, so the real text always fits
the room laid out for it, and a re-render whose values move (0.9864 → 12.35, 99.99 → 100) has the same skeleton;
a value with another unit (1234 → 12.3k) or ``n/a`` makes another one.
Everything else, names and structure included, is the skeleton's own text. A token is ``agv<k>q<i>z``, with
``k`` the smallest number whose prefix the source never holds, so no text of a model can be taken for one.
Graphviz writes the laid-out skeleton (``-Tdot``) with each token as it was given; ``restore`` puts the real
text back, and a token that does not come back exactly once refuses the skeleton (``Unskeletal``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_OUTSIDE = re.compile(r'\b(tooltip|href|URL|[a-z]*color)=("[^"\\]*(?:\\.[^"\\]*)*")|"[^"\\]*(?:\\.[^"\\]*)*"|=<',
                      re.DOTALL)
_INSIDE = re.compile(r'\b([A-Z]*COLOR|TITLE|HREF|TOOLTIP)="([^"<>]*)"|(?<=>)([^<>]*[0-9][^<>]*)(?=<)')
_ANGLE = re.compile(r"[<>]")
_HEX = re.compile(r'"#[0-9a-fA-F]{6}(?:[0-9a-fA-F]{2})?"')
_DIGIT_OR_ENTITY = re.compile(r"&#?\w+;|[0-9]")
_VALUE = re.compile(r"(\s*)(-?[0-9][0-9.,]*(?:e[+-][0-9]+)?)(\s*[A-Za-z%\u00b5]{0,3}\s*)")
VALUE_WIDTH = 6
"""Digits a value of a label is laid out with at least (module docstring)."""


class Unskeletal(Exception):
    """The source cannot be stood in for (an HTML label without its end), or a token did not come back."""


@dataclass(frozen=True, slots=True)
class Skeleton:
    """``text``: the DOT to lay out; ``originals[i]``: what token ``i`` (``prefix`` + i + ``z``) stands for."""

    text: str
    prefix: str
    originals: tuple[str, ...]

    def restore(self, positioned: str) -> str:
        """``positioned`` (Graphviz's ``-Tdot`` of ``text``) with every token's real text back."""
        if not self.originals:
            return positioned
        seen = bytearray(len(self.originals))
        pattern = re.compile(rf'<FONT COLOR="{self.prefix}([0-9]+)z">[^<]*</FONT>|{self.prefix}([0-9]+)z')

        def back(match: re.Match[str]) -> str:
            index = int(match.group(1) or match.group(2))
            if index >= len(seen) or seen[index]:
                raise Unskeletal(f"token {index} came back twice or unknown")
            seen[index] = 1
            return self.originals[index]

        restored = pattern.sub(back, positioned)
        if not all(seen):
            raise Unskeletal("a token did not come back")
        return restored


def skeleton(source: str) -> Skeleton:
    """``source`` with its non-geometric text stood in for (module docstring)."""
    k = 0
    while f"agv{k}q" in source:
        k += 1
    prefix = f"agv{k}q"
    originals: list[str] = []
    parts: list[str] = []

    def token(original: str) -> str:
        originals.append(original)
        return f"{prefix}{len(originals) - 1}z"

    at = 0
    for match in _OUTSIDE.finditer(source):
        if match.start() < at:  # inside an HTML label already stood in for
            continue
        parts.append(source[at:match.start()])
        name, value = match.group(1), match.group(2)
        if match.group(0) == "=<":
            end = _html_end(source, match.end() - 1)
            parts.append("=" + _html_skeleton(source[match.end() - 1:end], token))
            at = end
            continue
        if name is not None and (not name.endswith("color") or _HEX.fullmatch(value)):
            parts.append(f"{name}={token(value)}")
        else:
            parts.append(match.group(0))
        at = match.end()
    parts.append(source[at:])
    return Skeleton("".join(parts), prefix, tuple(originals))


def _zeroed(text: str) -> str:
    """``text`` as laid out: a value as its field of zeros and its unit, else each digit a zero."""
    value = _VALUE.fullmatch(text)
    if value is not None:
        return value.group(1) + "0" * max(VALUE_WIDTH, len(value.group(2))) + value.group(3)
    return _DIGIT_OR_ENTITY.sub(lambda m: m.group() if m.group()[0] == "&" else "0", text)


def _html_end(source: str, start: int) -> int:
    """The end of the HTML label whose ``<`` is at ``start``."""
    depth = 0
    for match in _ANGLE.finditer(source, start):
        depth += 1 if match.group() == "<" else -1
        if depth == 0:
            return match.end()
    raise Unskeletal("an HTML label without its end")


def _html_skeleton(label: str, token: object) -> str:
    def stand_in(match: re.Match[str]) -> str:
        if match.group(1) is not None:
            name, value = match.group(1), match.group(2)
            if name.endswith("COLOR") and not _HEX.fullmatch(f'"{value}"'):
                return match.group(0)
            return f'{name}="{token(value)}"'  # type: ignore[operator]
        text = match.group(3)
        return f'<FONT COLOR="{token(text)}">{_zeroed(text)}</FONT>'  # type: ignore[operator]

    return _INSIDE.sub(stand_in, label)


__all__ = ["Skeleton", "Unskeletal", "skeleton"]
