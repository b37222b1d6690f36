#!/usr/bin/env python3
"""Generate the small, reproducible ONNX sample models used by annograph's tests and demo.

Run from the repository root (or anywhere)::

    python samples/make_samples.py

Requires only ``onnx``, ``onnxruntime`` and ``numpy``. Every random tensor comes from a
``numpy.random.default_rng`` with a fixed seed and calibration uses MinMax, so running the script twice
produces byte-identical files. Each model is checked with ``onnx.checker`` and executed once with
onnxruntime before the script reports success.
"""

from __future__ import annotations

import argparse
import hashlib
import math
import sys
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper
from onnxruntime.quantization import (
    CalibrationDataReader,
    CalibrationMethod,
    QuantFormat,
    QuantType,
    quantize_dynamic,
    quantize_static,
)

OUT_DIR = Path(__file__).resolve().parent / "onnx"

OPSET = 17
# IR version 8 is the one paired with opset 17; keeping it low lets older onnxruntime releases
# (>= 1.16, the project's minimum) load the samples.
IR_VERSION = 8
PRODUCER = "annograph/samples/make_samples.py"

CNN_INPUT_SHAPE = (1, 3, 32, 32)
CNN_CLASSES = 10
CALIBRATION_SAMPLES = 8
MLP_IN, MLP_HIDDEN, MLP_OUT = 64, 128, 10
D_MODEL, N_HEADS, D_FF = 64, 4, 256


# --------------------------------------------------------------------------------------------------
# Small helpers
# --------------------------------------------------------------------------------------------------


class GraphBuilder:
    """Accumulates nodes and initializers for one ``onnx.GraphProto``."""

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[TensorProto] = []

    def const(self, name: str, value: np.ndarray) -> str:
        """Register ``value`` as an initializer called ``name`` and return the name."""
        self.initializers.append(numpy_helper.from_array(value, name))
        return name

    def weight(self, name: str, shape: Sequence[int], fan_in: int, prune: float = 0.0) -> str:
        """He-initialised float32 weight; a fraction ``prune`` of its entries is set to exactly 0."""
        value = self.rng.standard_normal(shape).astype(np.float32) * np.float32(math.sqrt(2.0 / fan_in))
        if prune:
            value[self.rng.random(shape) < prune] = 0.0
        return self.const(name, value)

    def bias(self, name: str, size: int) -> str:
        return self.const(name, (self.rng.standard_normal(size) * 0.1).astype(np.float32))

    def op(self, op_type: str, name: str, inputs: Sequence[str], **attrs: object) -> str:
        """Add a single-output node; its output tensor is called ``<name>_out``."""
        output = f"{name}_out"
        self.nodes.append(helper.make_node(op_type, list(inputs), [output], name=name, **attrs))
        return output

    def graph(
        self, name: str, inputs: Sequence[onnx.ValueInfoProto], outputs: Sequence[onnx.ValueInfoProto]
    ) -> onnx.GraphProto:
        return helper.make_graph(self.nodes, name, list(inputs), list(outputs), self.initializers)


def make_model(graph: onnx.GraphProto, doc: str) -> onnx.ModelProto:
    """Wrap ``graph`` into a model with fixed opset/IR/producer metadata and inferred shapes."""
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", OPSET)],
        ir_version=IR_VERSION,
        producer_name=PRODUCER,
        producer_version="1",
        doc_string=doc,
    )
    helper.set_model_props(model, {"generator": "samples/make_samples.py", "license": "Apache-2.0"})
    return onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True, data_prop=True)


