"""Layouts kept on disk between runs (issue 30): a re-render with new numbers reuses the layout of the first.

An entry is the laid-out skeleton of one picture or page (``skeleton``: the DOT with colours, tooltips, links and
the digits of its labels stood in for), as Graphviz wrote it (``-Tdot``, ``-Tplain`` when the caller checks
the layout's shape, and its drawing, ``-Tsvg``, into which the real text is put back). Its key is a SHA-256 of
everything that decides the geometry: the skeleton's text (the graph's structure, every label's size-relevant
text, the picture options written into the DOT), the Graphviz version (``dot -V``), annograph's version and
``FORMAT``.

The folder: ``--layout-cache DIR``, else ``ANNOGRAPH_CACHE_DIR``, else the user cache folder
(``platformdirs``: ``~/.cache/annograph/layouts`` on Linux); ``--no-layout-cache`` keeps none. At most
``DEFAULT_CAP`` bytes: each write trims the least recently used entries (a hit refreshes its entry's time).

Entries are never trusted: one is read only when it is a regular file of at most ``MAX_ENTRY`` bytes whose header
names this key and whose HMAC-SHA256, under a random key kept outside the cache folder (``KEY_FILE`` in the user
config folder, or the file ``ANNOGRAPH_CACHE_KEY`` names), matches; anything else (truncated, garbage, another
key's entry renamed, a copy from another machine) is a miss, laid out anew and written over. Writes go to a
temporary file in the folder, then ``os.replace``: two processes sharing a folder each read whole entries only.
The cache never fails a render: a folder that cannot be made or written is used for nothing.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import hmac
import os
import re
import secrets
import stat
import threading
import time
from pathlib import Path

FORMAT = 2
DEFAULT_CAP = 256 * 2**20
"""Bytes of entries a cache folder holds at most (256 MiB)."""
MAX_ENTRY = 64 * 2**20
"""An entry bigger than this (a hostile or foreign file) is not read."""
KEY_FILE = "layout-cache.key"
OFF = ""
"""``RenderOptions.layout_cache`` for no cache (``--no-layout-cache``)."""
_MAGIC = b"annograph-layout\n"
_NAME = re.compile(r"[0-9a-f]{64}\.layout")
_TEMPORARY = re.compile(r"\.[0-9a-f]{64}\.[0-9a-f]{16}\.part")
STALE_SECONDS = 3600
"""A temporary file this old is a writer that died: trimming removes it."""


class LayoutCache:
    """The entries of one folder, at most ``cap`` bytes."""

    def __init__(self, folder: Path, cap: int = DEFAULT_CAP, secret: bytes | None = None) -> None:
        self.folder, self.cap = folder, cap
        self._secret = secret
        self._counts = [0, 0]  # layouts asked for, found (``said``)
        self._lock = threading.Lock()

    def key(self, skeleton_text: str, places: bool, graphviz: str) -> str:
        """The entry name of a layout of ``skeleton_text`` (with its ``-Tplain`` when ``places``) by the Graphviz
        whose ``dot -V`` says ``graphviz``."""
        digest = hashlib.sha256(f"{FORMAT}\n{_our_version()}\n{graphviz}\n{int(places)}\n".encode())
        digest.update(skeleton_text.encode("utf-8"))
        return digest.hexdigest()

    def get(self, key: str) -> tuple[bytes, ...] | None:
        """The parts ``put`` kept under ``key`` (the positioned graph, its places, its drawing), or None when
        absent or not to be trusted."""
        secret = self._key()
        if secret is None:
            return None
        path = self.folder / f"{key}.layout"
        data = _read_bounded(path)
        parts = None if data is None else _parse(data, key, secret)
        if parts is not None:
            with contextlib.suppress(OSError):
                os.utime(path)  # the least recently used go first
        with self._lock:
            self._counts[0] += 1
            self._counts[1] += parts is not None
        return parts

    def counts(self) -> tuple[int, int]:
        """Layouts looked up here so far in this process, and found."""
        with self._lock:
            return self._counts[0], self._counts[1]

    def said(self, before: tuple[int, int]) -> str:
        """What ``-v`` says of the lookups since ``counts`` gave ``before``."""
        asked, found = self.counts()
        return f"{found - before[1]} of {asked - before[0]} layouts from the cache"

    def put(self, key: str, *parts: bytes) -> None:
        """Store a layout's parts (no error when the folder cannot take it), then trim the folder to ``cap``."""
        secret = self._key()
        body = b"".join(parts)
        if secret is None or not parts or len(body) + 256 > MAX_ENTRY:
            return
        head = " ".join([key] + [str(len(part)) for part in parts]).encode()
        tag = hmac.new(secret, head + b"\n" + body, hashlib.sha256).hexdigest().encode()
        temporary = self.folder / f".{key}.{secrets.token_hex(8)}.part"
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            with open(temporary, "xb") as out:
                out.write(_MAGIC + head + b" " + tag + b"\n" + body)
            os.replace(temporary, self.folder / f"{key}.layout")
        except OSError:
            with contextlib.suppress(OSError):
                temporary.unlink()
            return
        self.trim()

    def trim(self) -> None:
        """Remove the least recently used entries until the folder holds at most ``cap`` bytes of them, and
        temporary files older than ``STALE_SECONDS``. Files not named as entries are never touched."""
        entries = []
        now = time.time()
        try:
            with os.scandir(self.folder) as found:
                for item in found:
                    with contextlib.suppress(OSError):
                        info = item.stat(follow_symlinks=False)
                        if _NAME.fullmatch(item.name):
                            entries.append((info.st_mtime, item.name, info.st_size))
                        elif _TEMPORARY.fullmatch(item.name) and now - info.st_mtime > STALE_SECONDS:
                            os.unlink(item.path)
        except OSError:
            return
        total = sum(size for _, _, size in entries)
        for _, name, size in sorted(entries):
            if total <= self.cap:
                break
            with contextlib.suppress(OSError):
                os.unlink(self.folder / name)
            total -= size

    def _key(self) -> bytes | None:
        if self._secret is None:
            self._secret = _secret()
        return self._secret or None


