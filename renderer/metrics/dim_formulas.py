"""MACs as exact polynomials of the free dims a load assumed (``Model.assumed_dims``): ``1.02G·batch``,
``51.8k·batch·seq + 144·batch·seq²``, so one run answers every size.

The model is loaded again (shapes from onnx inference alone, and from the onnxruntime run only when some operator
needs it) on a grid of values of its assumed batch, sequence and past dims (degree + 1 values of
each: ``DEGREES``, ``STEP`` apart, from the assumed one; a KV cache's total follows), and each operator's MACs are
interpolated through the grid exactly (rational Lagrange interpolation, a tensor product over the dims). Loads off
the grid check it: each dim one value further with the others at their assumed ones, then all at once. An
operator whose counts miss a check (a cost with a floor, a size read from values) gets no polynomial, and the
model's total gets none then; the batch alone is tried next, the lengths held at their assumed values (audio
samples an STFT cuts into frames). Image height and width stay at their assumed values (convolutions round their
output sizes: no polynomial).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

from renderer.core.ir import ElementKey, Model
from renderer.core.numbers import format_count
from renderer.data.categories import runs_subgraphs
from renderer.files import disk_cache
from renderer.loaders import formula_loads
from renderer.loaders.formula_loads import (
    check_points,
    dim_points,
    dim_values,
    followers,
    grid_points,
    load_points,
    together,
    variables,
)

SUPERSCRIPTS = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")

Monomial = tuple[int, ...]


@dataclass(frozen=True)
class Polynomial:
    """Σ coefficient · Π name^exponent over ``names``; exact (Fraction coefficients)."""

    names: tuple[str, ...]
    terms: Mapping[Monomial, Fraction]

    def __call__(self, values: Mapping[str, int]) -> Fraction:
        total = Fraction(0)
        for powers, coefficient in self.terms.items():
            term = coefficient
            for name, power in zip(self.names, powers):
                term *= values[name] ** power
            total += term
        return total

    def __add__(self, other: Polynomial) -> Polynomial:
        terms = dict(self.terms)
        for powers, coefficient in other.terms.items():
            terms[powers] = terms.get(powers, Fraction(0)) + coefficient
        return Polynomial(self.names, {p: c for p, c in terms.items() if c})

    def text(self, exact: bool = False) -> str:
        """``2.1M·seq + 16k·seq²``: the terms by degree, coefficients as the headline writes counts (``exact``:
        in full, ``2097152·seq + 16384·seq²``, fractions as ``1/2``)."""
        if not self.terms:
            return "0"
        parts = []
        for powers in sorted(self.terms, key=lambda p: (sum(p), p)):
            factors = [name + (str(power).translate(SUPERSCRIPTS) if power > 1 else "")
                       for name, power in zip(self.names, powers) if power]
            coefficient = self.terms[powers]
            number = str(coefficient) if exact else format_count(
                int(coefficient) if coefficient.denominator == 1 else float(coefficient))
            parts.append("·".join(([number] if coefficient != 1 or not factors else []) + factors))
        return " + ".join(parts).replace("+ -", "− ")


@dataclass(frozen=True)
class Formulas:
    """Each operator's MACs polynomial (None where no polynomial fits) and the model total's."""

    names: tuple[str, ...]
    ops: Mapping[ElementKey, Polynomial | None]
    total: Polynomial | None
    missing: bool = False
    """Some load left an operator counted at the assumed sizes without a count (its shapes need a run)."""
    counted: int = 0
    """Operators with a MAC count at the assumed sizes: the total is theirs."""
    uncounted: int = 0
    """Operators without one (n/a), which the total leaves out; not control flow (If, Loop, Scan), whose bodies'
    operators are counted one by one, as the headline's ``(+N ops n/a)`` leaves it out."""
    held: tuple[str, ...] = ()
    """The assumed dims the polynomials are not of, as ``name=value``: they hold at those values only (a big model's
    lengths, an STFT's samples, an image's height and width)."""

    def at(self) -> str:
        """`` at seq=128, height=224`` after a formula that holds those dims, "" when it holds none."""
        return f" at {', '.join(self.held)}" if self.held else ""


