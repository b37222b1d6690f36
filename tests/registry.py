"""What the fuzz and injection tests (and ``fuzz/harness.py``) know about each loader and annotation reader.

The package registries (``renderer.loaders.LOADERS``, ``renderer.annotations.READERS``) say which modules
exist; this one says how to test them, and lives on the test side so that shipped modules carry no test hooks.
``test_registry.py`` checks that every module in the package registries has an entry here.

Per loader (``LOADERS``, keyed by the module's name in ``renderer.loaders.LOADERS``):

``seeds``
    Extra fuzz seeds: paths relative to the repository root (glob patterns allowed), or a callable taking no
    arguments that returns ``(file name, bytes)`` pairs. Use it when the samples do not show the format or
    the interesting corners of it.

Per extra output (``OUTPUTS``, outputs an option other than ``-o`` writes): see ``OutputEntry``.

Per reader (``READERS``, keyed by the module's name in ``renderer.annotations.READERS``), ``seeds`` as above and:

``model``
    Path, relative to the repository root, of the sample model that the reader's seed files refer to (their
    ids, node names).

``inject``
    A callable ``(text: str) -> (file name, bytes)`` returning a file in the reader's format that carries
    ``text`` in every field a user could control (ids, names, keys, values). The injection tests render it
    and check the outputs. Only the generic fallback has none: its syntaxes are injected by
    ``payloads.annotation_file`` directly.

Per command that writes outputs of its own (``COMMANDS``, keyed by its name in ``renderer.cli.COMMANDS``): how
the injection tests run it with hostile input, and which runs would write over an input (``CommandEntry``).
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

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
    from renderer.annotations.tflite_benchmark import REGULAR

    flat = " ".join(text.replace("\t", " ").splitlines()) or "Custom"
    header = "\t".join(["[node type]", "[start]", "[first]", "[avg ms]", "[%]", "[cdf%]", "[mem KB]",
                        "[times called]", "[Name]"])
    rows = [["RELU", "0.000", "0.010", "0.010", "50.000%", "50.000%", "0.000", "1", f"[{flat}]:0"],
            [flat, "0.010", "0.010", "0.010", "50.000%", "100.000%", "0.000", "1", f"[{flat}·out]:2"]]
    lines = [f"{REGULAR}:", "============================== Run Order ==============================",
             "\t" + header, *["\t" + "\t".join(row) for row in rows], ""]
    return "benchmark.txt", "\n".join(lines).encode()


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
    from renderer.annotations.ort_qdq_loss import FORMAT_MARKER

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
    from renderer.annotations.netron_attachment import SIGNATURE

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
        doc = {"graph": {"title": text, "meta": {text or "k": text}},
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
    model.write_bytes(Path(__file__).resolve().parent.parent.joinpath(DEFAULT_READER_MODEL).read_bytes())
    before, after = folder / "before.yaml", folder / "after.yaml"
    before.write_text("operators:\n  - {id: stem/conv, latency_us: 10}\n", encoding="utf-8")
    after.write_text("operators:\n  - {id: stem/conv, latency_us: 15}\n", encoding="utf-8")
    common = ["diff", str(model), "--before", str(before), "--after", str(after), "--metric", "latency_us"]
    return {
        "diff-picture-over-after": ([*common, "-o", str(after)], after),
        "diff-summary-over-before": ([*common, "-o", str(folder / "d.svg"), "--summary", str(before)], before),
        "diff-picture-over-model": ([*common, "-o", str(folder / "x.svg"), "-o", str(folder / "./m.onnx")], model),
        "diff-two-models-over-before-model": (["diff", str(model), str(model), "--metric", "macs", "-o",
                                               str(model)], model),
    }


# ---- the registries -------------------------------------------------------------------------------------------

LOADERS: dict[str, LoaderEntry] = {
    "tflite": LoaderEntry(),
    "onnx": LoaderEntry(),
}

READERS: dict[str, ReaderEntry] = {
    "ort_profile": ReaderEntry(inject=_ort_profile),
    "tflite_benchmark": ReaderEntry(model="tests/fixtures/tflite_debugger/tiny_keras_float.tflite",
                                    inject=_tflite_benchmark),
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
    "summary": OutputEntry(args=lambda path: ["--summary", path, "--top-k", "50"], fmt="md", suffix=".md"),
}
"""Outputs besides the ``-o`` formats (``renderer.rendering.OUTPUT_FORMATS``), by name."""


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
}


def registry_name(module: object) -> str:
    """The key of a loader or reader module in the package registry (its last dotted name)."""
    return str(getattr(module, "__name__")).rsplit(".", 1)[-1]


def loader(module: object) -> LoaderEntry:
    return LOADERS[registry_name(module)]


def reader(module: object) -> ReaderEntry:
    return READERS[registry_name(module)]
