"""BERT-like encoders built with onnx.helper in the shape torch's TorchScript exporter writes them.

Used by ``benchmarks/bench_big.py`` and by the tests, so both measure and check the same graphs. No torch:
the structure copies what ``torch.onnx.export(dynamo=False)`` writes for ``samples/make_transformers.py``'s
encoder (compare ``samples/onnx/bert_scoped.onnx``), including its shape computations: every ``view`` of a
dynamic shape is ``Shape → Gather → Unsqueeze → Concat → Reshape`` with ``Constant`` index nodes, the
position ids are ``Shape → Gather → Cast → Range → Unsqueeze → Expand``, and the attention mask is built from
the token ids. Weights are random (numpy seed), so the files are the same bytes on every run.

Operators: 31 outside the layers + 89 per layer (29 of them ``Constant``). ``layers_for(n)`` gives the layer
count whose model is closest to ``n`` operators: 4 layers → 387, 40 → 3,591, 224 → 19,967.

Names (``names=``):
    * ``scoped``: ``/encoder/layer.0/attention/self/query/MatMul``, outputs ``<node>_output_0``, as the
      TorchScript exporter writes them;
    * ``flat``: ``node_MatMul_64``, outputs ``val_64``, and no other hint of structure;
    * ``dynamo``: flat names plus the node metadata torch's dynamo exporter writes (``namespace``,
      ``pkg.torch.onnx.name_scopes``, ``pkg.torch.onnx.class_hierarchy``), in its format.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPS_OUTSIDE_LAYERS = 31
OPS_PER_LAYER = 89
NAME_STYLES = ("scoped", "flat", "dynamo")
# module attribute name → class, for the dynamo-style metadata
_CLASSES = {
    "": "Bert", "embeddings": "Embeddings", "encoder": "Encoder", "attention": "Attention", "self": "SelfAttention",
    "output": "SelfOutput", "intermediate": "Intermediate", "intermediate_act_fn": "torch.nn.GELU",
    "pooler": "Pooler", "activation": "torch.nn.Tanh", "LayerNorm": "torch.nn.LayerNorm",
    "word_embeddings": "torch.nn.Embedding", "position_embeddings": "torch.nn.Embedding",
}


def layers_for(operators: int) -> int:
    """The layer count whose encoder has closest to ``operators`` operators (at least 1)."""
    return max(1, round((operators - OPS_OUTSIDE_LAYERS) / OPS_PER_LAYER))


def operator_count(layers: int) -> int:
    return OPS_OUTSIDE_LAYERS + OPS_PER_LAYER * layers


@dataclass
class _Builder:
    names: str
    rng: np.random.Generator
    nodes: list[onnx.NodeProto] = field(default_factory=list)
    initializers: list[TensorProto] = field(default_factory=list)
    scope: tuple[str, ...] = ()
    per_scope: Counter[tuple[tuple[str, ...], str]] = field(default_factory=Counter)
    serial: int = 0

    def op(self, op_type: str, inputs: list[str], scope: tuple[str, ...] | None = None, **attrs: object) -> str:
        """Add a one-output node in the current scope (or ``scope``); return its output's name."""
        scope = self.scope if scope is None else scope
        self.serial += 1
        if self.names == "scoped":
            k = self.per_scope[(scope, op_type)]
            self.per_scope[(scope, op_type)] += 1
            name = "/" + "/".join((*scope, f"{op_type}_{k}" if k else op_type))
            output = f"{name}_output_0"
        else:
            name, output = f"node_{op_type}_{self.serial}", f"val_{self.serial}"
        node = helper.make_node(op_type, inputs, [output], name=name, **attrs)
        if self.names == "dynamo":
            _dynamo_metadata(node, scope, op_type, self.serial)
        self.nodes.append(node)
        return output

    def const(self, value: np.ndarray, scoped: bool = True) -> str:
        """A ``Constant`` node; the exporter leaves Unsqueeze axes outside any scope (``scoped=False``)."""
        tensor = numpy_helper.from_array(value, "")
        if scoped or self.names != "scoped":
            return self.op("Constant", [], value=tensor)
        self.serial += 1
        output = f"onnx::Unsqueeze_{self.serial}"
        self.nodes.append(helper.make_node("Constant", [], [output], name=f"Constant_{self.serial}", value=tensor))
        return output

    def weight(self, name: str, shape: tuple[int, ...], scale: float = 0.1) -> str:
        array = (self.rng.standard_normal(shape) * scale).astype(np.float32)
        self.initializers.append(numpy_helper.from_array(array, name))
        return name

    def linear(self, x: str, fan_in: int, fan_out: int, module: str) -> str:
        serial = len(self.initializers)
        weight = self.weight(f"onnx::MatMul_{serial}", (fan_in, fan_out))
        bias = self.weight(f"{module}.bias", (fan_out,))
        outer = self.scope
        self.scope = (*outer, module.rsplit(".", 1)[-1])
        y = self.op("Add", [bias, self.op("MatMul", [x, weight])])
        self.scope = outer
        return y

    def leading_dims(self, x: str) -> list[str]:
        """``x.size()[:2]`` as 1-element tensors ready for a Concat, in the exporter's order: Shape, Constant,
        Gather for each dim, then a Constant and an Unsqueeze for each."""
        gathered = [self.op("Gather", [self.op("Shape", [x]), self.const(np.array(axis, np.int64))], axis=0)
                    for axis in (0, 1)]
        return [self.op("Unsqueeze", [g, self.const(np.array([0], np.int64), scoped=False)]) for g in gathered]

    def view(self, x: str, tail: list[int]) -> str:
        """``x.view(x.size()[:2] + tail)``: the dynamic dims are read from ``x`` as the exporter does."""
        parts = self.leading_dims(x) + [self.const(np.array([d], np.int64)) for d in tail]
        return self.op("Reshape", [x, self.op("Concat", parts, axis=0)], allowzero=0)


