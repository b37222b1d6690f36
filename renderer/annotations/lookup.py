"""Model lookups the tool readers share: tensor name → producer and consumers, ORT's node numbering.

Readers of tool output (profiles, debugger dumps) know elements by the names and indices *the tool* uses;
these helpers turn them into ``Ref``s once, so every reader applies the same rules.
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any

from .. import inputs
from ..data.categories import with_role
from ..errors import AnnotationError
from ..ir import Model, Node, Value
from ..records import Entry, Ref

MAX_JSON_BYTES = 1 << 30
"""JSON documents larger than this are refused rather than parsed into memory (1 GiB)."""
TOO_MANY_DIGITS = "an integer of more than 4300 digits"


def node_ref(node: Node) -> Ref:
    return Ref("op", node.graph.index, node.index)


def value_ref(value: Value) -> Ref:
    return Ref("t", value.graph.index, value.index)


def attribute_fused(entries: dict[Node, Entry], nodes: list[Node], times: dict[str, float], layer: str,
                    layer_key: str) -> None:
    """One engine layer built from ``nodes`` (a fusion, in the tool's order): its ``times`` are added on the first
    node, every node gets the layer's name under ``layer_key``, and the others ``time_on``, the node holding the
    time; so the picture's times add up to the tool's and each fused node says where its time went."""
    anchor = entries.setdefault(nodes[0], Entry())
    for key, value in times.items():
        anchor.values[key] = round(anchor.values.get(key, 0.0) + value, 9)
    for node in nodes:
        entry = entries.setdefault(node, Entry())
        previous = entry.values.get(layer_key)
        entry.values[layer_key] = (f"{previous}; {layer}" if previous else layer)[:300]
        if node is not nodes[0]:
            entry.values["time_on"] = nodes[0].name or f"{nodes[0].op_type} {nodes[0].graph.index}:{nodes[0].index}"


def ort_node_indices(model: Model) -> dict[int, dict[int, Node]]:
    """ONNX Runtime's node index for every operator, per graph: ``{S: {ort index: node}}``.

    ORT turns ``Constant`` nodes into initializers when it loads a graph, before numbering the nodes, so its
    index is the position among the graph's non-Constant nodes (checked against real profiles in the tests).
    Nodes that ORT's optimizers add later get indices past the end; they have no counterpart in the file.
    """
    result: dict[int, dict[int, Node]] = {}
    for graph in model.graphs:
        table: dict[int, Node] = {}
        position = 0
        for node in graph.nodes:
            if node.op_type in with_role("onnx", "ort_initializer") and node.domain in ("", "ai.onnx"):
                continue
            table[position] = node
            position += 1
        result[graph.index] = table
    return result


def load_json(path: Path) -> Any:
    """Parse a whole JSON file, with errors (file and line) as AnnotationError."""
    data = inputs.read_bytes(path, MAX_JSON_BYTES, AnnotationError, "a JSON document")
    try:
        return parse_json(path, data.decode("utf-8-sig"))
    except UnicodeDecodeError:
        raise AnnotationError(f"{path}: not UTF-8 text") from None
    except OSError as e:
        raise AnnotationError(f"{path}: cannot read ({e.strerror})") from None


def parse_json(path: Path, text: str) -> Any:
    """The JSON document ``text`` read from ``path``, with errors (file and line) as AnnotationError."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise AnnotationError(f"{path}:{e.lineno}: invalid JSON ({e.msg})") from None
    except RecursionError:
        raise AnnotationError(f"{path}: invalid JSON (nested too deeply)") from None
    except ValueError:  # Python refuses integers of more than 4300 digits (sys.get_int_max_str_digits)
        raise AnnotationError(f"{path}: invalid JSON ({TOO_MANY_DIGITS})") from None


def open_text(path: Path) -> IO[str]:
    """The file opened for streaming text reads (UTF-8, BOM skipped), or an AnnotationError naming it."""
    return inputs.open_text(path, AnnotationError, "an annotation file")


def numbered_lines(path: Path, handle: IO[str]) -> Iterator[tuple[int, str]]:
    """(line number, line without the newline), turning decoding errors into AnnotationError."""
    number = 0
    try:
        for number, line in enumerate(handle, start=1):
            yield number, line.rstrip("\r\n")
    except UnicodeDecodeError:
        raise AnnotationError(f"{path}:{number + 1}: not UTF-8 text") from None


def number(text: str) -> float | int | None:
    """``"12"`` → 12, ``"1.5"`` / ``"2.3%"`` / ``"1e-3"`` → float; None when not a finite number."""
    text = text.strip().removesuffix("%").strip()
    if not text:
        return None
    try:
        return int(text)
    except ValueError:
        pass
    try:
        result = float(text)
    except ValueError:
        return None
    return result if math.isfinite(result) else None


MAX_COLUMNS = 10_000
"""Cells kept per CSV row: a 50 MB one-line header (25M columns) took 44 s and 4.9 GB before any row was read."""


def bounded_lines(lines: Iterable[str], path: Path, notes: list[str], delimiter: str = ",") -> Iterator[str]:
    """``lines`` for ``csv.reader``, each cut after its MAX_COLUMNS-th cell, before csv makes millions of cells
    of it; the first cut adds one line to ``notes``. (Cells are counted by delimiters, so a delimiter inside
    quotes counts too: the cut may come a little early, never late.)"""
    for line in lines:
        if line.count(delimiter) >= MAX_COLUMNS:
            end = -1
            for _ in range(MAX_COLUMNS):
                end = line.find(delimiter, end + 1)
            line = line[:end] + line[len(line.rstrip("\r\n")):]
            if not notes:
                notes.append(f"{path}: rows with more than {MAX_COLUMNS} columns are cut to their first {MAX_COLUMNS}")
        yield line


def column_names(cells: list[str]) -> list[str]:
    """A CSV header's cells as column names: stripped (a BOM too), a repeated name numbered.

    >>> column_names(["Name", " Network%", "Network%"])
    ['Name', 'Network%', 'Network%_2']
    """
    seen: dict[str, int] = {}
    columns = []
    for raw in cells:
        name = raw.strip().lstrip("\ufeff")
        seen[name] = seen.get(name, 0) + 1
        columns.append(name if seen[name] == 1 else f"{name}_{seen[name]}")
    return columns


def csv_rows(path: Path, notes: list[str]) -> Iterator[tuple[int, list[str]]]:
    """A tool's CSV file, streamed, as (line number, cells): first the header (line 1) as column names (cells
    stripped, BOM too, repeated names numbered: ``a, a`` → ``a, a_2``), then each row that is not blank, which
    must have as many cells as the header. An empty file, a row of another length, malformed CSV and text that
    is not UTF-8 are an AnnotationError naming the line; rows cut at MAX_COLUMNS add a line to ``notes``."""
    with open_text(path) as handle:
        reader = csv.reader(bounded_lines(handle, path, notes))
        try:
            header = next(reader, None)
            if header is None:
                raise AnnotationError(f"{path}: empty file")
            columns = column_names(header)
            yield 1, columns
            for row in reader:
                if not any(cell.strip() for cell in row):
                    continue
                if len(row) != len(columns):
                    raise AnnotationError(f"{path}:{reader.line_num}: {len(row)} cells but {len(columns)} columns "
                                          "in the header")
                yield reader.line_num, row
        except csv.Error as e:
            raise AnnotationError(f"{path}:{reader.line_num}: invalid CSV ({e})") from None
        except UnicodeDecodeError:
            raise AnnotationError(f"{path}:{reader.line_num + 1}: not UTF-8 text") from None
