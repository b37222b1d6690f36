"""PyTorch ``torch.export`` programs: a ``.pt2`` archive from ``torch.export.save`` → ir.Model.

Found by content: a zip whose first member sits in a PT2 archive's folders (``ROOT/data/``, ``ROOT/models/``…);
the load then requires the ``ROOT/archive_format`` marker saying ``pt2`` and a program in ``ROOT/models/``
(``archive``). The archive is read with the standard library: torch need not be installed, and nothing in
the file is unpickled (``torch.export.load`` unpickles pickled weights and custom objects, which can run any
code; see ``archive``). The graph is the program's FX graph (``graph``), weights come from the
archive (``tensors``).

Dims: the symbolic sizes of the user inputs (torch's symbols, ``s0``, ``s77``: ``torch.export.Dim`` names are
not saved) are the model's free dims; ``--dim s77=4`` pins one, the others are assumed as for ONNX
(``free_dims``: a leading dim is a batch of 1…), within the range the program was exported for
(``range_constraints``). Every other size is an expression of them, evaluated (``symbols``): no run is
needed. Sizes that depend on values (unbacked ``u0``) stay unknown. ``--inputs`` and onnxruntime profiles give
shapes to ONNX and TFLite models only.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from renderer.core import ir
from renderer.core.errors import LoaderError, OperatorDataError, first_line
from renderer.core.escape import clean
from renderer.loaders import free_dims
from renderer.loaders.mapped import map_file
from renderer.loaders.protocol import RealValues
from renderer.loaders.registry import refuse_impossible_shapes
from renderer.loaders.torch_export.archive import Archive, open_archive
from renderer.loaders.torch_export.graph import FORMAT, GraphBuilder
from renderer.loaders.torch_export.meta import sizes

EXTENSIONS = (".pt2",)
_RECORDS = ("data/", "models/", ".data/", "archive_format", "archive_version", "byteorder", "extra/")
KNOWN_SCHEMA = 8
"""The newest major version of torch's export schema this loader was written against (torch 2.13: 8.20)."""


def match(head: bytes) -> bool:
    """A zip whose first member lies in a PT2 archive's folders (``net/data/weights/weight_0``), or whose first
    member's name is too long for ``head`` to tell (the load checks the marker)."""
    if len(head) < 30 or head[:4] != b"PK\x03\x04":
        return False
    length = int.from_bytes(head[26:28], "little")
    name = head[30 : 30 + length].decode("utf-8", "replace")
    root, slash, rest = name.partition("/")
    if not slash:
        return len(name) < length and bool(root)
    return bool(root) and any(rest.startswith(r) or r.startswith(rest) for r in _RECORDS)


def pinnable(path: Path) -> list[str]:
    """The names ``--dim`` can pin: the symbols of the user inputs' sizes."""
    archive = _open(path)
    try:
        return _free(_slots(archive))
    except LoaderError:
        raise
    except Exception as e:  # a hostile document: a wrong type where the schema has another
        raise LoaderError(f"{path}: not a valid torch.export program ({type(e).__name__}: {first_line(e, 160)})") \
            from None


def load(path: Path, dims: dict[str, int] | None = None, check_dims: bool = True,
         shape_run: bool = True, values: RealValues | None = None, assume: bool = True) -> ir.Model:
    """Parse ``path`` (see the module docstring); any failure is a one-line LoaderError naming the file."""
    archive = _open(path)
    values = values or RealValues()
    try:
        slots = _slots(archive)
        notes: list[str] = []
        settled, assumed = _settle(path, archive, slots, dims, check_dims, assume, notes)
        model = ir.Model(format=FORMAT, path=str(path))
        GraphBuilder(archive, model, settled).build()
        _describe(model, archive, slots)
    except (LoaderError, OperatorDataError):
        raise
    except Exception as e:  # a hostile document: a wrong type where the schema has another
        raise LoaderError(f"{path}: not a valid torch.export program ({type(e).__name__}: {first_line(e, 160)})") \
            from None
    model.notes.extend(notes)
    if values.inputs is not None or values.profiles:
        model.notes.append(f"{path}: --inputs and onnxruntime profiles give shapes to ONNX and TFLite models; a "
                           "torch.export program's come from its symbolic sizes and --dim")
    model.pinnable_dims = _free(slots)
    model.pinned_dims = dict(settled)
    model.assumed_dims = assumed
    model.raw = archive
    return refuse_impossible_shapes(model, path)


def _open(path: Path) -> Archive:
    return open_archive(path, map_file(path))


