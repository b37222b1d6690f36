"""What annograph keeps on disk between runs (issue 30): layouts (``picture.layout_cache``) and the results a
model's load and metrics take long to make (``recall``/``keep``: onnxruntime's shape runs, OpenVINO's reshapes,
the MACs formulas), so that a re-render with new numbers does none of them again.

The folder: ``--layout-cache DIR``, else ``ANNOGRAPH_CACHE_DIR``, else the user cache folder (``platformdirs``:
``~/.cache/annograph/layouts`` on Linux); ``--no-layout-cache`` keeps none. Results are kept by renders only
(``using``). At most
``DEFAULT_CAP`` bytes, every kind of entry together: each write trims the least recently used entries (a hit
refreshes its entry's time).

Entries are never trusted: one is read only when it is a regular file of at most ``MAX_ENTRY`` bytes whose header
names this key and whose HMAC-SHA256, under a random key kept outside the cache folder (``KEY_FILE`` in the user
config folder, or the file ``ANNOGRAPH_CACHE_KEY`` names), matches; anything else (truncated, garbage, another
key's entry renamed, a copy from another machine) is a miss, made anew and written over. A result is plain JSON,
or a loaded model's snapshot (``loaders.snapshot``), unpickled only after its HMAC holds and then with only the
IR's classes and numpy's arrays allowed. Writes go to a temporary file in the folder, then ``os.replace``: two
processes sharing a folder each read whole entries only. The cache never fails a run: a folder that cannot be made
or written is used for nothing.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import hashlib
import hmac
import json
import os
import re
import stat
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

FORMAT = 2
DEFAULT_CAP = 256 * 2**20
"""Bytes of entries a cache folder holds at most (256 MiB)."""
MAX_ENTRY = 64 * 2**20
"""An entry bigger than this (a hostile or foreign file) is not read."""
KEY_FILE = "layout-cache.key"
OFF = ""
"""``RenderOptions.layout_cache`` for no cache (``--no-layout-cache``)."""
_MAGIC = b"annograph-layout\n"
_NAME = re.compile(r"[0-9a-f]{64}\.(?:layout|results)")
_TEMPORARY = re.compile(r"\.[0-9a-f]{64}\.[0-9a-f]{16}\.part")
STALE_SECONDS = 3600
"""A temporary file this old is a writer that died: trimming removes it."""


class DiskCache:
    """The entries of one kind (``suffix``) in one folder, which every kind shares, at most ``cap`` bytes."""

    def __init__(self, folder: Path, cap: int = DEFAULT_CAP, secret: bytes | None = None,
                 suffix: str = "layout") -> None:
        self.folder, self.cap, self.suffix = folder, cap, suffix
        self._secret = secret
        self._counts = [0, 0]  # entries asked for, found (``counts``)
        self._lock = threading.Lock()

    def get(self, key: str) -> tuple[bytes, ...] | None:
        """The parts ``put`` kept under ``key``, or None when absent or not to be trusted."""
        secret = self._key()
        if secret is None:
            return None
        path = self.folder / f"{key}.{self.suffix}"
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
        """Entries looked up here so far in this process, and found."""
        with self._lock:
            return self._counts[0], self._counts[1]

    def put(self, key: str, *parts: bytes) -> None:
        """Store an entry's parts (no error when the folder cannot take it), then trim the folder to ``cap``."""
        secret = self._key()
        body = b"".join(parts)
        if secret is None or not parts or len(body) + 256 > MAX_ENTRY:
            return
        head = " ".join([key] + [str(len(part)) for part in parts]).encode()
        tag = hmac.new(secret, head + b"\n" + body, hashlib.sha256).hexdigest().encode()
        import secrets  # (only a write needs it: a re-render from the cache writes nothing)

        temporary = self.folder / f".{key}.{secrets.token_hex(8)}.part"
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            with open(temporary, "xb") as out:
                out.write(_MAGIC + head + b" " + tag + b"\n" + body)
            os.replace(temporary, self.folder / f"{key}.{self.suffix}")
        except OSError:
            with contextlib.suppress(OSError):
                temporary.unlink()
            return
        self.trim()

    def trim(self) -> None:
        """Remove the least recently used entries (of every kind) until the folder holds at most ``cap`` bytes of
        them, and temporary files older than ``STALE_SECONDS``. Files not named as entries are never touched."""
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
    import secrets

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


