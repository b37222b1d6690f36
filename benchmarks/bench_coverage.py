"""MAC coverage per model: the share of operators with a MAC count, by where the shapes come from.

    python benchmarks/bench_coverage.py [--only NAME] [--skip-big] [--genai] [--tokens 32]

For each model, ``annograph metrics`` runs four ways and the script reads the written table back:

    * plain: the model as it is, free input dims left free (``--keep-free-dims``);
    * assumed: the default, free dims at the values ``loaders.free_dims`` states (batch 1, sequence 128…);
    * pinned: every free input dim pinned with ``--dim`` (batch-like dims 1, others 16, or the sizes of the
      model's own inputs below); the default zero-input onnxruntime run then fills what static inference misses;
    * inputs: ``--inputs FILE.npz`` with those arrays (real-looking values: token ids, a full mask, speed 1).

Each cell is two shares: of all operators, those with a MAC count; and of the operators that are not zero-cost
(MACs 0: shape arithmetic, reshapes), those with a positive count: the part a reader misses when boxes read n/a.
The models are the samples (samples/onnx, samples/tflite: TFLite dims are static, so only "plain") and the
generated transformers: tests/support/tts_transformer.py's TTS-like model (with a speed input), a BERT-like encoder of
benchmarks/transformer_models.py, and tests/support/tts_int8.py's real-sized int8 TTS (39M parameters, 2,596
operators; ``--skip-big`` leaves it out: building it takes ~15 s and its run ~2 GB); with ``--genai``, the
Llama of tests/support/genai_models.py (onnxruntime-genai's builder, int4 and fp32, a prefill of 8 tokens).
Engineers adding MAC formulas (attention, recurrent, ONNX-ML ops) see their effect here.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "support"))
sys.path.insert(0, str(ROOT / "benchmarks"))

FREE_DIM = 16
"""Size given to a free dim that is not a batch."""
BIG = "tts_int8 39M (generated)"


@dataclass
class Case:
    name: str
    path: Path
    feeds: dict[str, Any] | None = None  # None: made from the inputs' declared types


def _generated(folder: Path, tokens: int, big: bool) -> list[Case]:
    import numpy as np
    import onnx
    import transformer_models

    import tts_transformer

    ids = (np.arange(tokens, dtype=np.int64).reshape(1, tokens) * 7) % tts_transformer.VOCAB
    tts = {"input_ids": ids, "attention_mask": np.ones_like(ids), "speed": np.array([1.0], np.float32)}
    onnx.save(tts_transformer.build(speed=True), folder / "tts_transformer.onnx")
    bert = transformer_models.write(folder / "bert_like.onnx", 4)
    cases = [Case("tts_transformer (generated)", folder / "tts_transformer.onnx", tts),
             Case("bert_like 4 layers (generated)", bert, {"input_ids": ids % 100})]
    cases += _recurrent_and_ml(folder)
    if big:
        import tts_int8

        cases.append(Case(BIG, tts_int8.save_int8(folder / "tts_int8.onnx"),
                          tts_int8.inputs(tokens)))
    return cases


def _recurrent_and_ml(folder: Path) -> list[Case]:
    """tests/support/recurrent_models.py's two-BiLSTM model, float and int8 (DynamicQuantizeLSTM); a scikit-learn random
    forest and a scaler → logistic regression pipeline through skl2onnx (ONNX-ML), when skl2onnx is installed;
    MediaPipe's sparse BlazeFace (DENSIFY → DEQUANTIZE chains) from its wheel, when the cache or PyPI has it."""
    import numpy as np

    import recurrent_models

    float_path, int8_path = recurrent_models.two_bilstm_pair(folder)
    shape = (recurrent_models.STEPS, recurrent_models.BATCH, recurrent_models.FEATURES)
    feeds = {"features": np.random.default_rng(0).standard_normal(shape).astype(np.float32)}
    cases = [Case("two BiLSTMs (generated)", float_path, feeds), Case("two BiLSTMs int8 (generated)", int8_path, feeds)]
    with contextlib.suppress(ImportError):
        from skl2onnx import to_onnx
        from sklearn.datasets import load_iris
        from sklearn.ensemble import RandomForestClassifier
        from sklearn.linear_model import LogisticRegression
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler

        x, y = load_iris(return_X_y=True)
        x = x.astype(np.float32)
        for name, model in (("random forest (skl2onnx)", RandomForestClassifier(8, max_depth=5, random_state=0)),
                            ("scaler→logreg (skl2onnx)", make_pipeline(StandardScaler(), LogisticRegression()))):
            path = folder / f"{name.split()[0]}.onnx"
            path.write_bytes(to_onnx(model.fit(x, y), x[:1]).SerializeToString())
            cases.append(Case(name, path, {"X": x[:4]}))
    with contextlib.suppress(Exception):  # offline without a cached wheel: left out
        import wheel_models

        cases.append(Case("blazeface sparse (mediapipe)",
                          wheel_models.wheel_model("mediapipe_face_detection_full_range_sparse")))
    return cases


