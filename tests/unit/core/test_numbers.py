"""``renderer/core/numbers.py``: every displayed number reads back as the number it stands for (to the precision each
form promises), the suffix and plural rules, the figures of a real model's header, and that no other module
rounds numbers for display on its own."""

from __future__ import annotations

import math
import re

import numpy as np
import onnx
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from onnx import numpy_helper

from conftest import ONNX, ROOT
from renderer.compose.rendering import to_dot
from renderer.core import numbers
from renderer.loaders.registry import load_model

SUFFIX = {"": 1.0, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}
BINARY = {"B": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40}
finite = st.floats(allow_nan=False, allow_infinity=False, min_value=-1e300, max_value=1e300)


def _read_back(text: str) -> float:
    """A compact number back to a float: ``1.23M`` → 1230000.0, ``-2.5`` → -2.5, ``1.23e-04`` → 0.000123."""
    match = re.fullmatch(r"([-+]?[0-9.]+(?:e[-+][0-9]+)?)([kMGT]?)", text)
    assert match, text
    return float(match.group(1)) * SUFFIX[match.group(2)]


@given(finite)
@settings(max_examples=400, deadline=None)
def test_format_number_reads_back_to_three_or_four_significant_digits(value: float) -> None:
    text = numbers.format_number(value)
    back = _read_back(text)
    suffixed = text[-1] in "kMGT"
    # 4 significant digits without a suffix, 3 with one or in e-notation: half a unit of the last shown digit
    digits = 3 if suffixed or "e" in text else 4
    assert math.isclose(back, value, rel_tol=0.5 * 10 ** (1 - digits) + 1e-12, abs_tol=0.0 if value else 1e-300)
    if abs(value) < 1e15:  # above, the T figure itself goes to e-notation (1e+03T)
        assert len(text) <= 10, text


@pytest.mark.parametrize("value", [1e4, 9999.0, 1e6, 998_999.0, 1e9, 1e12, 1e-3, 9.99e-4])
def test_format_number_suffix_starts_at_its_threshold(value: float) -> None:
    """The suffix belongs to the magnitude: k from 10,000 on (9,999 stays whole), M/G/T from their powers, and
    e-notation below a thousandth."""
    text = numbers.format_number(value)
    expected = next((s for s, f in (("T", 1e12), ("G", 1e9), ("M", 1e6)) if value >= f), "k" if value >= 1e4 else "")
    assert re.sub(r"^[-+0-9.e]+", "", text) == expected
    assert ("e" in text) == (value < 1e-3)


