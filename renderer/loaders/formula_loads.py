"""Where the MACs formulas (``metrics.dim_formulas``) load a model again: the sizes of its assumed dims each load
pins. The plan is the loader's to know too: a model's first load makes the loads at those sizes while its shape
run's child works (``onnx.loader``), before any metric exists."""

from __future__ import annotations

from collections.abc import Sequence

from renderer.core.ir import AssumedDim, Model

DEGREES = {"batch": 1, "sequence": 2, "past": 1}
"""The dims a formula is a polynomial of, and the degree fitted in each (one more load checks it)."""
STEP = {"batch": 1, "sequence": 16, "past": 16}
"""How far apart the loaded values of each kind of dim are."""
MAX_WORK = 20_000
"""Operators × loads above which no formula is fitted (a big model loaded many times over would be slow)."""


def variables(model: Model, held: frozenset[str] = frozenset()) -> list[tuple[str, int, str]]:
    """(name, assumed value, role) of the assumed dims formulas are polynomials of, but those ``held`` at their
    value; the batch dims assumed alike are one, named by the first (``together``)."""
    return [(names[0], value, role) for (names, value, role) in grouped(model, held)]


def together(model: Model, held: frozenset[str] = frozenset()) -> dict[str, list[str]]:
    """Each variable's name → the assumed dims loaded at its value. An exporter names each input's batch apart
    (tf2onnx: ``unk__6134``, ``unk__6135``, ``unk__6136``) though the model joins them: loaded at different values
    it fails at the join, and the formula was lost."""
    return {names[0]: names for names, _, _ in grouped(model, held)}


def grouped(model: Model, held: frozenset[str]) -> list[tuple[list[str], int, str]]:
    found: list[tuple[list[str], int, str]] = []
    batches: dict[int, list[str]] = {}
    for d in model.assumed_dims:
        if d.name in held:
            continue
        if d.role == "batch" and d.value in batches:
            batches[d.value].append(d.name)
        elif d.role in DEGREES:
            found.append(([d.name], d.value, d.role))
            if d.role == "batch":
                batches[d.value] = found[-1][0]
    return found


def dim_values(value: int, role: str) -> list[int]:
    """The values a dim is loaded at: degree + 1 for the fit, then one more that checks it."""
    return [value + k * STEP[role] for k in range(DEGREES[role] + 2)]


def grid_points(grids: Sequence[Sequence[int]]) -> list[tuple[int, ...]]:
    points: list[tuple[int, ...]] = [()]
    for grid in grids:
        points = [(*p, x) for p in points for x in grid]
    return points


def check_points(names: tuple[str, ...], values: Sequence[Sequence[int]]) -> list[tuple[int, ...]]:
    """Points off the grid: each dim at its checking value with the others at their base, then all at once."""
    base = [v[0] for v in values]
    points = [tuple(v[-1] if i == axis else base[i] for i, v in enumerate(values)) for axis in range(len(names))]
    return points + ([tuple(v[-1] for v in values)] if len(names) > 1 else [])


def dim_points(dims: list[tuple[str, int, str]]) -> list[tuple[int, ...]]:
    """The values of ``dims`` (``variables``) each load is made at: the grid, then the checks."""
    values = [dim_values(value, role) for _, value, role in dims]
    return grid_points([v[:-1] for v in values]) + check_points(tuple(name for name, _, _ in dims), values)


def load_points(model: Model, held: frozenset[str], operators: int,
                ) -> list[tuple[tuple[int, ...], dict[str, int] | None]]:
    """Each point ``dim_formulas._compute`` loads ``model`` (of ``operators``) at, with the dims that load pins
    (None at the assumed values: the model itself); none when it makes no load (no dim to vary, too much work)."""
    dims = variables(model, held)
    points = dim_points(dims)
    if not dims or len(points) * operators > MAX_WORK:
        return []
    names = tuple(name for name, _, _ in dims)
    base = tuple(value for _, value, _ in dims)
    members = together(model, held)
    varied = {member for group in members.values() for member in group}
    pinned = {k: v for k, v in model.pinned_dims.items() if k not in varied and k not in followers(model)}
    return [(point, None if point == base else
             {**pinned, **{member: value for name, value in zip(names, point) for member in members[name]}})
            for point in points]


def load_dims(assumed: list[AssumedDim], pinned: dict[str, int], operators: int) -> list[dict[str, int]]:
    """The dims of the loads at other sizes ``formulas`` makes first (every assumed dim varied, shapes from onnx
    inference alone) of an ONNX model of ``operators`` that assumed ``assumed`` and pinned ``pinned`` (its
    ``pinned_dims``): known before the model is built, so that its loader makes them ahead while a shape run's
    child works (``loader.prepare_ahead``)."""
    model = Model(format="onnx", path="", pinned_dims=dict(pinned), assumed_dims=list(assumed))
    return [at for _, at in load_points(model, frozenset(), operators) if at is not None]


def followers(model: Model) -> set[str]:
    """The assumed dims that follow from others (a KV cache's total, expressions): recomputed at every load."""
    from renderer.loaders.free_dims import EXPRESSION, TIED

    return {d.name for d in model.assumed_dims if d.source in (TIED, EXPRESSION)}
