"""The files of a PT2 archive (``torch.export.save``, torch ≥ 2.6), read with the standard library: no torch,
no pickle.

The archive is a zip whose members all sit under one root folder (the saved file's stem, or ``archive``): the
marker ``ROOT/archive_format`` holding ``pt2``, the exported program ``ROOT/models/NAME.json`` (the serialized
``ExportedProgram``: graph, signature, tensor metadata; ``NAME`` is ``model`` unless several programs were saved),
and its tensors: ``ROOT/data/weights/NAME_weights_config.json`` and ``ROOT/data/constants/NAME_constants_config.json``
map each parameter, buffer and constant name to a member holding its raw bytes (its storage: ``tensor_meta`` gives
dtype, sizes, strides and storage offset). Members ``torch.save`` pickled (``use_pickle``), the sample inputs and
custom objects are Python pickles, which ``torch.export.load`` runs (``weights_only=False``): any code a hostile
file holds. They are never read here; a pickled tensor keeps its dtype and shape, not its values.
"""

from __future__ import annotations

import json
import mmap
import struct
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from renderer.core.errors import LoaderError, first_line
from renderer.core.escape import clean
from renderer.files.zip_members import check_inflation

if TYPE_CHECKING:
    import numpy as np

MARKER = "archive_format"
MARKER_VALUE = b"pt2"
MAX_MEMBERS = 1_000_000
MAX_JSON_BYTES = 1 << 30
"""A program's JSON past 1 GiB is refused (a 70B-parameter LLM's is tens of MB)."""
_LOCAL_HEADER = struct.Struct("<4s22sHH")  # signature, fixed fields up to the name and extra lengths
LEGACY_MEMBER = "serialized_exported_program.json"
"""What the zip of torch < 2.6's ``torch.export.save`` holds instead (with pickled weights)."""


@dataclass(frozen=True, slots=True)
class Stored:
    """One tensor of the state dict or constants: its member (None when absent) and its ``tensor_meta``."""

    member: str | None
    meta: dict[str, Any]
    pickled: bool


@dataclass(slots=True)
class Archive:
    """An opened PT2 archive: the program's JSON document and where its tensors lie."""

    path: Path
    root: str
    program: str
    document: dict[str, Any]
    tensors: dict[str, Stored]
    others: list[str]
    buffer: bytes | mmap.mmap
    members: dict[str, zipfile.ZipInfo]
    big_endian: bool = False

    def reader(self, stored: Stored, decode: Callable[[memoryview], np.ndarray]) -> Callable[[], np.ndarray]:
        """A reader of ``stored``'s values, through ``decode`` of the member's bytes."""
        def read() -> np.ndarray:
            if stored.pickled:
                raise ValueError("stored as a Python pickle, which annograph does not run")
            if stored.member is None or stored.member not in self.members:
                raise ValueError("its data file is missing from the archive")
            return decode(self.member_bytes(self.members[stored.member]))
        return read

    def member_bytes(self, info: zipfile.ZipInfo) -> memoryview:
        """The bytes of a member: a view of the mapped file when stored uncompressed (as torch writes them)."""
        if info.compress_type == zipfile.ZIP_STORED:
            start = info.header_offset
            head = bytes(self.buffer[start : start + _LOCAL_HEADER.size])
            if len(head) == _LOCAL_HEADER.size:
                signature, _, name_length, extra_length = _LOCAL_HEADER.unpack(head)
                begin = start + _LOCAL_HEADER.size + name_length + extra_length
                if signature == b"PK\x03\x04" and begin + info.file_size <= len(self.buffer):
                    return memoryview(self.buffer)[begin : begin + info.file_size]
            raise ValueError(f"member {clean(info.filename, 80)!r} lies outside the file")
        with zipfile.ZipFile(_file(self.buffer)) as archive:
            return memoryview(archive.read(info))


def root_of(names: list[str]) -> str:
    """The folder all members sit under (torch's own check reads the first member's)."""
    return names[0].split("/", 1)[0] if names else ""


