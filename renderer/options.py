"""Everything that changes how a picture looks, in one typed object shared by the CLI and the Python API."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(slots=True)
class RenderOptions:
    """Options for ``renderer.render``.

    Attributes:
        color_by: metric filling operator boxes (a heatmap), or None for plain boxes.
        cmap: colour map name (ours in colormaps/ or matplotlib's); default ``heat`` (``diverging`` with center).
        norm: ``linear``, ``log`` or ``quantile``.
        vmin / vmax / center: colour map range and diverging centre; from the data when None.
        edge_by: tensor metric setting edge width and colour.
        edge_cmap: colour map for edges.
        show: annotation values listed in each box; None means the colour metric and a few values,
            ``["all"]`` every value, ``[]`` none.
        show_constants: draw constants and their producers as nodes instead of folding them into boxes.
        edge_labels: shape and dtype on edges.
        rankdir: ``TB`` (top to bottom) or ``LR``.
        title: picture title; default the graph annotation's title, else the model file name.
        max_attributes: operator attributes listed in a box (all are in the tooltip).
        timeout: seconds Graphviz may run before it is stopped.
        dims: values pinned for symbolic dimensions.
        max_tensor_elements: weight statistics are skipped (and said so) for larger tensors.
    """

    color_by: str | None = None
    cmap: str | None = None
    norm: str = "linear"
    vmin: float | None = None
    vmax: float | None = None
    center: float | None = None
    edge_by: str | None = None
    edge_cmap: str | None = None
    show: list[str] | None = None
    show_constants: bool = False
    edge_labels: bool = True
    rankdir: str = "TB"
    title: str | None = None
    max_attributes: int = 4
    timeout: float | None = 600.0
    dims: dict[str, int] = field(default_factory=dict)
    max_tensor_elements: int = 50_000_000
