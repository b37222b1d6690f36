"""What the fuzz and injection tests (and ``fuzz/harness.py``) know about each loader and annotation reader.

The package registries (``renderer.loaders.registry.LOADERS``, ``renderer.annotations.registry.READERS``) say
which modules exist; this one says how to test them, and lives on the test side so that shipped modules carry no
test hooks.
``test_registry.py`` checks that every module in the package registries has an entry here.

Per loader (``LOADERS``, keyed by the module's name in ``renderer.loaders.registry.LOADERS``):

``seeds``
    Extra fuzz seeds: paths relative to the repository root (glob patterns allowed), or a callable taking no
    arguments that returns ``(file name, bytes)`` pairs. Use it when the samples do not show the format or
    the interesting corners of it.

Per extra output (``OUTPUTS``, outputs an option other than ``-o`` writes): see ``OutputEntry``.

Per reader (``READERS``, keyed by the module's name in ``renderer.annotations.registry.READERS``), ``seeds`` as
above and:

``model``
    Path, relative to the repository root, of the sample model that the reader's seed files refer to (their
    ids, node names).

``hostile``
    A callable ``(kind: str, size: int) -> (file name, bytes)``: a real file of the reader's format made hostile in
    one way, for each of ``HOSTILE_KINDS`` (issue 31): ``overflow`` (a number past the float range), ``sum_overflow``
    (finite figures of one operator adding up past it), ``negative`` (a negative time or cycle count), ``nan``
    (NaN where a number goes), ``huge_line`` (one line, or entry, of ``size`` characters), ``many_records``
    (``size`` layers or rows for the small model). The fuzz tests check each is refused in one line naming the
    file, or read with every value finite and not negative, within bounded memory; ``benchmarks/bench_bounds.py``
    prints their peak memory at full size.

``inject``
    A callable ``(text: str) -> (file name, bytes)`` returning a file in the reader's format that carries
    ``text`` in every field a user could control (ids, names, keys, values). The injection tests render it
    and check the outputs. Only the generic fallback has none: its syntaxes are injected by
    ``payloads.annotation_file`` directly.

Per command that writes outputs of its own (``COMMANDS``, keyed by its name in ``renderer.commands.cli.COMMANDS``): how
the injection tests run it with hostile input, and which runs would write over an input (``CommandEntry``).

Per command path (``PATHS``): hostile input that reaches code other than a loader's or reader's own file (the
``--dim`` values, the onnxruntime shape run, the embedders, a diff's after side). ``run`` takes a (seed or
mutated) file and runs the command on it in this process, ``seeds`` as above, and ``examples`` caps the
in-suite fuzz run for paths that start a child process per input.
"""

from __future__ import annotations

import atexit
import contextlib
import csv
import io
import json
import re
import shutil
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

DEFAULT_READER_MODEL = "samples/onnx/tiny_cnn.onnx"

Seeds = Sequence[str] | Callable[[], list[tuple[str, bytes]]]


@dataclass(frozen=True)
class LoaderEntry:
    seeds: Seeds = ()


@dataclass(frozen=True)
class ReaderEntry:
    model: str = DEFAULT_READER_MODEL
    inject: Callable[[str], tuple[str, bytes]] | None = None
    seeds: Seeds = ()
    hostile: Callable[[str, int], tuple[str, bytes]] | None = None


HOSTILE_KINDS = ("overflow", "sum_overflow", "negative", "nan", "huge_line", "many_records")


@dataclass(frozen=True)
class OutputEntry:
    """An output written by an option of ``annograph render`` other than ``-o``: ``args(path)`` are the
    command-line arguments writing it to ``path``; ``fmt`` is the output format its bytes are checked as
    (``payloads.check_output``)."""

    args: Callable[[str], list[str]]
    fmt: str
    suffix: str


# ---- injection files, one per tool format ---------------------------------------------------------------------


def _ort_profile(text: str) -> tuple[str, bytes]:
    """A one-event-per-line profile: a kernel event of node ``text``, ``text`` in its args; one run."""
    args = {"op_name": text, "provider": text, "node_index": "0", "output_size": "16",
            "activation_size": "16", "parameter_size": "0", "output_type_shape": [{text: [1, 4]}]}
    common = {"pid": 1, "tid": 1, "ts": 1, "ph": "X"}
    events = [{**common, "cat": "Session", "name": "session_initialization", "dur": 100, "args": {}},
              {**common, "cat": "Node", "name": f"{text}_kernel_time", "dur": 5, "args": args},
              {**common, "cat": "Session", "name": "model_run", "dur": 10, "args": {}}]
    lines = ",\n".join(json.dumps(event, ensure_ascii=False) for event in events)
    return "ort_profile.json", f"[\n{lines}\n]\n".encode()


def _tflite_benchmark(text: str) -> tuple[str, bytes]:
    """Regular-run rows naming ``text`` as an output tensor and as a custom op's type (the hostile TFLite
    model's operators 0 and 2). The tables are tab- and line-based, as benchmark_model writes them: tabs and
    line breaks in ``text`` become spaces, as no real row could hold them."""
    from renderer.annotations.readers.tflite_benchmark import REGULAR

    flat = " ".join(text.replace("\t", " ").splitlines()) or "Custom"
    header = "\t".join(["[node type]", "[start]", "[first]", "[avg ms]", "[%]", "[cdf%]", "[mem KB]",
                        "[times called]", "[Name]"])
    rows = [["RELU", "0.000", "0.010", "0.010", "50.000%", "50.000%", "0.000", "1", f"[{flat}]:0"],
            [flat, "0.010", "0.010", "0.010", "50.000%", "100.000%", "0.000", "1", f"[{flat}·out]:2"]]
    lines = [f"{REGULAR}:", "============================== Run Order ==============================",
             "\t" + header, *["\t" + "\t".join(row) for row in rows], ""]
    return "benchmark.txt", "\n".join(lines).encode()


def _flat(text: str) -> str:
    """``text`` on one line, for the line-based formats (no real row could hold a line break)."""
    return " ".join(text.splitlines())


def _vela(text: str) -> tuple[str, bytes]:
    """Vela 5's per-layer CSV (unquoted, as regor writes it) for the hostile TFLite model: an NPU row named by
    operator 0's output ``text``, a CPU row by operator 1's output, an unmatched row; ``text`` as the operator
    types too, without commas there (Vela's type names have none, and only the last cell, the name, may)."""
    flat = _flat(text)
    kind = flat.replace(",", " ")
    header = ("Original Operator,NNG Operator,Target,Staging Usage,Peak% (Staging),Op Cycles,Network% (cycles),NPU,"
              "SRAM AC,DRAM AC,OnFlash AC,OffFlash AC,MAC Count,Network% (MAC),Util% (MAC),Name")
    rows = [f"{kind},{kind},NPU,64,50.0,120,60.0,100,20,0,0,0,16,100.0,6.7,{flat}",
            f"Add,Passthrough,CPU,0,0.0,0,0.0,0,0,0,0,0,0,0.0,100,{flat}·add",
            f"{kind},Mul,NPU,64,50.0,80,40.0,80,10,0,0,0,0,0.0,0.0,{flat}·missing"]
    return "model_per-layer.csv", "\n".join([header, *rows, ""]).encode()


