"""What the explorable HTML report needs besides the SVG: every drawn operator with all its values, where its
box is (page and element id), the hot spots, and the Content-Security-Policy that lets our one script run.

The browser finds boxes through this data, never by reading text out of the SVG: ``ops[k].el`` is the id our
DOT gave the operator's ``<g class="node">`` (``Node.element_id``), ``ops[k].pages`` the book pages drawing it.
The data travels ``packed`` (the values' texts in one table of strings) as JSON in a
``<script type="application/json">`` block (``script_json``), which a browser never runs; the script itself is
allowed by its SHA-256 in the policy (``policy``), so no other script can run.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
from typing import TYPE_CHECKING, Any

from renderer.core import escape
from renderer.core.numbers import format_number
from renderer.core.records import metric_value
from renderer.data.resources import folder
from renderer.picture.scene import Scene

if TYPE_CHECKING:
    from renderer.core.ir import Node
    from renderer.picture.pages import Book

HOT_SPOTS = 10
"""Operators listed as hot spots (the worst by the colour metric)."""
VALUE_CHARS = 300
"""A value in the side panel is cut at this many characters (the SVG tooltip has the same text)."""

_JSON_ESCAPES = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028",
                               "\u2029": "\\u2029"})


def script_source() -> str:
    """The report's script, ``templates/report.js``, as it is inlined (its hash goes into the policy)."""
    return folder("templates").joinpath("report.js").read_text(encoding="utf-8")


def policy(script: str) -> str:
    """The Content-Security-Policy of a report whose one inline script is ``script``: nothing loads from
    anywhere, styles are inline, and only a script with exactly this text runs.

    >>> policy("x")[:60]
    "default-src 'none'; script-src 'sha256-LXEWQrcmsEQBYnyp+6wy9"
    """
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
    return (f"default-src 'none'; script-src 'sha256-{digest}'; style-src 'unsafe-inline'; img-src 'self'; "
            "base-uri 'none'; form-action 'none'")


def script_json(data: Any) -> str:
    """``data`` as JSON that cannot end the ``<script>`` element holding it, nor open a comment or CDATA.

    >>> script_json({"name": "</script><!--&"})
    '{"name":"\\\\u003c/script\\\\u003e\\\\u003c!--\\\\u0026"}'
    """
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False).translate(_JSON_ESCAPES)


