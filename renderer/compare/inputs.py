"""Inputs for a comparison run: read from an ``.npz`` file, or made from a seed with values valid for each type."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import AnnographError

if TYPE_CHECKING:
    from ..ir import Model

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


def unnamed_dim_name(input_name: str, axis: int) -> str:
    """How ``--dim`` names an ONNX input's unnamed dim (the loader's ``onnx.unnamed_dim_name``)."""
    from ..loaders.onnx import unnamed_dim_name as named

    return named(input_name, axis)


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
    """The arrays of an ``.npz`` file keyed by input name; every input must be there, and nothing else. ``label``
    names the file in messages (the path the user gave, when ``path`` is a copy of a pipe)."""
    arrays = load_npz(path, "an inputs file")
    path = label or path
    names = [s.name for s in specs]
    missing = [n for n in names if n not in arrays]
    if missing:
        raise AnnographError(f"{path}: no array for input {missing[0]!r} (the model's inputs: {', '.join(names)})")
    extra = sorted(set(arrays) - set(names))
    if extra:
        raise AnnographError(f"{path}: array {extra[0]!r} is not an input of the model (inputs: {', '.join(names)})")
    return {s.name: arrays[s.name].astype(s.dtype, copy=False) for s in specs}


def load_npz(path: str | Path, kind: str) -> dict[str, Any]:
    """Every array of an ``.npz`` file by key, or a one-line error naming the file (``inputs.NpzArchive``'s bounds:
    headers checked before anything is inflated)."""
    from ..inputs import NpzArchive

    with NpzArchive(path, AnnographError, kind) as archive:
        return archive.arrays()