def _openvino(text: str) -> tuple[str, bytes]:
    """A detailed-counters report: ``text`` as the Relu's layer name, type and kernel, the Add not run, an
    inserted layer named after ``text``, and the Total row; two request tables. Only the name, the first
    cell, may hold a ``;`` (the types are the plugin's words)."""
    flat = _flat(text)
    kind = flat.replace(";", " ")
    table = ["layerName;execStatus;layerType;execType;realTime (ms);cpuTime (ms)",
             f"{flat};Status.EXECUTED;{kind};{kind};0.012;0.011",
             f"{flat}·add;Status.NOT_RUN;Add;undef;0.000;0.000",
             f"{flat}_abcd_acdb;Status.EXECUTED;Reorder;jit_uni_bf16;0.002;0.002",
             "Total;;;;0.014;0.013", ""]
    return "benchmark_detailed_counters_report.csv", "\n".join(table * 2).encode()


def _openvino_exec_graph(text: str) -> tuple[str, bytes]:
    """An execution graph: a Conv-like layer named ``text`` built from the nodes ``text`` and ``text·add``
    (``text`` as its type and kernel too), an inserted reorder, the input. Characters XML 1.0 cannot hold are
    left out, as any XML writer must."""
    from xml.sax.saxutils import quoteattr

    clean = "".join(c for c in text if c in "\t\n\r" or ("\x20" <= c <= "\ud7ff") or ("\ue000" <= c <= "\ufffd")
                    or c >= "\U00010000")

    def layer(index: int, name: str, kind: str, micros: str, originals: str) -> str:
        return (f'<layer id="{index}" name={quoteattr(name)} type={quoteattr(kind)}><data execOrder="{index}" '
                f'execTimeMcs={quoteattr(micros)} originalLayersNames={quoteattr(originals)} '
                f'primitiveType={quoteattr(clean)} runtimePrecision="f32" /></layer>')

    layers = [layer(0, clean + "·in", "Input", "not_executed", clean + "·in"),
              layer(1, clean, clean or "Convolution", "12", f"{clean},{clean}·add"),
              layer(2, clean + "_abcd_acdb", "Reorder", "3", "")]
    return "exec_graph.xml", ('<?xml version="1.0"?>\n<net name="hostile" version="11">\n<layers>\n'
                              + "\n".join(layers) + "\n</layers>\n<edges />\n</net>\n").encode()


def _tensorrt(text: str) -> tuple[str, bytes]:
    """A trtexec profile: a layer fused from the nodes ``text`` and ``text·add``, the custom node's layer,
    and an inserted reformat named after ``text``."""
    layers = [{"name": f"{text} + {text}·add", "timeMs": 12.5, "averageMs": 0.0125, "medianMs": 0.012,
               "percentage": 60.0},
              {"name": f"PWN({text}·custom)", "timeMs": 5.0, "averageMs": 0.005, "medianMs": 0.005, "percentage": 24.0},
              {"name": f"Reformatting CopyNode for Input Tensor 0 to {text}", "timeMs": 3.3, "averageMs": 0.0033,
               "medianMs": 0.0033, "percentage": 16.0}]
    lines = ['  { "count" : 1000 }', *[", " + json.dumps(layer, ensure_ascii=False) for layer in layers]]
    return "profile.json", ("[\n" + "\n".join(lines) + "\n]\n").encode()


def _tflite_quant_debug(text: str) -> tuple[str, bytes]:
    """Rows with op type and tensor name ``text`` (the second names the hostile models' custom operator's
    output), ``text`` as a value and as a direct-compare metric's name (one line of at most 200 characters:
    ``match`` must see the whole header in the file's first 4 KiB)."""
    out = io.StringIO()
    writer = csv.writer(out)
    metric = " ".join(text.splitlines())[:200] or "x"
    writer.writerow(["op_name", "tensor_idx", "num_elements", "stddev", "mean_error", "max_abs_error",
                     "mean_squared_error", metric, "scale", "zero_point", "tensor_name"])
    writer.writerow([text, "1", "4", "0.1", "0.01", "0.2", "0.001", text, "0.5", "0", text])
    writer.writerow([text, "4", "4", "0.1", "0.01", "0.2", "0.001", "1.5", "0.5", "0", text + "·out"])
    return "layer_stats.csv", out.getvalue().encode()


def _ort_qdq_loss(text: str) -> tuple[str, bytes]:
    """Results for activation ``text`` and weight ``text·w`` (the hostile models' names), models ``text``."""
    from renderer.annotations.readers.ort_qdq_loss import FORMAT_MARKER

    doc = {"format": FORMAT_MARKER, "float_model": text, "qdq_model": text,
           "activations": {text: {"qdq_err": 30.5, "xmodel_err": 28.0}, text + "·out": 12.0},
           "weights": {text + "·w": 40.0}}
    return "qdq_loss.json", json.dumps(doc, ensure_ascii=False).encode()


