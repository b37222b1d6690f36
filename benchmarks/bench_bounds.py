"""Hostile tiny models against the resource policy of child runs (issue 19): time and peak memory, with defaults.

    python benchmarks/bench_bounds.py [--only NAME]

Each case runs ``annograph ARGV`` in a fresh Python process that reports its own peak resident memory and the
largest of its children's (the onnxruntime run); their sum bounds the peak of the command and its children.
The models (``tests/support/hostile_models.py``) are a few hundred bytes:

    baseline         render tiny_cnn.onnx (start-up, model, Graphviz)
    render-growing   a Loop of 2^62 steps emitting 256 KiB each (issue 19: 9.6 GB for ~90 s before)
    render-endless   a Loop of 2^62 steps in constant memory (ends at the run's time limit)
    render-computed  a 2 GiB tensor whose length comes from a computed value
    compare-2GiB     compare of that model fed n=0 (issue 19: 21 GB peak before)
    compare-static   compare of an Expand to a constant 2 GiB shape (refused before anything runs)
    compare-endless, compare-growing   the loops in compare

Issue 31, hostile tool files and npz inputs (the registry's ``hostile`` files, ``tests/support/registry.py``, at
full size):

    reader-KIND      render of a Vela, OpenVINO (counters, execution graph) or TensorRT file whose numbers overflow,
                     are negative or NaN, or add up past the float range; with one line of 256 MiB (one 2 GiB
                     line took 4.2 GB and 17 s before); with 1,000,000 layers for the 20-operator model (TensorRT:
                     595 MiB at 10^6 layers before)
    npz-members      metrics --inputs of 150,000 members whose zip64 end record claims 1 (9.4 s, 200 MB before)
    npz-header       metrics --inputs of a 1 MiB file whose member declares 2^28 float32 for an input of 4
                     (1.1 GB before)

Printed: seconds, peak MiB (self + largest child), the ratio to the baseline, and whether the case stays within
its bound (2 GiB and 60 s for the tiny models; 4 GiB for the 2 GiB-tensor compare; 256 MiB for the hostile files,
which are refused).
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
sys.path.insert(0, str(ROOT / "tests" / "support"))

REPORT = """
import json, resource, sys
from renderer.commands.cli import main
code = main(sys.argv[1:])
# VmHWM, not ru_maxrss: Linux keeps the parent's peak in ru_maxrss across the exec of this process
peak = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM"))
usage = {"self": peak * 1024,
         "children": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024, "code": code}
print(json.dumps(usage))
"""


def _cases(folder: Path) -> dict[str, tuple[list[str], int]]:
    import numpy as np

    import hostile_models as H

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


HUGE_LINE = 1 << 28
MANY_RECORDS = 1_000_000


def _hostile_cases(folder: Path) -> dict[str, tuple[list[str], int]]:
    """A render of each registered reader's hostile file of each kind, and the two npz inputs."""
    import payloads
    import registry

    cases: dict[str, tuple[list[str], int]] = {}
    for module in payloads.reader_modules():
        hostile = registry.reader(module).hostile
        for kind in registry.HOSTILE_KINDS if hostile else ():
            name, data = hostile(kind, {"huge_line": HUGE_LINE, "many_records": MANY_RECORDS}.get(kind, 0))
            path = folder / f"{module.NAME}-{kind}" / name
            path.parent.mkdir()
            path.write_bytes(data)
            del data
            cases[f"{module.NAME}-{kind}"] = (["render", str(payloads.reader_model(module)), "-a", str(path), "-o",
                                               str(folder / "out.dot")], 256 << 20)
    model = _four_input_model(folder)
    for name, write in (("members", _many_members), ("header", _declaring)):
        path = folder / f"{name}.npz"
        write(path)
        cases[f"npz-{name}"] = (["metrics", str(model), "--inputs", str(path), "-o", str(folder / "out.json")],
                                256 << 20)
    return cases


def _four_input_model(folder: Path) -> Path:
    import test_bounds

    return test_bounds._four_input_model(folder)


def _many_members(path: Path) -> None:
    import test_bounds

    test_bounds._many_members(path, 150_000, 1)


def _declaring(path: Path) -> None:
    import test_bounds

    test_bounds._declaring(path, (1 << 28,))


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
    parser.add_argument("--only", action="append", help="run only these cases (and the baseline); 'hostile' makes "
                        "the reader and npz cases")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        cases = _cases(Path(tmp))
        hostile = _hostile_cases(Path(tmp)) if not args.only or set(args.only) - set(cases) else {}
        cases.update(hostile)
        if args.only and "hostile" in args.only:
            args.only += list(hostile)
        base_seconds = base_peak = 0.0
        print(f"{'case':30} {'seconds':>8} {'peak MiB':>9} {'x base':>7}  within  last line")
        for name, (argv, bound) in cases.items():
            if args.only and name != "baseline" and name not in args.only:
                continue
            seconds, peak, said = _measure(argv)
            if name == "baseline":
                base_seconds, base_peak = seconds, peak
            ok = peak < bound and seconds < 60
            print(f"{name:30} {seconds:8.1f} {peak / 2**20:9.0f} {peak / base_peak:7.1f}  {'yes' if ok else 'NO':6}  "
                  f"{said[:110]}")
        print(f"(baseline: {base_seconds:.1f} s, {base_peak / 2**20:.0f} MiB)")


if __name__ == "__main__":
    main()
