"""A page's SVG as the HTML report carries it: Graphviz's drawing without what the report holds elsewhere or what
draws nothing.

What goes, on the parsed SVG (``inline_svg.parse``, which also refuses active content):

* an operator box's tooltip, once per page (a box's tooltip was four fifths of a big report's tooltips): it
  moves into the report's data once (``explore.data``: the lines its values and signature do not already say),
  whose side panel shows them on hover; the box's link wrapper goes with it when it links nowhere;
* Graphviz's ``<title>`` elements (its DOT node names: ``op_0_12``, ``cluster_g1``), and its comments;
* attributes at their SVG default: ``stroke="transparent"`` (no stroke), ``text-anchor="start"``, a text's
  black fill, and the font family the report's style sheet gives every text;
* the repeated first point closing a ``polygon`` (a polygon closes itself), the zeros of ``8.00``, and the line
  breaks between elements.

Nothing drawn changes: the same shapes at the same places, the same texts, links and other tooltips (groups,
tensors, stubs). Written again by ``inline_svg.serialise``, which escapes every text.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from typing import TYPE_CHECKING

from renderer.reports.inline_svg import SVG_NS, XLINK_NS, parse, serialise

if TYPE_CHECKING:
    from xml.etree.ElementTree import Element

_G, _A, _TITLE = f"{{{SVG_NS}}}g", f"{{{SVG_NS}}}a", f"{{{SVG_NS}}}title"
_XLINK_TITLE, _XLINK_HREF = f"{{{XLINK_NS}}}title", f"{{{XLINK_NS}}}href"
_DEFAULTS = (("stroke", "transparent"), ("text-anchor", "start"), ("font-family", "Helvetica,sans-Serif"))
_TEXT = f"{{{SVG_NS}}}text"
_ZEROS = re.compile(r"^(-?\d+)\.0+$")


def compact(svg: str, boxes: Collection[str]) -> tuple[str, dict[str, str]]:
    """``svg`` (one page Graphviz wrote) for the report: checked, and without the tooltips of the operator boxes
    whose element ids are ``boxes`` nor what draws nothing (module doc); and the tooltips taken out, by box id,
    for the report's data (``explore.data``: what its other fields do not already say goes there).

    >>> compact('<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink"><title>g</title>'
    ...         '<g id="op-0-0" class="node"><title>op_0_0</title><g id="a_op-0-0"><a xlink:title="Conv 0:0">'
    ...         '<polygon stroke="transparent" points="0,0 9,0 9,9 0,0"/><text font-size="8.00">Conv</text>'
    ...         '</a></g></g></svg>', {"op-0-0"})
    ('<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink"><g id="op-0-0" \
class="node"><polygon points="0,0 9,0 9,9" /><text font-size="8">Conv</text></g></svg>', {'op-0-0': 'Conv 0:0'})
    """
    root = parse(svg)
    _drop_titles(root)
    tips = {}
    for group in root.iter(_G):
        if (box := group.get("id")) in boxes and (tip := _drop_box_tooltip(group)) is not None:
            tips[box] = tip
    for element in root.iter():
        _plain_attributes(element)
    return serialise(root), tips


def _drop_titles(root: Element) -> None:
    for parent in [root, *root.iter(_G)]:
        for title in parent.findall(_TITLE):
            parent.remove(title)


def _drop_box_tooltip(box: Element) -> str | None:
    """The box's link loses its tooltip (returned); a link to nothing is unwrapped (``<g id="a_…"><a>`` around
    the box's shapes, as Graphviz writes a tooltip)."""
    tip = None
    for wrapper in box.findall(_G):
        links = wrapper.findall(_A)
        if len(links) != 1 or len(wrapper) != 1:
            continue
        link = links[0]
        tip = link.attrib.pop(_XLINK_TITLE, tip)
        if link.attrib:  # it links somewhere
            continue
        at = list(box).index(wrapper)
        box.remove(wrapper)
        for offset, child in enumerate(list(link)):
            box.insert(at + offset, child)
    return tip


def _plain_attributes(element: Element) -> None:
    if element.tail is not None and element.tail.isspace():  # the line breaks between elements
        element.tail = None
    if element.tag != _TEXT and element.text is not None and element.text.isspace():
        element.text = None
    attributes = element.attrib
    for name, default in _DEFAULTS:
        if attributes.get(name) == default:
            del attributes[name]
    if element.tag == _TEXT and attributes.get("fill") == "#000000":  # black: a text's default fill
        del attributes["fill"]
    size = attributes.get("font-size")
    if size is not None and (whole := _ZEROS.match(size)):
        attributes["font-size"] = whole.group(1)
    points = attributes.get("points")
    if points is not None and element.tag.endswith("}polygon"):
        corners = points.split()
        if len(corners) > 3 and corners[0] == corners[-1]:
            attributes["points"] = " ".join(corners[:-1])


__all__ = ["compact"]
