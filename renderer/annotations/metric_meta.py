"""The ``metrics`` section an annotation file may carry: what is known of each metric besides its values.

::

    metrics:
      sqnr_db: {unit: dB, higher_is_better: true, description: "signal-to-quantization-noise ratio"}
      latency_us: {unit: µs, higher_is_better: false}

``higher_is_better: true`` reverses the default colour map (red where the value is low) and is said in the
legend. Read by the generic format and by annotations embedded in a model.
"""

from __future__ import annotations

from typing import Any

from renderer.core.errors import AnnotationError
from renderer.core.records import MetricInfo

UNIT_CHARS = 20
DESCRIPTION_CHARS = 300


def read_metric_infos(section: Any, source: str, where: str, strict: bool = True) -> dict[str, MetricInfo]:
    """``section`` (name → {unit, higher_is_better, description}) as MetricInfo by name.

    With ``strict``, a section or entry of the wrong type is an AnnotationError naming ``where``; otherwise such
    entries are skipped.
    """
    if section is None:
        return {}
    if not isinstance(section, dict):
        if strict:
            raise AnnotationError(f"{where}: 'metrics' must be a mapping of metric name to its description")
        return {}
    infos: dict[str, MetricInfo] = {}
    for name, body in section.items():
        if name == "line":  # the YAML reader's line numbers
            continue
        if not isinstance(name, str) or not isinstance(body, dict):
            if strict:
                raise AnnotationError(f"{where}: metrics[{str(name)[:40]!r}] must be a mapping "
                                      "(unit, higher_is_better, description)")
            continue
        better = body.get("higher_is_better")
        if strict and better is not None and not isinstance(better, bool):
            raise AnnotationError(f"{where}: metrics[{name[:40]!r}].higher_is_better must be true or false")
        infos[name] = MetricInfo(
            name, source, str(body.get("unit") or "")[:UNIT_CHARS],
            better if isinstance(better, bool) else None, str(body.get("description") or "")[:DESCRIPTION_CHARS],
        )
    return infos


def describe(info: MetricInfo) -> dict[str, Any]:
    """The ``metrics`` section entry for ``info``: its unit, direction and description where known."""
    return {k: v for k, v in (("unit", info.unit), ("higher_is_better", info.higher_is_better),
                              ("description", info.description)) if v not in ("", None)}
