"""Validation of the style attributes annotation files may set.

Only these Graphviz attributes are accepted, each with a checked value, so nothing a file says can reach
``URL``/``href``/``id`` or any attribute Graphviz would copy into the SVG unescaped.
"""

from __future__ import annotations

import re

from renderer.core.errors import AnnotationError

COLOR_ATTRS = frozenset({"fillcolor", "color", "fontcolor"})
NUMBER_ATTRS = {"penwidth": (0.0, 20.0), "arrowsize": (0.0, 5.0)}
STYLE_WORDS = frozenset({"solid", "dashed", "dotted", "bold", "invis", "filled", "rounded"})
ALLOWED = COLOR_ATTRS | set(NUMBER_ATTRS) | {"style"}

_HEX = re.compile(r"^(?:#|0x)([0-9a-fA-F]{3}|[0-9a-fA-F]{6}|[0-9a-fA-F]{8})$")


def normalize_color(text: str) -> str | None:
    """``#rgb``, ``#rrggbb``, ``#rrggbbaa``, ``0xRRGGBB`` or a CSS/X11 colour name → ``#rrggbb``.

    A colour with transparency is mixed over the white page, so ``none`` and ``transparent`` are white (the
    alpha used to be cut off, and they drew black boxes).

    >>> normalize_color("0xFF0000"), normalize_color("#0f0"), normalize_color("tab:blue"), normalize_color("x")
    ('#ff0000', '#00ff00', '#1f77b4', None)
    >>> normalize_color("none"), normalize_color("transparent"), normalize_color("#ff000080")
    ('#ffffff', '#ffffff', '#ff7f7f')
    """
    text = text.strip()
    if text.lower() in ("none", "transparent"):  # Graphviz's and SVG's words for no paint
        return "#ffffff"
    match = _HEX.match(text)
    if match:
        digits = match.group(1).lower()
        if len(digits) == 3:
            digits = "".join(c * 2 for c in digits)
        return _over_white("#" + digits)
    if not re.fullmatch(r"[A-Za-z][A-Za-z0-9: ]{0,40}", text):
        return None
    from matplotlib import colors

    try:
        return _over_white(colors.to_hex(text.lower(), keep_alpha=True))
    except ValueError:
        return None


def _over_white(color: str) -> str:
    """``#rrggbb`` as it shows on white: ``#rrggbbaa`` blended, ``#rrggbb`` as it is."""
    if len(color) == 7:
        return color
    alpha = int(color[7:9], 16) / 255
    channels = (int(color[i:i + 2], 16) for i in (1, 3, 5))
    return "#" + "".join(f"{round(c * alpha + 255 * (1 - alpha)):02x}" for c in channels)


def validate_style(style: dict[str, object], where: str) -> dict[str, str]:
    """Checked copy of ``style``; raise AnnotationError naming ``where`` (file:line) on a bad value."""
    clean: dict[str, str] = {}
    for raw_key, raw_value in style.items():
        key = str(raw_key).strip().lower()
        value = str(raw_value).strip()
        if key not in ALLOWED:
            raise AnnotationError(
                f"{where}: style attribute {key[:40]!r} is not supported (use one of {', '.join(sorted(ALLOWED))})")
        if key in COLOR_ATTRS:
            color = normalize_color(value)
            if color is None:
                raise AnnotationError(f"{where}: style {key} {value[:40]!r} is not a colour "
                                      "(#rrggbb, 0xRRGGBB or a name)")
            clean[key] = color
        elif key in NUMBER_ATTRS:
            low, high = NUMBER_ATTRS[key]
            try:
                number = float(value)
            except ValueError:
                number = float("nan")
            if not low <= number <= high:
                raise AnnotationError(f"{where}: style {key} {value[:40]!r} must be a number from {low:g} to {high:g}")
            clean[key] = f"{number:g}"
        else:
            words = [w.strip() for w in value.split(",") if w.strip()]
            bad = [w for w in words if w not in STYLE_WORDS]
            if bad or not words:
                raise AnnotationError(f"{where}: style {value[:40]!r} must be among {', '.join(sorted(STYLE_WORDS))}")
            clean[key] = ",".join(words)
    return clean
