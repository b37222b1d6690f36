"""Mutation fuzzing of every model loader and annotation reader, driven by the registries.

Targets are built from ``renderer.loaders.registry.LOADERS`` and ``renderer.annotations.registry.READERS``,
seeded with the files ``tests/support/payloads.py`` finds (samples, fixtures, the extra seeds in
``tests/support/registry.py``), and from the command paths of ``tests/support/registry.py`` (``--dim`` values, the
onnxruntime shape run, ``embed``), which run the command on the input in-process. One input
is a seed with 1–4 random mutations (bit flips, interesting bytes and integers, inserted dictionary tokens,
deleted, duplicated or spliced ranges, truncation). Each input is written to a file with the seed's name and given
to the target, which then also runs what a render would run on the result (the IR index, the DOT emitter,
a heatmap over the first metric).

Outcomes: ``ok`` (accepted), ``error`` (our own AnnographError, one line, naming the file) — both fine —
or a failure: any other exception, a message that is not one line or does not name the file, a
MemoryError, running past ``--timeout``, or killing the worker (a crash in native code, the memory limit).
Failing inputs are saved in ``--crashes`` with a note, and can be replayed with ``--replay N``.

    python fuzz/harness.py --inputs 100000 --jobs 2 --seed 1        # the long run (see fuzz/README.md)
    python fuzz/harness.py --replay 1234 --seed 1                   # regenerate and rerun input 1234

The in-suite short run (tests/properties/test_fuzz.py) drives the same targets and mutations from hypothesis.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import re
import resource
import select
import signal
import subprocess
import sys
import time
import traceback
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

import payloads  # noqa: E402  (tests/support/payloads.py: seeds and registries)

# Tokens worth inserting: structure of the text formats, numbers at the edges, payloads, YAML tricks.
DICTIONARY: tuple[bytes, ...] = tuple(t.encode() for t in (
    "{", "}", "[", "]", ":", ",", '"', "'", "\n", "\r\n", "\t", "#", "-", " - ", "&a", "*a", "<<: *a", "!!binary",
    "!!python/object:os.system", "!!float", "~", "null", "true", "1e309", "-1", "0", "4294967296", "NaN", "-0",
    "9" * 40, "id", "kind", "style.fillcolor", "operators:", "tensors:", "graph:", "meta:", "style:", "title:",
    "operator_id: ", "operator_meta: ", "operator_style: ", "tensor_id: ", "graph_meta: ", "\"a: b; c: d\"",
    "penwidth", "fillcolor: #zzzzzz", "url", "href", "\ufeff", "\\", "\\u0000", "\\ud800", ",,,,", '"""',
    "<script>", "\\N", "\u202e", "0:0", "99:99", "\ufffe", "\uffff", "9" * 400, "1.7e308", "\u00b2", "\u0661",
)) + (b"\x00", b"\xff\xff\xff\x7f", b"\x80\x80\x80\x80\x80\x80\x80\x80\x80\x01", b"TFL3", b"\x08\x07")

INTERESTING_BYTES = (0x00, 0x01, 0x7F, 0x80, 0xFF, 0x08, 0x12, 0x0A, 0x22, 0x3A)
INTERESTING_INTS = (0, 1, -1, 2, 4, 0x7F, 0x80, 0xFF, 0x7FFF, 0xFFFF, 0x7FFFFFFF, -0x80000000, 0x10000, 1 << 24)
SAVED_PER_SIGNATURE = 3  # failing inputs kept per distinct failure
OPERATIONS = ("flip", "byte", "int32", "insert", "token", "delete", "duplicate", "truncate", "splice", "onnx", "tflite",
              "number")
# What the "number" mutation puts in place of a run of digits: integers past a float (1.8e308) and past Python's
# 4300-digit conversion limit, floats at and past the edge, and characters that pass isdigit() but not int()
# ("²") or that int() reads as digits ("١", "１") but that are no ASCII index.
EXTREME_NUMBERS: tuple[bytes, ...] = tuple(t.encode() for t in (
    "9" * 400, "-" + "9" * 400, "9" * 5000, "1e400", "1.7e308", "-1.7e308", "NaN", "-Infinity", "\u00b2", "\u0661",
    "\uff11", "0:\uff11",
))
_DIGITS = re.compile(rb"[0-9]+")


