"""HTML and Markdown reports from the jinja2 templates in ``templates/``.

Templates receive plain view dicts built here. Autoescape is on for HTML; the SVG that Graphviz wrote from our
escaped DOT is the one value marked safe, after a check that it carries no script.
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Any

from renderer.core import escape
from renderer.core.errors import RenderError
from renderer.core.numbers import format_number
from renderer.core.records import metric_value
from renderer.data.resources import folder
from renderer.picture.scene import Scene

if TYPE_CHECKING:
    from renderer.picture.pages import Book

TOP_ROWS = 50


def _template_source(name: str) -> str:
    return folder("templates").joinpath(name).read_text(encoding="utf-8")


@cache
def _environment():  # type: ignore[no-untyped-def]
    import jinja2

    return jinja2.Environment(
        loader=jinja2.FunctionLoader(_template_source),
        autoescape=jinja2.select_autoescape(enabled_extensions=("html", "html.j2"), default=False),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def environment():  # type: ignore[no-untyped-def]
    """The jinja2 environment of the templates in ``templates/`` (autoescaped for ``*.html.j2``)."""
    return _environment()


def _view(scene: Scene, limit: int = TOP_ROWS) -> dict[str, Any]:
    model, annotations = scene.model, scene.annotations
    heat = scene.heatmap
    metric = heat.metric if heat else None
    rows = []
    for node in model.nodes():
        if scene.folding.is_hidden(node):
            continue
        entry = annotations.ops.get(node.key)
        values = entry.values if entry else {}
        number = heat.values.get(node.key) if heat else None
        rows.append({
            "id": f"{node.graph.index}:{node.index}",
            "element_id": node.element_id,
            "type": escape.clean(node.op_type, 60),
            "name": escape.clean(node.display_name, 120),
            "fill": heat.color(node.key) if heat else "",
            "metric": format_number(number) if number is not None else ("n/a" if heat else ""),
            "sort": number if number is not None else float("-inf"),
            "values": [(escape.clean(k, 60), escape.clean(v if isinstance(v, str) else format_number(m)
                                                             if (m := metric_value(v)) is not None else v, 120))
                       for k, v in values.items()][:6],
        })
    if heat:
        rows.sort(key=lambda r: (-r["sort"], r["id"]))
    graph_values = dict(annotations.graph.values)
    title = scene.options.title or graph_values.pop("title", None) or model.path.replace("\\", "/").rsplit("/", 1)[-1]
    return {
        "title": escape.clean(title, 200),
        "model": {"format": model.format, "version": escape.clean(model.version, 200),
                  "producer": escape.clean(model.producer, 200),
                  "path": escape.clean(model.path.replace("\\", "/").rsplit("/", 1)[-1], 200)},
        "totals": list(scene.totals.items()),
        "graph_meta": [(escape.clean(k, 80), escape.clean(v, 300)) for k, v in graph_values.items()],
        "metric": metric,
        "metric_unit": heat.info.unit if heat else "",
        "rows": rows[:limit],
        "row_count": len(rows),
        "coverage": [escape.clean(c.line(), 1000) for c in annotations.coverage
                     if c.total_ops or c.matched_tensors or c.unmatched],
    }


def html(scene: Scene, svg: str) -> str:
    """A standalone HTML page: header, the SVG inline (pan, zoom, search with the script), the operator table."""
    tips: dict[str, str] = {}
    return _explorable(scene, None, [{"stem": "drawing", "heading": "", "svg": _inline_svg(svg, _boxes(scene), tips)}],
                       tips)


def book_html(scene: Scene, book: Book, svgs: list[str]) -> str:
    """One standalone HTML page holding every page of a book (the overview first), linked by anchors; with the
    script, one page is shown at a time and search switches to the page drawing the operator."""
    pages, boxes, tips = [], _boxes(scene), {}
    for page, svg in zip(book.pages, svgs):
        heading = "overview" if page.index == 0 else f"page {page.index}: {page.title}"
        pages.append({"stem": page.stem, "heading": escape.clean(heading, 200), "svg": _inline_svg(svg, boxes, tips)})
    return _explorable(scene, book, pages, tips)


def _inline_svg(svg: str, boxes: set[str], tips: dict[str, str]):  # type: ignore[no-untyped-def]
    """The page's SVG as the text of its ``<noscript>``: markup when scripts are off, one text node for the
    script to build the page from when it is shown; without what the report holds elsewhere (``page_svg``), the
    boxes' tooltips added to ``tips``. Written from the parsed SVG, every ``<`` in it opens a tag, so nothing in
    it can end the ``<noscript>``."""
    import markupsafe

    from renderer.reports.page_svg import compact

    text, taken = compact(svg, boxes)
    for box, tip in taken.items():
        tips.setdefault(box, tip)
    if "</noscript" in text.lower():
        raise RenderError("unexpected SVG from Graphviz: it holds '</noscript'")
    return markupsafe.Markup(text)


def _boxes(scene: Scene) -> set[str]:
    """The element ids of the operator boxes, whose values and signature the report's data holds."""
    return {node.element_id for node in scene.model.nodes()}


def _explorable(scene: Scene, book: Book | None, pages: list[dict[str, Any]], tips: dict[str, str]) -> str:
    """The HTML report around ``pages``: the view of ``_view``, the explorer's data (with what the boxes'
    ``tips`` add) and its script."""
    import markupsafe

    from renderer.reports import explore

    view = _view(scene)
    data = explore.data(scene, book, tips)
    ops = data["ops"]
    order = list(range(len(ops)))
    if scene.heatmap:
        order.sort(key=lambda k: (-(ops[k]["num"] if ops[k]["num"] is not None else float("-inf")), ops[k]["id"]))
    rows = []
    for k in order:
        op = ops[k]
        # why a value is n/a is said once, in the side panel: in each row's preview it read the same long text
        preview = "; ".join(f"{key}: {'n/a' if shown.startswith('n/a (') else shown}"
                            for key, shown, _ in op["values"][:6])
        rows.append({**op, "k": k, "preview": escape.clean(preview, 400)})
    hot = [{**ops[k], "k": k} for k in data["hot"]]
    script = explore.script_source()
    if "</script" in script.lower() or "<!--" in script:
        raise RenderError("templates/report.js must not hold '</script' or '<!--'")
    return _environment().get_template("report.html.j2").render(
        **{**view, "rows": rows}, pages=pages, hot=hot, hot_lowest=data["better"] == "higher",
        csp=explore.policy(script),
        data_json=markupsafe.Markup(explore.script_json(explore.packed(data))), script=markupsafe.Markup(script))


def markdown(scene: Scene, pictures: list[str] | None = None) -> str:
    """The pull-request summary (``renderer.reports.summary``): model, totals, the top operators by the colour metric,
    annotation coverage, and links to ``pictures``, the pictures of the same run relative to the summary
    (``OutputPlan.pictures_for``)."""
    from renderer.reports import summary

    pictures = pictures or []
    return _environment().get_template("report.md.j2").render(**summary.view(scene, pictures))
