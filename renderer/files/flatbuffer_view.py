"""Bounded reads of a FlatBuffer's tables, for formats read without generated code (ExecuTorch's ``.pte``, ETDump).

A table's fields are addressed by their slot, the field's position in the schema (a union takes two slots: its
type, then its value). Every read checks its position against the buffer and raises ``Corrupt`` with what was
wrong; the caller turns that into its own one-line error naming the file. Vectors are counted against a budget
(``Buffer.budget`` elements for the whole parse), since tables and vectors can be shared: a file can point a
million instructions at one million-element vector without holding either a million times.
"""

from __future__ import annotations

import mmap
import struct
from collections.abc import Iterator

Data = bytes | bytearray | memoryview | mmap.mmap

_SIZES = {"b": 1, "B": 1, "?": 1, "h": 2, "H": 2, "i": 4, "I": 4, "q": 8, "Q": 8, "f": 4, "d": 8}


class Corrupt(Exception):
    """A position or count the buffer cannot hold; the message says which."""


class Buffer:
    """A FlatBuffer starting at ``start`` of ``data`` (4 for a size-prefixed buffer).

    Attributes:
        data: the bytes (a file's mapping).
        start: where the buffer's root offset lies; offsets inside are relative to it.
        end: the first byte past the buffer.
        budget: vector elements the parse may still read.
    """

    def __init__(self, data: Data, start: int = 0, end: int | None = None, budget: int | None = None) -> None:
        self.data, self.start = data, start
        self.end = len(data) if end is None else min(end, len(data))
        self.budget = budget if budget is not None else max(16 * (self.end - start), 1 << 20)

    def unpack(self, fmt: str, pos: int) -> int | float | bool:
        size = _SIZES[fmt]
        if pos < self.start or pos + size > self.end:
            raise Corrupt(f"offset {pos} outside the buffer")
        return struct.unpack_from("<" + fmt, self.data, pos)[0]

    def uint(self, pos: int) -> int:
        return int(self.unpack("I", pos))

    def root(self) -> Table:
        return self.table_at(self.start + self.uint(self.start))

    def table_at(self, pos: int) -> Table:
        vtable = pos - int(self.unpack("i", pos))
        size = int(self.unpack("H", vtable))
        if size < 4 or size % 2 or vtable + size > self.end:
            raise Corrupt(f"bad vtable at {vtable}")
        length = int(self.unpack("H", vtable + 2))
        return Table(self, pos, vtable, (size - 4) // 2, length)

    def charge(self, count: int) -> None:
        self.budget -= count
        if self.budget < 0:
            raise Corrupt("more vector elements than the file could hold (shared vectors read over and over)")


class Table:
    """One table: ``field(slot)`` is the absolute position of a present field, 0 when absent."""

    __slots__ = ("buf", "pos", "vtable", "slots", "length")

    def __init__(self, buf: Buffer, pos: int, vtable: int, slots: int, length: int) -> None:
        self.buf, self.pos, self.vtable, self.slots, self.length = buf, pos, vtable, slots, length

    def field(self, slot: int) -> int:
        if slot >= self.slots:
            return 0
        offset = int(self.buf.unpack("H", self.vtable + 4 + 2 * slot))
        if offset >= self.length:  # a field past the table's own size
            raise Corrupt(f"field {slot} of the table at {self.pos} lies past the table")
        return self.pos + offset if offset else 0

    def scalar(self, slot: int, fmt: str, default: int | float | bool = 0) -> int | float | bool:
        at = self.field(slot)
        return self.buf.unpack(fmt, at) if at else default

    def _target(self, slot: int) -> int:
        at = self.field(slot)
        return at + self.buf.uint(at) if at else 0

    def table(self, slot: int) -> Table | None:
        at = self._target(slot)
        return self.buf.table_at(at) if at else None

    def vector(self, slot: int, element_size: int) -> tuple[int, int]:
        """(position of the first element, count); (0, 0) when absent."""
        at = self._target(slot)
        if not at:
            return 0, 0
        count = self.buf.uint(at)
        if at + 4 + count * element_size > self.buf.end:
            raise Corrupt(f"vector of {count} elements at {at} runs past the buffer")
        self.buf.charge(count)
        return at + 4, count

    def scalars(self, slot: int, fmt: str) -> list[int | float | bool]:
        start, count = self.vector(slot, _SIZES[fmt])
        if not count:
            return []
        return list(struct.unpack_from(f"<{count}{fmt}", self.buf.data, start))

    def raw(self, slot: int) -> tuple[int, int]:
        """(position, length) of a ``[ubyte]`` vector's bytes."""
        return self.vector(slot, 1)

    def string(self, slot: int, limit: int | None = None) -> str:
        """A string field ("" when absent); ``Corrupt`` when it holds more than ``limit`` bytes."""
        start, count = self.raw(slot)
        if limit is not None and count > limit:
            raise Corrupt(f"a name of {count:,} bytes (at most {limit:,} expected)")
        return bytes(self.buf.data[start:start + count]).decode("utf-8", "replace") if count else ""

    def tables(self, slot: int) -> Iterator[Table]:
        start, count = self.vector(slot, 4)
        for i in range(count):
            at = start + 4 * i
            yield self.buf.table_at(at + self.buf.uint(at))

    def union(self, slot: int) -> tuple[int, Table | None]:
        """A union field: (its type, from slot ``slot``; its table, from slot ``slot + 1``)."""
        kind = int(self.scalar(slot, "B"))
        return kind, self.table(slot + 1) if kind else None
