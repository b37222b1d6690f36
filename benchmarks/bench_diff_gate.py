"""How the diff gate behaves on noise: two real onnxruntime profiles of one model, nothing changed between them.

    python benchmarks/bench_diff_gate.py [--model samples/onnx/light_resnet50.onnx] [--runs 5]

Profiles the model twice (each with ``--runs`` inferences on the same random input, graph optimizations off so
every node keeps its name), then runs ``annograph diff MODEL --before A --after B --metric latency_us`` with
``--fail-above 10%``: once with ``--min-share 0`` (every operator gated, as before the floor existed) and once with
the default floor (1 % of the model total). Prints how many operators trip each way, how many the floor set
aside, and the model total's change, which ``--fail-total-above`` gates. Nothing changed, so every trip is noise.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def profile(model: Path, folder: Path, name: str, runs: int) -> Path:
    """One onnxruntime profile of ``runs`` inferences of ``model``, written to ``folder/name.json``."""
    import numpy as np
    import onnxruntime as ort

    ort.set_default_logger_severity(3)
    options = ort.SessionOptions()
    options.enable_profiling = True
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.profile_file_prefix = str(folder / name)
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    feed = {}
    for item in session.get_inputs():
        shape = [d if isinstance(d, int) and d > 0 else 1 for d in item.shape]
        feed[item.name] = rng.standard_normal(shape).astype(np.float32)
    for _ in range(runs):
        session.run(None, feed)
    written = Path(session.end_profiling())
    target = folder / f"{name}.json"
    written.rename(target)
    return target


def gate(model: Path, before: Path, after: Path, folder: Path, *extra: str) -> dict[str, object]:
    summary = folder / "summary.md"
    run = subprocess.run([sys.executable, "-m", "renderer", "diff", str(model), "--before", str(before), "--after",
                          str(after), "--metric", "latency_us", "-o", str(folder / "diff.dot"), "--summary",
                          str(summary), "--collapse", "none", "--fail-above", "10%", *extra],
                         capture_output=True, text=True, check=False, cwd=ROOT)
    text = summary.read_text(encoding="utf-8") if summary.exists() else ""
    tripped = re.search(r"\*\*(\d+) operators? past --fail-above", text)
    below = re.search(r"(\d+) operators? past \S+ but each under", text)
    total = re.search(r"\| model \| [^|]+ \| ([^|]+) \|", text)
    return {"exit": run.returncode, "tripped": int(tripped.group(1)) if tripped else 0,
            "below floor": int(below.group(1)) if below else 0,
            "total change": total.group(1).strip() if total else "?",
            "stderr": run.stderr.strip().splitlines()[-1:] if run.returncode not in (0, 3) else []}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, default=ROOT / "samples" / "onnx" / "light_resnet50.onnx")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        before = profile(args.model, folder, "before", args.runs)
        after = profile(args.model, folder, "after", args.runs)
        operators = len(json.loads(before.read_text()))
        print(f"{args.model.name}: two onnxruntime profiles of {args.runs} runs each, same input, nothing changed "
              f"({operators} trace events each)")
        without = gate(args.model, before, after, folder, "--min-share", "0")
        default = gate(args.model, before, after, folder)
        for label, found in (("--fail-above 10% --min-share 0", without), ("--fail-above 10% (floor 1%)", default)):
            print(f"  {label:34} exit {found['exit']}: {found['tripped']:3} operators trip, "
                  f"{found['below floor']:3} under the floor; model total {found['total change']} {found['stderr']}")
        kept = default["tripped"] / without["tripped"] if without["tripped"] else 0.0
        print(f"  ratio of operators tripping with the floor to without: {kept:.2f}")


if __name__ == "__main__":
    main()
