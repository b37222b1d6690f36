"""onnx-tool's per-node profile CSV (``Graph.print_node_map(path)`` after ``shape_infer()`` and ``profile()``).

Header ``Name,Type,Forward_MACs,FPercent,Memory,MPercent,Params,PPercent,InShape,OutShape`` (more columns when
sparsity is profiled); one row per node of the main graph and a last ``Total`` row. Percentages end in ``%``.

Names: onnx-tool keeps node names and calls an unnamed node ``<OpType>_<position in the node list>`` (Constant
nodes count, unlike ONNX Runtime's numbering); such names are mapped only when the op type agrees. Every
numeric column becomes a metric under its own name; the Total row becomes graph values ``total_<column>``.
The file is streamed.
"""

from __future__ import annotations

import re
from contextlib import closing
from pathlib import Path

from renderer.annotations.lookup import csv_rows, node_ref, number
from renderer.core.errors import AnnotationError
from renderer.core.id_rules import IdIndex
from renderer.core.ir import Model, Node
from renderer.core.records import AnnotationSet, Entry, MetricInfo

NAME = "onnx-tool"
DESCRIPTION = "onnx-tool profile CSV (Name,Type,Forward_MACs,…,Params,…)"

_UNNAMED = re.compile(r"^(?P<op>[A-Za-z][A-Za-z0-9]*)_(?P<index>\d+)$")
_TEXT_COLUMNS = {"InShape", "OutShape"}
_INFO = {
    "Forward_MACs": ("MACs", "multiply-accumulates of one forward pass (onnx-tool)"),
    "Memory": ("B", "bytes of the node's outputs and weights (onnx-tool)"),
    "Params": ("", "weight elements (onnx-tool)"),
    "FPercent": ("%", "share of the model's MACs (onnx-tool)"),
    "MPercent": ("%", "share of the model's memory (onnx-tool)"),
    "PPercent": ("%", "share of the model's parameters (onnx-tool)"),
}


def match(path: Path, head: str) -> bool:
    first = head.lstrip("\ufeff").split("\n", 1)[0].strip()
    return first.startswith("Name,Type,Forward_MACs")


def read(path: Path, model: Model) -> AnnotationSet:
    result = AnnotationSet(source=NAME, path=str(path))
    lookup = IdIndex.build(model)
    main = model.graphs[0].nodes if model.graphs else []
    with closing(csv_rows(path, result.notes)) as rows:  # closes the file when a check below fails
        _, columns = next(rows)
        if columns[:2] != ["Name", "Type"]:
            got = ",".join(columns[:3])[:60]
            raise AnnotationError(f"{path}:1: expected an onnx-tool header starting Name,Type (got {got})")
        for line, row in rows:
            name, op_type = row[0].strip(), row[1].strip()
            is_total = name == "Total" and op_type == "_"
            node = None
            if not is_total:  # the name as written first: a node name may begin or end with spaces
                node = _find(lookup, main, row[0], row[1]) or _find(lookup, main, name, op_type)
            if node is None and not is_total:
                result.unmatched.append(name or f"(row {line})")
                continue
            entry = Entry(line=line)
            for column, cell in zip(columns[2:], row[2:]):
                cell = cell.strip()
                if not cell or cell == "_":
                    continue
                value = number(cell) if column not in _TEXT_COLUMNS else None
                entry.values[column] = value if value is not None else cell
            if node is None:
                result.graph.values.update({f"total_{k}": v for k, v in entry.values.items()})
            else:
                result.operators.append((node_ref(node), entry))
    for column in columns[2:]:
        unit, text = _INFO.get(column, ("%" if column.endswith("Percent") else "", f"{column} (onnx-tool)"))
        result.metrics[column] = MetricInfo(column, NAME, unit, None, text)
    return result


def _find(lookup: IdIndex, main: list[Node], name: str, op_type: str) -> Node | None:
    node = lookup.node(name, graph=0) or lookup.node(name)
    if node is not None:
        return node
    unnamed = _UNNAMED.match(name)
    if unnamed:
        index = int(unnamed.group("index"))
        if (
            index < len(main)
            and not main[index].name
            and main[index].op_type == unnamed.group("op") == op_type
        ):
            return main[index]
    return None