def save(model: onnx.ModelProto, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    onnx.save_model(model, str(path))


def count_nodes(graph: onnx.GraphProto) -> int:
    """Number of nodes in ``graph`` including all nested subgraphs (If/Loop/Scan bodies)."""
    total = len(graph.node)
    for node in graph.node:
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.GRAPH:
                total += count_nodes(attr.g)
            for sub in attr.graphs:
                total += count_nodes(sub)
    return total


def random_cnn_input(rng: np.random.Generator) -> np.ndarray:
    return rng.standard_normal(CNN_INPUT_SHAPE).astype(np.float32)


# --------------------------------------------------------------------------------------------------
# tiny_cnn.onnx
# --------------------------------------------------------------------------------------------------


def _conv_bn(
    b: GraphBuilder,
    prefix: str,
    x: str,
    c_in: int,
    c_out: int,
    kernel: int,
    *,
    stride: int = 1,
    group: int = 1,
    prune: float = 0.0,
    bn_name: str = "bn",
) -> str:
    """Conv (with bias) followed by BatchNormalization; optionally zero out a fraction of the weights."""
    fan_in = (c_in // group) * kernel * kernel
    w = b.weight(f"{prefix}.weight", (c_out, c_in // group, kernel, kernel), fan_in, prune)
    pad = kernel // 2
    y = b.op(
        "Conv",
        prefix,
        [x, w, b.bias(f"{prefix}.bias", c_out)],
        kernel_shape=[kernel, kernel],
        strides=[stride, stride],
        pads=[pad] * 4,
        group=group,
    )
    bn_prefix = f"{prefix.rsplit('/', 1)[0]}/{bn_name}"
    scale = b.const(f"{bn_prefix}.scale", b.rng.uniform(0.5, 1.5, c_out).astype(np.float32))
    shift = b.bias(f"{bn_prefix}.bias", c_out)
    mean = b.bias(f"{bn_prefix}.running_mean", c_out)
    var = b.const(f"{bn_prefix}.running_var", b.rng.uniform(0.5, 1.5, c_out).astype(np.float32))
    return b.op("BatchNormalization", bn_prefix, [y, scale, shift, mean, var], epsilon=1e-5)


def build_tiny_cnn() -> onnx.ModelProto:
    """An 18-node residual CNN: stem, depthwise-separable residual block, strided block, classifier."""
    b = GraphBuilder(np.random.default_rng(0))
    x = "image"

    x = _conv_bn(b, "stem/conv", x, 3, 16, 3)
    x = b.op("Relu", "stem/relu", [x])
    stem = b.op("MaxPool", "stem/pool", [x], kernel_shape=[2, 2], strides=[2, 2])

    x = _conv_bn(b, "block1/dwconv", stem, 16, 16, 3, group=16, bn_name="bn1")
    x = b.op("Relu", "block1/relu1", [x])
    x = _conv_bn(b, "block1/pwconv", x, 16, 16, 1, prune=0.3, bn_name="bn2")
    x = b.op("Add", "block1/add", [x, stem])
    x = b.op("Relu", "block1/relu2", [x])

    x = _conv_bn(b, "block2/conv", x, 16, 32, 3, stride=2)
    x = b.op("Relu", "block2/relu", [x])

    x = b.op("GlobalAveragePool", "head/gap", [x])
    x = b.op("Flatten", "head/flatten", [x], axis=1)
    fc_w = b.weight("head/fc.weight", (CNN_CLASSES, 32), 32)
    x = b.op("Gemm", "head/fc", [x, fc_w, b.bias("head/fc.bias", CNN_CLASSES)], transB=1)
    b.nodes.append(helper.make_node("Softmax", [x], ["probs"], name="head/softmax", axis=-1))

    graph = b.graph(
        "tiny_cnn",
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, CNN_INPUT_SHAPE)],
        [helper.make_tensor_value_info("probs", TensorProto.FLOAT, (1, CNN_CLASSES))],
    )
    return make_model(graph, "Tiny residual CNN with a depthwise conv and a 30%-pruned pointwise conv.")


# --------------------------------------------------------------------------------------------------
# Static (QDQ) and dynamic quantization
# --------------------------------------------------------------------------------------------------


class RandomImageReader(CalibrationDataReader):
    """Feeds a fixed set of random images to the calibrator."""

    def __init__(self, input_name: str, seed: int = 1, count: int = CALIBRATION_SAMPLES) -> None:
        rng = np.random.default_rng(seed)
        self._batches = [{input_name: random_cnn_input(rng)} for _ in range(count)]
        self._iter: Iterator[dict[str, np.ndarray]] = iter(self._batches)

    def get_next(self) -> dict[str, np.ndarray] | None:
        return next(self._iter, None)

    def rewind(self) -> None:
        self._iter = iter(self._batches)


def quantize_qdq(
    float_path: Path, out_path: Path, *, weight_type: QuantType, per_channel: bool
) -> onnx.ModelProto:
    # Pass a path, not a ModelProto: quantize_static moves the initializers of a ModelProto argument
    # to (temporary) external data in place, which breaks any later use of that proto.
    quantize_static(
        float_path,
        out_path,
        RandomImageReader(onnx.load_model(str(float_path)).graph.input[0].name),
        quant_format=QuantFormat.QDQ,
        activation_type=QuantType.QUInt8,
        weight_type=weight_type,
        per_channel=per_channel,
        calibrate_method=CalibrationMethod.MinMax,
    )
    return onnx.load_model(str(out_path))


def weight_dequantize_params(model: onnx.ModelProto) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """(node name, scale, zero point) of every DequantizeLinear whose input is an initializer."""
    inits = {t.name: t for t in model.graph.initializer}
    rows = []
    for node in model.graph.node:
        if node.op_type == "DequantizeLinear" and node.input[0] in inits and len(node.input) > 2:
            scale = numpy_helper.to_array(inits[node.input[1]])
            zero_point = numpy_helper.to_array(inits[node.input[2]])
            rows.append((node.name, scale, zero_point))
    return rows


def report_weight_zero_points(model: onnx.ModelProto, *, expect_nonzero: bool) -> None:
    rows = weight_dequantize_params(model)
    if not rows:
        raise AssertionError("no weight DequantizeLinear nodes found")
    for name, scale, zero_point in rows:
        kind = f"per-axis[{scale.size}]" if scale.size > 1 else "per-tensor"
        zp = zero_point.tolist() if zero_point.size <= 4 else f"{zero_point[:4].tolist()}..."
        print(f"    {name:40s} {zero_point.dtype}  {kind:14s} zero_point={zp}")
    # Bias DequantizeLinear (int32) always has zero point 0; look at the 8-bit weights only.
    weight_zps = [zp for _, _, zp in rows if zp.dtype != np.int32]
    if expect_nonzero and not any(np.any(zp != 0) for zp in weight_zps):
        raise AssertionError("expected at least one non-zero weight zero point")


def build_mlp() -> onnx.ModelProto:
    """64 -> 128 -> 10 MLP made of MatMul/Add/Relu, the float source of tiny_cnn_dynamic.onnx."""
    b = GraphBuilder(np.random.default_rng(2))
    x = b.op("MatMul", "fc1/matmul", ["features", b.weight("fc1.weight", (MLP_IN, MLP_HIDDEN), MLP_IN)])
    x = b.op("Add", "fc1/bias", [x, b.bias("fc1.bias", MLP_HIDDEN)])
    x = b.op("Relu", "fc1/relu", [x])
    x = b.op("MatMul", "fc2/matmul", [x, b.weight("fc2.weight", (MLP_HIDDEN, MLP_OUT), MLP_HIDDEN)])
    b.nodes.append(helper.make_node("Add", [x, b.bias("fc2.bias", MLP_OUT)], ["logits"], name="fc2/bias"))
    graph = b.graph(
        "tiny_mlp",
        [helper.make_tensor_value_info("features", TensorProto.FLOAT, (1, MLP_IN))],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, (1, MLP_OUT))],
    )
    return make_model(graph, "Two-layer MLP, dynamically quantized (MatMulInteger).")


