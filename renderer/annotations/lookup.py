"""Model lookups the tool readers share: tensor name → producer and consumers, ORT's node numbering.

Readers of tool output (profiles, debugger dumps) know elements by the names and indices *the tool* uses;
these helpers turn them into ``Ref``s once, so every reader applies the same rules.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any

from renderer.annotations.measures import finite_decoder, parse, refused, total
from renderer.core.errors import AnnotationError
from renderer.core.ir import Model, Node, Value
from renderer.core.records import Entry, Ref
from renderer.data.categories import with_role
from renderer.files import inputs

MAX_JSON_BYTES = 1 << 30
"""JSON documents larger than this are refused rather than parsed into memory (1 GiB)."""
TOO_MANY_DIGITS = "an integer of more than 4300 digits"


RECORDS_PER_OPERATOR = 16
MIN_RECORDS = 10_000
"""A tool's file lists at most ``RECORDS_PER_OPERATOR`` layers per operator of the model, and ``MIN_RECORDS`` more
(engines insert reorders and copies, but a TensorRT profile of 10^6 layers for 20 operators is no profile of it)."""


def record_bound(model: Model) -> int:
    """The most layers (records) a tool's file of ``model`` is read with: more are refused as they are reached."""
    return RECORDS_PER_OPERATOR * sum(len(graph.nodes) for graph in model.graphs) + MIN_RECORDS


def node_ref(node: Node) -> Ref:
    return Ref("op", node.graph.index, node.index)


def value_ref(value: Value) -> Ref:
    return Ref("t", value.graph.index, value.index)


def attribute_fused(entries: dict[Node, Entry], nodes: list[Node], times: dict[str, float], layer: str,
                    layer_key: str, where: object) -> None:
    """One engine layer built from ``nodes`` (a fusion, in the tool's order): its ``times`` are added on the first
    node, every node gets the layer's name under ``layer_key``, and the others ``time_on``, the node holding the
    time; so the picture's times add up to the tool's and each fused node says where its time went. A sum past the
    float range is an AnnotationError naming ``where`` (the file, or the layer's place in it)."""
    anchor = entries.setdefault(nodes[0], Entry())
    for key, value in times.items():
        anchor.values[key] = round(total((anchor.values.get(key, 0.0), value), where, key), 9)
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


def load_json(path: Path, finite: bool = False) -> Any:
    """Parse a whole JSON file, with errors (file and line) as AnnotationError; ``finite``: numbers no float holds
    (NaN, Infinity, 1e400) refused too, naming line and column (``measures.finite_decoder``)."""
    data = inputs.read_bytes(path, MAX_JSON_BYTES, AnnotationError, "a JSON document")
    try:
        text = data.decode("utf-8-sig")
        if finite:
            try:
                return finite_decoder().decode(text)
            except json.JSONDecodeError:
                pass  # said by parse_json below, as for any file
            except ValueError as e:
                error = refused(path, text, 0, e)
                if error is not None:
                    raise error from None
        return parse_json(path, text)
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


MAX_LINE_CHARS = 1 << 24
"""Longest line a reader of a tool's text output takes (16 Mi characters): a longer one is refused as soon as
that much of it is read, before it is built (one 2 GiB line under an OpenVINO header took 4.2 GB and 17 s)."""


def physical_lines(path: Path, handle: IO[str], limit: int = MAX_LINE_CHARS) -> Iterator[str]:
    """The lines of ``handle`` with their endings, each read in pieces of at most ``limit`` characters: a line
    longer than that is an AnnotationError naming its number (``LineTooLong``)."""
    number = 0
    while True:
        line = handle.readline(limit + 1)
        if not line:
            return
        number += 1
        if len(line) > limit and not line.endswith(("\n", "\r")):
            raise LineTooLong(f"{path}:{number}: a line of more than {limit:,} characters, longer than any a tool "
                              "writes; not read further", number)
        yield line


class LineTooLong(AnnotationError):
    """A line past ``MAX_LINE_CHARS`` (a reader may then read the file another way, whole)."""

    def __init__(self, message: str, line: int) -> None:
        super().__init__(message)
        self.line = line


def numbered_lines(path: Path, handle: IO[str]) -> Iterator[tuple[int, str]]:
    """(line number, line without the newline), each bounded by ``MAX_LINE_CHARS``, turning decoding errors into
    AnnotationError."""
    number = 0
    try:
        for number, line in enumerate(physical_lines(path, handle), start=1):
            yield number, line.rstrip("\r\n")
    except UnicodeDecodeError:
        raise AnnotationError(f"{path}:{number + 1}: not UTF-8 text") from None