# ---- mutation ---------------------------------------------------------------------------------------------------


def apply(data: bytes, op: str, a: int, b: int, blob: bytes, other: bytes = b"") -> bytes:
    """One deterministic mutation of ``data``; ``a``/``b`` pick positions and sizes, ``blob`` is inserted text.

    Shared by the random long run and by hypothesis, which shrinks (op, a, b, blob) tuples.
    """
    n = len(data)
    if n == 0:
        return blob or b"\x00"
    pos = a % n
    if op == "flip":
        return data[:pos] + bytes([data[pos] ^ (1 << (b % 8))]) + data[pos + 1:]
    if op == "byte":
        return data[:pos] + bytes([INTERESTING_BYTES[b % len(INTERESTING_BYTES)]]) + data[pos + 1:]
    if op == "int32":
        pos -= pos % 4
        value = INTERESTING_INTS[b % len(INTERESTING_INTS)] & 0xFFFFFFFF
        return data[:pos] + value.to_bytes(4, "little") + data[pos + 4:]
    if op == "insert":
        return data[:pos] + blob + data[pos:]
    if op == "token":
        return data[:pos] + DICTIONARY[b % len(DICTIONARY)] + data[pos:]
    if op == "delete":
        return data[:pos] + data[pos + 1 + b % 64:]
    if op == "duplicate":
        chunk = data[pos:pos + 1 + b % 256]
        return data[:pos] + chunk * (1 + b % 3) + data[pos:]
    if op == "truncate":
        return data[:pos]
    if op == "splice":
        if not other:
            return data
        start = b % len(other)
        return data[:pos] + other[start:start + 1 + a % 512] + data[pos:]
    if op == "onnx":
        return onnx_edit(data, random.Random(a), blob)
    if op == "tflite":
        return tflite_edit(data, a, b)
    if op == "number":
        return number_edit(data, a, b)
    raise ValueError(op)


def number_edit(data: bytes, a: int, b: int) -> bytes:
    """Run of digits ``a`` (modulo their count, in the first 256 KiB) replaced by ``EXTREME_NUMBERS[b]``."""
    runs = [m.span() for m in _DIGITS.finditer(data, 0, 1 << 18)]
    if not runs:
        return data
    start, end = runs[a % len(runs)]
    return data[:start] + EXTREME_NUMBERS[b % len(EXTREME_NUMBERS)] + data[end:]


# ---- structure-aware mutations ----------------------------------------------------------------------------------
# Byte mutations mostly break the protobuf wire format, which the protobuf library rejects before our code
# runs. These edit a parsed ONNX model and write it back, so the loader sees valid protobuf holding invalid
# models; for TFLite they overwrite the scalar fields (indices, types, shapes) the loader follows.

_ONNX_NAMES = ("", "x", "missing", "0", "0:0", "input:0", "<b>", "\\N", "a" * 300)
_ONNX_OPS = ("", "Conv", "If", "Loop", "Scan", "Constant", "ConstantOfShape", "Relu", "Custom", "QuantizeLinear")
_ONNX_INTS = (-1, 0, 1, 2, 3, 7, 25, 99, 2**31 - 1, 2**40, -(2**62))


def onnx_edit(data: bytes, rng: random.Random, blob: bytes = b"") -> bytes:
    """1–3 random edits of a parsed ONNX model (unchanged ``data`` when it is not one, or an edit is refused)."""
    try:
        return _onnx_edit(data, rng, blob)
    except Exception:  # protobuf refusing a value (an enum out of range…): keep the input as it was
        return data