def make_dynamic(out_path: Path) -> None:
    # build_mlp() returns a fresh proto; quantize_dynamic may rewrite it in place (see quantize_qdq).
    quantize_dynamic(build_mlp(), out_path, weight_type=QuantType.QInt8, per_channel=False)


# --------------------------------------------------------------------------------------------------
# tiny_transformer.onnx
# --------------------------------------------------------------------------------------------------


def _linear(b: GraphBuilder, name: str, x: str, d_in: int, d_out: int) -> str:
    y = b.op("MatMul", name, [x, b.weight(f"{name}.weight", (d_in, d_out), d_in)])
    return b.op("Add", f"{name}/bias", [y, b.bias(f"{name}.bias", d_out)])


def _layer_norm(b: GraphBuilder, name: str, x: str) -> str:
    scale = b.const(f"{name}.scale", np.ones(D_MODEL, np.float32))
    shift = b.const(f"{name}.bias", np.zeros(D_MODEL, np.float32))
    return b.op("LayerNormalization", name, [x, scale, shift], axis=-1, epsilon=1e-5)


def _split_heads(b: GraphBuilder, prefix: str, x: str, heads_shape: str, perm: Sequence[int]) -> str:
    x = b.op("Reshape", f"{prefix}/split_heads", [x, heads_shape])
    return b.op("Transpose", f"{prefix}/transpose", [x], perm=list(perm))


