"""Run ONNX Runtime's ``qdq_loss_debug`` on a float model and its QDQ model, and save the SQNRs as JSON.

    python samples/tools/ort_qdq_loss_to_json.py model.onnx model_qdq.onnx -o qdq_loss.json
    annograph render model_qdq.onnx -a qdq_loss.json --color-by qdq_err

The JSON is the shape annograph's ``qdq-loss`` reader documents (``renderer/annotations/readers/ort_qdq_loss.py``)::

    {"format": "onnxruntime.quantization.qdq_loss_debug", "float_model": ..., "qdq_model": ...,
     "activations": {"<tensor>": {"qdq_err": dB, "xmodel_err": dB}}, "weights": {"<weight>": dB}}

Inputs: random normal data (``--samples`` batches, ``--seed``) shaped from the model's inputs, with symbolic
dims set to 1; or real data from ``--inputs data.npz`` files (one per sample, arrays named like the inputs).
Needs onnxruntime and onnx. Importable: ``document(...)`` builds the JSON object from the dicts that
``compute_activation_error`` and ``compute_weight_error`` return, ``run(...)`` does everything.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path
from typing import Any

FORMAT = "onnxruntime.quantization.qdq_loss_debug"


def document(
    activation_errors: dict[str, dict[str, float]],
    weight_errors: dict[str, float],
    float_model: str | None = None,
    qdq_model: str | None = None,
) -> dict[str, Any]:
    """The JSON object for annograph from ``compute_activation_error`` / ``compute_weight_error`` results."""
    doc: dict[str, Any] = {"format": FORMAT}
    if float_model:
        doc["float_model"] = float_model
    if qdq_model:
        doc["qdq_model"] = qdq_model
    doc["activations"] = {
        name: {k: float(v) for k, v in errs.items()} for name, errs in activation_errors.items()
    }
    doc["weights"] = {name: float(v) for name, v in weight_errors.items()}
    return doc


def _feeds(model_path: str, samples: int, seed: int, npz: list[str]) -> list[dict[str, Any]]:
    import numpy as np
    import onnxruntime as ort

    if npz:
        return [dict(np.load(path)) for path in npz]
    session = ort.InferenceSession(model_path, providers=["CPUExecutionProvider"])
    types = {
        "tensor(float)": np.float32,
        "tensor(float16)": np.float16,
        "tensor(double)": np.float64,
        "tensor(int64)": np.int64,
        "tensor(int32)": np.int32,
    }
    rng = np.random.default_rng(seed)
    feeds = []
    for _ in range(samples):
        feed = {}
        for item in session.get_inputs():
            shape = [d if isinstance(d, int) and d > 0 else 1 for d in item.shape]
            dtype = types.get(item.type)
            if dtype is None:
                raise SystemExit(f"input {item.name!r} has type {item.type}; pass --inputs")
            feed[item.name] = rng.standard_normal(shape).astype(dtype)
        feeds.append(feed)
    return feeds


def run(
    float_model: str, qdq_model: str, samples: int = 4, seed: int = 0, npz: list[str] | None = None
) -> dict[str, Any]:
    """Augment both models, run them on the same inputs, and return the JSON object."""
    from onnxruntime.quantization import CalibrationDataReader, qdq_loss_debug

    feeds = _feeds(float_model, samples, seed, npz or [])

    class Reader(CalibrationDataReader):
        def __init__(self) -> None:
            self.items = iter(feeds)

        def get_next(self) -> dict[str, Any] | None:
            return next(self.items, None)

    with tempfile.TemporaryDirectory() as tmp:
        float_aug, qdq_aug = str(Path(tmp) / "float_aug.onnx"), str(Path(tmp) / "qdq_aug.onnx")
        qdq_loss_debug.modify_model_output_intermediate_tensors(float_model, float_aug)
        qdq_loss_debug.modify_model_output_intermediate_tensors(qdq_model, qdq_aug)
        float_acts = qdq_loss_debug.collect_activations(float_aug, Reader())
        qdq_acts = qdq_loss_debug.collect_activations(qdq_aug, Reader())
    matching = qdq_loss_debug.create_activation_matching(qdq_acts, float_acts)
    activation_errors = qdq_loss_debug.compute_activation_error(matching)
    weight_errors = qdq_loss_debug.compute_weight_error(
        qdq_loss_debug.create_weight_matching(float_model, qdq_model)
    )
    return document(activation_errors, weight_errors, Path(float_model).name, Path(qdq_model).name)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("float_model")
    parser.add_argument("qdq_model")
    parser.add_argument("-o", "--output", required=True)
    parser.add_argument("--samples", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--inputs", nargs="*", default=[], metavar="NPZ")
    args = parser.parse_args()
    doc = run(args.float_model, args.qdq_model, args.samples, args.seed, args.inputs)
    Path(args.output).write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    print(f"{args.output}: {len(doc['activations'])} activations, {len(doc['weights'])} weights")


if __name__ == "__main__":
    main()