def folder_of(setting: str | None) -> str | None:
    """The folder ``RenderOptions.layout_cache`` names: the default one for None, none for ``OFF``."""
    if setting == OFF:
        return None
    return str(default_folder() if setting is None else Path(setting))


# --- model results: plain JSON values kept by what they are of ---------------------------------------------------

# a context variable, not a global: a thread (or task) entering ``using`` never changes what another one reads
_SETTING: contextvars.ContextVar[str | None] = contextvars.ContextVar("annograph_results_cache", default=OFF)


@contextlib.contextmanager
def using(setting: str | None) -> Iterator[None]:
    """Within it, results are kept in the folder ``setting`` names (``RenderOptions.layout_cache``: None for the
    default one, ``OFF`` for none); outside any, none are: a render keeps them (the command, ``compose``, the
    API's ``load``), a command that only reads a model (``info``, ``metrics``, ``compare``) runs everything."""
    token = _SETTING.set(setting)
    try:
        yield
    finally:
        _SETTING.reset(token)


def setting() -> str | None:
    """The folder setting ``using`` gave, ``OFF`` outside any."""
    return _SETTING.get()


@functools.lru_cache(maxsize=8)
def _results_of(folder: str) -> DiskCache:
    return DiskCache(Path(folder), suffix="results")


def results() -> DiskCache | None:
    """Where results are kept (``using``), or None."""
    folder = folder_of(_SETTING.get())
    return None if folder is None else _results_of(folder)


def recall(kind: str, files: Sequence[Path], fields: dict[str, Any]) -> Any | None:
    """The result of ``kind`` kept for the bytes of ``files`` (the model and whatever else it reads) and
    ``fields`` (every option that changes it), or None: absent, untrusted, no cache, or a file unreadable."""
    entry = _entry(kind, files, fields)
    found = entry[0].get(entry[1]) if entry is not None else None
    if not found:
        return None
    try:
        return json.loads(found[0])
    except ValueError:
        return None


def keep(kind: str, files: Sequence[Path], fields: dict[str, Any], value: Any) -> None:
    """Keep ``value`` (plain JSON) as the result of ``kind`` for ``files`` and ``fields`` (``recall``)."""
    entry = _entry(kind, files, fields)
    if entry is not None:
        entry[0].put(entry[1], json.dumps(value, sort_keys=True, separators=(",", ":")).encode())


def recall_bytes(kind: str, files: Sequence[Path], fields: dict[str, Any]) -> bytes | None:
    """As ``recall``, for a result kept as bytes (``keep_bytes``): a loaded model's snapshot."""
    entry = _entry(kind, files, fields)
    found = entry[0].get(entry[1]) if entry is not None else None
    return found[0] if found and len(found) == 1 else None


def keep_bytes(kind: str, files: Sequence[Path], fields: dict[str, Any], value: bytes) -> None:
    """Keep ``value`` as the result of ``kind`` for ``files`` and ``fields`` (``recall_bytes``)."""
    entry = _entry(kind, files, fields)
    if entry is not None:
        entry[0].put(entry[1], value)


def _entry(kind: str, files: Sequence[Path], fields: dict[str, Any]) -> tuple[DiskCache, str] | None:
    """Where results are kept and the key of this one, None without a cache (the files are then not read: a
    model's digest is a pass over all its bytes) or when a file cannot be read."""
    store = results()
    key = None if store is None else _result_key(kind, files, fields)
    return None if store is None or key is None else (store, key)


