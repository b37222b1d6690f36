"""Big models (issue 9): time and peak memory of the default full report, against bare ``dot`` on the flat DOT.

    python benchmarks/bench_big.py [--cap 120] [--only NAME] [--no-bare] [--keep DIR]

The transformers are built here, reproducibly and without torch (``benchmarks/transformer_models.py``: the
graph torch's TorchScript exporter writes for a BERT encoder, with its Shape → Gather → Unsqueeze → Concat →
Reshape, Range and Expand shape computations):

    transformer-3600-scoped   40 layers, 3,591 operators, names like /encoder/layer.0/attention/self/Shape
    transformer-3600-flat     the same graph with flat names (node_MatMul_64) and no other hint of structure
    transformer-400-shapes    4 layers, 387 operators
    bert_scoped / bert_dynamo the torch-exported samples (samples/onnx/, 1,147 and 430 operators), when present
    scaling-2k … scaling-20k  22, 56, 112 and 224 layers (1,989 to 19,967 operators), for the time per operator

Each case runs ``annograph render MODEL -o out.svg`` (the default full report: the overview and every page
once the report has pages) in a fresh subprocess, so peak memories do not mix. Peak memory is that of the
whole process tree: the larger of (annograph's own ru_maxrss + the largest ru_maxrss among its children:
Graphviz, or forked page workers, whose shared pages this counts twice, so it is an upper bound) and the sum
of the tree's resident sizes sampled every 50 ms (parallel layouts). In the same
run, ``dot -Tsvg`` on the flat DOT (``--collapse none`` when the CLI has it) gives the baseline; the ratio is
ours / bare. Every run is capped at ``--cap`` seconds and reported as ``>CAP s`` when killed; a bigger model
of a series whose smaller one already hit the cap is not run (``>CAP s, skipped``).

The goals (issue 9, on a 2-core machine) are printed against the figures: ≤ 5 s for the 3,600-op
transformer, ≤ 2 s for the 400-op one, ≤ 20 s for 20,000 operators with close to linear growth, ≤ 1 GiB.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
ENV = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
GIB = 1024**3
MEMORY_GOAL = 1 * GIB
SAMPLE_SECONDS = 0.05


@dataclass(frozen=True)
class Case:
    name: str
    layers: int = 0
    names: str = "scoped"
    sample: str = ""  # a file under samples/onnx instead of a generated model
    goal: float | None = None
    series: str = ""  # cases of one series grow in size: once one hits the cap, the bigger ones are skipped


CASES = (
    Case("transformer-3600-scoped", 40, goal=5.0),
    Case("transformer-3600-flat", 40, names="flat", goal=5.0),
    Case("transformer-400-shapes", 4, goal=2.0),
    Case("bert_scoped", sample="bert_scoped.onnx"),
    Case("bert_dynamo", sample="bert_dynamo.onnx"),
    Case("scaling-2k", 22, series="scaling"),
    Case("scaling-5k", 56, series="scaling"),
    Case("scaling-10k", 112, series="scaling"),
    Case("scaling-20k", 224, goal=20.0, series="scaling"),
)


@dataclass
class Measure:
    seconds: float | None  # None: killed at the cap (or skipped)
    peak_bytes: int = 0
    detail: str = ""
    skipped: bool = False
    failed: str = ""

    def time_text(self, cap: float) -> str:
        if self.failed:
            return f"failed ({self.failed})"
        if self.seconds is None:
            return f">{cap:.0f} s" + (", skipped" if self.skipped else "")
        return f"{self.seconds:.2f} s"


# -- measuring one process tree ------------------------------------------------------------------------------


def _tree(pid: int) -> list[int]:
    found, todo = [], [pid]
    while todo:
        p = todo.pop()
        found.append(p)
        try:
            with open(f"/proc/{p}/task/{p}/children") as f:
                todo.extend(int(c) for c in f.read().split())
        except OSError:
            pass
    return found


def _rss(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, IndexError, ValueError):
        return 0


def run_capped(command: list[str], cap: float) -> tuple[float | None, int, int, str]:
    """Run ``command`` in its own session; (seconds or None when killed, sampled tree peak, rc, stderr tail)."""
    with tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=err, env=ENV, start_new_session=True)
        peak = 0
        while process.poll() is None:
            if time.perf_counter() - start > cap:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
                return None, peak, -9, ""
            peak = max(peak, sum(_rss(p) for p in _tree(process.pid)))
            time.sleep(SAMPLE_SECONDS)
        seconds = time.perf_counter() - start
        err.seek(0)
        tail = err.read().decode("utf-8", "replace").strip().splitlines()[-1:]
    return seconds, peak, process.returncode, tail[0] if tail else ""


def measure_render(argv: list[str], cap: float) -> Measure:
    """``annograph ARGV`` in a fresh child that reports its own and its children's ru_maxrss."""
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        report = Path(f.name)
    try:
        seconds, sampled, rc, err = run_capped([sys.executable, __file__, "--child", str(report), "--", *argv], cap)
        if seconds is None:
            return Measure(None, sampled)
        if rc != 0:
            return Measure(seconds, sampled, failed=err or f"exit {rc}")
        own = json.loads(report.read_text())
        peak = max(sampled, own["self"] + own["children"])
        # a page laid out in a forked worker shares the parent's pages, so its ru_maxrss counts them again:
        # the sum is an upper bound, the sampled tree a lower one
        detail = (f"upper bound: annograph {own['self'] / 2**20:.0f} MiB + largest child "
                  f"{own['children'] / 2**20:.0f} MiB; sampled tree {sampled / 2**20:.0f} MiB")
        return Measure(seconds, peak, detail)
    finally:
        report.unlink(missing_ok=True)


