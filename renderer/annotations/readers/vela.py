"""Arm Vela's per-layer performance CSV: ``vela model.tflite --verbose-performance --output-dir out`` writes
``out/<model>_per-layer.csv``.

Two layouts, told apart by the header:

* Vela 4.x/5.x (the C++ "regor" core, the default since 4.0): ``Original Operator,NNG Operator,Target,Staging
  Usage,Peak% (Staging),Op Cycles,Network% (cycles),NPU,SRAM AC,DRAM AC,OnFlash AC,OffFlash AC,MAC Count,Network%
  (MAC),Util% (MAC),Name``. One row per operator Vela scheduled (an original TFLite operator may become several:
  a Conv2D and its fused Relu, a Softmax decomposed into a dozen elementwise ops); ``Target`` is ``CPU`` for the
  operators left to the CPU (``NNG Operator`` ``Passthrough``, all numbers 0). The rows are joined with commas
  without CSV quoting, so a name holding a comma spreads over the last cells: the name is everything after the
  15th comma.
* The legacy Python core (``--debug-force-legacy-core``, Vela 3.x): ``TFLite_operator`` (or ``TOSA_operator``),
  ``NNG Operator,SRAM Usage,Peak%,Op Cycles,Network%,NPU,SRAM AC,DRAM AC,OnFlash AC,OffFlash AC,MAC Count,
  Network%,Util%,Name`` (the two ``Network%`` are of cycles, then of MACs); written by Python's ``csv``, with the
  header repeated before each NPU subgraph; only NPU operators appear.

``Name`` is the name of the scheduled operator's output tensor: the TFLite tensor itself when the operator kept
its output, else a name Vela derived from a tensor (``…/Mean_intermediate``, ``…/MatMul2_softmax_3``). Mapping,
in order: the operator producing the tensor called ``Name``; else the longest leading part of ``Name`` that is a
tensor, to its producer or its one consumer whose type is the row's original operator (Softmax rows are named
after the Softmax's input); else the operator of the row before when it has the same original type (Vela writes
the parts of one operator together). An operator without outputs (ASSIGN_VARIABLE) is named
``placeholder-for-<operator index>-OFM``: the operator at that index, in the subgraph of the rows before. Rows
mapping to nothing are reported in the coverage line. (For a model of two subgraphs, okay_nabu.tflite, Vela 5.2.0
wrote the 12 rows of its second subgraph only: the main subgraph's operators are then without values.)

Values per operator (its rows added up): ``op_cycles`` (Op Cycles, the main metric: it colours the picture when no
``--color-by`` is given), ``npu_cycles``, the memory access cycles, ``mac_count``, the network shares
``cycles_percent`` / ``mac_percent``, ``mac_utilisation_percent`` (weighted by cycles), ``staging_bytes``
(largest row), ``target`` and ``vela_ops`` (the scheduled operators, ``Conv2D + Relu``). Operators on the CPU get
``target: CPU`` and no numbers (Vela estimates NPU work only), and a red dashed border that the legend explains.
"""

from __future__ import annotations

import csv
import itertools
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from renderer.annotations.lookup import (
    MAX_COLUMNS,
    bounded_lines,
    column_names,
    node_ref,
    numbered_lines,
    open_text,
    record_bound,
)
from renderer.annotations.measures import Where, measure, total
from renderer.core.errors import AnnotationError
from renderer.core.id_rules import IdIndex
from renderer.core.ir import Model, Node
from renderer.core.records import AnnotationSet, Entry, MetricInfo

NAME = "vela"
DESCRIPTION = "Arm Vela per-layer performance CSV (vela --verbose-performance: <model>_per-layer.csv)"

CPU_STYLE = {"color": "#d62728", "penwidth": "3", "style": "dashed"}
CPU_LEGEND = "on the CPU (red dashed border)"
_PLACEHOLDER = re.compile(r"^placeholder-for-(\d{1,9})-OFM$")
_MISSING = ("nan",)
_NAME_CHARS = 256  # longest name whose leading parts are looked up as tensors (a slice and a lookup each)

