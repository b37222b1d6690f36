"""TensorRT ``trtexec --exportProfile=profile.json``, mapped onto the ONNX model's nodes through the layer
information of ``--exportLayerInfo=layers.json`` (engine built with ``--profilingVerbosity=detailed``) when that
file lies beside the profile.

The profile (``Profiler::exportJSONProfile`` in TensorRT's ``samples/common/sampleReporting.cpp``) is a JSON array:
first ``{"count": <iterations>}``, then one object per engine layer, ``{"name", "timeMs" (all iterations),
"averageMs", "medianMs", "percentage" (of the total)}``. trtexec writes the names unescaped, so a name holding a
``"`` makes the file invalid JSON, reported as such.

The layer information (``IEngineInspector::getEngineInformation(kJSON)``) is ``{"Layers": [...], "Bindings": [...]}``;
with detailed verbosity each layer is an object with ``Name``, ``LayerType``, ``TacticName``, ``Inputs``,
``Outputs`` and ``Metadata``: the ONNX nodes the layer was built from, ``[ONNX Layer: <node name>]`` each, joined
by the control characters ``\\x1f`` (and ``\\x1e`` between groups) in TensorRT 10. It is looked for beside the
profile, the word ``profile`` in the file name replaced by ``layers``, ``layer_info``, ``layerinfo`` or ``graph``
(TREx's ``<engine>.graph.json``); the legend names the file used.

Mapping a profile layer to nodes: the ONNX nodes its Metadata lists; without layer information, the parts of its
name, which TensorRT builds from the node names: ``a + b + c`` for a fused layer, ``PWN(a, b)`` for fused
pointwise ops, ``node_of_<tensor>`` for an unnamed node (each part a node name, else the producer of a tensor of
that name). Layers TensorRT inserted (``Reformatting CopyNode for …``, ``[trainStation…]``) and layers whose
parts name no node (Myelin's ``{ForeignNode[…]}`` without layer information) are reported in the coverage line.

Read onto the engine's own layer graph (``loaders.tensorrt``, the ``--exportLayerInfo`` file loaded as the model),
each profile layer is the operator of its name, and nothing is looked for beside the profile.

Attribution of a fused layer: its time goes to its first node (the one the fusion is named after, the Conv of
Conv + BatchNormalization + Relu); every node of the layer gets ``trt_layer`` (the layer's name) and the others
``time_on`` (the node holding the time), so times add up to the profile's. Values: ``average_ms`` (the main
metric: it colours the picture when no ``--color-by`` is given), ``median_ms``, ``percent``, and from the layer
information ``layer_type`` and ``tactic``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from renderer.annotations.lookup import MAX_JSON_BYTES, attribute_fused, json_items, node_ref, record_bound
from renderer.annotations.measures import Where, total
from renderer.core.errors import AnnotationError
from renderer.core.id_rules import IdIndex
from renderer.core.ir import Model, Node
from renderer.core.records import AnnotationSet, Entry, MetricInfo
from renderer.files import inputs

NAME = "tensorrt"
DESCRIPTION = "TensorRT trtexec --exportProfile JSON (with --exportLayerInfo beside it)"

LAYER_INFO_WORDS = ("layers", "layer_info", "layerinfo", "graph")
_ONNX_LAYER = re.compile(r"\[ONNX Layer: ([^\x1e\x1f]*?)\](?=[\x1e\x1f]|$|\[)")
_PWN = re.compile(r"^PWN\((?P<inner>.*)\)$")
_INSERTED = ("Reformatting CopyNode", "[trainStation")
_MAX_PARTS = 64

METRICS = {
    "average_ms": MetricInfo("average_ms", NAME, "ms", False, "TensorRT layer time per inference, mean over the "
                             "profiled iterations (trtexec averageMs)", main=True),
    "median_ms": MetricInfo("median_ms", NAME, "ms", False, "TensorRT layer time per inference, median"),
    "percent": MetricInfo("percent", NAME, "%", False, "share of the engine's profiled time (TensorRT)"),
}


def match(path: Path, head: str) -> bool:
    text = head.lstrip("\ufeff").lstrip()
    return text.startswith("[") and re.match(r'\[\s*\{\s*"count"\s*:', text) is not None


@dataclass
class _Layer:
    name: str
    average: float
    median: float | None
    percent: float | None
    info: dict[str, Any] = field(default_factory=dict)
    line: int | None = None


def read(path: Path, model: Model) -> AnnotationSet:
    result = AnnotationSet(source=NAME, path=str(path), metrics=dict(METRICS))
    layers, count = _profile(path, record_bound(model))
    engine = model.format == "tensorrt"  # the engine's own layer graph: a layer is the operator of its name
    info_path, infos = (None, {}) if engine else _layer_info(path)
    if info_path is not None:
        result.graph.values["TensorRT layer info"] = info_path.name
        result.side_files.append(str(info_path))
    result.graph.values["tensorrt_iterations"] = count
    lookup = IdIndex.build(model)
    entries: dict[Node, Entry] = {}
    for layer in layers:
        layer.info = infos.get(layer.name, {})
        nodes = _engine_layer(lookup, layer.name) if engine else _nodes(lookup, layer)
        if not nodes:
            result.unmatched.append(f"{layer.name} ({layer.average:g} ms)")
            continue
        _attribute(entries, layer, nodes, Where(path, layer.line), engine)
    result.operators = [(node_ref(node), entry) for node, entry in entries.items()]
    return result


def _profile(path: Path, bound: int) -> tuple[list[_Layer], int]:
    """The profile's layers, read entry by entry (at most ``bound``: far more than the model has operators is no
    profile of it), and its iteration count; times must be finite and not negative."""
    items = json_items(path, bound)
    try:
        _, first = next(items)
    except StopIteration:
        first = None
    if not isinstance(first, dict) or "count" not in first:
        raise AnnotationError(f"{path}: a trtexec profile is a JSON array starting with {{\"count\": N}}")
    count = first["count"]
    if not _is_number(count) or count < 0:
        raise AnnotationError(f"{path}: 'count' must be a number, 0 or more")
    layers = []
    for position, (line, item) in enumerate(items, start=1):
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            raise AnnotationError(f"{path}:{line}: entry {position} is not a layer object with a 'name'")
        label = f"{path}:{line}: entry {position} ({item['name'][:60]!r})"
        average = item.get("averageMs")
        if not _is_number(average):
            raise AnnotationError(f"{label} has no numeric 'averageMs'")
        median, percent = item.get("medianMs"), item.get("percentage")
        for key, value in (("averageMs", average), ("medianMs", median), ("percentage", percent)):
            if _is_number(value) and value < 0:
                raise AnnotationError(f"{label}: {key} {value} is negative (a time or share cannot be)")
        layers.append(_Layer(item["name"], float(average), float(median) if _is_number(median) else None,
                             float(percent) if _is_number(percent) else None, line=line))
    return layers, count


def _is_number(value: object) -> bool:
    """A JSON number (``json_items`` refuses NaN, Infinity and numbers past the float range)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def layer_info_paths(profile: Path) -> list[Path]:
    """Where the layer information of ``profile`` may be: its name with ``profile`` replaced by each of
    LAYER_INFO_WORDS.

    >>> [p.name for p in layer_info_paths(Path("out/resnet.profile.json"))][:2]
    ['resnet.layers.json', 'resnet.layer_info.json']
    """
    if "profile" not in profile.name:
        return []
    return [profile.with_name(profile.name.replace("profile", word)) for word in LAYER_INFO_WORDS]


