"""The options of a render, shared by the CLI and the Python API: the picture's look (``PictureOptions``) and, with
the run's settings, ``RenderOptions``; ``from_values`` is the one builder of them from option values."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import MISSING, dataclass, field, fields
from typing import Any

from renderer.core.errors import UsageError

SUMMARY_TOP_K = 10
SUMMARY_MAX_TOP_K = 50  # rows of the summary's top table: it is meant for a pull-request comment


@dataclass(slots=True)
class PictureOptions:
    """How the picture looks: what is drawn, how it is coloured and labelled, how a big model is paged.

    Attributes:
        color_by: metric filling operator boxes (a heatmap); ``"none"`` for plain boxes; None for the default
            every render applies (``rendering.default_colour``, decided in ``rendering.prepare``: the
            annotations' metric, else built-in MACs or weight bytes).
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
        collapse: ``auto`` (one picture for small models, an overview with linked pages for big ones), ``none``
            (always one picture) or a group depth (an overview whose groups nest at most that deep).
        aggregate: how a group box combines its members' colour metric (``sum``, ``max``, ``min``, ``mean``);
            by default the metric's own rule (costs add up, errors take the worst).
        focus: operator ids to draw with their neighbourhood (``radius`` hops) instead of the whole model.
        top: draw the ``top`` hottest operators by the colour metric, each with its neighbourhood.
        focus_together: one page holding every neighbourhood, instead of a page each and an index page.
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
    collapse: str | int = "auto"
    aggregate: str | None = None
    focus: list[str] = field(default_factory=list)
    radius: int = 2
    top: int | None = None
    focus_together: bool = False


@dataclass(slots=True)
class RenderOptions(PictureOptions):
    """Options for ``renderer.render``: the picture's look (``PictureOptions``) and the run's settings.

    Attributes:
        timeout: seconds Graphviz may run before it is stopped.
        dims: values pinned for symbolic dimensions.
        keep_free_dims: leave the free input dims ``dims`` does not pin free, instead of the values
            ``loaders.free_dims`` assumes for them (costs that need them are then n/a).
        inputs: an ``.npz`` file of values for the model's inputs, used when the model is loaded from a path
            (``renderer.show``, the Sphinx directive): shapes that depend on input values come from one
            onnxruntime run on them (``loaders.RealValues``).
        etrecord: an ExecuTorch program's ETRecord (``generate_etrecord``), used when the model is loaded from a path
            (``renderer.show``, the Sphinx directive) instead of the one beside the ``.pte`` (``--etrecord``): the
            operators' names and module groups come from its edge program.
        max_tensor_elements: weight statistics are skipped (and said so) for larger tensors.
        summary_top_k: rows of the top-operators table in the Markdown summary (0 to ``SUMMARY_MAX_TOP_K``).
        summary_link_base: URL the summary's links to the pictures start with (else paths relative to it).
        layout_cache: the folder layouts are kept in between runs (``picture.layout_cache``; it changes no
            byte of the picture, only how soon it is drawn): None for the default (``ANNOGRAPH_CACHE_DIR``,
            else the user cache folder), ``""`` for none.
    """

    timeout: float | None = 600.0
    dims: dict[str, int] = field(default_factory=dict)
    keep_free_dims: bool = False
    inputs: str | None = None
    etrecord: str | None = None
    max_tensor_elements: int = 50_000_000
    summary_top_k: int = SUMMARY_TOP_K
    summary_link_base: str | None = None
    layout_cache: str | None = None


COMMAND_LINE_NAMES = {"dim": "dims", "together": "focus_together", "summary_rows": "summary_top_k"}
"""Command-line option names (argparse dests) that are not the RenderOptions field they set."""


def default(name: str) -> Any:
    """RenderOptions' own default for field ``name``: the command-line options take their defaults from here."""
    found = next(f for f in fields(RenderOptions) if f.name == name)
    return found.default_factory() if found.default is MISSING else found.default  # type: ignore[misc]


def from_values(values: Mapping[str, Any]) -> RenderOptions:
    """RenderOptions from option values by name, as the command line parses them (``vars(args)``): the one
    builder ``render``, ``batch`` and ``diff`` use. A value that is None or absent takes RenderOptions' default;
    names that are no render option (``models``, ``output``…) are ignored. Besides the field names it reads the
    command line's: ``no_edge_labels``, ``no_layout_cache``, ``dim`` (``NAME=VALUE`` texts), ``together``,
    ``summary_rows``; and ``collapse`` and ``show`` as written there (``"2"``, ``"none"``; ``"latency_ms,macs"``,
    ``"all"``).

    Raises:
        UsageError: a bad ``collapse`` or ``dim``.
    """
    names = {f.name for f in fields(RenderOptions)}
    given: dict[str, Any] = {}
    for name, value in values.items():
        field_name = COMMAND_LINE_NAMES.get(name, name)
        if field_name in names and value is not None:
            given[field_name] = value
    if isinstance(given.get("etrecord"), (list, tuple)):  # the command's --etrecord: one per program (etrecords_for)
        del given["etrecord"]
    if values.get("no_layout_cache"):
        given["layout_cache"] = ""
    if values.get("no_edge_labels") is not None:
        given["edge_labels"] = not values["no_edge_labels"]
    if isinstance(given.get("dims"), (list, tuple)):
        from renderer.core.pinning import parse

        given["dims"] = parse(given["dims"])
    if isinstance(given.get("collapse"), str):
        given["collapse"] = collapse_depth(given["collapse"])
    if isinstance(given.get("show"), str):
        given["show"] = show_keys(given["show"])
    if isinstance(given.get("focus"), (list, tuple)):
        given["focus"] = list(given["focus"])
    return RenderOptions(**given)


def collapse_depth(text: str) -> str | int:
    """``--collapse`` value: ``auto``, ``none`` or a depth ≥ 1."""
    value = text.strip().lower()
    if value in ("auto", "none"):
        return value
    if value.isascii() and value.isdigit() and int(value) >= 1:
        return int(value)
    raise UsageError(f"--collapse {text!r}: use auto, none or a depth (1, 2, …)")


def show_keys(text: str) -> list[str]:
    """``--show`` text as ``RenderOptions.show``: ``none`` → [], otherwise the comma-separated keys."""
    if text.strip().lower() == "none":
        return []
    return [part.strip() for part in text.split(",") if part.strip()]
