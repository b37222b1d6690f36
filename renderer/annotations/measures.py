"""The numbers tool readers take from their files, parsed one way for every reader.

Accepted: decimal integers and floats (``12``, ``-0.5``, ``1e-3``, ``2.3%``) whose value a float holds. Refused,
in one line naming the file, line and column and the column's name: ``inf``/``nan`` text (unless the tool writes
it for a figure it lacks, as Vela's regor core writes ``NaN``: then the cell is empty), integers and floats past
the float range (a 4,000-digit cycle count), negative values of what cannot be negative (times, cycles, counts),
and sums or means of finite values that overflow (two Vela rows of 1e308 cycles each): drawn, they would be
``inf`` in a box and in the totals, and the picture would lose its colour scale.
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from renderer.core.errors import AnnotationError

_NOT_FINITE = frozenset({"nan", "+nan", "-nan", "inf", "+inf", "-inf", "infinity", "+infinity", "-infinity"})
_SHOWN = 24


@dataclass(frozen=True, slots=True)
class Where:
    """A place in a file, for messages: ``path:line:column`` (line and column 1-based, when known)."""

    path: object
    line: int | None = None
    column: int | None = None

    def __str__(self) -> str:
        text = str(self.path)
        if self.line is not None:
            text += f":{self.line}"
            if self.column is not None:
                text += f":{self.column}"
        return text


def parse(text: str) -> int | float | None:
    """The number in ``text`` (a trailing ``%`` allowed), None for an empty cell; ValueError saying why it is no
    usable number otherwise.

    >>> parse(" 12 "), parse("2.5%"), parse("")
    (12, 2.5, None)
    >>> parse("1e400")
    Traceback (most recent call last):
    ValueError: is past the float range
    """
    text = text.strip().removesuffix("%").strip()
    if not text:
        return None
    if text.lower() in _NOT_FINITE:
        raise ValueError("is not a finite number")
    if not text.isascii():  # float() reads "١" and "１" as digits: no tool writes them
        raise ValueError("is not a number")
    if text.lstrip("+-").isdigit():
        if len(text.lstrip("+-0")) > 309:  # past 1.8e308 whatever the digits (and before int() reads 4,300 of them)
            raise ValueError("is past the float range")
        value = int(text)
        return value if abs(value) <= sys.float_info.max else _past()
    try:
        result = float(text)
    except ValueError:
        raise ValueError("is not a number") from None
    if math.isnan(result):
        raise ValueError("is not a finite number")
    return result if math.isfinite(result) else _past()


def _past() -> float:
    raise ValueError("is past the float range")


def _shown(text: str) -> str:
    text = text.strip()
    return repr(text if len(text) <= _SHOWN else text[:_SHOWN] + f"… ({len(text):,} characters)")


def measure(text: str, where: Where | str, name: str, negative: bool = False,
            missing: Iterable[str] = ()) -> int | float | None:
    """The number in the cell ``text`` of column ``name``, None for an empty cell or one of ``missing`` (what the
    tool writes for a figure it lacks, lower-case); AnnotationError naming ``where`` when it is no finite number
    in float range, or negative unless ``negative`` allows it."""
    if missing and text.strip().lower() in missing:
        return None
    try:
        value = parse(text)
    except ValueError as e:
        raise AnnotationError(f"{where}: {name} {_shown(text)} {e}") from None
    if value is not None and value < 0 and not negative:
        raise AnnotationError(f"{where}: {name} {_shown(text)} is negative (a time, count or share cannot be)")
    return value


def total(values: Iterable[int | float], where: Where | str, name: str) -> int | float:
    """The sum of finite ``values``; AnnotationError naming ``where`` and ``name`` when it passes the float range."""
    result = sum(values)
    if abs(result) <= sys.float_info.max:  # exact for ints (no float conversion to overflow); False for inf, nan
        return result
    raise AnnotationError(f"{where}: {name} adds up past the float range (the values are finite, their sum is not)")


def mean(values: list[int | float], where: Where | str, name: str) -> float:
    """The mean of finite ``values`` (not empty), refused as ``total`` is when their sum overflows."""
    return float(total(values, where, name)) / len(values)


class _Refused(ValueError):
    def __init__(self, token: str, why: str) -> None:
        super().__init__(why)
        self.token = token


def _json_float(token: str) -> float:
    value = float(token)
    if not math.isfinite(value):
        raise _Refused(token, "is past the float range")
    return value


def _json_int(token: str) -> int:
    if len(token.lstrip("-0")) > 309:
        raise _Refused(token, "is past the float range")
    value = int(token)
    if abs(value) > sys.float_info.max:
        raise _Refused(token, "is past the float range")
    return value


def _json_constant(token: str) -> float:
    raise _Refused(token, "is not a finite number (JSON has no NaN or Infinity)")


def finite_decoder(**options: Any) -> json.JSONDecoder:
    """A JSON decoder taking only finite numbers in float range: NaN, Infinity, ``1e400`` and integers past a float
    raise a ValueError that ``refused`` turns into the message naming its place."""
    return json.JSONDecoder(parse_float=_json_float, parse_int=_json_int, parse_constant=_json_constant, **options)


def refused(path: object, text: str, start: int, error: ValueError, lines_before: int = 0) -> AnnotationError | None:
    """The error for a number ``finite_decoder`` refused while decoding ``text`` from ``start`` (None for any other
    ValueError): file, line and column of the first such token after ``start``."""
    if not isinstance(error, _Refused):
        return None
    found = re.search(r"(?<![\w.\"])" + re.escape(error.token) + r"(?![\w.])", text[start:])
    where = Where(path)
    if found:
        at = start + found.start()
        line = lines_before + text.count("\n", 0, at) + 1
        where = Where(path, line, at - (text.rfind("\n", 0, at) + 1) + 1)
    return AnnotationError(f"{where}: the number {_shown(error.token)} {error}")


__all__ = ["Where", "finite_decoder", "mean", "measure", "parse", "refused", "total"]
