"""Small ExecuTorch programs (``.pte``) and ETDumps (``.etdp``) built with the flatbuffers builder, for the
hostile-input tests: every string the formats carry can be set. Slots follow executorch's ``schema/program.fbs``
and ``devtools/etdump/etdump_schema_flatcc.fbs`` (a union takes two slots: its type, then its table).

The real files (made by executorch itself) come from ``tests/support/executorch_models.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import flatbuffers
import numpy as np

Field = tuple[str, int, object]
"""(kind, slot, value): kind ``offset`` (a table, vector or string written before), or a builder scalar kind
(``Int32``, ``Uint8``, ``Int64``, ``Bool``, ``Uint32``, ``Uint64``, ``Int8``)."""


def table(b: flatbuffers.Builder, slots: int, fields: Sequence[Field]) -> int:
    b.StartObject(slots)
    for kind, slot, value in fields:
        if kind == "offset":
            b.PrependUOffsetTRelativeSlot(slot, value, 0)
        else:
            getattr(b, f"Prepend{kind}Slot")(slot, value, None)  # never the default: always written
    return b.EndObject()


def offsets(b: flatbuffers.Builder, items: Sequence[int]) -> int:
    b.StartVector(4, len(items), 4)
    for item in reversed(items):
        b.PrependUOffsetTRelative(item)
    return b.EndVector()


def numbers(b: flatbuffers.Builder, values: Sequence[int], dtype: str = "<i4") -> int:
    return b.CreateNumpyVector(np.array(values, dtype=dtype))


def _tensor(b: flatbuffers.Builder, sizes: Sequence[int], buffer: int = 0, place: int | None = None,
            name: str | None = None) -> int:
    sizes_off = numbers(b, sizes)
    extra = table(b, 3, [("offset", 1, b.CreateString(name))]) if name is not None else None
    allocation = table(b, 3, [("Uint32", 0, 0), ("Uint32", 1, place)]) if place is not None else None
    fields: list[Field] = [("Int8", 0, 6), ("offset", 2, sizes_off), ("Uint32", 5, buffer)]
    if allocation is not None:
        fields.append(("offset", 6, allocation))
    if extra is not None:
        fields.append(("offset", 9, extra))
    body = table(b, 10, fields)
    return table(b, 2, [("Uint8", 0, 5), ("offset", 1, body)])


def _int(b: flatbuffers.Builder, value: int) -> int:
    return table(b, 2, [("Uint8", 0, 2), ("offset", 1, table(b, 1, [("Int64", 0, value)]))])


def _call(b: flatbuffers.Builder, kind: int, target: int, args: Sequence[int]) -> int:
    args_off = numbers(b, args)
    body = table(b, 2, [("Int32", 0, target), ("offset", 1, args_off)])
    return table(b, 2, [("Uint8", 0, kind), ("offset", 1, body)])


def hostile_program(text: str) -> bytes:
    """One method named ``text``: ``mm(x, W)`` → ``relu`` → a kernel whose operator is named ``text`` → a delegate
    whose backend and compile spec are named ``text``. The weight's stored name is ``text·w``, its data inline."""
    b = flatbuffers.Builder(4096)
    values = [_tensor(b, [1, 4], place=0), _tensor(b, [4, 4], buffer=1, name=text + "·w"),
              _tensor(b, [1, 4], place=16), _tensor(b, [1, 4], place=32), _tensor(b, [1, 4], place=48),
              _tensor(b, [1, 4], place=64), _int(b, 1)]
    operators = [table(b, 2, [("offset", 0, b.CreateString(name)), ("offset", 1, b.CreateString("out"))])
                 for name in ("aten::mm", "aten::relu", text)]
    instructions = [_call(b, 1, 0, [0, 1, 2, 2]), _call(b, 1, 1, [2, 3, 3]), _call(b, 1, 2, [3, 6, 4, 4]),
                    _call(b, 2, 0, [4, 5])]
    chain = table(b, 4, [("offset", 0, numbers(b, [0])), ("offset", 1, numbers(b, [5])),
                         ("offset", 2, offsets(b, instructions))])
    spec = table(b, 2, [("offset", 0, b.CreateString(text)), ("offset", 1, b.CreateByteVector(b"spec"))])
    processed = table(b, 2, [("Int8", 0, 0), ("Uint32", 1, 0)])
    delegate = table(b, 3, [("offset", 0, b.CreateString(text)), ("offset", 1, processed),
                            ("offset", 2, offsets(b, [spec]))])
    plan = table(b, 9, [("offset", 0, b.CreateString(text)), ("offset", 2, offsets(b, values)),
                        ("offset", 3, numbers(b, [0])), ("offset", 4, numbers(b, [5])),
                        ("offset", 5, offsets(b, [chain])), ("offset", 6, offsets(b, operators)),
                        ("offset", 7, offsets(b, [delegate]))])
    weights = np.arange(16, dtype="<f4").tobytes()
    buffers = [table(b, 1, [("offset", 0, b.CreateByteVector(data))]) for data in (b"", weights)]
    blob = table(b, 1, [("offset", 0, b.CreateByteVector(text.encode("utf-8")[:64] or b"blob"))])
    program = table(b, 8, [("Uint32", 0, 0), ("offset", 1, offsets(b, [plan])), ("offset", 2, offsets(b, buffers)),
                           ("offset", 3, offsets(b, [blob]))])
    b.Finish(program, file_identifier=b"ET12")
    return bytes(b.Output())