# header cell → (our name, how rows of one operator combine); the legacy header's second Network% is Network%_2
_COLUMNS = {
    "Op Cycles": ("op_cycles", "sum"),
    "Network% (cycles)": ("cycles_percent", "sum"),
    "Network%": ("cycles_percent", "sum"),
    "NPU": ("npu_cycles", "sum"),
    "SRAM AC": ("sram_access_cycles", "sum"),
    "DRAM AC": ("dram_access_cycles", "sum"),
    "OnFlash AC": ("onchip_flash_access_cycles", "sum"),
    "OffFlash AC": ("offchip_flash_access_cycles", "sum"),
    "MAC Count": ("mac_count", "sum"),
    "Network% (MAC)": ("mac_percent", "sum"),
    "Network%_2": ("mac_percent", "sum"),
    "Util% (MAC)": ("mac_utilisation_percent", "weighted"),
    "Util%": ("mac_utilisation_percent", "weighted"),
    "Staging Usage": ("staging_bytes", "max"),
    "SRAM Usage": ("staging_bytes", "max"),
    "Peak% (Staging)": ("staging_peak_percent", "max"),
    "Peak%": ("staging_peak_percent", "max"),
}
_ORIGINAL = ("Original Operator", "TFLite_operator", "TOSA_operator")

METRICS = {
    "op_cycles": MetricInfo("op_cycles", NAME, "cycles", False, "Vela's estimate of the operator's cycles on the NPU "
                         "(Op Cycles)", main=True),
    "cycles_percent": MetricInfo("cycles_percent", NAME, "%", False, "share of the network's cycles (Vela)"),
    "mac_count": MetricInfo("mac_count", NAME, "MACs", None, "multiply-accumulates on the NPU (Vela)"),
    "mac_utilisation_percent": MetricInfo("mac_utilisation_percent", NAME, "%", True,
                                          "MAC utilisation: MACs over what the cycles could do (Vela)"),
    "npu_cycles": MetricInfo("npu_cycles", NAME, "cycles", False, "NPU compute cycles (Vela)"),
    "sram_access_cycles": MetricInfo("sram_access_cycles", NAME, "cycles", False, "SRAM access cycles (Vela)"),
    "dram_access_cycles": MetricInfo("dram_access_cycles", NAME, "cycles", False, "DRAM access cycles (Vela)"),
    "onchip_flash_access_cycles": MetricInfo("onchip_flash_access_cycles", NAME, "cycles", False,
                                             "on-chip flash access cycles (Vela)"),
    "offchip_flash_access_cycles": MetricInfo("offchip_flash_access_cycles", NAME, "cycles", False,
                                              "off-chip flash access cycles (Vela)"),
    "mac_percent": MetricInfo("mac_percent", NAME, "%", None, "share of the network's MACs (Vela)"),
    "staging_bytes": MetricInfo("staging_bytes", NAME, "B", None, "staging (SRAM) memory in use (Vela)"),
    "staging_peak_percent": MetricInfo("staging_peak_percent", NAME, "%", None,
                                       "staging memory in use, share of the peak (Vela)"),
}


def match(path: Path, head: str) -> bool:
    first = head.lstrip("\ufeff").split("\n", 1)[0]
    return first.startswith(tuple(f"{o},NNG Operator," for o in _ORIGINAL))


@dataclass
class _Layout:
    """Where the columns of one header are."""

    columns: list[str]
    legacy: bool
    original: int = 0
    name: int = -1
    target: int | None = None
    nng: int = 1
    numbers: dict[int, str] = field(default_factory=dict)  # cell index → header cell

    @classmethod
    def of(cls, cells: list[str], path: Path) -> _Layout:
        columns = column_names(cells)
        if not columns or columns[0] not in _ORIGINAL or columns[-1] != "Name" or "NNG Operator" not in columns:
            raise AnnotationError(f"{path}:1: not a Vela per-layer header (expected Original Operator,NNG "
                                  "Operator,…,Name)")
        layout = cls(columns, legacy=columns[0] != "Original Operator", name=len(columns) - 1,
                     nng=columns.index("NNG Operator"))
        layout.target = columns.index("Target") if "Target" in columns else None
        layout.numbers = {i: c for i, c in enumerate(columns) if c in _COLUMNS}
        return layout


