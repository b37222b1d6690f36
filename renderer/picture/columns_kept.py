"""What ``columns.lay_out`` decided for a page, kept beside its layouts (issue 30): a re-render goes straight to the
source it drew.

A page that comes out a strip is laid out, checked, cut into columns and laid out again (``columns``), sometimes a
third time with its count of columns corrected. What the source drawn in the end is made of is small: whether it
was emitted anew framed in parts (``Columns.parted``) or with its frames sliced (``Columns.sliced``, and where the
first layout put each node, which the emitter reads), the columns each item went into, their count, how they lie
(``stacked``, ``under``), the first layout's edges (``Sheet.finish`` ties each column's ends and starts by them),
and whether its layout was checked (its cache entry holds the ``-Tplain`` then). Kept here, under a key made of the
first emission's skeleton (``skeleton``: what decides every layout and every check), the Graphviz and fonts that
laid them out (``graphviz_run.layout_setting``), this code (``disk_cache.code_digest``: the checks are ours), the
emitter's own marks on the page and the caller's limits, a re-render with new numbers skips the first layout's
lookup, its check and cut, the layouts between, and emits the source drawn at once: the very bytes, since the same
emission and the same replay make them from the same decisions. An entry that is not such a record (cut short,
spoiled, another key's) is ignored and written again.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from renderer.files.disk_cache import FORMAT, code_digest, our_version
from renderer.picture import columns as cut
from renderer.picture import graphviz_run, skeleton
from renderer.picture.columns import Columns
from renderer.picture.layout_cache import LayoutCache

ENTRY = b"annograph-columns-1"
Render = Callable[[str, Callable[[bytes], None] | None], dict[str, bytes]]


@dataclass(frozen=True, slots=True)
class Made:
    """How a source that ``columns.lay_out`` laid out was made from the page's first emission (see the module)."""

    parted: bool
    sliced: list[float]
    centres: dict[str, float]
    column: dict[str, int]
    count: int
    stacked: bool
    under: bool
    first: bytes | list[tuple[str, str]]
    """The first layout then (``-Tplain``), or its edges (tail, head) as kept: only they are read."""
    turned: bool = False
    """Drawn top to bottom, not left to right (``Columns.turned``): emitted anew so first."""

    @classmethod
    def of(cls, columns: Columns) -> Made:
        """The state of ``columns`` when the source just emitted is laid out."""
        return cls(columns.parted, list(columns.sliced), dict(columns._centres) if columns.sliced else {},
                   dict(columns.column), columns.count, columns.stacked, columns.under, columns.first, columns.turned)

    def make(self, columns: Columns, source: str, emit: Callable[[Columns], str]) -> str:
        """The source this made, from ``source``, the page's first emission into ``columns``."""
        if self.turned:
            columns.turn()
            source = emit(columns)
        if self.parted or self.sliced:  # emitted anew, as ``columns.lay_out`` had it after the check that asked
            columns.parted, columns.sliced, columns._centres = self.parted, list(self.sliced), dict(self.centres)
            columns.script, columns.atoms, columns.column, columns._node_column = None, {}, {}, {}
            source = emit(columns)
        if not self.column:
            return source
        columns.stacked, columns.under, columns.edges = self.stacked, self.under, _edges(self.first)
        columns.assign(dict(self.column), self.count)
        return cut.replay(columns) or emit(columns)

    def encode(self, places: bool) -> bytes:
        return json.dumps({"parted": self.parted, "sliced": self.sliced, "centres": self.centres,
                           "column": self.column, "count": self.count, "stacked": self.stacked, "under": self.under,
                           "edges": _edges(self.first) if self.column else [], "places": places,
                           "turned": self.turned}).encode("utf-8")


def _edges(first: bytes | list[tuple[str, str]]) -> list[tuple[str, str]]:
    return first if isinstance(first, list) else cut._names(first)


