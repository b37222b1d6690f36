"""OpenVINO ``benchmark_app -report_type detailed_counters`` (or ``average_counters``) CSV:
``benchmark_detailed_counters_report.csv`` in the ``-report_folder``.

``;``-separated, no quoting: a table per infer request (one for ``average_counters``), each with the header
``layerName;execStatus;layerType;execType;realTime (ms);cpuTime (ms)``, its layers in execution order, a
``Total;;;;…`` row and a blank line. The Python benchmark_app writes ``Status.EXECUTED`` / ``Status.NOT_RUN`` and
times with 3 decimals (1 µs steps); the C++ one ``EXECUTED`` / ``NOT_RUN`` / ``OPTIMIZED_OUT``, 6 decimals, and
may end each line with a ``;``. Names are the first cell and may hold ``;``: the other cells are counted from the
right. Its sorted variant (``sort_detailed_counters``) adds a `` %`` column.

Layer names are the plugin's: mostly the ONNX node's name, the output tensor's name for a node writing a graph
output, and names of layers the plugin made: reorders and converts it inserted
(``Convert_161_abcd_acdb_Multiply_4183``) and layers it rebuilt when fusing (a Conv with its BatchNormalization
folded in becomes ``Multiply_4183``, its name lost). A Conv or MatMul with a bias becomes the layer
``<node>/WithoutBiases`` and an Add, called ``<node>``, fused into it. Mapping: the node of that name, else the
producer of the tensor of that name, else the same for the name without ``/WithoutBiases``; the rest are reported
in the coverage line with their type and time. ``Parameter``, ``Result`` and ``Constant``
layers are the graph's inputs, outputs and weights, not operators: they are left out.

A layer with the status ``NOT_RUN`` or ``OPTIMIZED_OUT`` was fused into another layer (a Relu into the Conv
before it) or needs no work (a Reshape): the file does not say which, so its operator gets ``exec_status`` and
no time, rather than a 0 that would paint it as the fastest.

Values (per operator, averaged over the request tables): ``real_time_us`` (the main metric: it colours the
picture when no ``--color-by`` is given), ``cpu_time_us``, ``layer_type``, ``exec_type`` (the kernel, with the
precision it ran in) and ``exec_status``; the file's milliseconds are turned into microseconds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from renderer.annotations.lookup import MAX_COLUMNS, node_ref, numbered_lines, open_text, record_bound
from renderer.annotations.measures import Where, mean, measure, total
from renderer.core.errors import AnnotationError
from renderer.core.id_rules import IdIndex
from renderer.core.ir import Model, Node
from renderer.core.records import AnnotationSet, Entry, MetricInfo

NAME = "openvino"
DESCRIPTION = "OpenVINO benchmark_app -report_type detailed_counters / average_counters CSV"

HEADER = ("layerName", "execStatus", "layerType", "execType", "realTime (ms)", "cpuTime (ms)")
WITHOUT_BIASES = "/WithoutBiases"
MAX_TABLES = 4096
_NOT_OPERATORS = frozenset({"Parameter", "Result", "Const", "Constant", "Input", "Output"})

METRICS = {
    "real_time_us": MetricInfo("real_time_us", NAME, "µs", False,
                               "OpenVINO layer time per inference (realTime; mean over the infer requests)",
                               main=True),
    "cpu_time_us": MetricInfo("cpu_time_us", NAME, "µs", False, "OpenVINO layer CPU time per inference (cpuTime)"),
}


def match(path: Path, head: str) -> bool:
    return head.lstrip("\ufeff").startswith(";".join(HEADER))


@dataclass
class _Layer:
    """One layer name's rows over the request tables."""

    line: int
    status: str
    layer_type: str
    exec_type: str
    real_ms: list[float] = field(default_factory=list)
    cpu_ms: list[float] = field(default_factory=list)


def read(path: Path, model: Model) -> AnnotationSet:
    result = AnnotationSet(source=NAME, path=str(path), metrics=dict(METRICS))
    layers, tables = _layers(path, record_bound(model))
    lookup = IdIndex.build(model)
    placed: dict[Node, list[tuple[str, _Layer]]] = {}
    for name, layer in layers.items():
        if layer.layer_type in _NOT_OPERATORS:
            continue
        node = find_node(lookup, name)
        if node is None:
            time = f", {_mean_us(layer.real_ms, path, layer):g} µs" if layer.real_ms else ""
            result.unmatched.append(f"{name} ({layer.layer_type}{time})")
        else:
            placed.setdefault(node, []).append((name, layer))
    for node, named in placed.items():
        result.operators.append((node_ref(node), _entry(node, named, path)))
    result.graph.values["openvino_infer_requests"] = tables
    return result


