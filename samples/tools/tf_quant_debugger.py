"""Regenerate the TensorFlow-only fixtures: a small float and int8 TFLite model and the QuantizationDebugger CSV.

Needs tensorflow-cpu (not a dependency of annograph; use a separate virtualenv)::

    python -m venv /tmp/tfvenv && /tmp/tfvenv/bin/pip install tensorflow-cpu
    /tmp/tfvenv/bin/python samples/tools/tf_quant_debugger.py --out-dir tests/fixtures/tflite_debugger

Writes, into ``--out-dir``:
    * ``tiny_keras_float.tflite``: a small Keras CNN converted without quantization;
    * ``tiny_keras_int8.tflite``: the same model after full-integer post-training quantization (the *deployed*
      model, from ``QuantizationDebugger.get_nondebug_quantized_model()``);
    * ``layer_stats.csv``: ``QuantizationDebugger.layer_statistics_dump()`` over the calibration data, with the
      default metrics plus ``mean_abs_error`` as a layer_direct_compare_metric;
    * ``versions.json``: the tool versions used.

The CSV's ``tensor_idx`` column refers to the debug model (with NumericVerify ops), not to the deployed model:
annograph matches its rows by ``tensor_name``. Random data comes from fixed seeds, but TensorFlow does not
promise byte-identical output across versions or machines.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def build_model():  # type: ignore[no-untyped-def]
    import tensorflow as tf

    tf.keras.utils.set_random_seed(7)
    inputs = tf.keras.Input(shape=(16, 16, 3), batch_size=1, name="image")
    x = tf.keras.layers.Conv2D(8, 3, padding="same", activation="relu", name="stem_conv")(inputs)
    x = tf.keras.layers.DepthwiseConv2D(3, padding="same", name="block_dw")(x)
    x = tf.keras.layers.ReLU(6.0, name="block_relu6")(x)
    y = tf.keras.layers.Conv2D(8, 1, name="block_pw")(x)
    x = tf.keras.layers.Add(name="block_add")([x, y])
    x = tf.keras.layers.MaxPooling2D(2, name="pool")(x)
    x = tf.keras.layers.GlobalAveragePooling2D(name="gap")(x)
    x = tf.keras.layers.Dense(10, name="fc")(x)
    outputs = tf.keras.layers.Softmax(name="probs")(x)
    return tf.keras.Model(inputs, outputs, name="tiny_keras")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out-dir", default="tests/fixtures/tflite_debugger")
    args = parser.parse_args()
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)

    import numpy as np
    import tensorflow as tf

    model = build_model()
    rng = np.random.default_rng(11)
    samples = [rng.standard_normal((1, 16, 16, 3)).astype(np.float32) for _ in range(16)]

    def dataset():  # type: ignore[no-untyped-def]
        for sample in samples:
            yield [sample]

    float_converter = tf.lite.TFLiteConverter.from_keras_model(model)
    (out / "tiny_keras_float.tflite").write_bytes(float_converter.convert())

    converter = tf.lite.TFLiteConverter.from_keras_model(model)
    converter.optimizations = [tf.lite.Optimize.DEFAULT]
    converter.representative_dataset = dataset
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
    converter.inference_input_type = tf.int8
    converter.inference_output_type = tf.int8

    options = tf.lite.experimental.QuantizationDebugOptions(
        layer_direct_compare_metrics={
            "mean_abs_error": lambda f, q, s, zp: float(np.mean(np.abs(f - s * (q.astype(np.float32) - zp)))),
        })
    debugger = tf.lite.experimental.QuantizationDebugger(
        converter=converter, debug_dataset=dataset, debug_options=options)
    debugger.run()
    with open(out / "layer_stats.csv", "w", newline="") as f:
        debugger.layer_statistics_dump(f)
    (out / "tiny_keras_int8.tflite").write_bytes(debugger.get_nondebug_quantized_model())

    versions = {"tensorflow": tf.__version__, "numpy": np.__version__, "python": platform.python_version(),
                "tool": "tf.lite.experimental.QuantizationDebugger.layer_statistics_dump"}
    (out / "versions.json").write_text(json.dumps(versions, indent=2) + "\n")
    print(json.dumps(versions))


if __name__ == "__main__":
    main()
