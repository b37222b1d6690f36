"""ONNX loader: ModelProto → ir.Model.

Graph numbering: the main graph is 0; subgraphs (If branches, Loop and Scan bodies, any GRAPH attribute)
follow depth-first in node order, then attribute order. A subgraph that reads a value of an enclosing graph
refers to the outer ``ir.Value`` directly, so edges cross from the outer graph into the subgraph.

Weights are not read at load time. The file is memory-mapped; the large ``raw_data`` of main-graph
initializers is located in the protobuf wire format (``onnx_wire``) and left out of what protobuf parses, and
their ``ir.Tensor`` readers return numpy views over the mapped bytes. External data is read when a metric
first asks for it.

``Model.raw`` is a ``Loaded``: the parsed proto and what loading changed in it, from which ``stored_proto``
rebuilds the file's own ModelProto for writers that edit a copy (``annograph embed``) without a second parse.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from renderer.core import ir
from renderer.core.errors import LoaderError, OperatorDataError, first_line
from renderer.core.escape import clean
from renderer.core.progress import detail, said
from renderer.data.categories import category
from renderer.loaders import free_dims
from renderer.loaders.free_dims import unnamed_dim_name
from renderer.loaders.mapped import map_file
from renderer.loaders.onnx import ort_shapes
from renderer.loaders.onnx import wire as onnx_wire
from renderer.loaders.protocol import RealValues
from renderer.loaders.registry import decode_text, refuse_impossible_shapes

if TYPE_CHECKING:
    import onnx

FORMAT = "onnx"
EXTENSIONS = (".onnx", ".onnxmodel", ".pb")

# ModelProto field tags that can open a file: ir_version(1), producer_name(2), producer_version(3),
# domain(4), model_version(5), doc_string(6), graph(7), opset_import(8), metadata_props(14).
_FIRST_TAGS = {0x08, 0x12, 0x1A, 0x22, 0x28, 0x32, 0x3A, 0x42, 0x72}

_SHAPE_INFERENCE_MAX_BYTES = 2**31 - 1  # onnx.shape_inference refuses protos over 2 GiB


def match(head: bytes) -> bool:
    """A protobuf whose first field is ir_version (tag 0x08) with a plausible value."""
    return len(head) >= 2 and head[0] == 0x08 and 1 <= head[1] <= 64 and (len(head) < 3 or head[2] in _FIRST_TAGS)


def _dtype_names() -> dict[int, str]:
    import onnx

    names: dict[int, str] = {}
    for name, number in onnx.TensorProto.DataType.items():
        if name == "UNDEFINED":
            continue
        names[number] = {"FLOAT": "float32", "DOUBLE": "float64", "FLOAT16": "float16"}.get(name, name.lower())
    return names


def _parse(path: Path) -> tuple[Any, onnx_wire.Split | None, onnx.ModelProto]:
    """(the mapped file, where its large weights lie, the proto parsed without them)."""
    import onnx

    buffer = map_file(path)
    parts = onnx_wire.split(buffer)
    try:
        if parts is not None:  # large weights stay in the mapped file; protobuf parses the rest
            proto = onnx.load_model_from_string(parts.light)
        else:
            proto = onnx.load_model_from_string(bytes(buffer))  # the bytes read once (a pipe cannot be reread)
    except Exception as e:  # protobuf raises DecodeError, RuntimeWarning-like errors, ValueError…
        raise LoaderError(f"{path}: not a valid ONNX model ({first_line(e)})") from None
    if not proto.HasField("graph"):
        raise LoaderError(f"{path}: not a valid ONNX model (no graph)")
    return buffer, parts, proto


_SPLIT: list[tuple[ir.Model, Any, onnx_wire.Split | None]] = []


def _parse_again(path: Path, like: ir.Model) -> tuple[Any, onnx_wire.Split | None, onnx.ModelProto]:
    """``_parse`` for a load of ``like``'s file at other dims: the file is mapped and its weights found once for
    all of them (the MACs formulas load it three times or more), the light proto parsed again for each."""
    import onnx

    if _SPLIT and _SPLIT[0][0] is like:
        _, buffer, parts = _SPLIT[0]
        return buffer, parts, onnx.load_model_from_string(parts.light if parts is not None else bytes(buffer))
    buffer, parts, proto = _parse(path)
    _SPLIT[:] = [(like, buffer, parts)]
    return buffer, parts, proto


def pinnable(path: Path) -> list[str]:
    """The names ``--dim`` can pin in the model at ``path`` (its inputs' symbolic dims, and the KV cache presets
    ``prefill``/``decode`` when it has a cache), without loading it."""
    graph = _parse(path)[2].graph
    _name_unnamed_dims(graph)
    free = _symbolic(graph.input)
    slots = _slots(graph)
    has_cache = bool(free_dims.caches(free, free_dims.roles(slots)))
    return free + [p for p in free_dims.PRESETS if has_cache and p not in free]


def _slots(graph: onnx.GraphProto) -> list[free_dims.Slot]:
    """Where each symbolic dim of the main graph's inputs sits (``free_dims``)."""
    import onnx

    integers = {onnx.TensorProto.INT32, onnx.TensorProto.INT64, onnx.TensorProto.UINT32, onnx.TensorProto.UINT64}
    initializers = {t.name for t in graph.initializer}
    slots = []
    for value in graph.input:
        if value.name in initializers or not value.type.HasField("tensor_type"):
            continue
        tensor = value.type.tensor_type
        shape = tuple(d.dim_param if d.HasField("dim_param") else int(d.dim_value) for d in tensor.shape.dim)
        for axis, dim in enumerate(shape):
            if isinstance(dim, str) and dim:
                slots.append(free_dims.Slot(dim, decode_text(value.name), axis, shape, tensor.elem_type in integers))
    return slots


UNNAMED = ("", "?")
"""dim_param values that name nothing: an empty one, and the ``?`` some exporters write for "unknown" (a negative
dim_value, ``-1``, is named too)."""


def _name_unnamed_dims(graph: onnx.GraphProto) -> None:
    """Give the main graph inputs' unnamed dims (neither a size nor a name, or ``?``) a name ``--dim`` can pin
    (``unnamed_dim_name``), so they are free dims like named ones: hints name them, pinning one fixes it."""
    initializers = {t.name for t in graph.initializer}
    for value in graph.input:
        if value.name in initializers or not value.type.HasField("tensor_type"):
            continue
        for axis, dim in enumerate(value.type.tensor_type.shape.dim):
            if (dim.dim_value < 0 if dim.HasField("dim_value") else dim.dim_param in UNNAMED):
                dim.dim_param = unnamed_dim_name(value.name, axis)  # a -1 size says "any" too