def _us(ms: float) -> float:
    """Milliseconds as microseconds, without the float noise of the product."""
    return float(f"{ms * 1000:.9g}")


def find_node(lookup: IdIndex, name: str) -> Node | None:
    """The node an OpenVINO layer name stands for (see the module docstring), else None."""
    for candidate in dict.fromkeys((name, name.removesuffix(WITHOUT_BIASES))):
        node = lookup.node(candidate) or lookup.producer(candidate)
        if node is not None:
            return node
    return None


def _mean_us(times: list[float], path: Path, layer: _Layer, name: str = "realTime (ms)") -> float:
    """A layer's mean time over the request tables, in µs; refused at its first line when that overflows."""
    where = Where(path, layer.line)
    return float(total([_us(mean(times, where, name))], where, name))


def _entry(node: Node, named: list[tuple[str, _Layer]], path: Path) -> Entry:
    ran = [layer for _, layer in named if _executed(layer.status)]
    entry = Entry(line=named[0][1].line)
    where = Where(path, named[0][1].line)
    if ran:
        for key, column, times in (("real_time_us", "realTime (ms)", lambda x: x.real_ms),
                                   ("cpu_time_us", "cpuTime (ms)", lambda x: x.cpu_ms)):
            means = [_mean_us(times(x), path, x, column) for x in ran if times(x)]
            entry.values[key] = round(total(means, where, column), 3)
    first = named[0][1]
    entry.values["exec_status"] = "EXECUTED" if ran else _status(first.status)
    entry.values["layer_type"] = first.layer_type
    entry.values["exec_type"] = first.exec_type
    names = [name for name, _ in named]
    if names != [node.name]:
        entry.values["openvino_layer"] = ", ".join(names)[:200]  # how OpenVINO called it
    return entry


def _status(text: str) -> str:
    return text.removeprefix("Status.")


def _executed(text: str) -> bool:
    return _status(text) == "EXECUTED"


def _layers(path: Path, bound: int) -> tuple[dict[str, _Layer], int]:
    """Layer name → its rows over every table, and the number of tables: at most ``bound`` layer names and
    ``MAX_TABLES`` tables (one per infer request), more refused as they are reached."""
    layers: dict[str, _Layer] = {}
    tables, width = 0, len(HEADER)
    with open_text(path) as handle:
        for line_number, line in numbered_lines(path, handle):
            text = line.removesuffix(";") if line.endswith(";") and line.count(";") > 5 else line
            if not text.strip():
                continue
            if line.count(";") > MAX_COLUMNS:
                raise AnnotationError(f"{path}:{line_number}: more than {MAX_COLUMNS} cells")
            cells = text.split(";")
            if tuple(c.strip() for c in cells[:6]) == HEADER:
                tables += 1
                if tables > MAX_TABLES:
                    raise AnnotationError(f"{path}:{line_number}: more than {MAX_TABLES:,} tables (infer requests)")
                width = len(cells)
                continue
            if tables == 0:
                raise AnnotationError(f"{path}:{line_number}: expected the header {';'.join(HEADER)}")
            _add_row(layers, text, width, path, line_number)
            if len(layers) > bound:
                raise AnnotationError(f"{path}:{line_number}: more than {bound:,} layers, far more than the model "
                                      "could have run")
    if tables == 0:
        raise AnnotationError(f"{path}: empty file")
    return layers, tables


def _add_row(layers: dict[str, _Layer], text: str, width: int, path: Path, line_number: int) -> None:
    cells = text.rsplit(";", width - 1)
    if len(cells) != width:
        raise AnnotationError(f"{path}:{line_number}: {len(cells)} cells but {width} columns in the header")
    name, status, layer_type, exec_type, _real, cpu = (c.strip() for c in cells[:6])
    if name == "Total" and not status and not layer_type:
        return
    start = len(text) - sum(len(c) + 1 for c in cells[4:]) + 2  # the column of realTime, counted from the right
    times = []
    for column, cell in ((HEADER[4], cells[4]), (HEADER[5], cells[5])):
        value = measure(cell, Where(path, line_number, start), column)
        if value is None:
            raise AnnotationError(f"{path}:{line_number}:{start}: {column} is empty")
        times.append(float(value))
        start += len(cell) + 1
    layer = layers.get(cells[0])
    if layer is None:
        layer = layers[cells[0]] = _Layer(line_number, status, layer_type, exec_type)
    layer.real_ms.append(times[0])
    layer.cpu_ms.append(times[1])