def _onnx_edit(data: bytes, rng: random.Random, blob: bytes) -> bytes:
    import onnx

    from renderer.loaders.onnx import loader as onnx_loader

    if not onnx_loader.match(data[:64]):
        return data
    model = onnx.ModelProto()
    try:
        model.ParseFromString(data)
    except Exception:
        return data
    graphs = [model.graph]
    for graph in graphs:  # every subgraph, depth-first order not needed
        for node in graph.node:
            for attr in node.attribute:
                graphs += ([attr.g] if attr.HasField("g") else []) + list(attr.graphs)
    text = blob.decode("utf-8", "replace") if rng.random() < 0.3 else rng.choice(_ONNX_NAMES)
    for _ in range(rng.randint(1, 3)):
        graph = rng.choice(graphs)
        names = [o for n in graph.node for o in n.output] + [v.name for v in graph.input] + ["nowhere"]
        choice = rng.randrange(12)
        if choice == 0 and graph.node:  # node identity
            node = rng.choice(graph.node)
            setattr(node, rng.choice(("op_type", "domain", "name")), rng.choice(_ONNX_OPS + (text,)))
        elif choice == 1 and graph.node:  # wiring: dangling, duplicate, self-referencing, empty
            node = rng.choice(graph.node)
            target = rng.choice((node.input, node.output))
            if target and rng.random() < 0.5:
                target[rng.randrange(len(target))] = rng.choice(names + [text])
            else:
                target.append(rng.choice(names + [text]))
        elif choice == 2 and graph.node:  # attributes: wrong type tag, removed, odd new ones
            node = rng.choice(graph.node)
            if node.attribute and rng.random() < 0.5:
                attr = rng.choice(node.attribute)
                if rng.random() < 0.5:
                    attr.type = rng.randrange(15)  # every AttributeType, mostly not the one the value has
                else:
                    node.attribute.remove(attr)
            else:
                attr = node.attribute.add()
                attr.name = rng.choice(("value", "then_branch", "body", "axis", text))
                kind = rng.choice(("g", "t", "s", "i", "ints", "graphs"))
                if kind == "g":
                    attr.type = onnx.AttributeProto.GRAPH
                    attr.g.name = text
                    attr.g.node.add(op_type=rng.choice(_ONNX_OPS), input=[rng.choice(names)], output=[text])
                elif kind == "graphs":
                    attr.type = onnx.AttributeProto.GRAPHS
                    if len(graphs) < 50:  # a copy of a graph that may contain this very node: snapshot first
                        snapshot = rng.choice(graphs).SerializeToString()
                        attr.graphs.add().ParseFromString(snapshot)
                elif kind == "t":
                    attr.type = onnx.AttributeProto.TENSOR
                    attr.t.data_type = rng.randrange(26)
                    attr.t.dims.extend(rng.choice(_ONNX_INTS) for _ in range(rng.randrange(3)))
                elif kind == "s":
                    attr.type = onnx.AttributeProto.STRING
                    attr.s = blob
                elif kind == "i":
                    attr.type = onnx.AttributeProto.INT
                    attr.i = rng.choice(_ONNX_INTS) % 2**63
                else:
                    attr.type = onnx.AttributeProto.INTS
                    attr.ints.extend(rng.choice(_ONNX_INTS) % 2**63 for _ in range(rng.randrange(5)))
        elif choice == 3 and graph.initializer:  # constant data that does not fit its header
            tensor = rng.choice(graph.initializer)
            edit = rng.randrange(4)
            if edit == 0:
                tensor.data_type = rng.randrange(26)
            elif edit == 1:
                del tensor.dims[:]
                tensor.dims.extend(rng.choice(_ONNX_INTS) for _ in range(rng.randrange(4)))
            elif edit == 2:
                tensor.raw_data = tensor.raw_data[: rng.randrange(len(tensor.raw_data) + 1)]
            else:
                tensor.data_location = onnx.TensorProto.EXTERNAL
                entry = tensor.external_data.add()
                entry.key, entry.value = "location", rng.choice(("missing.bin", "../../etc/passwd", "/dev/null", text))
        elif choice == 4:  # declared types and shapes
            infos = list(graph.input) + list(graph.output) + list(graph.value_info)
            if infos:
                info = rng.choice(infos)
                tensor_type = info.type.tensor_type
                edit = rng.randrange(4)
                if edit == 0:
                    tensor_type.elem_type = rng.randrange(26)
                elif edit == 1:
                    tensor_type.shape.dim.add().dim_value = rng.choice(_ONNX_INTS) % 2**63
                elif edit == 2:
                    tensor_type.shape.dim.add().dim_param = text
                else:
                    info.type.sequence_type.elem_type.tensor_type.elem_type = 1
        elif choice == 5:
            model.ir_version = rng.choice(_ONNX_INTS) % 2**63
        elif choice == 6:
            fresh = rng.random() < 0.3 or not model.opset_import
            opset = model.opset_import.add() if fresh else rng.choice(model.opset_import)
            opset.domain = rng.choice(("", "ai.onnx", "com.microsoft", text))
            opset.version = rng.choice(_ONNX_INTS) % 2**63
        elif choice == 7 and graph.node:  # node order and count
            nodes = list(graph.node)
            edit = rng.randrange(3)
            if edit == 0:
                rng.shuffle(nodes)
            elif edit == 1:
                nodes.pop(rng.randrange(len(nodes)))
            else:
                nodes.append(rng.choice(nodes))
            del graph.node[:]
            graph.node.extend(nodes)
        elif choice == 8:  # graph inputs and outputs
            target = rng.choice((graph.input, graph.output))
            if target and rng.random() < 0.5:
                target.pop(rng.randrange(len(target)))
            else:
                target.add().name = rng.choice(names + [text])
        elif choice == 9:
            props = rng.choice(graph.node).metadata_props if graph.node else model.metadata_props
            entry = rng.choice((model.metadata_props, props)).add()
            entry.key, entry.value = text, text
        elif choice == 10:
            setattr(model, rng.choice(("producer_name", "doc_string", "domain")), text)
        else:  # a node that reads its own output (a cycle)
            if graph.node:
                node = rng.choice(graph.node)
                if node.output:
                    node.input.append(node.output[0])
    try:
        return model.SerializeToString()
    except Exception:
        return data