def _onnx_tool_csv(text: str) -> tuple[str, bytes]:
    """A profile with a row named and typed ``text``, ``text`` as its shapes, and a Total row."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["Name", "Type", "Forward_MACs", "FPercent", "Memory", "MPercent", "Params", "PPercent",
                     "InShape", "OutShape"])
    writer.writerow([text, text, "100", "100.00%", "64", "100.00%", "4", "100.00%", text, text])
    writer.writerow(["Total", "_", "100", "100%", "64", "100%", "4", "100%", "_", "_"])
    return "onnx_tool.csv", out.getvalue().encode()


def _netron_attachment(text: str) -> tuple[str, bytes]:
    """Items of every kind with target, name and value ``text`` (a node and tensor of the hostile models)."""
    from renderer.annotations.readers.netron_attachment import SIGNATURE

    items = [{"kind": kind, "target": "" if kind == "model" else text, "name": text, "value": text}
             for kind in ("model", "graph", "node", "value")]
    metrics = [{"kind": "node", "target": text, "name": "netron_ms", "value": 2.5},
               {"kind": "node", "identifier": 1, "name": text, "value": 1.5},
               {"kind": "tensor", "target": text, "name": text, "value": {text: [text]}}]
    doc = {"signature": SIGNATURE, "metadata": items, "metrics": metrics}
    return "attachment.json", json.dumps(doc, ensure_ascii=False).encode()


def _model_explorer(text: str) -> tuple[str, bytes]:
    """Node data for graph ``text`` (after a graph "main", so that ``match`` sees "results" in the head):
    metric ``text``, result keys, a string value and colours ``text``."""
    body = {"results": {text: {"value": 1.5, "bgColor": text, "textColor": text}, "1": {"value": text}},
            "name": text, "thresholds": [{"value": 1, "bgColor": text}],
            "gradient": [{"stop": 0, "bgColor": text}]}
    return "node_data.json", json.dumps({"main": body, text: body}, ensure_ascii=False).encode()


# ---- hostile files of the tool formats (issue 31: numbers, line lengths, record counts) -------------------------

_FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
_HUGE = "9" * 4000  # past 1.8e308 (and close to Python's 4,300-digit limit for int())
_BIG = "1.7e308"  # finite; two of them are not


def _hostile_vela(kind: str, size: int) -> tuple[str, bytes]:
    """Vela 5's per-layer CSV of tiny_keras_int8_asymmetric with its Op Cycles column made hostile. Its rows 2 and 3
    are one Conv2D (Conv2D, then its fused Relu): their figures add up on one operator."""
    lines = (_FIXTURES / "vela" / "tiny_keras_int8_asymmetric_per-layer.csv").read_text().splitlines()
    column = lines[0].split(",").index("Op Cycles")

    def cycles(row: int, value: str) -> None:
        cells = lines[row].split(",", 15)
        cells[column] = value
        lines[row] = ",".join(cells)

    if kind == "overflow":
        cycles(2, _HUGE)
    elif kind == "sum_overflow":
        cycles(2, _BIG)
        cycles(3, _BIG)
    elif kind == "negative":
        cycles(2, "-5")
    elif kind == "nan":
        for row in range(1, len(lines)):
            cycles(row, "NaN")
    elif kind == "huge_line":
        lines[2] += "x" * size  # in the name: the last cell
    elif kind == "many_records":
        lines += [lines[2]] * size
    return "hostile_per-layer.csv", ("\n".join(lines) + "\n").encode()


def _hostile_openvino(kind: str, size: int) -> tuple[str, bytes]:
    """tiny_cnn's detailed counters with the realTime of its first executed layer made hostile (in both request
    tables for ``sum_overflow``: the mean adds them)."""
    lines = (_FIXTURES / "openvino" / "tiny_cnn.benchmark_detailed_counters_report.csv").read_text().splitlines()
    timed = [n for n, line in enumerate(lines) if ";Status.EXECUTED;" in line or ";EXECUTED;" in line]

    def real_time(row: int, value: str) -> None:
        cells = lines[row].split(";")
        cells[4] = value
        lines[row] = ";".join(cells)

    if kind in ("overflow", "negative", "nan"):
        real_time(timed[0], {"overflow": _HUGE, "negative": "-5", "nan": "nan"}[kind])
    elif kind == "sum_overflow":
        name = lines[timed[0]].split(";")[0]
        for row in timed:
            if lines[row].split(";")[0] == name:
                real_time(row, _BIG)
    elif kind == "huge_line":
        lines[timed[0]] = "x" * size + lines[timed[0]]
    elif kind == "many_records":
        inserted = [f"inserted_{n};Status.EXECUTED;Reorder;ref;0.001;0.001" for n in range(size)]
        lines[timed[0] + 1:timed[0] + 1] = inserted
    return "hostile.benchmark_detailed_counters_report.csv", ("\n".join(lines) + "\n").encode()


def _hostile_exec_graph(kind: str, size: int) -> tuple[str, bytes]:
    """tiny_cnn's execution graph with the execTimeMcs of its first timed layer made hostile (for ``sum_overflow``
    that layer twice: both times land on its first node)."""
    text = (_FIXTURES / "openvino" / "tiny_cnn.exec_graph.xml").read_text()
    layers = re.findall(r"\t\t<layer .*?</layer>\n", text, re.S)
    first = next(layer for layer in layers if 'type="Convolution"' in layer and re.search(r'execTimeMcs="\d', layer))
    timed = re.sub(r'execTimeMcs="[^"]*"', 'execTimeMcs="{}"', first)
    if kind in ("overflow", "negative", "nan"):
        text = text.replace(first, timed.format({"overflow": _HUGE, "negative": "-5", "nan": "NaN"}[kind]))
    elif kind == "sum_overflow":
        text = text.replace(first, timed.format(_BIG) * 2)
    elif kind == "huge_line":
        text = text.replace(first, first.replace('runtimePrecision="', 'runtimePrecision="' + "x" * size, 1))
    elif kind == "many_records":
        text = text.replace(first, first + "".join(first.replace(' name="', f' name="copy{n}_', 1)
                                                   for n in range(size)))
    return "hostile.exec_graph.xml", text.encode()


def _hostile_tensorrt(kind: str, size: int) -> tuple[str, bytes]:
    """tiny_cnn's trtexec profile (one layer a line, as trtexec writes it) with the averageMs of its first mapped
    layer made hostile (for ``sum_overflow`` that layer twice: both land on its first node)."""
    entries = json.loads((_FIXTURES / "tensorrt" / "tiny_cnn.profile.json").read_text())
    lines = [json.dumps(entry) for entry in entries]
    first = 2  # entry 1 is a reformatting layer TensorRT inserted

    def average(value: str) -> str:
        return re.sub(r'"averageMs": [^,}]*', f'"averageMs": {value}', lines[first])

    if kind in ("overflow", "negative", "nan"):
        lines[first] = average({"overflow": _HUGE, "negative": "-5", "nan": "NaN"}[kind])
    elif kind == "sum_overflow":
        lines[first:first + 1] = [average(_BIG)] * 2
    elif kind == "huge_line":
        lines[first] = lines[first].replace('"name": "', '"name": "' + "x" * size, 1)
    elif kind == "many_records":
        lines[first:first] = [json.dumps({"name": f"copy{n}", "timeMs": 1, "averageMs": 0.001}) for n in range(size)]
    return "hostile.profile.json", ("[\n  " + "\n, ".join(lines) + "\n]\n").encode()


def _etdump(text: str) -> tuple[str, bytes]:
    """An ETDump of the hostile ExecuTorch program (``executorch_build``): runs, a kernel event and a delegated
    event named ``text``, an event of an instruction the program has not."""
    from executorch_build import hostile_etdump

    return "hostile.etdp", hostile_etdump(text)


def _hostile_etdump(kind: str, size: int) -> tuple[str, bytes]:
    """An ETDump of the hostile program whose figures are made hostile. Its times are integers (ns): past the
    float range cannot be written, so ``overflow`` and ``sum_overflow`` take the largest (2⁶⁴ - 1), ``nan`` ends
    where it starts, ``negative`` ends before it starts (past a 32-bit timer's wrap, so it cannot have wrapped)."""
    from executorch_build import hostile_etdump

    top = 2**64 - 1
    spans = {"overflow": lambda run, n: (0, top), "sum_overflow": lambda run, n: (0, top - run),
             "negative": lambda run, n: (2**40, 2**40 - 5), "nan": lambda run, n: (7, 7)}
    if kind == "huge_line":
        return "hostile.etdp", hostile_etdump("x" * size)
    if kind == "many_records":
        return "hostile.etdp", hostile_etdump("x", extra=size)
    return "hostile.etdp", hostile_etdump("x", times=spans[kind])


def _hostile_ort(kind: str, size: int) -> tuple[str, bytes]:
    """An onnxruntime profile of tiny_cnn (one event a line, two runs) with the first node's dur made hostile
    (twice in one run for ``sum_overflow``: a node's events of one run add up)."""
    import onnx

    graph = onnx.load(Path(__file__).resolve().parents[2] / DEFAULT_READER_MODEL, load_external_data=False).graph
    common = {"pid": 1, "tid": 1, "ts": 1, "ph": "X"}

    def event(node: Any, dur: str) -> str:
        text = json.dumps({**common, "cat": "Node", "name": f"{node.name}_kernel_time", "dur": 0,
                           "args": {"op_name": node.op_type}})
        return text.replace('"dur": 0', f'"dur": {dur}')

    run = [event(node, "5") for node in graph.node]
    first = graph.node[0]
    if kind in ("overflow", "negative", "nan"):
        run[0] = event(first, {"overflow": _HUGE, "negative": "-5", "nan": "NaN"}[kind])
    elif kind == "sum_overflow":
        run[:1] = [event(first, _BIG)] * 2
    elif kind == "huge_line":
        run[0] = run[0].replace(f'"{first.name}_kernel_time"', f'"{first.name}{"x" * size}_kernel_time"')
    elif kind == "many_records":
        run += [json.dumps({**common, "cat": "Node", "name": f"copy{n}_kernel_time", "dur": 1}) for n in range(size)]
    marker = json.dumps({**common, "cat": "Session", "name": "model_run", "dur": 100, "args": {}})
    return "hostile_ort_profile.json", ("[\n" + ",\n".join([*run, marker, *run, marker]) + "\n]\n").encode()


def _hostile_tflite_benchmark(kind: str, size: int) -> tuple[str, bytes]:
    """benchmark_model's op profile of tiny_keras_float with the [avg ms] of its first Run Order row made hostile
    (1.7e308 ms for ``sum_overflow``: finite, but past a float once in µs)."""
    lines = (_FIXTURES / "tflite_benchmark" / "tiny_keras_float.benchmark_model.cpu.txt").read_text().splitlines()
    regular = next(n for n, line in enumerate(lines) if line.startswith("Operator-wise Profiling Info for Regular"))
    first = next(n for n, line in enumerate(lines) if n > regular and line.lstrip().startswith("[node type]")) + 1

    def average(value: str) -> None:
        cells = lines[first].split("\t")
        cells[4] = value
        lines[first] = "\t".join(cells)

    if kind in ("overflow", "negative", "nan", "sum_overflow"):
        average({"overflow": _HUGE, "negative": "-5", "nan": "nan", "sum_overflow": _BIG}[kind])
    elif kind == "huge_line":
        lines[first] = lines[first].replace("[", "[" + "x" * size, 1)
    elif kind == "many_records":
        lines[first + 1:first + 1] = [lines[first]] * size
    return "hostile.benchmark_model.txt", ("\n".join(lines) + "\n").encode()


# ---- commands that write pictures and reports of their own ---------------------------------------------------


def _diff_inject(text: str, folder: Path) -> tuple[list[str], list[Path]]:
    """``diff`` of two copies of the hostile ONNX model (operators paired by their hostile names) with hostile
    annotation files, the metric and --title named ``text`` too; every picture format and the summary."""
    import payloads as P

    before_model = P.hostile_onnx(text, folder / "before.onnx")
    after_model = folder / "after.onnx"
    after_model.write_bytes(before_model.read_bytes())
    metric = P.for_cli(text).strip() or "latency_ms"  # the same name in the files and on the command line
    sides = []
    for side, values in (("before", (2.0, 1.0)), ("after", (3.0, 0.5))):
        doc = {"graph": {"title": text, "meta": {text or "k": text}}, "metrics": {metric: {"unit": text}},
               "operators": [{"id": text, "meta": {metric: values[0], "note": text}},
                             {"id": text + "·add", "meta": {metric: values[1]}}]}
        path = folder / f"{side}.json"
        path.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
        sides.append(path)
    outputs = [folder / f"diff.{ext}" for ext in ("svg", "html", "md", "dot")] + [folder / "summary.md"]
    argv = ["diff", str(before_model), str(after_model), "--before", str(sides[0]), "--after", str(sides[1]),
            f"--metric={metric}", f"--title={P.for_cli(text)}", "--fail-above", "10%", "-q",
            *[a for o in outputs[:-1] for a in ("-o", str(o))], "--summary", str(outputs[-1])]
    return argv, outputs


def _diff_over_input(folder: Path) -> dict[str, tuple[list[str], Path]]:
    model = folder / "m.onnx"
    model.write_bytes(Path(__file__).resolve().parents[2].joinpath(DEFAULT_READER_MODEL).read_bytes())
    before, after = folder / "before.yaml", folder / "after.yaml"
    before.write_text("operators:\n  - {id: stem/conv, latency_us: 10}\n", encoding="utf-8")
    after.write_text("operators:\n  - {id: stem/conv, latency_us: 15}\n", encoding="utf-8")
    common = ["diff", str(model), "--before", str(before), "--after", str(after), "--metric", "latency_us"]
    profile, layers = _tensorrt_pair(folder)
    (folder / "layers.md").symlink_to(layers)
    return {
        "diff-summary-over-layer-info": (["diff", str(model), "--before", str(profile), "--after", str(profile), "-o",
                                          str(folder / "d.dot"), "--summary", str(folder / "layers.md")], layers),
        "diff-picture-over-after": ([*common, "-o", str(after)], after),
        "diff-summary-over-before": ([*common, "-o", str(folder / "d.svg"), "--summary", str(before)], before),
        "diff-picture-over-model": ([*common, "-o", str(folder / "x.svg"), "-o", str(folder / "./m.onnx")], model),
        "diff-two-models-over-before-model": (["diff", str(model), str(model), "--metric", "macs", "-o",
                                               str(model)], model),
    }


def _tensorrt_pair(folder: Path) -> tuple[Path, Path]:
    """A TensorRT profile of tiny_cnn and the layer information its reader finds beside it (issue 31)."""
    fixtures = Path(__file__).resolve().parents[1] / "fixtures" / "tensorrt"
    for name in ("tiny_cnn.profile.json", "tiny_cnn.layers.json"):
        (folder / name).write_bytes((fixtures / name).read_bytes())
    return folder / "tiny_cnn.profile.json", folder / "tiny_cnn.layers.json"


def _batch_inject(text: str, folder: Path) -> tuple[list[str], list[Path]]:
    """``batch`` of the hostile ONNX model twice under one file name (``a/m.onnx``, ``b/m.onnx``: names by path
    hash) with a run file whose metric, values and ids are ``text``; the pictures and the contact sheet."""
    import payloads as P
    from renderer.batch.job import _file_name, model_prefixes

    models = []
    for side in ("a", "b"):
        (folder / side).mkdir()
        models.append(str(P.hostile_onnx(text, folder / side / "m.onnx")))
    metric = P.for_cli(text).strip() or "latency_ms"
    doc = {"graph": {"title": text}, "operators": [{"id": text, "meta": {metric: 2.0, "note": text}},
                                                   {"id": text + "·add", "meta": {metric: 0.5}}]}
    run = folder / "run.json"
    run.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    out = folder / "out"
    pictures = [out / _file_name(prefix, 0, str(run), metric, set()) for prefix in model_prefixes(models)]
    argv = ["batch", *models, "-a", str(run), f"--color-by={metric}", "-q", "--jobs", "1", "-o", str(out)]
    return argv, [*pictures, out / "index.html"]


def _batch_over_input(folder: Path) -> dict[str, tuple[list[str], Path]]:
    model = folder / "m.onnx"
    model.write_bytes(Path(__file__).resolve().parents[2].joinpath(DEFAULT_READER_MODEL).read_bytes())
    notes = "operators:\n  - {id: stem/conv, latency_us: 10}\n"
    first, second = folder / "out1", folder / "out2"
    first.mkdir()
    second.mkdir()
    index = first / "index.html"  # an annotation file named index.html, in the output folder
    index.write_text(notes, encoding="utf-8")
    run = folder / "run.yaml"
    run.write_text(notes, encoding="utf-8")
    (second / "000_run.latency_us.svg").symlink_to(run)  # a picture's name, linked to the run it draws
    common = ["batch", str(model), "--color-by", "latency_us"]
    from renderer.batch.job import _file_name

    profile, layers = _tensorrt_pair(folder)
    third = folder / "out3"
    third.mkdir()
    (third / _file_name("", 0, str(profile), "average_ms", set())).symlink_to(layers)
    return {
        "batch-picture-over-layer-info": (["batch", str(model), "-a", str(profile), "--color-by", "average_ms", "-o",
                                           str(third)], layers),
        "batch-index-over-run": ([*common, "-a", str(index), "-o", str(first)], index),
        "batch-picture-over-run": ([*common, "-a", str(run), "-o", str(second)], run),
    }


# ---- command paths --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PathEntry:
    run: Callable[[Path], None]
    seeds: Seeds = ()
    examples: int | None = None


def command(path: Path, argv: list[str], output: Path) -> str:
    """``annograph argv`` in this process, fed by the file at ``path``: its stderr when it wrote ``output``; an
    AnnographError naming ``path`` (with the command's error) when it failed cleanly, exit status 1 with the
    error on one line; AssertionError for anything else (exit status 2, "internal error", a traceback, exit 0
    without the output)."""
    from renderer.commands.cli import main
    from renderer.core.errors import AnnographError

    output.unlink(missing_ok=True)
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as e:  # argparse
            code = e.code if isinstance(e.code, int) else 1
    text = err.getvalue()
    assert "Traceback" not in text and "internal error" not in text and "out of memory" not in text, text
    if code == 0:
        assert output.is_file() and output.stat().st_size, f"exit status 0 without {output.name}: {text}"
        return text
    lines = text.splitlines()
    assert code in (1, 2) and lines and lines[-1].startswith("annograph: error: "), f"exit status {code}: {text}"
    raise AnnographError(f"{path}: {lines[-1]}")


@cache
def _scratch() -> Path:
    """One folder per process for the paths' outputs (each run replaces the last one's), removed at exit."""
    folder = Path(tempfile.mkdtemp(prefix="annograph-path-"))
    atexit.register(shutil.rmtree, folder, True)
    return folder


@cache
def dims_model() -> Path:
    """A small detector (stride-2 Conv + Relu ×2 on a batch×3×height×width input) whose value_info carries the
    derived dims exporters write (``floor(height/2 - 1/2) + 1``), as onnxruntime's symbolic inference would, and
    a MatMul head on a static input."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    nodes, weights, infos, x = [], [], [], "images"
    h, w = "height", "width"
    for i, (cin, cout) in enumerate(((3, 8), (8, 8))):
        weights.append(numpy_helper.from_array(rng.standard_normal((cout, cin, 3, 3)).astype(np.float32), f"c{i}.w"))
        nodes.append(helper.make_node("Conv", [x, f"c{i}.w"], [f"c{i}"], name=f"conv{i}", strides=[2, 2],
                                      pads=[1, 1, 1, 1], kernel_shape=[3, 3]))
        h, w = f"floor({h}/2 - 1/2) + 1", f"floor({w}/2 - 1/2) + 1"
        infos.append(helper.make_tensor_value_info(f"c{i}", TensorProto.FLOAT, ["batch", cout, h, w]))
        nodes.append(helper.make_node("Relu", [f"c{i}"], [f"r{i}"], name=f"relu{i}"))
        x = f"r{i}"
    # a head on a static input: some operators have MACs whatever is pinned, so colouring by MACs always works
    weights.append(numpy_helper.from_array(np.eye(4, dtype=np.float32), "head.w"))
    nodes.append(helper.make_node("MatMul", ["features", "head.w"], ["scores"], name="head"))
    graph = helper.make_graph(
        nodes, "detector", [helper.make_tensor_value_info("images", TensorProto.FLOAT, ["batch", 3, "height", "width"]),
                            helper.make_tensor_value_info("features", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info(x, TensorProto.FLOAT, None),
         helper.make_tensor_value_info("scores", TensorProto.FLOAT, [1, 4])], weights, value_info=infos)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path = _scratch() / "detector.onnx"
    onnx.save(model, path)
    return path


def dims_argv(path: Path) -> list[str]:
    """``--dim`` options from the file at ``path``: one ``NAME=VALUE`` a line (at most 16; NUL cannot be an
    argument)."""
    text = path.read_bytes().decode("utf-8", "replace").replace("\x00", "")
    return [f"--dim={line}" for line in text.splitlines()[:16]]


def _dims(path: Path) -> None:
    """The ``--dim`` values of the file through the option parser, the loader's pinning and re-inference, the
    MAC counts and the "pin these dims" hints and stderr line, into a DOT picture coloured by MACs."""
    from renderer.core.errors import AnnographError

    out = _scratch() / "dims.dot"
    try:
        command(path, ["render", str(dims_model()), "--color-by", "macs", "--show", "macs,output_bytes", "-o",
                       str(out), *dims_argv(path)], out)
    except AnnographError as e:
        # a name that pins nothing: the model named, and its free input dims listed for the user to pick from
        if "--dim" in str(e) and "free input dim" in str(e):
            assert str(dims_model()) in str(e) and "'batch', 'height', 'width'" in str(e), e
        raise


def _dims_seeds() -> list[tuple[str, bytes]]:
    from payloads import DIM_VALUES, PAYLOADS

    seeds = [("all.dims", b"batch=1\nheight=64\nwidth=48\n"), ("some.dims", b"height=64\n"),
             ("none.dims", b""), ("not-inputs.dims", b"floor(height/2 - 1/2) + 1=5\nunk__3=2\nnosuch=1\n"),
             ("typo.dims", b"batch=1\nheigth=64\nwidth=48\n"), ("spaced.dims", b" height =8\nbatch=1\n")]
    seeds += [(f"value-{i}.dims", f"batch=1\nheight={v}\nwidth=8\n".encode()) for i, v in enumerate(DIM_VALUES)]
    seeds += [(f"name-{p.name}.dims", f"{p.text}=2\nheight=16\n".encode()) for p in PAYLOADS if len(p.text) < 200]
    return seeds


@cache
def computed_shapes_model() -> bytes:
    """A model whose shapes static inference cannot reach once its input dims are pinned: a Range up to a length
    computed from the input's shape, a Reshape to a computed shape, so loading it runs onnxruntime once."""
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    constants = {"one": 1, "zero": 0, "eight": 8, "axis0": [0], "s0": [0], "s1": [1], "minus_one": [-1]}
    initializers = [numpy_helper.from_array(np.array(v, dtype=np.int64), n) for n, v in constants.items()]
    initializers.append(numpy_helper.from_array(np.ones((4, 8), np.float32), "w"))
    nodes = [
        helper.make_node("Shape", ["tokens"], ["shape"], name="shape"),
        helper.make_node("Slice", ["shape", "s0", "s1"], ["batch_dim"], name="batch_dim"),
        helper.make_node("Gather", ["shape", "one"], ["length"], name="length", axis=0),
        helper.make_node("Mul", ["length", "eight"], ["stretched"], name="stretch"),
        helper.make_node("Range", ["zero", "stretched", "one"], ["positions"], name="positions"),
        helper.make_node("Cast", ["positions"], ["positions_f"], name="cast", to=TensorProto.FLOAT),
        helper.make_node("Unsqueeze", ["positions_f", "axis0"], ["row"], name="row"),
        helper.make_node("MatMul", ["tokens", "w"], ["projected"], name="project"),
        helper.make_node("Concat", ["batch_dim", "minus_one"], ["target"], name="target", axis=0),
        helper.make_node("Reshape", ["projected", "target"], ["flat"], name="flatten"),
        helper.make_node("Add", ["flat", "row"], ["out"], name="add"),
    ]
    graph = helper.make_graph(nodes, "computed", [helper.make_tensor_value_info("tokens", TensorProto.FLOAT,
                                                                                ["batch", "sequence", 4])],
                              [helper.make_tensor_value_info("out", TensorProto.FLOAT, None)], initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model.SerializeToString()


def _ort_shapes(path: Path) -> None:
    """The model in the file with every input dim of the seed pinned: loading runs onnxruntime for the shapes
    static inference cannot reach, then the picture is coloured by MACs."""
    out = _scratch() / "ort.dot"
    command(path, ["render", str(path), "--dim=batch=1", "--dim=sequence=8", "--color-by", "macs", "-o", str(out)],
            out)


def _computed_shapes_file() -> Path:
    return _model_file("computed.onnx", computed_shapes_model)


def _inputs(path: Path) -> None:
    """The file as ``render --inputs`` of the computed-shapes model: the .npz reader, the arrays checked against
    the inputs and pinning them, one onnxruntime run on them, the picture coloured by MACs."""
    out = _scratch() / "inputs.dot"
    command(path, ["render", str(_computed_shapes_file()), "--inputs", str(path), "--color-by", "macs", "-o",
                   str(out)], out)


def _inputs_seeds() -> list[tuple[str, bytes]]:
    import numpy as np

    return [(name, _npz(**arrays)) for name, arrays in (
        ("tokens.npz", {"tokens": np.ones((1, 3, 4), np.float32)}),
        ("ints.npz", {"tokens": np.arange(24, dtype=np.int64).reshape(2, 3, 4)}),
        ("empty.npz", {"tokens": np.zeros((1, 0, 4), np.float32)}),
        ("extra.npz", {"tokens": np.ones((1, 2, 4), np.float32), "other": np.ones(3)}))]


def bodies_model() -> bytes:
    """A Loop (``steps`` iterations) and a Scan (over the rows of ``batch``) whose bodies reshape by a shape read from
    the input ``rows``: static inference gives their MatMuls no shape, the run's profile does (8×8 @ 8×8)."""
    import numpy as np
    from onnx import TensorProto as T
    from onnx import helper as h
    from onnx import numpy_helper

    loop_body = h.make_graph(
        [h.make_node("Concat", ["rows", "minus1"], ["shape"], axis=0, name="loop/shape"),
         h.make_node("Reshape", ["x", "shape"], ["grid"], name="loop/reshape"),
         h.make_node("MatMul", ["grid", "w"], ["mixed"], name="loop/matmul"),
         h.make_node("ReduceSum", ["mixed"], ["step_sum"], keepdims=0, name="loop/sum"),
         h.make_node("Add", ["acc_in", "step_sum"], ["acc_out"], name="loop/acc"),
         h.make_node("Identity", ["cond_in"], ["cond_out"], name="loop/cond")], "loop_body",
        [h.make_tensor_value_info("i", T.INT64, []), h.make_tensor_value_info("cond_in", T.BOOL, []),
         h.make_tensor_value_info("acc_in", T.FLOAT, [])],
        [h.make_tensor_value_info("cond_out", T.BOOL, []), h.make_tensor_value_info("acc_out", T.FLOAT, [])])
    scan_body = h.make_graph(
        [h.make_node("Reshape", ["row", "scan_shape"], ["square"], name="scan/reshape"),
         h.make_node("MatMul", ["square", "w"], ["out_sq"], name="scan/matmul"),
         h.make_node("ReduceSum", ["out_sq"], ["row_sum"], keepdims=0, name="scan/sum"),
         h.make_node("Add", ["carry_in", "row_sum"], ["carry_out"], name="scan/carry")], "scan_body",
        [h.make_tensor_value_info("carry_in", T.FLOAT, []), h.make_tensor_value_info("row", T.FLOAT, [64])],
        [h.make_tensor_value_info("carry_out", T.FLOAT, [])])
    graph = h.make_graph(
        [h.make_node("Concat", ["rows", "minus1"], ["scan_shape"], axis=0, name="scan_shape"),
         h.make_node("Loop", ["steps", "", "zero"], ["total"], body=loop_body, name="loop"),
         h.make_node("Scan", ["zero", "batch"], ["scanned"], body=scan_body, num_scan_inputs=1, name="scan")],
        "bodies",
        [h.make_tensor_value_info("x", T.FLOAT, [1, 64]), h.make_tensor_value_info("rows", T.INT64, [1]),
         h.make_tensor_value_info("steps", T.INT64, []), h.make_tensor_value_info("batch", T.FLOAT, [2, 64])],
        [h.make_tensor_value_info("total", T.FLOAT, []), h.make_tensor_value_info("scanned", T.FLOAT, [])],
        [numpy_helper.from_array(np.ones((8, 8), np.float32), "w"),
         numpy_helper.from_array(np.array([-1], np.int64), "minus1"),
         numpy_helper.from_array(np.array(0, np.float32), "zero")])
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 17)])
    model.ir_version = 8
    return model.SerializeToString()