def _symbolic(values: Any) -> list[str]:
    """The symbolic dims of ``values`` (ValueInfoProtos), in order, each once."""
    names: dict[str, None] = {}
    for value in values:
        if value.type.HasField("tensor_type"):
            names.update((d.dim_param, None) for d in value.type.tensor_type.shape.dim
                         if d.HasField("dim_param") and d.dim_param)
    return list(names)


def load(path: Path, dims: dict[str, int] | None = None, check_dims: bool = True,
         shape_run: bool = True, values: RealValues | None = None, assume: bool = True,
         retried: dict[str, tuple[int, str]] | None = None, like: ir.Model | None = None,
         keep: frozenset[ir.ElementKey] | None = None) -> ir.Model:
    """``retried``: assumed dims taken again, with why (``free_dims.retries``), after a shape run that failed;
    ``like``: an earlier load of this file, whose operators the load copies (``retype``) rather than build them
    again: the same model, at other dims; ``keep``: with ``like``, the operators wanted (``load_like``)."""
    values = values or RealValues()
    ahead = _taken(path, dims, like is not None and keep is not None and assume and values == RealValues() and not (
        shape_run or check_dims or retried))
    if ahead is None:
        buffer, parts, proto = _parse(path) if like is None else _parse_again(path, like)
        subs = graphs(proto.graph)  # loading adds no operator: the graphs the steps below walk are these
        file_shapes = _shapes(subs) if keep is None else []
        ahead = _settle(path, _Settled(buffer, parts, proto, subs), dims, check_dims, values, assume, retried, like)
    else:
        file_shapes = []
        said(ahead.said)
    buffer, parts, proto, subs, notes = ahead.buffer, ahead.parts, ahead.proto, ahead.subs, ahead.notes
    declared, dims, assumed, feeds = ahead.declared, ahead.dims, ahead.assumed, ahead.feeds
    weights = {} if parts is None else {i: (buffer, offset, length) for i, (offset, length) in parts.weights.items()}
    idle: dict[int, str] = {}
    if values.profiles:
        proto, note, idle = _shapes_from_profiles(path, proto, weights, values.profiles)
        notes.append(note)
    elif shape_run and (absent := _absent_external_data(path, proto, subs)):
        notes.append(absent)
    elif shape_run:
        failed: list[str] = []
        tries = _tries(proto, ahead.slots, assumed) if retried is None and feeds is None else []
        small = _negative(proto, declared) if assumed else ""
        if small and tries:
            other = _other_sizes(path, proto, tries, assumed, small)
            if other:
                return load(path, ahead.asked, check_dims, shape_run, values, assume, other, like, keep)
        with _ahead_of(path, ahead, like is None and feeds is None):
            proto, ran, idle = _shapes_from_run(path, proto, weights, feeds, str(values.inputs), failed, tries)
        other = _other_sizes(path, proto, tries, assumed, failed[0]) if failed and retried is None else None
        if other:
            return load(path, ahead.asked, check_dims, shape_run, values, assume, other, like, keep)
        notes.extend(ran)
    if len(subs) > 1:
        from renderer.loaders.onnx import loop_carry

        proto = loop_carry.carry(proto, _infer_shapes)
    notes.append(_left_negative(path, proto, declared, dims))
    model = _build(path, proto, weights) if like is None else _rebuilt(path, proto, weights, like, keep)
    model.raw = Loaded(proto, file_shapes, weights)
    model.notes.extend(note for note in notes if note)
    for index, why in idle.items():
        model.graphs[index].not_run = why
    model.pinnable_dims = ahead.free
    model.assumed_dims = assumed
    model.pinned_dims = dict(dims)
    return model


@dataclass
class _Settled:
    """A load up to its shape run: the file parsed (``buffer``, ``parts``, ``proto``; ``subs``: its graphs), then
    (``_settle``) its dims settled and pinned and its shapes inferred; for a load at other dims made ahead
    (``_prepare_ahead``), the lines it would have said (``said``)."""

    buffer: Any
    parts: onnx_wire.Split | None
    proto: onnx.ModelProto
    subs: list[onnx.GraphProto]
    asked: dict[str, int] | None = None
    free: list[str] = dataclasses.field(default_factory=list)
    slots: list[free_dims.Slot] = dataclasses.field(default_factory=list)
    declared: set[str] = dataclasses.field(default_factory=set)
    dims: dict[str, int] = dataclasses.field(default_factory=dict)
    assumed: list[ir.AssumedDim] = dataclasses.field(default_factory=list)
    feeds: dict[str, Any] | None = None
    notes: list[str] = dataclasses.field(default_factory=list)
    said: list[str] = dataclasses.field(default_factory=list)


def _settle(path: Path, parsed: _Settled, dims: dict[str, int] | None, check_dims: bool, values: RealValues,
            assume: bool, retried: dict[str, tuple[int, str]] | None, like: ir.Model | None) -> _Settled:
    """``parsed`` with its dims settled (``dims`` asked) and pinned, its shapes inferred."""
    proto, subs = parsed.proto, parsed.subs
    _check_versions(path, proto)
    _name_unnamed_dims(proto.graph)
    parsed.free, parsed.asked = _symbolic(proto.graph.input), dims
    parsed.slots = _slots(proto.graph)
    parsed.declared = _declared_negative(subs, like)  # a -1 the exporter wrote means "any" (paddle2onnx)
    _clear_negative(v for graph in subs for v in (*graph.value_info, *graph.output))
    dims, parsed.assumed = _settle_dims(path, proto, dims, check_dims, assume and values == RealValues(),
                                        parsed.notes, retried)
    parsed.dims = dims
    feeds = parsed.feeds = ort_shapes.read_feeds(values.inputs, proto.graph) if values.inputs is not None else None
    if dims:
        _pin_dims(proto.graph, dims)
    if feeds is not None:
        ort_shapes.pin_to_feeds(proto.graph, feeds)
    if dims or feeds:
        _drop_symbolic_shapes(proto.graph, subs)
    parsed.proto = _infer_shapes(proto, subs)
    return parsed


_AHEAD: dict[tuple[str, str], _Settled] = {}
"""Loads at other dims made ahead (``_prepare_ahead``): (path, dims asked) → the load settled at them."""


def _ahead_key(path: Path, dims: dict[str, int] | None) -> tuple[str, str]:
    import json

    return str(path), json.dumps(dims, sort_keys=True)


def _taken(path: Path, dims: dict[str, int] | None, takes: bool) -> _Settled | None:
    """The load at ``dims`` made ahead, when one was and this load ``takes`` it (a load ``like`` another, as
    ``_prepare_ahead`` makes them); none else. A load of no model before (``takes`` false) forgets every other."""
    if not takes:
        _AHEAD.clear()
        return None
    return _AHEAD.pop(_ahead_key(path, dims), None)