@cache
def _tflite_fields(data: bytes) -> tuple[tuple[int, int], ...]:
    """(offset, size) of the scalar fields and index vectors a TFLite loader follows."""
    import tflite

    from renderer.loaders.tflite import loader as tflite_loader

    if not tflite_loader.match(data[:64]):
        return ()
    found: list[tuple[int, int]] = []

    def scalar(table: object, slot: int, size: int) -> None:
        tab = table._tab  # type: ignore[attr-defined]
        offset = tab.Offset(4 + 2 * slot)
        if offset:
            found.append((tab.Pos + offset, size))

    def vector(table: object, slot: int, size: int) -> None:
        tab = table._tab  # type: ignore[attr-defined]
        offset = tab.Offset(4 + 2 * slot)
        if offset:
            start, length = tab.Vector(offset), tab.VectorLen(offset)
            found.append((start - 4, 4))  # the length itself
            found.extend((start + k * size, size) for k in range(min(length, 64)))

    try:
        model = tflite.Model.GetRootAsModel(data, 0)
        scalar(model, 0, 4)  # version
        for i in range(min(model.OperatorCodesLength(), 64)):
            code = model.OperatorCodes(i)
            scalar(code, 0, 1)  # deprecated_builtin_code
            scalar(code, 3, 4)  # builtin_code
        for s in range(min(model.SubgraphsLength(), 8)):
            sg = model.Subgraphs(s)
            vector(sg, 1, 4)  # inputs
            vector(sg, 2, 4)  # outputs
            for t in range(min(sg.TensorsLength(), 256)):
                tensor = sg.Tensors(t)
                vector(tensor, 0, 4)  # shape
                scalar(tensor, 1, 1)  # type
                scalar(tensor, 2, 4)  # buffer
            for o in range(min(sg.OperatorsLength(), 256)):
                op = sg.Operators(o)
                scalar(op, 0, 4)  # opcode_index
                vector(op, 1, 4)  # inputs
                vector(op, 2, 4)  # outputs
                scalar(op, 3, 1)  # builtin_options_type
    except Exception:
        pass
    return tuple(found)