def bodies_inputs(rows: int = 8, steps: int = 3) -> dict[str, Any]:
    import numpy as np

    return {"x": np.arange(64, dtype=np.float32).reshape(1, 64), "rows": np.array([rows]),
            "steps": np.array(steps), "batch": np.ones((2, 64), np.float32)}


def dynamic_reshape_tflite() -> bytes:
    """tokens[-1, -1, 16] → FULLY_CONNECTED (keep dims) → [-1, -1, 32] → RESHAPE to the shape in the input
    ``new_shape`` → [-1, 64] → FULLY_CONNECTED → [-1, 8]: the rows after the reshape are decided by a value, so
    only a run knows them (LiteRT's preparation leaves them at 1)."""
    import flatbuffers
    import numpy as np
    import tflite

    import tflite_build as fb

    T = tflite.TensorType
    b = flatbuffers.Builder(4096)
    codes = [fb.opcode(b, tflite.BuiltinOperator.FULLY_CONNECTED), fb.opcode(b, tflite.BuiltinOperator.RESHAPE)]
    buffers = [fb.buffer(b, None), fb.buffer(b, (np.arange(512, dtype=np.float32).reshape(32, 16) / 512).tobytes()),
               fb.buffer(b, (np.ones((8, 64), np.float32) / 64).tobytes())]
    tensors = [fb.tensor(b, "tokens", [1, 1, 16], T.FLOAT32, signature=[-1, -1, 16]),
               fb.tensor(b, "dense/w", [32, 16], T.FLOAT32, buffer=1),
               fb.tensor(b, "dense", [1, 1, 32], T.FLOAT32, signature=[-1, -1, 32]),
               fb.tensor(b, "new_shape", [2], T.INT32),
               fb.tensor(b, "regrouped", [1, 64], T.FLOAT32, signature=[-1, 64]),
               fb.tensor(b, "mix/w", [8, 64], T.FLOAT32, buffer=2),
               fb.tensor(b, "mixed", [1, 8], T.FLOAT32, signature=[-1, 8])]
    keep, flat = fb.fully_connected_options(b, keep_num_dims=True), fb.fully_connected_options(b)
    reshape = fb.reshape_options(b)
    ops = [fb.operator(b, 0, [0, 1, -1], [2], tflite.BuiltinOptions.FullyConnectedOptions, keep),
           fb.operator(b, 1, [2, 3], [4], tflite.BuiltinOptions.ReshapeOptions, reshape),
           fb.operator(b, 0, [4, 5, -1], [6], tflite.BuiltinOptions.FullyConnectedOptions, flat)]
    return fb.model(b, codes=codes, subgraphs=[fb.subgraph(b, "main", tensors, ops, [0, 3], [6])], buffers=buffers)