def _number(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


def _shown(value: Any) -> tuple[str, str | None]:
    """(the value as the report shows it, the exact text when rounding changed it)."""
    if isinstance(value, str):
        return escape.clean(value, VALUE_CHARS), None
    number = metric_value(value)
    if number is None:
        return escape.clean(value, VALUE_CHARS), None
    shown = format_number(value)
    try:
        same = float(shown) == number
    except ValueError:  # 65.5k, 1.2e-05
        same = False
    return shown, (None if same else escape.clean(value, VALUE_CHARS))


def _signature(node: Node) -> list[list[str]]:
    """Inputs, outputs and attributes as (label, text) pairs, the way the box's tooltip lists them."""
    lines = []
    for i, value in enumerate(node.inputs):
        if value is not None:
            slot = node.input_names[i] if i < len(node.input_names) else f"input {i}"
            lines.append([escape.clean(slot, 60), escape.clean(f"{value.name} {value.type or ''}".strip(), 200)])
    for value in node.outputs:
        lines.append(["→", escape.clean(f"{value.name} {value.type or ''}".strip(), 200)])
    for key, value in node.attributes.items():
        text = value if isinstance(value, (str, int, float)) else (
            "[" + ",".join(map(str, value[:8])) + (",…" if len(value) > 8 else "") + "]"
            if isinstance(value, (list, tuple)) else type(value).__name__)
        lines.append([escape.clean(key, 60), escape.clean(text, 200)])
    return lines


def _more(tip: str | None, op: dict[str, Any]) -> list[str]:
    """The lines of a box's tooltip that the operator's other fields do not say (what was folded into it, what
    the model file stores with it, its domain…): its type and ids, name, signature and values aside.

    >>> _more("Add  (operator 0:1, op-0-1)\\nname: a\\nA: x float32[2]\\nfolded Constant 0:0: params 0\\n—\\nparams: 2",
    ...       {"type": "Add", "id": "0:1", "el": "op-0-1", "name": "a", "sig": [["A", "x float32[2]"]],
    ...        "values": [["params", "2", None]]})
    ['folded Constant 0:0: params 0']
    """
    if not tip:
        return []
    said = {"—", f"name: {op['name']}", f"{op['type']}  (operator {op['id']}, {op['el']})"}
    said |= {f"{slot}: {text}" if slot != "→" else f"→ {text}" for slot, text in op["sig"]}
    said |= {f"{slot} = {text}" for slot, text in op["sig"]}
    said |= {f"{key}: {text}" for key, shown, exact in op["values"] for text in (shown, exact) if text is not None}
    # Graphviz keeps a run of spaces as space + no-break space
    return [escape.clean(line, VALUE_CHARS) for line in tip.split("\n") if line.replace("\xa0", " ") not in said]


def data(scene: Scene, book: Book | None = None, tips: dict[str, str] | None = None) -> dict[str, Any]:
    """The report's JSON: operators (table order: graph, then index), hot spots, pages. ``tips``: the boxes'
    tooltips by element id, taken out of the pictures (``page_svg``); what they add is each operator's ``more``."""
    annotations, heat = scene.annotations, scene.heatmap
    drawn_on: dict[tuple[str, int, int], list[int]] = {}
    if book is not None:
        for page in book.pages:
            for node in page.drawn_ops():
                drawn_on.setdefault(node.key, []).append(page.index)
    ops = []
    for node in scene.model.nodes():
        if scene.folding.is_hidden(node):
            continue
        entry = annotations.ops.get(node.key)
        number = heat.values.get(node.key) if heat else None
        values = []
        for key, value in (entry.values.items() if entry else ()):
            shown, exact = _shown(value)
            values.append([escape.clean(key, 80), shown, exact])
        ops.append({
            "id": f"{node.graph.index}:{node.index}",
            "el": node.element_id,
            "type": escape.clean(node.op_type, 60),
            "name": escape.clean(node.display_name, 200),
            "num": _number(number),
            "metric": format_number(number) if number is not None else ("n/a" if heat else ""),
            "fill": heat.color(node.key) if heat else "",
            "pages": drawn_on.get(node.key, []) if book is not None else [0],
            "values": values,
            "sig": _signature(node),
        })
        ops[-1]["more"] = _more((tips or {}).get(node.element_id), ops[-1])
    hot: list[int] = []
    if heat is not None:
        lower_first = heat.info.higher_is_better is True
        ranked = [k for k, op in enumerate(ops) if op["num"] is not None]
        ranked.sort(key=lambda k: (ops[k]["num"] if lower_first else -ops[k]["num"], k))
        if len({ops[k]["num"] for k in ranked}) > 1:  # one value everywhere ranks nothing
            hot = ranked[:HOT_SPOTS]
    pages = [{"stem": "drawing", "title": "", "parent": None}] if book is None else [
        {"stem": page.stem, "title": escape.clean("overview" if page.index == 0 else page.title, 200),
         "parent": page.parent.index if page.parent is not None else None}
        for page in book.pages]
    return {
        "metric": escape.clean(heat.metric, 80) if heat else "",
        "unit": escape.clean(heat.info.unit, 40) if heat and heat.info.unit else "",
        "better": "higher" if heat and heat.info.higher_is_better is True else "lower",
        "ops": ops,
        "hot": hot,
        "pages": pages,
    }


def packed(report: dict[str, Any]) -> dict[str, Any]:
    """``report`` (``data``'s) as it travels: each text of the operators' values, signatures and ``more`` stored
    once, in ``strings``, and named by its index there (keys, units and long n/a reasons repeat on every
    operator), and each operator a list of its fields in the order ``fields`` names them (the script makes them
    objects again), not an object repeating every key.

    >>> packed({"ops": [{"id": "0:0", "values": [["a", "n/a", None]], "sig": [["x", "n/a"]], "more": ["a"]}]})
    ... # doctest: +NORMALIZE_WHITESPACE
    {'ops': [['0:0', [[0, 1, None]], [[2, 1]], [0]]], 'fields': ['id', 'values', 'sig', 'more'],
     'strings': ['a', 'n/a', 'x']}
    """
    index: dict[str, int] = {}

    def at(text: str | None) -> int | None:
        return None if text is None else index.setdefault(text, len(index))

    texts = {"values", "sig", "more"}
    fields = list(report["ops"][0]) if report["ops"] else []
    ops = [[[[at(text) for text in entry] if isinstance(entry, list) else at(entry) for entry in op[field]]
            if field in texts else op[field] for field in fields] for op in report["ops"]]
    return {**report, "ops": ops, "fields": fields, "strings": list(index)}


__all__ = ["HOT_SPOTS", "data", "packed", "policy", "script_json", "script_source"]
