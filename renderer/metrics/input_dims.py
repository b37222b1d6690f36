"""Which of the model's input dims a shape waits for, so every "pin it" hint names dims ``--dim`` can pin.

Only the symbolic dims of the main graph's inputs can be pinned by name. Dims further down are either one of
them carried through, a name shape inference made up (``unk__3``), or an expression an exporter wrote
(``floor(DynamicDimension.1/2 - 1/2) + 1``): the hint names the input dims the expression mentions, else every
input dim still free.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence

from renderer.core.ir import Dim, Graph, Model, Value
from renderer.loaders.value_sizes import named


def top_graph(graph: Graph) -> Graph:
    """The graph at the top of ``graph``'s chain of owners (itself for a main graph)."""
    while graph.parent is not None:
        graph = graph.parent.graph
    return graph


def free_input_dims(graph: Graph) -> list[str]:
    """The symbolic dims of the inputs of ``graph``'s top graph, in input order, each once."""
    return list(_input_facts(_input_shapes(graph))[0])


def _input_shapes(graph: Graph) -> tuple[tuple[Dim, ...] | None, ...]:
    """The shapes of the inputs of ``graph``'s top graph (None for an input without one): all that
    ``_input_facts`` reads, and a key for it."""
    return tuple(None if value.type is None else value.type.shape for value in top_graph(graph).inputs)


@functools.lru_cache(maxsize=64)
def _input_facts(shapes: tuple[tuple[Dim, ...] | None, ...]) -> tuple[tuple[str, ...], bool]:
    """(the symbolic dims among ``shapes``, in order, each once; whether some input has a dim without a name or no
    shape): worked out once per model, not on each of the thousands of ``unpinned_reason`` calls of a big one."""
    names: list[str] = []
    for shape in shapes:
        if shape is not None:
            names.extend(d for d in shape if isinstance(d, str) and d not in names)
    unnamed = any(shape is None or any(d is None for d in shape) for shape in shapes)
    return tuple(names), unnamed


def model_free_dims(model: Model) -> list[str]:
    """The symbolic input dims of the model's main graph."""
    return free_input_dims(model.main) if model.graphs else []


def flags(names: list[str]) -> str:
    """``--dim a=N --dim b=N``."""
    return " ".join(f"--dim {name}=N" for name in names)


def _mentioned(expression: str, names: Sequence[str]) -> list[str]:
    return [n for n in names if re.search(rf"(?<![\w.]){re.escape(n)}(?![\w.])", expression)]


def not_run(graph: Graph) -> str:
    """Why ``graph`` or a graph enclosing it has no shapes from the run that gave the model's (``Graph.not_run``)."""
    while True:
        if graph.not_run:
            return graph.not_run
        if graph.parent is None:
            return ""
        graph = graph.parent.graph


def unpinned_reason(value: Value, label: str) -> str:
    """Why ``value``'s shape is not static, with the ``--dim`` flags that would fix it when any can."""
    shape: tuple[Dim, ...] = value.type.shape if value.type and value.type.shape is not None else ()
    free, unnamed = _input_facts(_input_shapes(value.graph))
    unknown = [d for d in shape if not isinstance(d, int) or d < 0]
    needed: list[str] = []
    for dim in unknown:
        wanted: Sequence[str]
        if isinstance(dim, str):
            wanted = [dim] if dim in free else _mentioned(dim, free) or free
        else:
            wanted = free
        needed.extend(n for n in wanted if n not in needed)
    if not needed:
        deciding = value.graph.value_sized.get(value.index)
        if deciding:
            return (f"unknown size of {label}: it follows from the values of {named(deciding)}, which --dim cannot "
                    "pin; pass them with --inputs FILE.npz")
        idle = not_run(value.graph)
        if idle:
            return f"unknown shape of {label}: {idle}"
        if unnamed:
            return f"unknown shape of {label} (the model's inputs have dims without a name, which --dim cannot pin)"
        if any(isinstance(d, str) for d in unknown):
            return f"shape of {label} is not known statically (it depends on values computed in the graph)"
        return f"unknown shape of {label}"
    advice = flags(needed)
    if all(d in free for d in unknown):
        plural = len(needed) > 1
        names = ", ".join(repr(d) for d in needed)
        return f"symbolic dim{'s' if plural else ''} {names} in {label}; pin {'them' if plural else 'it'} with {advice}"
    return f"shape of {label} follows from the model's input dims; pin them with {advice}"


SHAPE_METRICS = frozenset({"macs", "flops", "intensity", "output_bytes", "effective_macs"})
"""Built-in operator metrics that need the activations' shapes."""