@cache
def _model_file(name: str, make: Callable[[], bytes]) -> Path:
    path = _scratch() / name
    path.write_bytes(make())
    return path


def _body_inputs(path: Path) -> None:
    """The file as ``metrics --inputs`` of the Loop/Scan model: the run is profiled for the bodies' shapes."""
    out = _scratch() / "bodies.json"
    command(path, ["metrics", str(_model_file("bodies.onnx", bodies_model)), "--inputs", str(path), "-o", str(out)],
            out)


def _body_inputs_seeds() -> list[tuple[str, bytes]]:
    import numpy as np

    return [("bodies.npz", _npz(**bodies_inputs())), ("no_steps.npz", _npz(**bodies_inputs(steps=0))),
            ("odd_rows.npz", _npz(**bodies_inputs(rows=3))),
            ("floats.npz", _npz(**{**bodies_inputs(), "rows": np.array([8.0])}))]


def _tflite_inputs(path: Path) -> None:
    """The file as ``render --inputs`` of a TFLite model with dynamic dims: resized inputs, one LiteRT run."""
    out = _scratch() / "tflite_inputs.dot"
    command(path, ["render", str(_model_file("dynamic.tflite", dynamic_reshape_tflite)), "--inputs", str(path),
                   "--color-by", "macs", "-o", str(out)], out)