def json_items(path: Path, bound: int) -> Iterator[tuple[int, Any]]:
    """The items of the JSON array in ``path`` with the line each starts on, decoded one at a time as the file is
    read in chunks (``measures.finite_decoder``: finite numbers only): memory holds one item, never the document.
    More than ``bound`` items, an item longer than ``MAX_LINE_CHARS`` and malformed JSON are AnnotationErrors
    naming the line."""
    return _JsonItems(path).items(bound)


class _JsonItems:
    """The state of ``json_items``: the text read and not yet decoded, and the lines before it."""

    def __init__(self, path: Path) -> None:
        self.path, self.buffer, self.at, self.lines = path, "", 0, 0
        self.mark = self.marked = 0  # newlines counted in the buffer up to ``mark``: lines are counted once
        self.handle = open_text(path)
        self.ended = False
        self.decoder = finite_decoder()

    def _more(self, drop: bool = True) -> bool:
        if self.ended:
            return False
        if drop and self.at > inputs.CHUNK:  # drop what was decoded
            self.lines = self._line(self.at) - 1
            self.buffer, self.at, self.mark, self.marked = self.buffer[self.at:], 0, 0, 0
        try:
            chunk = self.handle.read(inputs.CHUNK)
        except UnicodeDecodeError:
            raise AnnotationError(f"{self.path}:{self._line(len(self.buffer))}: not UTF-8 text") from None
        self.ended = not chunk
        self.buffer += chunk
        return bool(chunk)

    def _line(self, at: int) -> int:
        if at < self.mark:
            self.mark = self.marked = 0
        self.marked += self.buffer.count("\n", self.mark, at)
        self.mark = at
        return self.lines + self.marked + 1

    def _next_char(self) -> str:
        """The next character that is not white space (consumed), "" at the end of the file."""
        while True:
            while self.at < len(self.buffer) and self.buffer[self.at] in " \t\r\n":
                self.at += 1
            if self.at < len(self.buffer):
                self.at += 1
                return self.buffer[self.at - 1]
            if not self._more():
                return ""

    def _item(self) -> Any:
        start = self.at
        while True:
            try:
                item, end = self.decoder.raw_decode(self.buffer, self.at)
                if end < len(self.buffer) or not self._more(drop=False):  # an item ending at the chunk's end may go on
                    self.at = end
                    return item
            except json.JSONDecodeError as e:
                if len(self.buffer) - start > MAX_LINE_CHARS:
                    raise AnnotationError(f"{self.path}:{self._line(start)}: an entry of more than "
                                          f"{MAX_LINE_CHARS:,} characters, longer than any a tool writes") from None
                if not self._more(drop=False):
                    raise AnnotationError(f"{self.path}:{self._line(e.pos)}: invalid JSON ({e.msg})") from None
            except RecursionError:
                raise AnnotationError(f"{self.path}:{self._line(start)}: invalid JSON (nested too deeply)") from None
            except ValueError as e:
                raise refused(self.path, self.buffer, start, e, self.lines) or AnnotationError(
                    f"{self.path}:{self._line(start)}: invalid JSON ({TOO_MANY_DIGITS})") from None

    def items(self, bound: int) -> Iterator[tuple[int, Any]]:
        with self.handle:
            if self._next_char() != "[":
                raise AnnotationError(f"{self.path}: not a JSON array")
            char, count = self._next_char(), 0
            while char != "]":
                if not char:
                    raise AnnotationError(f"{self.path}:{self._line(self.at)}: invalid JSON (the array does not end)")
                if count >= bound:
                    raise AnnotationError(f"{self.path}:{self._line(self.at)}: more than {bound:,} entries, far more "
                                          "than a tool writes for this model")
                self.at -= 1  # the item's first character
                yield self._line(self.at), self._item()
                count += 1
                char = self._next_char()
                if char == ",":
                    char = self._next_char()
                    if char == "]":
                        raise AnnotationError(f"{self.path}:{self._line(self.at)}: invalid JSON (a ',' before ']')")
                elif char != "]":
                    raise AnnotationError(f"{self.path}:{self._line(self.at)}: invalid JSON (',' or ']' expected)")
            if self._next_char():
                raise AnnotationError(f"{self.path}:{self._line(self.at)}: invalid JSON (extra data after the array)")


def number(text: str) -> float | int | None:
    """``"12"`` → 12, ``"1.5"`` / ``"2.3%"`` / ``"1e-3"`` → float; None when not a finite number in float range
    (``measures.parse``; readers that must refuse such a cell use ``measures.measure``)."""
    try:
        return parse(text)
    except ValueError:
        return None


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
        reader = csv.reader(bounded_lines(physical_lines(path, handle), path, notes))
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