def child(report: str, argv: list[str]) -> int:
    from renderer.commands.cli import main

    rc = main(argv)
    # ru_maxrss is in KiB on Linux
    usage = {"self": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
             "children": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024}
    Path(report).write_text(json.dumps(usage))
    return rc


def measure_dot(dot_file: Path, out: Path, cap: float) -> Measure:
    seconds, sampled, rc, err = run_capped(["dot", "-Tsvg", str(dot_file), "-o", str(out)], cap)
    if seconds is not None and rc != 0:
        return Measure(seconds, sampled, failed=err or f"exit {rc}")
    return Measure(seconds, sampled)


# -- the cases ------------------------------------------------------------------------------------------------


def render_help() -> str:
    done = subprocess.run([sys.executable, "-m", "renderer", "render", "--help"], capture_output=True, text=True,
                          env=ENV, check=True)
    return done.stdout


def model_for(case: Case, folder: Path) -> Path | None:
    from benchmarks import transformer_models

    if case.sample:
        path = ROOT / "samples" / "onnx" / case.sample
        return path if path.exists() else None
    path = folder / f"{case.name}.onnx"
    if not path.exists():
        transformer_models.write(path, case.layers, case.names)
    return path


def operator_count(path: Path) -> int:
    import onnx

    return len(onnx.load(str(path), load_external_data=False).graph.node)


def fmt_bytes(n: int) -> str:
    return f"{n / 2**20:,.0f} MiB"


def run_case(case: Case, model: Path, folder: Path, args: argparse.Namespace, flat_flags: list[str],
             skip_ours: bool, skip_bare: bool) -> tuple[Measure, Measure | None]:
    out = folder / case.name / "out.svg"
    out.parent.mkdir(parents=True, exist_ok=True)
    if skip_ours:
        ours = Measure(None, skipped=True)
    else:
        ours = measure_render(["render", str(model), "-q", "-o", str(out)], args.cap)
    pages = out.parent / (out.name + ".pages")
    page_count = 1 + (len([p for p in pages.rglob("*.svg")]) if pages.is_dir() else 0) if out.exists() else 0
    bare = None
    if not args.no_bare:
        if skip_bare:
            bare = Measure(None, skipped=True)
        else:
            flat = folder / case.name / "flat.dot"
            made = subprocess.run([sys.executable, "-m", "renderer", "render", str(model), "-q", *flat_flags,
                                   "-o", str(flat)], capture_output=True, text=True, env=ENV)
            if made.returncode != 0:
                bare = Measure(None, failed=(made.stderr.strip().splitlines() or ["?"])[-1])
            else:
                bare = measure_dot(flat, folder / case.name / "bare.svg", args.cap)
    line = f"  annograph render -o out.svg: {ours.time_text(args.cap)}"
    if ours.seconds is not None and not ours.failed:
        line += f", peak {fmt_bytes(ours.peak_bytes)} ({ours.detail}), {page_count} page(s)"
    print(line, flush=True)
    if bare is not None:
        line = f"  bare dot -Tsvg on the flat DOT: {bare.time_text(args.cap)}"
        if bare.seconds is not None and not bare.failed:
            line += f", peak {fmt_bytes(bare.peak_bytes)}"
        print(line + f"; ratio ours/bare: {ratio(ours, bare, args.cap)}", flush=True)
    return ours, bare