def build_tiny_transformer() -> onnx.ModelProto:
    """One pre-LN transformer encoder block with 4-head self-attention and an Erf-GELU MLP."""
    b = GraphBuilder(np.random.default_rng(3))
    head_dim = D_MODEL // N_HEADS
    p = "layer0"
    heads_shape = b.const(f"{p}/attn/heads_shape", np.array([0, 0, N_HEADS, head_dim], np.int64))
    merged_shape = b.const(f"{p}/attn/merged_shape", np.array([0, 0, D_MODEL], np.int64))

    h = _layer_norm(b, f"{p}/ln1", "tokens")
    q = _linear(b, f"{p}/attn/q_proj", h, D_MODEL, D_MODEL)
    k = _linear(b, f"{p}/attn/k_proj", h, D_MODEL, D_MODEL)
    v = _linear(b, f"{p}/attn/v_proj", h, D_MODEL, D_MODEL)
    q = _split_heads(b, f"{p}/attn/q", q, heads_shape, (0, 2, 1, 3))  # [b, h, s, d]
    k = _split_heads(b, f"{p}/attn/k", k, heads_shape, (0, 2, 3, 1))  # [b, h, d, s]
    v = _split_heads(b, f"{p}/attn/v", v, heads_shape, (0, 2, 1, 3))  # [b, h, s, d]

    scores = b.op("MatMul", f"{p}/attn/qk_matmul", [q, k])
    sqrt_d = b.const(f"{p}/attn/sqrt_head_dim", np.array(math.sqrt(head_dim), np.float32))
    scores = b.op("Div", f"{p}/attn/scale", [scores, sqrt_d])
    probs = b.op("Softmax", f"{p}/attn/softmax", [scores], axis=-1)
    ctx = b.op("MatMul", f"{p}/attn/av_matmul", [probs, v])
    ctx = b.op("Transpose", f"{p}/attn/merge_transpose", [ctx], perm=[0, 2, 1, 3])
    ctx = b.op("Reshape", f"{p}/attn/merge_heads", [ctx, merged_shape])
    attn = _linear(b, f"{p}/attn/out_proj", ctx, D_MODEL, D_MODEL)
    x = b.op("Add", f"{p}/attn/residual", ["tokens", attn])

    h = _layer_norm(b, f"{p}/ln2", x)
    h = _linear(b, f"{p}/mlp/fc1", h, D_MODEL, D_FF)
    # GELU(x) = 0.5 * x * (1 + erf(x / sqrt(2)))
    gelu = f"{p}/mlp/gelu"
    g = b.op("Div", f"{gelu}/div", [h, b.const(f"{gelu}/sqrt2", np.array(math.sqrt(2), np.float32))])
    g = b.op("Erf", f"{gelu}/erf", [g])
    g = b.op("Add", f"{gelu}/add", [g, b.const(f"{gelu}/one", np.array(1.0, np.float32))])
    g = b.op("Mul", f"{gelu}/mul", [h, g])
    g = b.op("Mul", f"{gelu}/half", [g, b.const(f"{gelu}/half_c", np.array(0.5, np.float32))])
    h = _linear(b, f"{p}/mlp/fc2", g, D_FF, D_MODEL)
    b.nodes.append(helper.make_node("Add", [x, h], ["hidden"], name=f"{p}/mlp/residual"))

    dims = ["batch", "seq", D_MODEL]
    graph = b.graph(
        "tiny_transformer",
        [helper.make_tensor_value_info("tokens", TensorProto.FLOAT, dims)],
        [helper.make_tensor_value_info("hidden", TensorProto.FLOAT, dims)],
    )
    return make_model(graph, "One transformer encoder block (4 heads, d_model 64) with symbolic batch/seq.")


# --------------------------------------------------------------------------------------------------
# control_flow.onnx
# --------------------------------------------------------------------------------------------------