def tflite_edit(data: bytes, a: int, b: int) -> bytes:
    """Overwrite one field the TFLite loader follows with an interesting value (unchanged when not TFLite)."""
    fields = _tflite_fields(data)
    if not fields:
        return data
    offset, size = fields[a % len(fields)]
    value = INTERESTING_INTS[b % len(INTERESTING_INTS)] & ((1 << (8 * size)) - 1)
    return data[:offset] + value.to_bytes(size, "little") + data[offset + size:]


def mutate(data: bytes, rng: random.Random, other: bytes = b"") -> bytes:
    """1–4 random mutations (position choices biased towards the start, where headers live)."""
    for _ in range(rng.choice((1, 1, 2, 3, 4))):
        n = max(len(data), 1)
        a = rng.randrange(min(n, 256)) if rng.random() < 0.3 else rng.randrange(n)
        blob = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 9)))
        data = apply(data, rng.choice(OPERATIONS), a, rng.randrange(1 << 30), blob, other)
    return data


# ---- targets ----------------------------------------------------------------------------------------------------


@dataclass
class Target:
    """A loader or reader with its seeds; ``run(path)`` raises whatever the code under test raises."""

    name: str
    seeds: list[payloads.Seed]
    run: Callable[[Path], None]
    extensions: set[str] = field(default_factory=set)
    examples: int | None = None  # at most this many inputs in the in-suite run (a child process each)


def _after_load(model) -> None:  # type: ignore[no-untyped-def]
    """What a render does with a freshly loaded model, short of Graphviz: ids, the annotations embedded in the
    model, built-in metrics (one that reads the weights, with the tensor-size cap), the DOT."""
    from renderer.annotations.embedded import from_model
    from renderer.annotations.merge import merge
    from renderer.compose.rendering import to_dot
    from renderer.core.options import RenderOptions
    from renderer.metrics import builtin as metrics

    annotations = merge(from_model(model), model)
    weighty = list(getattr(metrics, "EXPENSIVE_OP_METRICS", {}))
    color = "sparsity" if "sparsity" in weighty else (weighty[0] if weighty else None)
    to_dot(model, annotations, RenderOptions(color_by=color, edge_by="bytes", max_tensor_elements=1_000_000,
                                             show=["all"]))


def _load(module: ModuleType, path: Path) -> None:
    model = module.load(path)
    _downstream(lambda: _after_load(model))


@cache
def _reader_model(path: str):  # type: ignore[no-untyped-def]
    from renderer.loaders.registry import load_model

    return load_model(path)


def _read(module: ModuleType, path: Path) -> None:
    from renderer.annotations.merge import merge
    from renderer.compose.rendering import to_dot
    from renderer.core.options import RenderOptions

    model = _reader_model(str(payloads.reader_model(module)))
    result = module.read(path, model)

    def render() -> None:
        annotations = merge([result], model)
        metric = next(iter(annotations.metrics), None)
        to_dot(model, annotations, RenderOptions(color_by=metric, show=["all"]))

    _downstream(render)


class DownstreamError(Exception):
    """An AnnographError from the render steps after a successful load/read (need not name the file)."""


def _downstream(call: Callable[[], None]) -> None:
    from renderer.core.errors import AnnographError

    try:
        call()
    except AnnographError as e:
        raise DownstreamError(str(e)) from e


def targets() -> list[Target]:
    """One target per registered loader and reader, in registry order."""
    found = []
    for module in payloads.loader_modules():
        found.append(Target(f"loader-{module.FORMAT}", payloads.loader_seeds(module),
                            lambda path, m=module: _load(m, path)))
    for module in payloads.reader_modules():
        found.append(Target(f"reader-{module.NAME}", payloads.reader_seeds(module),
                            lambda path, m=module: _read(m, path)))
    for name, entry in payloads.registry.PATHS.items():
        found.append(Target(f"path-{name}", payloads.path_seeds(name), entry.run, examples=entry.examples))
    return found