def _tflite_inputs_seeds() -> list[tuple[str, bytes]]:
    import numpy as np

    tokens = np.ones((2, 12, 16), np.float32)
    return [("dynamic.npz", _npz(tokens=tokens, new_shape=np.array([12, 64], np.int32))),
            ("wrong_rows.npz", _npz(tokens=tokens, new_shape=np.array([5, 64], np.int32))),
            ("ints.npz", _npz(tokens=tokens.astype(np.int64), new_shape=np.array([-1, 64], np.int64)))]


def _profile_shapes(path: Path) -> None:
    """The file as ``metrics -a`` of the computed-shapes model: the shapes a profile recorded written into the
    model, inference again, the MACs of those shapes."""
    out = _scratch() / "profile.csv"
    command(path, ["metrics", str(_computed_shapes_file()), "-a", str(path), "-o", str(out)], out)


def _profile_seeds() -> list[tuple[str, bytes]]:
    """onnxruntime's own profile of the computed-shapes model (two runs)."""
    import numpy as np
    import onnxruntime as ort

    folder = Path(tempfile.mkdtemp(prefix="annograph-profile-"))
    try:
        options = ort.SessionOptions()
        options.enable_profiling = True
        options.profile_file_prefix = str(folder / "ort")
        session = ort.InferenceSession(computed_shapes_model(), options, providers=["CPUExecutionProvider"])
        for _ in range(2):
            session.run(None, {"tokens": np.ones((1, 3, 4), np.float32)})
        return [("profile.json", Path(session.end_profiling()).read_bytes())]
    finally:
        shutil.rmtree(folder, True)


