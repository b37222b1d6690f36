"""OpenVINO's execution graph with performance counters: ``benchmark_app -m model.onnx -exec_graph_path exec.xml
-report_type detailed_counters …`` (or ``serialize(compiled_model.get_runtime_model(), "exec.xml")`` after running
with ``PERF_COUNT`` on).

An IR XML (``<net name=… version=…><layers><layer id name type><data …/>…``) of the layers the plugin ran. Each
layer's ``<data>`` carries ``execTimeMcs`` (microseconds per inference, or ``not_executed``),
``originalLayersNames`` (the model's nodes the layer was built from, comma-separated, in the plugin's order: a
Conv layer ``n0/WithoutBiases`` lists ``n0/WithoutBiases,n0,n1``, itself then the bias Add and the Relu fused into
it), ``primitiveType`` (the kernel) and ``runtimePrecision``.

This is the file that says where fused layers came from, which the counters CSV (``openvino`` reader) does not.
Mapping: each original name to the node of that name, else the producer of a tensor of that name, else the same
without a ``/WithoutBiases`` suffix. A layer's time goes to its first node; every node gets ``openvino_layer``
and the others ``time_on`` (as for TensorRT's fused layers). Layers whose names reach no node (reorders and
converts the plugin inserted, which list none; a Conv whose BatchNormalization OpenVINO folded in is listed as
``Multiply_N`` and the BatchNormalization, and lands on the latter) are in the coverage line with their time;
``Input``, ``Output`` and ``Const`` layers and layers that did not run are left out.

Values: ``exec_time_us`` (the main metric: it colours the picture when no ``--color-by`` is given),
``primitive_type``, ``runtime_precision``, ``layer_type``. The file is parsed by the standard library's expat
(no DTDs or external entities are fetched; expat ≥ 2.4 bounds entity expansion).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from renderer.annotations.lookup import MAX_JSON_BYTES, MAX_LINE_CHARS, attribute_fused, node_ref, record_bound
from renderer.annotations.measures import Where, measure
from renderer.annotations.readers.openvino_counters import find_node
from renderer.core.errors import AnnotationError
from renderer.core.id_rules import IdIndex
from renderer.core.ir import Model, Node
from renderer.core.records import AnnotationSet, Entry, MetricInfo
from renderer.files import inputs

NAME = "openvino-exec-graph"
DESCRIPTION = "OpenVINO execution graph with execTimeMcs (benchmark_app -exec_graph_path, performance counters on)"

_SKIPPED = frozenset({"Input", "Output", "Const", "Parameter", "Result"})
_MAX_NAMES = 64
_NOT_RUN = ("not_executed", "not_run", "optimized_out")

METRICS = {
    "exec_time_us": MetricInfo("exec_time_us", NAME, "µs", False, "OpenVINO layer time per inference "
                               "(execTimeMcs of the execution graph)", main=True),
}


def match(path: Path, head: str) -> bool:
    text = head.lstrip("\ufeff").lstrip()
    return text.startswith(("<?xml", "<net")) and "<net " in text and "<layers>" in text


def read(path: Path, model: Model) -> AnnotationSet:
    result = AnnotationSet(source=NAME, path=str(path), metrics=dict(METRICS))
    lookup = IdIndex.build(model)
    entries: dict[Node, Entry] = {}
    timed = False
    for layer in _layers(path, record_bound(model)):
        name, layer_type, data = layer.name, layer.type, layer.data
        timed = timed or "execTimeMcs" in data
        if layer_type in _SKIPPED:
            continue
        micros = measure(data.get("execTimeMcs", ""), layer.where, "execTimeMcs", missing=_NOT_RUN)
        if micros is None:
            continue
        originals = [n for n in data.get("originalLayersNames", "").split(",")[:_MAX_NAMES] if n]
        nodes: list[Node] = []
        for original in originals:
            node = find_node(lookup, original)
            if node is not None and node not in nodes:
                nodes.append(node)
        if not nodes:
            result.unmatched.append(f"{name} ({layer_type}, {micros:g} µs)")
            continue
        attribute_fused(entries, nodes, {"exec_time_us": float(micros)}, name, "openvino_layer", layer.where)
        for node in nodes:
            values = entries[node].values
            values["layer_type"] = layer_type
            for key, attribute in (("primitive_type", "primitiveType"), ("runtime_precision", "runtimePrecision")):
                if attribute in data:
                    values[key] = data[attribute][:100]
    result.operators = [(node_ref(node), entry) for node, entry in entries.items()]
    if not timed:
        raise AnnotationError(f"{path}: no layer has an execTimeMcs (an execution graph saved with the performance "
                              "counters on: benchmark_app -exec_graph_path … -report_type detailed_counters)")
    return result


@dataclass(slots=True)
class _Layer:
    name: str
    type: str
    data: dict[str, str]
    where: Where


class _Parse:
    """expat's handlers for one file: the ``<layer>``s under ``<net><layers>``, with their ``<data>``."""

    def __init__(self, path: Path, bound: int) -> None:
        import xml.parsers.expat

        self.path, self.bound = path, bound
        self.parser = xml.parsers.expat.ParserCreate()
        self.parser.StartElementHandler = self.start
        self.parser.EndElementHandler = self.end
        self.stack: list[str] = []
        self.found: list[_Layer] = []
        self.listed = False  # a <layers> under <net> was seen
        self.last = 0  # the byte where the last element started or ended

    def end(self, tag: str) -> None:
        self.stack.pop()
        self.last = self.parser.CurrentByteIndex

    def start(self, tag: str, attributes: dict[str, str]) -> None:
        if not self.stack and tag != "net":
            raise AnnotationError(f"{self.path}: not an OpenVINO execution graph (<net> with <layers>)")
        self.listed = self.listed or (self.stack == ["net"] and tag == "layers")
        if self.stack == ["net", "layers"] and tag == "layer":
            if len(self.found) >= self.bound:
                raise AnnotationError(f"{self.path}:{self.parser.CurrentLineNumber}: more than {self.bound:,} layers, "
                                      "far more than the model could have run")
            where = Where(self.path, self.parser.CurrentLineNumber, self.parser.CurrentColumnNumber + 1)
            self.found.append(_Layer(attributes.get("name", ""), attributes.get("type", ""), {}, where))
        elif self.stack == ["net", "layers", "layer"] and tag == "data" and self.found:
            self.found[-1].data.update(attributes)
        self.stack.append(tag)
        self.last = self.parser.CurrentByteIndex

    def feed(self, chunk: bytes, fed: int) -> None:
        """Parse the next ``chunk``, ``fed`` bytes having been parsed before it; a tag (or text) that goes on for
        more than MAX_LINE_CHARS bytes is refused before expat holds more of it."""
        self.parser.Parse(chunk, False)
        if fed + len(chunk) - self.last > MAX_LINE_CHARS:
            raise AnnotationError(f"{self.path}:{self.parser.CurrentLineNumber}: more than {MAX_LINE_CHARS:,} "
                                  "characters without a tag ending, longer than any a tool writes; not read further")


def _layers(path: Path, bound: int) -> list[_Layer]:
    """Each ``<layer>`` under ``<net><layers>`` with its ``<data>`` attributes and place, parsed as the file is read
    (in chunks, by expat); more than ``bound`` layers is refused as it is reached."""
    import xml.parsers.expat

    parse = _Parse(path, bound)
    try:
        fed = 0
        for chunk in inputs.chunks(path, MAX_JSON_BYTES, AnnotationError, "an XML document"):
            parse.feed(chunk, fed)
            fed += len(chunk)
        parse.parser.Parse(b"", True)
    except xml.parsers.expat.ExpatError as e:
        raise AnnotationError(f"{path}:{e.lineno}: invalid XML ({xml.parsers.expat.ErrorString(e.code)})") from None
    except RecursionError:
        raise AnnotationError(f"{path}: invalid XML (nested too deeply)") from None
    if not parse.listed:
        raise AnnotationError(f"{path}: not an OpenVINO execution graph (<net> with <layers>)")
    return parse.found
