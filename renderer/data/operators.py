"""Operator knowledge as data: one entry per operator in ``renderer/data/onnx-ops.json``, ``tflite-ops.json``…,
checked when read (an unknown field, category, role, fold or formula is an ``OperatorDataError`` naming the file
and the operator). ``ops.schema.json`` is the same contract as a JSON Schema, for editors and the tests.

Every field of an entry is optional:
    category: the colour of the box's header, one of ``CATEGORIES`` (absent: ``other``).
    roles: what the operator does to the data flowing through it, beyond its category:
        ``runs_subgraphs`` control flow whose cost is that of the subgraph operators it runs;
        ``weight_layout`` passes a constant through unchanged in content but changes its shape (later inputs
        constant); ``weight_cast`` passes it through keeping its shape (only the element type may change);
        ``dequantize`` turns a stored integer weight into floats; ``ort_initializer`` is folded into an
        initializer by ONNX Runtime before it numbers the nodes.
    fold: how the picture folds it into the boxes reading it (``picture/folding.py``): ``constant`` produces a
        constant; ``shape`` reads only its input's shape; ``random`` is never a computation of constants;
        ``storage`` only changes how a stored weight is held (its reader lists the stored tensor).
    inputs: the schema's names of its input slots (``filter``, ``bias``), where the file does not name them (TFLite).
    size_from: which inputs' *values* decide its output size (``loaders.value_sizes``): ``every_input``
        (Range, NonZero…), ``later_inputs`` (ONNX: a shape, axes or pads after the data: Reshape, Slice…), or
        a list of input slots (TFLite: ``[1, 2]`` for SLICE's begin and size). An operator folded as ``shape``
        gives its input's size as values.
    cost: the name of the formula counting its MACs, a function of the format's cost module
        (``metrics/onnx_ops.FORMULAS``, ``metrics/tflite_ops.FORMULAS``); ``none`` for ops that only move data.
    cost_by_domain: ``{domain: formula}`` used instead of ``cost`` for the operator of that domain.
    ops, gates: numbers handed to the formula as keyword arguments (operations per element, per hidden unit…).
    weights: which inputs are weights: ``"all"``, or a list of input slots, each an index or, for an ONNX integer
        op naming its own zero point, ``[slot, zero point slot, channel axis of the weight]``.
    quantization_inputs: input slots holding the scales and zero points of its quantized weights: their bytes
        count in ``weight_bytes``, their elements not in ``params`` (a quantized layer has the parameters of the
        float layer it replaces).
    params_from: attributes holding the operator's learned values (ONNX-ML: coefficients, support vectors, tree
        split values, leaf weights): their elements are its parameters (a tree's ``nodes_values`` only at its
        branch nodes), and every list or tensor attribute of the operator counts in its ``weight_bytes``.
    packed_inputs: input slots holding sub-byte values packed into bytes (the op's ``bits`` attribute, 4 by
        default, per value: MatMulNBits' weight): ``params`` counts the values, ``weight_bytes`` the bytes.
    note: why the numbers are what they are, for the reader of the file.

The formulas stay Python (a formula is code); which operator uses which formula, with which numbers, is data.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cache, partial
from importlib import resources
from typing import Any, TypeVar

from renderer.core.errors import OperatorDataError, first_line

CATEGORIES: tuple[str, ...] = (
    "layer", "attention", "activation", "pool", "normalization", "elementwise", "reduce",
    "shape", "tensor", "quantization", "control", "data", "other",
)
ROLES = frozenset({"runs_subgraphs", "weight_layout", "weight_cast", "dequantize", "ort_initializer"})
FOLDS = frozenset({"constant", "shape", "random", "storage"})
SIZE_FROM = frozenset({"every_input", "later_inputs"})
FORMULA_ARGS = ("ops", "gates")
"""Entry fields handed to the cost formula as keyword arguments."""

Weight = tuple[int, tuple[int, int] | None]
"""(input slot, (zero point slot, channel axis of the weight) or None)."""
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Operator:
    """What annograph knows about one operator type of one format (the fields of its entry, defaults filled)."""

    name: str
    category: str = "other"
    roles: frozenset[str] = frozenset()
    fold: str | None = None
    inputs: tuple[str, ...] = ()
    size_from: str | tuple[int, ...] | None = None
    cost: str | None = None
    cost_by_domain: Mapping[str, str] = field(default_factory=dict)
    args: Mapping[str, float] = field(default_factory=dict)
    weights: tuple[Weight, ...] | str = ()
    quantization_inputs: tuple[int, ...] = ()
    params_from: tuple[str, ...] = ()
    packed_inputs: tuple[int, ...] = ()
    note: str = ""


def _name(value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError("must be a non-empty string")
    return value


def _one_of(allowed: tuple[str, ...] | frozenset[str]) -> Callable[[Any], str]:
    def check(value: Any) -> str:
        if value not in allowed:
            raise ValueError(f"{value!r} is not one of {', '.join(sorted(allowed))}")
        return value
    return check


def _roles(value: Any) -> frozenset[str]:
    if not isinstance(value, list) or not value:
        raise ValueError("must be a non-empty list")
    return frozenset(_one_of(ROLES)(role) for role in value)


def _names(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not value:
        raise ValueError("must be a non-empty list of names")
    return tuple(_name(item) for item in value)


def _by_domain(value: Any) -> dict[str, str]:
    if not isinstance(value, dict) or not value:
        raise ValueError("must be a non-empty object {domain: formula}")
    return {_name(domain): _name(formula) for domain, formula in value.items()}


def _number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise ValueError(f"{value!r} is not a number ≥ 0")
    return value


def _count(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{value!r} is not a whole number ≥ 1")
    return value


def _slot(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"slot {value!r} is not an index ≥ 0")
    return value


def _size_from(value: Any) -> str | tuple[int, ...]:
    if isinstance(value, list) and value:
        return tuple(_slot(item) for item in value)
    if value in SIZE_FROM:
        return value
    raise ValueError(f"{value!r} is not one of {', '.join(sorted(SIZE_FROM))} or a non-empty list of slots")


def _weight(value: Any) -> Weight:
    if isinstance(value, list):
        if len(value) != 3 or isinstance(value[2], bool) or not isinstance(value[2], int):
            raise ValueError(f"{value!r} is not [slot, zero point slot, channel axis]")
        return _slot(value[0]), (_slot(value[1]), value[2])
    return _slot(value), None


def _slots(value: Any) -> tuple[int, ...]:
    if not isinstance(value, list) or not value:
        raise ValueError("must be a non-empty list of slots")
    return tuple(_slot(item) for item in value)


def _weights(value: Any) -> tuple[Weight, ...] | str:
    if value == "all":
        return value
    if not isinstance(value, list) or not value:
        raise ValueError('must be "all" or a non-empty list of slots')
    return tuple(_weight(item) for item in value)


FIELDS: dict[str, Callable[[Any], Any]] = {
    "category": _one_of(CATEGORIES), "roles": _roles, "fold": _one_of(FOLDS), "inputs": _names,
    "size_from": _size_from, "cost": _name,
    "cost_by_domain": _by_domain, "ops": _number, "gates": _count, "weights": _weights,
    "quantization_inputs": _slots, "params_from": _names, "packed_inputs": _slots, "note": _name,
}


def _entry(where: str, name: str, fields: Any) -> Operator:
    if not isinstance(fields, dict):
        raise OperatorDataError(f"{where}: operator {name!r}: not an object")
    unknown = sorted(set(fields) - set(FIELDS))
    if unknown:
        raise OperatorDataError(f"{where}: operator {name!r}: unknown field {unknown[0]!r} "
                                f"(known: {', '.join(FIELDS)})")
    try:
        values = {key: FIELDS[key](value) for key, value in fields.items()}
    except ValueError as e:
        raise OperatorDataError(f"{where}: operator {name!r}: {e}") from None
    args = {key: values.pop(key) for key in FORMULA_ARGS if key in values}
    if args and "cost" not in values and "cost_by_domain" not in values:
        raise OperatorDataError(f"{where}: operator {name!r}: {', '.join(args)} without a cost formula")
    return Operator(name, args=args, **values)


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    for key, value in pairs:
        if key in seen:
            raise ValueError(f"{key!r} is listed twice")
        seen[key] = value
    return seen


TABLE_OF = {"executorch": "torch"}
"""Formats that read another's table: an ExecuTorch program's kernels are the ATen operators of torch.export."""


def where(fmt: str) -> str:
    """The data file of format ``fmt``, as error messages name it."""
    return f"renderer/data/{TABLE_OF.get(fmt, fmt)}-ops.json"


def parse(where: str, text: str) -> dict[str, Operator]:
    """The operator entries of the data file text ``text`` (``where`` names it in errors), checked."""
    try:
        document = json.loads(text, object_pairs_hook=_unique)
    except ValueError as e:
        raise OperatorDataError(f"{where}: {first_line(e)}") from None
    entries = document.get("operators") if isinstance(document, dict) else None
    if not isinstance(entries, dict):
        raise OperatorDataError(f'{where}: no "operators" object')
    return {name: _entry(where, name, fields) for name, fields in entries.items()}


@cache
def operators(fmt: str) -> dict[str, Operator]:
    """Every operator entry of format ``fmt`` (``onnx``/``tflite``…; ``TABLE_OF``), by operator type; checked against
    the fields."""
    if fmt in TABLE_OF:
        return operators(TABLE_OF[fmt])
    try:
        text = resources.files(__package__).joinpath(f"{fmt}-ops.json").read_text(encoding="utf-8")
    except OSError as e:
        raise OperatorDataError(f"{where(fmt)}: {first_line(e)}") from None
    return parse(where(fmt), text)


def operator(fmt: str, op_type: str) -> Operator | None:
    """The entry of ``op_type`` in format ``fmt``, or None when the data does not name it."""
    return operators(fmt).get(op_type)


@cache
def with_role(fmt: str, role: str) -> frozenset[str]:
    """Operator types of format ``fmt`` that have ``role`` (one of ``ROLES``)."""
    _one_of(ROLES)(role)
    return frozenset(name for name, op in operators(fmt).items() if role in op.roles)


@cache
def with_fold(fmt: str, fold: str) -> frozenset[str]:
    """Operator types of format ``fmt`` folded as ``fold`` (one of ``FOLDS``)."""
    _one_of(FOLDS)(fold)
    return frozenset(name for name, op in operators(fmt).items() if op.fold == fold)


@cache
def with_size_from(fmt: str, size_from: str) -> frozenset[str]:
    """Operator types of format ``fmt`` whose output size follows from the values of ``size_from``
    (one of ``SIZE_FROM``)."""
    _one_of(SIZE_FROM)(size_from)
    return frozenset(name for name, op in operators(fmt).items() if op.size_from == size_from)


def formula_table(fmt: str, formulas: Mapping[str, Callable[..., T]]) -> dict[tuple[str, str], Callable[[Any], T]]:
    """(operator type, domain) → its cost formula from ``formulas`` with the entry's numbers bound, for format
    ``fmt``; see ``bind_formulas``."""
    return bind_formulas(where(fmt), operators(fmt), formulas)


def bind_formulas(where: str, entries: Mapping[str, Operator],
                  formulas: Mapping[str, Callable[..., T]]) -> dict[tuple[str, str], Callable[[Any], T]]:
    """(operator type, domain) → its formula with the entry's numbers bound; the domain is ``""`` for the
    entry's ``cost`` and the key of ``cost_by_domain`` for the others. Every formula name and its arguments are
    checked here, so a bad entry fails when the table is built, naming the operator."""
    table: dict[tuple[str, str], Callable[[Any], T]] = {}
    for name, op in entries.items():
        named = {"": op.cost} if op.cost else {}
        for domain, formula in {**named, **op.cost_by_domain}.items():
            if formula not in formulas:
                raise OperatorDataError(f"{where}: operator {name!r}: unknown cost formula {formula!r} "
                                        f"(known: {', '.join(sorted(formulas))})")
            try:
                inspect.signature(formulas[formula]).bind(None, **op.args)
            except TypeError as e:
                raise OperatorDataError(f"{where}: operator {name!r}: formula {formula!r}: {e}") from None
            table[name, domain] = partial(formulas[formula], **op.args)
    return table
