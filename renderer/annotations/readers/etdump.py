"""ExecuTorch ETDump (``.etdp``): the runtime's profiling events (a program loaded with ``enable_etdump=True``, then
``write_etdump_result_to_file``), on the ExecuTorch program (``.pte``) it was recorded from.

The file is a size-prefixed FlatBuffer with file identifier ``ED00`` (executorch's
``devtools/etdump/etdump_schema_flatcc.fbs``), read here without executorch: ``ETDump.run_data`` holds one
``RunData`` per run (``Default`` for loading, ``Execute`` for each inference), each a list of events.

Times are those the devtools ``Inspector`` reports (``Inspector(etdump_path=…).to_dataframe()``), computed the
same way: runs with the same name and the same events form one block; each event of a block (same instruction,
name and delegate id) has one duration per run, ``end - start`` in nanoseconds over 10⁶ (ms); its ``avg_ms`` is
their mean, ``p50_ms``/``p10_ms``/``p90_ms`` numpy's percentiles, ``min_ms``/``max_ms``. The block with the most
runs of operator events is placed (the others are named in a note).

Placement: an event's ``instruction_id`` is the instruction's index in the plan's chain, which the loader keeps
in ``Node.metadata["instruction"]``. A kernel's own event (``native_call_convolution.out``) gives its
``avg_ms``…; the runtime's ``OPERATOR_CALL`` event around it (the kernel plus the call's overhead) gives
``call_avg_ms`` and ``call_p50_ms``; a delegate call's ``DELEGATE_CALL`` event gives the delegate box its
``avg_ms``…, and the events the backend logged inside it (``Convolution (NHWC, F32) IGEMM #1``) are summed into
``delegated_ms`` and listed in ``delegated_events``. ``Method::execute`` and the load events become graph values.
Events of instructions the program has not (moves, another program's) are in the coverage line.
"""

from __future__ import annotations

import math
import mmap
import os
import struct
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path

from renderer.annotations.lookup import node_ref, record_bound
from renderer.core.errors import AnnotationError, first_line, unreadable
from renderer.core.ir import Model, Node
from renderer.core.numbers import format_number
from renderer.core.records import AnnotationSet, Entry, MetricInfo
from renderer.files import inputs
from renderer.files.flatbuffer_view import Buffer, Corrupt, Table

NAME = "etdump"
DESCRIPTION = "ExecuTorch ETDump (.etdp) profiling events, times as the devtools Inspector reports them"

IDENTIFIER = b"ED00"
SCALE = 1_000_000  # ns → ms, the Inspector's default time scales
MAX_EVENTS = 10_000_000
MAX_NAME_BYTES = 1 << 20
"""Longest event or run name read: the runtime names events after kernels and backend operators."""
MAX_EVENT_NS = 2**53
"""Longest event taken (104 days): anything longer is a corrupt timestamp, not a run."""
MAX_LISTED = 12
OPERATOR_CALL = "OPERATOR_CALL"
_STATS = ("avg", "p50", "p10", "p90", "min", "max")

METRICS = {
    "avg_ms": MetricInfo("avg_ms", NAME, "ms", False, "ExecuTorch kernel time per run, mean over the ETDump's runs "
                         "(the Inspector's avg)", main=True),
    "p50_ms": MetricInfo("p50_ms", NAME, "ms", False, "ExecuTorch kernel time per run, median (the Inspector's p50)"),
    "min_ms": MetricInfo("min_ms", NAME, "ms", False, "ExecuTorch kernel time per run, fastest run"),
    "max_ms": MetricInfo("max_ms", NAME, "ms", False, "ExecuTorch kernel time per run, slowest run"),
    "call_avg_ms": MetricInfo("call_avg_ms", NAME, "ms", False, "the kernel and the runtime's call around it "
                              "(OPERATOR_CALL), mean"),
    "delegated_ms": MetricInfo("delegated_ms", NAME, "ms", False, "sum of the mean times of the events a "
                               "delegate's backend logged"),
}


