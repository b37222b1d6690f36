"""Sphinx extension: ``extensions = ["renderer.integrations.sphinx"]`` adds the ``annograph`` directive.

.. code-block:: rst

    .. annograph:: models/tiny_cnn.onnx
       :annotations: stats/latency.yaml stats/profile.json
       :color-by: latency_us
       :cmap: viridis
       :collapse: auto
       :title: CPU kernel time
       :show: latency_us,macs
       :dims: batch=1 seq=128
       :inputs: sample_inputs.npz
       :etrecord: program.etrecord
       :alt: tiny_cnn coloured by latency
       :width: 100%
       :class: wide

Paths are relative to the document (``/x`` to the source folder), as for ``.. image::``. The picture is drawn
while the document is read, through the same functions as ``annograph render`` (the model's sidecar files and
its own annotations are merged too; ``:no-sidecar:`` skips the sidecars), and kept in the build's doctree folder
under a name made from a hash of the model's and annotation files' bytes, the options and annograph's version:
unchanged inputs are never drawn twice, and Sphinx reads the document again only when one of those files (noted
as its dependencies) changes.

HTML: the SVG is written into the build's ``_images/`` as ``annograph-HASH.svg`` and inlined into the page, so the
boxes' tooltips work and nothing is fetched; it is scaled down to the text column (``max-width:100%;
height:auto``, or ``:width:``) and a link under it opens the file at full size. The SVG is Graphviz's drawing of
our escaped DOT, and is checked for active content (script, handlers, foreign objects, javascript: links) before it
is inlined. Its ids are
prefixed (``inline_svg``) with a hash of the document's name and the picture's place on the page, so two pictures
on one page share no id, and a build gives the same page every time. A big model drawn as an overview with
linked pages (``:collapse: auto`` above the page limit, or a depth) has its pages beside it in ``_images/``, and
the inlined overview's links point there; ``:collapse: none`` draws it as one picture instead.
LaTeX: the picture as a PDF (for a big model, the overview first and a page each: the first page is shown).
Any other builder gets the ``:alt:`` text in brackets.

A file that cannot be read, a bad option or a failed layout is a Sphinx warning naming the document and the
directive's line; annotation ids that match nothing are warnings of type ``annograph.coverage``
(``suppress_warnings = ["annograph.coverage"]``). Nothing heavier than Sphinx is imported until a directive runs.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from docutils import nodes
from docutils.parsers.rst import directives
from sphinx.transforms.post_transforms import SphinxPostTransform
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

from renderer.core.errors import AnnographError
from renderer.version import __version__

if TYPE_CHECKING:
    from sphinx.application import Sphinx

logger = logging.getLogger(__name__)

CACHE_FOLDER = "annograph"
"""Folder inside the build's doctree folder holding the drawn pictures, by hash."""

FILES = ("inputs", "etrecord")
"""The options naming a file (relative to the document), hashed by their bytes in a picture's key."""
_SVG_SIZE = re.compile(r'(<svg\b[^>]*?)\swidth="[^"]*"\s+height="[^"]*"')


class annograph(nodes.General, nodes.Element):  # noqa: N801  (docutils names node classes in lower case)
    """A drawn picture: ``svg`` (the cached file), ``pages``, ``alt``, ``width``, ``classes``, and what it was
    drawn from (``model``, ``annotations``, ``fields``, ``sidecar``) for formats drawn at write time."""


def _split(text: str) -> list[str]:
    return [part for part in re.split(r"[\s,]+", text.strip()) if part]


