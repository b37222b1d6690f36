"""Hostile tiny models against the resource policy of child runs (issue 19): time and peak memory, with defaults.

    python benchmarks/bench_bounds.py [--only NAME]

Each case runs ``annograph ARGV`` in a fresh Python process that reports its own peak resident memory and the
largest of its children's (the onnxruntime run); their sum bounds the peak of the command and its children.
The models (``tests/hostile_models.py``) are a few hundred bytes:

    baseline         render tiny_cnn.onnx (start-up, model, Graphviz)
    render-growing   a Loop of 2^62 steps emitting 256 KiB each (issue 19: 9.6 GB for ~90 s before)
    render-endless   a Loop of 2^62 steps in constant memory (ends at the run's time limit)
    render-computed  a 2 GiB tensor whose length comes from a computed value
    compare-2GiB     compare of that model fed n=0 (issue 19: 21 GB peak before)
    compare-static   compare of an Expand to a constant 2 GiB shape (refused before anything runs)
    compare-endless, compare-growing   the loops in compare

Printed: seconds, peak MiB (self + largest child), the ratio to the baseline, and whether the case stays within
its bound (2 GiB and 60 s for the tiny models; 4 GiB for the 2 GiB-tensor compare).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

REPORT = """
import json, resource, sys
from renderer.commands.cli import main
code = main(sys.argv[1:])
usage = {"self": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
         "children": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024, "code": code}
print(json.dumps(usage))
"""


def _cases(folder: Path) -> dict[str, tuple[list[str], int]]:
    import hostile_models as H
    import numpy as np

    files = {"growing": H.growing_loop(), "endless": H.endless_loop(), "computed": H.computed_tensor(1 << 29),
             "static": H.static_tensor(1 << 29)}
    for name, data in files.items():
        (folder / f"{name}.onnx").write_bytes(data)
    np.savez(folder / "n.npz", n=np.zeros(1, np.int64))
    np.savez(folder / "x.npz", x=np.ones(1, np.float32))
    m = {name: str(folder / f"{name}.onnx") for name in files}
    dot = str(folder / "out.dot")
    json_out = str(folder / "out.json")
    tiny = 2 << 30
    return {
        "baseline": (["render", str(ROOT / "samples/onnx/tiny_cnn.onnx"), "-o", dot], tiny),
        "render-growing": (["render", m["growing"], "-o", dot], tiny),
        "render-endless": (["render", m["endless"], "-o", dot], tiny),
        "render-computed": (["render", m["computed"], "-o", dot], tiny),
        "compare-2GiB": (["compare", m["computed"], m["computed"], "--inputs", str(folder / "n.npz"), "-o",
                          json_out], 4 << 30),
        "compare-static": (["compare", m["static"], m["static"], "--inputs", str(folder / "x.npz"), "-o", json_out],
                           tiny),
        "compare-endless": (["compare", m["endless"], m["endless"], "--inputs", str(folder / "x.npz"), "-o",
                             json_out], tiny),
        "compare-growing": (["compare", m["growing"], m["growing"], "--inputs", str(folder / "x.npz"), "-o",
                             json_out], tiny),
    }


def _measure(argv: list[str]) -> tuple[float, int, str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    for name in ("ANNOGRAPH_RUN_MEMORY", "ANNOGRAPH_RUN_SECONDS"):
        env.pop(name, None)  # the defaults are what is measured
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-c", REPORT, *argv], capture_output=True, text=True, env=env,
                          timeout=600)
    seconds = time.monotonic() - started
    usage = json.loads(done.stdout.strip().splitlines()[-1])
    said = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else ""
    return seconds, usage["self"] + usage["children"], said


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", action="append", help="run only these cases (and the baseline)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        cases = _cases(Path(tmp))
        base_seconds = base_peak = 0.0
        print(f"{'case':18} {'seconds':>8} {'peak MiB':>9} {'x base':>7}  within  last line")
        for name, (argv, bound) in cases.items():
            if args.only and name != "baseline" and name not in args.only:
                continue
            seconds, peak, said = _measure(argv)
            if name == "baseline":
                base_seconds, base_peak = seconds, peak
            ok = peak < bound and seconds < 60
            print(f"{name:18} {seconds:8.1f} {peak / 2**20:9.0f} {peak / base_peak:7.1f}  {'yes' if ok else 'NO':6}  "
                  f"{said[:110]}")
        print(f"(baseline: {base_seconds:.1f} s, {base_peak / 2**20:.0f} MiB)")


if __name__ == "__main__":
    main()
