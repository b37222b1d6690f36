"""Render speed, as ratios against a baseline measured in the same run.

    python benchmarks/bench_render.py [--repeat 3]

1. End-to-end ``annograph render`` of light_resnet50.onnx (415 operators) to SVG, against bare
   ``dot -Tsvg`` on the DOT annograph emits for it: the ratio is our overhead on top of Graphviz's layout.
2. ``annograph --help`` start-up, against ``python -c pass``: the ratio shows what importing costs.
3. The same two for densenet121 (1,746 operators) from the onnx wheel, when ``--large`` is given.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ENV = dict(os.environ, PYTHONPATH=str(ROOT))


def timed(command: list[str], stdin: bytes | None = None, repeat: int = 3) -> float:
    """Median wall time of ``repeat`` runs, in seconds."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(command, input=stdin, capture_output=True, check=True, env=ENV)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def render_case(model: Path, repeat: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        dot_file = Path(tmp) / "m.dot"
        svg_file = Path(tmp) / "m.svg"
        base = [sys.executable, "-m", "renderer", "render", str(model), "--no-sidecar", "-q", "--color-by", "macs"]
        subprocess.run([*base, "-o", str(dot_file)], check=True, env=ENV, capture_output=True)
        ours = timed([*base, "-o", str(svg_file)], repeat=repeat)
        bare = timed(["dot", "-Tsvg", str(dot_file), "-o", str(Path(tmp) / "bare.svg")], repeat=repeat)
    print(f"{model.name}: annograph render {ours:.2f} s, bare dot -Tsvg {bare:.2f} s, ratio {ours / bare:.2f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--large", action="store_true", help="also densenet121 (1,746 operators)")
    args = parser.parse_args()
    render_case(ROOT / "samples" / "onnx" / "light_resnet50.onnx", args.repeat)
    if args.large:
        import onnx

        render_case(Path(onnx.__file__).parent / "backend/test/data/light/light_densenet121.onnx", args.repeat)
    help_time = timed([sys.executable, "-m", "renderer", "--help"], repeat=max(args.repeat, 5))
    bare_python = timed([sys.executable, "-c", "pass"], repeat=max(args.repeat, 5))
    print(f"annograph --help {help_time * 1000:.0f} ms, python -c pass {bare_python * 1000:.0f} ms, "
          f"ratio {help_time / bare_python:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