def ratio(ours: Measure, bare: Measure, cap: float) -> str:
    if ours.failed or bare.failed:
        return "n/a"
    if ours.seconds is not None and bare.seconds is not None:
        return f"{ours.seconds / bare.seconds:.3f}"
    if ours.seconds is not None:  # bare was killed at the cap
        return f"<{ours.seconds / cap:.3f}"
    if bare.seconds is not None:
        return f">{cap / bare.seconds:.1f}"
    return "n/a (both capped)"


def goal_line(label: str, measure: Measure, goal: float, cap: float) -> str:
    if measure.failed:
        return f"GOAL {label} ≤ {goal:g} s: failed ({measure.failed})"
    if measure.seconds is None:
        return f"GOAL {label} ≤ {goal:g} s: >{cap:.0f} s, MISSED"
    verdict = "met" if measure.seconds <= goal else "MISSED"
    return f"GOAL {label} ≤ {goal:g} s: {measure.seconds:.2f} s, {verdict} ({goal / measure.seconds:.2f}× the goal)"


def main() -> int:
    if sys.argv[1:2] == ["--child"]:  # python bench_big.py --child REPORT -- ANNOGRAPH_ARGV...
        return child(sys.argv[2], sys.argv[4:])
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cap", type=float, default=120.0, help="seconds before a run is killed (default 120)")
    parser.add_argument("--only", action="append", default=[], metavar="NAME",
                        help="run only the cases whose name contains NAME (repeatable)")
    parser.add_argument("--no-bare", action="store_true", help="skip the bare dot baseline")
    parser.add_argument("--keep", type=Path, metavar="DIR", help="write the models and outputs here and keep them")
    args = parser.parse_args()

    flat_flags = ["--collapse", "none"] if "--collapse" in render_help() else []
    print("flat DOT made with: " + " ".join(["annograph render MODEL", *flat_flags, "-o flat.dot"]))
    cases = [c for c in CASES if not args.only or any(o in c.name for o in args.only)]
    results: dict[str, tuple[int, Measure, Measure | None]] = {}
    capped: dict[str, set[str]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.keep or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        for case in cases:
            model = model_for(case, folder)
            if model is None:
                print(f"{case.name}: samples/onnx/{case.sample} not found, skipped")
                continue
            ops = operator_count(model)
            print(f"{case.name}: {ops:,} operators, {model.stat().st_size / 2**20:.1f} MiB model", flush=True)
            hit = capped.setdefault(case.series, set()) if case.series else set()
            ours, bare = run_case(case, model, folder, args, flat_flags, "ours" in hit, "bare" in hit)
            if case.series:
                if ours.seconds is None:
                    hit.add("ours")
                if bare is not None and bare.seconds is None:
                    hit.add("bare")
            results[case.name] = (ops, ours, bare)

    scaling = [(n, *results[n]) for n in ("scaling-2k", "scaling-5k", "scaling-10k", "scaling-20k") if n in results]
    if scaling:
        print("time per operator:")
        for name, ops, ours, _ in scaling:
            per = f"{ours.seconds / ops * 1000:.2f} ms/op" if ours.seconds is not None and not ours.failed else "n/a"
            print(f"  {name}: {ops:,} ops, {ours.time_text(args.cap)}, {per}")
        timed = [(ops, ours.seconds) for _, ops, ours, _ in scaling if ours.seconds is not None and not ours.failed]
        if len(timed) >= 2:
            (n0, t0), (n1, t1) = timed[0], timed[-1]
            print(f"  growth {n0:,} → {n1:,} ops: time ×{t1 / t0:.2f} for ops ×{n1 / n0:.2f} "
                  f"(linear = 1.00, measured {(t1 / t0) / (n1 / n0):.2f})")
    print("goals:")
    for case in cases:
        if case.goal is not None and case.name in results:
            print(goal_line(f"{case.name} ({results[case.name][0]:,} ops)", results[case.name][1], case.goal,
                            args.cap))
    measured = [(name, r[1]) for name, r in results.items() if r[1].seconds is not None and not r[1].failed]
    if measured:
        name, worst = max(measured, key=lambda item: item[1].peak_bytes)
        verdict = "met" if worst.peak_bytes <= MEMORY_GOAL else "MISSED"
        print(f"GOAL peak memory ≤ 1 GiB: worst {fmt_bytes(worst.peak_bytes)} ({name}), {verdict} "
              f"(runs killed at the cap not counted)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
