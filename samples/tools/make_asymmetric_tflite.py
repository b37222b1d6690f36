#!/usr/bin/env python3
"""Make ``samples/tflite/tiny_keras_int8_asymmetric.tflite``: int8 TFLite weights with non-zero zero points.

TensorFlow's converter only writes symmetric int8 weights (zero point 0), so this takes its real output,
``tests/fixtures/tflite_debugger/tiny_keras_int8.tflite`` (see ``tests/fixtures/README.md``), and
requantizes the weight of every CONV_2D, DEPTHWISE_CONV_2D and FULLY_CONNECTED in place to 7 bits plus a
per-channel zero point: ``q' = round(q / 2) + z[c]``, ``scale' = 2 * scale``, so ``scale' * (q' - z)`` stays
within half a step of the original weight and nothing clips. Small weights (``|q| < PRUNE``) are pruned to
exact zeros first (``q' = z[c]``), so that sparsity is large enough to tell the zero point from byte 0. The zero
points (``ZERO_POINTS`` cycled over the channels) are all non-zero. Only bytes inside existing vectors change
(same lengths), so the flatbuffer layout is the converter's. Needs ``tflite`` and ``numpy``; the output is the
same bytes on every run.

    python samples/tools/make_asymmetric_tflite.py
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import tflite

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / "tests" / "fixtures" / "tflite_debugger" / "tiny_keras_int8.tflite"
TARGET = ROOT / "samples" / "tflite" / "tiny_keras_int8_asymmetric.tflite"
WEIGHTED = {"CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED"}
ZERO_POINTS = (3, -5, 7, -2, 11, -9, 4, -13, 6, -1)
PRUNE = 24


def requantize(data: bytearray) -> list[str]:
    """Patch ``data`` (a TFLite flatbuffer) in place; return a line per weight changed."""
    model = tflite.Model.GetRootAsModel(data, 0)
    graph = model.Subgraphs(0)
    done = []
    for i in range(graph.OperatorsLength()):
        op = graph.Operators(i)
        code = model.OperatorCodes(op.OpcodeIndex())
        if tflite.opcode2name(max(code.BuiltinCode(), code.DeprecatedBuiltinCode())) not in WEIGHTED:
            continue
        tensor = graph.Tensors(int(op.InputsAsNumpy()[1]))
        assert tensor.Type() == tflite.TensorType.INT8
        quant = tensor.Quantization()
        zero, scale = quant.ZeroPointAsNumpy(), quant.ScaleAsNumpy()  # views into ``data``: writable
        assert (zero == 0).all(), "the source must be the converter's symmetric model"
        axis = quant.QuantizedDimension()
        weights = model.Buffers(tensor.Buffer()).DataAsNumpy().view(np.int8).reshape(tensor.ShapeAsNumpy())
        channels = weights.shape[axis]
        assert zero.size == scale.size == channels
        new_zero = np.resize(np.array(ZERO_POINTS, dtype=np.int64), channels)
        shape = [1] * weights.ndim
        shape[axis] = channels
        original = weights.astype(np.int32)
        halved = np.where(np.abs(original) < PRUNE, 0, np.round(original / 2).astype(np.int32))
        shifted = halved + new_zero.reshape(shape)
        assert shifted.min() >= -128 and shifted.max() <= 127
        weights[...] = shifted.astype(np.int8)
        zero[:] = new_zero
        scale[:] = scale * 2
        done.append(f"op {i} weight {tensor.Name().decode()}: zero points {new_zero.tolist()}")
    return done


def main() -> None:
    data = bytearray(SOURCE.read_bytes())
    for line in requantize(data):
        print(line)
    TARGET.write_bytes(bytes(data))
    print(f"{TARGET.relative_to(ROOT)}: {len(data)} bytes, sha256 {hashlib.sha256(data).hexdigest()}")


if __name__ == "__main__":
    main()