def _branch(
    name: str, ops: Sequence[tuple[str, str, list[str]]], consts: dict[str, float]
) -> onnx.GraphProto:
    """A straight-line If branch over the outer-scope tensor ``x``; its last op produces ``<name>/y``."""
    nodes = []
    for i, (op_type, node_name, inputs) in enumerate(ops):
        out = f"{name}/y" if i == len(ops) - 1 else f"{node_name}_out"
        nodes.append(helper.make_node(op_type, inputs, [out], name=node_name))
    inits = [numpy_helper.from_array(np.array(v, np.float32), k) for k, v in consts.items()]
    out_vi = helper.make_tensor_value_info(f"{name}/y", TensorProto.FLOAT, [4])
    return helper.make_graph(nodes, name, [], [out_vi], inits)


def build_control_flow() -> onnx.ModelProto:
    """If (sign of sum(x) picks a branch) feeding a Loop that accumulates i * v over ``trip_count`` steps."""
    then_g = _branch(
        "gate/then",
        [
            ("Mul", "gate/then/double", ["x", "gate/then/two"]),
            ("Add", "gate/then/shift", ["gate/then/double_out", "gate/then/one"]),
        ],
        {"gate/then/two": 2.0, "gate/then/one": 1.0},
    )
    else_g = _branch(
        "gate/else",
        [
            ("Neg", "gate/else/neg", ["x"]),
            ("Relu", "gate/else/relu", ["gate/else/neg_out"]),
            ("Mul", "gate/else/scale", ["gate/else/relu_out", "gate/else/half"]),
        ],
        {"gate/else/half": 0.5},
    )

    body_nodes = [
        helper.make_node("Identity", ["cond_in"], ["cond_out"], name="loop/body/keep_going"),
        helper.make_node("Cast", ["iter"], ["iter_f"], name="loop/body/iter_to_float", to=TensorProto.FLOAT),
        helper.make_node("Mul", ["v", "iter_f"], ["step"], name="loop/body/weight"),
        helper.make_node("Add", ["acc_in", "step"], ["acc_out"], name="loop/body/accumulate"),
        helper.make_node("Identity", ["acc_out"], ["scan_out"], name="loop/body/record"),
    ]
    body = helper.make_graph(
        body_nodes,
        "loop/body",
        [
            helper.make_tensor_value_info("iter", TensorProto.INT64, []),
            helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
            helper.make_tensor_value_info("acc_in", TensorProto.FLOAT, [4]),
        ],
        [
            helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
            helper.make_tensor_value_info("acc_out", TensorProto.FLOAT, [4]),
            helper.make_tensor_value_info("scan_out", TensorProto.FLOAT, [4]),
        ],
    )

    nodes = [
        helper.make_node("ReduceSum", ["x"], ["x_sum"], name="gate/sum", keepdims=0),
        helper.make_node("Greater", ["x_sum", "zero"], ["is_positive"], name="gate/is_positive"),
        helper.make_node(
            "If", ["is_positive"], ["v"], name="gate/if", then_branch=then_g, else_branch=else_g
        ),
        helper.make_node(
            "Loop",
            ["trip_count", "loop/keep_going", "acc_init"],
            ["total", "history"],
            name="loop",
            body=body,
        ),
    ]
    inits = [
        numpy_helper.from_array(np.array(0.0, np.float32), "zero"),
        numpy_helper.from_array(np.array(True), "loop/keep_going"),
        numpy_helper.from_array(np.zeros(4, np.float32), "acc_init"),
    ]
    graph = helper.make_graph(
        nodes,
        "control_flow",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [4]),
            helper.make_tensor_value_info("trip_count", TensorProto.INT64, []),
        ],
        [
            helper.make_tensor_value_info("total", TensorProto.FLOAT, [4]),
            helper.make_tensor_value_info("history", TensorProto.FLOAT, ["steps", 4]),
        ],
        inits,
    )
    return make_model(graph, "If with two small branches and a Loop computing a weighted cumulative sum.")


# --------------------------------------------------------------------------------------------------
# unnamed_nodes.onnx
# --------------------------------------------------------------------------------------------------


