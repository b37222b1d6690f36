"""Regenerate the sample annotation files from real onnxruntime profiles of the sample models.

    python samples/annotations/make_annotations.py      (needs onnxruntime; numbers depend on the machine)

Each file shows one syntax of annograph's generic annotation format with measured numbers:
    tiny_cnn.latency.yaml            YAML, operators by node name, a style override and tensor styles
    tiny_transformer.latency.txt     the Netron-proposal key: value text
    tiny_cnn_qdq_u8.latency.csv      CSV with kind and style.* columns
    tiny_cnn.ort_profile.json        the raw onnxruntime profile (for the ort reader)
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ONNX = HERE.parent / "onnx"
RUNS = 20


def profile(model: Path, feeds: dict[str, np.ndarray], keep: Path | None = None) -> tuple[dict[str, float], str]:
    """Mean kernel time in µs per node name over RUNS runs (the first, warm-up, run dropped)."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.enable_profiling = True
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.intra_op_num_threads = 1
    options.profile_file_prefix = str(HERE / "_profile")
    session = ort.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])
    for _ in range(RUNS + 1):
        session.run(None, feeds)
    trace = Path(session.end_profiling())
    events = json.loads(trace.read_text())
    if keep is not None:
        keep.write_text(json.dumps(events, indent=0) + "\n")
    trace.unlink()
    runs: dict[str, list[float]] = {}
    for event in events:
        name = event.get("name", "")
        if event.get("cat") == "Node" and name.endswith("_kernel_time"):
            runs.setdefault(name[: -len("_kernel_time")], []).append(float(event["dur"]))
    return {name: statistics.fmean(times[1:] or times) for name, times in runs.items()}, ort.__version__


def main() -> int:
    rng = np.random.default_rng(0)
    image = {"image": rng.standard_normal((1, 3, 32, 32), dtype=np.float32)}

    latency, version = profile(ONNX / "tiny_cnn.onnx", image, keep=HERE / "tiny_cnn.ort_profile.json")
    hottest = max(latency, key=latency.get)
    lines = [
        "# Measured with onnxruntime %s (CPU, 1 thread, optimizations off), mean of %d runs." % (version, RUNS),
        "graph:",
        '  title: "tiny_cnn: CPU kernel time"',
        "  meta: {Device: CPU (onnxruntime %s), Runs: %d, Total latency: %.1f us}"
        % (version, RUNS, sum(latency.values())),
        "operators:",
    ]
    for name, value in latency.items():
        lines.append(f"  - id: {json.dumps(name)}")
        lines.append(f"    meta: {{latency_us: {value:.2f}}}")
        if name == hottest:
            lines.append('    style: {color: "#d62728", penwidth: 3}')
    lines += ["tensors:", "  - id: image", '    meta: {note: "network input, NCHW"}',
              '    style: {color: "#1f77b4", penwidth: 2.5}']
    (HERE / "tiny_cnn.latency.yaml").write_text("\n".join(lines) + "\n")

    tokens = {"tokens": rng.standard_normal((1, 16, 64), dtype=np.float32)}
    latency, version = profile(ONNX / "tiny_transformer.onnx", tokens)
    text = [f"graph_title: \"tiny_transformer: CPU kernel time (onnxruntime {version})\""]
    for name, value in latency.items():
        text += [f"operator_id: {name}", f'operator_meta: "latency_us: {value:.2f}; runs: {RUNS}"']
    (HERE / "tiny_transformer.latency.txt").write_text("\n".join(text) + "\n")

    latency, version = profile(ONNX / "tiny_cnn_qdq_u8.onnx", image)
    rows = ["id,kind,latency_us,style.fillcolor"]
    for name, value in latency.items():
        rows.append(f"{name},operator,{value:.2f},")
    rows.append("image,tensor,,")
    (HERE / "tiny_cnn_qdq_u8.latency.csv").write_text("\n".join(rows) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
