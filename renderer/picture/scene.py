"""What one emission draws from: the model, its annotations, the options, the fitted colour maps, the folding, and
what the pages of one book share once computed."""

from __future__ import annotations

from dataclasses import dataclass, field

from renderer.colour.heatmap import DefaultMetric, Heatmap
from renderer.core.ir import Model, Node
from renderer.core.options import RenderOptions
from renderer.core.records import Annotations
from renderer.picture.folding import Folding
from renderer.picture.grouping.group import Group


@dataclass(slots=True)
class Scene:
    """Inputs of one emission.

    Attributes:
        options: the picture's look and the run's settings (Graphviz's timeout, the summary's rows).
        heatmap / edge_map: the colour metric of the boxes and of the edges, fitted to their colour maps.
        totals: model-wide figures for the legend (``metrics.builtin.totals``).
        missing: drawn operators without a value of the colour metric, computed on first use (every page of a
            book asks).
        share_total: the book's root group and the model total of a summed colour metric, computed on first use
            (every page's shares are of it).
        colour_choice: the default colour metric ``rendering.prepare`` chose and why (None: the caller named it).
        op_boxes: each operator box's label and tooltip as ``dot.Emitter`` made them (by its key and whether it is
            highlighted), made once for every emission that draws it: the flat picture and then its pages, a
            page again in columns.
        legend_rows: legend rows every page of a book repeats (the assumed dims' and the MACs formula's, the colour
            bars of ``heatmap`` and ``edge_map``), by what they show, made once.
        edge_styles: each tensor's edge attributes (class, tooltip, shape label, the edge colour map's width and
            colour, its annotation's style) as ``dot.Emitter`` made them, by the tensor's key, made once for every
            emission that draws it (read only); not carried by ``dataclasses.replace`` (a scene of other options or
            colours makes its own).
    """

    model: Model
    annotations: Annotations
    options: RenderOptions
    heatmap: Heatmap | None = None
    edge_map: Heatmap | None = None
    totals: dict[str, str] = field(default_factory=dict)
    folding: Folding = field(default_factory=lambda: Folding(frozenset()))
    missing: list[Node] | None = None
    share_total: tuple[Group, float] | None = None
    colour_choice: DefaultMetric | None = None
    op_boxes: dict[tuple[tuple[str, int, int], bool], tuple[str, str]] = field(default_factory=dict)
    legend_rows: dict[str, str] = field(default_factory=dict)
    edge_styles: dict[tuple[str, int, int], dict[str, object]] = field(default_factory=dict, init=False)