class AnnographDirective(SphinxDirective):
    """``.. annograph:: MODEL`` (see the module docstring)."""

    required_arguments = 1
    final_argument_whitespace = True
    option_spec: ClassVar[dict[str, Any]] = {
        "annotations": directives.unchanged_required,
        "color-by": directives.unchanged_required,
        "cmap": directives.unchanged_required,
        "collapse": directives.unchanged_required,
        "title": directives.unchanged,
        "show": directives.unchanged,
        "dims": directives.unchanged_required,
        "inputs": directives.unchanged_required,
        "etrecord": directives.unchanged_required,
        "no-sidecar": directives.flag,
        "alt": directives.unchanged,
        "width": directives.length_or_percentage_or_unitless,
        "class": directives.class_option,
    }

    def run(self) -> list[nodes.Node]:
        try:
            return [self._picture()]
        except (AnnographError, OSError) as e:
            logger.warning("annograph: %s", _one_line(e), location=(self.env.docname, self.lineno))
            return []

    def _picture(self) -> annograph:
        from renderer.integrations import loading

        model = self._path(self.arguments[0])
        annotations = [self._path(p) for p in _split(self.options.get("annotations", ""))]
        sidecar = "no-sidecar" not in self.options
        fields = self._fields()
        loading.render_options(**fields)  # a bad option is an error before any file is read
        self._drop_idle_dims(model, fields)
        inputs = loading.input_files(model, annotations, sidecar, fields.get("etrecord")) + (
            [Path(fields["inputs"])] if "inputs" in fields else [])
        for path in inputs:
            self.env.note_dependency(str(path))
        key = picture_key(inputs, {k: v for k, v in fields.items() if k not in FILES}, sidecar)  # hashed as files
        cache = Path(self.env.doctreedir) / CACHE_FOLDER
        svg = cache / f"annograph-{key}.svg"
        notes = svg.with_suffix(".notes.json")
        if not (svg.is_file() and notes.is_file()):
            draw(model, annotations, fields, sidecar, svg)
        for line in json.loads(notes.read_text(encoding="utf-8"))["unmatched"]:
            logger.warning("annograph: %s", line, location=(self.env.docname, self.lineno),
                           type="annograph", subtype="coverage")
        from renderer.files.page_names import pages_path

        node = annograph()
        node.update_all_atts({
            "svg": str(svg), "pages": pages_path(svg).is_dir(),
            "alt": self.options.get("alt") or f"annotated graph of {Path(self.arguments[0]).name}",
            "width": self.options.get("width", ""), "model": model, "annotations": annotations, "fields": fields,
            "sidecar": sidecar,
        })
        node["classes"] += self.options.get("class", [])
        self.set_source_info(node)
        return node

    def _drop_idle_dims(self, model: str, fields: dict[str, Any]) -> None:
        """``:dims:`` on a model whose input shapes are all fixed pins nothing and loses nothing: a warning at
        the directive's line (the command line warns on stderr), and the picture is drawn without them."""
        from renderer.core.pinning import idle
        from renderer.loaders.registry import detect

        if fields.get("dims") and not detect(Path(model)).pinnable(Path(model)):
            for name, value in fields.pop("dims").items():
                logger.warning("annograph: %s", idle([model], name, value), location=(self.env.docname, self.lineno))

    def _path(self, given: str) -> str:
        return self.env.relfn2path(given, self.env.docname)[1]

    def _fields(self) -> dict[str, Any]:
        """RenderOptions fields from the directive's options, as text where the command line takes text."""
        from renderer.core.pinning import parse as parse_dims

        fields: dict[str, Any] = {}
        for option, name in (("color-by", "color_by"), ("cmap", "cmap"), ("collapse", "collapse"),
                             ("title", "title"), ("show", "show")):
            if option in self.options:
                fields[name] = self.options[option] or ""
        if "dims" in self.options:
            fields["dims"] = parse_dims(_split(self.options["dims"]))
        for name in FILES:
            if name in self.options:
                fields[name] = self._path(self.options[name])
        return fields


def picture_key(inputs: list[Path], fields: dict[str, Any], sidecar: bool) -> str:
    """A hash of everything a picture is drawn from: the files' names and bytes, the options, annograph's version."""
    digest = hashlib.sha256(f"annograph {__version__}\n".encode())
    digest.update(json.dumps([fields, sidecar], sort_keys=True, default=str).encode())
    for path in inputs:
        with path.open("rb") as file:
            digest.update(f"\n{path.name}\n{path.stat().st_size}\n".encode())
            while chunk := file.read(1 << 20):  # a model can be gigabytes: not all in memory at once
                digest.update(chunk)
    return digest.hexdigest()[:20]


def draw(model: str, annotations: list[str], fields: dict[str, Any], sidecar: bool, output: Path) -> None:
    """Draw the picture into ``output`` (an overview's pages beside it), with the coverage notes next to it.

    Drawn in a temporary folder and checked for active content (the SVG and every page), then moved in, the
    SVG last: its presence says the picture is complete.
    """
    import shutil
    import tempfile

    from renderer.compose.rendering import render
    from renderer.files.page_names import pages_path
    from renderer.integrations import loading
    from renderer.reports.inline_svg import parse

    loaded = loading.load(model, annotations, loading.render_options(**fields), sidecar=sidecar)
    output.parent.mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix=".drawing-", dir=output.parent))
    try:
        drawn = folder / output.name
        render(loaded.model, loaded.annotations, loaded.options, output=str(drawn))
        pages = pages_path(drawn)
        for svg in [drawn, *sorted(pages.glob("*.svg"))]:
            parse(svg.read_text(encoding="utf-8"))
        if pages.is_dir() and not output.with_name(pages.name).exists():
            pages.replace(output.with_name(pages.name))
        notes = drawn.with_suffix(".notes.json")
        notes.write_text(json.dumps({"notes": loaded.notes, "unmatched": loaded.unmatched}, indent=1),
                         encoding="utf-8")
        notes.replace(output.with_suffix(".notes.json"))
        drawn.replace(output)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _one_line(error: BaseException) -> str:
    if isinstance(error, OSError) and error.filename and error.strerror:
        return f"{error.filename}: {error.strerror}"
    return " ".join(str(error).split())


# ---- writing ---------------------------------------------------------------------------------------------------


