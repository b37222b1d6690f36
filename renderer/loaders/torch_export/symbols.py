"""The symbolic sizes of a ``torch.export`` program: sympy expressions written by ``srepr``
(``Mul(Integer(8), Symbol('s77', positive=True, integer=True))``), read without sympy or ``eval``.

A size is parsed once into a small tree of calls (``Expr``): its free symbols, its value once the symbols have
values, and a short text (``8*s77``) for a shape that stays symbolic. Only the functions sympy and torch's
``torch.utils._sympy.functions`` write for integer sizes are known; any other call, or a text too long or too
deep, is an unknown size (never an error: a shape the loader cannot read costs that shape, not the model).
"""

from __future__ import annotations

import ast
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

MAX_TEXT = 4_000
"""Longer expression texts are unknown sizes (the deepest real ones are a few hundred characters)."""
MAX_DEPTH = 40
MAX_VALUE = 2**63 - 1
"""A size past an int64 is no size (a hostile expression: ``Pow(Integer(10), Integer(10000))``)."""


@dataclass(frozen=True, slots=True)
class Expr:
    """A parsed size: ``kind`` is ``int``, ``symbol`` or a function name; ``args`` its operands."""

    kind: str
    args: tuple[Expr, ...] = ()
    number: int = 0
    name: str = ""

    def symbols(self) -> list[str]:
        """The free symbols, in order of first appearance."""
        if self.kind == "symbol":
            return [self.name]
        found: dict[str, None] = {}
        for arg in self.args:
            found.update(dict.fromkeys(arg.symbols()))
        return list(found)

    def value(self, values: Mapping[str, int]) -> int | None:
        """The size once the symbols take ``values``; None when one is missing or the result is no size."""
        try:
            result = _evaluate(self, values)
        except (ArithmeticError, ValueError):
            return None
        if result is None or result != int(result) or not -MAX_VALUE <= result <= MAX_VALUE:
            return None
        return int(result)

    def text(self) -> str:
        """``s77``, ``8*s77``, ``s77//2 + 1``: sympy-like infix, for a size that stays symbolic."""
        return _infix(self)


def parse(text: str) -> Expr | None:
    """The expression ``text`` holds, or None when it is no expression this module reads."""
    if not isinstance(text, str) or len(text) > MAX_TEXT:
        return None
    try:
        tree = ast.parse(text, mode="eval").body
        return _build(tree, 0)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _build(node: ast.AST, depth: int) -> Expr:
    if depth > MAX_DEPTH:
        raise ValueError("too deep")
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _build(node.operand, depth + 1)
        return Expr("Mul", (Expr("int", number=-1), inner))
    if isinstance(node, ast.Constant):
        return Expr("int", number=_integer(node))  # Rational(1, 2) writes plain numbers
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
        raise ValueError("not a call")
    kind = node.func.id
    if kind == "Symbol":
        if len(node.args) != 1 or not isinstance(node.args[0], ast.Constant) or not isinstance(node.args[0].value, str):
            raise ValueError("bad symbol")
        return Expr("symbol", name=node.args[0].value)
    if kind == "Integer":
        if len(node.args) != 1:
            raise ValueError("bad integer")
        return Expr("int", number=_integer(node.args[0]))
    if kind not in _FUNCTIONS:
        raise ValueError(f"unknown function {kind}")
    return Expr(kind, tuple(_build(arg, depth + 1) for arg in node.args))


def _integer(node: ast.AST) -> int:
    negative = isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub)
    if negative:
        node = node.operand  # type: ignore[attr-defined]
    if not isinstance(node, ast.Constant) or type(node.value) is not int or abs(node.value) > MAX_VALUE:
        raise ValueError("bad integer")
    return -node.value if negative else node.value


def _floordiv(a: float, b: float) -> float:
    return a // b


def _ceildiv(a: float, b: float) -> float:
    return -(-a // b)


def _power(a: float, b: float) -> float:
    if abs(b) > 64 or abs(a) > MAX_VALUE:
        raise ValueError("power out of range")
    return a**b


def _modular_indexing(a: float, b: float, c: float) -> float:
    return (a // b) % c


_FUNCTIONS: dict[str, Callable[..., float]] = {
    "Add": lambda *a: sum(a), "Mul": lambda *a: math.prod(a), "Pow": _power,
    "FloorDiv": _floordiv, "CleanDiv": _floordiv, "IntTrueDiv": lambda a, b: a / b, "CeilDiv": _ceildiv,
    "Mod": lambda a, b: a % b, "PythonMod": lambda a, b: a % b, "ModularIndexing": _modular_indexing,
    "Max": max, "Min": min, "FloorToInt": math.floor, "CeilToInt": math.ceil, "TruncToInt": math.trunc,
    "Rational": lambda a, b: a / b, "Abs": abs,
}
_INFIX = {"Add": " + ", "Mul": "*", "FloorDiv": "//", "CleanDiv": "//", "Mod": "%", "PythonMod": "%",
          "Pow": "**", "IntTrueDiv": "/", "Rational": "/"}


def _evaluate(expr: Expr, values: Mapping[str, int]) -> float | None:
    if expr.kind == "int":
        return expr.number
    if expr.kind == "symbol":
        return values.get(expr.name)
    operands = []
    for arg in expr.args:
        value = _evaluate(arg, values)
        if value is None:
            return None
        if abs(value) > MAX_VALUE:
            raise ValueError("out of range")
        operands.append(value)
    try:
        return _FUNCTIONS[expr.kind](*operands)
    except TypeError as e:  # a wrong number of operands
        raise ValueError(str(e)) from None


def _infix(expr: Expr) -> str:
    if expr.kind == "int":
        return str(expr.number)
    if expr.kind == "symbol":
        return expr.name
    parts = [_infix(arg) if arg.kind in ("int", "symbol") else f"({_infix(arg)})" for arg in expr.args]
    joiner = _INFIX.get(expr.kind)
    if joiner is not None:
        return joiner.join(parts)
    return f"{expr.kind}({', '.join(parts)})"