def decode(data: bytes) -> tuple[Made, bool] | graphviz_run.TooBig | None:
    """The ``Made`` and whether its layout was checked, from what ``Made.encode`` wrote, or the refusal ``lay_out``
    kept (a layout over the caller's limits); None when ``data`` is not such a record."""
    try:
        kept = json.loads(data.decode("utf-8"))
        if _is(kept, dict).keys() == {"too_big", "strip"}:  # a long strip is drawn as pages only when they say more
            width, height = _is(kept["too_big"], list)
            refusal = cut.LongStrip if _is(kept["strip"], bool) else graphviz_run.TooBig
            return refusal(float(_is(width, (int, float))), float(_is(height, (int, float))))
        made = Made(_is(kept["parted"], bool), [float(_is(v, (int, float))) for v in _is(kept["sliced"], list)],
                    {_is(k, str): float(_is(v, (int, float))) for k, v in _is(kept["centres"], dict).items()},
                    {_is(k, str): _is(v, int) for k, v in _is(kept["column"], dict).items()},
                    _is(kept["count"], int), _is(kept["stacked"], bool), _is(kept["under"], bool),
                    [(_is(t, str), _is(h, str)) for t, h in _is(kept["edges"], list)], _is(kept["turned"], bool))
        return made, _is(kept["places"], bool)
    except (ValueError, KeyError, TypeError, AttributeError):  # UnicodeDecodeError and JSONDecodeError too
        return None


def _is(value: Any, kind: type | tuple[type, ...]) -> Any:
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise TypeError(f"not a {kind}")
    return value


def lay_out(source: str, columns: Columns, emit: Callable[[Columns], str], render: Render, cache: LayoutCache | None,
            limits: str, pages_over: float | None = None) -> tuple[str, dict[str, bytes]]:
    """``columns.lay_out``, its decision kept in ``cache`` and read back (the module). ``limits``: what else of
    the caller's decides it (the largest side a layout may have)."""
    key = None if cache is None else _key(source, columns, f"{limits}\n{pages_over}")
    if cache is None or key is None:
        return cut.lay_out(source, columns, emit, render, pages_over)
    kept = cache.note(key)
    found = decode(kept[1]) if kept is not None and len(kept) == 2 and kept[0] == ENTRY else None
    if isinstance(found, graphviz_run.TooBig):
        raise found
    if found is not None:
        drawn = found[0].make(columns, source, emit)
        return drawn, render(drawn, _accept if found[1] else None)
    seen: dict[str, tuple[Made, bool]] = {}

    def watched(text: str, check: Callable[[bytes], None] | None) -> dict[str, bytes]:
        seen[text] = (seen[text][0] if text in seen else Made.of(columns), check is not None)
        return render(text, check)

    try:
        drawn, laid = cut.lay_out(source, columns, emit, watched, pages_over)
    except graphviz_run.TooBig as e:  # the caller draws pages instead: so will a re-render
        note = {"too_big": [e.width, e.height], "strip": isinstance(e, cut.LongStrip)}
        cache.keep_note(key, ENTRY, json.dumps(note).encode())
        raise
    if drawn in seen:
        made, places = seen[drawn]
        cache.keep_note(key, ENTRY, made.encode(places))
    return drawn, laid


def _accept(_plain: bytes) -> None:
    """The check of a layout decided already: its entry is the one with the ``-Tplain``."""


def _key(source: str, columns: Columns, limits: str) -> str | None:
    try:
        text = skeleton.kept(source).text
    except skeleton.Unskeletal:
        return None
    marks = (columns.rankdir, columns.along_only, columns.partable, columns.wrappable, columns.spreadable,
             columns.sliceable)
    digest = hashlib.sha256(f"{FORMAT}\ncolumns\n{our_version()}\n{code_digest()}\n{graphviz_run.layout_setting()}\n"
                            f"{marks}\n{limits}\n".encode())
    digest.update(text.encode("utf-8"))
    return digest.hexdigest()


__all__ = ["ENTRY", "Made", "decode", "lay_out"]