def drop_ahead() -> None:
    """Forget the loads made ahead that no load took."""
    _AHEAD.clear()


def _ahead_of(path: Path, settled: _Settled, wanted: bool) -> contextlib.AbstractContextManager[None]:
    """Around this load's shape run, when ``wanted`` (the first load of a model, on zero inputs): the loads at
    other dims the MACs formulas will ask for, made meanwhile (``ort_shapes.meanwhile``)."""
    if not wanted or not settled.assumed:
        return contextlib.nullcontext()
    return ort_shapes.meanwhile(lambda stop: _prepare_ahead(path, settled, stop))


def _prepare_ahead(path: Path, settled: _Settled, stop: threading.Event) -> None:
    """Make the loads ``metrics.dim_formulas`` will ask of this model at other dims (``load_like``: no shape run)
    as far as their shapes from onnx inference, each kept in ``_AHEAD`` for that load to take, with what it said:
    on a thread, while this load's shape run waits for its child; it stops before the next once ``stop`` is set.
    A load that fails is not kept: the load itself meets the same and says it."""
    import onnx

    from renderer.core.progress import held
    from renderer.loaders.formula_loads import load_dims

    light = settled.parts.light if settled.parts is not None else bytes(settled.buffer)
    for dims in load_dims(settled.assumed, settled.dims, sum(len(graph.node) for graph in settled.subs)):
        if stop.is_set():
            return
        try:
            with held() as lines:
                proto = onnx.load_model_from_string(light)
                made = _settle(path, _Settled(settled.buffer, settled.parts, proto, graphs(proto.graph)), dims,
                               False, RealValues(), True, None, None)
        except Exception:  # noqa: BLE001
            continue
        made.said = lines
        _AHEAD[_ahead_key(path, dims)] = made


def _check_versions(path: Path, proto: onnx.ModelProto) -> None:
    """Refuses a model newer than the installed onnx package reads (its IR version or its ai.onnx opset)."""
    import onnx

    if proto.ir_version > onnx.IR_VERSION:
        raise LoaderError(
            f"{path}: ONNX IR version {proto.ir_version} is newer than this onnx package supports "
            f"({onnx.IR_VERSION}); upgrade onnx"
        )
    newest = onnx.defs.onnx_opset_version()
    for opset in proto.opset_import:
        if opset.domain in ("", "ai.onnx") and opset.version > newest:
            raise LoaderError(f"{path}: ONNX opset {opset.version} is newer than this onnx package supports ({newest})")


def _left_negative(path: Path, proto: onnx.ModelProto, declared: set[str], dims: dict[str, int]) -> str:
    """Negative sizes the model still computes at ``dims`` made unknown, and the note saying so ("" when none)."""
    small = _negative(proto, declared)
    if not small:
        return ""
    _forget_negative(proto, declared)
    at = ", ".join(f"{clean(name, 40)}={value}" for name, value in dims.items()) or "its sizes"
    return (f"{path}: at {at} the model computes negative sizes ({free_dims.failing_at(small)}): they are left "
            "unknown; pin larger sizes with --dim")


def _absent_external_data(path: Path, proto: onnx.ModelProto, subs: list[onnx.GraphProto]) -> str:
    """A note naming the external-data files the model names that are not beside it ("" when none is missing):
    onnxruntime cannot run it then, so no shape run is tried at any size. ``subs``: ``graphs(proto.graph)``, whose
    stored tensors tell at once whether any data is external (most models: none, and no second walk)."""
    import onnx

    if not any(t.data_location == onnx.TensorProto.EXTERNAL for graph in subs for t in graph.initializer):
        return ""
    absent = [file.name for file in ort_shapes.external_files(path, proto) if not file.is_file()]
    if not absent:
        return ""
    listed = ", ".join(repr(clean(name, 80)) for name in absent[:3]) + (" …" if len(absent) > 3 else "")
    return (f"{path}: external data {listed} not found beside the model: weight values are n/a, and shapes static "
            f"inference cannot reach are left unknown (onnxruntime cannot run the model without it)")


def _tries(proto: onnx.ModelProto, slots: list[free_dims.Slot], assumed: list[ir.AssumedDim],
           ) -> list[tuple[dict[str, int], dict[str, list[int]]]]:
    """The other sizes of the dims assumed by default to run the model at when the run at the assumed ones fails
    (``free_dims.retries``)."""
    base = ort_shapes.input_dims(proto.graph)
    return free_dims.retries(slots, assumed, base) if base is not None else []


def _other_sizes(path: Path, proto: onnx.ModelProto, tries: list[tuple[dict[str, int], dict[str, list[int]]]],
                 assumed: list[ir.AssumedDim], reason: str) -> dict[str, tuple[int, str]] | None:
    """After the shape run at the assumed sizes failed (``reason``): the first of ``tries`` that onnxruntime runs
    the model at, each dim with why; None when none runs."""
    ran = ort_shapes.first_that_runs(path, proto, [inputs for _, inputs in tries])
    if ran is None:
        return None
    return free_dims.retried(assumed, [values for values, _ in tries[:ran + 1]], reason)


def _settle_dims(path: Path, proto: onnx.ModelProto, dims: dict[str, int] | None, check_dims: bool, assume: bool,
                 notes: list[str], retried: dict[str, tuple[int, str]] | None = None,
                 ) -> tuple[dict[str, int], list[ir.AssumedDim]]:
    """The dims to pin (``--dim``'s, resolved to the model's names, the KV cache presets spelled out and the
    tied cache dims completed) and, with ``assume``, a value for every other free input dim (``free_dims``);
    ``retried`` replaces some assumed values."""
    from renderer.core.pinning import resolve

    slots = _slots(proto.graph)
    free = _symbolic(proto.graph.input)
    given = free_dims.presets(dims or {}, free, free_dims.roles(slots), path, check_dims)
    given = resolve(path, given, free, _inner_dims(proto.graph), check_dims)
    if not assume:
        return given, []
    metadata = {decode_text(p.key): decode_text(p.value) for p in proto.metadata_props}
    used = _uses(proto, {s.dim for s in slots if s.dim not in given and free_dims.unsure(s)})
    values, assumed = free_dims.assume(path, slots, given, metadata, notes, _position_rows(proto.graph), used)
    for name, (value, why) in (retried or {}).items():
        values[name] = value
        assumed = [ir.AssumedDim(a.name, value, a.role, why) if a.name == name else a for a in assumed]
    return values, assumed


def _uses(proto: onnx.ModelProto, dims: set[str]) -> dict[str, free_dims.Use]:
    """What the operators reading ``dims`` make of them (``dim_uses``): one symbolic shape inference of the
    unpinned model, only for a model with dims its places leave open (none for named or image dims)."""
    if not dims:
        return {}
    from renderer.loaders.onnx import dim_uses

    return dim_uses.uses(_without_weights(proto), dims)