def _parse(data: bytes, key: str, secret: bytes) -> tuple[bytes, ...] | None:
    """An entry's parts, when its header names ``key`` and its HMAC holds."""
    if not data.startswith(_MAGIC):
        return None
    end = data.find(b"\n", len(_MAGIC), len(_MAGIC) + 256)
    if end < 0:
        return None
    fields = data[len(_MAGIC):end].split(b" ")
    if not 3 <= len(fields) <= 8 or fields[0] != key.encode() or not all(f.isdigit() for f in fields[1:-1]):
        return None
    body = data[end + 1:]
    sizes = [int(f) for f in fields[1:-1]]
    if sum(sizes) != len(body):
        return None
    tag = hmac.new(secret, b" ".join(fields[:-1]) + b"\n" + body, hashlib.sha256).hexdigest().encode()
    if not hmac.compare_digest(tag, fields[-1]):
        return None
    parts, at = [], 0
    for size in sizes:
        parts.append(body[at:at + size])
        at += size
    return tuple(parts)


def _read_bounded(path: Path) -> bytes | None:
    """The file's bytes when it is a regular file (no symbolic link, FIFO or device) of at most ``MAX_ENTRY``."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        info = os.fstat(descriptor)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_ENTRY:
            return None
        with os.fdopen(descriptor, "rb", closefd=False) as stream:
            data = stream.read(MAX_ENTRY + 1)
        return data if len(data) <= MAX_ENTRY else None
    except OSError:
        return None
    finally:
        os.close(descriptor)


def _secret() -> bytes:
    """The HMAC key of this user's entries (made on first use; empty when it cannot be read or made)."""
    named = os.environ.get("ANNOGRAPH_CACHE_KEY")
    if named:
        path = Path(named)
    else:
        import platformdirs

        path = Path(platformdirs.user_config_dir("annograph")) / KEY_FILE
    found = _read_bounded(path)
    if found is not None and len(found) >= 32:
        return found[:64]
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_name(f".{path.name}.{secrets.token_hex(8)}")
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "wb") as out:
            out.write(secrets.token_bytes(32))
        with contextlib.suppress(FileExistsError):
            os.link(temporary, path)  # never over a key another process made meanwhile
        temporary.unlink()
    except OSError:
        return b""
    found = _read_bounded(path)
    return found[:64] if found is not None and len(found) >= 32 else b""


def default_folder() -> Path:
    """``ANNOGRAPH_CACHE_DIR``, else the user cache folder's ``layouts``."""
    named = os.environ.get("ANNOGRAPH_CACHE_DIR")
    if named:
        return Path(named)
    import platformdirs

    return Path(platformdirs.user_cache_dir("annograph")) / "layouts"


def for_setting(setting: str | None) -> LayoutCache | None:
    """The cache ``RenderOptions.layout_cache`` names: None for the default folder, ``OFF`` for none."""
    if setting == OFF:
        return None
    return _cache_of(str(default_folder() if setting is None else Path(setting)))


@functools.lru_cache(maxsize=8)
def _cache_of(folder: str) -> LayoutCache:
    return LayoutCache(Path(folder))


def _our_version() -> str:
    from renderer.version import __version__

    return __version__


__all__ = ["DEFAULT_CAP", "MAX_ENTRY", "OFF", "LayoutCache", "default_folder", "for_setting"]
