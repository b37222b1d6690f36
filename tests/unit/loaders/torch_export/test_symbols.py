"""The symbolic sizes torch writes (sympy ``srepr`` text), read without sympy or ``eval``: values, texts, symbols,
and hostile texts that are unknown sizes, never code or a hang."""

from __future__ import annotations

import pytest

from renderer.loaders.torch_export.symbols import MAX_TEXT, parse

S77 = "Symbol('s77', positive=True, integer=True)"


@pytest.mark.parametrize(("text", "value", "shown"), [
    (S77, 3, "s77"),
    (f"Mul(Integer(8), {S77})", 24, "8*s77"),
    (f"Add(FloorDiv({S77}, Integer(2)), Integer(1))", 2, "(s77//2) + 1"),
    (f"Max(Integer(1), Add({S77}, Integer(-1)))", 2, "Max(1, (s77 + -1))"),
    (f"CeilToInt(IntTrueDiv({S77}, Integer(2)))", 2, "CeilToInt((s77/2))"),
    (f"Mod({S77}, Integer(2))", 1, "s77%2"),
])
def test_sizes_evaluate_and_read(text: str, value: int, shown: str) -> None:
    expr = parse(text)
    assert expr is not None and expr.value({"s77": 3}) == value and expr.text() == shown
    assert expr.symbols() == ["s77"] and expr.value({}) is None  # the symbol unknown: the size is too


@pytest.mark.parametrize("text", [
    "__import__('os').system('true')", "Symbol(s77)", "Integer(1.5)", "Lambda(x, x)", "Add(", "",
    "Add(" * 100 + "Integer(1)" + ")" * 100, "x" * (MAX_TEXT + 1), "Integer(" + "9" * 30 + ")",
])
def test_anything_else_is_an_unknown_size(text: str) -> None:
    assert parse(text) is None


def test_sizes_past_an_int64_are_no_sizes() -> None:
    huge = parse("Pow(Integer(10), Integer(10000))")
    assert huge is not None and huge.value({}) is None
    product = parse("Mul(Integer(9223372036854775807), Integer(2))")
    assert product is not None and product.value({}) is None
    assert parse("FloorDiv(Integer(1), Integer(0))").value({}) is None  # type: ignore[union-attr]
