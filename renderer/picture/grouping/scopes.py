"""An operator's name scope: from torch dynamo's node metadata, its node name or (when that has none) its first
output's name."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable

from renderer.core.ir import Node

NAME_SCOPES_KEY = "pkg.torch.onnx.name_scopes"
NAMESPACE_KEY = "namespace"
NO_MODULE = "_empty_nn_module_stack_from_metadata_hook"
"""What torch.export writes as the module path of nodes its passes create outside any module."""
MAX_SCOPE_DEPTH = 32
"""Scope components beyond this are ignored (a hostile name must not make the tree arbitrarily deep)."""
_MAX_METADATA_CHARS = 20_000


# -- scopes -------------------------------------------------------------------------------------------------

_QUOTED = re.compile(r"'([^'\\]*)'|\"([^\"\\]*)\"")


def scope_of(node: Node) -> tuple[str, ...]:
    """The name scope of ``node``: the components before its own name, outermost first (() when none)."""
    return ScopeReader().scope(node)


class ScopeReader:
    """``scope_of`` with memos keyed by the part of the text that decides the scope (names share prefixes)."""

    def __init__(self) -> None:
        self.memo: dict[tuple[str, str], tuple[str, ...]] = {}

    def scope(self, node: Node) -> tuple[str, ...]:
        meta = node.metadata
        if meta:
            text = meta.get(NAME_SCOPES_KEY)
            if text:  # the last entry is the node's own name: the text before the last comma decides
                scope = self._memo(("n", text.rpartition(",")[0]), text, _from_name_scopes)
                if scope:
                    return scope
            text = meta.get(NAMESPACE_KEY)
            if text:
                scope = self._memo(("s", text), text, _from_namespace)
                if scope:
                    return scope
        head = node.name.rstrip("/").rpartition("/")[0]
        if not head:  # unnamed, or named by a rewriter that kept the fused operators' output name (package docs)
            name = next((v.name for v in node.outputs if v.name), "").split(";", 1)[0]
            head = name.rstrip("/").rpartition("/")[0]
        return self._memo(("p", head), head, _split_path) if head else ()

    def _memo(self, key: tuple[str, str], text: str,
              parse: Callable[[str], tuple[str, ...]]) -> tuple[str, ...]:
        scope = self.memo.get(key)
        if scope is None:
            scope = self.memo[key] = parse(text)
        return scope


def _split_path(head: str) -> tuple[str, ...]:
    return tuple(c for c in head.split("/") if c)[:MAX_SCOPE_DEPTH]


def _from_name_scopes(text: str) -> tuple[str, ...]:
    """``"['', 'encoder', 'encoder.layers.0', 'node_name']"``: module paths from the root, then the node."""
    if not text or len(text) > _MAX_METADATA_CHARS:
        return ()
    if "\\" in text:
        try:
            parsed = ast.literal_eval(text)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            return ()
        if not isinstance(parsed, list) or not all(isinstance(s, str) for s in parsed):
            return ()
        entries: list[str] = parsed
    else:
        if not (text.startswith("[") and text.endswith("]")):
            return ()
        entries = [a or b for a, b in _QUOTED.findall(text)]
    return _relative(entries[:-1])


def _from_namespace(text: str) -> tuple[str, ...]:
    """``": pkg.Model/enc: pkg.Encoder/node_name: aten.op"`` (torch ≥ 2.5), or the older ``"enc/enc.x"``."""
    if not text or len(text) > _MAX_METADATA_CHARS:
        return ()
    parts = text.split("/")
    if any(": " in p for p in parts):
        return _relative([p.split(": ", 1)[0] for p in parts[:-1]])
    return _relative(parts)


def _relative(paths: list[str]) -> tuple[str, ...]:
    """Module paths (``encoder``, ``encoder.layers.0``) as one component per module (``encoder``,
    ``layers.0``)."""
    out: list[str] = []
    previous = ""
    for path in paths:
        path = path.strip()
        if not path or path == previous or path == NO_MODULE:
            continue
        if previous and path.startswith(previous + "."):
            out.append(path[len(previous) + 1:])
        else:
            out.append(path)
        previous = path
    return tuple(c.replace("/", "∕") for c in out)[:MAX_SCOPE_DEPTH]
