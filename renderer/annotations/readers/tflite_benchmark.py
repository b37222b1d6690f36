"""TFLite ``benchmark_model --enable_op_profiling=true`` output: the text tables and the ``csv`` output mode;
also LiteRT's own profile summary (``LiteRtGetProfileSummary``), which prints the same tables.

The layout follows TensorFlow's ``tensorflow/core/util/stats_calculator.cc`` and
``tensorflow/lite/profiling/profile_summarizer.cc`` / ``profile_summary_formatter.cc``:

* Sections start with ``Profiling Info for Benchmark Initialization:`` (skipped) and
  ``Operator-wise Profiling Info for Regular Benchmark Runs:`` (read), possibly behind a log prefix such as
  ``INFO: ``. Inside, a model with several subgraphs has ``Primary graph profile:`` and
  ``Subgraph (index: N) profile:`` banners, and delegates may add a ``Delegate internal:`` part.
* Each part has tables under ``==== <title> ====`` banners; only ``Run Order`` is read (``Top by Computation
  Time`` repeats its rows, ``Summary by node type`` aggregates them). A table ends at a blank line.
* Text tables are tab-separated: ``[node type] [start] [first] [avg ms] [%] [cdf%] [mem KB] [times called]
  [Name]`` (``[start]`` only in older versions; the header decides). Copies whose tabs became spaces are
  parsed too. CSV mode (``--op_profiling_output_mode=csv``) writes ``node type, first, avg_ms, %, cdf%,
  mem KB, times called, name`` joined by ``", "``, keeps the ``%`` suffixes, and turns commas inside the
  name into tabs (the node type keeps its commas, so columns are counted from the right). Older binaries
  write the CSV to ``--profiling_output_csv_file=PATH`` with a ``start`` column after ``node type``; its
  numbers have 6 significant digits (``9.75232e-05``), all kept.
* Operator rows are named ``[<output tensor names>]:<node index>``; the node index is the operator index in
  the subgraph. ``Delegate/<name>:<n>`` rows and delegate kernel nodes (type ``TfLiteXNNPackDelegate``…,
  numbered after the model's operators and named by the delegated partition's outputs) stand for work inside
  a delegate and have no operator of their own: they are reported as unmatched.

Real output of a 2022 ``benchmark_model`` (text and ``--profiling_output_csv_file``, with ``[start]``, no log
prefixes, tables on stdout, no ``Delegate/`` rows) is in
``tests/fixtures/tflite_benchmark/*.benchmark_model.*``.
The newer layout (no ``[start]``, ``INFO:`` prefixes, ``Delegate/`` rows, ``--op_profiling_output_mode=csv``)
is only in hand-made files there.

LiteRT's profile summary (ai-edge-litert 2.3.0, real output in ``tests/fixtures/tflite_benchmark/*.litert_profile.*``)
has no section header: the file starts at the ``Run Order`` banner, which is then read as the regular runs.
Its cells are padded with spaces (no tabs), it always has ``[start]``, and it adds a ``Delegate Statistics``
table (skipped). Operator rows are named ``[Builtin]:<node index>`` without tensor names, delegate operators
``[Delegate]:<n>`` with the type ``Delegate/<name>`` (the delegate kernel node has no row), and all subgraphs
share one table in run order: a subgraph called by an operator (``CALL_ONCE``, ``WHILE``…) follows that
operator's row. Such a row is put in the subgraph whose operator at that index has its type, preferring the
subgraph of the row before while the indices go up; delegate rows are reported as unmatched,
as ``Delegate/<name>:<n>``.

Mapping: the operator at the row's index when its op type agrees and its outputs are the named tensors;
else the operator of that type producing the first named tensor. Values (per run): ``latency_us`` (the
average), ``latency_first_us``, ``percent``, ``cdf_percent``, ``memory_kb``, ``times_called``, ``start_us``
when present, and ``node_type``; ``latency_us`` is the main metric (the colour without ``--color-by``). The
file is streamed.
"""

from __future__ import annotations

import re
from pathlib import Path