def match(path: Path, head: str) -> bool:
    """A FlatBuffer with the ETDump identifier, size-prefixed (bytes 8-11) or not (bytes 4-7). The head is text
    with undecodable bytes replaced, which can move the identifier by a few characters."""
    return "ED00" in head[:16] and "\x00" in head[:12]


def match_bytes(head: bytes) -> bool:
    """The identifier where a size-prefixed ETDump (or an unprefixed one) has it."""
    return head[8:12] == IDENTIFIER or head[4:8] == IDENTIFIER


@dataclass(slots=True)
class _Event:
    name: str
    chain: int
    instruction: int
    delegate_int: int
    delegate_str: str
    start: int
    end: int


@dataclass(slots=True)
class _Block:
    """Runs with one signature: the event signatures in order, each with one duration (ms) per run."""

    name: str
    runs: int = 0
    times: OrderedDict[tuple[int, int, str, int | None, str | None], list[float]] = field(default_factory=OrderedDict)
    """(chain, instruction, event name, delegate debug id (int), delegate debug id (str)) → durations (ms);
    chain -1 for the method's own events (``Method::execute``)."""


def read(path: Path, model: Model) -> AnnotationSet:
    blocks = _blocks(path, record_bound(model))
    result = AnnotationSet(source=NAME, path=str(path), metrics=dict(METRICS))
    if model.format != "executorch":
        result.notes.append(f"{path}: an ETDump numbers the instructions of the ExecuTorch program it was recorded "
                            f"from (a .pte); {model.path} is a {model.format} model, so no operator matches")
    timed = [b for b in blocks if any(chain >= 0 for chain, *_ in b.times)]
    if not timed:
        raise AnnotationError(f"{path}: no operator events (a program run with enable_etdump=True writes them)")
    chosen = max(timed, key=lambda b: b.runs)  # the first of the most-run blocks
    others = [b for b in timed if b is not chosen]
    if others:
        result.notes.append(f"{path}: {len(others)} other blocks of operator events (runs whose events differ) are "
                            f"not shown; the {chosen.runs} runs of block {chosen.name!r} are")
    _place(result, chosen, _instructions(model))
    for block in blocks:
        for (chain, _, name, _, _), times in block.times.items():
            if chain < 0 and times:
                result.graph.values[f"{name[:100]} avg_ms"] = _stat(times, "avg")
    result.graph.values["etdump_runs"] = chosen.runs
    return result


def _instructions(model: Model) -> dict[int, Node]:
    """Instruction index → operator, in the method the runtime profiles (``forward``, else the first)."""
    graph = next((g for g in model.graphs if g.name == "forward"), model.graphs[0] if model.graphs else None)
    found: dict[int, Node] = {}
    for node in graph.nodes if graph is not None else []:
        text = node.metadata.get("instruction", "")
        if text.isdigit() and not node.metadata.get("chain"):
            found.setdefault(int(text), node)
    return found


def _stat(times: list[float], stat: str) -> float:
    import numpy as np

    if stat == "avg":
        return float(np.mean(times))
    if stat in ("min", "max"):
        return float(min(times) if stat == "min" else max(times))
    return float(np.percentile(times, int(stat[1:])))


