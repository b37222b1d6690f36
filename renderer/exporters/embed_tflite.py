"""Write annotations into a copy of a TFLite model, as a ``Metadata`` entry and a buffer.

The entry is called ``annograph.annotations`` and its buffer holds the JSON described in
``renderer.annotations.embedded``. TFLite provides ``Model.metadata`` (name → buffer index) for exactly this
kind of tool data, and runtimes ignore entries they do not know.

How the file is edited: a FlatBuffer refers to its parts by offsets relative to where each offset is stored,
always pointing forward, except vtable offsets, which are signed. So the original bytes (after the 8-byte header
of root offset and ``TFL3``) are kept *unchanged* and moved back by a block inserted in front of them; every
reference inside them stays valid. The block holds a new ``Model`` table (the root offset now points to it)
whose fields reuse the old operator codes, subgraphs, description, signature defs and metadata_buffer vectors
(all behind it, so forward), plus new ``buffers`` and ``metadata`` vectors that list the old tables and one new
``Buffer`` and ``Metadata`` table, all inside the block. The block length is a multiple of 64, so every
alignment in the original bytes (16 for buffer data) is kept. The old Model table and vectors stay in the file,
unreferenced (a few hundred bytes). Buffers stored outside the FlatBuffer (models over 2 GiB, absolute
``offset`` fields) get their offsets moved by the same amount.

Embedding again reuses the buffer index of an existing ``annograph.annotations`` entry. Only the ``Model``
fields of schema version 3 are known; a file using later ``Model`` fields is refused rather than damaged.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

from renderer.annotations.embedded import ENTRY, document
from renderer.annotations.registry import input_paths
from renderer.core.errors import AnnographError, LoaderError
from renderer.core.ir import Model
from renderer.core.records import Annotations
from renderer.files.atomic import write_bytes
from renderer.loaders.tflite import loader as tflite_loader
from renderer.loaders.tflite.layout import (
    BUFFER_DATA,
    BUFFERS,
    DESCRIPTION,
    IDENTIFIER,
    META_BUFFER,
    META_NAME,
    METADATA,
    METADATA_BUFFER,
    OPERATOR_CODES,
    SIGNATURE_DEFS,
    SUBGRAPHS,
    VERSION,
    Layout,
)

ALIGN = 64
DATA_ALIGN = 16


class _Block:
    """The bytes inserted in front of the original content; positions are absolute in the new file."""

    def __init__(self, start: int) -> None:
        self.start = start
        self.buf = bytearray()
        self.patches: list[tuple[int, str]] = []  # (absolute position of a uoffset, label of its target)
        self.labels: dict[str, int] = {}

    @property
    def pos(self) -> int:
        return self.start + len(self.buf)

    def pad(self, align: int, extra: int = 0) -> None:
        while (self.pos + extra) % align:
            self.buf += b"\0"

    def label(self, name: str) -> None:
        self.labels[name] = self.pos

    def u16(self, value: int) -> None:
        self.buf += struct.pack("<H", value)

    def u32(self, value: int) -> None:
        self.buf += struct.pack("<I", value)

    def i32(self, value: int) -> None:
        self.buf += struct.pack("<i", value)

    def offset_to(self, target: int | str) -> None:
        """A uoffset to an absolute position, or to a label filled in later."""
        if isinstance(target, str):
            self.patches.append((self.pos, target))
            self.u32(0)
        else:
            if target <= self.pos:
                raise AssertionError("a FlatBuffer offset must point forward")
            self.u32(target - self.pos)

    def table(self, name: str, fields: list[tuple[int, str, Any]]) -> None:
        """vtable then table; fields are (slot, kind, value) with kind "u32" or "off" (absolute or label)."""
        self.pad(4)
        n_slots = max(slot for slot, _, _ in fields) + 1 if fields else 0
        vtable = self.pos
        self.u16(4 + 2 * n_slots)
        self.u16(4 + 4 * len(fields))
        by_slot = {slot: i for i, (slot, _, _) in enumerate(fields)}
        for slot in range(n_slots):
            self.u16(4 + 4 * by_slot[slot] if slot in by_slot else 0)
        self.pad(4)
        self.label(name)
        self.i32(self.pos - vtable)
        for _, kind, value in fields:
            if kind == "u32":
                self.u32(value)
            else:
                self.offset_to(value)

    def vector(self, name: str, targets: list[int | str]) -> None:
        self.pad(4)
        self.label(name)
        self.u32(len(targets))
        for target in targets:
            self.offset_to(target)

    def string(self, name: str, data: bytes) -> None:
        self.pad(4)
        self.label(name)
        self.u32(len(data))
        self.buf += data + b"\0"

    def bytes_vector(self, name: str, data: bytes) -> None:
        self.pad(DATA_ALIGN, extra=4)  # the data after the length word starts 16-aligned
        self.label(name)
        self.u32(len(data))
        self.buf += data

    def finish(self) -> bytes:
        for at, name in self.patches:
            target = self.labels[name]
            if target <= at:
                raise AssertionError("a FlatBuffer offset must point forward")
            struct.pack_into("<I", self.buf, at - self.start, target - at)
        while len(self.buf) % ALIGN:  # the shift of the original bytes, so a multiple of every alignment
            self.buf += b"\0"
        return bytes(self.buf)


def embed(model: Model, annotations: Annotations, output: str | Path) -> dict[str, int]:
    """Write the copy; return counts of what was stored."""
    doc = document(annotations, model)
    payload = json.dumps(doc, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    data = with_metadata(tflite_loader.layout(model), ENTRY, payload, Path(model.path))
    write_bytes(output, data, input_paths(model, annotations))
    return {
        "operators": len(doc["operators"]),
        "tensors": len(doc["tensors"]),
        "graph values": len(doc.get("graph", {}).get("values", {})),
    }


def with_metadata(
    source: Layout | bytes, name: str, payload: bytes, path: Path = Path("model.tflite")
) -> bytes:
    """The TFLite file (its layout, or its bytes) with Metadata entry ``name`` holding ``payload`` (replaced
    when present)."""
    layout = source if isinstance(source, Layout) else tflite_loader.layout(source, path)
    if layout.newer_fields:
        raise AnnographError(
            f"{path}: the Model table has fields newer than schema version 3; not editing it"
        )
    if BUFFERS not in layout.targets:
        raise LoaderError(f"{path}: corrupt TFLite file (no buffers vector)")
    reuse = None
    for entry in layout.metadata:
        if entry.name == name.encode("utf-8"):
            reuse = entry.buffer
            if not 0 < reuse < len(layout.buffers):
                raise LoaderError(f"{path}: metadata {name!r} points at buffer {reuse}, which does not exist")

    # The block goes at offset 8; every original byte at position x >= 8 moves to x + shift. The block's length
    # is not known until it is built, so build it twice: once to measure, once with the real shift.
    # The block's size does not depend on the shift (padding is relative to the block's own start).
    shift = len(_build(layout, reuse, name, payload, 1 << 30)[0])
    block, root = _build(layout, reuse, name, payload, shift)
    if len(block) != shift:
        raise AssertionError("the inserted block changed size")
    out = bytearray(struct.pack("<I", root) + IDENTIFIER)
    out += block
    out += layout.data[8:]
    for at, offset in layout.external_offsets:  # data kept after the FlatBuffer now starts shift bytes later
        struct.pack_into("<Q", out, at + shift, offset + shift)
    return bytes(out)


def _build(layout: Layout, reuse: int | None, name: str, payload: bytes, shift: int) -> tuple[bytes, int]:
    """The inserted block for a given shift of the original bytes, and the new Model table's position."""
    block = _Block(start=8)
    moved = {slot: target + shift for slot, target in layout.targets.items()}

    model_fields: list[tuple[int, str, Any]] = []
    if layout.version is not None:
        model_fields.append((VERSION, "u32", layout.version))
    for slot in (OPERATOR_CODES, SUBGRAPHS, DESCRIPTION):
        if slot in moved:
            model_fields.append((slot, "off", moved[slot]))
    model_fields.append((BUFFERS, "off", "buffers"))
    if METADATA_BUFFER in moved:
        model_fields.append((METADATA_BUFFER, "off", moved[METADATA_BUFFER]))
    model_fields.append((METADATA, "off", moved[METADATA] if reuse is not None else "metadata"))
    if SIGNATURE_DEFS in moved:
        model_fields.append((SIGNATURE_DEFS, "off", moved[SIGNATURE_DEFS]))
    block.table("model", model_fields)

    new_index = reuse if reuse is not None else len(layout.buffers)
    targets: list[int | str] = [t + shift for t in layout.buffers]
    if reuse is not None:
        targets[reuse] = "buffer"
    else:
        targets.append("buffer")
    block.vector("buffers", targets)
    if reuse is None:
        block.vector("metadata", [entry.table + shift for entry in layout.metadata] + ["meta"])
        block.table("meta", [(META_NAME, "off", "name"), (META_BUFFER, "u32", new_index)])
    block.table("buffer", [(BUFFER_DATA, "off", "data")])
    if reuse is None:
        block.string("name", name.encode("utf-8"))
    block.bytes_vector("data", payload)
    return block.finish(), block.labels["model"]