def _genai(folder: Path, tokens: int) -> list[Case]:
    """tests/support/genai_models.py's Llama built by onnxruntime-genai's model builder, int4 and fp32, with the
    inputs of a prefill of ``tokens`` tokens (an empty KV cache)."""
    import numpy as np
    import onnx

    import genai_models

    models = genai_models.GenaiModels(folder / "genai")
    config = genai_models.CONFIG
    head = config["hidden_size"] // config["num_attention_heads"]  # the free kv_cache_dim
    cases = []
    for precision in ("int4", "fp32"):
        path = models(precision)
        feeds = {}
        for vi in onnx.load(str(path), load_external_data=False).graph.input:
            dims = [d.dim_value or 0 for d in vi.type.tensor_type.shape.dim]
            if vi.name.startswith("past_key_values"):
                feeds[vi.name] = np.zeros([1, dims[1] or config["num_key_value_heads"], 0, head], np.float32)
            elif vi.name == "position_ids":
                feeds[vi.name] = np.arange(tokens, dtype=np.int64).reshape(1, tokens)
            else:  # input_ids, attention_mask
                feeds[vi.name] = np.ones((1, tokens), np.int64)
        cases.append(Case(f"genai llama {precision} (generated)", path, feeds))
    return cases


def _samples() -> list[Case]:
    import numpy as np

    cases = [Case(path.name, path) for path in sorted((ROOT / "samples/onnx").glob("*.onnx"))]
    silero = {"input": np.zeros((1, 512), np.float32), "state": np.zeros((2, 1, 128), np.float32),
              "sr": np.array(16000, np.int64)}
    control = {"x": np.ones(4, np.float32), "trip_count": np.array(3, np.int64)}
    for case in cases:
        case.feeds = {"silero_vad.onnx": silero, "control_flow.onnx": control}.get(case.name)
    return cases + [Case(path.name, path) for path in sorted((ROOT / "samples/tflite").glob("*.tflite"))]


def _declared_feeds(path: Path) -> dict[str, Any]:
    """Arrays for every input of an ONNX model: free dims 1 (batch-like, or axis 0) or ``FREE_DIM``; floats from a
    seeded normal, integers and booleans zero."""
    import numpy as np
    import onnx
    from onnx import helper

    proto = onnx.load(str(path), load_external_data=False)
    initializers = {t.name for t in proto.graph.initializer}
    rng = np.random.default_rng(0)
    feeds = {}
    for vi in proto.graph.input:
        if vi.name in initializers:
            continue
        shape = [d.dim_value if d.HasField("dim_value") else 1 if axis == 0 or "batch" in d.dim_param.lower()
                 else FREE_DIM for axis, d in enumerate(vi.type.tensor_type.shape.dim)]
        dtype = helper.tensor_dtype_to_np_dtype(vi.type.tensor_type.elem_type)
        feeds[vi.name] = (rng.standard_normal(shape).astype(dtype) if dtype.kind == "f"
                          else np.zeros(shape, dtype))
    return feeds