from renderer.annotations.lookup import node_ref, number, numbered_lines, open_text, record_bound
from renderer.annotations.measures import Where, measure, total
from renderer.core.errors import AnnotationError
from renderer.core.id_rules import IdIndex
from renderer.core.ir import Model, Node
from renderer.core.records import AnnotationSet, Entry, MetricInfo

NAME = "tflite-benchmark"
DESCRIPTION = "TFLite benchmark_model --enable_op_profiling output (text tables or csv mode)"

REGULAR = "Operator-wise Profiling Info for Regular Benchmark Runs"
INIT = "Profiling Info for Benchmark Initialization"
_BANNER = re.compile(r"^=+ (?P<title>.+?) =+$")
_SUBGRAPH = re.compile(r"^Subgraph \(index: (?P<index>\d+)\) (?:profile|summary):$")
_ROW_NAME = re.compile(r"^\[(?P<outputs>.*)\]:(?P<index>\d+)$")
_LITERT_NAME = re.compile(r"^\[(?P<kind>Builtin|Delegate)\]:(?P<index>\d+)$")
_TIMINGS = re.compile(r"^Timings \(microseconds\): (?P<rest>.*)$")

# header cell → our value name and the factor from the file's unit
_COLUMNS = {
    "node type": None,
    "start": ("start_us", 1000.0),
    "first": ("latency_first_us", 1000.0),
    "avg ms": ("latency_us", 1000.0),
    "avg_ms": ("latency_us", 1000.0),
    "%": ("percent", 1.0),
    "cdf%": ("cdf_percent", 1.0),
    "mem KB": ("memory_kb", 1.0),
    "times called": ("times_called", 1.0),
    "name": None,
}

METRICS = {
    "latency_us": MetricInfo("latency_us", NAME, "µs", False, "TFLite benchmark_model average time per run",
                             main=True),
    "latency_first_us": MetricInfo("latency_first_us", NAME, "µs", False, "TFLite benchmark_model first run"),
    "start_us": MetricInfo("start_us", NAME, "µs", None, "average start time within a run (benchmark_model)"),
    "percent": MetricInfo("percent", NAME, "%", False, "share of the subgraph's run time (benchmark_model)"),
    "cdf_percent": MetricInfo(
        "cdf_percent", NAME, "%", None, "cumulative share in run order (benchmark_model)"
    ),
    "memory_kb": MetricInfo("memory_kb", NAME, "KB", False, "memory allocated by the node (benchmark_model)"),
    "times_called": MetricInfo("times_called", NAME, "", None, "calls per run (benchmark_model)"),
}


def match(path: Path, head: str) -> bool:
    return (
        REGULAR in head
        or (INIT in head and "Run Order" in head)
        or ("Run Order" in head and ("[node type]" in head or "node type, " in head))
    )


def _strip_prefix(line: str) -> str:
    """The line without a logger prefix (``INFO: ``), when one leads to a known marker."""
    text = line.strip()
    if text.startswith(("INFO: ", "WARNING: ", "ERROR: ", "VERBOSE: ")):
        return text.split(": ", 1)[1].strip()
    return text


class _Table:
    """Column layout of one Run Order table."""

    def __init__(self, cells: list[str], csv_mode: bool) -> None:
        self.csv_mode = csv_mode
        self.fields = []
        self.names = cells[1:-1]  # the header's cells, for messages
        for cell in self.names:
            if cell not in _COLUMNS:
                raise ValueError(cell)
            self.fields.append(_COLUMNS[cell])

    @classmethod
    def parse_header(cls, text: str) -> _Table | None:
        if text.startswith("[node type]"):
            return cls(re.findall(r"\[([^\]]*)\]", text), csv_mode=False)
        if text.startswith("node type,"):
            return cls([c.strip() for c in text.split(",")], csv_mode=True)
        return None

    def split(self, line: str) -> tuple[str, list[str], str] | None:
        """(node type, numeric cells, name) of a row, or None when the line is not one."""
        k = len(self.fields)
        if self.csv_mode:
            cells = line.strip().split(", ")
            if len(cells) < k + 2:
                return None
            return (
                ", ".join(cells[: -(k + 1)]).strip(),
                cells[-(k + 1) : -1],
                cells[-1].replace("\t", ",").strip(),
            )
        cells = [c.strip() for c in line.strip().split("\t")]
        if len(cells) >= k + 2:
            return cells[0], cells[1 : k + 1], "\t".join(cells[k + 1 :]).strip()
        pattern = r"^\s*(?P<type>.+?)" + r"\s+([-+]?[\d.]+(?:e[-+]?\d+)?%?)" * k + r"\s+(?P<name>\S.*)$"
        found = re.match(pattern, line)
        if not found:
            return None
        return found.group("type"), [found.group(i + 2) for i in range(k)], found.group("name").strip()


