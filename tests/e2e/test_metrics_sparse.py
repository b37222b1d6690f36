"""Sparse TFLite weights: a DENSIFY (→ DEQUANTIZE) chain folds into the convolution reading it, which counts the
dense filter's parameters and, as sparsity, the share of the dense filter's values that are zero (the values the
tensor does not store, and the zeros it does). Checked on small sparse models built by hand from the schema,
whose figures are known exactly, and on MediaPipe's sparse BlazeFace, against the dense filters LiteRT's own
DENSIFY computes; every model is run by LiteRT first."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest
import tflite

import tflite_build as tb
import wheel_models
from conftest import parse_svg, run_cli, svg_groups, tooltip_of

T, OP = tflite.TensorType, tflite.BuiltinOperator

# The dense filter [4, 1, 1, 8] of the hand-built models: 7 non-zeros.
DENSE = np.array([[1.5, 0, 0, -2, 0, 0, 0, 0.5],
                  [0, 0, 0, 0, 0, 0, 0, 0],
                  [0, 0.25, 0, 0, 0, 0, 0, 0],
                  [3, 0, 1, 0, 0, -1, 0, 0]], np.float32)
STORED_ZERO = (3, 7)  # stored although 0: CSR may hold explicit zeros
BLOCK = 4  # the block-sparse variant stores blocks of 4 input channels


def csr(dense: np.ndarray, block: int = 1) -> tuple[list[int], list[int], np.ndarray]:
    """(segments, indices, stored values) of ``dense`` [rows, cols] compressed along its columns, in blocks of
    ``block`` columns (a block is stored when any value in it is non-zero, or it holds ``STORED_ZERO``)."""
    segments, indices, values = [0], [], []
    for r, row in enumerate(dense):
        for c in range(len(row) // block):
            part = row[c * block:(c + 1) * block]
            if np.any(part != 0) or (block == 1 and (r, c) == STORED_ZERO):
                indices.append(c)
                values.append(part)
        segments.append(len(indices))
    return segments, indices, np.concatenate(values)


def sparse_conv(dtype: str, block: int = 1) -> bytes:
    """x [1, 3, 3, 8] → CONV_2D 1×1 with 4 filters and a bias, the filter stored sparse: DENSIFY → CONV_2D for
    float32, DENSIFY → DEQUANTIZE → CONV_2D for float16 (MediaPipe's pattern)."""
    rows = DENSE.shape[0]
    segments, indices, values = csr(DENSE, block)
    dims: list = [rows, 1, 1, (0, segments, indices)] + ([block] if block > 1 else [])
    order = [0, 1, 2, 3] + ([4] if block > 1 else [])

    def sparsity(b):  # type: ignore[no-untyped-def]
        return tb.sparsity(b, order, dims, [3] if block > 1 else ())

    stored_type = T.FLOAT16 if dtype == "float16" else T.FLOAT32
    tensors = [
        {"name": "x", "shape": [1, 3, 3, 8]},
        {"name": "filter_sparse", "shape": [rows, 1, 1, 8], "dtype": stored_type, "sparsity": sparsity,
         "data": values.astype(np.float16 if dtype == "float16" else np.float32).tobytes()},
        {"name": "filter_dense", "shape": [rows, 1, 1, 8], "dtype": stored_type},
        {"name": "bias", "shape": [rows], "data": np.arange(rows, dtype=np.float32).tobytes()},
        {"name": "y", "shape": [1, 3, 3, rows]},
    ]
    ops = [(OP.DENSIFY, [1], [2], None)]
    filter_index = 2
    if dtype == "float16":
        tensors.insert(3, {"name": "filter", "shape": [rows, 1, 1, 8]})
        ops.append((OP.DEQUANTIZE, [2], [3], None))
        filter_index = 3
    bias, out = len(tensors) - 2, len(tensors) - 1

    def conv_options(b):  # type: ignore[no-untyped-def]
        tflite.Conv2DOptionsStart(b)
        tflite.Conv2DOptionsAddPadding(b, tflite.Padding.VALID)
        tflite.Conv2DOptionsAddStrideW(b, 1)
        tflite.Conv2DOptionsAddStrideH(b, 1)
        return tflite.BuiltinOptions.Conv2DOptions, tflite.Conv2DOptionsEnd(b)

    ops.append((OP.CONV_2D, [0, filter_index, bias], [out], conv_options))
    return tb.one_subgraph_model(tensors, ops, [0], [out])


def litert(path: Path, **options):  # type: ignore[no-untyped-def]
    """The interpreter after one run on ones; XNNPACK off, so every tensor stays readable."""
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    interpreter = Interpreter(model_path=str(path), experimental_preserve_all_tensors=True,
                              experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)
    interpreter.allocate_tensors()
    detail = interpreter.get_input_details()[0]
    interpreter.set_tensor(detail["index"], np.ones(detail["shape"], np.float32))
    interpreter.invoke()
    return interpreter


def rows_of(path: Path, out: Path) -> tuple[dict[str, dict[str, str]], str]:
    done = run_cli("metrics", path, "-o", out)
    assert done.returncode == 0, done.stderr
    with out.open(newline="", encoding="utf-8") as f:
        return {row["id"]: row for row in csv.DictReader(f) if row["kind"] == "operator"}, done.stderr


CASES = {"float32": ("float32", 1), "float16": ("float16", 1), "float32_blocks": ("float32", BLOCK)}


@pytest.mark.parametrize("case", sorted(CASES))
def test_hand_built_sparse_conv(case: str, tmp_path: Path) -> None:
    dtype, block = CASES[case]
    path = tmp_path / f"{case}.tflite"
    path.write_bytes(sparse_conv(dtype, block))
    interpreter = litert(path)
    expected = np.ones((1, 3, 3, 8), np.float32) @ DENSE.T + np.arange(4, dtype=np.float32)
    output = interpreter.get_tensor(interpreter.get_output_details()[0]["index"])
    np.testing.assert_allclose(output, expected, rtol=1e-3)  # LiteRT read the file as the dense filter meant

    rows, line = rows_of(path, tmp_path / "m.csv")
    conv = rows[f"0:{len(rows) - 1}"]
    _, _, values = csr(DENSE, block)
    dense = DENSE.size
    zeros = dense - values.size + int((values == 0).sum())  # not stored, or stored as 0
    assert zeros == {1: 25, BLOCK: 25}[block]  # by hand: 32 values, 7 non-zero
    assert int(conv["params"]) == dense + 4  # the dense filter and the bias
    assert float(conv["sparsity"]) == pytest.approx(zeros / dense, abs=1e-6)
    outputs = 3 * 3 * 4
    assert int(conv["macs"]) == outputs * 8 + outputs
    assert int(conv["effective_macs"]) == round(outputs * 8 + outputs - outputs * 8 * zeros / dense)
    densify = rows["0:0"]
    assert densify["macs"] == "0" and int(densify["params"]) == dense
    assert "n/a" not in line.split("MACs ")[1].split(",")[0]
    stored_bytes = values.size * (2 if dtype == "float16" else 4)
    assert int(conv["weight_bytes"]) == stored_bytes + 4 * 4

    svg = tmp_path / "m.svg"
    done = run_cli("render", path, "--color-by", "sparsity", "-o", svg)
    assert done.returncode == 0, done.stderr
    boxes = svg_groups(parse_svg(svg), "op")
    assert list(boxes) == [f"op-0-{len(rows) - 1}"]  # DENSIFY (and DEQUANTIZE) are folded into the conv
    texts = [t.text or "" for t in next(iter(boxes.values())).iter("{http://www.w3.org/2000/svg}text")]
    widened = "→float32" if dtype == "float16" else ""
    assert any(t.startswith("filter [4×1×1×8]") and t.endswith(f"{dtype} sparse{widened}") for t in texts), texts
    assert shown_sparsity(tooltip_of(next(iter(boxes.values())))) == pytest.approx(zeros / dense, abs=1e-4)


def shown_sparsity(tooltip: str) -> float | None:
    """The sparsity a box's tooltip shows (None for n/a)."""
    line = next(line for line in tooltip.splitlines() if line.startswith("sparsity: "))
    text = line.split(": ", 1)[1]
    return None if text.startswith("n/a") else float(text)


@pytest.mark.parametrize("key", ["face_detection_full_range_sparse", "mediapipe_face_detection_full_range_sparse"])
def test_mediapipe_sparse_blazeface(key: str, tmp_path: Path) -> None:
    path = wheel_models.wheel_model(key)
    from renderer.loaders.registry import load_model

    model = load_model(path)
    interpreter = litert(path)
    densify = [n for n in model.main.nodes if n.op_type == "DENSIFY"]
    assert len(densify) == 46
    rows, line = rows_of(path, tmp_path / "m.csv")
    assert " n/a" not in line.split("MACs ")[1].split(",")[0]  # was "+46 ops n/a (no formula for DENSIFY)"
    checked: dict[str, float] = {}
    for node in model.main.nodes:
        chain, value = [], node.inputs[1] if node.op_type == "CONV_2D" else None
        while value is not None and value.producer is not None and value.producer.op_type in ("DEQUANTIZE", "DENSIFY"):
            chain.append(value.producer)
            value = value.producer.inputs[0]
        if not any(op.op_type == "DENSIFY" for op in chain):
            continue
        dense = interpreter.get_tensor(chain[-1].outputs[0].index)  # LiteRT's own densified filter
        row = rows[f"0:{node.index}"]
        bias = int(np.prod(node.inputs[2].type.shape)) if len(node.inputs) > 2 and node.inputs[2] is not None else 0
        assert int(row["params"]) == dense.size + bias
        assert float(row["sparsity"]) == pytest.approx(float((dense == 0).mean()), abs=1e-6)
        checked[f"op-0-{node.index}"] = float(row["sparsity"])
    assert len(checked) == 46
    svg = tmp_path / "m.svg"
    done = run_cli("render", path, "--color-by", "sparsity", "--collapse", "none", "-o", svg)
    assert done.returncode == 0, done.stderr
    tips = {ident: tooltip_of(g) for ident, g in svg_groups(parse_svg(svg), "op").items()}
    assert not any(t.startswith(("DENSIFY", "DEQUANTIZE")) for t in tips.values())  # folded
    for ident, sparsity in checked.items():
        assert shown_sparsity(tips[ident]) == pytest.approx(sparsity, abs=1e-4)


def test_sparsity_parameters_that_do_not_fit_the_buffer(tmp_path: Path) -> None:
    """Segments indexing more values than the buffer holds (a corrupt file): the data stays the flat stored
    values, a note says what disagrees, and nothing is counted as dense."""
    from renderer.loaders.registry import load_model

    segments, indices, values = csr(DENSE)

    def sparsity(b):  # type: ignore[no-untyped-def]
        return tb.sparsity(b, [0, 1, 2, 3], [4, 1, 1, (0, segments[:-1] + [segments[-1] + 1], indices)])

    tensors = [{"name": "x", "shape": [1, 3, 3, 8]},
               {"name": "filter_sparse", "shape": [4, 1, 1, 8], "sparsity": sparsity, "data": values.tobytes()},
               {"name": "filter", "shape": [4, 1, 1, 8]}, {"name": "y", "shape": [1, 3, 3, 4]}]
    path = tmp_path / "corrupt.tflite"
    path.write_bytes(tb.one_subgraph_model(tensors, [(OP.DENSIFY, [1], [2], None), (OP.CONV_2D, [0, 2], [3], None)],
                                           [0], [3]))
    model = load_model(path)
    stored = model.main.values[1]
    assert stored.initializer.dense_shape is None and stored.initializer.shape == (values.size,)
    assert f"buffer 1 holds {values.size} values; its sparsity parameters index {values.size + 1}" \
        in stored.metadata["data"]
    rows, _ = rows_of(path, tmp_path / "m.csv")
    assert int(rows["0:1"]["params"]) == values.size  # what is stored, not a guess at the dense filter
    done = run_cli("render", path, "--color-by", "sparsity", "-o", tmp_path / "m.svg")
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
