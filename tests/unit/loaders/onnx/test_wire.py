"""Weights read straight from the mapped ONNX file (renderer/loaders/onnx/wire.py) equal what onnx reads.

The loader hands protobuf a copy of the file without the large ``raw_data`` fields and views those bytes in
place; these tests check the light copy is the same model minus those bytes, every weight reads back equal
to ``numpy_helper.to_array`` on a full ``onnx.load``, and anything the wire walker does not understand falls
back to the ordinary parse.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

from conftest import ONNX, one_line_error, run_cli
from renderer.core.errors import LoaderError
from renderer.loaders.onnx import wire as onnx_wire
from renderer.loaders.registry import load_model


def _big_model(path: Path) -> dict[str, np.ndarray]:
    """A model whose large initializers cover plain dtypes, ones numpy cannot view (bfloat16, float8, int4),
    a small shape tensor that must stay inline, and a subgraph initializer. Returns the expected arrays."""
    rng = np.random.default_rng(0)
    arrays = {
        "w_f32": rng.standard_normal((64, 64)).astype(np.float32),
        "w_f16": rng.standard_normal((64, 80)).astype(np.float16),
        "w_i8": rng.integers(-128, 127, (96, 96), dtype=np.int8),
        "w_u8": rng.integers(0, 255, (100, 100), dtype=np.uint8),
        "w_i64": rng.integers(-5, 5, (2048,), dtype=np.int64),
        "shape": np.array([1, 4096], dtype=np.int64),
    }
    inits = [numpy_helper.from_array(a, name) for name, a in arrays.items()]
    import ml_dtypes  # onnx's own dependency

    unusual = {
        "w_bf16": rng.standard_normal((64, 80)).astype(ml_dtypes.bfloat16),
        "w_f8": rng.uniform(-4, 4, (100, 100)).astype(ml_dtypes.float8_e4m3fn),
        "w_i4": rng.integers(-8, 7, (200, 100)).astype(ml_dtypes.int4),
    }
    for name, array in unusual.items():
        tensor = numpy_helper.from_array(array, name)
        assert len(tensor.raw_data) >= onnx_wire.MIN_STRIPPED_BYTES
        inits.append(tensor)
        arrays[name] = numpy_helper.to_array(tensor)

    inner_w = rng.standard_normal((64, 64)).astype(np.float32)
    then_graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "inner_w"], ["then_out"], name="then/matmul")], "then", [],
        [helper.make_tensor_value_info("then_out", TensorProto.FLOAT, [1, 64])],
        [numpy_helper.from_array(inner_w, "inner_w")])
    else_graph = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["else_out"], name="else/id")], "else", [],
        [helper.make_tensor_value_info("else_out", TensorProto.FLOAT, [1, 64])])
    nodes = [
        helper.make_node("MatMul", ["x", "w_f32"], ["y"], name="matmul"),
        helper.make_node("If", ["cond"], ["z"], name="branch", then_branch=then_graph, else_branch=else_graph),
        helper.make_node("Reshape", ["w_i64", "shape"], ["flat"], name="reshape"),
    ]
    graph = helper.make_graph(
        nodes, "weights",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64]),
         helper.make_tensor_value_info("cond", TensorProto.BOOL, [])],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ("y", "z")]
        + [helper.make_tensor_value_info("flat", TensorProto.INT64, None)],
        inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    model.ir_version = 10
    onnx.save(model, str(path))
    arrays["inner_w"] = inner_w
    return arrays


def _initializers(model) -> dict[str, np.ndarray]:  # type: ignore[no-untyped-def]
    found = {}
    for graph in model.graphs:
        for value in graph.values:
            if value.initializer is not None:
                found[value.name] = value.initializer.numpy()
    return found


def test_every_weight_reads_back_equal_to_onnx(tmp_path: Path) -> None:
    path = tmp_path / "weights.onnx"
    expected = _big_model(path)
    parts = onnx_wire.split(path.read_bytes())
    assert parts is not None
    full = onnx.load(str(path))
    stripped = {full.graph.initializer[i].name for i in parts.weights}
    # every large main-graph initializer is stripped; the shape tensor and the If body's weight are not
    assert stripped == {"w_f32", "w_f16", "w_i8", "w_u8", "w_i64", "w_bf16", "w_f8", "w_i4"}

    got = _initializers(load_model(path))
    assert set(expected) <= set(got)
    for name, array in expected.items():
        assert got[name].dtype == array.dtype, name
        np.testing.assert_array_equal(got[name], array, err_msg=name)
    # plain dtypes are views over the mapped file, not copies
    assert not got["w_f32"].flags.owndata and not got["w_f32"].flags.writeable


def test_light_copy_is_the_model_without_the_stripped_bytes(tmp_path: Path) -> None:
    path = tmp_path / "weights.onnx"
    _big_model(path)
    data = path.read_bytes()
    parts = onnx_wire.split(data)
    assert parts is not None
    full = onnx.load_model_from_string(data)
    for i, (offset, length) in parts.weights.items():
        assert data[offset:offset + length] == full.graph.initializer[i].raw_data
        full.graph.initializer[i].ClearField("raw_data")
    assert onnx.load_model_from_string(parts.light) == full
    assert len(parts.light) < len(data) - sum(length for _, length in parts.weights.values()) + 64


@pytest.mark.parametrize("sample", sorted(p.name for p in ONNX.glob("*.onnx")))
def test_samples_load_the_same_either_way(sample: str, tmp_path: Path) -> None:
    """Every sample, loaded with the stripping forced down to 1 byte, gives the same weights as onnx."""
    path = ONNX / sample
    full = onnx.load(str(path))
    parts = onnx_wire.split(path.read_bytes(), min_bytes=1)
    expected = {t.name: numpy_helper.to_array(t) for t in full.graph.initializer}
    if parts is None:
        assert not any(t.HasField("raw_data") for t in full.graph.initializer)
        return
    light = onnx.load_model_from_string(parts.light)
    assert [t.name for t in light.graph.initializer] == list(expected)
    data = path.read_bytes()
    for i, (offset, length) in parts.weights.items():
        assert data[offset:offset + length] == full.graph.initializer[i].raw_data


def _field(number: int, payload: bytes) -> bytes:
    return onnx_wire._encode_varint(number << 3 | 2) + onnx_wire._encode_varint(len(payload)) + payload


def _tensor_bytes(raw: bytes, extra_raw: bytes | None = None) -> bytes:
    tensor = helper.make_tensor("w", TensorProto.UINT8, [len(raw)], raw, raw=True)
    data = tensor.SerializeToString()
    return data + (_field(9, extra_raw) if extra_raw is not None else b"")


@pytest.mark.parametrize("layout", ["two graph fields", "two raw_data fields", "group wire type", "truncated",
                                    "no graph", "nothing large"])
def test_unusual_layouts_fall_back(layout: str) -> None:
    big = bytes(range(256)) * 64
    head = b"\x08\x0a"  # ir_version 10
    graph = _field(5, _tensor_bytes(big))
    cases = {
        "two graph fields": head + _field(7, graph) + _field(7, graph),
        "two raw_data fields": head + _field(7, _field(5, _tensor_bytes(big, extra_raw=big))),
        "group wire type": head + _field(7, graph) + b"\x0b\x0c",
        "truncated": (head + _field(7, graph))[:-10],
        "no graph": head,
        "nothing large": head + _field(7, _field(5, _tensor_bytes(b"\x01\x02"))),
    }
    assert onnx_wire.split(cases[layout]) is None
    assert onnx_wire.split(head + _field(7, graph)) is not None  # the plain layout is understood


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_wire_walker_never_raises_and_stays_in_bounds(data: st.DataObject, tmp_path: Path) -> None:
    seed = tmp_path / "seed.onnx"
    if not seed.exists():
        _big_model(seed)
    buffer = bytearray(seed.read_bytes())
    for _ in range(data.draw(st.integers(1, 8))):
        i = data.draw(st.integers(0, len(buffer) - 1))
        buffer[i] = data.draw(st.integers(0, 255))
    if data.draw(st.booleans()):
        buffer = buffer[:data.draw(st.integers(0, len(buffer)))]
    parts = onnx_wire.split(bytes(buffer))
    if parts is not None:
        for offset, length in parts.weights.values():
            assert 0 <= offset and offset + length <= len(buffer)


def test_weight_bytes_not_matching_the_shape_are_one_clear_error(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    weight = numpy_helper.from_array(rng.standard_normal((64, 64)).astype(np.float32), "w")
    weight.dims[:] = [64, 65]  # declares more elements than its raw_data holds
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [weight])
    path = tmp_path / "bad.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)]), str(path))
    model = load_model(path)
    (value,) = [v for v in model.graphs[0].values if v.initializer is not None]
    with pytest.raises(LoaderError, match=r"bad\.onnx: tensor 'w' holds invalid data"):
        value.initializer.numpy()
    run = run_cli("render", path, "-o", tmp_path / "out.svg", "--color-by", "sparsity")
    assert run.returncode != 0
    assert "bad.onnx" in one_line_error(run) and "'w'" in one_line_error(run)
    assert not (tmp_path / "out.svg").exists()