def _inner_dims(graph: onnx.GraphProto) -> Iterator[str]:
    """The symbolic dims of ``graph``'s other tensors, read only when ``--dim`` names none of its inputs' (the
    refusal's better word): every value_info of a big model is a long walk for a name that nearly always matches."""
    yield from _symbolic([*graph.value_info, *graph.output])


def _position_rows(graph: onnx.GraphProto) -> int | None:
    """The rows of the model's position-embedding table (a Gather from a constant named ``position``): the
    longest sequence it takes, so an assumed length stays within it."""
    tables = {decode_text(t.name): t.dims[0] for t in graph.initializer
              if "position" in decode_text(t.name).lower() and len(t.dims) == 2}
    rows = [tables[decode_text(n.input[0])] for n in graph.node
            if n.op_type == "Gather" and n.input and decode_text(n.input[0]) in tables]
    return min(rows) if rows else None


def _shapes_from_profiles(path: Path, proto: onnx.ModelProto, weights: dict[int, tuple[Any, int, int]],
                          profiles: tuple[Path, ...]) -> tuple[onnx.ModelProto, str, dict[int, str]]:
    """``proto`` with the shapes the onnxruntime ``profiles`` recorded (``profile_shapes``), the line to say, and
    the subgraphs the profiled run never entered (``Graph.not_run``)."""
    from renderer.loaders.onnx import profile_shapes

    shapes = profile_shapes.recorded(_build(path, proto, weights), profiles)
    pinned = profile_shapes.pin_inputs(proto.graph, shapes.get(0, {}))
    if pinned:
        _drop_symbolic_shapes(proto.graph)
        proto = _infer_shapes(proto)
    written = profile_shapes.write(graphs(proto.graph), shapes)
    if written:
        proto = _infer_shapes(proto)
    remaining = profile_shapes.left(graphs(proto.graph), shapes)
    idle = _idle(proto, shapes, "the profiled onnxruntime run did not take this subgraph")
    return proto, profile_shapes.note(path, profiles, pinned, written, remaining), idle


def _idle(proto: onnx.ModelProto, shapes: dict[int, Any], why: str) -> dict[int, str]:
    """Subgraph index → ``why``, for the subgraphs with no recorded operator (``shapes`` has no entry)."""
    return {index: why for index in range(1, len(graphs(proto.graph))) if index not in shapes}


def _shapes_from_run(path: Path, proto: onnx.ModelProto, weights: dict[int, tuple[Any, int, int]],
                     feeds: dict[str, Any] | None, source: str, failed: list[str] | None = None,
                     tries: list[tuple[dict[str, int], dict[str, list[int]]]] | None = None,
                     ) -> tuple[onnx.ModelProto, list[str], dict[int, str]]:
    """``proto`` with the shapes one onnxruntime run gives (``ort_shapes``), the lines to say, and the subgraphs
    the run never entered (``Graph.not_run``). When subgraphs lack shapes a second run is profiled, and the profile
    gives those of the branches and bodies it ran. A failed run tries the model at ``tries`` in its process."""
    import tempfile

    from renderer.loaders.onnx import profile_shapes

    inner = sum(len(ort_shapes.missing_shapes(sub)) for sub in graphs(proto.graph)[1:])
    with tempfile.TemporaryDirectory(prefix="annograph-run-") as folder:
        notes, profile = ort_shapes.fill(path, proto, feeds, source, Path(folder) if inner else None, inner, failed,
                                         [inputs for _, inputs in tries or []])
        if profile is None:
            return proto, notes, {}
        shapes = profile_shapes.recorded(_build(path, proto, weights), [profile])
    shapes.pop(0, None)  # the main graph's shapes came from the run's outputs
    written = profile_shapes.write(graphs(proto.graph), shapes)
    if written:
        proto = _infer_shapes(proto)
    missed, not_run = profile_shapes.left(graphs(proto.graph), shapes)
    on = f"the inputs of {source}" if feeds is not None else "zero inputs"
    still = f"; {missed} tensors it ran still have no shape" if missed else ""
    inside = f"{path}: shapes of {written} tensors inside If/Loop/Scan bodies were taken from onnxruntime's profile " \
             f"of a run on {on} (the subgraphs it ran){still}{profile_shapes.not_run_clause(not_run)}"
    run_on = f"the inputs of {Path(source).name}" if feeds is not None else "zero inputs"
    return proto, [*notes, inside], _idle(proto, shapes, f"the onnxruntime run on {run_on} did not take this subgraph")


def load_like(like: ir.Model, dims: dict[str, int], shape_run: bool,
              keep: frozenset[ir.ElementKey] | None = None) -> ir.Model:
    """``like``'s file loaded again at ``dims`` (``check_dims`` off), its operators copied from ``like``
    (``retype``): the MACs formulas' loads at other sizes (``metrics.dim_formulas``). With ``keep``, the model
    holds those operators only, as stand-ins over ``like``'s typed by this load (``retype.overlaid``: what their
    cost formulas read), when they can be; its ``raw`` has no file shapes (no writer reads it)."""
    from renderer.files.inputs import reading

    with reading(like.path):  # an out-of-memory error names the model
        return load(Path(like.path), dims, check_dims=False, shape_run=shape_run, like=like, keep=keep)


def _rebuilt(path: Path, proto: onnx.ModelProto, weights: dict[int, tuple[Any, int, int]], like: ir.Model,
             keep: frozenset[ir.ElementKey] | None = None) -> ir.Model:
    """``proto``'s model made from ``like`` (``retype``; only the operators of ``keep`` when given, and when they
    can be), or built when it cannot be."""
    from renderer.loaders.onnx.retype import overlaid, retyped

    builder = _Builder(path, proto, weights)
    if keep is not None:  # the types of one load at other dims are mostly those of the one before
        if not _TYPES or _TYPES[0][0] is not like:
            _TYPES[:] = [(like, {})]
        builder.types = _TYPES[0][1]
    try:
        subs = graphs(proto.graph) if len(like.graphs) > 1 else [proto.graph]
        kept = None if keep is None else overlaid(like, subs, builder, keep)
        copy = retyped(like, proto, builder) if kept is None else _holding(like, kept)
    except Exception:  # whatever the copy meets, the build meets and says
        copy = None
    return _build(path, proto, weights) if copy is None else refuse_impossible_shapes(copy, path)


_TYPES: list[tuple[ir.Model, dict[bytes, ir.TensorType | None]]] = []
"""The TypeProtos converted by the loads ``like`` one model (a TypeProto's bytes say all its type)."""


