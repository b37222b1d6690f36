"""The arithmetic of each kind of operator, free of any file format.

Every function takes plain sizes (ints and shapes) and returns a ``Cost``. The ONNX and TFLite formulas
(``onnx_ops``, ``tflite_ops``), named by each operator's entry in ``renderer/data``, read shapes and attributes
from the IR and call these, so the same maths serves both formats.

Conventions (also in the metric descriptions):
    * A MAC is one multiply-accumulate. Linear-algebra ops (convolutions, matrix products, attention, recurrent
      gates) count one MAC per multiply-accumulate, plus one per output element for a bias add.
    * Every other arithmetic op counts one operation per element it computes, with any elementwise function
      (exp, erf, sigmoid, a division…) counted as one; the ``ops`` of an operator's entry in ``renderer/data``
      gives the few ops that do several per element (softmax: exp, sum, divide = 3).
    * Ops that only move or reinterpret data (reshape, transpose, concat, gather, cast…) cost 0.
    * FLOPs = 2 × MACs for every op.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


class NotCountable(Exception):
    """The op's cost cannot be computed; the message is the reason shown as ``n/a (reason)``."""


MALFORMED = (IndexError, KeyError, ValueError, TypeError, ZeroDivisionError, OverflowError)
"""What a formula raises on shapes or attributes that contradict each other (hostile or corrupt files)."""


def malformed(error: Exception) -> str:
    return f"shapes or attributes do not fit the op ({type(error).__name__})"


@dataclass(frozen=True, slots=True)
class Cost:
    """MACs of one op.

    Attributes:
        macs: all multiply-accumulates / elementary operations of the op.
        weight_macs: the part of ``macs`` that multiplies by a weight element, each weight element being used
            equally often; skipping zero weights saves ``weight_macs × sparsity``.
    """

    macs: int
    weight_macs: int = 0

    def __add__(self, other: Cost) -> Cost:
        return Cost(self.macs + other.macs, self.weight_macs + other.weight_macs)


ZERO = Cost(0)


def prod(dims: tuple[int, ...] | list[int]) -> int:
    return int(math.prod(dims))


def per_element(elements: int, ops: float = 1) -> Cost:
    """Elementwise work: ``ops`` operations for each element."""
    return Cost(int(round(elements * ops)))


def convolution(out_elements: int, weight_shape: tuple[int, ...], out_channel_axis: int, bias: bool) -> Cost:
    """Conv (any rank, grouped, depthwise): each output element reads every weight of its output channel.

    ``weight elements / output channels`` is (input channels per group × kernel volume) whatever the layout:
    ONNX ``[M, C/g, k…]`` (axis 0), TFLite CONV_2D ``[O, kh, kw, I/g]`` (axis 0), DEPTHWISE_CONV_2D
    ``[1, kh, kw, C·m]`` (axis 3).
    """
    channels = weight_shape[out_channel_axis]
    if channels <= 0:
        raise NotCountable("weight has no output channels")
    per_output = prod(weight_shape) // channels
    macs = out_elements * per_output
    return Cost(macs + (out_elements if bias else 0), macs)


def transposed_convolution(in_elements: int, out_elements: int, weight_shape: tuple[int, ...], in_channel_axis: int,
                           bias: bool) -> Cost:
    """ConvTranspose: each input element is multiplied into (output channels per group × kernel volume) outputs.

    ONNX weight ``[C, M/g, k…]`` (input channels on axis 0), TFLite TRANSPOSE_CONV ``[O, kh, kw, I]`` (axis 3).
    """
    channels = weight_shape[in_channel_axis]
    if channels <= 0:
        raise NotCountable("weight has no input channels")
    macs = in_elements * (prod(weight_shape) // channels)
    return Cost(macs + (out_elements if bias else 0), macs)


def matmul(out_elements: int, inner: int, bias: bool = False) -> Cost:
    """Matrix product (batched, broadcast): each output element is a dot product of length ``inner``."""
    macs = out_elements * inner
    return Cost(macs + (out_elements if bias else 0), macs)


def pooling(out_elements: int, kernel: tuple[int, ...] | list[int]) -> Cost:
    """Windowed pooling: one compare (max) or add (average) per window element per output."""
    return Cost(out_elements * prod(kernel))


def reduction(in_elements: int, ops: float = 1) -> Cost:
    """Reductions read every input element once."""
    return per_element(in_elements, ops)


def attention(batch: int, heads: int, q_len: int, kv_len: int, head_size: int, v_head_size: int,
              normalized: int | None = None) -> Cost:
    """Scaled dot-product attention core: QKᵀ and scores × V over every (query, key) pair, softmax 3 per score
    it normalizes (``normalized``; all of them by default)."""
    scores = batch * heads * q_len * kv_len
    return Cost(scores * head_size + 3 * (scores if normalized is None else normalized) + scores * v_head_size)


def causal_scores(q_len: int, past: int, window: int = -1) -> int:
    """Scores a causal softmax normalizes for one head: query row ``i`` sees ``past + i + 1`` keys, at most
    ``window + 1`` with a sliding window (``window`` ≤ 0: none)."""
    if window <= 0 or past + q_len <= window + 1:
        return q_len * past + q_len * (q_len + 1) // 2
    unwindowed = max(0, window + 1 - past)  # rows still shorter than the window
    return unwindowed * past + unwindowed * (unwindowed + 1) // 2 + (q_len - unwindowed) * (window + 1)


def recurrent(steps: int, batch: int, weight_elements: int, bias_elements: int, hidden_units: int,
              ops_per_unit: int) -> Cost:
    """RNN / GRU / LSTM over a sequence.

    Each step multiplies every input and recurrent weight once per batch row, adds the biases, and does
    ``ops_per_unit`` elementwise operations per hidden unit (gate sums, activations, the cell update).
    ``hidden_units`` counts all directions.
    """
    weight = steps * batch * weight_elements
    other = steps * batch * (bias_elements + hidden_units * ops_per_unit)
    return Cost(weight + other, weight)


def resize(out_elements: int, resized_axes: int, mode: str) -> Cost:
    """Interpolation: nearest copies; linear blends 2 inputs per resized axis, cubic 4."""
    mode = mode.lower()
    if "nearest" in mode:
        return ZERO
    if mode in ("linear", "bilinear", "trilinear"):
        return Cost(out_elements * 2**resized_axes)
    if mode in ("cubic", "bicubic"):
        return Cost(out_elements * 4**resized_axes)
    raise NotCountable(f"resize mode {mode!r}")


def einsum(equation: str, shapes: list[tuple[int, ...]]) -> Cost:
    """Every combination of the labels is visited once, with one multiply per extra operand."""
    equation = equation.replace(" ", "")
    inputs = equation.split("->")[0].split(",")
    if "..." in equation:
        raise NotCountable("einsum with an ellipsis")
    if len(inputs) != len(shapes):
        raise NotCountable("einsum operand count does not match the equation")
    sizes: dict[str, int] = {}
    for labels, shape in zip(inputs, shapes):
        if len(labels) != len(shape):
            raise NotCountable(f"einsum term {labels!r} does not match shape {shape}")
        for label, dim in zip(labels, shape):
            sizes[label] = max(sizes.get(label, 1), int(dim))
    return Cost(prod(list(sizes.values())) * max(1, len(shapes) - 1))
