"""An OpenVINO IR: the ``.xml`` ``openvino.save_model`` (or ``ovc``) writes, with its weights in the ``.bin``
beside it, read as a model (``build``: layers as operators with their ``<data>`` and opset, ports as typed
tensors joined by ``<edges>``, ``Const`` data from the ``.bin``; MACs from ``metrics/openvino_ops.py``).

Found by content: an XML document whose root is ``<net>``; one whose first layers carry ``execTimeMcs`` is an
execution graph (``loaders.openvino_exec``), and a file only further in shows to be one is read as one too.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from renderer.core import ir
from renderer.loaders.openvino.build import IR, load_net

FORMAT = IR
EXTENSIONS: tuple[str, ...] = (".xml",)
NET = re.compile(rb"\A(?:\xef\xbb\xbf)?\s*(?:<\?xml[^>]{0,200}\?>\s*)?(?:<!--.{0,1000}?-->\s*)*<net[\s>]", re.DOTALL)
EXECUTED = re.compile(rb"\sexecTimeMcs\s*=")


def match(head: bytes) -> bool:
    return NET.match(head) is not None and EXECUTED.search(head) is None


def pinnable(path: Path) -> list[str]:
    """An IR's free input dims (``input.axisN``, and ``batch`` for its batch dims; ``loaders.openvino.dims``); an
    execution graph's shapes are fixed: nothing."""
    from renderer.loaders.openvino import dims
    from renderer.loaders.openvino.build import is_execution_graph, read

    net = read(path)
    return [] if is_execution_graph(net) else dims.pinnable(dims.slots(net))


def load(path: Path, dims: dict[str, int] | None = None, check_dims: bool = True, shape_run: bool = True,
         values: Any = None, assume: bool = True) -> ir.Model:
    model = load_net(path, dims, check_dims, shape_run, assume)
    if values is not None and (values.inputs is not None or values.profiles):
        model.notes.append(f"{path}: an OpenVINO graph's shapes come from its dims and --dim; --inputs and "
                           "profiles give it none")
    return model
