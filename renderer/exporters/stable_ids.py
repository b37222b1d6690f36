"""Readable ids that resolve back to the same element under annograph's id rules."""

from __future__ import annotations

from renderer.core.errors import AnnographError
from renderer.core.id_rules import IdIndex, Unresolved
from renderer.core.ir import ElementKey, Model


class StableIds:
    """The name of an element when it resolves back to it, else ``S:N``."""

    def __init__(self, model: Model) -> None:
        self.model = model
        self.index = IdIndex.build(model)

    def operator(self, key: ElementKey) -> str:
        node = self.model.graphs[key[1]].nodes[key[2]]
        candidates = [node.name] + [v.name for v in node.outputs[:1]]
        return self._first(candidates, key, self.index.operator)

    def tensor(self, key: ElementKey) -> str:
        value = self.model.graphs[key[1]].values[key[2]]
        return self._first([value.name], key, self.index.tensor)

    @staticmethod
    def _first(candidates: list[str], key: ElementKey, resolve) -> str:  # type: ignore[no-untyped-def]
        for candidate in candidates:
            if not candidate or candidate != candidate.strip() or "\n" in candidate:
                continue
            try:
                if resolve(candidate) == key:
                    return candidate
            except Unresolved:
                continue
        ident = f"{key[1]}:{key[2]}"
        try:
            if resolve(ident) == key:
                return ident
        except Unresolved:
            pass
        raise AnnographError(
            f"element {key[1]}:{key[2]} has no id that resolves back to it (a name shadows its index)"
        )
