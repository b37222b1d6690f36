"""The generic, human-writable annotation format: JSON, YAML, CSV, or Netron-proposal ``key: value`` text.

JSON / YAML::

    graph:     {title: "MobileNet on NPU X", meta: {Device: NPU-X}}
    operators:                      # a list of entries, or a mapping id → entry
      - id: 14
        meta: {latency_ms: 13.0, note: "tiled x4"}
        style: {fillcolor: "#ff0000"}
    tensors:
      - {id: 56, meta: {bytes: 4096}, style: {color: "#d62728", penwidth: 3}}
    metrics:                        # optional: what is known of a metric (see metric_meta.py)
      sqnr_db: {unit: dB, higher_is_better: true, description: "signal-to-quantization-noise ratio"}

Keys of an entry other than ``id``/``meta``/``style`` are values too (``- {id: 14, latency_ms: 13}``).

CSV: an ``id`` column, an optional ``kind`` column (operator | tensor | graph), ``style.<attr>`` columns, and
every other column a value; empty cells are skipped.

Text (as first proposed for Netron): ``operator_id: 14`` starts an operator entry, then
``operator_meta: "Latency: 13.0 ms; Note: x"`` and ``operator_style: "color: 0xFF0000;"``; likewise ``tensor_*``
and ``graph_meta`` / ``graph_title``.
"""

from __future__ import annotations

import csv
import itertools
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from renderer.annotations.lookup import MAX_LINE_CHARS, bounded_lines, parse_json
from renderer.annotations.metric_meta import read_metric_infos
from renderer.annotations.style import validate_style
from renderer.core.errors import AnnotationError, first_line
from renderer.core.ir import Model
from renderer.core.records import MAX_VALUES_PER_ELEMENT, AnnotationSet, Entry, Ref
from renderer.files import inputs

NAME = "generic"
DESCRIPTION = "annograph's own format (JSON, YAML, CSV or Netron-style key: value text)"

_TEXT_KEY = re.compile(r"^\s*(operator|tensor|graph)_(id|meta|style|title)\s*:(.*)$")
_ENTRY_KEYS = {"id", "meta", "style", "kind", "line"}
_LINE_BREAK = re.compile(r"\r\n|\r|\n")
# Nested values are shown as compact JSON text cut at this many characters. The cut also bounds the work:
# YAML aliases can make a small file describe a structure of billions of elements ("billion laughs").
NESTED_TEXT_LIMIT = 4096
# PyYAML composes the whole document before constructing it: 100,000 rows (6 MiB) take ~20 s and ~500 MiB.
# Bigger YAML is refused with a pointer to CSV/JSON, which read a million rows in seconds.
YAML_MAX_CHARS = 10 * 2**20


def match(path: Path, head: str) -> bool:
    return True  # the fallback: tried last


def read(path: Path, model: Model | None = None) -> AnnotationSet:
    text = read_text(path)
    kind = _syntax(path, text)
    result = AnnotationSet(source=NAME, path=str(path))
    if kind == "csv":
        _read_csv(path, text, result)
    elif kind == "text":
        _read_netron_text(path, text, result)
    else:
        data = parse_json(path, text) if kind == "json" else _parse_yaml(path, text)
        _read_document(path, data, result)
    return result


def read_text(path: Path) -> str:
    """The file as text (UTF-8, BOM allowed), or an AnnotationError naming it."""
    data = inputs.read_bytes(path, inputs.ANNOTATION_LIMIT, AnnotationError, "an annotation file")
    if b"\x00" in data[:4096]:
        raise AnnotationError(f"{path}: binary file, not an annotation file")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = data[: e.start].count(b"\n") + 1
        raise AnnotationError(f"{path}:{line}: not UTF-8 text") from None


def _syntax(path: Path, text: str) -> str:
    suffix = path.suffix.lower()
    if suffix == ".json":
        return "json"
    if suffix in (".yaml", ".yml"):
        return "yaml"
    if suffix in (".csv", ".tsv"):
        return "csv"
    stripped = text.lstrip()
    if stripped.startswith(("{", "[")):
        return "json"
    first = next((ln for ln in _lines(text) if ln.strip() and not ln.lstrip().startswith("#")), "")
    if _TEXT_KEY.match(first):
        return "text"
    if "," in first and "id" in [c.strip().lower() for c in first.split(",")]:
        return "csv"
    return "yaml"