def _place(result: AnnotationSet, block: _Block, nodes: dict[int, Node]) -> None:
    entries: dict[Node, Entry] = {}
    delegated: dict[Node, list[tuple[str, float]]] = {}
    missing: dict[tuple[int, int], str] = {}
    for (chain, instruction, name, delegate_int, delegate_str), times in block.times.items():
        if chain < 0 or not times:
            continue
        node = nodes.get(instruction) if chain == 0 else None
        if node is None:
            missing.setdefault((chain, instruction), f"instruction {instruction}: {name[:100]} "
                                                     f"({_stat(times, 'avg'):.6g} ms)")
            continue
        values = entries.setdefault(node, Entry()).values
        if delegate_int is not None or delegate_str is not None:
            delegated.setdefault(node, []).append((name[:100], _stat(times, "avg")))
        elif name == OPERATOR_CALL:
            values["call_avg_ms"], values["call_p50_ms"] = _stat(times, "avg"), _stat(times, "p50")
        else:
            values.update({f"{stat}_ms": _stat(times, stat) for stat in _STATS})
            values["event"] = name[:100]
            values["runs"] = len(times)
    for node, events in delegated.items():
        values = entries[node].values
        values["delegated_ms"] = math.fsum(ms for _, ms in events)
        values["delegated_events"] = len(events)
        shown = sorted(events, key=lambda e: -e[1])[:MAX_LISTED]
        values["delegated_top"] = "; ".join(f"{label}: {format_number(ms)} ms" for label, ms in shown)
    result.operators = [(node_ref(node), entry) for node, entry in entries.items()]
    result.unmatched += list(missing.values())


def _blocks(path: Path, bound: int) -> list[_Block]:
    """The run blocks of the file, as the Inspector groups them; a run of more than ``bound`` events is refused."""
    data = _data(path)
    try:
        return _group(path, _runs(data, bound))
    except Corrupt as e:
        raise AnnotationError(f"{path}: not a valid ETDump ({e})") from None
    except (struct.error, ValueError, IndexError, OverflowError, UnicodeError) as e:
        raise AnnotationError(f"{path}: not a valid ETDump ({type(e).__name__}: {first_line(e)})") from None


def _data(path: Path) -> bytes | mmap.mmap:
    """The file's bytes: mapped when it is a regular file (no copy), else read once, bounded."""
    if inputs.is_stream(path):
        return inputs.read_bytes(path, inputs.ANNOTATION_LIMIT, AnnotationError, "an ETDump")
    try:
        with open(path, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            if size > inputs.ANNOTATION_LIMIT:
                raise AnnotationError(f"{path}: {size:,} bytes, more than annograph reads as an ETDump")
            return mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) if size else b""
    except OSError as e:
        raise AnnotationError(unreadable(path, e, "an ETDump")) from None


def _runs(data: bytes | mmap.mmap, bound: int) -> list[tuple[str, int, list[_Event | tuple]]]:
    """Each run: (name, bundled input index, its events in order: profile events, and debug events as the
    signature tuple the Inspector groups them by)."""
    start = 4 if data[8:12] == IDENTIFIER else 0
    if data[start + 4:start + 8] != IDENTIFIER:
        raise Corrupt("no ED00 file identifier")
    buf = Buffer(data, start)
    runs = []
    count = 0
    for run in buf.root().tables(1):
        events: list[_Event | tuple] = []
        for event in run.tables(3):
            count += 1
            if count > MAX_EVENTS or len(events) >= bound:
                raise Corrupt(f"more than {min(MAX_EVENTS, bound):,} events in a run, far more than the program "
                              "could have logged" if len(events) >= bound else f"more than {MAX_EVENTS:,} events")
            found = _event(event)
            if found is not None:
                events.append(found)
        runs.append((run.string(0, MAX_NAME_BYTES), int(run.scalar(1, "i", -1)), events))
    return runs


def _event(event: Table) -> _Event | tuple | None:
    profile = event.table(0)
    if profile is not None:
        return _Event(profile.string(0, MAX_NAME_BYTES), int(profile.scalar(1, "i")),
                      int(profile.scalar(2, "i", -1)), int(profile.scalar(3, "i", -1)),
                      profile.string(4, MAX_NAME_BYTES), int(profile.scalar(6, "Q")), int(profile.scalar(7, "Q")))
    debug = event.table(2)
    if debug is None:
        return None
    entry = debug.table(2)
    output = entry.table(7) if entry is not None else None
    if output is not None and bool(output.scalar(0, "?")):
        return None  # a run output, which the Inspector leaves out of the signatures
    return ("debug", int(debug.scalar(0, "Q")), int(debug.scalar(1, "i", -1)), int(debug.scalar(3, "i", -1)),
            debug.string(4, MAX_NAME_BYTES), debug.string(5, MAX_NAME_BYTES))


