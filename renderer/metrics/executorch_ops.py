"""ExecuTorch kernels → the torch.export formulas, and which inputs are weights.

An ExecuTorch program's kernels are ATen operators (their out variants, and the edge dialect's ``_copy`` views), so
they are counted by the one ATen table, ``renderer/data/torch-ops.json`` (``data.operators.TABLE_OF``), and the
formulas of ``metrics.torch_ops``: a program and the torch.export program it was lowered from have the same MACs
kernel by kernel. Input slots are the schema's argument positions (``loaders.executorch``). A delegate call runs a
backend's own graph: its operators are not counted (the box lists them).
"""

from __future__ import annotations

from renderer.metrics import torch_ops
from renderer.metrics.formulas import Cost, NotCountable
from renderer.metrics.opview import Op

FORMAT = "executorch"


def cost(op: Op) -> Cost:
    """MACs of one kernel call; NotCountable with the reason for delegates and kernels without a formula."""
    if op.node.domain == "delegate":
        raise NotCountable(f"a {op.type} delegate runs its own graph (its operators are listed in the box)")
    return torch_ops.cost(op)


def weight_slots(op: Op) -> tuple[tuple[int, None], ...]:
    """None of a delegate call's inputs (its weights are inside the blob); a kernel's as the ATen table says."""
    return () if op.node.domain == "delegate" else torch_ops.weight_slots(op)


quantization_slots = torch_ops.quantization_slots
attribute_weights = torch_ops.attribute_weights