def _scaled(value: float, factor: float) -> float:
    """``value * factor`` without the float noise of the product (``0.0714706 µs``, not ``…60000000001``),
    keeping every significant digit: the CSV writes 6 (``7.14706e-05`` ms), so rounding to decimals would cut
    small values."""
    return float(f"{value * factor:.12g}") if factor != 1.0 else value


def read(path: Path, model: Model) -> AnnotationSet:
    parser = _Parser(path, model)
    with open_text(path) as handle:
        for number_, raw in numbered_lines(path, handle):
            parser.line(number_, raw)
    return parser.finish()


class _Parser:
    """Where the line-by-line read is: which section, which subgraph, which table."""

    def __init__(self, path: Path, model: Model) -> None:
        self.path = path
        self.result = AnnotationSet(source=NAME, path=str(path), metrics=dict(METRICS))
        self.rows, self.bound = 0, record_bound(model)
        self.mapper = _Mapper(model)
        self.in_regular = False
        self.seen_regular = False
        self.headed = False  # a section header seen; without one the tables are LiteRT's bare profile summary
        self.banners = False  # per-subgraph banners seen; without them LiteRT's rows may come from any subgraph
        self.subgraph: int | None = 0
        self.table: _Table | None = None
        self.expect_header = False

    def finish(self) -> AnnotationSet:
        if not self.seen_regular:
            raise AnnotationError(f"{self.path}: no '{REGULAR}' section (was --enable_op_profiling=true set?)")
        return self.result

    def line(self, number_: int, raw: str) -> None:
        text = _strip_prefix(raw)
        if self._section(text) or not self.in_regular or self._part(text):
            return
        if self.expect_header:
            self._header(text, number_)
        elif self.table is None:
            self._timings(text)
        elif not text:
            self.table = None
        else:
            self._row(self.table, raw, text, number_)

    def _section(self, text: str) -> bool:
        """Regular-run and initialisation sections (True when ``text`` opened one)."""
        if REGULAR in text:
            self.in_regular = self.seen_regular = self.headed = True
            self.subgraph, self.table, self.expect_header = 0, None, False
            return True
        if INIT in text:
            self.in_regular, self.table, self.expect_header = False, None, False
            self.headed = True
            return True
        if not self.headed and not self.in_regular and _BANNER.match(text):
            self.in_regular = self.seen_regular = True
        return False

    def _part(self, text: str) -> bool:
        """Subgraph and delegate parts and table banners inside the regular run (True when ``text`` was one)."""
        if text == "Primary graph profile:":
            self.subgraph, self.table, self.banners = 0, None, True
            return True
        sub = _SUBGRAPH.match(text)
        if sub:
            self.subgraph, self.table, self.banners = int(sub.group("index")), None, True
            return True
        if text == "Delegate internal:":
            self.subgraph, self.table = None, None
            return True
        banner = _BANNER.match(text)
        if banner:
            self.table = None
            self.expect_header = banner.group("title") == "Run Order"
            return True
        return False

    def _header(self, text: str, number_: int) -> None:
        self.expect_header = False
        try:
            self.table = _Table.parse_header(text)
        except ValueError as e:
            raise AnnotationError(
                f"{self.path}:{number_}: unknown column {str(e)[:40]!r} in the Run Order header"
            ) from None
        if self.table is None:
            raise AnnotationError(f"{self.path}:{number_}: expected the Run Order header after its banner")

    def _timings(self, text: str) -> None:
        """The whole-run timing line outside the tables: its average becomes a graph value."""
        graph = self.result.graph.values
        timings = _TIMINGS.match(text)
        if timings and self.subgraph == 0 and "profile_avg_us" not in graph:
            stats = dict(re.findall(r"(\w+)=([-\d.e+]+)", timings.group("rest")))
            if "avg" in stats and number(stats["avg"]) is not None:
                graph["profile_avg_us"] = number(stats["avg"])

    def _row(self, table: _Table, raw: str, text: str, number_: int) -> None:
        parts = table.split(raw)
        if parts is None:
            raise AnnotationError(f"{self.path}:{number_}: cannot read this Run Order row: {text[:60]!r}")
        node_type, cells, name = parts
        entry = Entry(line=number_)
        where = Where(self.path, number_)
        for field, cell, column in zip(table.fields, cells, table.names):
            value = measure(cell, where, column, negative=column == "mem KB")  # memory may be given back
            if value is None:
                raise AnnotationError(f"{where}: {column} is empty")
            if field is not None:
                key, factor = field
                entry.values[key] = float(total([_scaled(value, factor)], where, column))  # ms → µs may overflow
        self.rows += 1
        if self.rows > self.bound:
            raise AnnotationError(f"{where}: more than {self.bound:,} rows, far more than the model has operators")
        entry.values["node_type"] = node_type
        node, name = self._place(node_type, name)
        if node is None:
            self.result.unmatched.append(name if self.subgraph in (0, None) else f"{self.subgraph}:{name}")
        else:
            self.result.operators.append((node_ref(node), entry))

    def _place(self, node_type: str, name: str) -> tuple[Node | None, str]:
        """The operator of a row, and the name to report it by when there is none."""
        litert = _LITERT_NAME.match(name)
        if litert and litert.group("kind") == "Delegate":
            return None, f"{node_type}:{litert.group('index')}"
        if litert:
            node = None
            if self.subgraph is not None:
                node = self.mapper.find_builtin(self.subgraph if self.banners else None, node_type,
                                                int(litert.group("index")))
            return node, f"{name} {node_type}"
        return self.mapper.find(self.subgraph, node_type, name), name


