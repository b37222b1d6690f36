"""MAC coverage on a TTS-like transformer and on silero_vad, by where the shapes come from; load time against a
static-only load.

    python benchmarks/bench_shapes.py [--layers 6] [--decoder-layers 6] [--sequence 24]

The model is tests/support/tts_transformer.py's (BERT-like encoder with VITS-style relative attention, a duration
predictor setting the number of frames, a decoder on those frames, a ``speed`` input: 0 fails the run), built
here. Real inputs are token ids with a full mask and a speed of 1; onnxruntime profiles two runs on them, once
with its default optimizations (fused nodes, as a real profile) and once without. For each source of shapes the
script loads the model, computes the MACs and prints the share of operators with a MAC count, the frames the
decoder got, and the load time as a ratio to the static-only load measured in the same run:

    * static: onnx shape inference only (input dims pinned with --dim);
    * zeros: the default, one onnxruntime run on zero inputs (fails here: the speed is 0);
    * --inputs: one onnxruntime run on the real inputs;
    * profile: the shapes the onnxruntime profile recorded (no run), default optimizations and none.

silero_vad (samples/onnx) keeps its operators in If branches, one per sample rate: the same sources on 16 kHz
inputs, and coverage counted over the operators that are not If/Loop/Scan and over those the 16 kHz run ran (the
nodes of an unoptimized onnxruntime profile of it).
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
sys.path.insert(0, str(ROOT / "tests" / "support"))


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
    from renderer.loaders.registry import load_model

    seconds, macs = measure_ops(model, **source)
    counted = [v for v in macs.values() if not isinstance(v, str)]
    mel = load_model(model, **source).main.outputs[1].type.shape  # type: ignore[arg-type]
    return seconds, len(counted), len(macs), mel, sum(counted)


def silero(folder: Path) -> None:
    import json

    import numpy as np

    from renderer.loaders.registry import load_model

    model = ROOT / "samples" / "onnx" / "silero_vad.onnx"
    audio = np.random.default_rng(0).standard_normal((1, 512)).astype(np.float32)
    feeds = {"input": audio, "state": np.zeros((2, 1, 128), np.float32), "sr": np.array(16000, np.int64)}
    np.savez(folder / "vad.npz", **feeds)
    plain = profile(model, feeds, folder, False)
    ran_names = {e["name"].removesuffix("_kernel_time") for e in json.loads(plain.read_text())
                 if e.get("cat") == "Node" and e["name"].endswith("_kernel_time")}
    nodes = [n for g in load_model(model, shape_run=False).graphs for n in g.nodes
             if n.op_type not in ("If", "Loop", "Scan")]
    ran = {n.key for n in nodes if n.name in ran_names}
    pinned = {"input.axis0": 1, "input.axis1": 512, "state.axis1": 1}
    sources = {"static": {"dims": pinned, "shape_run": False}, "zeros (sr 0: fails)": {"dims": pinned},
               "--inputs": {"inputs": folder / "vad.npz"},
               "profile (optimized)": {"profiles": [profile(model, feeds, folder, True)]},
               "profile (no optimization)": {"profiles": [plain]}}
    print(f"\nsilero_vad, 16 kHz: {len(nodes)} operators besides If/Loop/Scan, {len(ran)} of them ran")
    print(f"{'shapes from':<27}{'with MACs':>11}{'coverage':>10}{'of those run':>14}{'MACs':>10}{'load':>9}"
          f"{'ratio':>8}")
    baseline = None
    for name, source in sources.items():
        seconds, macs = measure_ops(model, **source)
        baseline = baseline or seconds
        counted = {key for key, value in macs.items() if not isinstance(value, str)}
        covered = len(counted & {n.key for n in nodes})
        total = sum(v for v in macs.values() if not isinstance(v, str))
        print(f"{name:<27}{covered:>11}{covered / len(nodes):>10.1%}{len(counted & ran) / len(ran):>14.1%}"
              f"{total:>10,}{seconds:>8.2f}s{seconds / baseline:>7.2f}×")


def measure_ops(model: Path, **source: object) -> tuple[float, dict]:
    """(seconds to load, operator key → its MACs or the n/a reason)."""
    from renderer.loaders.registry import load_model
    from renderer.metrics import builtin as metrics

    started = time.perf_counter()
    loaded = load_model(model, **source)  # type: ignore[arg-type]
    seconds = time.perf_counter() - started
    ops, _ = metrics.compute(loaded, {"macs"}, set(), progress=False)
    return seconds, {key: v["macs"] for key, v in ops.items()}


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
        silero(folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