def _layer_info(profile: Path) -> tuple[Path | None, dict[str, dict[str, Any]]]:
    """The layer information file beside ``profile`` and its detailed layers by name ({} for none)."""
    for candidate in layer_info_paths(profile):
        if not candidate.is_file():
            continue
        try:
            data = _lenient_json(candidate)
        except AnnotationError as e:
            raise AnnotationError(f"{profile}: its layer information {e}") from None
        layers = data.get("Layers") if isinstance(data, dict) else None
        if not isinstance(layers, list):
            raise AnnotationError(f"{profile}: its layer information {candidate} is not an object with 'Layers'")
        return candidate, {str(item["Name"]): item for item in layers
                           if isinstance(item, dict) and isinstance(item.get("Name"), str)}
    return None, {}


def _lenient_json(path: Path) -> Any:
    """A JSON document that may hold raw control characters in its strings (the Metadata separators), which
    strict JSON wants escaped."""
    data = inputs.read_bytes(path, MAX_JSON_BYTES, AnnotationError, "a JSON document")
    try:
        return json.loads(data.decode("utf-8-sig"), strict=False)
    except UnicodeDecodeError:
        raise AnnotationError(f"{path}: not UTF-8 text") from None
    except json.JSONDecodeError as e:
        raise AnnotationError(f"{path}:{e.lineno}: invalid JSON ({e.msg})") from None
    except (RecursionError, ValueError):
        raise AnnotationError(f"{path}: invalid JSON (nested too deeply or a number too long)") from None