def _macs(model: Model, rendered: bool = False) -> dict[ElementKey, int | None]:
    """Each operator's MACs (None where it has none): of the ``rendered`` model from its cost pass (kept, the
    render needs it), of a load at other dims from the MACs alone (``op_cost``: a third of the pass, and the
    rendered model's pass stays the one kept)."""
    if rendered:
        from renderer.metrics.builtin import op_macs

        return op_macs(model)
    from renderer.metrics.formulas import Cost
    from renderer.metrics.op_costs import op_cost

    costs = {node.key: op_cost(node, model.format) for graph in model.graphs for node in graph.nodes}
    return {key: cost.macs if isinstance(cost, Cost) else None for key, cost in costs.items()}


@functools.lru_cache(maxsize=16)
def _basis(xs: tuple[int, ...]) -> list[list[Fraction]]:
    """The Lagrange basis of ``xs``: for each i the coefficients (by power) of the polynomial 1 at xs[i], 0 at
    the others (the same few grids serve every operator of a model: kept)."""
    result = []
    for i, xi in enumerate(xs):
        poly, scale = [Fraction(1)], Fraction(1)
        for j, xj in enumerate(xs):
            if j != i:
                poly = [a - xj * b for a, b in zip([Fraction(0), *poly], [*poly, Fraction(0)])]
                scale *= xi - xj
        result.append([c / scale for c in poly])
    return result


def interpolate(names: tuple[str, ...], grids: Sequence[Sequence[int]],
                values: Mapping[tuple[int, ...], int]) -> Polynomial:
    """The polynomial of degree < len(grids[i]) in each name through ``values`` (grid point → value), exactly."""
    bases = [_basis(tuple(grid)) for grid in grids]
    terms: dict[Monomial, Fraction] = {}
    for point, value in values.items():
        if not value:
            continue
        product: dict[Monomial, Fraction] = {(): Fraction(value)}
        for axis, x in enumerate(point):
            poly = bases[axis][list(grids[axis]).index(x)]
            product = {(*powers, power): c * coefficient for powers, c in product.items()
                       for power, coefficient in enumerate(poly) if coefficient}
        for powers, c in product.items():
            terms[powers] = terms.get(powers, Fraction(0)) + c
    return Polynomial(names, {p: c for p, c in terms.items() if c})


def fit_ops(names: tuple[str, ...], values: Sequence[Sequence[int]],
            loaded: Mapping[tuple[int, ...], Mapping[ElementKey, int | None]]) -> dict[ElementKey, Polynomial | None]:
    """Each operator's polynomial through its MACs at the grid of ``values`` (all but each dim's last value),
    None where a load has no count or the fit misses a checking point (``_checks``)."""
    grids = [v[:-1] for v in values]
    grid, checks = grid_points(grids), check_points(names, values)
    result: dict[ElementKey, Polynomial | None] = {}
    for key in loaded[grid[0]]:
        counts = {point: loaded[point].get(key) for point in grid + checks}
        if any(count is None for count in counts.values()):
            result[key] = None
            continue
        first = counts[grid[0]]
        if all(count == first for count in counts.values()):  # what the interpolation gives a constant, exactly
            result[key] = Polynomial(names, {(0,) * len(names): Fraction(first)} if first else {})
            continue
        polynomial = interpolate(names, grids, {p: counts[p] for p in grid})  # type: ignore[misc]
        fits = all(polynomial(dict(zip(names, p))) == counts[p] for p in checks)
        result[key] = polynomial if fits else None
    return result


def formulas(model: Model) -> Formulas | None:
    """The MACs polynomials of ``model``'s assumed batch and length dims (computed once per model), None when it
    assumed none, cannot be loaded again, or is too big to load that often (``formula_loads.MAX_WORK``)."""
    cached = _CACHE.get(id(model))
    if cached is not None and cached[0] is model:
        return cached[1]
    big = _too_big(model)
    where = None if big else _where(model)
    found = _MISS if where is None else _from_json(disk_cache.recall(KIND, *where))
    if found is _MISS:
        found = None if big else _fitted(model)
        if where is not None:
            disk_cache.keep(KIND, *where, {"formulas": _to_json(found)})  # type: ignore[arg-type]
    _CACHE.clear()
    _CACHE[id(model)] = (model, found)  # type: ignore[assignment]
    return found  # type: ignore[return-value]