def _lines(text: str) -> list[str]:
    """Lines split at \\n, \\r\\n or \\r only: str.splitlines also splits at form feeds, \\x1c-\\x1e, NEL and
    U+2028, which may sit inside a value (and would make line numbers disagree with editors)."""
    return _LINE_BREAK.split(text.removesuffix("\n").removesuffix("\r")) if text else []


# -- JSON / YAML --------------------------------------------------------------------------------------------


def _parse_yaml(path: Path, text: str) -> Any:
    if len(text) > YAML_MAX_CHARS:
        raise AnnotationError(
            f"{path}: {len(text) / 2**20:.0f} MiB of YAML is more than annograph reads as YAML "
            f"({YAML_MAX_CHARS // 2**20} MiB: PyYAML holds the whole document, ~80 bytes per character); "
            "write files this big as CSV or JSON"
        )
    import yaml

    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    class LineLoader(base):  # type: ignore[misc,valid-type]
        """Records the line of every mapping so messages can point at an entry."""

    def construct_mapping(loader: Any, node: Any) -> Any:
        mapping = loader.construct_mapping(node, deep=True)
        if isinstance(mapping, dict) and "line" not in mapping:
            mapping["line"] = node.start_mark.line + 1
        return mapping

    LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, construct_mapping)
    try:
        return yaml.load(text, Loader=LineLoader)  # noqa: S506 (a SafeLoader subclass)
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        line = f":{mark.line + 1}" if mark else ""
        raise AnnotationError(f"{path}{line}: invalid YAML ({e.problem or e.context})") from None
    except (yaml.YAMLError, RecursionError) as e:
        raise AnnotationError(f"{path}: invalid YAML ({first_line(e, empty='error')})") from None
    except AnnotationError:
        raise
    except Exception as e:  # noqa: BLE001  an explicit tag (!!float, !!int, !!binary…) PyYAML fails to convert
        reason = first_line(e)
        raise AnnotationError(f"{path}: invalid YAML (a tagged value cannot be converted: {reason})") from None


def _read_document(path: Path, data: Any, result: AnnotationSet) -> None:
    if data is None:
        return
    if not isinstance(data, dict):
        raise AnnotationError(f"{path}: expected a mapping with 'graph', 'operators' and/or 'tensors' at the top")
    unknown = sorted(str(k) for k in data if k not in ("graph", "operators", "tensors", "metrics", "line"))
    if unknown:
        raise AnnotationError(
            f"{path}: unknown top-level key {unknown[0]!r} (expected graph, operators, tensors, metrics)")
    result.metrics.update(read_metric_infos(data.get("metrics"), NAME, str(path)))
    graph = data.get("graph")
    if graph is not None:
        if not isinstance(graph, dict):
            raise AnnotationError(f"{path}: 'graph' must be a mapping")
        result.graph = _entry(path, graph, "graph", allow_title=True)
    for section, target in (("operators", _Rows(result.operators)), ("tensors", _Rows(result.tensors))):
        items = data.get(section)
        if items is None:
            continue
        if isinstance(items, dict):
            pairs = [(k, v) for k, v in items.items() if k != "line"]
            for ident, body in pairs:
                if not isinstance(body, dict):
                    raise AnnotationError(f"{path}: {section}[{ident!r}] must be a mapping")
                target.add(_ident(path, ident, body), _entry(path, body, section))
        elif isinstance(items, list):
            for position, body in enumerate(items):
                if not isinstance(body, dict) or "id" not in body:
                    where = _where(path, body, f"{section}[{position}]")
                    raise AnnotationError(f"{where}: each entry needs an 'id'")
                target.add(_ident(path, body["id"], body), _entry(path, body, section))
        else:
            raise AnnotationError(f"{path}: '{section}' must be a list or a mapping")


class _Rows:
    """One section's entries in order of first appearance. A repeated id merges into its first entry, later
    values winning as they would in the merge, so memory grows with the distinct ids, not with the rows (a
    profile of many runs repeats every id)."""

    def __init__(self, target: list[tuple[str | Ref, Entry]]) -> None:
        self.target = target
        self.by_id: dict[str, Entry] = {}

    def add(self, ident: str, entry: Entry) -> Entry:
        """Add a row; return the entry that holds it (the first one for its id)."""
        first = self.by_id.get(ident)
        if first is None:
            self.by_id[ident] = entry
            self.target.append((ident, entry))
            return entry
        first.update(entry)
        return first


def _where(path: Path, body: Any, fallback: str) -> str:
    if isinstance(body, dict) and isinstance(body.get("line"), int):
        return f"{path}:{body['line']}"
    return f"{path}: {fallback}"


