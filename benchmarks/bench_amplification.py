"""Small files that describe huge structures: time and peak memory of a whole render, against a plain one.

    python benchmarks/bench_amplification.py [--columns 25000000] [--keys 1000000]

Each case runs ``annograph render samples/onnx/tiny_cnn.onnx -a FILE`` in a fresh child process (peak resident
memory is its own), the files generated into a temporary folder:

    baseline   a two-row CSV annotation file (the cost of a render itself: start-up, model, Graphviz)
    columns    a CSV whose one-line header has --columns columns (50 MB at 25M), cut to MAX_COLUMNS
    keys       a JSON file with --keys meta keys on one operator and ``--show all``, cut to
               MAX_VALUES_PER_ELEMENT kept and MAX_DRAWN_VALUES drawn

Printed: seconds, peak RSS in MiB, and each against the baseline. Issue 12 measured, before the bounds,
44 s and 4.9 GB for the columns case and over 60 s and 2 GB for the keys case.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODEL = ROOT / "samples" / "onnx" / "tiny_cnn.onnx"


def _write_cases(folder: Path, columns: int, keys: int) -> dict[str, list[str]]:
    baseline = folder / "baseline.csv"
    baseline.write_text("id,latency_ms\n0,1.5\n1,2.5\n", encoding="utf-8")
    wide = folder / "wide.csv"
    with open(wide, "w", encoding="utf-8") as f:
        f.write("id,latency_ms," + "c," * columns + "last\n0,1.5\n")
    many = folder / "keys.json"
    with open(many, "w", encoding="utf-8") as f:
        f.write('{"operators": [{"id": 0, "meta": {' + ",".join(f'"k{i}": {i}' for i in range(keys)) + "}}]}")
    return {"baseline": ["-a", str(baseline)], "columns": ["-a", str(wide)],
            "keys": ["-a", str(many), "--show", "all"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--columns", type=int, default=25_000_000)
    parser.add_argument("--keys", type=int, default=1_000_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        cases = _write_cases(folder, args.columns, args.keys)
        results = {}
        for name, case_args in cases.items():
            # ru_maxrss of RUSAGE_CHILDREN is the largest child so far: run the baseline first, and each case
            # in a child of its own that reports only itself
            code = ("import resource, subprocess, sys, time; t = time.monotonic(); "
                    "subprocess.run(sys.argv[1:], check=True, capture_output=True); "
                    "print(time.monotonic() - t, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024)")
            done = subprocess.run([sys.executable, "-c", code, sys.executable, "-m", "renderer", "render", str(MODEL),
                                   *case_args, "-o", str(folder / f"{name}.svg"), "-q", "--no-sidecar"],
                                  capture_output=True, text=True, cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)))
            if done.returncode != 0:
                raise SystemExit(f"{name}: {done.stderr.strip()[-500:]}")
            seconds, peak = map(float, done.stdout.split())
            results[name] = (seconds, peak)
        base_s, base_m = results["baseline"]
        print(f"{'case':10} {'seconds':>8} {'peak MiB':>9} {'× time':>7} {'× memory':>9}")
        for name, (seconds, peak) in results.items():
            print(f"{name:10} {seconds:8.2f} {peak:9.0f} {seconds / base_s:7.2f} {peak / base_m:9.2f}")


if __name__ == "__main__":
    main()