def _too_big(model: Model) -> bool:
    """Whether every fit ``_fitted`` tries loads too many operators too often (``formula_loads.MAX_WORK``): then
    there is none, known before the key of a kept result is made (a 20k-operator model's: a fifth of a second)."""
    operators = sum(len(g.nodes) for g in model.graphs)
    lengths = frozenset(name for name, _, role in variables(model) if role != "batch")
    tries = [frozenset(), *([lengths] if lengths and len(lengths) < len(variables(model)) else [])]
    return all(len(dim_points(variables(model, held))) * operators > formula_loads.MAX_WORK for held in tries)


def _fitted(model: Model) -> Formulas | None:
    """The formulas in every assumed batch and length dim; when those have no total, in the batch alone with the
    lengths held at their values (audio samples an STFT cuts into frames: a floor, no polynomial)."""
    from renderer.loaders.onnx.loader import drop_ahead

    try:
        found = _fitted_in(model, frozenset())
    finally:
        drop_ahead()  # what its loader made ahead for it (none for the loads holding the lengths)
    lengths = frozenset(name for name, _, role in variables(model) if role != "batch")
    if (found is None or found.total is None) and lengths and len(lengths) < len(variables(model)):
        alone = _fitted_in(model, lengths)
        if alone is not None and alone.total is not None:
            return alone
    return found


def _fitted_in(model: Model, held: frozenset[str]) -> Formulas | None:
    loads: list[object] = []
    found = _compute(model, held, shape_run=False, loads=loads)  # onnx inference alone is cheap; onnxruntime if needed
    if found is not None and found.total is None and found.missing:
        from renderer.loaders.onnx import ort_shapes

        # the runs the loads below make, all in one onnxruntime process rather than one process each
        ort_shapes.run_ahead(Path(model.path), loads)  # type: ignore[arg-type]
        loads.clear()
        try:
            found = _compute(model, held, shape_run=True)
        finally:
            ort_shapes.drop_ahead()
    return found


KIND = "MACs formulas"
_MISS = object()


def _where(model: Model) -> tuple[list[Path], dict[str, object]] | None:
    """Where ``model``'s formulas are kept (``disk_cache.recall``'s files and fields), None when it has none to
    keep. The key holds the model file's bytes, its external data's, the dims it was loaded at and the MACs of
    this load (shapes from ``--inputs`` or a profile change them), onnx's and onnxruntime's versions: the other
    loads are of the same file at other dims."""
    from renderer.loaders import isolated
    from renderer.loaders.onnx import ort_shapes
    from renderer.loaders.onnx.loader import Loaded

    if not variables(model) or model.format != "onnx":
        return None
    path = Path(model.path)
    files = [path, *(ort_shapes.external_files(path, model.raw.proto) if isinstance(model.raw, Loaded) else [])]
    fields: dict[str, object] = {
        "assumed": [[d.name, d.value, d.role, d.source] for d in model.assumed_dims],
        "pinned": sorted(model.pinned_dims.items()), "max work": formula_loads.MAX_WORK,
        "macs": sorted((list(key), count) for key, count in _macs(model, rendered=True).items()),
        "versions": [isolated.version("onnx"), isolated.version("onnxruntime")]}
    return files, fields


def _to_json(found: Formulas | None) -> object:
    def poly(p: Polynomial | None) -> object:
        return None if p is None else [[list(powers), str(c)] for powers, c in sorted(p.terms.items())]

    if found is None:
        return None
    return {"names": list(found.names), "ops": [[*key, poly(p)] for key, p in found.ops.items()],
            "total": poly(found.total), "missing": found.missing, "counted": found.counted,
            "uncounted": found.uncounted, "held": list(found.held)}