def _ident(path: Path, ident: Any, body: dict[str, Any]) -> str:
    if isinstance(ident, bool) or not isinstance(ident, (str, int)):
        raise AnnotationError(f"{_where(path, body, 'entry')}: id must be a name or an index, "
                              f"not {type(ident).__name__}")
    return str(ident)


def _entry(path: Path, body: dict[str, Any], section: str, allow_title: bool = False) -> Entry:
    where = _where(path, body, section)
    entry = Entry(line=body.get("line") if isinstance(body.get("line"), int) else None)
    meta = body.get("meta", {})
    if not isinstance(meta, dict):
        raise AnnotationError(f"{where}: 'meta' must be a mapping")
    for key, value in itertools.islice(meta.items(), MAX_VALUES_PER_ELEMENT + 1):
        if key != "line":
            entry.values[str(key)] = _shown_value(value)
    for key, value in itertools.islice(body.items(), MAX_VALUES_PER_ELEMENT + 8):
        if key in _ENTRY_KEYS or (allow_title and key == "title"):
            continue
        entry.values[str(key)] = _shown_value(value)
    if allow_title and body.get("title") is not None:
        entry.values = {"title": str(body["title"]), **entry.values}
    style = body.get("style", {})
    if not isinstance(style, dict):
        raise AnnotationError(f"{where}: 'style' must be a mapping")
    entry.style = validate_style({k: v for k, v in style.items() if k != "line"}, where)
    return entry


def _shown_value(value: Any) -> Any:
    """Scalars as they are; nested structures as compact text (they are shown, never coloured by)."""
    if isinstance(value, dict):
        value = {k: v for k, v in value.items() if k != "line"}
    if isinstance(value, (dict, list)):
        return _compact_json(value, NESTED_TEXT_LIMIT)
    return value if isinstance(value, (str, int, float, bool)) or value is None else str(value)


class _Full(Exception):
    pass


def _compact_json(value: Any, limit: int) -> str:
    """``json.dumps(value, ensure_ascii=False, default=str)``, cut with "…" once longer than ``limit``, without
    ever walking more than ``limit`` characters' worth of the structure."""
    parts: list[str] = []
    size = 0

    def emit(text: str) -> None:
        nonlocal size
        parts.append(text)
        size += len(text)
        if size > limit:
            raise _Full

    def walk(item: Any, depth: int) -> None:
        if depth > 100:
            emit("…")
            return
        if isinstance(item, dict):
            emit("{")
            for n, (key, child) in enumerate(item.items()):
                name = json.dumps(key if isinstance(key, str) else str(key), ensure_ascii=False)
                emit((", " if n else "") + name + ": ")
                walk(child, depth + 1)
            emit("}")
        elif isinstance(item, (list, tuple)):
            emit("[")
            for n, child in enumerate(item):
                if n:
                    emit(", ")
                walk(child, depth + 1)
            emit("]")
        else:
            emit(json.dumps(item, ensure_ascii=False, default=str))

    try:
        walk(value, 0)
    except _Full:
        return "".join(parts)[: max(limit - 1, 0)] + "…"
    return "".join(parts)


# -- CSV ----------------------------------------------------------------------------------------------------


_PHYSICAL_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")


def _physical_lines(text: str) -> Iterator[str]:
    """The lines of ``text`` with their endings, as ``io.StringIO(text, newline="")`` yields them, without the
    copy StringIO makes (four bytes a character for a file of megabytes)."""
    return (m.group() for m in _PHYSICAL_LINE.finditer(text))


def _not_too_long(lines: Iterator[str], path: Path) -> Iterator[str]:
    """``lines`` (already cut to MAX_COLUMNS cells), one longer than MAX_LINE_CHARS refused as every reader
    refuses it, before csv makes a cell of it."""
    for number, line in enumerate(lines, start=1):
        if len(line) > MAX_LINE_CHARS:
            raise AnnotationError(f"{path}:{number}: a line of more than {MAX_LINE_CHARS:,} characters, longer than "
                                  "annograph reads; write long values as JSON")
        yield line