EMBED_NOTES = "graph: {meta: {run: fuzz}}\noperators:\n  - {id: '0', meta: {latency_us: 1.5}}\n"


def _embed(path: Path) -> None:
    """The model in the file embedded (an operator value, a graph value), and the copy read back."""
    from renderer.annotations.embedded import ENTRY, from_model
    from renderer.loaders.registry import load_model

    folder = _scratch()
    notes = folder / "notes.yaml"
    notes.write_text(EMBED_NOTES)
    out = folder / f"copy{path.suffix}"
    command(path, ["embed", str(path), "-a", str(notes), "--no-sidecar", "-q", "-o", str(out)], out)
    copy = load_model(out)
    assert ENTRY in copy.metadata, "the copy lost the embedded entry"
    (found,) = from_model(copy)
    assert found.graph.values.get("run") == "fuzz", found.graph.values


def _embed_seeds() -> list[tuple[str, bytes]]:
    from payloads import ROOT, hostile_tflite

    return [("hostile.tflite", hostile_tflite("<b>x</b>")),
            *[(p, (ROOT / "samples" / kind / p).read_bytes()) for kind, p in (
                ("tflite", "okay_nabu.tflite"), ("tflite", "tiny_keras_int8_asymmetric.tflite"),
                ("onnx", "tiny_cnn.onnx"), ("onnx", "control_flow.onnx"), ("onnx", "unnamed_nodes.onnx"))]]


DIFF_BEFORE = "operators:\n  - {id: stem/conv, latency_us: 10}\n  - {id: block2/conv, latency_us: 0}\n" \
              "  - {id: head/fc, latency_us: 4}\n"


def _diff(path: Path) -> None:
    """The file as the after side of ``diff`` on tiny_cnn (the DOT and the summary: no Graphviz run)."""
    from payloads import ROOT

    folder = _scratch()
    before = folder / "diff-before.yaml"
    before.write_text(DIFF_BEFORE, encoding="utf-8")
    out, summary = folder / "diff.dot", folder / "diff.md"
    command(path, ["diff", str(ROOT / DEFAULT_READER_MODEL), "--before", str(before), "--after", str(path),
                   "--metric", "latency_us", "-q", "-o", str(out), "--summary", str(summary)], out)
    assert summary.is_file() and summary.stat().st_size < 65_536, "no summary, or a summary past GitHub's limit"


def _diff_seeds() -> list[tuple[str, bytes]]:
    rows = [("stem/conv", "15"), ("block2/conv", "3"), ("head/fc", "inf"), ("block1/add", "2.5 ms")]
    doc = {"metrics": {"latency_us": {"unit": "µs", "higher_is_better": False}},
           "operators": [{"id": name, "latency_us": value} for name, value in rows]}
    csv_text = "id,latency_us\n" + "".join(f"{name},{value}\n" for name, value in rows)
    yaml_text = "operators:\n" + "".join(f"  - {{id: {name}, latency_us: {value}}}\n" for name, value in rows)
    return [("after.json", json.dumps(doc).encode()), ("after.csv", csv_text.encode()),
            ("after.yaml", yaml_text.encode())]


def _npz(**arrays: object) -> bytes:
    import numpy as np

    buffer = io.BytesIO()
    np.savez(buffer, **arrays)  # type: ignore[arg-type]
    return buffer.getvalue()


def _compare_inputs(path: Path) -> None:
    """The file as ``compare --inputs`` of tiny_cnn against itself: read header first, run in the bounded child."""
    from payloads import ROOT

    tiny, out = str(ROOT / DEFAULT_READER_MODEL), _scratch() / "compare.json"
    command(path, ["compare", tiny, tiny, "--inputs", str(path), "-o", str(out)], out)


def _compare_inputs_seeds() -> list[tuple[str, bytes]]:
    import numpy as np

    return [("inputs.npz", _npz(image=np.ones((1, 3, 32, 32), np.float32))),
            ("wrong.npz", _npz(image=np.ones((1, 3, 8, 8), np.float32), extra=np.zeros(2)))]


