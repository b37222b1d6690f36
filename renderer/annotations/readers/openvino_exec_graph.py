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
``primitive_type``, ``runtime_precision``, ``layer_type``. The file is parsed as ``files.openvino_xml`` parses every
OpenVINO XML (expat, no DTD accepted, bounded), the parsing the execution graph's loader (``loaders.openvino``) shares.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from renderer.annotations.lookup import MAX_JSON_BYTES, attribute_fused, node_ref, record_bound
from renderer.annotations.measures import Where, measure
from renderer.annotations.readers.openvino_counters import find_node
from renderer.core.errors import AnnotationError
from renderer.core.escape import clean
from renderer.core.id_rules import IdIndex
from renderer.core.ir import Model, Node
from renderer.core.records import AnnotationSet, Entry, MetricInfo

if TYPE_CHECKING:  # (imported where a file is read: every render detecting a file's reader imports this module)
    from renderer.files import openvino_xml

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
        where = Where(path, layer.line, layer.column)
        timed = timed or "execTimeMcs" in data
        if layer_type in _SKIPPED:
            continue
        micros = measure(data.get("execTimeMcs", ""), where, "execTimeMcs", missing=_NOT_RUN)
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
        attribute_fused(entries, nodes, {"exec_time_us": float(micros)}, name, "openvino_layer", where)
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


def own_times(model: Model) -> AnnotationSet:
    """An execution graph loaded as the model (``loaders.openvino_exec``): each primitive's own ``execTimeMcs``
    (kept as its stored text) as its ``exec_time_us``, ``exec_status`` for those that did not run."""
    result = AnnotationSet(source=NAME, path=model.path, metrics=dict(METRICS))
    for node in model.nodes():
        text = node.metadata.get("execTimeMcs", "")
        if not text.strip():
            continue
        where = Where(Path(model.path))
        micros = measure(text, where, f"layer {clean(node.name, 80)!r}: execTimeMcs", missing=_NOT_RUN)
        values = {"exec_time_us": float(micros)} if micros is not None else {"exec_status": clean(text, 40)}
        result.operators.append((node_ref(node), Entry(values)))
    return result


def _layers(path: Path, bound: int) -> list[openvino_xml.Layer]:
    """Each ``<layer>`` under ``<net><layers>`` with its ``<data>`` attributes and place (``files.openvino_xml``);
    more than ``bound`` layers is refused as it is reached."""
    from renderer.files import openvino_xml

    return openvino_xml.read_net(path, AnnotationError, "an OpenVINO execution graph", bound, MAX_JSON_BYTES).layers
