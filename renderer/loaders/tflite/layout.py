"""Where the parts of a TFLite file's ``Model`` table lie, for writers that edit a copy of the file.

The IR keeps what a file means, not where its bytes are. An editor such as ``annograph embed`` needs the
second: the position of what each ``Model`` field refers to, of every ``Buffer`` and ``Metadata`` table, and
of the buffers' absolute ``offset`` fields (data kept after the FlatBuffer, models over 2 GiB). ``read`` takes
them from the ``tflite`` package's accessor (the loader's, for a loaded model: no second parse), checking
every position it hands out against the file size, so a hostile file costs a one-line LoaderError.

Slot numbers are the schema's (field ``i`` of a table is vtable slot ``i``); only the ``Model`` fields of
schema version 3 are known, and ``Layout.newer_fields`` says when a file uses later ones.
"""

from __future__ import annotations

import mmap
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from renderer.core.errors import LoaderError, first_line

if TYPE_CHECKING:
    import tflite

IDENTIFIER = b"TFL3"

# Model table fields, in schema order.
VERSION, OPERATOR_CODES, SUBGRAPHS, DESCRIPTION, BUFFERS, METADATA_BUFFER, METADATA, SIGNATURE_DEFS = range(8)
N_MODEL_FIELDS = 8
# Buffer table fields: data (vector of ubyte), offset (uint64), then size (uint64), which the loader does not read.
BUFFER_DATA, BUFFER_OFFSET = range(2)
# Metadata table fields: name (string), buffer (uint32).
META_NAME, META_BUFFER = range(2)


@dataclass(frozen=True)
class MetadataEntry:
    table: int  # position of the Metadata table
    name: bytes | None  # None when the entry has no name
    buffer: int  # the buffer index it names (0, "no data", when absent)


@dataclass(frozen=True)
class Layout:
    data: bytes | mmap.mmap  # the whole file
    version: int | None  # the Model's version field, None when absent
    targets: dict[int, int]  # Model slot → position of the vector, string or table the field refers to
    newer_fields: bool  # the Model table sets fields after schema version 3's
    buffers: tuple[int, ...]  # position of each Buffer table, in index order
    metadata: tuple[MetadataEntry, ...]
    external_offsets: tuple[tuple[int, int], ...]  # (where a Buffer's uint64 offset is, its value > 1)


def read(data: bytes | mmap.mmap, path: Path, fb: tflite.Model | None = None) -> Layout:
    """The layout of the TFLite file ``data``; ``fb`` is the loader's accessor over the same bytes, if any."""
    if len(data) < 8 or data[4:8] != IDENTIFIER:
        raise LoaderError(f"{path}: not a TFLite file (no TFL3 identifier)")
    try:
        return _Walk(data, path, fb).layout()
    except LoaderError:
        raise
    except Exception as e:  # the accessors report corruption as struct.error, IndexError…
        raise LoaderError(f"{path}: corrupt TFLite file ({type(e).__name__}: {first_line(e)})") from None


class _Walk:
    def __init__(self, data: bytes | mmap.mmap, path: Path, fb: tflite.Model | None) -> None:
        if fb is None:
            import tflite

            fb = tflite.Model.GetRootAsModel(data, 0)
        self.data, self.path, self.fb, self.size = data, path, fb, len(data)

    def error(self, what: str) -> LoaderError:
        return LoaderError(f"{self.path}: corrupt TFLite file ({what})")

    def unpack(self, fmt: str, pos: int) -> int:
        if pos < 0 or pos + struct.calcsize(fmt) > self.size:
            raise self.error(f"offset {pos} outside the file")
        return int(struct.unpack_from(fmt, self.data, pos)[0])

    def slots(self, table: int) -> list[int]:
        """Absolute position of each field of the table at ``table`` (0 when absent)."""
        vtable = table - self.unpack("<i", table)
        size = self.unpack("<H", vtable)
        if size < 4 or size % 2:
            raise self.error(f"bad vtable at {vtable}")
        offsets = [self.unpack("<H", vtable + 4 + 2 * i) for i in range((size - 4) // 2)]
        return [table + o if o else 0 for o in offsets]

    def deref(self, field: int) -> int:
        return field + self.unpack("<I", field)

    def count(self, n: int, what: str) -> int:
        if n < 0 or 4 * n > self.size:
            raise self.error(f"{what}: {n} entries cannot fit in a {self.size}-byte file")
        return n

    def table(self, accessor: Any) -> int:
        pos = int(accessor._tab.Pos)  # the generated API has no public position of a table
        if not 0 <= pos < self.size:
            raise self.error(f"table at {pos} outside the file")
        return pos

    def layout(self) -> Layout:
        fb = self.fb
        fields = self.slots(self.table(fb))
        newer = any(fields[N_MODEL_FIELDS:])
        fields = (fields + [0] * N_MODEL_FIELDS)[:N_MODEL_FIELDS]
        version = self.unpack("<I", fields[VERSION]) if fields[VERSION] else None
        targets = {slot: self.deref(at) for slot, at in enumerate(fields) if at and slot != VERSION}
        buffers = tuple(self.table(fb.Buffers(i)) for i in range(self.count(fb.BuffersLength(), "buffers")))
        metadata = []
        for i in range(self.count(fb.MetadataLength(), "metadata")):
            table = self.table(fb.Metadata(i))
            meta = self.slots(table) + [0, 0]
            name = self.string(meta[META_NAME]) if meta[META_NAME] else None
            buffer = self.unpack("<I", meta[META_BUFFER]) if meta[META_BUFFER] else 0
            metadata.append(MetadataEntry(table, name, buffer))
        external = []
        for table in buffers:
            at = (self.slots(table) + [0, 0, 0])[BUFFER_OFFSET]
            if at and (offset := self.unpack("<Q", at)) > 1:  # 1 is the schema's "no data" marker
                external.append((at, offset))
        return Layout(self.data, version, targets, newer, buffers, tuple(metadata), tuple(external))

    def string(self, field: int) -> bytes:
        start = self.deref(field)
        length = self.unpack("<I", start)
        if start + 4 + length > self.size:
            raise self.error(f"string at {start} runs past the end")
        return bytes(self.data[start + 4 : start + 4 + length])
