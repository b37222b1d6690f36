"""Reading a big annotation file: time and peak memory, against the bare csv module on the same file.

    python benchmarks/bench_annotations.py [--rows 1000000] [--syntax csv|json|yaml|txt] [--model PATH]

The file is generated into a temporary folder: ``--rows`` operator rows for the model (default
samples/onnx/tiny_cnn.onnx), ids cycling through the operators' names, ``S:N`` indices and a few ids that
match nothing, each row with a latency, a note and a count. Each stage runs in a fresh child process so its
peak resident memory (ru_maxrss) is its own:

    baseline   csv.reader over the file, keeping nothing (the floor for any CSV reader)
    read       renderer.annotations.registry.read_file (the generic reader)
    merge      read_file + matching every id to the model (load_annotations)
    dot        load_annotations + the DOT of the annotated picture (to_dot, no Graphviz)

Printed: seconds, peak RSS in MiB, and read/baseline. Rows for the same element merge into one, so the
picture stays the model's size whatever the row count.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_MODEL = ROOT / "samples" / "onnx" / "tiny_cnn.onnx"

STAGES = {
    "baseline": "import csv\nwith open(PATH, newline='', encoding='utf-8') as f:\n"
                "    for row in csv.reader(f):\n        pass\n",
    "read": "from renderer.annotations.registry import read_file\nfrom renderer.loaders.registry import load_model\n"
            "model = load_model(MODEL)\nSTART()\nread_file(PATH, model)\n",
    "merge": "from renderer.annotations.registry import load_annotations\n"
             "from renderer.loaders.registry import load_model\n"
             "model = load_model(MODEL)\nSTART()\nload_annotations([PATH], model)\n",
    "dot": "from renderer.annotations.registry import load_annotations\n"
           "from renderer.loaders.registry import load_model\n"
           "from renderer.compose.rendering import to_dot\nmodel = load_model(MODEL)\nSTART()\n"
           "to_dot(model, load_annotations([PATH], model))\n",
}

CHILD = """
import json, resource, sys, time
sys.path.insert(0, {root!r})
PATH, MODEL = {path!r}, {model!r}
_t = [time.perf_counter()]
def START():
    _t[0] = time.perf_counter()
{body}
elapsed = time.perf_counter() - _t[0]
print(json.dumps({{"seconds": elapsed, "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}}))
"""


def ids_for(model_path: Path) -> list[str]:
    sys.path.insert(0, str(ROOT))
    from renderer.loaders.registry import load_model

    model = load_model(model_path)
    ids = [n.name for n in model.main.nodes if n.name] + [f"{n.graph.index}:{n.index}" for n in model.nodes()]
    return ids + ["no/such/op", "999:999"]


def write_file(path: Path, rows: int, syntax: str, ids: list[str]) -> None:
    """``rows`` operator rows in ``syntax``, written as a stream (the generator never holds them all)."""
    with open(path, "w", encoding="utf-8", newline="") as f:
        if syntax == "csv":
            f.write("id,latency_ms,note,count\n")
            for i in range(rows):
                f.write(f"{ids[i % len(ids)]},{(i % 997) / 10:.1f},row {i},{i}\n")
        elif syntax == "txt":
            for i in range(rows):
                f.write(f"operator_id: {ids[i % len(ids)]}\noperator_meta: \"latency_ms: {(i % 997) / 10:.1f}; "
                        f"note: row {i}\"\n")
        elif syntax == "json":
            f.write('{"operators": [\n')
            for i in range(rows):
                entry = {"id": ids[i % len(ids)], "meta": {"latency_ms": (i % 997) / 10, "note": f"row {i}"}}
                f.write(json.dumps(entry) + (",\n" if i < rows - 1 else "\n"))
            f.write("]}\n")
        elif syntax == "yaml":
            f.write("operators:\n")
            for i in range(rows):
                f.write(f"  - id: \"{ids[i % len(ids)]}\"\n"
                        f"    meta: {{latency_ms: {(i % 997) / 10:.1f}, note: row {i}}}\n")
        else:
            raise ValueError(syntax)


def run_stage(name: str, path: Path, model: Path) -> dict[str, float]:
    code = CHILD.format(root=str(ROOT), path=str(path), model=str(model), body=STAGES[name])
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"stage {name} failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def measure(rows: int, syntax: str = "csv", model: Path = DEFAULT_MODEL,
            stages: tuple[str, ...] = ("baseline", "read", "merge", "dot")) -> dict[str, dict[str, float]]:
    """Write the file and run each stage once; {stage: {"seconds": …, "peak_mib": …}} plus file facts."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"big.{syntax}"
        started = time.perf_counter()
        write_file(path, rows, syntax, ids_for(model))
        results: dict[str, dict[str, float]] = {
            "file": {"rows": rows, "mib": path.stat().st_size / 2**20, "write_seconds": time.perf_counter() - started},
        }
        for stage in stages:
            if stage == "baseline" and syntax != "csv":
                continue
            results[stage] = run_stage(stage, path, model)
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--syntax", choices=("csv", "json", "yaml", "txt"), default="csv")
    parser.add_argument("--model", type=Path, default=DEFAULT_MODEL)
    args = parser.parse_args(argv)
    results = measure(args.rows, args.syntax, args.model)
    facts = results.pop("file")
    print(f"{facts['rows']:,} rows of {args.syntax}, {facts['mib']:.1f} MiB, for {args.model.name}")
    for stage, figures in results.items():
        print(f"  {stage:9s} {figures['seconds']:7.2f} s   peak RSS {figures['peak_mib']:7.1f} MiB")
    if "baseline" in results and "read" in results:
        print(f"  read / baseline: {results['read']['seconds'] / results['baseline']['seconds']:.1f}×")
    return 0


if __name__ == "__main__":
    sys.exit(main())
