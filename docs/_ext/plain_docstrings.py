"""``{plain-docstring} renderer.NAME``: a public name's signature and its docstring, shown as written.

annograph's docstrings are plain text (``code`` in double backquotes, lists and examples as they read in a
terminal), not reStructuredText, so autodoc would misread them; this shows each one verbatim, taken from the code
at build time, so the reference never drifts from it.
"""

from __future__ import annotations

import importlib
import inspect
from typing import Any, ClassVar

from docutils import nodes
from sphinx.util.docutils import SphinxDirective


def _target(dotted: str) -> Any:
    module, _, name = dotted.rpartition(".")
    return getattr(importlib.import_module(module), name)


class PlainDocstring(SphinxDirective):
    required_arguments = 1
    option_spec: ClassVar[dict[str, Any]] = {}

    def run(self) -> list[nodes.Node]:
        dotted = self.arguments[0]
        target = _target(dotted)
        kind = "class" if inspect.isclass(target) else "def"
        try:
            signature = str(inspect.signature(target))
        except (TypeError, ValueError):
            signature = ""
        section = nodes.section(ids=[nodes.make_id(dotted)])
        section += nodes.title("", "", nodes.literal(text=dotted))
        section += nodes.literal_block(text=f"{kind} {dotted.rpartition('.')[2]}{signature}", language="python")
        section += nodes.literal_block(text=inspect.getdoc(target) or "(no docstring)", language="text")
        return [section]


def setup(app: Any) -> dict[str, Any]:
    app.add_directive("plain-docstring", PlainDocstring)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
