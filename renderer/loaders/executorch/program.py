"""An ExecuTorch program (``.pte``) read into plain records: execution plans, their values and instructions, the
operator and delegate tables, and where constant data lies. No IR here (``loader`` builds it) and no
executorch package: the tables are read by slot (``flatbuffer_view``) after executorch's ``schema/program.fbs``.

File layout: a FlatBuffer with file identifier ``ETnn`` (``ET12`` today), optionally followed by segments (constant
data, delegate blobs); the extended header ``eh00`` at byte 8 gives the FlatBuffer's size and where the segments
start (``schema/extended_header.h``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from renderer.files.flatbuffer_view import Buffer, Corrupt, Data, Table

IDENTIFIER = re.compile(rb"ET\d\d")
HEADER_MAGIC = b"eh00"

# Slots of the tables read (schema order; a union takes two slots).
P_VERSION, P_PLANS, P_CONSTANT_BUFFER, P_DELEGATE_DATA, P_SEGMENTS, P_CONSTANT_SEGMENT = 0, 1, 2, 3, 4, 5
EP_NAME, EP_VALUES, EP_INPUTS, EP_OUTPUTS, EP_CHAINS, EP_OPERATORS, EP_DELEGATES = 0, 2, 3, 4, 5, 6, 7
T_SCALAR_TYPE, T_SIZES, T_BUFFER, T_ALLOCATION, T_DYNAMISM, T_EXTRA = 0, 2, 5, 6, 8, 9
KERNEL_TYPES = (None, "null", "int", "bool", "double", "tensor", "string", "int_list", "double_list", "bool_list",
                "tensor_list", "optional_tensor_list")
INSTRUCTIONS = (None, "kernel", "delegate", "move", "jump_false", "free")
EXTERNAL = 1  # TensorDataLocation.EXTERNAL
SEGMENT = 1  # DataLocation.SEGMENT

# ScalarType → (ir dtype, little-endian numpy dtype of the stored bytes or None when not readable as an array).
SCALAR_TYPES: dict[int, tuple[str, str | None]] = {
    0: ("uint8", "u1"), 1: ("int8", "i1"), 2: ("int16", "<i2"), 3: ("int32", "<i4"), 4: ("int64", "<i8"),
    5: ("float16", "<f2"), 6: ("float32", "<f4"), 7: ("float64", "<f8"), 11: ("bool", "?"), 12: ("int8", "i1"),
    13: ("uint8", "u1"), 14: ("int32", "<i4"), 15: ("bfloat16", "<u2"), 16: ("uint8", None), 17: ("uint8", None),
    22: ("uint16", "<u2"), 23: ("float8e5m2", "u1"), 24: ("float8e4m3fn", "u1"), 25: ("float8e5m2fnuz", "u1"),
    26: ("float8e4m3fnuz", "u1"), 27: ("uint16", "<u2"), 28: ("uint32", "<u4"), 29: ("uint64", "<u8"),
}


@dataclass(slots=True)
class TensorInfo:
    """A ``Tensor`` EValue: ``sizes`` are the static shape (the upper bound when ``dynamism`` is 1); ``planned``
    when the memory plan places it (activations, mutable state) at ``place`` (memory id, offset), ``buffer``
    its constant data (0: none)."""

    scalar_type: int
    sizes: tuple[int, ...]
    buffer: int
    planned: bool
    dynamism: int
    name: str = ""
    external: bool = False
    place: tuple[int, int] | None = None

    @property
    def dtype(self) -> str:
        return SCALAR_TYPES.get(self.scalar_type, (f"scalar_type_{self.scalar_type}", None))[0]

    @property
    def constant(self) -> bool:
        """Data stored in the program (or beside it, ``external``) and never written."""
        return (self.buffer > 0 or self.external) and not self.planned


@dataclass(slots=True)
class EValue:
    """One entry of a plan's ``values``: ``kind`` from ``KERNEL_TYPES`` (``unknown`` for a newer type), ``value``
    a Python value, a ``TensorInfo``, or value indices for the tensor lists (-1 for an absent optional)."""

    kind: str
    value: Any = None


@dataclass(slots=True)
class Instruction:
    """``kind`` from ``INSTRUCTIONS``; ``target`` the operator or delegate index (the source of a move);
    ``args`` the value indices it reads and writes."""

    chain: int
    index: int
    kind: str
    target: int = -1
    args: list[int] = field(default_factory=list)


@dataclass(slots=True)
class Delegate:
    """A ``BackendDelegate``: backend id, where its blob lies (``inline``: ``Program.backend_delegate_data``, else
    a segment), and its compile specs (key, value bytes)."""

    backend: str
    inline: bool
    index: int
    specs: list[tuple[str, bytes]] = field(default_factory=list)


@dataclass(slots=True)
class Plan:
    name: str
    values: list[EValue]
    inputs: list[int]
    outputs: list[int]
    instructions: list[Instruction]
    operators: list[tuple[str, str]]
    delegates: list[Delegate]


@dataclass(slots=True)
class Program:
    """The parsed file: ``segments`` as (absolute start, size); ``constants`` the constant segment's
    (segment index, offsets), ``buffers`` the older inline constant buffers and ``delegate_data`` the inline
    delegate blobs, each as (position, size) in ``data``."""

    data: Data
    version: int
    plans: list[Plan]
    segments: list[tuple[int, int]]
    constants: tuple[int, list[int]]
    buffers: list[tuple[int, int]]
    delegate_data: list[tuple[int, int]]

    def constant_bytes(self, tensor: TensorInfo, nbytes: int) -> tuple[int, int] | str:
        """Where ``tensor``'s ``nbytes`` of data lie, as (position, size), or why they cannot be read."""
        index = tensor.buffer
        if tensor.external:
            return "stored outside the program (a .ptd file)"
        if self.buffers:
            if index >= len(self.buffers):
                return f"constant buffer {index} of {len(self.buffers)}"
            start, size = self.buffers[index]
        else:
            segment, offsets = self.constants
            if index >= len(offsets) or segment >= len(self.segments):
                return f"constant {index} not in the constant segment"
            base, length = self.segments[segment]
            if offsets[index] > length:
                return f"constant {index} lies past its segment"
            start, size = base + offsets[index], length - offsets[index]
        if nbytes > size or start + nbytes > len(self.data):
            return f"{nbytes} bytes of data declared, {min(size, len(self.data) - start)} stored"
        return start, nbytes

    def blob(self, delegate: Delegate) -> tuple[int, int] | None:
        """(position, size) of a delegate's processed blob, None when the reference points nowhere."""
        table = self.delegate_data if delegate.inline else self.segments
        return table[delegate.index] if 0 <= delegate.index < len(table) else None