def _read_csv(path: Path, text: str, result: AnnotationSet) -> None:
    dialect: Any = "excel-tab" if path.suffix.lower() == ".tsv" else "excel"
    delimiter = "\t" if dialect == "excel-tab" else ","
    lines = _not_too_long(bounded_lines(_physical_lines(text), path, result.notes, delimiter), path)
    reader = csv.reader(lines, dialect=dialect)
    try:
        header = next(reader)
    except StopIteration:
        return
    except csv.Error as e:
        raise AnnotationError(f"{path}:1: invalid CSV ({e})") from None
    columns = [h.strip() for h in header]
    lowered = [c.lower() for c in columns]
    if "id" not in lowered:
        found = ", ".join(repr(c[:30]) for c in columns[:8])
        raise AnnotationError(f"{path}:1: CSV needs an 'id' column (found: {found})")
    id_col = lowered.index("id")
    kind_col = lowered.index("kind") if "kind" in lowered else None
    # Column roles worked out once, not per row: (position, value name) and (position, style attribute).
    value_cols = [(i, c) for i, (c, low) in enumerate(zip(columns, lowered))
                  if low not in ("id", "kind") and not low.startswith("style.")]
    style_cols = [(i, c[6:]) for i, (c, low) in enumerate(zip(columns, lowered)) if low.startswith("style.")]
    width = len(columns)
    operators, tensors = _Rows(result.operators), _Rows(result.tensors)
    try:
        for row in reader:
            line = reader.line_num
            if not "".join(row).strip():
                continue
            if len(row) > width:
                raise AnnotationError(f"{path}:{line}: {len(row)} cells but {width} columns in the header")
            entry = Entry(line=line)
            n = len(row)
            for i, name in value_cols:
                if i < n:
                    cell = row[i].strip()
                    if cell:
                        entry.values[name] = cell
            if style_cols:
                style = {name: row[i].strip() for i, name in style_cols if i < n and row[i].strip()}
                if style:
                    entry.style = validate_style(style, f"{path}:{line}")
            kind = row[kind_col].strip().lower() if kind_col is not None and kind_col < len(row) else ""
            ident = row[id_col].strip() if id_col < len(row) else ""
            if kind in ("", "operator", "op", "node"):
                if not ident:
                    raise AnnotationError(f"{path}:{line}: empty id")
                operators.add(ident, entry)
            elif kind in ("tensor", "value", "edge"):
                if not ident:
                    raise AnnotationError(f"{path}:{line}: empty id")
                tensors.add(ident, entry)
            elif kind == "graph":
                result.graph.update(entry)
            else:
                raise AnnotationError(f"{path}:{line}: kind {kind[:30]!r} must be operator, tensor or graph")
    except csv.Error as e:
        raise AnnotationError(f"{path}:{reader.line_num}: invalid CSV ({e})") from None


# -- Netron-proposal text -----------------------------------------------------------------------------------


def _pairs(text: str, where: str) -> dict[str, str]:
    """``"Latency: 13.0 ms; Note: x"`` → {"Latency": "13.0 ms", "Note": "x"}."""
    pairs: dict[str, str] = {}
    for part in text.split(";"):
        if not part.strip():
            continue
        key, sep, value = part.partition(":")
        if not sep or not key.strip():
            raise AnnotationError(f"{where}: expected 'key: value' pairs separated by ';', got {part.strip()[:40]!r}")
        pairs[key.strip()] = value.strip()
    return pairs


def _read_netron_text(path: Path, text: str, result: AnnotationSet) -> None:
    current: Entry | None = None
    current_kind = ""
    operators, tensors = _Rows(result.operators), _Rows(result.tensors)
    for number, raw in enumerate(_lines(text), start=1):
        if not raw.strip() or raw.lstrip().startswith("#"):
            continue
        match = _TEXT_KEY.match(raw)
        where = f"{path}:{number}"
        if not match:
            raise AnnotationError(f"{where}: expected operator_*/tensor_*/graph_* 'key: value', "
                                  f"got {raw.strip()[:40]!r}")
        kind, field, value = match.group(1), match.group(2), match.group(3).strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        if kind == "graph":
            if field == "title":
                result.graph.values["title"] = value
            elif field == "meta":
                result.graph.values.update(_pairs(value, where))
            elif field == "style":
                result.graph.style.update(validate_style(_pairs(value, where), where))
            continue
        if field == "id":
            current, current_kind = Entry(line=number), kind
            current = (operators if kind == "operator" else tensors).add(value, current)
            continue
        if current is None or kind != current_kind:
            raise AnnotationError(f"{where}: {kind}_{field} before any {kind}_id")
        if field == "meta":
            current.values.update(_pairs(value, where))
        elif field == "style":
            current.style.update(validate_style(_pairs(value, where), where))
        else:
            raise AnnotationError(f"{where}: {kind}_{field} is not a known key")
