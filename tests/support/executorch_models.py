"""Make ExecuTorch artefacts with executorch itself; run in the executorch venv (``scripts/test`` makes
``.venv-executorch``; the tests find its python in ``ANNOGRAPH_EXECUTORCH_PYTHON``):

    python tests/support/executorch_models.py OUT_DIR [NAME ...]

Models: ``portable`` and ``xnnpack`` (a conv-relu-linear-topk net, the second lowered to XNNPACK), ``layers``
(``torch_models.module("layers")``, portable kernels). For each model NAME it writes ``NAME.pte``
(``to_edge(torch.export.export(m, ex)).to_executorch()``, or ``to_edge_transform_and_lower`` with the XNNPACK
partitioner), ``NAME.etrecord`` (``generate_etrecord``), ``NAME.etdp`` (the pybindings runtime with
``enable_etdump=True``, ``RUNS`` runs) and ``NAME.inspector.json``: the devtools Inspector's ``to_dataframe()`` rows
(the reference the tests compare with). The committed fixtures ``tests/fixtures/executorch/`` were made by this
script (``python tests/support/executorch_models.py tests/fixtures/executorch``; ``layers`` later, on its own).
"""

from __future__ import annotations

import copy
import json
import math
import sys
from pathlib import Path

RUNS = 3
COLUMNS = ("event_block_name", "event_name", "raw", "p10 (ms)", "p50 (ms)", "p90 (ms)", "avg (ms)", "min (ms)",
           "max (ms)", "op_types", "is_delegated_op", "delegate_debug_identifier", "delegate_backend_name")


def _modules():  # type: ignore[no-untyped-def]
    import torch

    class Stem(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.relu(self.conv(x))

    class Net(torch.nn.Module):
        """conv 3→8 (3×3, pad 1) on 1×3×8×8, relu, flatten, linear 512→10, then topk(3)."""

        def __init__(self) -> None:
            super().__init__()
            self.stem = Stem()
            self.head = torch.nn.Linear(8 * 8 * 8, 10)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.topk(self.head(self.stem(x).flatten(1)), 3).values

    return Net


def _program(name: str):  # type: ignore[no-untyped-def]
    """(executorch program manager, edge program manager for ``generate_etrecord`` or None when the program
    carries its ETRecord (lowered with ``generate_etrecord=True``: the edge graph before lowering, so the
    record says which operators each delegate holds), example inputs)."""
    import torch
    from executorch.exir import to_edge, to_edge_transform_and_lower

    torch.manual_seed(0)
    if name == "layers":  # torch_models' module, so the tests can export the same program with torch alone
        import torch_models

        model, shape = torch_models.module("layers")
        example = (torch.randn(*shape),)
    else:
        model = _modules()().eval()
        example = (torch.randn(1, 3, 8, 8),)
    exported = torch.export.export(model, example)
    if name == "xnnpack":
        from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner

        lowered = to_edge_transform_and_lower(exported, partitioner=[XnnpackPartitioner()], generate_etrecord=True)
        return lowered.to_executorch(), None, example
    edge = to_edge(exported)
    record_copy = copy.deepcopy(edge)  # to_executorch consumes the first
    return edge.to_executorch(), record_copy, example


def make(folder: Path, name: str) -> None:
    from executorch.devtools import Inspector, generate_etrecord
    from executorch.extension.pybindings.portable_lib import _load_for_executorch

    program, edge, example = _program(name)
    pte, etrecord, etdump = (folder / f"{name}{suffix}" for suffix in (".pte", ".etrecord", ".etdp"))
    pte.write_bytes(program.buffer)
    if edge is None:
        program.get_etrecord().save(str(etrecord))
    else:
        generate_etrecord(str(etrecord), edge, program)
    module = _load_for_executorch(str(pte), enable_etdump=True, debug_buffer_size=0)
    for _ in range(RUNS):
        module.run_method("forward", example)
    module.write_etdump_result_to_file(str(etdump))
    frame = Inspector(etdump_path=str(etdump), etrecord=str(etrecord)).to_dataframe()
    rows = [{column: _plain(row[column]) for column in COLUMNS if column in frame.columns}
            for _, row in frame.iterrows()]
    (folder / f"{name}.inspector.json").write_text(json.dumps(rows, indent=1) + "\n")
    (folder / f"{name}.program.json").write_text(json.dumps(listing(pte.read_bytes()), indent=1) + "\n")


def listing(data: bytes) -> dict[str, list]:
    """executorch's own reading of the program's first plan: each instruction (kind, and the operator
    ``name.overload`` or the delegate's backend) and each tensor value (index, sizes, scalar type)."""
    from executorch.exir._serialize._program import deserialize_pte_binary
    from executorch.exir.schema import DelegateCall, KernelCall, Tensor

    plan = deserialize_pte_binary(data).program.execution_plan[0]
    instructions = []
    for instruction in plan.chains[0].instructions:
        call = instruction.instr_args
        if isinstance(call, KernelCall):
            operator = plan.operators[call.op_index]
            instructions.append(["kernel", f"{operator.name}.{operator.overload}"])
        elif isinstance(call, DelegateCall):
            instructions.append(["delegate", plan.delegates[call.delegate_index].id])
        else:
            instructions.append([type(call).__name__, ""])
    tensors = [[index, list(value.val.sizes), int(value.val.scalar_type)]
               for index, value in enumerate(plan.values) if isinstance(value.val, Tensor)]
    return {"instructions": instructions, "tensors": tensors}


def _plain(value: object) -> object:
    if isinstance(value, float) and math.isnan(value):
        return None
    if hasattr(value, "item"):
        return value.item()  # type: ignore[union-attr]
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value if value is None or isinstance(value, (str, int, float, bool)) else str(value)


PYTHON_ENV = "ANNOGRAPH_EXECUTORCH_PYTHON"
COMMITTED = Path(__file__).resolve().parents[1] / "fixtures" / "executorch"


def artefacts(which: str, folder: Path, *names: str) -> Path:
    """The folder holding the artefacts: the ``committed`` ones, or ``fresh`` ones of ``names`` (all by default)
    made now in ``folder`` by this script in the executorch venv (``PYTHON_ENV``); a test using them is skipped
    when that venv is not given."""
    import os
    import subprocess

    import pytest

    if which == "committed":
        return COMMITTED
    python = os.environ.get(PYTHON_ENV)
    if not python:
        pytest.skip(f"{PYTHON_ENV} is not set: scripts/test makes .venv-executorch (pip install executorch) for "
                    "the tests that run executorch itself")
    subprocess.run([python, __file__, str(folder), *names], check=True, capture_output=True, timeout=1800)
    return folder


def main() -> None:
    folder = Path(sys.argv[1])
    folder.mkdir(parents=True, exist_ok=True)
    for name in sys.argv[2:] or ["portable", "xnnpack", "layers"]:
        make(folder, name)


if __name__ == "__main__":
    main()