Event = tuple[str, int, int, str, int, int]
"""(name, chain, instruction, delegate debug id (str), start ns, end ns)."""


def _profile_event(b: flatbuffers.Builder, event: Event) -> int:
    name, chain, instruction, delegate, start, end = event
    fields: list[Field] = [("offset", 0, b.CreateString(name)), ("Int32", 1, chain), ("Int32", 2, instruction),
                           ("Int32", 3, -1), ("Uint64", 6, start), ("Uint64", 7, end)]
    if delegate:
        fields.append(("offset", 4, b.CreateString(delegate)))
    return table(b, 1, [("offset", 0, table(b, 8, fields))])


def etdump(runs: Sequence[tuple[str, Sequence[Event]]]) -> bytes:
    """A size-prefixed ETDump with one RunData per ``(name, events)``."""
    b = flatbuffers.Builder(4096)
    run_tables = []
    for name, events in runs:
        event_offsets = [_profile_event(b, event) for event in events]
        run_tables.append(table(b, 4, [("offset", 0, b.CreateString(name)), ("Int32", 1, -1),
                                       ("offset", 3, offsets(b, event_offsets))]))
    root = table(b, 2, [("Uint32", 0, 0), ("offset", 1, offsets(b, run_tables))])
    b.FinishSizePrefixed(root, file_identifier=b"ED00")
    return bytes(b.Output())


def hostile_etdump(text: str, runs: int = 2, times: Callable[[int, int], tuple[int, int]] | None = None,
                   extra: int = 0) -> bytes:
    """Runs named ``text`` of the hostile program: the mm's kernel event named ``text``, the relu's, the
    delegate's call with an event its backend logged under ``text``, and an event of an instruction the program
    has not; ``times(run, event)`` gives (start, end) in ns; ``extra`` more events of the relu."""
    span = times or (lambda run, n: (1_000_000 * run + 1000 * n, 1_000_000 * run + 1000 * n + 250 + 50 * run))
    blocks = []
    for run in range(runs):
        listed = [(text or "k", 0, 0, ""), ("OPERATOR_CALL", 0, 0, ""), ("native_call_relu.out", 0, 1, ""),
                  ("", 0, 3, text or "d"), ("DELEGATE_CALL", 0, 3, ""), (text + "·moved", 0, 9, ""),
                  ("Method::execute", -1, 0, "")]
        listed += [(f"native_call_relu.out·{n}", 0, 1, "") for n in range(extra)]
        blocks.append((text, [(name, chain, ins, dlg, *span(run, n))
                              for n, (name, chain, ins, dlg) in enumerate(listed)]))
    return etdump(blocks)