def _ship(source: Path, folder: Path) -> None:
    """Copy the picture (and its pages) into ``folder`` unless it is there already."""
    from renderer.files import atomic
    from renderer.files.page_names import pages_path

    target = folder / source.name
    if not target.is_file():
        folder.mkdir(parents=True, exist_ok=True)
        atomic.write_bytes(target, source.read_bytes())
    pages, copy = pages_path(source), pages_path(target)
    if pages.is_dir() and not copy.is_dir():
        atomic.write_all([(copy, {p.name: p.read_bytes() for p in pages.glob("*.svg")})])


def visit_html(self: Any, node: annograph) -> None:
    from renderer.core import escape
    from renderer.reports.inline_svg import fit_width, inline, prefix_for

    source = Path(node["svg"])
    # the n-th picture of the page: unique on the page, and the same prefix in every build
    index = next(k for k, found in enumerate(self.document.findall(annograph)) if found is node)
    try:
        _ship(source, Path(self.builder.outdir) / self.builder.imagedir)
        svg = inline(source.read_text(encoding="utf-8"), prefix_for(self.builder.current_docname, str(index)),
                     # the overview's links to its pages are relative to the SVG file, not to this page
                     base=f"{self.builder.imgpath}/" if node["pages"] else "")
    except (AnnographError, OSError) as e:
        logger.warning("annograph: %s", _one_line(e), location=node)
        raise nodes.SkipNode from None
    alt = escape.svg_text(node["alt"], 500)
    classes = " ".join(["annograph", *node["classes"]])
    width = node["width"] + ("px" if node["width"].replace(".", "").isdigit() else "")  # unitless: pixels
    if width:  # the viewBox keeps the proportions; the wrapper sets the width
        svg = _SVG_SIZE.sub(r'\1 width="100%"', svg, count=1)
    else:  # as wide as the text column at most, scaled down whole; the link opens it at full size
        svg = fit_width(svg)
    url = f"{self.builder.imgpath}/{source.name}"
    style = f"width:{width};overflow:auto" if width else "overflow:auto"
    link = ("open the overview at full size (its boxes link to the pages)" if node["pages"]
            else "open the picture at full size")
    self.body.append(f'<div class="{escape.svg_text(classes)}" role="img" aria-label="{alt}" style="{style}">{svg}'
                     f'</div>\n<p class="annograph-link"><a href="{url}">{link}</a></p>\n')
    raise nodes.SkipNode


def visit_latex(self: Any, node: annograph) -> None:
    from renderer.compose.rendering import render
    from renderer.integrations import loading

    source = Path(node["svg"])
    pdf = source.with_suffix(".pdf")
    try:
        if not pdf.is_file():
            loaded = loading.load(node["model"], node["annotations"], loading.render_options(**node["fields"]),
                                  sidecar=node["sidecar"])
            render(loaded.model, loaded.annotations, loaded.options, output=str(pdf))
        target = Path(self.builder.outdir) / pdf.name
        if not target.is_file():
            from renderer.files import atomic

            atomic.write_bytes(target, pdf.read_bytes())
    except (AnnographError, OSError) as e:
        logger.warning("annograph: %s", _one_line(e), location=node)
        raise nodes.SkipNode from None
    self.body.append("\n\\begin{center}\\sphinxincludegraphics[width=\\linewidth,height=0.9\\textheight,"
                     f"keepaspectratio]{{{pdf.name}}}\\end{{center}}\n")
    raise nodes.SkipNode


class AltTextForOtherBuilders(SphinxPostTransform):
    """Builders that cannot show the picture (text, man, texinfo, …) get the alt text in brackets."""

    default_priority = 200

    def run(self, **kwargs: Any) -> None:
        builder = getattr(self.env, "_builder_cls", None) or self.app.builder  # Sphinx 9 / before
        if builder.format in ("html", "latex"):
            return
        for node in list(self.document.findall(annograph)):
            node.replace_self(nodes.paragraph("", f"[{node['alt']}]"))


CSS = """/* annograph: the inlined pictures' links are tooltips, not text links: no theme underline */
div.annograph svg a, div.annograph svg a:hover { text-decoration: none; border: none; }
div.annograph svg { max-width: 100%; height: auto; }
"""
CSS_FILE = "annograph.css"


def _add_css(app: Sphinx) -> None:
    if app.builder.format == "html":
        app.add_css_file(CSS_FILE)


def _write_css(app: Sphinx, exception: BaseException | None) -> None:
    if exception is None and app.builder.format == "html":
        from renderer.files import atomic

        static = Path(app.outdir) / "_static"
        static.mkdir(parents=True, exist_ok=True)
        atomic.write_text(static / CSS_FILE, CSS)


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_node(annograph, html=(visit_html, None), latex=(visit_latex, None))
    app.add_directive("annograph", AnnographDirective)
    app.add_post_transform(AltTextForOtherBuilders)
    app.connect("builder-inited", _add_css)
    app.connect("build-finished", _write_css)
    return {"version": __version__, "parallel_read_safe": True, "parallel_write_safe": True}


__all__ = ["AnnographDirective", "annograph", "draw", "picture_key", "setup"]
