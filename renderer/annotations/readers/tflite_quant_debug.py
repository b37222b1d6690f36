"""TFLite QuantizationDebugger layer statistics (``QuantizationDebugger.layer_statistics_dump(file)``).

Header ``op_name,tensor_idx,<metric columns…>,scale,zero_point,tensor_name``: one row per quantized operator
output, with the debugger's metrics (``num_elements``, ``stddev``, ``mean_error``, ``max_abs_error``,
``mean_squared_error`` by default, then any ``layer_direct_compare_metrics``) averaged over the debug dataset.

``tensor_idx`` numbers tensors of the *debug* model (the one with NumericVerify ops), not of the deployed
model, so rows are matched by ``tensor_name`` to the operator producing that tensor in subgraph 0, and the op
type must agree with ``op_name``. Names that do not match as written are tried two more ways: the debugger
strips one trailing digit from the names it reads in its debug model, so a row can name ``X`` where the
deployed model has ``X`` plus a digit (``StatefulPartitionedCall_1:0`` for the int8 SOFTMAX output
``StatefulPartitionedCall_1:01``, whose plain name belongs to the final DEQUANTIZE); and converter names may be
``;``-joined fused names, matched part by part. The row's values go on the operator
and on its output tensor; the file is streamed.

TensorFlow's debugger guide ranks layers by ``sqrt(mean_squared_error) / scale``, the error in quantization
steps, which compares layers whose outputs have different ranges; rows with both columns get it as
``rmse_per_scale``, and it is the main metric (the colour without ``--color-by``). Without a scale column the
main metric is ``mean_squared_error``: ``max_abs_error`` is one outlier, ``mean_error`` cancels out,
``stddev`` ignores bias.
"""

from __future__ import annotations

import math
from contextlib import closing
from pathlib import Path

from renderer.annotations.lookup import csv_rows, node_ref, number, value_ref
from renderer.core.errors import AnnotationError
from renderer.core.ir import Model, Node, Value
from renderer.core.records import AnnotationSet, Entry, MetricInfo

NAME = "tflite-debugger"
DESCRIPTION = "TFLite QuantizationDebugger layer statistics CSV (op_name,tensor_idx,…,tensor_name)"

_ERRORS = {
    "mean_error": "mean of (float − dequantized) over the layer's output (QuantizationDebugger)",
    "max_abs_error": "largest |float − dequantized| in the layer's output (QuantizationDebugger)",
    "mean_squared_error": "mean squared quantization error of the layer's output (QuantizationDebugger)",
    "mean_abs_error": "mean |float − dequantized| of the layer's output (QuantizationDebugger)",
    "stddev": "standard deviation of the quantization error (QuantizationDebugger)",
    "rmse_per_scale": "sqrt(mean_squared_error) / scale: the layer's RMS error in quantization steps",
}
RMSE_PER_SCALE = "rmse_per_scale"


def _rmse_per_scale(values: dict[str, object]) -> float | None:
    mse, scale = values.get("mean_squared_error"), values.get("scale")
    if not isinstance(mse, (int, float)) or not isinstance(scale, (int, float)):
        return None
    if not (math.isfinite(mse) and math.isfinite(scale)) or mse < 0 or scale <= 0:
        return None
    return math.sqrt(mse) / scale


def match(path: Path, head: str) -> bool:
    first = head.lstrip("\ufeff").split("\n", 1)[0].strip()
    return first.startswith("op_name,tensor_idx,") and first.endswith("tensor_name")


class _Tensors:
    """Tensor names of subgraph 0 → values, whole and by ``;``-separated part."""

    def __init__(self, model: Model) -> None:
        graph = model.graphs[0] if model.graphs else None
        self.by_name: dict[str, list[Value]] = {}
        self.by_part: dict[str, list[Value]] = {}
        for value in graph.values if graph else []:
            if not value.name or value.producer is None:
                continue
            self.by_name.setdefault(value.name, []).append(value)
            for part in value.name.split(";"):
                if part:
                    self.by_part.setdefault(part, []).append(value)

    def find(self, name: str, op_name: str) -> Node | None:
        def agreeing(values: list[Value]) -> list[Node]:
            found: list[Node] = []
            for v in values:
                if v.producer is not None and v.producer.op_type == op_name and v.producer not in found:
                    found.append(v.producer)
            return found

        for candidates in (
            self.by_name.get(name, []),
            [v for d in "0123456789" for v in self.by_name.get(name + d, [])],
            [v for part in name.split(";") if part for v in self.by_part.get(part, [])],
        ):
            nodes = agreeing(candidates)
            if len(nodes) == 1:
                return nodes[0]
        return None


def read(path: Path, model: Model) -> AnnotationSet:
    result = AnnotationSet(source=NAME, path=str(path))
    tensors = _Tensors(model)
    with closing(csv_rows(path, result.notes)) as rows:  # closes the file when a check below fails
        _, columns = next(rows)
        if columns[:2] != ["op_name", "tensor_idx"] or columns[-1] != "tensor_name":
            raise AnnotationError(f"{path}:1: expected a header op_name,tensor_idx,…,tensor_name")
        metric_columns = columns[2:-1]
        for line, row in rows:
            op_name, tensor_name = row[0].strip(), row[-1].strip()
            node = tensors.find(row[-1], row[0]) or tensors.find(tensor_name, op_name)  # as written first
            if node is None:
                result.unmatched.append(f"{op_name} {tensor_name}")
                continue
            entry = Entry(line=line)
            debug_index = number(row[1])
            if debug_index is not None:
                entry.values["debug_tensor_idx"] = debug_index
            for column, cell in zip(metric_columns, row[2:-1]):
                value = number(cell)
                if value is not None:
                    entry.values[column] = value
                elif cell.strip():
                    entry.values[column] = cell.strip()
            steps = _rmse_per_scale(entry.values)
            if steps is not None:
                entry.values[RMSE_PER_SCALE] = steps
            result.operators.append((node_ref(node), entry))
            if node.outputs:
                result.tensors.append((value_ref(node.outputs[0]), Entry(dict(entry.values), line=line)))
    stepped = "mean_squared_error" in metric_columns and "scale" in metric_columns
    main = RMSE_PER_SCALE if stepped else "mean_squared_error"
    for column in columns[2:-1] + ([RMSE_PER_SCALE] if stepped else []):
        if column in ("scale", "zero_point"):
            continue
        lower = column in _ERRORS or "error" in column
        result.metrics[column] = MetricInfo(
            column,
            NAME,
            "",
            False if lower else None,
            _ERRORS.get(column, f"{column} (QuantizationDebugger)"),
            main=column == main,
        )
    return result


