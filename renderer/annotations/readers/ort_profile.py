"""ONNX Runtime profiles: the JSON trace that ``SessionOptions.enable_profiling`` writes.

The file is a JSON array of Chrome-trace events, one per line. The ones used here:

* ``{"cat": "Node", "name": "<node>_kernel_time", "dur": µs, "args": {"op_name", "provider", "node_index",
  "output_size", "activation_size", "parameter_size", "output_type_shape", …}}``: one operator run. ``<node>``
  is the node's name, or ``<OpType>_<index>`` for an unnamed node, where the index is ORT's node index (the
  position among the graph's non-Constant nodes: ORT turns Constant nodes into initializers first). Sizes are
  strings of bytes.
* ``{"cat": "Session", "name": "model_run", "dur": µs}``: ends one ``InferenceSession.run``; the node events
  written since the previous one belong to it.

Aggregation: per run, the durations of one node are summed (a Loop body runs several times per run); over
runs, ``latency_us`` is the mean and ``latency_us_median`` the median, leaving out the first run (warm-up)
when there are several; ``latency_first_us`` is the first run. Without ``model_run`` events every event counts
as one run (the k-th event of a node belongs to run k). ``latency_us`` is the main metric: it colours the
picture when no ``--color-by`` is given.

With graph optimizations on, ORT fuses and renames nodes. Mapping, in order: the node name; ``OpType_N`` by
ORT's index (op type must agree); a name built from an output tensor (``stem/relu_out_nchwc`` → the producer
of ``stem/relu_out``); a fused node named ``<original>/<SomethingFusion>/`` → ``<original>``. Events mapping
to the same operator are added up. The rest (``BiasGelu``, ``ReorderOutput``…) are reported as unmatched.

The file is streamed line by line (pretty-printed files are parsed whole), so profiles of many runs stay cheap.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from renderer.annotations.lookup import (
    LineTooLong,
    load_json,
    node_ref,
    numbered_lines,
    open_text,
    ort_node_indices,
    record_bound,
)
from renderer.annotations.measures import finite_decoder, mean, refused, total
from renderer.core.errors import AnnotationError
from renderer.core.id_rules import IdIndex, whole_number
from renderer.core.ir import Model, Node
from renderer.core.records import AnnotationSet, Entry, MetricInfo

NAME = "ort"
DESCRIPTION = "ONNX Runtime profile (SessionOptions.enable_profiling JSON trace)"

_KERNEL = "_kernel_time"
_UNNAMED = re.compile(r"^(?P<op>[A-Za-z][A-Za-z0-9]*)_(?P<index>\d+)$")
_FUSION = re.compile(r"^(?P<base>.*?)/[A-Za-z0-9_]*(?:Fusion|Fuse|Fused)[A-Za-z0-9_]*(?:/.*)?$")
_SIZE_ARGS = ("output_size", "activation_size", "parameter_size")

METRICS = {
    "latency_us": MetricInfo(
        "latency_us",
        NAME,
        "µs",
        False,
        "ONNX Runtime kernel time per run, mean over runs (first run left out when several)",
        main=True,
    ),
    "latency_us_median": MetricInfo(
        "latency_us_median",
        NAME,
        "µs",
        False,
        "ONNX Runtime kernel time per run, median (first run left out when several)",
    ),
    "latency_first_us": MetricInfo(
        "latency_first_us", NAME, "µs", False, "ONNX Runtime kernel time in the first run"
    ),
    "output_size": MetricInfo("output_size", NAME, "B", None, "bytes of the node's outputs (ORT)"),
    "activation_size": MetricInfo(
        "activation_size", NAME, "B", None, "bytes of the node's non-constant inputs (ORT)"
    ),
    "parameter_size": MetricInfo(
        "parameter_size", NAME, "B", None, "bytes of the node's constant inputs (ORT)"
    ),
}


def match(path: Path, head: str) -> bool:
    text = head.lstrip()
    return (
        text.startswith("[")
        and '"cat"' in head
        and '"ph"' in head
        and (_KERNEL in head or '"session_initialization"' in head or '"model_loading' in head)
    )


class _Profile:
    """Per-name series of per-run durations, built while streaming the events."""

    def __init__(self, bound: int) -> None:
        self.bound = bound  # the most distinct node names (``lookup.record_bound``)
        self.runs: list[dict[str, float]] = []
        self.current: dict[str, float] = {}
        self.occurrences: dict[str, list[float]] = {}
        self.calls: dict[str, int] = {}
        self.args: dict[str, dict[str, Any]] = {}
        self.order: list[str] = []
        self.run_totals: list[float] = []
        self.session: dict[str, float] = {}

    def add(self, event: Any, where: str) -> None:
        if type(event) is not dict:
            raise AnnotationError(f"{where}: expected a trace event object, got {type(event).__name__}")
        name, cat = event.get("name"), event.get("cat")
        if cat == "Node":
            if type(name) is not str or not name.endswith(_KERNEL):
                return
            dur = event.get("dur", 0)
            if type(dur) is not int and type(dur) is not float:
                raise AnnotationError(f"{where}: event {name[:60]!r} has a non-numeric 'dur'")
            if dur < 0:
                raise AnnotationError(f"{where}: event {name[:60]!r} has a negative 'dur' ({dur})")
            node = name[: -len(_KERNEL)]
            calls = self.calls.get(node)
            if calls is None:
                if len(self.order) >= self.bound:
                    raise AnnotationError(f"{where}: more than {self.bound:,} node names, far more than the model has")
                self.order.append(node)
                calls = 0
                args = event.get("args")
                self.args[node] = args if isinstance(args, dict) else {}
            self.calls[node] = calls + 1
            current = self.current
            current[node] = total((current.get(node, 0.0), dur), where, "dur")
            if not self.runs:  # kept only until the first model_run shows runs are marked
                self.occurrences.setdefault(node, []).append(float(dur))
        elif cat == "Session" and isinstance(name, str):
            dur = event.get("dur", 0)
            if isinstance(dur, bool) or not isinstance(dur, (int, float)):
                raise AnnotationError(f"{where}: event {name[:60]!r} has a non-numeric 'dur'")
            if dur < 0:
                raise AnnotationError(f"{where}: event {name[:60]!r} has a negative 'dur' ({dur})")
            if name == "model_run":
                self.runs.append(self.current)
                self.current = {}
                self.run_totals.append(float(dur))
                self.occurrences.clear()
            elif name in ("session_initialization", "model_loading_uri", "model_loading_array"):
                self.session[name] = float(dur)

    def series(self) -> tuple[dict[str, list[float | None]], int]:
        """name → per-run duration (None where a run lacks it), and the number of runs."""
        if self.runs:
            # events between two model_run events form a run; empty buckets come from a writer that logs
            # model_run first, and then the events after the last one are the last run
            runs = [r for r in [*self.runs, self.current] if r]
            return {n: [r.get(n) for r in runs] for n in self.order}, len(runs)
        count = max((len(v) for v in self.occurrences.values()), default=0)
        return {n: [*v, *([None] * (count - len(v)))] for n, v in self.occurrences.items()}, count


_DECODE = finite_decoder().raw_decode


def _parse(text: str) -> Any:
    value, end = _DECODE(text)
    if end != len(text):
        raise json.JSONDecodeError("extra data", text, end)
    return value


def _events(path: Path, profile: _Profile) -> None:
    """Feed every event to ``profile``: line by line when the file has one event per line, else whole (a first
    line too long to be one event is the whole document on one line)."""
    try:
        if _event_lines(path, profile):
            return
    except LineTooLong as e:
        if e.line > 1:  # past the first line: a file of one event per line, with one too long
            raise
    data = load_json(path, finite=True)
    if not isinstance(data, list):
        raise AnnotationError(f"{path}: an ONNX Runtime profile is a JSON array of trace events")
    for position, event in enumerate(data):
        profile.add(event, f"{path}: event {position}")


def _event_lines(path: Path, profile: _Profile) -> bool:
    """Feed the events of a profile of one event per line to ``profile``: False when it is not one."""
    with open_text(path) as handle:
        lines = numbered_lines(path, handle)
        for number, line in lines:
            text = line.strip()
            if text in ("", "["):
                continue
            if text.startswith("[{"):
                text = text[1:]
            text = text.removesuffix(",")
            if text.endswith("}]"):
                text = text[:-1]
            if text == "]":
                return True
            try:
                event = _parse(text)
            except json.JSONDecodeError:
                break  # not one event per line: parse the whole document instead
            except ValueError as e:  # a number no float holds (NaN, 1e400, 400 digits)
                raise refused(path, text, 0, e, number - 1) or AnnotationError(
                    f"{path}:{number}: invalid JSON (a number too long to read)") from None
            except RecursionError:
                raise AnnotationError(f"{path}:{number}: invalid JSON (nested too deeply)") from None
            profile.add(event, f"{path}:{number}")
            for number, line in lines:
                text = line.strip()
                if text in ("", "]"):
                    continue
                text = text.removesuffix(",")
                if text.endswith("}]"):
                    text = text[:-1]
                try:
                    event = _parse(text)
                except json.JSONDecodeError as e:
                    raise AnnotationError(f"{path}:{number}: invalid JSON in trace event ({e.msg})") from None
                except ValueError as e:
                    raise refused(path, text, 0, e, number - 1) or AnnotationError(
                        f"{path}:{number}: invalid JSON (a number too long to read)") from None
                except RecursionError:
                    raise AnnotationError(f"{path}:{number}: invalid JSON (nested too deeply)") from None
                profile.add(event, f"{path}:{number}")
            return True
        else:
            raise AnnotationError(f"{path}: empty profile (no trace events)")
    return False


def read(path: Path, model: Model) -> AnnotationSet:
    profile = _Profile(record_bound(model))
    _events(path, profile)
    result = AnnotationSet(source=NAME, path=str(path), metrics=dict(METRICS))
    series, n_runs = profile.series()
    mapper = _Mapper(model)
    targets: dict[Node, list[str]] = {}
    for name in profile.order:
        node = mapper.find(name, profile.args.get(name, {}))
        if node is None:
            result.unmatched.append(name)
        else:
            targets.setdefault(node, []).append(name)
    for node, names in targets.items():
        result.operators.append((node_ref(node), _entry(node, names, series, profile, n_runs, path)))
    result.operators.sort(key=lambda pair: pair[0].key)  # type: ignore[union-attr]
    graph = result.graph.values
    used = _used_runs(profile.run_totals)
    if used:
        graph["model_run_us"] = round(mean(used, path, "model_run dur"), 3)
    if n_runs:
        graph["ort_runs"] = n_runs
    if "session_initialization" in profile.session:
        graph["session_initialization_us"] = profile.session["session_initialization"]
    return result


def recorded_shapes(path: Path, model: Model) -> dict[int, dict[str, tuple[str, list[int]]]]:
    """Graph index → tensor name → (ORT's type name, dims), as the profile's first run recorded them: the
    ``input_type_shape`` and ``output_type_shape`` of each node event that maps to an operator of the same type (a
    fused or replaced node's shapes are not that operator's), slot by slot when the counts agree. A tensor is
    filed under the graph that holds it; every graph with an operator in the profile (an If branch taken, a Loop
    body run) has an entry, empty when its events recorded no shape."""
    profile = _Profile(record_bound(model))
    _events(path, profile)
    mapper = _Mapper(model)
    shapes: dict[int, dict[str, tuple[str, list[int]]]] = {}
    for name in profile.order:
        args = profile.args.get(name, {})
        node = mapper.find(name, args)
        if node is None or args.get("op_name", node.op_type) != node.op_type:
            continue
        shapes.setdefault(node.graph.index, {})
        present = [value for value in node.inputs if value is not None]
        for values, key in ((present, "input_type_shape"), (node.outputs, "output_type_shape")):
            recorded = [_type_shape(item) for item in args.get(key) or []] if isinstance(args.get(key), list) else []
            if len(recorded) == len(values):
                for value, found in zip(values, recorded):
                    if found is not None:
                        shapes.setdefault(value.graph.index, {}).setdefault(value.name, found)
    return shapes


def _type_shape(item: Any) -> tuple[str, list[int]] | None:
    """``{"float": [1, 16]}`` → ("float", [1, 16]); None for anything else."""
    if isinstance(item, dict) and len(item) == 1:
        (dtype, dims), = item.items()
        if isinstance(dtype, str) and isinstance(dims, list) and all(
                type(d) is int and 0 <= d < 2**62 for d in dims):
            return dtype, list(dims)
    return None


def _used_runs(values: list[float]) -> list[float]:
    return values[1:] if len(values) > 1 else values


def _entry(
    node: Node, names: list[str], series: dict[str, list[float | None]], profile: _Profile, n_runs: int, path: Path
) -> Entry:
    where = f"{path}: node {(node.name or node.op_type)[:60]!r}"
    per_run: list[float] = []
    for i in range(n_runs):
        parts = [series[n][i] for n in names if series[n][i] is not None]
        if parts:
            per_run.append(total(parts, where, "dur"))  # type: ignore[arg-type]
    entry = Entry()
    if per_run:
        used = _used_runs(per_run)
        entry.values["latency_us"] = round(mean(used, where, "latency_us"), 3)
        import statistics  # here: every render that detects an annotation file's reader imports this module

        entry.values["latency_us_median"] = round(float(statistics.median(used)), 3)
        entry.values["latency_first_us"] = per_run[0]
    calls = sum(profile.calls[n] for n in names)
    if n_runs and calls > n_runs:
        entry.values["calls_per_run"] = round(calls / n_runs, 3)
    args = profile.args.get(names[0], {})
    for key in ("op_name", "provider"):
        if isinstance(args.get(key), str):
            entry.values[key] = args[key]
    for key in _SIZE_ARGS:
        value = args.get(key)
        if isinstance(value, str) and whole_number(value, signed=True) is not None:
            entry.values[key] = whole_number(value, signed=True)
        elif isinstance(value, int) and not isinstance(value, bool):
            entry.values[key] = value
    shapes = args.get("output_type_shape")
    if isinstance(shapes, list):
        text = _shapes_text(shapes)
        if text:
            entry.values["output_type_shape"] = text
    if names != [node.name]:
        entry.values["ort_node"] = ", ".join(names)  # how ORT called it: a fused or renamed node
    return entry


def _shapes_text(shapes: list[Any]) -> str:
    """``[{"float": [1, 16]}]`` → ``float[1,16]``."""
    parts = []
    for item in shapes[:8]:
        if isinstance(item, dict):
            for dtype, dims in list(item.items())[:1]:
                if isinstance(dims, list):
                    parts.append(f"{dtype}[{','.join(str(d) for d in dims[:8])}]")
    return " ".join(parts)


class _Mapper:
    """Profile node names → operators of the model."""

    def __init__(self, model: Model) -> None:
        self.model = model
        self.lookup = IdIndex.build(model)
        self.ort_index = ort_node_indices(model)

    def find(self, name: str, args: dict[str, Any]) -> Node | None:
        index = _int(args.get("node_index"))
        by_name = self.lookup.nodes_named(name)
        if len(by_name) == 1:
            return by_name[0]
        if len(by_name) > 1 and index is not None:
            # the same name in several graphs (If branches): ORT's index within the graph decides
            picked = [n for n in by_name if self.ort_index[n.graph.index].get(index) is n]
            if len(picked) == 1:
                return picked[0]
            return None
        unnamed = _UNNAMED.match(name)
        if unnamed:
            node = self._by_ort_index(unnamed.group("op"), int(unnamed.group("index")))
            if node is not None:
                return node
        for candidate in _tensor_candidates(name):
            producer = self.lookup.producer(candidate)
            if producer is not None:
                return producer
        fused = _FUSION.match(name)
        if fused and fused.group("base"):
            base = fused.group("base")
            node = self.lookup.node(base)
            if node is not None:
                return node
            producer = self.lookup.producer(base)
            if producer is not None:
                return producer
        return None

    def _by_ort_index(self, op_type: str, index: int) -> Node | None:
        found = [
            table[index]
            for table in self.ort_index.values()
            if index in table and not table[index].name and table[index].op_type == op_type
        ]
        return found[0] if len(found) == 1 else None


def _tensor_candidates(name: str) -> list[str]:
    """The name itself and the name without one or two ``_suffix`` parts that ORT's layout passes append."""
    candidates = [name]
    current = name
    for _ in range(2):
        head, sep, tail = current.rpartition("_")
        if not sep or not head or not tail.isalnum():
            break
        candidates.append(head)
        current = head
    return candidates


def _int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        return whole_number(value)
    return None
