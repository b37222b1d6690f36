"""A small text-to-speech-like transformer built with onnx.helper the way torch.onnx.export writes one.

The encoder is BERT-like: token ids and an attention mask with dynamic ``batch``/``sequence`` dims, position ids
from ``Range(0, Shape(ids)[1], 1)``, head splits through ``Shape → Gather → Unsqueeze → Concat → Reshape`` chains with
the head size computed by ``Div``, the mask broadcast by torch's ``expand`` pattern (``ConstantOfShape → Mul → Equal
→ Where → Expand``), and VITS-style relative-position logits (pad/reshape/slice on computed shapes). A duration
predictor then sets the number of output frames (``Ceil(Exp(.))`` summed), and the decoder runs on that many frames.
onnx's shape inference stops at these data-dependent shapes even with every input dim pinned; the decoder's
length depends on the values themselves.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HIDDEN, HEADS, FFN, VOCAB, POSITIONS, WINDOW, MELS = 32, 4, 64, 50, 128, 4, 16


class _Builder:
    def __init__(self, seed: int, hidden: int = HIDDEN, heads: int = HEADS, ffn: int = FFN) -> None:
        self.rng = np.random.default_rng(seed)
        self.hidden, self.heads, self.ffn, self.window = hidden, heads, ffn, WINDOW
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self.count = 0

    def const(self, name: str, array: np.ndarray) -> str:
        self.inits.append(numpy_helper.from_array(array, name))
        return name

    def weight(self, name: str, *shape: int) -> str:
        return self.const(name, (self.rng.standard_normal(shape) * 0.05).astype(np.float32))

    def op(self, op_type: str, inputs: list[str], scope: str, outputs: int = 1, **attrs: object) -> str:
        self.count += 1
        names = [f"/{scope}/{op_type}_{self.count}_output_{i}" for i in range(outputs)]
        self.nodes.append(helper.make_node(op_type, inputs, names, name=f"/{scope}/{op_type}_{self.count}", **attrs))
        return names[0]

    def dim(self, x: str, axis: int, scope: str) -> str:
        """``x.shape[axis]`` as a 1-element int64 tensor, as torch writes ``x.size(axis)``."""
        shape = self.op("Shape", [x], scope)
        scalar = self.op("Gather", [shape, self.const(f"/{scope}/axis{self.count}", np.array(axis, np.int64))], scope,
                         axis=0)
        return self.op("Unsqueeze", [scalar, self.const(f"/{scope}/zero{self.count}", np.array([0], np.int64))], scope)

    def linear(self, x: str, scope: str, cin: int, cout: int) -> str:
        y = self.op("MatMul", [x, self.weight(f"{scope}.weight", cin, cout)], scope)
        return self.op("Add", [self.weight(f"{scope}.bias", cout), y], scope)

    def layer_norm(self, x: str, scope: str) -> str:
        return self.op("LayerNormalization", [x, self.const(f"{scope}.scale", np.ones(self.hidden, np.float32)),
                                              self.const(f"{scope}.bias", np.zeros(self.hidden, np.float32))],
                       scope, axis=-1, epsilon=1e-12)

    def split_heads(self, x: str, scope: str) -> str:
        batch, seq = self.dim(x, 0, scope), self.dim(x, 1, scope)
        hidden = self.dim(x, 2, scope)
        heads = self.const(f"/{scope}/heads{self.count}", np.array([self.heads], np.int64))
        size = self.op("Div", [hidden, heads], scope)
        shape = self.op("Concat", [batch, seq, self.const(f"/{scope}/h{self.count}", np.array([self.heads], np.int64)),
                                   size], scope, axis=0)
        return self.op("Transpose", [self.op("Reshape", [x, shape], scope)], scope, perm=[0, 2, 1, 3])

    def expand_like_torch(self, x: str, shape: str, scope: str) -> str:
        """torch's ``x.expand(shape)`` export: -1 entries of ``shape`` keep the input's size."""
        ones = self.op("ConstantOfShape", [self.op("Shape", [shape], scope)], scope,
                       value=helper.make_tensor("v", TensorProto.INT64, [1], [1]))
        minus = self.op("Mul", [ones, self.const(f"/{scope}/m1_{self.count}", np.array(-1, np.int64))], scope)
        same = self.op("Equal", [shape, minus], scope)
        return self.op("Expand", [x, self.op("Where", [same, ones, shape], scope)], scope)

    def int64(self, scope: str, *values: int) -> str:
        return self.const(f"/{scope}/c{self.count}_{len(self.inits)}", np.array(values, np.int64))

    def relative_logits(self, q: str, scope: str) -> str:
        """Windowed relative-position logits turned into absolute positions by pad/reshape/slice on computed
        shapes, as VITS-style TTS encoders export: every shape here depends on the sequence length's value."""
        size = self.hidden // self.heads
        table = self.weight(f"{scope}/emb_rel_k", 1, 2 * self.window + 1, size)
        batch, heads, length = self.dim(q, 0, scope), self.dim(q, 1, scope), self.dim(q, 2, scope)
        zero = self.int64(scope, 0)
        pad = self.op("Max", [self.op("Sub", [length, self.int64(scope, self.window + 1)], scope), zero], scope)
        start = self.op("Max", [self.op("Sub", [self.int64(scope, self.window + 1), length], scope), zero], scope)
        span = self.op("Sub", [self.op("Mul", [length, self.int64(scope, 2)], scope), self.int64(scope, 1)], scope)
        padded = self.op("Pad", [table, self.op("Concat", [zero, pad, zero, zero, pad, zero], scope, axis=0)], scope)
        used = self.op("Slice", [padded, start, self.op("Add", [start, span], scope), self.int64(scope, 1)], scope)
        logits = self.op("MatMul", [q, self.op("Transpose", [used], scope, perm=[0, 2, 1])], scope)
        # [b, h, l, 2l-1] → pad one column → flatten → pad l-1 → [b, h, l+1, 2l-1] → keep [:, :, :l, l-1:]
        wide = self.op("Pad", [logits, self.int64(scope, 0, 0, 0, 0, 0, 0, 0, 1)], scope)
        flat = self.op("Reshape", [wide, self.op("Concat", [batch, heads, self.op(
            "Mul", [length, self.op("Mul", [length, self.int64(scope, 2)], scope)], scope)], scope, axis=0)], scope)
        less = self.op("Sub", [length, self.int64(scope, 1)], scope)
        flat = self.op("Pad", [flat, self.op("Concat", [zero, zero, zero, zero, zero, less], scope, axis=0)], scope)
        grid = self.op("Reshape", [flat, self.op("Concat", [batch, heads, self.op(
            "Add", [length, self.int64(scope, 1)], scope), span], scope, axis=0)], scope)
        return self.op("Slice", [grid, self.op("Concat", [zero, less], scope, axis=0),
                                 self.op("Concat", [length, span], scope, axis=0), self.int64(scope, 2, 3)], scope)

    def attention(self, x: str, mask: str, scope: str) -> str:
        q = self.split_heads(self.linear(x, f"{scope}/query", self.hidden, self.hidden), scope)
        k = self.split_heads(self.linear(x, f"{scope}/key", self.hidden, self.hidden), scope)
        v = self.split_heads(self.linear(x, f"{scope}/value", self.hidden, self.hidden), scope)
        scores = self.op("MatMul", [q, self.op("Transpose", [k], scope, perm=[0, 1, 3, 2])], scope)
        scores = self.op("Add", [scores, self.relative_logits(q, scope)], scope)
        root = self.const(f"/{scope}/sqrt", np.array(np.sqrt(self.hidden // self.heads), np.float32))
        scaled = self.op("Div", [scores, root], scope)
        probs = self.op("Softmax", [self.op("Add", [scaled, mask], scope)], scope, axis=-1)
        context = self.op("Transpose", [self.op("MatMul", [probs, v], scope)], scope, perm=[0, 2, 1, 3])
        batch, seq = self.dim(context, 0, scope), self.dim(context, 1, scope)
        hidden = self.const(f"/{scope}/hidden", np.array([self.hidden], np.int64))
        merged = self.op("Concat", [batch, seq, hidden], scope, axis=0)
        out = self.linear(self.op("Reshape", [context, merged], scope), f"{scope}/output", self.hidden, self.hidden)
        return self.layer_norm(self.op("Add", [out, x], scope), f"{scope}/output/LayerNorm")

    def feed_forward(self, x: str, scope: str) -> str:
        h = self.linear(x, f"{scope}/intermediate", self.hidden, self.ffn)
        erf = self.op("Erf", [self.op("Div", [h, self.const(f"/{scope}/sqrt2", np.array(np.sqrt(2), np.float32))],
                                      scope)], scope)
        half = self.op("Mul", [h, self.op("Add", [erf, self.const(f"/{scope}/one", np.array(1, np.float32))], scope)],
                       scope)
        gelu = self.op("Mul", [half, self.const(f"/{scope}/half", np.array(0.5, np.float32))], scope)
        out = self.linear(gelu, f"{scope}/output", self.ffn, self.hidden)
        return self.layer_norm(self.op("Add", [out, x], scope), f"{scope}/output/LayerNorm")


    def decoder(self, x: str, layers: int, speed: str | None) -> str:
        """Frames = max(Σ ceil(exp(duration logits) × mask), 1), as VITS writes it (so zero inputs, masked out,
        give one frame); with ``speed``, the frame times are ``Range(0, frames, speed)``, so a speed of 0 makes
        onnxruntime refuse the run. A position signal over those times plus the mean encoder state, then
        ``layers`` residual feed-forward blocks on [batch, frames, hidden]."""
        scope = "duration"
        logw = self.linear(x, f"{scope}/proj", self.hidden, 1)
        mask = self.op("Unsqueeze", [self.op("Cast", ["attention_mask"], scope, to=TensorProto.FLOAT),
                                     self.int64(scope, 2)], scope)
        durations = self.op("Ceil", [self.op("Mul", [self.op("Exp", [self.op("Mul", [logw, self.const(
            "/duration/scale", np.array(0.1, np.float32))], scope)], scope), mask], scope)], scope)
        total = self.op("ReduceSum", [durations, self.int64(scope, 1, 2)], scope, keepdims=0)
        frames = self.op("Max", [self.op("ReduceMax", [total], scope, keepdims=0),
                                 self.const("/duration/one", np.array(1, np.float32))], scope)
        scope = "decoder"
        step = self.op("Squeeze", [speed], scope) if speed else self.const("/decoder/delta", np.array(1, np.float32))
        steps = self.op("Range", [self.const("/decoder/start", np.array(0, np.float32)), frames, step], scope)
        where = self.op("Unsqueeze", [steps, self.int64(scope, 1)], scope)
        signal = self.op("Sin", [self.op("MatMul", [where, self.weight("decoder/frequencies", 1, self.hidden)], scope)],
                         scope)
        y = self.op("Add", [signal, self.op("ReduceMean", [x], scope, axes=[1], keepdims=1)], scope)
        for i in range(layers):
            block = f"decoder/layer.{i}"
            h = self.op("Relu", [self.linear(y, f"{block}/fc1", self.hidden, self.ffn)], block)
            y = self.layer_norm(self.op("Add", [self.linear(h, f"{block}/fc2", self.ffn, self.hidden), y], block),
                                f"{block}/LayerNorm")
        return self.linear(y, "decoder/mel", self.hidden, MELS)


def build(layers: int = 2, decoder_layers: int = 4, seed: int = 0, speed: bool = False) -> onnx.ModelProto:
    """``input_ids`` and ``attention_mask`` [batch, sequence] int64 (and with ``speed``, ``speed`` [1] float: frames
    per predicted frame, 0 fails) → ``last_hidden_state`` and ``mel`` [batch, frames, 16]."""
    b = _Builder(seed)
    scope = "embeddings"
    words = b.op("Gather", [b.weight("embeddings.word_embeddings.weight", VOCAB, HIDDEN), "input_ids"], scope)
    seq = b.op("Squeeze", [b.dim("input_ids", 1, scope)], scope)
    positions = b.op("Range", [b.const("/embeddings/start", np.array(0, np.int64)), seq,
                               b.const("/embeddings/delta", np.array(1, np.int64))], scope)
    position_ids = b.op("Unsqueeze", [positions, b.const("/embeddings/axes", np.array([0], np.int64))], scope)
    where = b.op("Gather", [b.weight("embeddings.position_embeddings.weight", POSITIONS, HIDDEN), position_ids], scope)
    x = b.layer_norm(b.op("Add", [words, where], scope), "embeddings/LayerNorm")

    scope = "mask"
    expanded = b.op("Unsqueeze", ["attention_mask", b.const("/mask/axes", np.array([1, 2], np.int64))], scope)
    target = b.op("Concat", [b.dim("attention_mask", 0, scope), b.const("/mask/one", np.array([1], np.int64)),
                             b.dim("input_ids", 1, scope), b.dim("attention_mask", 1, scope)], scope, axis=0)
    full = b.op("Cast", [b.expand_like_torch(expanded, target, scope)], scope, to=TensorProto.FLOAT)
    inverted = b.op("Sub", [b.const("/mask/ones", np.array(1, np.float32)), full], scope)
    mask = b.op("Mul", [inverted, b.const("/mask/min", np.array(np.finfo(np.float32).min, np.float32))], scope)

    for i in range(layers):
        x = b.feed_forward(b.attention(x, mask, f"encoder/layer.{i}/attention"), f"encoder/layer.{i}")
    b.nodes.append(helper.make_node("Identity", [x], ["last_hidden_state"], name="/output/Identity"))
    b.nodes.append(helper.make_node("Identity", [b.decoder(x, decoder_layers, "speed" if speed else None)], ["mel"],
                                    name="/output/mel"))
    inputs = [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "sequence"]),
              helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "sequence"])]
    if speed:
        inputs.append(helper.make_tensor_value_info("speed", TensorProto.FLOAT, [1]))
    graph = helper.make_graph(
        b.nodes, "tts_transformer", inputs,
        [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, ["batch", "sequence", HIDDEN]),
         helper.make_tensor_value_info("mel", TensorProto.FLOAT, ["batch", "frames", MELS])],
        b.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="pytorch",
                              producer_version="2.3.0")
    model.ir_version = 8
    return model
