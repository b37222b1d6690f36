"""An ExecuTorch ETRecord (``executorch.devtools.generate_etrecord``) read without executorch or torch.

The file is a zip: ``ETRECORD_V0`` (its marker), ``debug_handle_map`` (JSON: method → instruction id → the debug
handles of the edge-graph nodes that instruction runs), ``delegate_map`` (method → instruction id → backend and its
delegate debug ids) and ``edge_dialect_exported_program/<method>``, the edge program serialized by torch.export
(JSON: ``graph_module.graph.nodes`` with each node's ``name``, ``target``, ``inputs`` and ``metadata``:
``debug_handle``, ``nn_module_stack``, ``stack_trace``; ``graph_module.signature`` naming the placeholders).

Only what the ExecuTorch loader uses is kept: per method, each node's name, operator, argument names and tensor
names, module path and source line, by debug handle; which placeholder is which parameter or user input; and the
two maps. Every member is read with a size bound and a bound on its inflation (``files.zip_members``), so a
zip bomb costs one line.
"""

from __future__ import annotations

import json
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from renderer.core.errors import LoaderError, first_line
from renderer.core.escape import clean
from renderer.files.zip_members import check_inflation

MARKER = "ETRECORD_V0"
EDGE = "edge_dialect_exported_program"
MAX_MEMBER_BYTES = 1 << 30
MAX_NAME_CHARS = 10_000
NEIGHBOUR_NAMES = ("{stem}.etrecord", "{stem}.etrecord.bin", "{stem}_etrecord.bin", "etrecord.bin")
"""Where an ETRecord is looked for beside ``NAME.pte`` (in this order)."""


@dataclass(slots=True)
class EdgeNode:
    """One ``call_function`` node of the edge program.

    Attributes:
        name: its FX name (``aten_convolution_default``).
        op: ``namespace.name`` of its target (``aten.convolution``), "" for other targets.
        arguments: (argument name, tensor names it passes (empty for other arguments)) in schema order.
        outputs: the names of the tensors it returns.
        handle: its debug handle, -1 when it has none.
        modules: (module path, module type) from the root to its module (``nn_module_stack``).
        source: the last ``File …`` line of its stack trace.
    """

    name: str
    op: str
    arguments: list[tuple[str, list[str]]] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)
    handle: int = -1
    modules: list[tuple[str, str]] = field(default_factory=list)
    source: str = ""


@dataclass(slots=True)
class Method:
    """What the ETRecord says about one method: instruction id → debug handles, instruction id → backend of the
    delegate it calls, the edge nodes by debug handle (graph order), the placeholders' names (parameter
    or buffer FQN, or the user input's name), and the names of the user inputs and of the outputs, in order."""

    handles: dict[int, list[int]] = field(default_factory=dict)
    delegates: dict[int, str] = field(default_factory=dict)
    nodes: dict[int, list[EdgeNode]] = field(default_factory=dict)
    placeholders: dict[str, str] = field(default_factory=dict)
    inputs: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)


@dataclass(slots=True)
class ETRecord:
    path: str
    methods: dict[str, Method] = field(default_factory=dict)


def beside(model: Path) -> Path | None:
    """The ETRecord lying beside ``model`` (``NEIGHBOUR_NAMES``), if any."""
    for pattern in NEIGHBOUR_NAMES:
        candidate = model.with_name(pattern.format(stem=model.stem))
        if candidate.is_file():
            return candidate
    return None


def given(path: Path) -> Path:
    """``path`` when it is a regular file (a FIFO would block the zip reader for ever); else a LoaderError naming it."""
    try:
        if path.is_file():
            return path
        why = "a folder" if path.is_dir() else "not a regular file" if path.exists() else "no such file"
    except OSError as e:
        why = first_line(e)
    raise LoaderError(f"{path}: cannot read the ETRecord ({why})")


def read(path: Path, methods: list[str]) -> ETRecord:
    """The parts of the ETRecord at ``path`` for ``methods``; LoaderError naming the file when it is none."""
    try:
        with zipfile.ZipFile(path) as archive:
            names = set(archive.namelist())
            if MARKER not in names:
                raise LoaderError(f"{path}: not an ETRecord (no {MARKER} entry)")
            handles = _json(archive, path, "debug_handle_map", names)
            delegates = _json(archive, path, "delegate_map", names)
            record = ETRecord(str(path))
            for method in methods:
                member = f"{EDGE}/{method}" if f"{EDGE}/{method}" in names else EDGE
                program = _json(archive, path, member, names)
                record.methods[method] = _method(_object(handles, method), _object(delegates, method), program)
            return record
    except (zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError, EOFError, RuntimeError) as e:
        raise LoaderError(f"{path}: not a readable ETRecord (zip: {first_line(e)})") from None
    except OSError as e:
        raise LoaderError(f"{path}: cannot read the ETRecord ({first_line(e)})") from None


def _json(archive: zipfile.ZipFile, path: Path, member: str, names: set[str]) -> Any:
    if member not in names:
        return {}
    info = archive.getinfo(member)
    if info.file_size > MAX_MEMBER_BYTES:
        raise LoaderError(f"{path}: ETRecord entry {clean(member, 80)!r} holds {info.file_size:,} bytes, more than "
                          f"{MAX_MEMBER_BYTES:,}")
    check_inflation(info, path, LoaderError, "ETRecord entry")
    with archive.open(info) as handle:
        data = handle.read(MAX_MEMBER_BYTES + 1)
    if len(data) > MAX_MEMBER_BYTES:
        raise LoaderError(f"{path}: ETRecord entry {clean(member, 80)!r} expands past {MAX_MEMBER_BYTES:,} bytes")
    try:
        return json.loads(data)
    except (ValueError, RecursionError) as e:
        raise LoaderError(f"{path}: ETRecord entry {clean(member, 80)!r} is not valid JSON "
                          f"({clean(first_line(e), 120)})") from None