@dataclass
class _Row:
    line: int
    original: str
    nng: str
    target: str
    name: str
    numbers: dict[str, float]


def read(path: Path, model: Model) -> AnnotationSet:
    result = AnnotationSet(source=NAME, path=str(path), metrics=dict(METRICS))
    mapper = _Mapper(model)
    groups: dict[Node, list[_Row]] = {}
    cpu: set[Node] = set()
    total_cycles: float = 0
    bound = record_bound(model)
    for count, row in enumerate(_rows(path), start=1):
        if count > bound:
            raise AnnotationError(f"{path}:{row.line}: more than {bound:,} rows, far more than Vela writes for this "
                                  "model")
        total_cycles = total((total_cycles, row.numbers.get("op_cycles", 0)), Where(path, row.line), "Op Cycles")
        node = mapper.find(row)
        if node is None:
            result.unmatched.append(f"{row.name or f'(line {row.line})'} ({row.original}/{row.nng})")
            continue
        groups.setdefault(node, []).append(row)
        if row.target == "CPU":
            cpu.add(node)
    for node, rows in groups.items():
        entry = _entry(rows, node in cpu, path)
        result.operators.append((node_ref(node), entry))
    if groups:
        result.graph.values[CPU_LEGEND] = f"{len(cpu)} of {len(groups)} operators"
    result.graph.values["NPU cycles (Vela total)"] = total_cycles
    return result


def _rows(path: Path) -> Iterator[_Row]:
    """The file's rows, header lines (the first, and the legacy layout's repeats) left out."""
    with open_text(path) as handle:
        lines = ((n, line) for n, line in numbered_lines(path, handle) if line.strip())
        first = next(lines, None)
        if first is None:
            raise AnnotationError(f"{path}: empty file")
        layout = _Layout.of(next(csv.reader([first[1]]), []), path)
        cells_of = _quoted_rows(lines, path) if layout.legacy else _plain_rows(lines, layout, path)
        for line_number, cells in cells_of:
            if column_names(cells) != layout.columns:  # the legacy core repeats the header before each subgraph
                yield _row(layout, cells, path, line_number)


def _plain_rows(lines: Iterator[tuple[int, str]], layout: _Layout, path: Path) -> Iterator[tuple[int, list[str]]]:
    """Rows written without quoting: the name is what follows the last fixed column."""
    for line_number, line in lines:
        if line.count(",") > MAX_COLUMNS:
            raise AnnotationError(f"{path}:{line_number}: more than {MAX_COLUMNS} cells")
        yield line_number, line.split(",", len(layout.columns) - 1)


def _quoted_rows(lines: Iterator[tuple[int, str]], path: Path) -> Iterator[tuple[int, list[str]]]:
    """Rows written by Python's csv (a quoted name may hold commas and line breaks)."""
    numbers = [1]  # the line the reader is at

    def texts() -> Iterator[str]:
        for line_number, line in lines:
            numbers[0] = line_number
            yield line + "\n"

    reader = csv.reader(bounded_lines(texts(), path, []))
    try:
        for cells in reader:
            yield numbers[0], cells
    except csv.Error as e:
        raise AnnotationError(f"{path}:{numbers[0]}: invalid CSV ({e})") from None


def _row(layout: _Layout, cells: list[str], path: Path, line_number: int) -> _Row:
    if len(cells) != len(layout.columns):
        raise AnnotationError(f"{path}:{line_number}: {len(cells)} cells but {len(layout.columns)} columns in the "
                              "header")
    numbers: dict[str, float] = {}
    starts = list(itertools.accumulate((len(c) + 1 for c in cells), initial=1))  # each cell's column (unquoted)
    for index, column in layout.numbers.items():
        where = Where(path, line_number, starts[index])
        value = measure(cells[index], where, column, missing=_MISSING)  # regor writes NaN where it lacks the figure
        if value is None:
            if not cells[index].strip():
                raise AnnotationError(f"{where}: {column} is empty")
            continue
        numbers[_COLUMNS[column][0]] = value
    nng = cells[layout.nng].strip()
    target = cells[layout.target].strip().upper() if layout.target is not None else "NPU"
    return _Row(line_number, cells[layout.original].strip(), nng, target, cells[layout.name].strip(), numbers)


