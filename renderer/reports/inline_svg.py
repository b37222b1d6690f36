"""An SVG written into an HTML page (the Sphinx directive, a notebook's output): checked for active content, and
every id in it, and every reference to one (``href="#…"``, ``xlink:href="#…"``, ``url(#…)``), prefixed so that
two pictures on one page do not share ids.

Graphviz's ids (``graph0``, ``node1``, ``a_node1``, ``clust1``) and ours (``op-0-0``, ``t-0-0``, ``legend``) are
the same in every picture: unprefixed, two pictures on one page make invalid HTML and an in-picture link jumps
to the other picture. The rewriting is done on the parsed XML (the standard library's parser, which expands no
external entity and refuses entity blow-ups) and only on attribute values, so no text can become markup; the
result is serialised again, without Graphviz's comments. Standalone files (``render -o x.svg``, the HTML report)
are not rewritten.

    >>> inline('<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink">'
    ...        '<g id="a"><a xlink:href="#b" href="page-2.svg#b"><path id="b" fill="url(#a)"/></a></g></svg>', "p-")
    '<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink"><g id="p-a"><a \
xlink:href="#p-b" href="page-2.svg#b"><path id="p-b" fill="url(#p-a)" /></a></g></svg>'
"""

from __future__ import annotations

import hashlib
import re
from typing import TYPE_CHECKING

from renderer.core.errors import RenderError

if TYPE_CHECKING:
    from xml.etree.ElementTree import Element

SVG_NS = "http://www.w3.org/2000/svg"
XLINK_NS = "http://www.w3.org/1999/xlink"
_PREFIXES = {SVG_NS: "", XLINK_NS: "xlink:", "http://www.w3.org/XML/1998/namespace": "xml:"}
XML_PROLOG = re.compile(r"^\s*<\?xml[^>]*>\s*(<!DOCTYPE[^>]*>\s*)?", re.S)
UNSAFE_TAGS = frozenset({"script", "foreignobject", "iframe", "object", "embed", "use", "image", "animate", "set"})
_ABSOLUTE = re.compile(r"/|[a-zA-Z][a-zA-Z0-9+.-]*:")
_URL_REF = re.compile(r"url\(\s*(['\"]?)#([^)'\"\s]+)\1\s*\)")


def prefix_for(*parts: str) -> str:
    """A short id prefix made from ``parts``: same parts, same prefix; starts with a letter, ends with ``-``.

    >>> prefix_for("index", "0")
    'ag7a20faa0-'
    """
    return f"ag{hashlib.sha256(chr(0).join(parts).encode()).hexdigest()[:8]}-"


def parse(svg: str) -> Element:
    """The SVG's root element; RenderError when it does not parse or holds anything active (script, handler,
    foreign object, ``javascript:``/``data:`` link): Graphviz escapes our text, this is the second lock."""
    from xml.etree import ElementTree

    try:
        root = ElementTree.fromstring(XML_PROLOG.sub("", svg))
    except ElementTree.ParseError as e:
        raise RenderError(f"Graphviz wrote an SVG that does not parse ({e})") from None
    for element in root.iter():
        tag = element.tag.rsplit("}", 1)[-1].lower()
        if tag in UNSAFE_TAGS:
            raise RenderError(f"refusing to embed an SVG with a <{tag}> element")
        for name, value in element.attrib.items():
            local = name.rsplit("}", 1)[-1].lower()
            script = local == "href" and value.strip().lower().startswith(("javascript:", "data:"))
            if local.startswith("on") or script:
                raise RenderError(f"refusing to embed an SVG with a {local} attribute")
    return root


def inline(svg: str, prefix: str, base: str = "") -> str:
    """``svg`` for an HTML page: checked (``parse``), every id and in-document reference prefixed with ``prefix``;
    ``base`` put before every relative link to another file (they were relative to the SVG's own file)."""
    root = parse(svg)
    for element in root.iter():
        for name, value in list(element.attrib.items()):
            if name == "id":
                value = prefix + value
            elif name.rsplit("}", 1)[-1] == "href":
                if value.startswith("#"):
                    value = f"#{prefix}{value[1:]}"
                elif base and not _ABSOLUTE.match(value):
                    value = base + value
            if "url(" in value:
                value = _URL_REF.sub(lambda m: f"url({m.group(1)}#{prefix}{m.group(2)}{m.group(1)})", value)
            element.set(name, value)
    return serialise(root)


def serialise(root: Element) -> str:
    """``root`` (from ``parse``) as SVG markup written with the usual prefixes, as Graphviz writes them (an HTML
    parser knows ``xlink:href``, not ``ns0:href``): every text escaped, so no text becomes markup."""
    from xml.etree import ElementTree

    for element in root.iter():
        element.tag = _html_name(element.tag)
        attributes = list(element.attrib.items())
        element.attrib.clear()
        for name, value in attributes:
            element.set(_html_name(name), value)
    root.set("xmlns", SVG_NS)
    root.set("xmlns:xlink", XLINK_NS)
    return ElementTree.tostring(root, encoding="unicode")


def _html_name(name: str) -> str:
    """``{namespace}local`` as it is written in an HTML page: ``local``, ``xlink:local``, ``xml:local``."""
    if not name.startswith("{"):
        return name
    namespace, local = name[1:].split("}", 1)
    if namespace not in _PREFIXES:
        raise RenderError(f"refusing to embed an SVG using the namespace {namespace!r}")
    return _PREFIXES[namespace] + local


_SVG_TAG = re.compile(r"<svg\b")
FIT_STYLE = "max-width:100%;height:auto"
"""Scales a picture down to the column holding it, keeping its proportions (by its viewBox); never up."""


def fit_width(svg: str) -> str:
    """``svg`` (inlined) scaled down to the width of what holds it: a ``style`` on its root element.

    >>> fit_width('<svg width="981pt" height="902pt" viewBox="0 0 981 902">')
    '<svg style="max-width:100%;height:auto" width="981pt" height="902pt" viewBox="0 0 981 902">'
    """
    return _SVG_TAG.sub(f'<svg style="{FIT_STYLE}"', svg, count=1)


__all__ = ["FIT_STYLE", "UNSAFE_TAGS", "XML_PROLOG", "fit_width", "inline", "parse", "prefix_for", "serialise"]
