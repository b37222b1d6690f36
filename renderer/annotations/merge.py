"""The merge of several annotation sets onto one model: ids resolved by the id rules, values bounded per element,
metric names that clash between sources qualified by their source (``ort.latency_us``)."""

from __future__ import annotations

import itertools

from renderer.core.errors import AnnotationError
from renderer.core.id_rules import Ambiguous, IdIndex, Unresolved
from renderer.core.ir import ElementKey, Model
from renderer.core.records import (
    MAX_VALUES_PER_ELEMENT,
    Annotations,
    AnnotationSet,
    Coverage,
    Entry,
    MetricInfo,
    Ref,
    metric_unit,
    metric_value,
)


def merge(sets: list[AnnotationSet], model: Model, strict: bool = False) -> Annotations:
    """Match every set's ids to ``model`` and merge the values, qualifying metric names that clash."""
    index = IdIndex.build(model)
    result = Annotations()
    sources_of: dict[str, set[str]] = {}
    resolved: list[tuple[AnnotationSet, list[tuple[ElementKey, Entry]]]] = []
    for aset in sets:
        items, coverage = _resolve(aset, index, strict)
        items, crowded = _bounded(items)
        result.notes += aset.notes
        result.read += [path for path in (aset.path, *aset.side_files) if path and path not in result.read]
        if crowded:
            result.notes.append(f"{aset.path}: {crowded} elements have more than {MAX_VALUES_PER_ELEMENT} values; "
                                f"only their first {MAX_VALUES_PER_ELEMENT} are kept")
        if aset.operators or aset.tensors or coverage.unmatched:  # a set of graph values only matches no ids
            result.coverage.append(coverage)
        for name in [name for _, entry in items for name in entry.values] + list(aset.graph.values):
            sources_of.setdefault(name, set()).add(aset.source)
        resolved.append((aset, items))
    clashing = {name for name, sources in sources_of.items() if len(sources) > 1}
    for aset, items in resolved:
        _add(result, aset, items, clashing)
    valued = {(info.source, name.removeprefix(f"{info.source}.")) for name, info in result.metrics.items()}
    result.unusable_mains = [(info, aset.path) for aset in sets for name, info in aset.metrics.items()
                             if info.main and (aset.source, name) not in valued and (aset.operators or aset.tensors)]
    return result


def _resolve(aset: AnnotationSet, index: IdIndex, strict: bool) -> tuple[list[tuple[ElementKey, Entry]], Coverage]:
    """The elements ``aset``'s ids name, with their entries, and its coverage line; under ``strict`` an id that
    matches nothing is an error."""
    items: list[tuple[ElementKey, Entry]] = []
    unmatched = list(aset.unmatched)
    suggestions: dict[str, list[str]] = {}
    reasons: dict[str, str] = {}
    matched_ops: set[ElementKey] = set()
    matched_tensors = unmatched_tensors = 0
    for kind, pairs in (("op", aset.operators), ("t", aset.tensors)):
        for ident, entry in pairs:
            try:
                key = ident.key if isinstance(ident, Ref) else (
                    index.operator(ident) if kind == "op" else index.tensor(ident))
            except Unresolved as e:
                if strict:
                    line = f":{entry.line}" if entry.line else ""
                    raise AnnotationError(f"{aset.path}{line}: {e}") from None
                label = ident if isinstance(ident, str) else str(ident)
                unmatched.append(label)
                unmatched_tensors += kind == "t"
                if isinstance(e, Ambiguous):  # the name exists: say where, suggesting it back helps nobody
                    reasons[label] = f"ambiguous, {e.matches}"
                elif len(unmatched) - len(aset.unmatched) <= 5:  # only the ids the coverage line shows
                    hint = index.suggest(label, kind)
                    if hint:
                        suggestions[label] = hint
                continue
            items.append((key, entry))
            if kind == "op":
                matched_ops.add(key)
            else:
                matched_tensors += 1
    if strict and aset.unmatched:
        raise AnnotationError(f"{aset.path}: {len(aset.unmatched)} rows match no operator: {aset.unmatched[0]}")
    total_ops = len(matched_ops) + len(unmatched) - unmatched_tensors
    coverage = Coverage(aset.source, aset.path, len(matched_ops), total_ops, matched_tensors, unmatched, suggestions,
                        matched_tensors + unmatched_tensors, reasons)
    return items, coverage


def _bounded(items: list[tuple[ElementKey, Entry]]) -> tuple[list[tuple[ElementKey, Entry]], int]:
    """``items`` with each entry cut to MAX_VALUES_PER_ELEMENT values, and how many were cut."""
    crowded = 0
    bounded = []
    for key, entry in items:
        if len(entry.values) > MAX_VALUES_PER_ELEMENT:
            entry = Entry(dict(itertools.islice(entry.values.items(), MAX_VALUES_PER_ELEMENT)), entry.style, entry.line)
            crowded += 1
        bounded.append((key, entry))
    return bounded, crowded


def _add(result: Annotations, aset: AnnotationSet, items: list[tuple[ElementKey, Entry]],
         clashing: set[str]) -> None:
    """Merge one set's matched entries into ``result``; names that several sources use get the source prefixed."""

    def qualified(name: str) -> str:
        return f"{aset.source}.{name}" if name in clashing else name

    graph_values = {qualified(k): v for k, v in aset.graph.values.items()}
    result.graph.update(Entry(graph_values, dict(aset.graph.style)))
    for key, entry in items:
        target = (result.ops if key[0] == "op" else result.tensors).setdefault(key, Entry())
        renamed = Entry({qualified(k): v for k, v in entry.values.items()}, dict(entry.style), entry.line)
        target.update(renamed)
        for name, value in renamed.values.items():
            if metric_value(value) is not None and name not in result.metrics:
                result.metrics[name] = _metric_info(aset, name, value)


def _metric_info(aset: AnnotationSet, name: str, value: object) -> MetricInfo:
    """What is known about metric ``name``, first seen in ``aset`` with ``value``: what the reader declared
    (under the unqualified name), else the unit of the value's text."""
    info = MetricInfo(name=name, source=aset.source, unit=metric_unit(value))
    base = aset.metrics.get(name.removeprefix(f"{aset.source}."))
    if base is not None:
        info.unit = base.unit or info.unit
        info.higher_is_better = base.higher_is_better
        info.description = base.description
        info.gradient, info.thresholds, info.main = base.gradient, base.thresholds, base.main
    return info
