"""OpenVINO's execution graph: the graph a compiled model ran (``benchmark_app -exec_graph_path exec.xml``, or
``openvino.serialize(compiled_model.get_runtime_model(), "exec.xml")`` after inference with ``PERF_COUNT``),
read as a model of what ran (``loaders.openvino.build``): one box per primitive, its type the plugin's layer type
(``Convolution``, ``FullyConnected``, ``Reorder``, ``Subgraph``…), ``originalLayersNames``, ``primitiveType`` and
``runtimePrecision`` as attributes, ``execTimeMcs`` kept as stored text that ``annotations.embedded`` reads as
the ``exec_time_us`` annotation (the default colour). MACs from ``metrics/openvino_ops.py``.

Found by content: a ``<net>`` whose first layers carry ``execTimeMcs``. Loading is the IR loader's: what the
file holds decides which of the two it is.
"""

from __future__ import annotations

from renderer.loaders.openvino.build import EXEC
from renderer.loaders.openvino.loader import EXECUTED, NET, load, pinnable

FORMAT = EXEC
EXTENSIONS: tuple[str, ...] = ()
"""None: ``.xml`` is the IR's; an execution graph is found by its content."""

__all__ = ["EXTENSIONS", "FORMAT", "load", "match", "pinnable"]


def match(head: bytes) -> bool:
    return NET.match(head) is not None and EXECUTED.search(head) is not None