class _Mapper:
    def __init__(self, model: Model) -> None:
        self.model = model
        self.lookup = IdIndex.build(model)
        self.current = 0  # subgraph of the last LiteRT row placed
        self.last: dict[int, int] = {}  # highest node index placed per subgraph

    def find_builtin(self, subgraph: int | None, node_type: str, index: int) -> Node | None:
        """The operator of a LiteRT ``[Builtin]:<index>`` row: in ``subgraph``, or (None) in the subgraph
        whose operator at ``index`` has the row's type, the current one first while its indices go up."""
        graphs = self.model.graphs
        if subgraph is not None:
            found = [subgraph] if subgraph < len(graphs) else []
        else:
            found = list(range(len(graphs)))
        found = [
            g for g in found if index < len(graphs[g].nodes) and graphs[g].nodes[index].op_type == node_type
        ]
        if not found:
            return None
        rising = [g for g in found if index > self.last.get(g, -1)]
        if self.current in rising:
            chosen = self.current
        else:
            chosen = (rising or found)[0]
        self.current = chosen
        self.last[chosen] = max(index, self.last.get(chosen, -1))
        return graphs[chosen].nodes[index]

    def find(self, subgraph: int | None, node_type: str, name: str) -> Node | None:
        if subgraph is None or subgraph >= len(self.model.graphs):
            return None
        row = _ROW_NAME.match(name)
        if not row:
            return None
        op_type = node_type.split("/", 1)[0]
        outputs = [o.strip() for o in row.group("outputs").split(", ")] if row.group("outputs") else []
        index = int(row.group("index"))
        graph = self.model.graphs[subgraph]
        if index < len(graph.nodes):
            node = graph.nodes[index]
            names = [v.name for v in node.outputs]
            if node.op_type == op_type and (
                names == outputs or not outputs or outputs == ["Unknown"] * len(outputs)
            ):
                return node
        for tensor in outputs[:1]:
            producer = self.lookup.producer(tensor, graph=subgraph)
            if producer is not None and producer.op_type == op_type:
                return producer
        return None