def build_unnamed_nodes() -> onnx.ModelProto:
    """7 nodes, none named; weights live in Constant nodes rather than initializers."""
    rng = np.random.default_rng(4)
    w = rng.standard_normal((8, 4)).astype(np.float32)
    bias = rng.standard_normal(4).astype(np.float32)
    nodes = [
        helper.make_node("Constant", [], ["w"], value=numpy_helper.from_array(w, "w")),
        helper.make_node("MatMul", ["x", "w"], ["h0"]),
        helper.make_node("Constant", [], ["b"], value=numpy_helper.from_array(bias, "b")),
        helper.make_node("Add", ["h0", "b"], ["h1"]),
        helper.make_node("Relu", ["h1"], ["h2"]),
        helper.make_node("Sigmoid", ["h1"], ["h3"]),
        helper.make_node("Mul", ["h2", "h3"], ["y"]),
    ]
    assert all(n.name == "" for n in nodes)
    graph = helper.make_graph(
        nodes,
        "unnamed_nodes",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])],
    )
    return make_model(graph, "Nodes without names; weights held in Constant nodes.")


# --------------------------------------------------------------------------------------------------
# Verification and driver
# --------------------------------------------------------------------------------------------------

DYNAMIC_DIMS = {"batch": 2, "seq": 7, "steps": 5}


def sample_feeds(model: onnx.ModelProto, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Inputs for one run: random floats; symbolic dims from ``DYNAMIC_DIMS``; int64 scalars are 5."""
    feeds: dict[str, np.ndarray] = {}
    inits = {t.name for t in model.graph.initializer}
    for vi in model.graph.input:
        if vi.name in inits:
            continue
        tt = vi.type.tensor_type
        shape = [d.dim_value if d.HasField("dim_value") else DYNAMIC_DIMS[d.dim_param] for d in tt.shape.dim]
        if tt.elem_type == TensorProto.FLOAT:
            feeds[vi.name] = rng.standard_normal(shape).astype(np.float32)
        elif tt.elem_type == TensorProto.INT64:
            feeds[vi.name] = np.full(shape, 5, np.int64)
        else:
            raise ValueError(f"no sample data for input {vi.name} of type {tt.elem_type}")
    return feeds


def verify(path: Path) -> tuple[int, int]:
    """check_model + one onnxruntime run; returns (top-level nodes, nodes including subgraphs)."""
    onnx.checker.check_model(str(path), full_check=True)
    model = onnx.load_model(str(path))
    options = ort.SessionOptions()
    options.log_severity_level = 3
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    outputs = session.run(None, sample_feeds(model, np.random.default_rng(5)))
    for out in outputs:
        if not np.all(np.isfinite(out)):
            raise AssertionError(f"{path.name}: non-finite output")
    return len(model.graph.node), count_nodes(model.graph)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out-dir", type=Path, default=OUT_DIR, help="where to write the .onnx files")
    args = parser.parse_args(argv)
    out: Path = args.out_dir

    print(f"onnx {onnx.__version__}, onnxruntime {ort.__version__}, numpy {np.__version__}")
    written: list[Path] = []

    save(build_tiny_cnn(), out / "tiny_cnn.onnx")
    written.append(out / "tiny_cnn.onnx")

    for fname, wtype, per_channel, expect_nonzero in [
        ("tiny_cnn_qdq_u8.onnx", QuantType.QUInt8, False, True),
        ("tiny_cnn_qdq_s8_perchannel.onnx", QuantType.QInt8, True, False),
    ]:
        quantized = quantize_qdq(
            out / "tiny_cnn.onnx", out / fname, weight_type=wtype, per_channel=per_channel
        )
        print(f"  weight/bias DequantizeLinear in {fname}:")
        report_weight_zero_points(quantized, expect_nonzero=expect_nonzero)
        written.append(out / fname)

    make_dynamic(out / "tiny_cnn_dynamic.onnx")
    written.append(out / "tiny_cnn_dynamic.onnx")

    for fname, builder in [
        ("tiny_transformer.onnx", build_tiny_transformer),
        ("control_flow.onnx", build_control_flow),
        ("unnamed_nodes.onnx", build_unnamed_nodes),
    ]:
        save(builder(), out / fname)
        written.append(out / fname)

    print(f"\n{'file':34s} {'nodes':>5s} {'+sub':>5s}  {'sha256[:16]':16s}  op types")
    for path in written:
        top, total = verify(path)
        ops = Counter(n.op_type for n in onnx.load_model(str(path)).graph.node)
        digest = hashlib.sha256(path.read_bytes()).hexdigest()[:16]
        op_list = ", ".join(f"{k}x{v}" if v > 1 else k for k, v in sorted(ops.items()))
        print(f"{path.name:34s} {top:5d} {total:5d}  {digest}  {op_list}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
