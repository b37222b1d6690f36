"""A real-sized text-to-speech transformer quantized to int8, shaped like Kokoro-82M's ONNX export.

``tts_transformer.py``'s encoder at BERT size (``LAYERS`` layers of 384 wide, 6 heads), a bidirectional LSTM and a
duration predictor whose durations expand the tokens into frames through an alignment matrix (``CumSum`` of the
durations, ``Range`` over the frames, ``GreaterOrEqual``/``Less`` into a one-hot [tokens, frames] matrix, as
Kokoro's ``repeat_interleave`` exports), and an iSTFTNet-like vocoder: two ``ConvTranspose`` upsampling stages
(×10, ×6) each followed by three residual blocks of style-conditioned ``InstanceNormalization`` (AdaIN), Snake
activations (``x + sin²(αx)/α``) and dilated convolutions, then a magnitude/phase head upsampled ×5 into the
waveform. 39M parameters, 2,596 operators once ``onnxruntime.quantization.quantize_dynamic`` turned every
``MatMul``/``Conv`` into ``DynamicQuantizeLinear → MatMulInteger/ConvInteger → Cast → Mul`` and the LSTM into
``DynamicQuantizeLSTM``.

Every vocoder tensor is [1, channels, frames × upsampling] with frames known only from the durations' values, so
a shape run keeps 1,264 such tensors at once: 32 tokens make 2 GB from a file of 50 MB, as Kokoro's run does (its
child run was refused at 1.4 GiB, "what the model's sizes explain").
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper

import tts_transformer

HIDDEN, HEADS, FFN, LAYERS, VOCAB, STYLE = 384, 6, 1536, 12, 178, 128
MAX_DURATION = 10
"""Frames per token at most (``Ceil(Sigmoid(logit) × MAX_DURATION / speed)``)."""
STAGES = ((512, 256, 10, 20), (256, 128, 6, 12))
"""The vocoder's upsampling stages: (channels in, channels out, rate, kernel)."""
KERNELS, DILATIONS, HOP, BINS = (3, 7, 11), (1, 3, 5), 5, 11


