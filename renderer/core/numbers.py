"""How annograph writes numbers: the one place for number formatting in pictures, reports, summaries and messages.

- ``format_number``: a metric value as boxes, legends and tables show it (``13.25``, ``1.23M``, ``1.23e-04``).
- ``format_count``: a count of parameters or MACs (``25.6M``); ``format_bytes``: a size (``1.5 KiB``);
  ``format_limit``: a size in a message about what annograph reads (``2.0 GiB``, ``512 bytes``).
- ``count``: a count of things with its noun (``1 page``, ``1,024 pages``).
- ``percent``: a share of a total (``93.5 %``); ``signed``: a change with its sign (``+50``, ``-262144``).

Whole counts inside sentences use Python's own grouping (``f"{n:,}"``), and an option's value is echoed as
given (``f"{x:g}"``); everything that rounds or picks a suffix is here.
"""

from __future__ import annotations

import math

_VALUE_UNITS = ((1e12, 1e12, "T"), (1e9, 1e9, "G"), (1e6, 1e6, "M"), (1e4, 1e3, "k"))
_COUNT_UNITS = ((10**12, "T"), (10**9, "G"), (10**6, "M"), (10**3, "k"))
_BYTE_UNITS = ("B", "KiB", "MiB", "GiB")


def format_number(value: float) -> str:
    """Compact display: 13, 13.25, 1.2e+06 → 1.2M, 0.00012 → 1.2e-04.

    >>> format_number(1234567), format_number(13.0), format_number(0.000123), format_number(-2.5)
    ('1.23M', '13', '1.23e-04', '-2.5')
    >>> format_number(999_999), format_number(9_999.5), format_number(-999.96), format_number(2e15)
    ('1M', '10k', '-1000', '2e+15')
    """
    if isinstance(value, int) and abs(value) > 10**300:  # too large for a float: scientific notation by hand
        digits = str(abs(value))
        return f"{'-' if value < 0 else ''}{digits[0]}.{digits[1:3]}e+{len(digits) - 1}"
    if value == 0 or not math.isfinite(value):
        return f"{value:g}"
    magnitude = abs(value)
    # the unit is chosen by the value as it will be shown, so 999,999 reads 1M, not 1e+03k
    shown = float(f"{magnitude:.3g}") if magnitude >= _VALUE_UNITS[-1][0] else float(f"{magnitude:.4g}")
    if shown >= 1000 * _VALUE_UNITS[0][1]:
        return f"{value:.3g}"
    for threshold, unit, suffix in _VALUE_UNITS:
        if shown >= threshold:
            return f"{value / unit:.3g}{suffix}"
    if magnitude < 1e-3:
        return f"{value:.2e}"
    return f"{value:.4g}"


def format_count(n: int) -> str:
    """A count of parameters, MACs or elements, to 3 significant digits.

    >>> format_count(25557032), format_count(50048), format_count(999)
    ('25.6M', '50k', '999')
    """
    for threshold, suffix in _COUNT_UNITS:
        if abs(n) >= threshold:
            return f"{n / threshold:.3g}{suffix}"
    return str(n)


def format_bytes(n: int) -> str:
    """A size in binary units, to one decimal above a KiB.

    >>> format_bytes(1536), format_bytes(1023), format_bytes(3 << 40), format_bytes((1 << 40) - (1 << 25))
    ('1.5 KiB', '1023 B', '3.0 TiB', '1.0 TiB')
    """
    value = float(n)
    for unit in _BYTE_UNITS:
        if value < 1024 if unit == "B" else round(value, 1) < 1024:  # 1,023.96 KiB reads 1.0 MiB, not 1024.0 KiB
            return f"{int(value)} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} TiB"


def format_limit(n: int) -> str:
    """A size as the messages about input limits say it: bytes below a MiB, else MiB or GiB to one decimal;
    from 2^60 on as a power of two, since a file's header can promise more than a float holds.

    >>> format_limit(512), format_limit(3 << 20), format_limit(2 << 30), format_limit(10**40)
    ('512 bytes', '3.0 MiB', '2.0 GiB', 'over 2^132 bytes')
    """
    if n >= 1 << 60:
        return f"over 2^{n.bit_length() - 1} bytes"
    return f"{n / 2**30:.1f} GiB" if n >= 2**30 else f"{n / 2**20:.1f} MiB" if n >= 2**20 else f"{n} bytes"


def count(n: int, noun: str) -> str:
    """``n`` things, the noun in the plural unless there is one.

    >>> count(1, "model"), count(3, "model"), count(12345, "character")
    ('1 model', '3 models', '12,345 characters')
    """
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


def percent(share: float) -> str:
    """A share of a total in percent, to one decimal.

    >>> percent(93.46), percent(100), percent(0.04)
    ('93.5 %', '100.0 %', '0.0 %')
    """
    return f"{share:.1f} %"


def signed(change: float, compact: bool = False) -> str:
    """A non-zero finite change with its sign, reading back as its number to 4 significant digits (whole numbers
    in full); ``compact`` for lists and tables, in ``format_number``'s suffixes.

    >>> signed(50.0), signed(-262144.0), signed(-262144.0, compact=True), signed(-2.5)
    ('+50', '-262144', '-262k', '-2.5')
    """
    if compact:
        return ("+" if change > 0 else "") + format_number(change)
    if 1e4 <= abs(change) < 1e15 and change == round(change):
        return f"{change:+.0f}"
    return f"{change:+.4g}"
