"""MAC coverage on a TTS-like transformer, by where the shapes come from; load time against a static-only load.

    python benchmarks/bench_shapes.py [--layers 6] [--decoder-layers 6] [--sequence 24]

The model is tests/tts_transformer.py's (BERT-like encoder with VITS-style relative attention, a duration
predictor setting the number of frames, a decoder on those frames, a ``speed`` input: 0 fails the run), built
here. Real inputs are token ids with a full mask and a speed of 1; onnxruntime profiles two runs on them, once
with its default optimizations (fused nodes, as a real profile) and once without. For each source of shapes the
script loads the model, computes the MACs and prints the share of operators with a MAC count, the frames the
decoder got, and the load time as a ratio to the static-only load measured in the same run:

    * static: onnx shape inference only (input dims pinned with --dim);
    * zeros: the default, one onnxruntime run on zero inputs (fails here: the speed is 0);
    * --inputs: one onnxruntime run on the real inputs;
    * profile: the shapes the onnxruntime profile recorded (no run), default optimizations and none.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))


def profile(model: Path, feeds: dict, folder: Path, optimized: bool) -> Path:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.enable_profiling = True
    options.profile_file_prefix = str(folder / ("optimized" if optimized else "plain"))
    if not optimized:
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])
    for _ in range(2):
        session.run(None, feeds)
    return Path(session.end_profiling())


def measure(model: Path, **source: object) -> tuple[float, int, int, object, float]:
    """(seconds to load, operators with MACs, operators, the mel output's shape, total MACs)."""
    from renderer import metrics
    from renderer.loaders import load_model

    started = time.perf_counter()
    loaded = load_model(model, **source)  # type: ignore[arg-type]
    seconds = time.perf_counter() - started
    ops, _ = metrics.compute(loaded, {"macs"}, set(), progress=False)
    counted = [v["macs"] for v in ops.values() if not isinstance(v["macs"], str)]
    return seconds, len(counted), len(ops), loaded.main.outputs[1].type.shape, sum(counted)


def main() -> None:
    import numpy as np
    import onnx

    import tts_transformer

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=6)
    parser.add_argument("--decoder-layers", type=int, default=6)
    parser.add_argument("--sequence", type=int, default=24)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="bench-shapes-"))
    try:
        model = folder / "tts.onnx"
        onnx.save(tts_transformer.build(args.layers, args.decoder_layers, speed=True), model)
        ids = (np.arange(args.sequence, dtype=np.int64).reshape(1, -1) * 7) % tts_transformer.VOCAB
        feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids), "speed": np.array([1.0], np.float32)}
        np.savez(folder / "inputs.npz", **feeds)
        pinned = {"batch": 1, "sequence": args.sequence}
        sources = {
            "static": {"dims": pinned, "shape_run": False},
            "zeros": {"dims": pinned},
            "--inputs": {"inputs": folder / "inputs.npz"},
            "profile (optimized)": {"profiles": [profile(model, feeds, folder, True)]},
            "profile (no optimization)": {"profiles": [profile(model, feeds, folder, False)]},
        }
        print(f"TTS-like transformer: {args.layers} encoder + {args.decoder_layers} decoder layers, "
              f"sequence {args.sequence}")
        print(f"{'shapes from':<27}{'ops with MACs':>16}{'coverage':>10}{'mel shape':>16}{'MACs':>12}{'load':>9}"
              f"{'ratio':>8}")
        baseline = None
        for name, source in sources.items():
            seconds, counted, total, mel, macs = measure(model, **source)
            baseline = baseline or seconds
            print(f"{name:<27}{f'{counted}/{total}':>16}{counted / total:>10.1%}{'×'.join(map(str, mel)):>16}"
                  f"{macs:>12,}{seconds:>8.2f}s{seconds / baseline:>7.2f}×")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