# ---- running one input ------------------------------------------------------------------------------------------


class Hang(BaseException):
    """Raised by the alarm: a BaseException so that no ``except Exception`` in the code under test hides it."""


@contextlib.contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Raise Hang in the main thread after ``seconds`` (checked between Python bytecodes).

    A timer already running (pytest-timeout's, say) is put back afterwards with the time it had left.
    """

    def alarm(signum: int, _frame: object) -> None:
        raise Hang(f"still running after {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, alarm)
    started = time.monotonic()
    outer_delay, outer_interval = signal.setitimer(signal.ITIMER_REAL, seconds)
    if outer_delay and outer_delay < seconds:  # the outer deadline comes first: keep it
        signal.setitimer(signal.ITIMER_REAL, outer_delay)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if outer_delay:
            left = max(outer_delay - (time.monotonic() - started), 0.001)
            signal.setitimer(signal.ITIMER_REAL, left, outer_interval)


def check(target: Target, path: Path, timeout: float) -> tuple[str, str]:
    """Run ``target`` on ``path``: ("ok" | "error" | "downstream-error", message) or ("FAIL", details)."""
    from renderer.core.errors import AnnographError

    try:
        with time_limit(timeout):
            target.run(path)
    except Hang as e:
        return "FAIL", f"hang: {e}"
    except DownstreamError as e:
        message = str(e)
        if not message or "\n" in message:
            return "FAIL", f"render error message is not one line: {message!r}"
        return "downstream-error", message
    except AnnographError as e:
        message = str(e)
        if not message or "\n" in message or "\r" in message:
            return "FAIL", f"message is not one line: {message!r}"
        if path.name not in message:
            return "FAIL", f"message does not name the file: {message!r}"
        if "MemoryError" in message:
            return "FAIL", f"ran out of memory (reported as {message!r})"
        return "error", message
    except MemoryError:
        return "FAIL", "MemoryError\n" + traceback.format_exc()
    except RecursionError:
        return "FAIL", "RecursionError\n" + traceback.format_exc()[-3000:]
    except Exception:
        return "FAIL", traceback.format_exc()
    return "ok", ""


def make_input(all_targets: list[Target], seed: str, index: int) -> tuple[Target, str, bytes]:
    """Input ``index`` of run ``seed``: (target, file name, bytes). Reproducible on its own."""
    rng = random.Random(f"{seed}:{index}")
    target = all_targets[rng.randrange(len(all_targets))]
    base = target.seeds[rng.randrange(len(target.seeds))]
    other = target.seeds[rng.randrange(len(target.seeds))].data
    return target, base.name, mutate(base.data, rng, other)


def limit_memory(megabytes: int) -> None:
    if megabytes > 0:
        limit = megabytes * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


# ---- worker and coordinator -------------------------------------------------------------------------------------


def worker(args: argparse.Namespace) -> int:
    """Run inputs start, start + jobs, … below --inputs; report each on stdout as one JSON line."""
    all_targets = targets()
    for target in all_targets:  # load reader models before the memory limit and the clock start
        if target.name.startswith("reader-"):
            with contextlib.suppress(Exception):
                _reader_model(str(payloads.reader_model(_module_of(target))))
    limit_memory(args.memory_mb)
    folder = Path(args.work) / f"worker-{args.start % args.jobs}"
    folder.mkdir(parents=True, exist_ok=True)
    out = sys.stdout
    for index in range(args.start, args.inputs, args.jobs):
        try:
            target, name, data = make_input(all_targets, str(args.seed), index)
        except Exception:  # a bug of the harness, not of annograph: report it and go on
            out.write(json.dumps({"end": index, "target": "harness", "outcome": "harness-error",
                                  "message": traceback.format_exc()[-2000:]}) + "\n")
            out.flush()
            continue
        path = folder / name
        path.write_bytes(data)
        out.write(json.dumps({"begin": index, "target": target.name, "path": str(path)}) + "\n")
        out.flush()
        outcome, message = check(target, path, args.timeout)
        out.write(json.dumps({"end": index, "target": target.name, "outcome": outcome,
                              "message": message[:4000]}) + "\n")
        out.flush()
    return 0


def _module_of(target: Target) -> ModuleType:
    name = target.name.split("-", 1)[1]
    return next(m for m in payloads.reader_modules() if m.NAME == name)


@dataclass
class Worker:
    slot: int
    start: int
    last: int = -1
    process: subprocess.Popen | None = None
    buffer: bytes = b""
    current: dict | None = None
    since: float = 0.0


def coordinate(args: argparse.Namespace) -> int:
    crashes = Path(args.crashes)
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    counts: Counter[tuple[str, str]] = Counter()
    failures: dict[tuple[str, str], dict] = {}
    started = time.time()
    workers = [Worker(slot=k, start=k) for k in range(args.jobs)]
    done = 0
    last_report = started

    def spawn(w: Worker) -> None:
        command = [sys.executable, __file__, "--worker", "--start", str(w.start), "--jobs", str(args.jobs),
                   "--inputs", str(args.inputs), "--seed", str(args.seed), "--timeout", str(args.timeout),
                   "--memory-mb", str(args.memory_mb), "--work", str(work)]
        env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", PYTHONWARNINGS="ignore")
        w.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, cwd=ROOT)
        w.buffer, w.current, w.since = b"", None, time.time()

    def record_failure(w: Worker, entry: dict, message: str) -> None:
        index = entry.get("begin", entry.get("end"))
        key = (entry["target"], signature(message))
        group = failures.setdefault(key, {"target": key[0], "signature": key[1], "count": 0, "inputs": [],
                                          "message": last_line(message)})
        group["count"] += 1
        if len(group["inputs"]) >= SAVED_PER_SIGNATURE:
            return
        crashes.mkdir(parents=True, exist_ok=True)
        source = Path(entry["path"])
        saved = crashes / f"{entry['target']}-{index}{source.suffix}"
        with contextlib.suppress(OSError):
            saved.write_bytes(source.read_bytes())
        saved.with_name(saved.name + ".txt").write_text(
            f"target: {entry['target']}\ninput: {index} (--seed {args.seed}; replay with --replay {index})\n"
            f"seed file name: {source.name}\n\n{message}\n", encoding="utf-8")
        group["inputs"].append(index)

    for w in workers:
        spawn(w)
    while any(w.process is not None for w in workers):
        streams = {w.process.stdout.fileno(): w for w in workers if w.process is not None}  # type: ignore[union-attr]
        ready, _, _ = select.select(list(streams), [], [], 1.0)
        for fd in ready:
            w = streams[fd]
            chunk = os.read(fd, 65536)
            if not chunk:  # the worker exited
                code = w.process.wait()  # type: ignore[union-attr]
                if w.current is not None:  # it died inside an input: a crash or the memory limit
                    counts[(w.current["target"], "FAIL")] += 1
                    done += 1
                    record_failure(w, w.current, f"worker died (exit status {code}) while running this input")
                    w.last = w.current["begin"]
                    w.start = w.last + args.jobs
                    spawn(w)
                elif code != 0 and w.last + args.jobs < args.inputs:  # died between inputs: a harness bug
                    counts[("harness", "worker-died")] += 1
                    print(f"worker {w.slot} exited with status {code} after input {w.last}; restarting", flush=True)
                    w.start = max(w.last + args.jobs, w.start)
                    w.last = w.start - args.jobs  # so a worker that dies at once cannot loop for ever
                    spawn(w)
                else:
                    w.process = None
                continue
            w.buffer += chunk
            *lines, w.buffer = w.buffer.split(b"\n")
            for line in lines:
                entry = json.loads(line)
                if "begin" in entry:
                    w.current, w.since = entry, time.time()
                    continue
                counts[(entry["target"], entry["outcome"])] += 1
                done += 1
                w.last = entry["end"]
                if entry["outcome"] == "FAIL":
                    record_failure(w, w.current or entry, entry["message"])
                w.current = None
        now = time.time()
        for w in workers:  # a hang in native code never returns to the alarm: kill the worker
            if w.process is not None and w.current is not None and now - w.since > args.timeout * 3 + 5:
                w.process.kill()
                w.process.wait()
                counts[(w.current["target"], "FAIL")] += 1
                done += 1
                record_failure(w, w.current, f"hang: killed after {now - w.since:.0f} s")
                w.start = w.current["begin"] + args.jobs
                spawn(w)
        if now - last_report > 30:
            last_report = now
            rate = done / (now - started)
            failed = sum(g["count"] for g in failures.values())
            print(f"[{now - started:7.0f} s] {done}/{args.inputs} inputs, {rate:.0f}/s, {failed} failures", flush=True)
    elapsed = time.time() - started
    failed = sum(g["count"] for g in failures.values())
    summary = {
        "inputs": done, "seconds": round(elapsed, 1), "jobs": args.jobs, "seed": args.seed,
        "per_target": {t: {o: n for (tt, o), n in sorted(counts.items()) if tt == t}
                       for t in sorted({t for t, _ in counts})},
        "failures": sorted(failures.values(), key=lambda g: -g["count"]),
    }
    print(json.dumps(summary, indent=1))
    print(f"{done} inputs in {elapsed / 60:.1f} min ({done / max(elapsed, 1e-9):.0f}/s), {failed} failures "
          f"of {len(failures)} kinds")
    harness_problems = sum(n for (t, _), n in counts.items() if t == "harness")
    if done < args.inputs or harness_problems:
        print(f"harness problems: {args.inputs - done} inputs not run, {harness_problems} harness errors")
        return 2
    return 1 if failures else 0


def signature(message: str) -> str:
    """What tells failures apart: the exception type and the innermost frame of our code, or the message start."""
    lines = message.strip().splitlines()
    frames = [ln.strip() for ln in lines if ln.strip().startswith("File ")]
    ours = [f for f in frames if "/renderer/" in f] or frames
    if ours:
        where = ours[-1].replace(str(ROOT) + "/", "")
        return f"{lines[-1].split(':', 1)[0]} at {where}"
    return lines[0][:80] if lines else "?"


def last_line(message: str) -> str:
    lines = message.strip().splitlines()
    return lines[-1][:300] if lines else ""


def replay(args: argparse.Namespace) -> int:
    all_targets = targets()
    target, name, data = make_input(all_targets, str(args.seed), args.replay)
    folder = Path(args.work) / "replay"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_bytes(data)
    limit_memory(args.memory_mb)
    outcome, message = check(target, path, args.timeout)
    print(f"input {args.replay}: {target.name} on {path} ({len(data)} bytes): {outcome}\n{message}")
    return 1 if outcome == "FAIL" else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--inputs", type=int, default=100_000, help="inputs in total (default 100000)")
    parser.add_argument("--jobs", type=int, default=2, help="worker processes (default 2)")
    parser.add_argument("--seed", default="1", help="run seed: the same seed gives the same inputs")
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds one input may take (default 10)")
    parser.add_argument("--memory-mb", type=int, default=3072, help="address-space limit per worker (default 3072)")
    parser.add_argument("--crashes", default=str(ROOT / "fuzz" / "crashes"), help="where failing inputs go")
    parser.add_argument("--work", default="/tmp/annograph-fuzz", help="scratch folder for the inputs")
    parser.add_argument("--replay", type=int, metavar="N", help="regenerate input N of --seed and run it once")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--start", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        return worker(args)
    if args.replay is not None:
        return replay(args)
    return coordinate(args)


if __name__ == "__main__":
    sys.exit(main())
