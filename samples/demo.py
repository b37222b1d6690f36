"""Render every sample model into a folder: the README's demo command runs this.

    python samples/demo.py [--annograph PATH] [--out out]

Each picture is made by the annograph command line, exactly as a user would run it.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
A = HERE / "annotations"
O = HERE / "onnx"
T = HERE / "tflite"

# (output stem, model, extra arguments, formats) for ``annograph render``
JOBS: list[tuple[str, Path, list[str], tuple[str, ...]]] = [
    ("tiny_cnn_latency", O / "tiny_cnn.onnx",
     ["-a", str(A / "tiny_cnn.latency.yaml"), "--color-by", "latency_us", "--edge-by", "bytes"],
     ("svg", "png", "pdf", "html", "md", "dot")),
    ("tiny_cnn_qdq_u8_latency", O / "tiny_cnn_qdq_u8.onnx",
     ["-a", str(A / "tiny_cnn_qdq_u8.latency.csv"), "--color-by", "latency_us", "--cmap", "viridis"], ("svg", "png")),
    ("tiny_transformer_latency", O / "tiny_transformer.onnx",
     ["-a", str(A / "tiny_transformer.latency.txt"), "--color-by", "latency_us", "--dim", "batch=1", "--dim", "seq=16",
      "--rankdir", "TB"], ("svg", "png")),
    ("tiny_cnn_qdq_u8_sparsity", O / "tiny_cnn_qdq_u8.onnx", ["--color-by", "sparsity", "--cmap", "ice"],
     ("svg", "png")),
    ("resnet50_macs", O / "light_resnet50.onnx", ["--color-by", "macs", "--norm", "log", "--no-edge-labels"],
     ("svg", "pdf", "html")),
    ("face_detection_macs", T / "face_detection_short_range.tflite", ["--color-by", "macs", "--edge-by", "bytes"],
     ("svg", "png")),
    ("okay_nabu_output_bytes", T / "okay_nabu.tflite", ["--color-by", "output_bytes", "--cmap", "ice"], ("svg", "png")),
    ("control_flow", O / "control_flow.onnx", [], ("svg", "png")),
    ("silero_vad", O / "silero_vad.onnx", ["--no-edge-labels"], ("svg",)),
    # too big for one picture: an overview and a page per layer (bert_scoped.svg.pages/), one HTML, one PDF
    ("bert_scoped_macs", O / "bert_scoped.onnx", ["--color-by", "macs", "--dim", "batch=1", "--dim", "sequence=32"],
     ("svg", "html", "pdf")),
]

# the same for ``annograph diff``: what quantizing tiny_cnn to uint8 QDQ did to each operator's kernel time
DIFFS: list[tuple[str, list[str], tuple[str, ...]]] = [
    ("tiny_cnn_fp32_vs_qdq_u8_latency",
     [str(O / "tiny_cnn.onnx"), str(O / "tiny_cnn_qdq_u8.onnx"), "--metric", "latency_us",
      "--before", str(A / "tiny_cnn.latency.yaml"), "--after", str(A / "tiny_cnn_qdq_u8.latency.csv")],
     ("svg", "png", "html", "md")),
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--annograph", default=shutil.which("annograph") or "annograph")
    parser.add_argument("--out", default="out")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    runs = [(stem, ["render", str(model), *extra], formats) for stem, model, extra, formats in JOBS]
    runs += [(stem, ["diff", *extra], formats) for stem, extra, formats in DIFFS]
    failed = 0
    for stem, arguments, formats in runs:
        outputs = [a for fmt in formats for a in ("-o", str(out / f"{stem}.{fmt}"))]
        command = [args.annograph, *arguments, *outputs, "--no-sidecar", "--quiet"]
        done = subprocess.run(command, capture_output=True, text=True)
        status = "ok" if done.returncode == 0 else "FAILED"
        print(f"{status:6} {stem}: {', '.join(formats)}")
        if done.returncode != 0:
            failed += 1
            sys.stderr.write(done.stderr)
    print(f"{len(runs) - failed} of {len(runs)} pictures rendered into {out}/")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
