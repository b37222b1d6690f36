"""The pull-request summary (``--summary FILE.md``, ``-o FILE.md``): the model, its totals, the top operators by
the colour metric, the annotation coverage, and links to the pictures written in the same run.

It is meant to be posted as a comment, so its size is bounded whatever the model: at most
``options.SUMMARY_MAX_TOP_K`` rows, ``MAX_COVERAGE`` coverage lines and ``MAX_META`` graph values, every name cut
(see ``LIMITS``). Every text from the model, the annotations or the command line goes through
``escape.markdown_code`` (a code span: no markup, link, mention or issue reference can come out of it) or
``escape.markdown_link``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from renderer.colour.aggregate import rule_for
from renderer.colour.heatmap import number_of
from renderer.core import escape
from renderer.core.errors import UsageError
from renderer.core.numbers import format_number, percent
from renderer.core.options import SUMMARY_MAX_TOP_K
from renderer.picture.scene import Scene

MAX_COVERAGE = 10
MAX_META = 8


@dataclass(frozen=True)
class Limits:
    """Characters kept of each kind of text before escaping."""

    title: int = 120
    name: int = 80
    op_type: int = 40
    metric: int = 60
    meta_key: int = 40
    meta_value: int = 120
    coverage: int = 300
    path: int = 160


LIMITS = Limits()
_FORMAT_NAMES = {"onnx": "ONNX", "tflite": "TFLite", "executorch": "ExecuTorch", "torch": "torch.export",
                 "tensorrt": "TensorRT engine", "openvino": "OpenVINO IR", "openvino-exec": "OpenVINO execution graph"}


def check_link_base(base: str | None) -> None:
    """UsageError unless ``base`` is None or an http(s) URL of printable characters without spaces."""
    if base is None:
        return
    if not base.lower().startswith(("http://", "https://")) or not base.isprintable() or any(c.isspace() for c in base):
        raise UsageError(f"--summary-link-base {escape.clean(base, 120)!r}: use an http:// or https:// URL "
                          "without spaces")


def check_summary_name(name: str | None) -> None:
    """UsageError unless ``name`` (``--summary``'s file) is None or names a ``.md`` file: render and diff write
    nothing else there, so a typo cannot replace a file of another kind."""
    if name is not None and Path(name).suffix.lower() != ".md":
        raise UsageError(f"--summary {name}: name a .md file")


def check_top_k(k: int) -> None:
    if not 0 <= k <= SUMMARY_MAX_TOP_K:
        raise UsageError(f"--summary-rows {k}: use 0 to {SUMMARY_MAX_TOP_K} (the summary is meant for a pull-request "
                          "comment)")


def view(scene: Scene, pictures: list[str]) -> dict[str, Any]:
    """The template's values, every text already escaped for Markdown; ``pictures`` are paths relative to the
    summary."""
    model, annotations, heat, opts = scene.model, scene.annotations, scene.heatmap, scene.options
    check_top_k(opts.summary_top_k)
    check_link_base(opts.summary_link_base)
    code = escape.markdown_code
    file_name = model.path.replace("\\", "/").rsplit("/", 1)[-1]
    graph_values = dict(annotations.graph.values)
    title = opts.title or graph_values.pop("title", None) or file_name
    operators = sum(len(g.nodes) for g in model.graphs)
    folded = len(scene.folding.hidden)
    totals = [(escape.markdown_cell(k), escape.markdown_cell(v)) for k, v in scene.totals.items() if k != "operators"]
    top: dict[str, Any] | None = None
    if heat is not None:
        top = _top(scene)
        if top["total"] is not None:
            totals.append((f"{code(heat.metric, LIMITS.metric, cell=True)} (sum)", top["total"]))
    meta = [(code(k, LIMITS.meta_key, cell=True), code(v, LIMITS.meta_value, cell=True))
            for k, v in list(graph_values.items())[:MAX_META]]
    lines = [c.line() for c in annotations.coverage if c.total_ops or c.matched_tensors or c.unmatched]
    return {
        "title": code(title, LIMITS.title),
        "file": code(file_name, LIMITS.path),
        "format": _FORMAT_NAMES.get(model.format, escape.markdown_cell(model.format)),
        "producer": code(model.producer, LIMITS.meta_value),
        "operators": f"{operators:,}",
        "drawn": f"{operators - folded:,}",
        "folded": f"{folded:,}",
        "totals": totals,
        "meta": meta,
        "meta_more": max(0, len(graph_values) - MAX_META),
        "top": top,
        "coverage": [code(line, LIMITS.coverage) for line in lines[:MAX_COVERAGE]],
        "coverage_more": max(0, len(lines) - MAX_COVERAGE),
        "pictures": [escape.markdown_link(path, path, opts.summary_link_base, LIMITS.path) for path in pictures],
    }


def _top(scene: Scene) -> dict[str, Any]:
    """The colour metric's ranking over every operator with a value (folded ones too: their cost is real),
    worst first: highest, or lowest for a higher-is-better metric."""
    heat, model, folding = scene.heatmap, scene.model, scene.folding
    assert heat is not None
    values = {key: number for key, entry in scene.annotations.ops.items()
              if (number := number_of(entry.values.get(heat.metric))) is not None}
    summed = rule_for(heat.metric, heat.info) == "sum"
    finite = [v for v in values.values() if math.isfinite(v)]
    total = math.fsum(finite) if summed and finite else None
    lowest_first = heat.info.higher_is_better is True
    ranked = sorted(values.items(), key=lambda item: ((item[1] if lowest_first else -item[1]), item[0]))
    code = escape.markdown_code
    unit = f" ({code(heat.info.unit, 20)})" if heat.info.unit else ""
    unit_cell = f" ({code(heat.info.unit, 20, cell=True)})" if heat.info.unit else ""
    rows = []
    same = len(set(values.values())) == 1
    for rank, (key, value) in enumerate([] if same else ranked[: scene.options.summary_top_k], 1):
        _, graph, index = key
        node = model.graphs[graph].nodes[index]
        share = ""
        if total and math.isfinite(value):
            share = percent(100 * value / total)
        rows.append({
            "rank": rank,
            "name": code(node.display_name, LIMITS.name, cell=True),
            "type": code(node.op_type, LIMITS.op_type, cell=True) + (" (folded)" if key in folding.hidden else ""),
            "value": format_number(value),
            "share": share,
        })
    return {
        "metric": code(heat.metric, LIMITS.metric),
        "metric_cell": code(heat.metric, LIMITS.metric, cell=True),
        "unit": unit,
        "lowest_first": lowest_first,
        "total": f"{format_number(total)}{unit_cell}" if total is not None else None,
        "shares": total is not None and total > 0,
        "rows": rows,
        "same": format_number(next(iter(values.values()))) if same else None,
        "valued": len(values),
        "missing": sum(len(g.nodes) for g in model.graphs) - len(values),
    }
