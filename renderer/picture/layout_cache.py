"""Layouts kept on disk between runs (issue 30): a re-render with new numbers reuses the layout of the first.

An entry is the laid-out skeleton of one picture or page (``skeleton``: the DOT with colours, tooltips, links and
the digits of its labels stood in for), as Graphviz wrote it (``-Tdot``, ``-Tplain`` when the caller checks
the layout's shape, and its drawing, ``-Tsvg``, into which the real text is put back). Its key is a SHA-256 of
everything that decides the geometry: the skeleton's text (the graph's structure, every label's size-relevant
text, the picture options written into the DOT), the Graphviz version (``dot -V``) and the fonts it finds
(``graphviz_run.layout_setting``: text is measured in them), annograph's version and ``FORMAT``. The folder,
its cap, and how entries are written and never trusted: ``files.disk_cache``.
"""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

from renderer.files.disk_cache import (
    DEFAULT_CAP,
    FORMAT,
    MAX_ENTRY,
    OFF,
    DiskCache,
    code_digest,
    default_folder,
    folder_of,
    our_version,
)
from renderer.picture import dot_names


class LayoutCache(DiskCache):
    """The layouts of one folder (``DiskCache`` entries of kind ``layout``), at most ``cap`` bytes of entries."""

    def __init__(self, folder: Path, cap: int = DEFAULT_CAP, secret: bytes | None = None) -> None:
        super().__init__(folder, cap, secret, "layout")
        self._names = DiskCache(folder, cap, secret, "layout")  # looked up apart: ``said`` counts layouts only

    def key(self, skeleton_text: str, places: bool, graphviz: str) -> str:
        """The entry name of a layout of ``skeleton_text`` (with its ``-Tplain`` when ``places``) by the Graphviz
        whose ``dot -V`` and fonts ``graphviz`` describes (``graphviz_run.layout_setting``)."""
        digest = hashlib.sha256(f"{FORMAT}\n{our_version()}\n{graphviz}\n{int(places)}\n".encode())
        digest.update(skeleton_text.encode("utf-8"))
        return digest.hexdigest()

    def named(self, skeleton_text: str) -> dot_names.Named:
        """``dot_names.named(skeleton_text)``, kept here as an entry of its own: a pure function of the text
        (keyed by it and by this code, ``code_digest``) that costs half as much as making the skeleton, and a
        re-render's pages have the first render's skeletons. Parts: the text, the prefix and the number of
        names, then the names in DOT and in SVG, each a line (a stood-in name is one of ``[A-Za-z0-9_.-]``)."""
        key = hashlib.sha256(f"{FORMAT}\nnames\n{our_version()}\n{code_digest()}\n".encode())
        key.update(skeleton_text.encode("utf-8"))
        name = key.hexdigest()
        found = _names_of(self._names.get(name))
        if found is not None:
            return found
        names = dot_names.named(skeleton_text)
        lines = [b"\n".join(names.dot), b"\n".join(names.svg)]
        if not any(b"\n" in n for n in names.dot + names.svg):
            self._names.put(name, names.text.encode("utf-8"), f"{names.prefix}\n{len(names.dot)}".encode(), *lines)
        return names

    def note(self, key: str) -> tuple[bytes, ...] | None:
        """An entry kept beside the layouts (``keep_note``: not counted as a layout by ``said``)."""
        return self._names.get(key)

    def keep_note(self, key: str, *parts: bytes) -> None:
        self._names.put(key, *parts)

    def said(self, before: tuple[int, int]) -> str:
        """What ``-v`` says of the lookups since ``counts`` gave ``before``."""
        asked, found = self.counts()
        return f"{found - before[1]} of {asked - before[0]} layouts from the cache"


def _names_of(parts: tuple[bytes, ...] | None) -> dot_names.Named | None:
    """The ``Named`` that ``LayoutCache.named`` kept as ``parts``; None when they are not such an entry."""
    if parts is None or len(parts) != 4:
        return None
    try:
        prefix, _, count = parts[1].decode("utf-8").partition("\n")
        dot, svg = (tuple(part.split(b"\n")) if int(count) else () for part in parts[2:])
        text = parts[0].decode("utf-8")
    except ValueError:  # UnicodeDecodeError too
        return None
    return dot_names.Named(text, prefix, dot, svg) if len(dot) == len(svg) == int(count) else None


def for_setting(setting: str | None) -> LayoutCache | None:
    """The cache ``RenderOptions.layout_cache`` names: None for the default folder, ``OFF`` for none."""
    folder = folder_of(setting)
    return None if folder is None else _cache_of(folder)


@functools.lru_cache(maxsize=8)
def _cache_of(folder: str) -> LayoutCache:
    return LayoutCache(Path(folder))


__all__ = ["DEFAULT_CAP", "MAX_ENTRY", "OFF", "LayoutCache", "default_folder", "for_setting"]