def _dynamo_metadata(node: onnx.NodeProto, scope: tuple[str, ...], op_type: str, serial: int) -> None:
    paths = [".".join(scope[: i + 1]).replace("/", ".") for i in range(len(scope))]
    fx_name = f"{op_type.lower()}_{serial}"
    classes = ["__main__.Bert"] + [_class_of(part) for part in scope]
    namespace = "/".join([": __main__.Bert"] + [f"{p}: {c}" for p, c in zip(paths, classes[1:], strict=True)])
    helper.set_metadata_props(node, {
        "namespace": f"{namespace}/{fx_name}: aten.{op_type.lower()}.default",
        "pkg.torch.onnx.name_scopes": repr(["", *paths, fx_name]),
        "pkg.torch.onnx.class_hierarchy": repr([*classes, f"aten.{op_type.lower()}.default"]),
    })


def _class_of(part: str) -> str:
    if part.startswith("layer."):
        return "__main__.Layer"
    if part in ("query", "key", "value", "dense"):
        return "torch.nn.Linear"
    name = _CLASSES.get(part, "torch.nn.Module")
    return name if name.startswith("torch.") else f"__main__.{name}"


def build(layers: int, names: str = "scoped", hidden: int = 32, heads: int = 4, intermediate: int = 128,
          vocab: int = 512, seed: int = 0) -> onnx.ModelProto:
    """The encoder with ``layers`` layers; input ``input_ids`` int64 [batch, sequence]."""
    if names not in NAME_STYLES:
        raise ValueError(f"names must be one of {NAME_STYLES}, not {names!r}")
    b = _Builder(names, np.random.default_rng(seed))
    head_size = hidden // heads
    ids = "input_ids"

    # the additive attention mask: (1 - (ids != 0)[:, None, None, :]) * float32.min
    b.const(np.array(0, np.int64))  # the pooler's index, emitted first as the exporter does
    pad = b.const(np.array(0, np.int64))
    keep = b.op("Not", [b.op("Equal", [ids, pad])])
    keep = b.op("Unsqueeze", [b.op("Unsqueeze", [keep, b.const(np.array([1], np.int64))]),
                              b.const(np.array([2], np.int64))])
    inverted = b.op("Sub", [b.const(np.array(1.0, np.float32)), b.op("Cast", [keep], to=TensorProto.FLOAT)])
    mask = b.op("Mul", [inverted, b.const(np.array(np.finfo(np.float32).min, np.float32))])
    pooler_index = b.nodes[0].output[0]

    b.scope = ("embeddings",)
    length = b.op("Gather", [b.op("Shape", [ids]), b.const(np.array(1, np.int64))], axis=0)
    length = b.op("Cast", [length], to=TensorProto.INT64)
    positions = b.op("Range", [b.const(np.array(0, np.int64)), length, b.const(np.array(1, np.int64))])
    positions = b.op("Unsqueeze", [positions, b.const(np.array([0], np.int64))])
    positions = b.op("Expand", [positions, b.op("Shape", [ids])])
    words = b.op("Gather", [b.weight("embeddings.word_embeddings.weight", (vocab, hidden)), ids],
                 scope=("embeddings", "word_embeddings"))
    placed = b.op("Gather", [b.weight("embeddings.position_embeddings.weight", (64, hidden)), positions],
                  scope=("embeddings", "position_embeddings"))
    x = _layer_norm(b, b.op("Add", [words, placed]), "embeddings", hidden)

    for i in range(layers):
        x = _layer(b, x, mask, f"encoder.layer.{i}", hidden, heads, head_size, intermediate)

    last = x
    b.scope = ("pooler",)
    first = b.op("Gather", [last, pooler_index], axis=1)
    pooled = b.op("Gemm", [first, b.weight("pooler.dense.weight", (hidden, hidden)),
                           b.weight("pooler.dense.bias", (hidden,))], scope=("pooler", "dense"), transB=1)
    pooled = b.op("Tanh", [pooled], scope=("pooler", "activation"))

    graph = helper.make_graph(
        b.nodes, "bert", [helper.make_tensor_value_info(ids, TensorProto.INT64, ["batch", "sequence"])],
        [helper.make_tensor_value_info(last, TensorProto.FLOAT, ["batch", "sequence", hidden]),
         helper.make_tensor_value_info(pooled, TensorProto.FLOAT, ["batch", hidden])],
        b.initializers,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8,
                              producer_name="annograph/benchmarks/transformer_models.py", producer_version="1")
    assert len(model.graph.node) == operator_count(layers), len(model.graph.node)
    return model


