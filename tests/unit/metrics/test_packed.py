"""Packed and sub-byte weights count the values they hold as parameters, and the bytes they take as weight_bytes:
standard ONNX int4/uint4/float8 initializers behind a (blocked) DequantizeLinear, and com.microsoft
GatherBlockQuantized tables of two int4 values a byte. Models are made with onnx.helper and run by onnxruntime
before they are measured; the genai LLM's MatMulNBits are in test_genai_llm."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

from conftest import run_cli

K, N, BLOCK = 64, 128, 32


def metrics(model: Path, out: Path) -> dict[str, dict[str, str]]:
    run = run_cli("metrics", model, "-o", out)
    assert run.returncode == 0, run.stderr
    with out.open(newline="") as f:
        return {row["id"]: row for row in csv.DictReader(f) if row["kind"] == "operator"}


def checked(model, path: Path) -> Path:  # type: ignore[no-untyped-def]
    """Save ``model`` after onnx's checker and one onnxruntime run on ones (it is a model people could run)."""
    import onnx
    import onnxruntime as ort

    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, str(path))
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    feeds = {i.name: np.ones([d if isinstance(d, int) else 1 for d in i.shape],
                             np.int64 if "int64" in i.type else np.float32) for i in session.get_inputs()}
    session.run(None, feeds)
    return path


@pytest.mark.parametrize(("dtype", "bits", "zero_point"), [("INT4", 4, True), ("UINT4", 4, True),
                                                           ("FLOAT8E4M3FN", 8, False)])
def test_sub_byte_initializers_count_values_and_their_real_bytes(tmp_path: Path, dtype: str, bits: int,
                                                                 zero_point: bool) -> None:
    import onnx
    from onnx import TensorProto, helper

    kind = getattr(TensorProto, dtype)
    rng = np.random.default_rng(0)
    low = -8 if dtype == "INT4" else 0
    stored = rng.integers(low, low + 16, (K, N)) if bits == 4 else rng.normal(0, 1, (K, N))
    weight = helper.make_tensor("w", kind, [K, N], stored.flatten().tolist())
    blocks = K // BLOCK
    scale = helper.make_tensor("scale", TensorProto.FLOAT, [blocks, N], rng.uniform(0.01, 0.1, blocks * N).tolist())
    inputs = ["w", "scale"]
    initializers = [weight, scale]
    if zero_point:
        initializers.append(helper.make_tensor("zp", kind, [blocks, N], [low + 8] * (blocks * N)))
        inputs.append("zp")
    nodes = [helper.make_node("DequantizeLinear", inputs, ["w_float"], axis=0, block_size=BLOCK),
             helper.make_node("MatMul", ["x", "w_float"], ["y"])]
    graph = helper.make_graph(nodes, "blocked", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, K])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, N])], initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    rows = metrics(checked(model, tmp_path / "m.onnx"), tmp_path / "m.csv")
    dq, matmul = rows["0:0"], rows["0:1"]
    assert int(matmul["params"]) == K * N  # as the float MatMul's weight [64, 128]
    assert int(dq["params"]) == K * N  # the scales and zero points are no parameters
    packed = K * N * bits // 8  # 2 values a byte for int4/uint4
    expected = packed + blocks * N * 4 + (blocks * N * bits // 8 if zero_point else 0)
    assert int(dq["weight_bytes"]) == expected
    assert int(matmul["macs"]) == K * N
    onnx.load(str(tmp_path / "m.onnx"))  # the file is what was measured


def test_gather_block_quantized_counts_the_table_values(tmp_path: Path) -> None:
    from onnx import TensorProto, helper

    vocab, width = 256, 64
    rng = np.random.default_rng(1)
    packed = rng.integers(0, 256, (vocab, width // 2), dtype=np.uint8)  # two uint4 values a byte
    scales = rng.uniform(0.01, 0.1, (vocab, width // BLOCK)).astype(np.float32)
    zero_points = np.full((vocab, width // BLOCK // 2), 0x88, np.uint8)
    tensors = [helper.make_tensor("table", TensorProto.UINT8, packed.shape, packed.tobytes(), raw=True),
               helper.make_tensor("scales", TensorProto.FLOAT, scales.shape, scales.tobytes(), raw=True),
               helper.make_tensor("zero_points", TensorProto.UINT8, zero_points.shape, zero_points.tobytes(), raw=True)]
    node = helper.make_node("GatherBlockQuantized", ["table", "ids", "scales", "zero_points"], ["embedded"],
                            domain="com.microsoft", bits=4, block_size=BLOCK, gather_axis=0, quantize_axis=1)
    graph = helper.make_graph([node], "embedding", [helper.make_tensor_value_info("ids", TensorProto.INT64, [1, 8])],
                              [helper.make_tensor_value_info("embedded", TensorProto.FLOAT, [1, 8, width])], tensors)
    opsets = [helper.make_opsetid("", 21), helper.make_opsetid("com.microsoft", 1)]
    model = helper.make_model(graph, opset_imports=opsets)
    rows = metrics(checked(model, tmp_path / "e.onnx"), tmp_path / "e.csv")
    gather = rows["0:0"]
    assert int(gather["params"]) == vocab * width  # the float embedding's [256, 64]
    assert int(gather["weight_bytes"]) == packed.nbytes + scales.nbytes + zero_points.nbytes
    assert int(gather["macs"]) == 2 * 8 * width  # each gathered value dequantized