def _slots(archive: Archive) -> list[free_dims.Slot]:
    """Where each symbol sits in the user inputs' sizes (``free_dims``), in input order."""
    module = archive.document.get("graph_module")
    graph = module.get("graph") if isinstance(module, dict) else None
    if not isinstance(graph, dict):
        raise LoaderError(f"{archive.path}: the program has no graph (not a torch.export program?)")
    metas = graph.get("tensor_values") if isinstance(graph.get("tensor_values"), dict) else {}
    user = _user_inputs(module)
    found = []
    for name in user:
        meta = metas.get(name)
        if not isinstance(meta, dict):
            continue
        exprs = sizes(meta)
        shape = tuple(e.number if e is not None and e.kind == "int" else (e.text() if e is not None else "?")
                      for e in exprs)
        integer = meta.get("dtype") in (1, 2, 3, 4, 5)
        for axis, expr in enumerate(exprs):
            if expr is not None and expr.kind == "symbol":
                found.append(free_dims.Slot(expr.name, name, axis, shape, integer))
    return found


def _user_inputs(module: dict[str, Any]) -> list[str]:
    signature = module.get("signature") if isinstance(module.get("signature"), dict) else {}
    names = []
    for spec in signature.get("input_specs") or []:
        body = spec.get("user_input") if isinstance(spec, dict) else None
        arg = body.get("arg") if isinstance(body, dict) else None
        tensor = arg.get("as_tensor") if isinstance(arg, dict) else None
        if isinstance(tensor, dict) and isinstance(tensor.get("name"), str):
            names.append(tensor["name"])
    return names


def _free(slots: list[free_dims.Slot]) -> list[str]:
    return list(dict.fromkeys(slot.dim for slot in slots))


def _settle(path: Path, archive: Archive, slots: list[free_dims.Slot], dims: dict[str, int] | None,
            check: bool, assume: bool, notes: list[str]) -> tuple[dict[str, int], list[ir.AssumedDim]]:
    """The symbols' values: ``--dim``'s, checked against the program's ranges, and with ``assume`` a value for
    every other input symbol (``free_dims``), moved into the program's range when the default is outside it."""
    from renderer.core.pinning import resolve

    free = _free(slots)
    given = resolve(path, dims, free, (), check)
    ranges = _ranges(archive.document.get("range_constraints"))
    for name, value in given.items():
        low, high = ranges.get(name, (None, None))
        if (low is not None and value < low) or (high is not None and value > high):
            raise LoaderError(f"{path}: --dim {clean(name, 80)}={value}: the program was exported for "
                              f"{clean(name, 80)} in {_span(low, high)}")
    if not assume:
        return given, []
    values, assumed = free_dims.assume(path, slots, given, {}, notes)
    kept = []
    for dim in assumed:
        low, high = ranges.get(dim.name, (None, None))
        value = max(dim.value, low) if low is not None else dim.value
        value = min(value, high) if high is not None else value
        if value != dim.value:
            dim = ir.AssumedDim(dim.name, value, dim.role, f"the program's range {_span(low, high)}")
            values[dim.name] = value
        kept.append(dim)
    return values, kept


def _ranges(constraints: Any) -> dict[str, tuple[int | None, int | None]]:
    """Symbol → (least, greatest) value the program was exported for (None: unbounded)."""
    found: dict[str, tuple[int | None, int | None]] = {}
    for name, entry in (constraints.items() if isinstance(constraints, Mapping) else []):
        if isinstance(entry, Mapping):
            low, high = entry.get("min_val"), entry.get("max_val")
            found[str(name)] = (low if type(low) is int else None,
                                high if type(high) is int and high < 2**62 else None)
    return found


def _span(low: int | None, high: int | None) -> str:
    return f"{'-∞' if low is None else low}..{'∞' if high is None else high}"


def _describe(model: ir.Model, archive: Archive, slots: list[free_dims.Slot]) -> None:
    """Producer, versions, where each input symbol sits and its range, the archive's other programs."""
    document = archive.document
    version = document.get("torch_version")
    model.producer = f"torch {clean(version, 40)}" if isinstance(version, str) else "torch.export"
    schema = document.get("schema_version") if isinstance(document.get("schema_version"), dict) else {}
    major, minor = schema.get("major"), schema.get("minor")
    opsets = document.get("opset_version") if isinstance(document.get("opset_version"), dict) else {}
    model.opsets = {clean(k, 40): v for k, v in opsets.items() if type(v) is int}
    model.version = f"export schema {clean(major, 10)}.{clean(minor, 10)}"
    model.metadata["program"] = clean(archive.program, 80)
    if archive.others:
        model.metadata["other programs"] = clean(", ".join(archive.others), 200)
    ranges = _ranges(document.get("range_constraints"))
    for name in _free(slots):
        places = ", ".join(f"{clean(s.input, 40)}[{s.axis}]" for s in slots if s.dim == name)
        low, high = ranges.get(name, (None, None))
        model.metadata[f"dim {clean(name, 40)}"] = f"{places} ({_span(low, high)})"
    if type(major) is int and major > KNOWN_SCHEMA:
        model.notes.append(f"{archive.path}: export schema {major} is newer than annograph reads ({KNOWN_SCHEMA}): "
                           "what it could not read is left out")