def _holding(like: ir.Model, nodes: list[list[Any]]) -> ir.Model:
    """A model of ``like``'s graphs holding ``nodes`` (``retype.overlaid``) and the tensors they read and write."""
    model = ir.Model(format=like.format, path=like.path)
    for old, held in zip(like.graphs, nodes, strict=True):
        graph = model.add_graph(old.name)
        graph.nodes = held
        graph.values = list({id(v): v for n in held for v in (*n.inputs, *n.outputs) if v is not None}.values())
    return model


def _build(path: Path, proto: onnx.ModelProto, weights: dict[int, tuple[Any, int, int]]) -> ir.Model:
    try:
        return refuse_impossible_shapes(_Builder(path, proto, weights).build(), path)
    except (LoaderError, OperatorDataError):  # the data's fault, not the model's
        raise
    except Exception as e:
        raise LoaderError(f"{path}: malformed ONNX model ({type(e).__name__}: {first_line(e)})") from None


@dataclass(frozen=True)
class Loaded:
    """``Model.raw`` of an ONNX model: the parsed file, as the loader changed it, and what it changed."""

    proto: onnx.ModelProto  # with inferred shapes and pinned dims, without the large raw_data in ``weights``
    file_shapes: list[onnx.GraphProto]  # per graph (``graphs`` order): the file's input, output and value_info
    weights: dict[int, tuple[Any, int, int]]  # main-graph initializer index → (mapped file, offset, length)


def stored_proto(model: ir.Model) -> onnx.ModelProto:
    """The ModelProto as stored in ``model``'s file, for writers that edit a copy: rebuilt from the loader's
    parse (the shapes it inferred or pinned put back as the file had them, the large weights' bytes copied
    from the mapped file), not by reading or parsing the file again. External data stays where it is."""
    import onnx

    if model.format != FORMAT or not isinstance(model.raw, Loaded):
        raise LoaderError(f"{model.path}: not a loaded ONNX model")
    loaded = model.raw
    proto = onnx.ModelProto()
    proto.CopyFrom(loaded.proto)
    for graph, stored in zip(graphs(proto.graph), loaded.file_shapes, strict=True):
        for field in ("input", "output", "value_info"):
            del getattr(graph, field)[:]
            getattr(graph, field).extend(getattr(stored, field))
    for index, (buffer, offset, length) in loaded.weights.items():
        proto.graph.initializer[index].raw_data = bytes(buffer[offset : offset + length])
    return proto


def _shapes(subs: list[onnx.GraphProto]) -> list[onnx.GraphProto]:
    """A copy of each graph's (``graphs``) input, output and value_info: the fields loading changes."""
    import onnx

    copies = []
    for graph in subs:
        copy = onnx.GraphProto()
        copy.input.extend(graph.input)
        copy.output.extend(graph.output)
        copy.value_info.extend(graph.value_info)
        copies.append(copy)
    return copies


def _pin_dims(graph: onnx.GraphProto, dims: dict[str, int]) -> None:
    for value in list(graph.input) + list(graph.output) + list(graph.value_info):
        if not value.type.HasField("tensor_type"):
            continue
        for dim in value.type.tensor_type.shape.dim:
            if dim.HasField("dim_param") and dim.dim_param in dims:
                dim.dim_value = dims[dim.dim_param]


def _declared_negative(subs: list[onnx.GraphProto], like: ir.Model | None = None) -> set[str]:
    """The tensors whose shapes the file itself writes with a negative size (the same for every load ``like``
    another: found once)."""
    if like is not None and _DECLARED and _DECLARED[0][0] is like:
        return _DECLARED[0][1]
    found = {v.name for graph in subs for v in (*graph.value_info, *graph.output)
             if v.type.HasField("tensor_type") and _below_zero(v.type)}
    if like is not None:
        _DECLARED[:] = [(like, found)]
    return found


_DECLARED: list[tuple[ir.Model, set[str]]] = []


def _negative(proto: onnx.ModelProto, declared: set[str]) -> str:
    """Where static inference computes a negative size (a valid convolution over too short an input: ``-18``), as
    onnxruntime says where it fails (``free_dims.retried`` reads it); "" when nowhere. A 0 is no sign: models hold
    empty tensors at their right sizes (a ConstantOfShape of ``[1, 0, 1]``)."""
    bad = {v.name for v in (*proto.graph.value_info, *proto.graph.output)
           if v.name not in declared and v.type.HasField("tensor_type") and _below_zero(v.type)}
    if not bad:
        return ""
    node = next((n for n in proto.graph.node if bad.intersection(n.output)), None)
    name = "" if node is None else decode_text(node.name)
    return f"running {'an' if node is None else node.op_type} node. Name:'{name}'. It computes a negative size"


def _below_zero(tp: onnx.TypeProto) -> bool:
    return any(d.dim_value < 0 for d in tp.tensor_type.shape.dim)  # a dim_param's dim_value reads 0


def _forget_negative(proto: onnx.ModelProto, declared: set[str]) -> None:
    """Clear the negative sizes ``_negative`` finds, so no picture or count shows one."""
    _clear_negative(value for graph in graphs(proto.graph) for value in (*graph.value_info, *graph.output)
                    if value.name not in declared)


def _clear_negative(values: Iterable[onnx.ValueInfoProto]) -> None:
    """Make the negative sizes of ``values`` unknown: inference, then the shape run, may find them (a graph
    output paddle2onnx writes ``-1×-1×6625`` is ``1×28×6625`` once its Softmax's input is known)."""
    for value in values:
        if value.type.HasField("tensor_type") and _below_zero(value.type):
            for dim in value.type.tensor_type.shape.dim:
                if dim.HasField("dim_value") and dim.dim_value < 0:
                    dim.Clear()


def _drop_symbolic_shapes(graph: onnx.GraphProto, subs: list[onnx.GraphProto] | None = None) -> None:
    """Forget the file's shapes whose symbolic dims are not free input dims once some inputs are pinned, so
    inference recomputes them from the inputs: derived dims that exporters wrote
    (``floor(DynamicDimension.1/2 - 1/2) + 1``) would otherwise stay, as onnx keeps a name it is given where it
    cannot prove a value. A dim named like an input dim still free (``seq``) is kept: it says what inference
    may not be able to. ``subs``: ``graphs(graph)``, when known."""
    free = set(_symbolic(graph.input))

    def stale(value: onnx.ValueInfoProto) -> bool:
        return value.type.HasField("tensor_type") and any(
            d.HasField("dim_param") and d.dim_param not in free for d in value.type.tensor_type.shape.dim)

    for sub in graphs(graph) if subs is None else subs:
        kept = [vi for vi in sub.value_info if not stale(vi)]
        if len(kept) < len(sub.value_info):
            del sub.value_info[:]
            sub.value_info.extend(kept)
        for value in sub.output:
            if stale(value):
                for dim in value.type.tensor_type.shape.dim:
                    if dim.HasField("dim_param") and dim.dim_param not in free:
                        dim.Clear()