def _group(path: Path, runs: list[tuple[str, int, list[_Event | tuple]]]) -> list[_Block]:
    """Runs grouped as the Inspector's ``EventBlock._gen_from_etdump`` groups them: by name, bundled input and
    the signatures of their events; each signature's durations across the runs of its group."""
    groups: OrderedDict[tuple, tuple[_Block, dict[tuple, tuple]]] = OrderedDict()
    for name, bundled, events in runs:
        signatures = _signatures(events)
        key = (name, tuple(signatures), bundled)
        block, _ = groups.setdefault(key, (_Block(name[:100]), {}))
        block.runs += 1
        for signature, event in signatures.items():
            if event is None:
                continue
            times = block.times.setdefault(signature[:5], [])
            times.append(_duration(path, event))
    return [block for block, _ in groups.values()]


def _signatures(events: list[_Event | tuple]) -> OrderedDict[tuple, _Event | None]:
    """A run's event signatures in order, each with its profile event (None for debug-only ones): the
    Inspector's ``InstructionEvent.gen_from_events`` then ``EventSignature.gen_from_instruction_event``."""
    by_instruction: OrderedDict[tuple, tuple[list[_Event], list[tuple]]] = OrderedDict()
    for event in events:
        if isinstance(event, _Event):
            key = (event.instruction, event.chain, event.delegate_int, event.delegate_str)
            by_instruction.setdefault(key, ([], []))[0].append(event)
        else:
            key = (event[2], event[1], event[3], event[4])
            by_instruction.setdefault(key, ([], []))[1].append(event)
    signatures: OrderedDict[tuple, _Event | None] = OrderedDict()
    for (instruction, chain, _, _), (profiles, debugs) in by_instruction.items():
        debug = _optional(debugs[0][5], debugs[0][2], debugs[0][3], debugs[0][4]) if debugs else None
        if not profiles:
            signatures[(chain, instruction, "", None, None, None, debug)] = None
        for event in profiles:
            profile = _optional(event.name, event.instruction, event.delegate_int, event.delegate_str)
            name = profile[0] if profile[2] is None and profile[3] is None else \
                str(profile[2]) if profile[2] is not None else profile[3]
            signatures[(chain, instruction, name, profile[2], profile[3], profile, debug)] = event
    return signatures


def _optional(name: str, instruction: int, delegate_int: int, delegate_str: str) -> tuple:
    """A profile or debug event's signature with the schema's defaults as None (the Inspector's)."""
    return (name or "", instruction if instruction != -1 else None, delegate_int if delegate_int != -1 else None,
            delegate_str or None)


def _duration(path: Path, event: _Event) -> float:
    """The event's duration in ms, computed as the Inspector computes it (delegated events scale each end
    before subtracting; a 32-bit timer may wrap once)."""
    delegated = event.delegate_int != -1 or bool(event.delegate_str)
    if delegated:
        return _elapsed(path, event, event.start / SCALE, event.end / SCALE)
    return float(_elapsed(path, event, event.start, event.end)) / SCALE


def _elapsed(path: Path, event: _Event, start: float, end: float) -> float:
    if event.end - event.start > MAX_EVENT_NS:
        raise AnnotationError(f"{path}: event {event.name[:100]!r} of instruction {event.instruction} lasts "
                              f"{event.end - event.start:,} ns, longer than any run (a corrupt timestamp)")
    if start <= end:
        return end - start
    if event.start > 2**32 - 1 or event.end > 2**32 - 1:
        raise AnnotationError(f"{path}: event {event.name[:100]!r} of instruction {event.instruction} ends "
                              f"({event.end}) before it starts ({event.start})")
    return (2**32 - 1 - start) + end