def _pins(path: Path, feeds: dict[str, Any]) -> list[str]:
    """``--dim`` arguments pinning each free input dim to its array's size."""
    import onnx

    from renderer.loaders.free_dims import unnamed_dim_name

    proto = onnx.load(str(path), load_external_data=False)
    pins: dict[str, int] = {}
    for vi in proto.graph.input:
        if vi.name not in feeds:
            continue
        for axis, dim in enumerate(vi.type.tensor_type.shape.dim):
            if not dim.HasField("dim_value"):
                name = dim.dim_param if dim.dim_param and dim.dim_param != "?" else unnamed_dim_name(vi.name, axis)
                pins.setdefault(name, int(feeds[vi.name].shape[axis]))
    return [arg for name, size in pins.items() for arg in ("--dim", f"{name}={size}")]


def coverage(path: Path, extra: list[str], folder: Path) -> tuple[int, str]:
    """(the operators of the table, subgraphs' included; ``with MACs / all · positive / not zero-cost`` of one
    metrics run, or why it failed)."""
    from renderer.commands.cli import main

    out = folder / "metrics.json"
    out.unlink(missing_ok=True)
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = main(["metrics", str(path), "-o", str(out), "-q", *extra])
    if code != 0:
        return 0, f"failed ({err.getvalue().strip().splitlines()[-1][:60] if err.getvalue().strip() else code})"
    macs = [o["meta"].get("macs") for o in json.loads(out.read_text())["operators"]]
    counted = [m for m in macs if isinstance(m, (int, float))]
    costly = len(macs) - sum(1 for m in counted if m == 0)
    positive = sum(1 for m in counted if m > 0)
    share = 100.0 * len(counted) / len(macs) if macs else 100.0
    nonzero = 100.0 * positive / costly if costly else 100.0
    return len(macs), f"{share:5.1f}% · {nonzero:5.1f}%"


def _row(case: Case, folder: Path) -> tuple[int, list[str]]:
    """(the model's operator count, its four cells)."""
    import numpy as np

    count, plain = coverage(case.path, ["--keep-free-dims"], folder)
    assumed = coverage(case.path, [], folder)[1]
    if case.path.suffix != ".onnx":
        return count, [plain, assumed, "(static dims)", "—"]
    feeds = case.feeds if case.feeds is not None else _declared_feeds(case.path)
    pins = _pins(case.path, feeds)
    pinned = coverage(case.path, pins, folder)[1] if pins else "(no free dims)"
    np.savez(folder / "inputs.npz", **feeds)
    return count, [plain, assumed, pinned, coverage(case.path, ["--inputs", str(folder / "inputs.npz")], folder)[1]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="models whose name contains this")
    parser.add_argument("--skip-big", action="store_true", help="leave out the 39M-parameter int8 TTS")
    parser.add_argument("--tokens", type=int, default=32, help="tokens of the generated models' inputs")
    parser.add_argument("--genai", action="store_true", help="also the Llama of onnxruntime-genai's builder, int4 "
                        "and fp32 (needs the test extra's torch, transformers, onnxruntime-genai)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-coverage-") as name:
        folder = Path(name)
        big = not args.skip_big and (not args.only or args.only in BIG)
        cases = _samples() + _generated(folder, args.tokens, big) + (_genai(folder, 8) if args.genai else [])
        print("MAC coverage: operators with MACs / all · with MACs > 0 / not zero-cost")
        print(f"{'model':34} {'ops':>6}  {'plain':>15}  {'assumed':>15}  {'--dim pinned':>15}  {'--inputs':>15}")
        for case in cases:
            if args.only and args.only not in case.name:
                continue
            ops, cells = _row(case, folder)
            print(f"{case.name[:34]:34} {ops:>6}  " + "  ".join(f"{c:>15}" for c in cells), flush=True)


if __name__ == "__main__":
    main()
