"""Build a BERT-like encoder as a valid ONNX model, with the node names of one of torch's exporters.

    python samples/tools/make_transformer.py OUT.onnx [--layers 12] [--naming torch|flat|dynamo]

Namings:
    torch   the TorchScript exporter's scoped names: ``/encoder/layer.3/attention/self/query/MatMul``.
    flat    the dynamo exporter's flat names (``node_MatMul_64``) and no metadata: nothing to group by.
    dynamo  flat names plus the metadata torch's dynamo exporter writes on every node:
            ``pkg.torch.onnx.name_scopes`` (``['', 'encoder', 'encoder.layer.3', …, 'linear_12']``) and
            ``namespace`` (``: transformers.BertModel/encoder: …/linear_12: aten.linear.default``).

Per layer: Q/K/V projections, head split (Reshape/Transpose), scaled scores with the additive mask, Softmax,
context, output projection, residual + LayerNormalization, Erf GELU feed-forward, residual +
LayerNormalization: 34 drawn operators and 6 ``Constant`` nodes. Plus embeddings (3), mask preparation at the
top level (4, unscoped, read by every layer) and a pooler (4). ``layers=12`` gives 419 drawn operators,
``layers=105`` 3,581. Weights are seeded random numbers, so the file is reproducible; ``onnx.checker`` accepts
it and onnxruntime runs it.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

SEQ, HIDDEN, HEADS, FFN, VOCAB = 8, 16, 2, 32, 50


class _Namer:
    """Node names and metadata in the chosen exporter's style."""

    def __init__(self, naming: str) -> None:
        self.naming = naming
        self.counts: dict[str, int] = {}
        self.fx_count = 0

    def __call__(self, scope: tuple[str, ...], op: str, module_class: str = "") -> tuple[str, dict[str, str]]:
        key = op if self.naming != "torch" else "/".join((*scope, op))
        k = self.counts.get(key, 0)
        self.counts[key] = k + 1
        if self.naming == "torch":
            return "/" + "/".join((*scope, op if k == 0 else f"{op}_{k}")), {}
        name = f"node_{op}_{sum(self.counts.values()) - 1}"
        if self.naming == "flat":
            return name, {}
        self.fx_count += 1
        fx = f"{op.lower()}_{self.fx_count}"
        paths = [".".join(scope[:i + 1]) for i in range(len(scope))]
        classes = ["transformers.BertModel"]
        classes += [f"transformers.{c.split('.')[0].title()}Module" for c in scope]
        name_scopes = ["", *paths, fx]
        namespace = "/".join(f"{p}: {c}" for p, c in zip(["", *paths], classes))
        namespace += f"/{fx}: aten.{op.lower()}.default"
        return name, {"pkg.torch.onnx.name_scopes": repr(name_scopes), "namespace": namespace,
                      "pkg.torch.onnx.class_hierarchy": repr([*classes, f"aten.{op.lower()}.default"])}