def _layer_norm(b: _Builder, x: str, module: str, hidden: int) -> str:
    gamma = b.weight(f"{module}.LayerNorm.weight", (hidden,))
    beta = b.weight(f"{module}.LayerNorm.bias", (hidden,))
    return b.op("LayerNormalization", [x, gamma, beta], scope=(*b.scope, "LayerNorm"), axis=-1, epsilon=1e-5)


def _layer(b: _Builder, x: str, mask: str, module: str, hidden: int, heads: int, head_size: int,
           intermediate: int) -> str:
    layer_scope = ("encoder", module.rsplit(".", 2)[-2] + "." + module.rsplit(".", 1)[-1])
    b.scope = (*layer_scope, "attention", "self")
    q = b.op("Transpose", [b.view(b.linear(x, hidden, hidden, f"{module}.attention.self.query"), [heads, head_size])],
             perm=[0, 2, 1, 3])
    k = b.view(b.linear(x, hidden, hidden, f"{module}.attention.self.key"), [heads, head_size])
    v = b.op("Transpose", [b.view(b.linear(x, hidden, hidden, f"{module}.attention.self.value"), [heads, head_size])],
             perm=[0, 2, 1, 3])
    k = b.op("Transpose", [k], perm=[0, 2, 3, 1])
    scores = b.op("Div", [b.op("MatMul", [q, k]), b.const(np.array(np.sqrt(head_size), np.float32))])
    probs = b.op("Softmax", [b.op("Add", [scores, mask])], axis=-1)
    context = b.op("Transpose", [b.op("MatMul", [probs, v])], perm=[0, 2, 1, 3])
    shape = b.op("Concat", [*b.leading_dims(context), b.const(np.array([hidden], np.int64))], axis=0)
    context = b.op("Reshape", [context, shape], allowzero=0)

    b.scope = (*layer_scope, "attention", "output")
    attended = b.op("Add", [b.linear(context, hidden, hidden, f"{module}.attention.output.dense"), x])
    attended = _layer_norm(b, attended, f"{module}.attention.output", hidden)

    b.scope = (*layer_scope, "intermediate")
    h = b.linear(attended, hidden, intermediate, f"{module}.intermediate.dense")
    b.scope = (*layer_scope, "intermediate", "intermediate_act_fn")
    gelu = b.op("Add", [b.op("Erf", [b.op("Div", [h, b.const(np.array(np.sqrt(2.0), np.float32))])]),
                        b.const(np.array(1.0, np.float32))])
    gelu = b.op("Mul", [b.op("Mul", [h, gelu]), b.const(np.array(0.5, np.float32))])

    b.scope = (*layer_scope, "output")
    out = b.op("Add", [b.linear(gelu, intermediate, hidden, f"{module}.output.dense"), attended])
    return _layer_norm(b, out, f"{module}.output", hidden)


def profile(model: Path, folder: Path, runs: int = 3) -> Path:
    """Run ``model`` ``runs`` times in onnxruntime (CPU, one thread, no graph optimisation, so every operator is
    timed by its own name) on 16 tokens with profiling on; return the profile written in ``folder``."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.enable_profiling = True
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.profile_file_prefix = str(folder / f"{model.stem}_ort")
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])
    feeds = {"input_ids": np.arange(1, 17, dtype=np.int64).reshape(1, 16)}
    for _ in range(runs):
        session.run(None, feeds)
    return Path(session.end_profiling())


def write(path: Path, layers: int, names: str = "scoped", **kwargs: int) -> Path:
    """Build and save; returns ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    onnx.save_model(build(layers, names, **kwargs), str(path))
    return path