def _known_dims(tp: onnx.TypeProto) -> int:
    """How much a type says: -1 without a tensor shape, else its number of dims with a value."""
    if not tp.HasField("tensor_type") or not tp.tensor_type.HasField("shape"):
        return -1
    return sum(1 for d in tp.tensor_type.shape.dim if d.HasField("dim_value"))


def _infer_shapes(proto: onnx.ModelProto, subs: list[onnx.GraphProto] | None = None) -> onnx.ModelProto:
    """Fill value_info by onnx shape inference, run on a copy without the weights' bytes.

    Inference needs the weights' dims, not their values (data propagation only reads small shape tensors),
    and copying megabytes of weights into it is most of a load's time; the inferred value_info is then
    copied back graph by graph, wherever it knows more than the file. ``subs``: ``graphs(proto.graph)``, when
    known.
    """
    import onnx

    try:  # best effort: strings protobuf holds as bytes (invalid UTF-8) cannot even be copied
        light = _without_weights(proto)
        if light.ByteSize() > _SHAPE_INFERENCE_MAX_BYTES:
            detail("shapes: as stored in the file (over 2 GiB without its weights: too big for onnx shape inference)")
            return proto
        inferred = onnx.shape_inference.infer_shapes(light, check_type=False, strict_mode=False, data_prop=True)
    except Exception as e:
        detail(f"shapes: as stored in the file (onnx shape inference failed: {first_line(e)})")
        return proto  # shapes stay as the file has them; metrics report n/a where they are missing
    detail("shapes: onnx shape inference with data propagation, where it knows more than the file")
    originals = graphs(proto.graph) if subs is None else subs
    results = [inferred.graph] if len(originals) == 1 else graphs(inferred.graph)  # inference adds no subgraph
    for original, result in zip(originals, results):
        if len(result.value_info) > len(original.value_info):
            del original.value_info[:]
            original.value_info.extend(result.value_info)
        elif len(result.value_info):
            known = {vi.name: vi for vi in original.value_info}
            for source in result.value_info:
                target = known.get(source.name)
                if target is None:
                    original.value_info.add().CopyFrom(source)
                elif _known_dims(source.type) > _known_dims(target.type):
                    target.type.CopyFrom(source.type)
        for target, source in zip(original.output, result.output):
            if _known_dims(source.type) > _known_dims(target.type):
                target.type.CopyFrom(source.type)
    return proto


_WEIGHT_ELEMENTS = 1024


def _without_weights(proto: onnx.ModelProto) -> onnx.ModelProto:
    """A copy of ``proto`` whose large main-graph initializers keep name, type and dims but no data."""
    import onnx

    light = onnx.ModelProto()
    _copy_fields(proto, light, skip="graph")
    _copy_fields(proto.graph, light.graph, skip="initializer")
    for tensor in proto.graph.initializer:
        stub = light.graph.initializer.add()
        # judged by dims: reading raw_data to measure it would copy every weight
        if tensor.HasField("raw_data") and math.prod(tensor.dims) > _WEIGHT_ELEMENTS:
            stub.name, stub.data_type = tensor.name, tensor.data_type
            stub.dims.extend(tensor.dims)
        else:
            stub.CopyFrom(tensor)
    return light


def _copy_fields(source: Any, target: Any, skip: str) -> None:
    for field, value in source.ListFields():
        if field.name == skip:
            continue
        if field.is_repeated:
            getattr(target, field.name).extend(value)
        elif field.message_type is not None:
            getattr(target, field.name).CopyFrom(value)
        else:
            setattr(target, field.name, value)


_PLAIN_DTYPES = frozenset({"float32", "float64", "float16", "int8", "uint8", "int16", "uint16", "int32", "uint32",
                           "int64", "uint64", "bool"})


def _raw_view(raw: Any, dtype: str, shape: tuple[int, ...]) -> Any:
    """A read-only numpy view over little-endian raw bytes of a plain dtype (no copy); None otherwise."""
    import sys

    import numpy as np

    if dtype not in _PLAIN_DTYPES or not len(raw) or sys.byteorder != "little":
        return None
    return np.frombuffer(raw, dtype=np.dtype(dtype)).reshape(shape)


# where a stripped raw_data lies: (mapped file, offset, length)
_Place = tuple[Any, int, int]


def graphs(graph: onnx.GraphProto) -> list[onnx.GraphProto]:
    """``graph`` and every subgraph in it, depth-first in node and attribute order."""
    found = [graph]
    for node in graph.node:
        for attr in node.attribute:
            if attr.HasField("g"):
                found.extend(graphs(attr.g))
            for sub in attr.graphs:
                found.extend(graphs(sub))
    return found


class _Names:
    """Name → value inside one graph being built; names a subgraph does not define come from its enclosing
    graphs (``outer``, innermost last)."""

    def __init__(self, graph: ir.Graph, gp: onnx.GraphProto, outer: list[dict[str, ir.Value]],
                 type_of: Callable[[Any], ir.TensorType | None]) -> None:
        self.graph = graph
        self.outer = outer
        self.type_of = type_of
        self.names: dict[str, ir.Value] = {}
        infos = list(gp.value_info) + list(gp.input) + list(gp.output)
        self.shapes = {decode_text(vi.name): vi.type for vi in infos}
        self.metadata = {decode_text(vi.name): {decode_text(p.key): decode_text(p.value) for p in vi.metadata_props}
                         for vi in infos if len(getattr(vi, "metadata_props", ()))}

    def local(self, name: str) -> ir.Value:
        """The value called ``name`` in this graph, created on first use."""
        value = self.names.get(name)
        if value is None:
            value = self.graph.add_value(name, type=self.type_of(self.shapes.get(name)))
            stored = self.metadata.get(name)
            if stored:
                value.metadata = dict(stored)
            self.names[name] = value
        return value

    def lookup(self, name: str) -> ir.Value | None:
        """What an input called ``name`` reads: this graph's value, else an enclosing graph's; None for ""."""
        if not name:
            return None
        if name in self.names:
            return self.names[name]
        for outer in reversed(self.outer):
            if name in outer:
                return outer[name]
        return self.local(name)  # used before defined, or a dangling reference: keep the edge visible

    def inner_scope(self) -> list[dict[str, ir.Value]]:
        """The scope of a subgraph defined here."""
        return self.outer + [self.names]


