"""One Graphviz layout per model for a whole batch: every drawn box gets a value row of fixed width and a
placeholder fill, so any picture of the batch is the same SVG with other fills and values."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING

from renderer.batch import caption, svg_template
from renderer.colour.heatmap import NO_COLOR
from renderer.core.ir import Model
from renderer.core.options import RenderOptions
from renderer.core.records import Annotations, Entry
from renderer.picture.folding import fold
from renderer.picture.scene import Scene

if TYPE_CHECKING:
    from renderer.picture.pages import Book

SENTINEL_FILL = "#010203"
"""Placeholder box fill: a colour no colour map produces, dark so the text on it is written with a fill."""
KEY_CHAR = "W"
VALUE_CHAR = "M"
"""The widest capital letters: a placeholder of N of them is at least as wide as any N-character metric name
(or number: digits, signs, 'e', 'k', 'M', 'inf', 'n/a'), so the real text always fits the laid-out box."""
MAX_KEY_CHARS = 28


@dataclass(slots=True)
class Layout:
    """A laid-out model ready to be recoloured.

    Attributes:
        template: the SVG cut at fills and values.
        width / height: the canvas in points, caption included.
        key_chars / value_chars: room in the value row for the metric name and the value.
    """

    template: svg_template.Template
    width: float
    height: float
    key_chars: int
    value_chars: int


@dataclass(slots=True)
class BookLayout:
    """A model drawn as an overview and pages (``renderer.picture.pages``), each page laid out once.

    Attributes:
        pages: the overview first, then each page (its links to the others name the overview ``OVERVIEW``,
            a template slot each picture fills with its own file name).
        files: the pages' file names in the pages folder, overview left out.
        book: the pages planned.
    """

    pages: list[Layout]
    files: list[str]
    book: Book
    scene: Scene
    """The layout's scene: what each picture's group boxes are coloured from, with its own heatmap."""


OVERVIEW = "annograph-batch-overview.svg"
"""The overview's file name while the pages are laid out: links between pages hold it, and each picture puts
its own name there (a link's text does not change the layout)."""


def lay_out(model: Model, options: RenderOptions, key_chars: int, value_chars: int) -> Layout | BookLayout:
    """Render ``model`` once with placeholders sized for the longest metric name and value of the batch, as
    ``render`` draws it (``rendering.compose``): one picture, or an overview and pages, each page laid out
    once: a big model, or one whose flat picture comes out bigger than a page."""
    from renderer.compose.output_plan import Output, OutputPlan
    from renderer.compose.rendering import compose
    from renderer.files.page_names import page_file

    key_chars = max(1, min(key_chars, MAX_KEY_CHARS))
    value_chars = max(3, value_chars)
    key_text, value_text = KEY_CHAR * key_chars, VALUE_CHAR * value_chars
    folding = fold(model, options.show_constants)
    notes = Annotations()
    for node in model.nodes():
        if folding.is_drawn(node):
            notes.ops[node.key] = Entry({key_text: value_text}, {"fillcolor": SENTINEL_FILL})
    layout_options = dataclasses.replace(options, color_by=NO_COLOR, edge_by=None, show=[key_text], focus=[], top=None)
    plan = OutputPlan((Output(OVERVIEW, "svg"),))  # the overview's name in the links: a slot of the template
    drawing = compose(model, notes, layout_options, plan)
    svgs = [drawing.produced[0][1]] + [svg for _, folder in drawing.produced[1:] for svg in folder.values()]
    pages = [_cut(svg, key_text, value_text, key_chars, value_chars) for svg in svgs]  # type: ignore[arg-type]
    if drawing.book is None:
        return pages[0]
    return BookLayout(pages, [page_file(page.index, "svg") for page in drawing.book.pages[1:]], drawing.book,
                      drawing.scene)


def _cut(svg: bytes, key_text: str, value_text: str, key_chars: int, value_chars: int) -> Layout:
    svg, width = svg_template.add_caption_space(svg, caption.HEIGHT, caption.MIN_WIDTH)
    height = svg_template.canvas_height(svg)
    template = svg_template.build(svg, SENTINEL_FILL, key_text, value_text, OVERVIEW.encode())
    return Layout(template, width, height, key_chars, value_chars)