def _object(value: Any, key: str) -> dict[str, Any]:
    found = value.get(key) if isinstance(value, dict) else None
    return found if isinstance(found, dict) else {}


def _number(text: Any) -> int | None:
    if isinstance(text, bool):
        return None
    if isinstance(text, int):
        return text
    if isinstance(text, str) and text.strip().lstrip("-").isdigit() and len(text) < 20:
        return int(text)
    return None


def _method(handles: dict[str, Any], delegates: dict[str, Any], program: Any) -> Method:
    method = Method()
    for key, value in handles.items():
        instruction = _number(key)
        listed = value if isinstance(value, list) else [value]
        found = [h for h in map(_number, listed) if h is not None]
        if instruction is not None and found:
            method.handles[instruction] = found
    for key, value in delegates.items():
        instruction = _number(key)
        if instruction is not None and isinstance(value, dict):
            method.delegates[instruction] = clean(value.get("name", ""), 200)
    module = _object(program, "graph_module")
    graph = _object(module, "graph")
    for raw in graph.get("nodes", []) if isinstance(graph.get("nodes"), list) else []:
        node = _node(raw) if isinstance(raw, dict) else None
        if node is not None:
            method.nodes.setdefault(node.handle, []).append(node)
    signature = _object(module, "signature")
    method.placeholders = _placeholders(signature)
    specs = signature.get("input_specs") if isinstance(signature.get("input_specs"), list) else []
    method.inputs = [name for spec in specs if isinstance(spec, dict) and isinstance(spec.get("user_input"), dict)
                     for name in _tensor_names(spec["user_input"].get("arg"))]
    outputs = graph.get("outputs") if isinstance(graph.get("outputs"), list) else []
    method.outputs = [name for item in outputs for name in _tensor_names(item)]
    return method


def _op(target: Any) -> str:
    """``executorch.exir.dialects.edge.ops.aten.convolution.default`` → ``aten.convolution``."""
    if not isinstance(target, str):
        return ""
    parts = target.split(".")
    if "ops" in parts and len(parts) >= parts.index("ops") + 3:
        at = len(parts) - 1 - parts[::-1].index("ops")
        return ".".join(parts[at + 1:at + 3])
    return ""


def _tensor_names(arg: Any) -> list[str]:
    if not isinstance(arg, dict):
        return []
    if isinstance(arg.get("as_tensor"), dict):
        return [_string(arg["as_tensor"].get("name"))]
    for key in ("as_tensors", "as_optional_tensors"):
        if isinstance(arg.get(key), list):
            return [_string(t.get("as_tensor", t).get("name")) if isinstance(t, dict) else "" for t in arg[key]]
    return []


def _string(value: Any) -> str:
    return value[:MAX_NAME_CHARS] if isinstance(value, str) else ""


def _node(raw: dict[str, Any]) -> EdgeNode | None:
    meta = raw.get("metadata") if isinstance(raw.get("metadata"), dict) else {}
    node = EdgeNode(_string(raw.get("name")), _op(raw.get("target")))
    if not node.name or not node.op:
        return None
    for item in raw.get("inputs", []) if isinstance(raw.get("inputs"), list) else []:
        if isinstance(item, dict):
            node.arguments.append((_string(item.get("name")), _tensor_names(item.get("arg"))))
    for item in raw.get("outputs", []) if isinstance(raw.get("outputs"), list) else []:
        node.outputs += _tensor_names(item)
    handle = _number(meta.get("debug_handle"))
    node.handle = handle if handle is not None else -1
    stack = meta.get("nn_module_stack")
    if isinstance(stack, str):
        for item in stack[:MAX_NAME_CHARS].split(";"):
            parts = item.split(",")
            if len(parts) >= 3:
                node.modules.append((",".join(parts[1:-1]), parts[-1]))
    trace = meta.get("stack_trace")
    if isinstance(trace, str):
        frames = [line.strip() for line in trace[:MAX_NAME_CHARS].splitlines() if line.strip().startswith("File ")]
        node.source = frames[-1] if frames else ""
    return node


def _placeholders(signature: dict[str, Any]) -> dict[str, str]:
    """Placeholder name → what it stands for: the parameter, buffer or constant's FQN, or the user input's name
    (which is the placeholder's own)."""
    found: dict[str, str] = {}
    for spec in signature.get("input_specs", []) if isinstance(signature.get("input_specs"), list) else []:
        if not isinstance(spec, dict) or len(spec) != 1:
            continue
        (kind, body), = spec.items()
        if not isinstance(body, dict):
            continue
        arg = body.get("arg")
        names = _tensor_names(arg) or ([_string(arg.get("name"))] if isinstance(arg, dict) else [])
        fqn = next((_string(body.get(k)) for k in ("parameter_name", "buffer_name", "tensor_constant_name")
                    if isinstance(body.get(k), str)), "")
        if names and names[0]:
            found[names[0]] = fqn or names[0]
    return found