def matches(head: bytes) -> bool:
    return len(head) >= 8 and IDENTIFIER.fullmatch(head[4:8]) is not None


def parse(data: Data) -> Program:
    """The program in ``data``; ``Corrupt`` saying what is wrong with it."""
    size, segment_base = _extended_header(data)
    buf = Buffer(data, 0, size)
    root = buf.root()
    segments = []
    for table in root.tables(P_SEGMENTS):
        offset, length = int(table.scalar(0, "Q")), int(table.scalar(1, "Q"))
        start = segment_base + offset
        if start + length > len(data):
            raise Corrupt(f"segment of {length} bytes at {start} runs past the end of the file")
        segments.append((start, length))
    constant_segment = root.table(P_CONSTANT_SEGMENT)
    constants = (int(constant_segment.scalar(0, "I")), [int(o) for o in constant_segment.scalars(1, "Q")]) \
        if constant_segment is not None else (0, [])
    return Program(data=data, version=int(root.scalar(P_VERSION, "I")),
                   plans=[_plan(table) for table in root.tables(P_PLANS)], segments=segments, constants=constants,
                   buffers=[table.raw(0) for table in root.tables(P_CONSTANT_BUFFER)],
                   delegate_data=[table.raw(0) for table in root.tables(P_DELEGATE_DATA)])