class _Builder:
    """Walks the proto once, creating graphs depth-first."""

    def __init__(self, path: Path, proto: onnx.ModelProto, weights: dict[int, _Place]) -> None:
        self.path = path
        self.proto = proto
        self.weights = weights  # main-graph initializer index → its raw_data in the mapped file
        self.base_dir = str(path.parent)
        self.dtypes = _dtype_names()
        self.model = ir.Model(format=FORMAT, path=str(path))
        self.schema_names: dict[tuple[str, str, int], list[str]] = {}
        self.schema_defaults: dict[tuple[str, str], dict[str, Any]] = {}
        self.kinds: dict[tuple[str, str], tuple[str, dict[str, Any]]] = {}  # (op_type, domain) → category, defaults
        self.types: dict[bytes, ir.TensorType | None] = {}  # by the TypeProto's bytes: a model repeats a few types

    def build(self) -> ir.Model:
        proto, model = self.proto, self.model
        model.producer = " ".join(decode_text(x) for x in (proto.producer_name, proto.producer_version) if x)
        model.opsets = {(decode_text(o.domain) or "ai.onnx"): o.version for o in proto.opset_import}
        opsets = ", ".join(f"{d} {v}" for d, v in sorted(model.opsets.items()))
        model.version = f"IR v{proto.ir_version}; opset {opsets}"
        model.description = decode_text(proto.doc_string)
        model.metadata = {decode_text(p.key): decode_text(p.value) for p in proto.metadata_props}
        self._graph(proto.graph, parent=None, scope=[])
        return model

    # -- graphs ---------------------------------------------------------------------------------------------

    def _graph(self, gp: onnx.GraphProto, parent: ir.Node | None, scope: list[dict[str, ir.Value]]) -> ir.Graph:
        graph = self.model.add_graph(decode_text(gp.name), parent)
        names = _Names(graph, gp, scope, self._type)
        initializers = {decode_text(t.name) for t in gp.initializer}
        for vi in gp.input:
            if decode_text(vi.name) not in initializers:
                value = names.local(decode_text(vi.name))
                value.is_input = True
                graph.inputs.append(value)
        for i, tensor in enumerate(gp.initializer):
            value = names.local(decode_text(tensor.name))
            value.initializer = self._tensor(tensor, self.weights.get(i) if parent is None else None)
            if value.type is None or value.type.shape is None:
                value.type = ir.TensorType(value.initializer.dtype, value.initializer.shape)
        for np_ in gp.node:
            self._node(np_, graph, names)
        for vi in gp.output:
            value = names.lookup(decode_text(vi.name))
            if value is not None:
                value.is_output = True
                if value.type is None:
                    value.type = self._type(vi.type)
                graph.outputs.append(value)
        return graph

    def _node(self, np_: onnx.NodeProto, graph: ir.Graph, names: _Names) -> None:
        op_type, domain = decode_text(np_.op_type), decode_text(np_.domain)
        kind = self.kinds.get((op_type, domain))
        if kind is None:
            shown = domain in ("", "ai.onnx", "com.microsoft", "ai.onnx.ml")
            kind = self.kinds[op_type, domain] = (category(FORMAT, op_type) if shown else "other",
                                                  self._schema_defaults(op_type, domain))
        inputs = [names.lookup(decode_text(name)) for name in np_.input]
        node = ir.Node(len(graph.nodes), graph, op_type, domain=domain, name=decode_text(np_.name), category=kind[0],
                       inputs=inputs, input_names=self._input_names(op_type, domain, len(inputs)))
        graph.nodes.append(node)  # made as graph.add_node does, without its keyword pass-through
        props = getattr(np_, "metadata_props", None)
        if props:
            node.metadata = {decode_text(p.key): decode_text(p.value) for p in props}
        for v in inputs:
            if v is not None:
                v.consumers.append(node)
        for name in np_.output:
            if not name:
                continue
            value = names.local(decode_text(name))
            value.producer = node
            node.outputs.append(value)
        defaults = kind[1]
        for attr in np_.attribute:
            attr_name = decode_text(attr.name)
            node.attributes[attr_name] = self._attribute(attr, node, names)
            if attr_name in defaults and defaults[attr_name] == node.attributes[attr_name]:
                node.defaults.add(attr_name)
        if domain in ("", "ai.onnx") and node.outputs:
            if op_type == "Constant":
                self._fold_constant(np_, node.outputs[0])
            elif op_type == "ConstantOfShape" and node.inputs and node.inputs[0] is not None \
                    and node.inputs[0].is_constant:
                self._fold_constant_of_shape(np_, node.inputs[0], node.outputs[0])

    def _schema_defaults(self, op_type: str, domain: str) -> dict[str, Any]:
        key = (op_type, domain)
        cached = self.schema_defaults.get(key)
        if cached is not None:
            return cached
        import onnx
        from onnx import helper

        defaults: dict[str, Any] = {}
        try:
            schema = onnx.defs.get_schema(op_type, self.model.opsets.get(domain or "ai.onnx", 1), domain)
            for name, spec in schema.attributes.items():
                if spec.default_value.type != onnx.AttributeProto.UNDEFINED:
                    value = helper.get_attribute_value(spec.default_value)
                    defaults[name] = value.decode("utf-8", "replace") if isinstance(value, bytes) else value
        except Exception:  # unknown or custom op
            defaults = {}
        self.schema_defaults[key] = defaults
        return defaults

    def _input_names(self, op_type: str, domain: str, count: int) -> list[str]:
        key = (op_type, domain, count)
        cached = self.schema_names.get(key)
        if cached is not None:
            return cached
        import onnx

        names: list[str] = []
        try:
            version = self.model.opsets.get(domain or "ai.onnx", 1)
            schema = onnx.defs.get_schema(op_type, version, domain)
            formal = [i.name for i in schema.inputs]
            if formal:
                names = [formal[min(i, len(formal) - 1)] for i in range(count)]
        except Exception:  # unknown or custom op: no slot names
            names = []
        self.schema_names[key] = names
        return names

    # -- pieces ---------------------------------------------------------------------------------------------

    def _type(self, tp: Any) -> ir.TensorType | None:
        if tp is None:
            return None
        key = tp.SerializeToString()
        if key not in self.types:
            self.types[key] = self._new_type(tp)
        return self.types[key]

    def _new_type(self, tp: Any) -> ir.TensorType | None:
        if not tp.HasField("tensor_type"):
            container = self._container(tp)
            return None if container is None else ir.TensorType(container, None)
        tt = tp.tensor_type
        dtype = self.dtypes.get(tt.elem_type, "undefined")
        if not tt.HasField("shape"):
            return ir.TensorType(dtype, None)
        shape: list[ir.Dim] = []
        for d in tt.shape.dim:
            if d.HasField("dim_value"):
                shape.append(int(d.dim_value))
            elif d.HasField("dim_param"):
                shape.append(decode_text(d.dim_param))
            else:
                shape.append(None)
        return ir.TensorType(dtype, tuple(shape))

    def _container(self, tp: Any) -> str | None:
        """A sequence, map or optional type as text, ``seq(map(int64, float32))`` (what ZipMap gives); None for
        a type the file leaves empty."""
        kind = tp.WhichOneof("value")
        if kind in ("tensor_type", "sparse_tensor_type"):
            dtype = self.dtypes.get(getattr(tp, kind).elem_type, "undefined")
            return dtype if kind == "tensor_type" else f"sparse({dtype})"
        if kind == "map_type":
            inner = self._container(tp.map_type.value_type)
            key = self.dtypes.get(tp.map_type.key_type, "undefined")
            return None if inner is None else f"map({key}, {inner})"
        if kind in ("sequence_type", "optional_type"):
            inner = self._container(getattr(tp, kind).elem_type)
            return None if inner is None else f"{'seq' if kind == 'sequence_type' else 'optional'}({inner})"
        return None

    def _tensor(self, tp: onnx.TensorProto, place: _Place | None = None) -> ir.Tensor:
        import onnx

        dtype = self.dtypes.get(tp.data_type, "undefined")
        shape = tuple(int(d) for d in tp.dims)
        external = tp.data_location == onnx.TensorProto.EXTERNAL
        location = None
        if external:
            info = {decode_text(e.key): decode_text(e.value) for e in tp.external_data}
            location = info.get("location", "?")
        base_dir, path = self.base_dir, self.path

        def read() -> Any:
            from onnx.external_data_helper import load_external_data_for_tensor

            if external:
                copy = onnx.TensorProto()
                copy.CopyFrom(tp)
                try:
                    load_external_data_for_tensor(copy, base_dir)
                except Exception as e:  # OSError, ValueError, onnx's ValidationError (e.g. a path leaving the folder)
                    raise LoaderError(
                        f"{path}: external data file {location!r} for tensor {decode_text(tp.name)!r} cannot be read "
                        f"({first_line(e)})"
                    ) from None
                return _to_array(copy)
            if place is not None:
                buffer, offset, length = place
                raw = memoryview(buffer)[offset:offset + length]
                try:
                    fast = _raw_view(raw, dtype, shape)
                except ValueError as e:
                    raise LoaderError(f"{path}: tensor {decode_text(tp.name)!r} holds invalid data ({first_line(e)})") \
                        from None
                if fast is not None:
                    return fast
                copy = onnx.TensorProto()  # a dtype numpy cannot view (float8, int4, big-endian host…)
                copy.CopyFrom(tp)
                copy.raw_data = bytes(raw)
                return _to_array(copy)
            return _to_array(tp)

        def _to_array(proto: onnx.TensorProto) -> Any:
            from onnx import numpy_helper

            try:
                fast = _raw_view(proto.raw_data, dtype, shape) if proto.HasField("raw_data") else None
                return fast if fast is not None else numpy_helper.to_array(proto)
            except Exception as e:  # data that does not match its declared type and shape
                raise LoaderError(
                    f"{path}: tensor {decode_text(tp.name)!r} holds invalid data ({type(e).__name__}: {first_line(e)})"
                ) from None

        return ir.Tensor(dtype=dtype, shape=shape, reader=read, location=location)

    def _fold_constant(self, np_: onnx.NodeProto, value: ir.Value) -> None:
        import numpy as np
        from onnx import helper

        for attr in np_.attribute:
            if attr.name == "value" and attr.HasField("t"):
                value.initializer = self._tensor(attr.t)
            elif attr.name in ("value_float", "value_int", "value_floats", "value_ints"):
                array = np.asarray(helper.get_attribute_value(attr),
                                   dtype=np.float32 if "float" in attr.name else np.int64)
                value.initializer = ir.Tensor(str(array.dtype), tuple(array.shape), reader=lambda a=array: a)
        if value.initializer is not None and (value.type is None or value.type.shape is None):
            value.type = ir.TensorType(value.initializer.dtype, value.initializer.shape)

    def _fold_constant_of_shape(self, np_: onnx.NodeProto, shape_value: ir.Value, value: ir.Value) -> None:
        """ConstantOfShape of a constant shape is itself a constant (the light_* zoo models hold weights so)."""
        import numpy as np
        from onnx import numpy_helper

        fill = np.zeros(1, dtype=np.float32)
        for attr in np_.attribute:
            if attr.name == "value" and attr.HasField("t"):
                try:
                    fill = numpy_helper.to_array(attr.t)
                except Exception:  # an invalid fill tensor: leave the output unfolded, as the file has it
                    return
        if fill.size == 0:
            return
        static = value.type.static_shape if value.type else None
        if static is None:
            try:
                static = tuple(int(d) for d in shape_value.initializer.numpy().ravel())  # type: ignore[union-attr]
            except (ValueError, LoaderError):
                return
        if any(d < 0 for d in static):
            return
        dtype = str(fill.dtype)
        value.initializer = ir.Tensor(dtype, static, reader=lambda: np.full(static, fill.ravel()[0], dtype=fill.dtype))
        if value.type is None or value.type.shape is None:
            value.type = ir.TensorType(dtype, static)

    def _attribute(self, attr: onnx.AttributeProto, node: ir.Node, names: _Names) -> Any:
        import onnx
        from onnx import helper

        kind = attr.type
        if kind == onnx.AttributeProto.GRAPH:
            sub = self._graph(attr.g, node, names.inner_scope())
            node.subgraphs.append(sub)
            return ir.SubgraphRef(sub.index)
        if kind == onnx.AttributeProto.GRAPHS:
            subs = [self._graph(g, node, names.inner_scope()) for g in attr.graphs]
            node.subgraphs.extend(subs)
            return [ir.SubgraphRef(s.index) for s in subs]
        if kind == onnx.AttributeProto.TENSOR:
            t = attr.t
            return ir.TensorAttribute(self.dtypes.get(t.data_type, "?"), tuple(int(d) for d in t.dims))
        if kind == onnx.AttributeProto.TENSORS:
            return f"{len(attr.tensors)} tensors"
        if kind in (onnx.AttributeProto.SPARSE_TENSOR, onnx.AttributeProto.SPARSE_TENSORS,
                    onnx.AttributeProto.TYPE_PROTO, onnx.AttributeProto.TYPE_PROTOS):
            return onnx.AttributeProto.AttributeType.Name(kind).lower()
        value = helper.get_attribute_value(attr)
        if isinstance(value, bytes):
            return value.decode("utf-8", "replace")
        if isinstance(value, list):
            return [v.decode("utf-8", "replace") if isinstance(v, bytes) else v for v in value]
        return value
