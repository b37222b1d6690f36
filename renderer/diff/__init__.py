"""``annograph diff``: how an operator metric changed between two runs of one model, or between two models of
one graph, drawn with the ordinary render path and summed up for a pull request.

``matching`` pairs two models' operators, ``change`` holds the per-operator change, the ranking and the
``--fail-above`` gate, ``build`` reads each side's values, ``annotate`` turns a diff into annotations and
render options, ``summary`` writes the Markdown summary.
"""

from __future__ import annotations

from renderer.diff.annotate import annotations, change_key, render_options
from renderer.diff.build import one_model, side_values, two_models
from renderer.diff.change import ONLY_AFTER, ONLY_BEFORE, Diff, Gate, OpChange, Threshold, parse_share
from renderer.diff.matching import Matching, match
from renderer.diff.summary import GateView, markdown

__all__ = [
    "ONLY_AFTER", "ONLY_BEFORE", "Diff", "Gate", "GateView", "Matching", "OpChange", "Threshold", "annotations",
    "change_key", "markdown", "match", "one_model", "parse_share", "render_options", "side_values", "two_models",
]