def _extended_header(data: Data) -> tuple[int, int]:
    """(size of the FlatBuffer, absolute start of the segments) from the ``eh00`` header; the whole file and 0
    without one."""
    if len(data) < 32 or bytes(data[8:12]) != HEADER_MAGIC:
        return len(data), 0
    length = int.from_bytes(data[12:16], "little")
    program = int.from_bytes(data[16:24], "little")
    base = int.from_bytes(data[24:32], "little")
    if length < 24 or not 0 < program <= len(data) or base > len(data):
        raise Corrupt(f"extended header gives a {program}-byte program and segments at {base} in a "
                      f"{len(data)}-byte file")
    return program, base


def _plan(table: Table) -> Plan:
    instructions = []
    for chain, chain_table in enumerate(table.tables(EP_CHAINS)):
        for index, instruction in enumerate(chain_table.tables(2)):
            instructions.append(_instruction(chain, index, instruction))
    operators = [(op.string(0), op.string(1)) for op in table.tables(EP_OPERATORS)]
    delegates = []
    for delegate in table.tables(EP_DELEGATES):
        processed = delegate.table(1)
        inline = processed is None or int(processed.scalar(0, "b")) != SEGMENT
        where = int(processed.scalar(1, "I")) if processed is not None else -1
        specs = [(spec.string(0), _bytes(spec, 1)) for spec in delegate.tables(2)]
        delegates.append(Delegate(delegate.string(0), inline, where, specs))
    return Plan(name=table.string(EP_NAME), values=[_evalue(v) for v in table.tables(EP_VALUES)],
                inputs=[int(i) for i in table.scalars(EP_INPUTS, "i")],
                outputs=[int(i) for i in table.scalars(EP_OUTPUTS, "i")],
                instructions=instructions, operators=operators, delegates=delegates)


def _bytes(table: Table, slot: int, limit: int = 4096) -> bytes:
    start, count = table.raw(slot)
    return bytes(table.buf.data[start:start + min(count, limit)])


def _instruction(chain: int, index: int, table: Table) -> Instruction:
    kind, args = table.union(0)
    name = INSTRUCTIONS[kind] if kind < len(INSTRUCTIONS) else "unknown"
    if args is None or name in (None, "unknown"):
        return Instruction(chain, index, name or "unknown")
    if name in ("kernel", "delegate"):
        return Instruction(chain, index, name, int(args.scalar(0, "i")), [int(a) for a in args.scalars(1, "i")])
    if name == "move":
        return Instruction(chain, index, name, int(args.scalar(0, "i")), [int(args.scalar(1, "i"))])
    return Instruction(chain, index, name, -1, [int(args.scalar(0, "i"))])


def _evalue(table: Table) -> EValue:
    kind, body = table.union(0)
    name = KERNEL_TYPES[kind] if kind < len(KERNEL_TYPES) else "unknown"
    if body is None or name in (None, "null", "unknown"):
        return EValue(name or "null")
    if name == "tensor":
        return EValue(name, _tensor(body))
    if name in ("int", "bool", "double"):
        return EValue(name, {"int": int, "bool": bool, "double": float}[name](
            body.scalar(0, {"int": "q", "bool": "?", "double": "d"}[name])))
    if name == "string":
        return EValue(name, body.string(0))
    fmt = {"int_list": "q", "double_list": "d", "bool_list": "?"}.get(name, "i")
    return EValue(name, body.scalars(0, fmt))


def _tensor(table: Table) -> TensorInfo:
    extra = table.table(T_EXTRA)
    tensor = TensorInfo(scalar_type=int(table.scalar(T_SCALAR_TYPE, "b")),
                        sizes=tuple(int(s) for s in table.scalars(T_SIZES, "i")),
                        buffer=int(table.scalar(T_BUFFER, "I")), planned=table.field(T_ALLOCATION) != 0,
                        dynamism=int(table.scalar(T_DYNAMISM, "b")))
    allocation = table.table(T_ALLOCATION)
    if allocation is not None:  # memory id, offset (low and high 32 bits)
        tensor.place = (int(allocation.scalar(0, "I")),
                        int(allocation.scalar(1, "I")) | int(allocation.scalar(2, "I")) << 32)
    if extra is not None:
        tensor.name = extra.string(1)
        tensor.external = int(extra.scalar(2, "b")) == EXTERNAL
    return tensor