def onnx_nodes_of(metadata: str) -> list[str]:
    r"""The ONNX node names in a layer's Metadata.

    >>> onnx_nodes_of("[ONNX Layer: /conv1/Conv]\x1f[ONNX Layer: /relu/Relu]")
    ['/conv1/Conv', '/relu/Relu']
    """
    return [name for name in _ONNX_LAYER.findall(metadata)[:_MAX_PARTS] if name]


def name_parts(name: str) -> list[str]:
    """The node names TensorRT built a layer's name from (none for a layer it inserted).

    >>> name_parts("stem/conv + stem/bn + PWN(block/add, block/relu)")
    ['stem/conv', 'stem/bn', 'block/add', 'block/relu']
    >>> name_parts("Reformatting CopyNode for Input Tensor 0 to stem/conv")
    []
    """
    if name.startswith(_INSERTED):
        return []
    parts: list[str] = []
    for part in name.split(" + ")[:_MAX_PARTS]:
        pwn = _PWN.match(part.strip())
        parts += [p.strip() for p in pwn.group("inner").split(", ")] if pwn else [part.strip()]
    return [p for p in parts[:_MAX_PARTS] if p]


def _nodes(lookup: IdIndex, layer: _Layer) -> list[Node]:
    metadata = layer.info.get("Metadata")
    names = onnx_nodes_of(metadata) if isinstance(metadata, str) and metadata else name_parts(layer.name)
    found: list[Node] = []
    for name in names:
        node = lookup.node(name) or lookup.producer(name) or lookup.producer(name.removeprefix("node_of_"))
        if node is not None and node not in found:
            found.append(node)
    return found


def _engine_layer(lookup: IdIndex, name: str) -> list[Node]:
    node = lookup.node(name)
    return [node] if node is not None else []


def _attribute(entries: dict[Node, Entry], layer: _Layer, nodes: list[Node], where: Where, engine: bool) -> None:
    """The layer's time on its first node; its name on all of them (see the module docstring); on the engine's
    own layer, only its times."""
    times = {"average_ms": layer.average}
    if layer.median is not None:
        times["median_ms"] = layer.median
    if layer.percent is not None:
        times["percent"] = layer.percent
    if engine:  # the layer is its box: no name to repeat on it, no fused nodes to share its time with
        entry = entries.setdefault(nodes[0], Entry())
        for key, value in times.items():
            entry.values[key] = round(total((entry.values.get(key, 0.0), value), where, key), 9)
        return
    attribute_fused(entries, nodes, times, layer.name, "trt_layer", where)
    for node in nodes:
        for key, field_name in (("layer_type", "LayerType"), ("tactic", "TacticName")):
            if isinstance(layer.info.get(field_name), str):
                entries[node].values[key] = layer.info[field_name][:200]