def _compare_dumps(path: Path) -> None:
    """The file as both dumps of ``compare --dumps … --model tiny_cnn`` (arrays loaded a pair at a time)."""
    from payloads import ROOT

    out = _scratch() / "dumps.json"
    command(path, ["compare", "--dumps", str(path), str(path), "--model", str(ROOT / DEFAULT_READER_MODEL),
                   "-o", str(out)], out)


def _compare_dumps_seeds() -> list[tuple[str, bytes]]:
    import numpy as np

    return [("dump.npz", _npz(**{"stem/conv_out": np.ones((1, 8, 32, 32), np.float32), "3": np.arange(4.0)})),
            ("names.npz", _npz(**{"0:1": np.zeros(3, np.int8), "head/fc_out": np.ones((1, 10), np.float16)}))]


# ---- the registries -------------------------------------------------------------------------------------------

def _executorch_seeds() -> list[tuple[str, bytes]]:
    from executorch_build import hostile_program

    return [("hostile.pte", hostile_program("<b>x</b>"))]


def _torch_export_seeds() -> list[tuple[str, bytes]]:
    """Small programs torch.export.save writes (``torch_models``), made when the fuzz run starts."""
    import torch_models

    return torch_models.seeds()


def _openvino_ir_seeds() -> list[tuple[str, bytes]]:
    """The IR openvino writes for ``openvino_models.small_onnx`` (float32 and float16), made when the fuzz run
    starts, and the hostile IR's layout (their ``.bin`` is not beside the seeds: shapes without values)."""
    import tempfile

    from openvino_models import hostile_net, save_ir, small_onnx

    with tempfile.TemporaryDirectory() as folder:
        source = small_onnx(Path(folder) / "small.onnx")
        made = [(f"small{tag}.xml", save_ir(source, Path(folder) / f"small{tag}.xml", fp16=bool(tag)).read_bytes())
                for tag in ("", "_fp16")]
    return [*made, ("hostile.xml", hostile_net("<b>x</b>"))]


def _openvino_exec_seeds() -> list[tuple[str, bytes]]:
    """The hostile execution graph's layout (the real ones are the fixtures, found by content)."""
    from openvino_models import hostile_net

    return [("hostile.exec.xml", hostile_net("<b>x</b>", executed=True))]


LOADERS: dict[str, LoaderEntry] = {
    "tflite": LoaderEntry(),
    "onnx": LoaderEntry(),
    "executorch": LoaderEntry(seeds=_executorch_seeds),
    "torch_export": LoaderEntry(seeds=_torch_export_seeds),
    "tensorrt": LoaderEntry(seeds=["samples/tensorrt/*.graph.json"]),
    "openvino": LoaderEntry(seeds=_openvino_ir_seeds),
    "openvino_exec": LoaderEntry(seeds=_openvino_exec_seeds),
}

READERS: dict[str, ReaderEntry] = {
    "ort_profile": ReaderEntry(inject=_ort_profile, hostile=_hostile_ort),
    "etdump": ReaderEntry(model="tests/fixtures/executorch/portable.pte", inject=_etdump, hostile=_hostile_etdump),
    "tflite_benchmark": ReaderEntry(model="tests/fixtures/tflite_debugger/tiny_keras_float.tflite",
                                    inject=_tflite_benchmark, hostile=_hostile_tflite_benchmark),
    "vela": ReaderEntry(model="samples/tflite/tiny_keras_int8_asymmetric.tflite", inject=_vela,
                        seeds=["tests/fixtures/vela/*.csv"], hostile=_hostile_vela),
    "openvino_counters": ReaderEntry(inject=_openvino, seeds=["tests/fixtures/openvino/*.csv"],
                                     hostile=_hostile_openvino),
    "openvino_exec_graph": ReaderEntry(inject=_openvino_exec_graph, seeds=["tests/fixtures/openvino/*.xml"],
                                       hostile=_hostile_exec_graph),
    "tensorrt_profile": ReaderEntry(inject=_tensorrt, seeds=["tests/fixtures/tensorrt/*.json",
                                                             "tests/fixtures/tensorrt/names_only/*.json"],
                                    hostile=_hostile_tensorrt),
    "tflite_quant_debug": ReaderEntry(model="tests/fixtures/tflite_debugger/tiny_keras_int8.tflite",
                                      inject=_tflite_quant_debug),
    "ort_qdq_loss": ReaderEntry(model="samples/onnx/tiny_cnn_qdq_u8.onnx", inject=_ort_qdq_loss),
    "onnx_tool_csv": ReaderEntry(inject=_onnx_tool_csv),
    "netron_attachment": ReaderEntry(inject=_netron_attachment),
    "model_explorer": ReaderEntry(model="samples/tflite/face_detection_short_range.tflite", inject=_model_explorer),
    "generic": ReaderEntry(),
}


OUTPUTS: dict[str, OutputEntry] = {
    # the pull-request summary, with the longest top table (its links go to the -o pictures of the same run)
    "summary": OutputEntry(args=lambda path: ["--summary", path, "--summary-rows", "50"], fmt="md", suffix=".md"),
}
"""Outputs besides the ``-o`` formats (``renderer.compose.output_plan.OUTPUT_FORMATS``), by name."""

PATHS: dict[str, PathEntry] = {
    "dims": PathEntry(_dims, _dims_seeds),
    "ort_shapes": PathEntry(_ort_shapes, lambda: [("computed_shapes.onnx", computed_shapes_model())], examples=12),
    "inputs": PathEntry(_inputs, _inputs_seeds, examples=12),
    "profile_shapes": PathEntry(_profile_shapes, _profile_seeds, examples=60),
    "body_inputs": PathEntry(_body_inputs, _body_inputs_seeds, examples=8),
    "tflite_inputs": PathEntry(_tflite_inputs, _tflite_inputs_seeds, examples=8),
    "embed": PathEntry(_embed, _embed_seeds, examples=60),
    "diff": PathEntry(_diff, _diff_seeds, examples=60),
    "compare_inputs": PathEntry(_compare_inputs, _compare_inputs_seeds, examples=8),
    "compare_dumps": PathEntry(_compare_dumps, _compare_dumps_seeds, examples=60),
}


@dataclass(frozen=True)
class CommandEntry:
    """A command that writes outputs of its own (not through ``render``'s arguments).

    ``inject(text, folder) -> (argv, outputs)``: a run carrying ``text`` in every name and text it reads; the
    injection tests run it and check each output by its extension (``summary.md`` as Markdown).
    ``over_input(folder) -> {case: (argv, input)}``: runs whose output is one of their inputs; the atomic-write
    tests check each is refused and leaves the input as it was.
    """

    inject: Callable[[str, Path], tuple[list[str], list[Path]]]
    over_input: Callable[[Path], dict[str, tuple[list[str], Path]]]


COMMANDS: dict[str, CommandEntry] = {
    "diff": CommandEntry(inject=_diff_inject, over_input=_diff_over_input),
    "batch": CommandEntry(inject=_batch_inject, over_input=_batch_over_input),
}


def registry_name(module: object) -> str:
    """The key of a loader or reader module in the package registry: a loader's format package
    (``renderer.loaders.onnx.loader`` → ``onnx``), a reader's module name."""
    parts = str(getattr(module, "__name__")).split(".")
    return parts[-2] if parts[-1] == "loader" else parts[-1]


def loader(module: object) -> LoaderEntry:
    return LOADERS[registry_name(module)]


def reader(module: object) -> ReaderEntry:
    return READERS[registry_name(module)]