def transformer_model(layers: int = 12, naming: str = "torch", seed: int = 0):  # type: ignore[no-untyped-def]
    """The encoder as an ``onnx.ModelProto``."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    if naming not in ("torch", "flat", "dynamo"):
        raise ValueError(f"naming must be torch, flat or dynamo, not {naming!r}")
    rng = np.random.default_rng(seed)
    name = _Namer(naming)
    nodes: list = []
    inits: list = []
    counter = [0]

    def tensor() -> str:
        counter[0] += 1
        return f"t{counter[0]}"

    def weight(*shape: int) -> str:
        w = f"w{len(inits)}"
        inits.append(numpy_helper.from_array((rng.standard_normal(shape) * 0.1).astype(np.float32), w))
        return w

    def op(scope: tuple[str, ...], op_type: str, inputs: list[str], **attrs: object) -> str:
        node_name, meta = name(scope, op_type)
        out = tensor()
        node = helper.make_node(op_type, inputs, [out], name=node_name, **attrs)
        for key, value in meta.items():
            node.metadata_props.add(key=key, value=value)
        nodes.append(node)
        return out

    def const(scope: tuple[str, ...], array: np.ndarray) -> str:
        return op(scope, "Constant", [], value=numpy_helper.from_array(array))

    def linear(scope: tuple[str, ...], x: str, n_in: int, n_out: int) -> str:
        return op(scope, "Add", [op(scope, "MatMul", [x, weight(n_in, n_out)]), weight(n_out)])

    def layer_norm(scope: tuple[str, ...], x: str) -> str:
        return op(scope, "LayerNormalization", [x, weight(HIDDEN), weight(HIDDEN)], axis=-1)

    head = HIDDEN // HEADS
    e = ("embeddings",)
    x = op(e + ("word_embeddings",), "Gather", [weight(VOCAB, HIDDEN), "input_ids"])
    x = layer_norm(e + ("LayerNorm",), op(e, "Add", [x, weight(SEQ, HIDDEN)]))
    m = op((), "Unsqueeze", ["attention_mask", const((), np.array([1, 2], np.int64))])
    m = op((), "Cast", [m], to=TensorProto.FLOAT)
    m = op((), "Sub", [const((), np.array(1.0, np.float32)), m])
    mask = op((), "Mul", [m, const((), np.array(-10000.0, np.float32))])
    for i in range(layers):
        s = ("encoder", f"layer.{i}", "attention", "self")
        split = const(s, np.array([1, SEQ, HEADS, head], np.int64))
        perms = {"query": [0, 2, 1, 3], "key": [0, 2, 3, 1], "value": [0, 2, 1, 3]}
        q, k, v = (op(s, "Transpose", [op(s, "Reshape", [linear(s + (part,), x, HIDDEN, HIDDEN), split])],
                      perm=perm) for part, perm in perms.items())
        scores = op(s, "Div", [op(s, "MatMul", [q, k]), const(s, np.array(np.sqrt(head), np.float32))])
        probs = op(s, "Softmax", [op(s, "Add", [scores, mask])], axis=-1)
        ctx = op(s, "Transpose", [op(s, "MatMul", [probs, v])], perm=[0, 2, 1, 3])
        ctx = op(s, "Reshape", [ctx, const(s, np.array([1, SEQ, HIDDEN], np.int64))])
        o = ("encoder", f"layer.{i}", "attention", "output")
        x = layer_norm(o + ("LayerNorm",), op(o, "Add", [linear(o + ("dense",), ctx, HIDDEN, HIDDEN), x]))
        f = ("encoder", f"layer.{i}", "intermediate")
        h = linear(f + ("dense",), x, HIDDEN, FFN)
        g = f + ("intermediate_act_fn",)
        erf = op(g, "Erf", [op(g, "Div", [h, const(g, np.array(np.sqrt(2.0), np.float32))])])
        h = op(g, "Mul", [op(g, "Mul", [h, op(g, "Add", [erf, const(g, np.array(1.0, np.float32))])]),
                          const(g, np.array(0.5, np.float32))])
        o = ("encoder", f"layer.{i}", "output")
        x = layer_norm(o + ("LayerNorm",), op(o, "Add", [linear(o + ("dense",), h, FFN, HIDDEN), x]))
    p = ("pooler",)
    first = op(p, "Gather", [x, const(p, np.array([0], np.int64))], axis=1)
    pooled = op(p + ("activation",), "Tanh", [linear(p + ("dense",), first, HIDDEN, HIDDEN)])
    graph = helper.make_graph(
        nodes, "bert_like",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, [1, SEQ]),
         helper.make_tensor_value_info("attention_mask", TensorProto.INT64, [1, SEQ])],
        [helper.make_tensor_value_info(x, TensorProto.FLOAT, [1, SEQ, HIDDEN]),
         helper.make_tensor_value_info(pooled, TensorProto.FLOAT, [1, 1, HIDDEN])],
        inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              producer_name="make_transformer")
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--layers", type=int, default=12)
    parser.add_argument("--naming", choices=("torch", "flat", "dynamo"), default="torch")
    args = parser.parse_args()
    import onnx

    onnx.save(transformer_model(args.layers, args.naming), str(args.out))


if __name__ == "__main__":
    main()