@pytest.mark.parametrize("value", [999_999.0, 999_999_999.0, 1e15, 9999.5, -999_999.0, 999.96e12])
def test_format_number_moves_to_the_next_suffix_when_rounding_reaches_it(value: float) -> None:
    """999,999 reads 1M (not 1e+03k); past the largest suffix, plain scientific notation (1e+15, not 1e+03T)."""
    text = numbers.format_number(value)
    scale = {"k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}
    mantissa, unit = (text[:-1], scale[text[-1]]) if text[-1] in scale else (text, 1.0)
    assert "e" not in mantissa or unit == 1.0, text
    assert abs(float(mantissa)) < 1000 or unit == 1.0, text
    assert float(mantissa) * unit == pytest.approx(value, rel=5e-3), text


@pytest.mark.parametrize("value", [math.inf, -math.inf, math.nan, 0.0, -0.0, 0])
def test_format_number_writes_specials_as_python_does(value: float) -> None:
    assert numbers.format_number(value) == format(value, "g")


def test_format_number_takes_integers_too_large_for_a_float() -> None:
    value = 7 * 10**400 + 123 * 10**397
    text = numbers.format_number(value)
    mantissa, exponent = text.split("e+")
    assert int(exponent) == len(str(value)) - 1 and mantissa == "7.12"
    assert numbers.format_number(-value) == "-" + text


@given(st.integers(min_value=-10**15, max_value=10**15))
@settings(max_examples=300, deadline=None)
def test_format_count_reads_back_to_three_significant_digits(n: int) -> None:
    text = numbers.format_count(n)
    if abs(n) < 1000:
        assert text == str(n)
        return
    assert math.isclose(_read_back(text), n, rel_tol=0.005 + 1e-12)


@example(1_099_457_940_685)  # 1,023.96 GiB: rounds up to the next unit
@given(st.integers(min_value=0, max_value=2**50))
@settings(max_examples=300, deadline=None)
def test_format_bytes_reads_back_in_binary_units(n: int) -> None:
    value, unit = numbers.format_bytes(n).split(" ")
    scale = BINARY[unit]
    assert float(value) * scale == pytest.approx(n, abs=0.05 * scale + 0.5)
    # the largest unit that keeps the figure under 1024 (TiB takes everything above)
    assert float(value) < 1024 or unit == "TiB"
    assert unit == "B" or n >= 1024
    assert ("." in value) == (unit != "B")


@given(st.integers(min_value=0, max_value=2**70))
@settings(max_examples=300, deadline=None)
def test_format_limit_reads_back_or_bounds_the_size(n: int) -> None:
    text = numbers.format_limit(n)
    if text.startswith("over 2^"):
        power = int(text.removeprefix("over 2^").removesuffix(" bytes"))
        assert n >= 2**60 and 2**power <= n < 2 ** (power + 1)
        return
    value, unit = text.split(" ")
    scale = {"bytes": 1, "MiB": 2**20, "GiB": 2**30}[unit]
    assert float(value) * scale == pytest.approx(n, abs=0.05 * scale)
    assert unit == ("bytes" if n < 2**20 else "MiB" if n < 2**30 else "GiB")


@given(st.integers(min_value=0, max_value=10**9), st.sampled_from(["model", "page", "character"]))
def test_count_says_how_many_with_the_noun(n: int, noun: str) -> None:
    figure, word = numbers.count(n, noun).split(" ")
    assert int(figure.replace(",", "")) == n
    assert word == (noun if n == 1 else noun + "s")
    assert re.fullmatch(r"\d{1,3}(,\d{3})*", figure)


@given(st.floats(min_value=0, max_value=100))
def test_percent_reads_back_to_a_tenth(share: float) -> None:
    figure, sign = numbers.percent(share).split(" ")
    assert sign == "%" and abs(float(figure) - share) <= 0.05 + 1e-9
    assert re.fullmatch(r"\d+\.\d", figure)


@given(finite.filter(lambda x: x != 0), st.booleans())
@settings(max_examples=400, deadline=None)
def test_signed_keeps_the_sign_and_reads_back(change: float, compact: bool) -> None:
    text = numbers.signed(change, compact)
    assert text[0] == ("-" if change < 0 else "+")
    if compact:
        assert math.isclose(_read_back(text), change, rel_tol=5e-3)
        return
    if 1e4 <= abs(change) < 1e15 and change == round(change):
        assert int(text) == change  # whole numbers in full
    else:
        assert math.isclose(float(text), change, rel_tol=5e-4)


def test_a_real_models_header_shows_its_figures_in_these_forms() -> None:
    """tiny_transformer's header: parameters and weights computed here with onnx, read back from the DOT."""
    path = ONNX / "tiny_transformer.onnx"
    proto = onnx.load(str(path))
    arrays = [numpy_helper.to_array(t) for t in proto.graph.initializer]
    params = sum(int(np.prod(a.shape)) for a in arrays)
    weight_bytes = sum(a.nbytes for a in arrays)
    rows = dict(re.findall(r'COLOR="#444444">([^<]+)</FONT></TD><TD ALIGN="LEFT"><FONT POINT-SIZE="9">([^<]+)<',
                           to_dot(load_model(path))))
    assert math.isclose(_read_back(rows["parameters"]), params, rel_tol=0.005)
    value, unit = rows["weights"].split(" ")
    assert float(value) * BINARY[unit] == pytest.approx(weight_bytes, rel=0.001)
    assert int(rows["operators"].split(" ")[0].replace(",", "")) == len(proto.graph.node)


# Format specs that round a number for display; outside numbers.py, each was a copy of a rule kept here.
DISPLAY_ROUNDING = re.compile(r"\{[^{}]*:[+]?\.[34]g\}|\{[^{}]*:\.2e\}|[\"']KiB[\"']|\{[^{}]*:\.1f\} (?:%|[MG]iB)")


def test_only_numbers_rounds_numbers_for_display() -> None:
    offenders = [f"{p.relative_to(ROOT)}:{i}" for p in sorted((ROOT / "renderer").rglob("*.py"))
                 if p.name != "numbers.py"
                 for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
                 if DISPLAY_ROUNDING.search(line)]
    assert not offenders, offenders


def test_the_rounding_check_sees_a_copy() -> None:
    assert DISPLAY_ROUNDING.search('return f"{n / threshold:.3g}{suffix}"')
    assert DISPLAY_ROUNDING.search('share = f"{100 * value / total:.1f} %"')
    assert DISPLAY_ROUNDING.search('for unit in ("B", "KiB", "MiB"):')
    assert DISPLAY_ROUNDING.search('return f"{n / 2**30:.1f} GiB"')
    assert not DISPLAY_ROUNDING.search('f"{width:.2f}"')
    assert not DISPLAY_ROUNDING.search("a number with KiB, MiB or GiB")