class _Vocoder(tts_transformer._Builder):
    def conv(self, x: str, scope: str, cin: int, cout: int, kernel: int, dilation: int = 1) -> str:
        pad = dilation * (kernel - 1) // 2
        weights = [self.weight(f"{scope}.weight", cout, cin, kernel), self.weight(f"{scope}.bias", cout)]
        return self.op("Conv", [x, *weights], scope, dilations=[dilation], pads=[pad, pad], kernel_shape=[kernel])

    def adain(self, x: str, style: str, scope: str, channels: int) -> str:
        """Style-conditioned instance norm: ``(1 + γ(style)) · norm(x) + β(style)``."""
        h = self.op("MatMul", [style, self.weight(f"{scope}.fc.weight", STYLE, 2 * channels)], scope)
        h = self.op("Add", [h, self.weight(f"{scope}.fc.bias", 2 * channels)], scope)
        axes = self.int64(scope, 2)
        gamma = self.op("Unsqueeze", [self.op("Slice", [h, self.int64(scope, 0), self.int64(scope, channels),
                                                        self.int64(scope, 1)], scope), axes], scope)
        beta = self.op("Unsqueeze", [self.op("Slice", [h, self.int64(scope, channels), self.int64(scope, 2 * channels),
                                                       self.int64(scope, 1)], scope), axes], scope)
        norm = self.op("InstanceNormalization", [x, self.const(f"{scope}.scale", np.ones(channels, np.float32)),
                                                 self.const(f"{scope}.shift", np.zeros(channels, np.float32))], scope)
        scaled = self.op("Mul", [self.op("Add", [gamma, self.const(f"{scope}.one", np.array(1, np.float32))], scope),
                                 norm], scope)
        return self.op("Add", [scaled, beta], scope)

    def snake(self, x: str, scope: str, channels: int) -> str:
        alpha = self.const(f"{scope}.alpha", np.ones((1, channels, 1), np.float32))
        wave = self.op("Sin", [self.op("Mul", [x, alpha], scope)], scope)
        return self.op("Add", [x, self.op("Div", [self.op("Mul", [wave, wave], scope), alpha], scope)], scope)

    def resblock(self, x: str, style: str, scope: str, channels: int, kernel: int) -> str:
        for i, dilation in enumerate(DILATIONS):
            where = f"{scope}/convs.{i}"
            h = self.snake(self.adain(x, style, f"{where}/adain1", channels), f"{where}/snake1", channels)
            h = self.conv(h, f"{where}/conv1", channels, channels, kernel, dilation)
            h = self.snake(self.adain(h, style, f"{where}/adain2", channels), f"{where}/snake2", channels)
            x = self.op("Add", [x, self.conv(h, f"{where}/conv2", channels, channels, kernel)], where)
        return x

    def lstm(self, x: str, scope: str) -> str:
        """A bidirectional LSTM over [1, tokens, hidden] (half the width each way), as Kokoro's predictor runs one."""
        size = self.hidden // 2
        steps = self.op("Transpose", [x], scope, perm=[1, 0, 2])
        y = self.op("LSTM", [steps, self.weight(f"{scope}.weight_ih", 2, 4 * size, self.hidden),
                             self.weight(f"{scope}.weight_hh", 2, 4 * size, size),
                             self.weight(f"{scope}.bias", 2, 8 * size)], scope, outputs=3,
                    direction="bidirectional", hidden_size=size)
        both = self.op("Transpose", [y], scope, perm=[2, 0, 1, 3])  # [1, tokens, 2, size]
        return self.op("Reshape", [both, self.int64(scope, 1, -1, self.hidden)], scope)

    def aligned(self, x: str, speed: str) -> str:
        """[1, hidden, frames]: each token's state repeated over its predicted frames (durations from the encoder
        states' values, so nothing static can know ``frames``)."""
        scope = "predictor"
        x = self.lstm(x, f"{scope}/lstm")
        logit = self.linear(x, f"{scope}/duration_proj", self.hidden, 1)
        frames = self.op("Mul", [self.op("Sigmoid", [logit], scope),
                                 self.const("/predictor/max", np.array(MAX_DURATION, np.float32))], scope)
        mask = self.op("Unsqueeze", [self.op("Cast", ["attention_mask"], scope, to=TensorProto.FLOAT),
                                     self.int64(scope, 2)], scope)
        durations = self.op("Ceil", [self.op("Div", [self.op("Mul", [frames, mask], scope), speed], scope)], scope)
        durations = self.op("Reshape", [durations, self.int64(scope, -1)], scope)  # [tokens] (batch 1)
        ends = self.op("CumSum", [durations, self.const("/predictor/axis", np.array(0, np.int64))], scope)
        starts = self.op("Sub", [ends, durations], scope)
        total = self.op("ReduceSum", [durations], scope, keepdims=0)
        times = self.op("Range", [self.const("/predictor/start", np.array(0, np.float32)), total,
                                  self.const("/predictor/step", np.array(1, np.float32))], scope)
        times = self.op("Unsqueeze", [times, self.int64(scope, 0)], scope)
        column = self.int64(scope, 1)
        inside = self.op("And", [self.op("GreaterOrEqual", [times, self.op("Unsqueeze", [starts, column], scope)],
                                         scope),
                                 self.op("Less", [times, self.op("Unsqueeze", [ends, column], scope)], scope)], scope)
        alignment = self.op("Cast", [inside], scope, to=TensorProto.FLOAT)  # [tokens, frames]
        states = self.op("Transpose", [self.op("Squeeze", [x, self.int64(scope, 0)], scope)], scope, perm=[1, 0])
        return self.op("Unsqueeze", [self.op("MatMul", [states, alignment], scope), self.int64(scope, 0)], scope)

    def vocoder(self, x: str, style: str) -> str:
        x = self.conv(x, "decoder/pre", self.hidden, STAGES[0][0], 7)
        for s, (cin, cout, rate, kernel) in enumerate(STAGES):
            scope = f"decoder/ups.{s}"
            x = self.op("LeakyRelu", [x], scope, alpha=0.1)
            pad = (kernel - rate) // 2
            x = self.op("ConvTranspose", [x, self.weight(f"{scope}.weight", cin, cout, kernel),
                                          self.weight(f"{scope}.bias", cout)], scope, strides=[rate],
                        pads=[pad, pad], kernel_shape=[kernel])
            blocks = [self.resblock(x, style, f"decoder/resblocks.{s}.{k}", cout, k) for k in KERNELS]
            total = self.op("Add", [self.op("Add", blocks[:2], scope), blocks[2]], scope)
            x = self.op("Div", [total, self.const(f"/{scope}/count", np.array(len(KERNELS), np.float32))], scope)
        scope = "decoder/post"
        bins = BINS
        head = self.conv(self.op("LeakyRelu", [x], scope, alpha=0.01), scope, STAGES[-1][1], 2 * bins, 7)
        magnitude = self.op("Exp", [self.op("Slice", [head, self.int64(scope, 0), self.int64(scope, bins),
                                                      self.int64(scope, 1)], scope)], scope)
        phase = self.op("Sin", [self.op("Slice", [head, self.int64(scope, bins), self.int64(scope, 2 * bins),
                                                  self.int64(scope, 1)], scope)], scope)
        spectrum = self.op("Concat", [magnitude, phase], scope, axis=1)
        wave = self.op("ConvTranspose", [spectrum, self.weight("decoder/istft.weight", 2 * bins, 1, 4 * HOP)], scope,
                       strides=[HOP], pads=[3 * HOP // 2, 3 * HOP - 3 * HOP // 2], kernel_shape=[4 * HOP])
        return self.op("Tanh", [self.op("Squeeze", [wave, self.int64(scope, 1)], scope)], scope)


def build(layers: int = LAYERS, seed: int = 0) -> onnx.ModelProto:
    """The float model: ``input_ids``, ``attention_mask`` [1, sequence] int64, ``style`` [1, STYLE] float,
    ``speed`` [1] float → ``waveform`` [1, samples] (the stages' rates × ``HOP``, 300 samples per
    predicted frame)."""
    b = _Vocoder(seed, HIDDEN, HEADS, FFN)
    scope = "embeddings"
    words = b.op("Gather", [b.weight("embeddings.word_embeddings.weight", VOCAB, HIDDEN), "input_ids"], scope)
    seq = b.op("Squeeze", [b.dim("input_ids", 1, scope)], scope)
    positions = b.op("Range", [b.const("/embeddings/start", np.array(0, np.int64)), seq,
                               b.const("/embeddings/delta", np.array(1, np.int64))], scope)
    where = b.op("Gather", [b.weight("embeddings.position_embeddings.weight", 512, HIDDEN),
                            b.op("Unsqueeze", [positions, b.int64(scope, 0)], scope)], scope)
    x = b.layer_norm(b.op("Add", [words, where], scope), "embeddings/LayerNorm")
    scope = "mask"
    expanded = b.op("Unsqueeze", ["attention_mask", b.int64(scope, 1, 2)], scope)
    inverted = b.op("Sub", [b.const("/mask/ones", np.array(1, np.float32)),
                            b.op("Cast", [expanded], scope, to=TensorProto.FLOAT)], scope)
    mask = b.op("Mul", [inverted, b.const("/mask/min", np.array(-1e4, np.float32))], scope)
    for i in range(layers):
        x = b.feed_forward(b.attention(x, mask, f"encoder/layer.{i}/attention"), f"encoder/layer.{i}")
    waveform = b.vocoder(b.aligned(x, "speed"), "style")
    b.nodes.append(helper.make_node("Identity", [waveform], ["waveform"], name="/output/Identity"))
    inputs = [helper.make_tensor_value_info("input_ids", TensorProto.INT64, [1, "sequence"]),
              helper.make_tensor_value_info("attention_mask", TensorProto.INT64, [1, "sequence"]),
              helper.make_tensor_value_info("style", TensorProto.FLOAT, [1, STYLE]),
              helper.make_tensor_value_info("speed", TensorProto.FLOAT, [1])]
    graph = helper.make_graph(b.nodes, "tts_int8", inputs,
                              [helper.make_tensor_value_info("waveform", TensorProto.FLOAT, [1, "samples"])], b.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="pytorch",
                              producer_version="2.5.0")
    model.ir_version = 8
    return model


def save_int8(path: Path, layers: int = LAYERS) -> Path:
    """``build`` quantized by ``onnxruntime.quantization.quantize_dynamic`` (int8 weights, per tensor; MatMul, Conv
    and LSTM), at ``path``."""
    import logging

    from onnxruntime.quantization import QuantType, quantize_dynamic

    float_path = path.with_name(path.stem + "_float.onnx")
    onnx.save(build(layers), float_path)
    logging.disable(logging.WARNING)  # its advice to pre-process the model first, on stderr
    try:
        quantize_dynamic(float_path, path, weight_type=QuantType.QInt8, op_types_to_quantize=["MatMul", "Conv", "LSTM"])
    finally:
        logging.disable(logging.NOTSET)
    float_path.unlink()
    return path


def inputs(tokens: int, seed: int = 1) -> dict[str, np.ndarray]:
    """Real-looking values for ``tokens`` tokens: ids, a full mask, a style vector, speed 1."""
    rng = np.random.default_rng(seed)
    return {"input_ids": rng.integers(1, VOCAB, (1, tokens), dtype=np.int64),
            "attention_mask": np.ones((1, tokens), np.int64),
            "style": rng.standard_normal((1, STYLE)).astype(np.float32),
            "speed": np.ones(1, np.float32)}
