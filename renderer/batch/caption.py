"""The caption block a batch picture carries above the graph: metric, run, colour bar, range. Its geometry is
fixed (only texts and fills change from picture to picture), and all of its text goes through ``escape``."""

from __future__ import annotations

from dataclasses import dataclass

from renderer.colour.maps import NA_COLOR
from renderer.core import escape

HEIGHT = 74.0
"""Points added above the graph."""
MIN_WIDTH = 440.0
"""Narrower pictures are widened to this so the colour bar fits."""
CELLS = 20
CELL_W = 14.0
LEFT = 14.0
FONT = 'font-family="Helvetica,sans-Serif"'
TITLE_CHARS = 70
LINE_CHARS = 100


@dataclass(frozen=True, slots=True)
class Caption:
    """What one picture's caption says.

    Attributes:
        metric: the metric with its unit, e.g. ``sqnr_db (dB)``.
        notes: scale and direction, e.g. ``linear scale · higher is better``.
        run: the annotation file the values came from.
        gradient: CELLS colours from the low end to the high end.
        ticks: five labels under the bar, low to high.
        missing: drawn operators without a value.
    """

    metric: str
    notes: str
    run: str
    gradient: tuple[str, ...]
    ticks: tuple[str, ...]
    missing: int


def svg(caption: Caption, width: float, height: float) -> str:
    """The block as SVG elements in the canvas' own coordinates (the graph sits below ``HEIGHT``)."""
    t = escape.svg_text
    bar_top = 44.0
    parts = [
        '<g id="batch-caption" class="caption">\n',
        f'<rect x="0" y="0" width="{width:.2f}" height="{height:.2f}" fill="#ffffff"/>\n',
        f'<text text-anchor="start" x="{LEFT:.1f}" y="18" {FONT} font-weight="bold" font-size="12.00" '
        f'fill="#000000">{t(caption.metric, TITLE_CHARS)}</text>\n',
        f'<text text-anchor="start" x="{LEFT:.1f}" y="34" {FONT} font-size="9.00" fill="#444444">'
        f'{t(caption.run + "  ·  " + caption.notes, LINE_CHARS)}</text>\n',
    ]
    for i, color in enumerate(caption.gradient):
        parts.append(f'<rect x="{LEFT + i * CELL_W:.1f}" y="{bar_top:.1f}" width="{CELL_W:.1f}" height="12" '
                     f'fill="{t(color, 7)}"/>\n')
    bar_end = LEFT + CELLS * CELL_W
    parts.append(f'<rect x="{bar_end + 10:.1f}" y="{bar_top:.1f}" width="24" height="12" fill="{NA_COLOR}"/>\n')
    parts.append(f'<text text-anchor="middle" x="{bar_end + 22:.1f}" y="{bar_top + 9:.1f}" {FONT} font-size="8.00" '
                 'fill="#000000">n/a</text>\n')
    parts.append(f'<text text-anchor="start" x="{bar_end + 40:.1f}" y="{bar_top + 9:.1f}" {FONT} font-size="8.00" '
                 f'fill="#444444">{caption.missing} without a value</text>\n')
    count = len(caption.ticks)
    for i, tick in enumerate(caption.ticks):
        x = LEFT + (CELLS * CELL_W) * (i / (count - 1) if count > 1 else 0)
        anchor = "start" if i == 0 else "end" if i == count - 1 else "middle"
        parts.append(f'<text text-anchor="{anchor}" x="{x:.1f}" y="{bar_top + 24:.1f}" {FONT} font-size="8.00" '
                     f'fill="#000000">{t(tick, 14)}</text>\n')
    parts.append("</g>\n")
    return "".join(parts)