def _from_json(kept: object) -> Formulas | None | object:
    """The formulas ``_to_json`` kept (``{"formulas": …}``), or ``_MISS`` when nothing usable was kept."""
    if not isinstance(kept, dict) or "formulas" not in kept:
        return _MISS
    found = kept["formulas"]
    if found is None:
        return None
    try:
        names = tuple(found["names"])

        def poly(terms: list | None) -> Polynomial | None:
            return None if terms is None else Polynomial(names, {tuple(p): Fraction(c) for p, c in terms})

        ops = {(str(kind), int(g), int(n)): poly(terms) for kind, g, n, terms in found["ops"]}
        return Formulas(names, ops, poly(found["total"]), bool(found["missing"]), int(found["counted"]),
                        int(found["uncounted"]), tuple(str(h) for h in found["held"]))
    except (KeyError, TypeError, ValueError, ZeroDivisionError):
        return _MISS


_CACHE: dict[int, tuple[Model, Formulas | None]] = {}


def _compute(model: Model, held: frozenset[str], shape_run: bool, loads: list[object] | None = None,
             ) -> Formulas | None:
    """The formulas from loads of ``model`` at each point of the grid (the ``held`` dims at their values); the
    ONNX proto of each load (pinned and inferred, as the loader keeps it) is added to ``loads``."""
    from renderer.core.errors import AnnographError
    from renderer.loaders.onnx.loader import Loaded, load_like

    dims = variables(model, held)
    names = tuple(name for name, _, _ in dims)
    values = [dim_values(value, role) for _, value, role in dims]
    plan = load_points(model, held, sum(len(g.nodes) for g in model.graphs))
    if not plan or model.format != "onnx":
        return None
    base = {name: value for name, value, _ in dims}
    members = together(model, held)
    varied = {member for group in members.values() for member in group}
    loaded: dict[tuple[int, ...], Mapping[ElementKey, int | None]] = {}
    here = _macs(model, rendered=True)
    keep = frozenset(key for key, count in here.items() if count is not None)  # the others have no formula
    try:
        for point, at in plan:
            if at is None:
                loaded[point] = here
                continue
            again = load_like(model, at, shape_run, keep)
            loaded[point] = _macs(again)
            if loads is not None and isinstance(again.raw, Loaded):
                loads.append(again.raw.proto)
    except AnnographError:  # a size the model refuses (a reshape fixed to the traced length): no formula
        return None
    ops = fit_ops(names, values, loaded)
    at_base = loaded[tuple(base[n] for n in names)]
    counted = [ops[key] for key, count in at_base.items() if count is not None]
    total = None
    if counted and all(p is not None for p in counted):
        total = Polynomial(names, {})
        for polynomial in counted:
            total = total + polynomial  # type: ignore[operator]
    missing = any(count is None for counts in loaded.values() for key, count in counts.items()
                  if at_base.get(key) is not None)
    flow = {node.key for node in model.nodes() if runs_subgraphs(model.format, node.op_type)}  # counted in bodies
    uncounted = sum(1 for key, count in at_base.items() if count is None and key not in flow)
    return Formulas(names, ops, total, missing, len(counted), uncounted, _held(model, varied))


def _held(model: Model, varied: set[str]) -> tuple[str, ...]:
    """``name=value`` of each assumed dim the loads kept at its value (neither varied nor following the varied)."""
    follow = followers(model)
    return tuple(f"{d.name}={d.value}" for d in model.assumed_dims if d.name not in varied and d.name not in follow)


def total_line(model: Model) -> str:
    """``MACs = 1.02G·batch`` for the legend and the headline, ``at seq=128`` after it for the assumed dims it is
    no polynomial of, ``(formula of 300 counted ops; 12 n/a)`` when some operators have no count; "" without a
    formula."""
    found = formulas(model)
    if found is None or found.total is None:
        return ""
    left = f" (formula of {found.counted:,} counted ops; {found.uncounted:,} n/a)" if found.uncounted else ""
    return f"MACs = {found.total.text()}{found.at()}{left}"


def add_formulas(model: Model, ops: dict[ElementKey, dict[str, object]]) -> None:
    """``macs_formula`` beside ``macs`` for every operator with a polynomial (the metrics CSV/JSON column)."""
    found = formulas(model) if model.assumed_dims else None
    for key, polynomial in (found.ops.items() if found is not None else ()):
        if polynomial is not None and key in ops:
            ops[key]["macs_formula"] = polynomial.text(exact=True)


__all__ = ["Formulas", "Polynomial", "add_formulas", "fit_ops", "formulas", "interpolate", "together",
           "total_line", "variables"]