def _result_key(kind: str, files: Sequence[Path], fields: dict[str, Any]) -> str | None:
    try:
        digests = [file_digest(path) for path in files]
    except OSError:
        return None
    digest = hashlib.sha256(f"{FORMAT}\nresults\n{our_version()}\n{code_digest()}\n{kind}\n".encode())
    digest.update(json.dumps([digests, fields], sort_keys=True, default=str).encode())
    return digest.hexdigest()


KEPT_DIGEST_BYTES = 1 << 20
"""A file of at least this many bytes has its SHA-256 kept in the results cache by the file's identity
(``file_digest``): reading it back costs less than hashing the file again (the 64 MB int8 TTS: 0.08 s)."""
SETTLED_SECONDS = 2
"""A digest is kept only for a file unchanged this long: a change made later gives it another ``st_ctime``."""
_HEX = re.compile(rb"[0-9a-f]{64}")


def file_digest(path: Path) -> str:
    """SHA-256 of the file's bytes, once per process for a file whose identity (device, inode, size, change
    times) is unchanged; a file of ``KEPT_DIGEST_BYTES`` or more has it kept in the results cache by that
    identity (the kernel sets ``st_ctime`` to the time of any change of the file, which no user can set back)."""
    info = os.stat(path)
    return _digest(str(Path(path).resolve()), info.st_size, info.st_mtime_ns, info.st_ino, info.st_ctime_ns,
                   info.st_dev)


@functools.lru_cache(maxsize=64)
def _digest(path: str, size: int, mtime: int, inode: int, ctime: int, device: int) -> str:
    store = results() if size >= KEPT_DIGEST_BYTES else None
    key = hashlib.sha256(json.dumps([FORMAT, "file digest", path, size, mtime, inode, ctime, device]).encode())
    found = store.get(key.hexdigest()) if store is not None else None
    if found is not None and len(found) == 1 and _HEX.fullmatch(found[0]):
        return found[0].decode()
    with open(path, "rb") as stream:
        digest = hashlib.file_digest(stream, "sha256").hexdigest()
    if store is not None and time.time_ns() - max(mtime, ctime) > SETTLED_SECONDS * 10**9:
        store.put(key.hexdigest(), digest.encode())
    return digest


@functools.lru_cache(maxsize=1)
def code_digest() -> str:
    """SHA-256 of the package's own code and data: a results entry is what this code made of its inputs, so an
    edited checkout (the version string unchanged) makes entries of its own instead of reading stale ones."""
    package = str(Path(__file__).resolve().parent.parent)
    found = []
    for folder, folders, files in os.walk(package):  # (a third of the CPU of ``rglob``, paid by every render)
        within = tuple(folder[len(package) + 1:].split(os.sep)) if folder != package else ()
        folders[:] = [name for name in folders if name != "__pycache__"]
        found += [(*within, name) for name in files if os.path.splitext(name)[1] in (".py", ".json")]
    digest = hashlib.sha256()
    for parts in sorted(found):  # in path order, part by part
        content = _whole(os.path.join(package, *parts))
        digest.update(f"{'/'.join(parts)}\n{len(content)}\n".encode())
        digest.update(content)
    return digest.hexdigest()


def _whole(path: str) -> bytes:
    """The bytes of the file ``path``, read without a buffered stream: the package's 200 files in half the CPU of
    ``open``'s."""
    descriptor = os.open(path, os.O_RDONLY)
    try:
        chunks = []
        while chunk := os.read(descriptor, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(descriptor)


def our_version() -> str:
    """annograph's version (every key holds it: a new release makes its own entries)."""
    from renderer.version import __version__

    return __version__


__all__ = ["DEFAULT_CAP", "MAX_ENTRY", "OFF", "DiskCache", "code_digest", "default_folder", "file_digest",
           "folder_of", "keep", "keep_bytes", "our_version", "recall", "recall_bytes", "results", "using"]
