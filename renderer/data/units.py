"""Which units make a metric add up over operators (``units.json``): a time, a byte size or a count."""

from __future__ import annotations

import functools
import json
from importlib import resources

KINDS = ("time", "bytes", "count")


@functools.cache
def _kinds() -> dict[str, str]:
    text = resources.files(__package__).joinpath("units.json").read_text(encoding="utf-8")
    table = json.loads(text)
    return {unit.casefold(): kind for kind in KINDS for unit in table[kind]}


def additive_kind(unit: str) -> str:
    """``"time"``, ``"bytes"`` or ``"count"`` when ``unit`` is one (``us``, ``[ms]``, ``MiB``, ``cycles``), else "".

    >>> additive_kind("µs"), additive_kind("(MiB)"), additive_kind("MB/s"), additive_kind("dB")
    ('time', 'bytes', '', '')
    """
    text = unit.strip().strip("()[]").strip().casefold()
    return _kinds().get(text, "")