def open_archive(path: Path, buffer: bytes | mmap.mmap) -> Archive:
    """The archive at ``path`` (mapped as ``buffer``), its program read; a LoaderError naming the file when it is
    no zip, no PT2 archive or holds no exported program."""
    try:
        with zipfile.ZipFile(_file(buffer)) as archive:
            infos = archive.infolist()
            if len(infos) > MAX_MEMBERS:
                raise LoaderError(f"{path}: a zip of {len(infos):,} files is no torch.export program")
            members = {info.filename: info for info in infos}
            root = root_of([info.filename for info in infos])
            _check_marker(path, archive, members, root)
            program, others = _program(path, members, root)
            document = _json(path, archive, members[f"{root}/models/{program}.json"])
            tensors = {**_config(path, archive, members, f"{root}/data/weights/{program}_weights_config.json",
                                 f"{root}/data/weights/"),
                       **_config(path, archive, members, f"{root}/data/constants/{program}_constants_config.json",
                                 f"{root}/data/constants/")}
            order = members.get(f"{root}/byteorder")
            big = order is not None and order.file_size < 16 and archive.read(order).strip() == b"big"
    except LoaderError:
        raise
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError, ValueError, NotImplementedError,
            RuntimeError, struct.error) as e:
        raise LoaderError(f"{path}: not a valid torch.export archive ({first_line(e)})") from None
    return Archive(path, root, program, document, tensors, others, buffer, members, big)


def _check_marker(path: Path, archive: zipfile.ZipFile, members: dict[str, zipfile.ZipInfo], root: str) -> None:
    marker = members.get(f"{root}/{MARKER}")
    if marker is None:
        if LEGACY_MEMBER in members:
            raise LoaderError(f"{path}: a torch.export program saved by torch < 2.6, whose weights are Python "
                              "pickles annograph does not run: save it again with torch ≥ 2.6")
        raise LoaderError(f"{path}: a zip, but no PT2 archive (no {MARKER} marker): not a torch.export program")
    if marker.file_size > 64 or archive.read(marker).strip() != MARKER_VALUE:
        raise LoaderError(f"{path}: its {MARKER} marker does not say pt2: not a torch.export program")


def _program(path: Path, members: dict[str, zipfile.ZipInfo], root: str) -> tuple[str, list[str]]:
    """The program to draw (``model``, else the first by name) and the other programs' names."""
    prefix, suffix = f"{root}/models/", ".json"
    names = sorted(n[len(prefix):-len(suffix)] for n in members
                   if n.startswith(prefix) and n.endswith(suffix) and "/" not in n[len(prefix):])
    if not names:
        aoti = any(n.startswith(f"{root}/data/aotinductor/") for n in members)
        kind = "an AOTInductor package (compiled code, no exported program)" if aoti else "no exported program"
        raise LoaderError(f"{path}: a PT2 archive holding {kind}: nothing to draw")
    chosen = "model" if "model" in names else names[0]
    return chosen, [n for n in names if n != chosen]


def _json(path: Path, archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> dict[str, Any]:
    if info.file_size > MAX_JSON_BYTES:
        raise LoaderError(f"{path}: {clean(info.filename, 120)!r} is {info.file_size:,} bytes, more than a "
                          f"program's JSON holds ({MAX_JSON_BYTES:,})")
    check_inflation(info, path, LoaderError, "member")
    try:
        document = json.loads(archive.read(info))
    except (ValueError, RecursionError) as e:
        raise LoaderError(f"{path}: {clean(info.filename, 120)!r} is not valid JSON ({first_line(e, 120)})") from None
    if not isinstance(document, dict):
        raise LoaderError(f"{path}: {clean(info.filename, 120)!r} holds no JSON object")
    return document


def _config(path: Path, archive: zipfile.ZipFile, members: dict[str, zipfile.ZipInfo], name: str,
            folder: str) -> dict[str, Stored]:
    """Tensor name → where its bytes are, from a weights or constants config (absent: none)."""
    info = members.get(name)
    if info is None:
        return {}
    config = _json(path, archive, info).get("config")
    if not isinstance(config, dict):
        raise LoaderError(f"{path}: {clean(name, 120)!r} has no config object")
    found = {}
    for key, entry in config.items():
        if not isinstance(entry, dict) or not isinstance(entry.get("tensor_meta"), dict):
            continue  # a custom object or opaque value: no tensor
        member = entry.get("path_name")
        found[str(key)] = Stored(folder + member if isinstance(member, str) else None, entry["tensor_meta"],
                                 bool(entry.get("use_pickle")))
    return found


def _file(buffer: bytes | mmap.mmap) -> Any:
    import io

    return io.BytesIO(buffer) if isinstance(buffer, bytes) else _Mapped(buffer)


class _Mapped:
    """A seekable file object over a mapped file, for ``zipfile`` (which wants ``seek``/``tell``/``read``)."""

    def __init__(self, buffer: mmap.mmap) -> None:
        self.buffer, self.position = buffer, 0

    def seekable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = 0) -> int:
        base = (0, self.position, len(self.buffer))[whence]
        self.position = max(0, base + offset)
        return self.position

    def tell(self) -> int:
        return self.position

    def read(self, size: int = -1) -> bytes:
        end = len(self.buffer) if size is None or size < 0 else min(len(self.buffer), self.position + size)
        data = bytes(self.buffer[self.position : end])
        self.position = end
        return data
