"""What annotation readers produce, and the merged result the renderer reads.

A reader turns one file into an ``AnnotationSet``: entries keyed by ids as the file writes them (strings,
resolved later by ``renderer.core.id_rules``) or by ``Ref`` when the reader already knows the element (a profile
that names ORT's node index, say). ``renderer.annotations.merge.merge`` matches ids to the model and merges several
sets into one ``Annotations``.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

from renderer.core.ir import ElementKey

MAX_VALUES_PER_ELEMENT = 1000
"""Values kept per operator or tensor and source: a million keys on one element cost minutes and gigabytes to
lay out and show, and nobody reads them. Readers may stop after one more (so the merge can say it cut)."""



@dataclass(frozen=True, slots=True)
class Ref:
    """An element a reader has already identified."""

    kind: str  # "op" or "t"
    graph: int
    index: int

    @property
    def key(self) -> ElementKey:
        return (self.kind, self.graph, self.index)


@dataclass(slots=True)
class Entry:
    """Values and style for one element.

    Attributes:
        values: name → value in file order; numbers (or "13 ms"-like strings) are also metrics.
        style: Graphviz attribute → value (``fillcolor``, ``color``, ``penwidth``…), wins over the heatmap.
        line: line in the source file, for messages.
    """

    values: dict[str, Any] = field(default_factory=dict)
    style: dict[str, str] = field(default_factory=dict)
    line: int | None = None

    def update(self, other: Entry) -> None:
        self.values.update(other.values)
        self.style.update(other.style)


@dataclass(slots=True)
class MetricInfo:
    """What is known about a metric besides its values.

    Attributes:
        name: the key users pass to ``--color-by``.
        source: the reader that provided it (``generic``, ``ort``, ``builtin``…).
        unit: a unit parsed from "13 ms"-like values or declared by the reader.
        higher_is_better: True for metrics like SQNR, shown in the legend; None when unknown.
        description: one line for the legend and reports.
        gradient: colour stops (position 0..1, #rrggbb) the source asks for, used when no --cmap is given.
        thresholds: (upper bound, #rrggbb) pairs the source asks for, used when no --cmap is given.
        main: the tool's headline measurement (an ORT profile's latency_us), declared by its reader: the
            metric the picture is coloured by when no --color-by is given (``heatmap.default_metric``).
    """

    name: str
    source: str = ""
    unit: str = ""
    higher_is_better: bool | None = None
    description: str = ""
    gradient: list[tuple[float, str]] | None = None
    thresholds: list[tuple[float, str]] | None = None
    main: bool = False


@dataclass(slots=True)
class AnnotationSet:
    """One file's annotations, as read.

    Attributes:
        source: reader name; becomes the qualifier (``ort.latency_us``) when metric names clash.
        path: the file.
        graph: graph-level entry (title, meta).
        operators / tensors: (id, entry) in file order; id is a string as written, or a Ref.
        unmatched: rows the reader itself could not map to the model (e.g. delegate rows), shown in coverage.
        metrics: extra information about metrics this file provides.
        notes: what the reader cut to stay within its bounds (columns past MAX_COLUMNS…), one line each.
        side_files: the files the reader opened besides ``path`` (a TensorRT profile's layer information found
            beside it): inputs of the run like ``path``, which no output may replace.
    """

    source: str
    path: str
    graph: Entry = field(default_factory=Entry)
    operators: list[tuple[str | Ref, Entry]] = field(default_factory=list)
    tensors: list[tuple[str | Ref, Entry]] = field(default_factory=list)
    unmatched: list[str] = field(default_factory=list)
    metrics: dict[str, MetricInfo] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # what the reader left out (one line each)
    side_files: list[str] = field(default_factory=list)


@dataclass(slots=True)
class Coverage:
    """How well one set matched the model."""

    source: str
    path: str
    matched_ops: int
    total_ops: int
    matched_tensors: int
    unmatched: list[str]
    suggestions: dict[str, list[str]]
    total_tensors: int = 0
    reasons: dict[str, str] = field(default_factory=dict)  # unmatched id → why, when not "no such name"

    def line(self) -> str:
        text = f"{self.path} ({self.source}): matched {self.matched_ops}/{self.total_ops} operators"
        if self.total_tensors:
            text += f", {self.matched_tensors}/{self.total_tensors} tensors"
        if self.unmatched:
            shown = []
            for item in self.unmatched[:5]:
                hint, note = self.suggestions.get(item), self.reasons.get(item)
                shown.append(f"{item} ({note})" if note else f"{item} (did you mean {', '.join(hint)}?)" if hint
                             else item)
            more = f", … {len(self.unmatched) - 5} more" if len(self.unmatched) > 5 else ""
            text += f"; {len(self.unmatched)} ids unmatched: {'; '.join(shown)}{more}"
        return text


@dataclass(slots=True)
class Annotations:
    """All annotation sources merged and matched to one model.

    Attributes:
        graph: merged graph entry.
        ops / tensors: element key → merged entry (value names already qualified where they clash).
        metrics: every metric name available → info.
        coverage: one per source set.
        sidecars: the sidecar files found beside the model and read (``MODEL.annotations.*``).
        notes: what was cut reading or merging the sources (one line each; the CLI prints them).
        read: every file the sets were read from, their side files included (``AnnotationSet.side_files``).
        unusable_mains: the main metrics readers declared (``MetricInfo.main``) of which no element has a
            usable value (all NaN, past the colour scales' range), with the file each was read from.
    """

    graph: Entry = field(default_factory=Entry)
    ops: dict[ElementKey, Entry] = field(default_factory=dict)
    tensors: dict[ElementKey, Entry] = field(default_factory=dict)
    metrics: dict[str, MetricInfo] = field(default_factory=dict)
    coverage: list[Coverage] = field(default_factory=list)
    sidecars: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    read: list[str] = field(default_factory=list)
    unusable_mains: list[tuple[MetricInfo, str]] = field(default_factory=list)

    def copy(self) -> Annotations:
        """A copy whose entries and metric table can change without touching this one (rendering adds its
        computed metrics to a copy, never to the caller's annotations)."""
        def entries(source: dict[ElementKey, Entry]) -> dict[ElementKey, Entry]:
            return {key: Entry(dict(e.values), dict(e.style), e.line) for key, e in source.items()}

        return Annotations(Entry(dict(self.graph.values), dict(self.graph.style), self.graph.line),
                           entries(self.ops), entries(self.tensors), dict(self.metrics), list(self.coverage),
                           list(self.sidecars), list(self.notes), list(self.read), list(self.unusable_mains))


# Numbers beyond this are shown as text but kept off colour scales, like inf and nan: the difference of two
# (1.7e308 - -1.7e308) would overflow every scale computed from them.
LARGEST_METRIC = 1e300
_NUMBER_WITH_UNIT = re.compile(r"^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*([A-Za-zµ%/]*[A-Za-zµ%]?)\s*$")


def json_values(values: dict[str, Any]) -> dict[str, Any]:
    """``values`` as JSON can hold them: non-finite floats become null, other non-JSON objects text."""
    out: dict[str, Any] = {}
    for key, value in values.items():
        if isinstance(value, float) and not math.isfinite(value):
            value = None
        elif value is not None and not isinstance(value, (str, int, float, bool)):
            value = str(value)
        out[key] = value
    return out


def metric_value(value: Any) -> float | None:
    """The number in ``value`` when it is one: 13, 13.0, "13.0", "13.0 ms", "45%"; else None.

    >>> metric_value("13.0 ms"), metric_value(True), metric_value("0x10"), metric_value("nan")
    (13.0, None, None, None)
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        try:
            number = float(value)
        except OverflowError:  # an int of 400 digits: as unusable for a scale as 1e400 (inf)
            return None
    elif isinstance(value, str):
        match = _NUMBER_WITH_UNIT.match(value)
        if not match:
            return None
        number = float(match.group(1))
    else:
        try:  # numpy scalars
            number = float(value)
        except (TypeError, ValueError, OverflowError):
            return None
    return number if math.isfinite(number) and abs(number) <= LARGEST_METRIC else None


def metric_unit(value: Any) -> str:
    """The unit in a "13.0 ms"-like string, else ""."""
    if isinstance(value, str):
        match = _NUMBER_WITH_UNIT.match(value)
        if match:
            return match.group(2)
    return ""
