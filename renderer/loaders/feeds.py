"""Inputs for a comparison run: read from an ``.npz`` file, or made from a seed with values valid for each type."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from renderer.core.errors import AnnographError
from renderer.loaders.free_dims import unnamed_dim_name

if TYPE_CHECKING:
    from renderer.core.ir import Model

INT_HIGH = 10
"""Random integer inputs (token ids, indices, lengths) are drawn from [0, INT_HIGH): valid for any vocabulary."""


@dataclass(frozen=True, slots=True)
class InputSpec:
    """One model input as the runtime reports it.

    Attributes:
        name: the input's name.
        shape: sizes; a name or None for a dynamic axis.
        dtype: numpy dtype name (``float32``, ``int64``, ``bool``…).
    """

    name: str
    shape: tuple[int | str | None, ...]
    dtype: str
    fixed: tuple[int | str | None, ...] | None = None
    """The sizes the model fixes (a name or None for a free axis), which ``load_feeds`` checks against each array's
    header before inflating any; None when the rank is unknown (nothing checked)."""


def fixed_sizes(shape: tuple[int | str | None, ...] | None) -> tuple[int | str | None, ...] | None:
    """``InputSpec.fixed`` of a declared shape: its sizes and names, None where an axis is free without a name (-1).

    >>> fixed_sizes((1, "batch", -1, 4)), fixed_sizes(None)
    ((1, 'batch', None, 4), None)
    """
    if shape is None:
        return None
    return tuple(size if isinstance(size, str) or (isinstance(size, int) and size >= 0) else None for size in shape)


def feedable_dims(model: Model) -> list[str]:
    """The ``dims`` names ``concrete_shape`` can use on ``model``'s inputs: its pinnable dims, and ``axisK`` (``batch``
    for axis 0) for each dynamic axis, named or not."""
    names = list(model.pinnable_dims)
    for value in model.main.inputs:
        shape = value.type.shape_signature or value.type.shape if value.type else None
        for axis, size in enumerate(shape or ()):
            if not isinstance(size, int) or size < 0:
                names += [f"axis{axis}"] + (["batch"] if axis == 0 else [])
    return names


def concrete_shape(spec: InputSpec, dims: dict[str, int], notes: list[str]) -> tuple[int, ...]:
    """``spec.shape`` with symbolic axes pinned by ``dims`` (by name, by the ``INPUT.axisN`` name an unnamed ONNX
    dim is pinned by, or ``axisN``), else 1 (and a note)."""
    shape = []
    for axis, size in enumerate(spec.shape):
        if isinstance(size, int) and size >= 0:
            shape.append(size)
            continue
        pinned = dims.get(size) if isinstance(size, str) else dims.get(unnamed_dim_name(spec.name, axis))
        if pinned is None:
            pinned = dims.get(f"axis{axis}", dims.get("batch") if axis == 0 else None)
        if pinned is None:
            pinned = 1
            notes.append(f"input {spec.name!r} axis {axis} ({size or 'dynamic'}) set to 1 (pin it with --dim)")
        shape.append(pinned)
    return tuple(shape)


def random_feeds(specs: list[InputSpec], seed: int, dims: dict[str, int], notes: list[str]) -> dict[str, Any]:
    """Deterministic inputs from ``seed``: standard normal floats, integers in [0, INT_HIGH), random booleans."""
    import numpy as np

    rng = np.random.default_rng(seed)
    feeds: dict[str, Any] = {}
    for spec in specs:
        shape = concrete_shape(spec, dims, notes)
        dtype = np.dtype(spec.dtype)
        if dtype.kind == "f":
            feeds[spec.name] = rng.standard_normal(shape).astype(dtype)
        elif dtype.kind in "iu":
            feeds[spec.name] = rng.integers(0, INT_HIGH, size=shape).astype(dtype)
        elif dtype.kind == "b":
            feeds[spec.name] = rng.integers(0, 2, size=shape).astype(bool)
        else:
            raise AnnographError(f"input {spec.name!r} of type {spec.dtype}: give its values with --inputs FILE.npz")
    return feeds


def load_feeds(path: str | Path, specs: list[InputSpec], label: str | Path | None = None) -> dict[str, Any]:
    """The arrays of an ``.npz`` file keyed by input name; every input must be there, and nothing else, each of a
    shape and type that can feed its input. ``label`` names the file in messages (the path the user gave, when
    ``path`` is a copy of a pipe). Names are checked before any member's header is read, headers before any array
    is inflated: a member declaring 2^28 floats for an input of 4 is refused from its header."""
    from renderer.files.inputs import NpzArchive

    shown = label or path
    names = [s.name for s in specs]

    def check_names(found: list[str]) -> None:
        missing = [n for n in names if n not in found]
        if missing:
            raise AnnographError(f"{shown}: no array for input {missing[0]!r} (the model's inputs: {', '.join(names)})")
        extra = sorted(set(found) - set(names))
        if extra:
            raise AnnographError(f"{shown}: array {extra[0]!r} is not an input of the model (inputs: "
                                 f"{', '.join(names)})")

    with NpzArchive(path, AnnographError, "an inputs file", check_names=check_names) as archive:
        for spec in specs:
            _check_header(shown, spec, archive.shape(spec.name), archive.dtype(spec.name))
        return {s.name: archive.array(s.name).astype(s.dtype, copy=False) for s in specs}


def _check_header(path: str | Path, spec: InputSpec, shape: tuple[int, ...], dtype: Any) -> None:
    """AnnographError naming both shapes (or types) when an array's header says it cannot feed ``spec``."""
    import numpy as np

    from renderer.core.escape import clean

    got = "×".join(map(str, shape)) or "scalar"
    numeric = np.dtype(spec.dtype).kind in "biuf" if spec.dtype != "str" else False
    if numeric != (dtype.kind in "biuf"):
        raise AnnographError(f"{path}: array {clean(spec.name, 80)!r} holds {dtype} ({got}), which cannot feed the "
                             f"model's input of {spec.dtype}")
    fixed = spec.fixed
    if fixed is not None and (len(fixed) != len(shape) or any(isinstance(f, int) and f != n
                                                              for f, n in zip(fixed, shape))):
        wanted = "×".join("?" if f is None else str(f) for f in fixed) or "scalar"
        raise AnnographError(f"{path}: array {clean(spec.name, 80)!r} is {got}, but the model's input is "
                             f"{clean(wanted, 80)}")
