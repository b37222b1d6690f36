"""``renderer/core/ir.py``: a tensor's element count is exact past int64, so no metric of a model declaring such
a constant goes negative."""

from __future__ import annotations

import csv
import io
from pathlib import Path

from conftest import run_cli
from renderer.core.ir import Tensor

HUGE = 2**62


def test_sizes_past_int64_are_exact_not_wrapped() -> None:
    """numpy's int64 product of (2**62, 27) wraps to a negative count; the IR's is the real one."""
    assert Tensor("float32", (HUGE, 27)).size == HUGE * 27
    assert Tensor("float32", ()).size == 1 and Tensor("float32", (0, 5)).size == 0
    assert Tensor("int8", (4,), dense_shape=(HUGE, 3, 3)).logical_size == HUGE * 9


def _ir_without_bin(path: Path) -> Path:
    """An OpenVINO IR (Parameter → Convolution with a Const weight of 2**62 x 3 x 1 x 1 → Result), no .bin."""
    def port(index: int, dims: tuple[int, ...]) -> str:
        return f'<port id="{index}" precision="FP32">' + "".join(f"<dim>{d}</dim>" for d in dims) + "</port>"

    image, weight, out = (1, 3, 4, 4), (HUGE, 3, 1, 1), (1, HUGE, 4, 4)
    layers = [
        f'<layer id="0" name="x" type="Parameter" version="opset1"><data shape="1,3,4,4" element_type="f32"/>'
        f"<output>{port(0, image)}</output></layer>",
        f'<layer id="1" name="w" type="Const" version="opset1"><data element_type="f32" shape="{HUGE},3,1,1" '
        f'offset="0" size="{HUGE * 12}"/><output>{port(0, weight)}</output></layer>',
        f'<layer id="2" name="conv" type="Convolution" version="opset1"><data strides="1, 1" dilations="1, 1" '
        f'pads_begin="0, 0" pads_end="0, 0" auto_pad="explicit"/><input>{port(0, image)}{port(1, weight)}</input>'
        f"<output>{port(2, out)}</output></layer>",
        f'<layer id="3" name="y" type="Result" version="opset1"><input>{port(0, out)}</input></layer>']
    edges = "".join(f'<edge from-layer="{a}" from-port="{b}" to-layer="{c}" to-port="{d}"/>'
                    for a, b, c, d in ((0, 0, 2, 0), (1, 0, 2, 1), (2, 2, 3, 0)))
    path.write_text(f'<?xml version="1.0"?><net name="n" version="11"><layers>{"".join(layers)}</layers>'
                    f"<edges>{edges}</edges></net>")
    return path


def test_a_constant_past_int64_counts_its_real_parameters(tmp_path: Path) -> None:
    """``annograph metrics`` on that IR: the convolution's parameters are 2**62 x 3 (the CSV's own figure), not
    the negative count an int64 product gives."""
    model = _ir_without_bin(tmp_path / "huge.xml")
    run = run_cli("metrics", model, "-o", tmp_path / "m.csv", "-q")
    assert run.returncode == 0, run.stderr
    rows = list(csv.DictReader(io.StringIO((tmp_path / "m.csv").read_text())))
    conv = [row for row in rows if row["kind"] == "operator"]
    assert len(conv) == 1 and int(conv[0]["params"]) == HUGE * 3, conv