def _entry(rows: list[_Row], on_cpu: bool, path: Path) -> Entry:
    entry = Entry(line=rows[0].line)
    entry.values["target"] = "CPU" if on_cpu else "NPU"
    if not on_cpu:
        modes = dict(_COLUMNS.values())
        present = {n for r in rows for n in r.numbers}
        for name in [n for n in METRICS if n in present]:  # the box shows the first few: the telling ones first
            entry.values[name] = _combined(name, modes[name], rows, Where(path, rows[-1].line))
    entry.values["vela_ops"] = " + ".join(r.nng for r in rows)[:200]
    if on_cpu:
        entry.style.update(CPU_STYLE)
    return entry


def _combined(name: str, mode: str, rows: list[_Row], where: Where) -> float:
    """One operator's value of ``name`` from its rows; a sum past the float range is refused at the last row."""
    values = [r.numbers[name] for r in rows if name in r.numbers]
    if mode == "max":
        return max(values)
    if mode == "weighted":
        weights = [r.numbers.get("op_cycles", 0) for r in rows if name in r.numbers]
        weight = total(weights, where, "Op Cycles")
        if len(values) == 1 or not weight:
            return values[0]
        # each share of the weight first: a product of two large finite figures could overflow
        return round(total((v * (w / weight) for v, w in zip(values, weights)), where, name), 6)
    summed = total(values, where, name)
    return round(summed, 6) if isinstance(summed, float) else summed


def _letters(op_type: str) -> str:
    return re.sub(r"[^a-z0-9]", "", op_type.lower())


def same_type(vela_type: str, op_type: str) -> bool:
    """Vela's original operator type (``MaxPool``, ``Conv2D``, legacy ``MAX_POOL_2D``) names ``op_type``
    (the model's ``MAX_POOL_2D``)?

    >>> same_type("MaxPool", "MAX_POOL_2D"), same_type("Conv2D", "CONV_2D"), same_type("Softmax", "FULLY_CONNECTED")
    (True, True, False)
    """
    a, b = _letters(vela_type), _letters(op_type)
    return bool(a and b) and (a == b or a.startswith(b) or b.startswith(a))


class _Mapper:
    """Rows → the model's operators (see the module docstring)."""

    def __init__(self, model: Model) -> None:
        self.model = model
        self.lookup = IdIndex.build(model)
        self.previous: tuple[str, Node] | None = None
        self.graph = 0  # subgraph of the last row placed

    def find(self, row: _Row) -> Node | None:
        node = self._by_name(row) or self._placeholder(row.name)
        if node is None and self.previous is not None and self.previous[0] == row.original:
            node = self.previous[1]
        self.previous = (row.original, node) if node is not None else None
        if node is not None:
            self.graph = node.graph.index
        return node

    def _placeholder(self, name: str) -> Node | None:
        """An operator without outputs (ASSIGN_VARIABLE): Vela calls its missing output
        ``placeholder-for-<operator index>-OFM``, in the subgraph of the rows around it."""
        found = _PLACEHOLDER.match(name)
        if not found or self.graph >= len(self.model.graphs):
            return None
        nodes = self.model.graphs[self.graph].nodes
        index = int(found.group(1))
        return nodes[index] if index < len(nodes) and not nodes[index].outputs else None

    def _by_name(self, row: _Row) -> Node | None:
        producer = self.lookup.producer(row.name) if row.name else None
        if producer is not None:
            return producer
        name = row.name[:_NAME_CHARS]
        known = self.lookup.tensor_names
        for end in range(len(name) - 1, 0, -1):
            if name[:end] not in known:
                continue
            value = self.lookup.value(name[:end])
            if value is None:
                continue
            fits = [n for n in [value.producer, *value.consumers]
                    if n is not None and same_type(row.original, n.op_type)]
            if len(fits) == 1:
                return fits[0]
            if fits and value.producer in fits:
                return value.producer
        return None
