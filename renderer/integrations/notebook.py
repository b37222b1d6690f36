"""Pictures that display themselves in Jupyter: ``renderer.show(model, annotations, color_by=...)``.

    >>> import renderer
    >>> renderer.show("samples/onnx/tiny_cnn.onnx", "stats.yaml", color_by="latency_us")   # doctest: +SKIP

A notebook shows one form, ``text/html`` (a notebook stores every form it is given, so the picture is stored
once): the SVG inline (so the tooltips of the boxes work), scaled down to the output's width, in a box that
scrolls past 80 % of the window's height, with the coverage lines under it. The SVG is Graphviz's output of our
escaped DOT and passes ``inline_svg.parse`` (no script, handler or foreign object) before it is shown. Its ids
carry a prefix (``inline_svg``) made from a hash of the SVG and how many times this process has shown that SVG
before: two outputs in one notebook never share an id, and running the notebook again in a new kernel gives the
same bytes. ``Picture.svg`` is the SVG as ``annograph render`` writes it.

``renderer.render`` keeps returning plain bytes (of any format, PDF and PNG too); ``show`` is the object that
displays itself.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from renderer.core import escape
from renderer.core.options import RenderOptions
from renderer.integrations.loading import Loaded, load, render_options

if TYPE_CHECKING:
    from renderer.compose.rendering import Drawing

_SHOWN: dict[str, int] = {}
"""How many times each SVG (by hash) has been displayed in this process."""


class Picture:
    """A model drawn once as SVG, with what it was drawn from (for ``save`` in other formats).

    Attributes:
        svg: the SVG text; for a big model drawn as a book of pages, the overview.
        pages: how many pages the drawing has (1 for one picture; the overview counts as one).
        notes: what the command line would have said (sidecars used, coverage of each annotation file).
    """

    def __init__(self, loaded: Loaded, drawing: Drawing) -> None:
        self._loaded = loaded
        self.svg = drawing.produced[0][1].decode("utf-8")  # type: ignore[union-attr]
        self.pages = drawing.pages
        choice = drawing.scene.colour_choice
        self.notes = list(loaded.notes) + ([choice.said] if choice and choice.said and not choice.routine else [])
        self._options = drawing.scene.options

    @property
    def model(self) -> Any:
        return self._loaded.model

    @property
    def options(self) -> RenderOptions:
        """The options drawn with, the colour metric decided (``rendering.prepare``)."""
        return self._options

    def __repr__(self) -> str:
        colour = f", coloured by {self.options.color_by}" if self.options.color_by not in (None, "none") else ""
        book = f", overview of {self.pages} pages" if self.pages > 1 else ""
        return f"<annograph picture of {Path(self.model.path).name}{colour}{book}>"

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        # one form only: a notebook stores every form of an output, and both would hold the same SVG
        """IPython asks for this once per display: both forms inline the picture under one prefix."""
        return {"text/html": self._html(self._inlined())}

    def _repr_html_(self) -> str:
        return self._html(self._inlined())

    def _inlined(self) -> str:
        """The SVG with its ids under a prefix no earlier display in this process has used."""
        from renderer.reports.inline_svg import inline, prefix_for

        digest = hashlib.sha256(self.svg.encode("utf-8")).hexdigest()
        count = _SHOWN[digest] = _SHOWN.get(digest, -1) + 1
        return inline(self.svg, prefix_for(digest, str(count)))

    def _html(self, body: str) -> str:
        from renderer.reports.inline_svg import fit_width

        lines = list(self.notes)
        if self.pages > 1:
            lines.append(f"the overview of {self.pages} pages: save('model.html') writes every page into one file, "
                         "collapse='none' draws one picture")
        notes = "".join(f"<div>{escape.svg_text(line, 2000)}</div>" for line in lines)
        small = f'<div style="font-size:smaller;color:#555">{notes}</div>' if notes else ""
        return (f'<div class="annograph"><div style="overflow:auto;max-height:80vh">{fit_width(body)}</div>'
                f'{small}</div>')

    def save(self, path: str | Path, fmt: str | None = None) -> None:
        """Write the picture to ``path`` (format from its extension, as ``annograph render -o``), atomically.

        SVG is written as shown; any other format (pdf, png, dot, html, md) is rendered from the same inputs.
        """
        from renderer.annotations.registry import input_paths
        from renderer.compose.output_plan import OutputPlan
        from renderer.compose.rendering import render

        loaded = self._loaded
        plan = OutputPlan.build([path], fmt, input_paths(loaded.model, loaded.annotations))
        if plan.formats == ["svg"] and self.pages == 1:
            plan.write([(path, self.svg.encode("utf-8"))])
            return
        render(loaded.model, loaded.annotations, self.options, output=plan)


def show(model: Any, annotations: Any = None, color_by: str | None = None, *,
         options: RenderOptions | None = None, sidecar: bool = True, **fields: Any) -> Picture:
    """Draw ``model`` with ``annotations`` and return a Picture, which a notebook displays.

    Args:
        model: a path to a model file (any format ``annograph render`` reads), or a model from
            ``renderer.load_model``.
        annotations: None, one annotation file, a list of them, or ``renderer.load_annotations``'s result.
            The model's sidecar files are read too, as the command does (``sidecar=False`` to skip).
        color_by: the metric filling the boxes; by default the annotations' only numeric operator metric, or
            their tool's main one (``renderer.colour.heatmap.default_metric``).
        options: a RenderOptions to start from.
        **fields: any RenderOptions field (``cmap="viridis"``, ``collapse="none"``, ``show="all"``...); for a
            model given as a path, also the files its load reads: ``inputs="values.npz"``, and for an ExecuTorch
            program ``etrecord="program.etrecord"`` (names and module groups, instead of the ETRecord beside it).

    Raises:
        AnnographError: a file that cannot be read, an unknown option, a failed layout; one line, the file named.
    """
    if color_by is not None:
        fields["color_by"] = color_by
    loaded = load(model, annotations, render_options(options, **fields), sidecar=sidecar)
    return Picture(loaded, draw_svg(loaded))


def draw_svg(loaded: Loaded) -> Drawing:
    """The drawing of one SVG (of the overview, for a book of pages), checked for active content: composed as
    ``annograph render -o model.svg`` composes it (``rendering.compose``)."""
    from renderer.compose.output_plan import bytes_plan
    from renderer.compose.rendering import compose
    from renderer.reports.inline_svg import parse

    drawing = compose(loaded.model, loaded.annotations, loaded.options, bytes_plan("svg"))
    parse(drawing.produced[0][1].decode("utf-8"))  # type: ignore[union-attr]
    return drawing


__all__ = ["Picture", "draw_svg", "show"]
