"""Big models (issue 9): time and peak memory of the default full report, against bare ``dot`` on the flat DOT.

    python benchmarks/bench_big.py [--cap 120] [--only NAME] [--no-bare] [--keep DIR] [--repeat 1]

The transformers are built here, reproducibly and without torch (``benchmarks/transformer_models.py``: the
graph torch's TorchScript exporter writes for a BERT encoder, with its Shape → Gather → Unsqueeze → Concat →
Reshape, Range and Expand shape computations):

    transformer-3600-scoped   40 layers, 3,591 operators, names like /encoder/layer.0/attention/self/Shape
    transformer-3600-flat     the same graph with flat names (node_MatMul_64) and no other hint of structure
    transformer-400-shapes    4 layers, 387 operators
    bert_scoped / bert_dynamo the torch-exported samples (samples/onnx/, 1,147 and 430 operators), when present
    scaling-2k … scaling-20k  22, 56, 112 and 224 layers (1,989 to 19,967 operators), for the time per operator
    tts-int8-3.6k             tests/tts_int8.py's Kokoro-shaped int8 TTS at 20 encoder layers (3,656 operators;
                              onnxruntime's quantizer builds it, ~20 s)

Each case runs ``annograph render MODEL --no-layout-cache -o out.svg`` (a first render; the default full report:
the overview and every page once the report has pages) in a fresh subprocess, so peak memories do not mix.
Peak memory is that of the
whole process tree: the larger of (annograph's own ru_maxrss + the largest ru_maxrss among its children:
Graphviz, or forked page workers, whose shared pages this counts twice, so it is an upper bound) and the sum
of the tree's resident sizes sampled every 50 ms (parallel layouts). In the same
run, ``dot -Tsvg`` on the flat DOT (``--collapse none`` when the CLI has it) gives the baseline; the ratio is
ours / bare. Every run is capped at ``--cap`` seconds and reported as ``>CAP s`` when killed; a bigger model
of a series whose smaller one already hit the cap is not run (``>CAP s, skipped``). ``--before DIR`` renders each
case with the annograph checked out in DIR too, a round of each in turn, and prints both as yardsticks (before →
after).

Every case is also printed as a multiple of the yardstick (``benchmarks/yardstick.py``: ``dot -Tsvg`` on a chain of
2,000 boxes, the median of 3 runs measured just before the case), so the figures of a loaded machine compare: the
yardstick, the floor (bare dot on the flat DOT) and ours, each in seconds and ours as both ratios. ``--repeat N``
runs each render N times and prints the median and the spread. Python's bytecode is kept for the run
(``keep_bytecode``), as an installed annograph has it. Each render also says how many Graphviz processes
it started (each about 16 ms of start-up) and how much of its CPU went to child processes (Graphviz, onnxruntime).

The goals (issue 9, on a 2-core machine) are printed against the figures: ≤ 5 s for the 3,600-op
transformer, ≤ 2 s for the 400-op one, ≤ 20 s for 20,000 operators with close to linear growth, ≤ 1 GiB;
and issue 30's: the int8 TTS ≤ 6× the yardstick, the 20k-op graph ≤ 20×.
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
    yardsticks: float | None = None  # issue 30: at most this many yardsticks
    tts: bool = False  # tests/tts_int8.py's model at ``layers`` encoder layers


CASES = (
    Case("transformer-3600-scoped", 40, goal=5.0),
    Case("transformer-3600-flat", 40, names="flat", goal=5.0),
    Case("transformer-400-shapes", 4, goal=2.0),
    Case("bert_scoped", sample="bert_scoped.onnx"),
    Case("bert_dynamo", sample="bert_dynamo.onnx"),
    Case("scaling-2k", 22, series="scaling"),
    Case("scaling-5k", 56, series="scaling"),
    Case("scaling-10k", 112, series="scaling"),
    Case("scaling-20k", 224, goal=20.0, series="scaling", yardsticks=20.0),
    Case("tts-int8-3.6k", 20, tts=True, yardsticks=6.0),
)


@dataclass
class Measure:
    seconds: float | None  # None: killed at the cap (or skipped)
    peak_bytes: int = 0
    detail: str = ""
    skipped: bool = False
    failed: str = ""
    spread: str = ""
    cpu: float = 0.0  # user + system seconds of annograph and every process it waited for
    graphviz: str = ""  # the Graphviz processes started, by program ("412 dot, 47 neato")
    children_cpu: float = 0.0  # the part of ``cpu`` spent in child processes (Graphviz, onnxruntime runs)

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


def run_capped(command: list[str], cap: float, env: dict[str, str] | None = None
               ) -> tuple[float | None, int, int, str]:
    """Run ``command`` in its own session; (seconds or None when killed, sampled tree peak, rc, stderr tail)."""
    with tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=err, env=env or ENV,
                                   start_new_session=True)
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


def measure_render(argv: list[str], cap: float, root: Path = ROOT) -> Measure:
    """``annograph ARGV`` in a fresh child that reports its own and its children's ru_maxrss; ``root``: the
    checkout whose ``renderer`` it runs (``--before``)."""
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        report = Path(f.name)
    try:
        env = dict(ENV, PYTHONPATH=str(root) + os.pathsep + os.environ.get("PYTHONPATH", ""))
        seconds, sampled, rc, err = run_capped([sys.executable, __file__, "--child", str(report), str(root), "--",
                                                *argv], cap, env)
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
        runs = ", ".join(f"{n} {program}" for program, n in sorted(own["graphviz"].items())) or "none"
        return Measure(seconds, peak, detail, cpu=own["cpu"], graphviz=runs, children_cpu=own["children_cpu"])
    finally:
        report.unlink(missing_ok=True)


def child(report: str, root: str, argv: list[str]) -> int:
    sys.path.insert(0, root)
    from renderer.commands.cli import main

    started = _counting_graphviz()
    rc = main(argv)
    # ru_maxrss is in KiB on Linux
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    usage = {"self": own.ru_maxrss * 1024, "children": children.ru_maxrss * 1024,
             "cpu": own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime, "graphviz": started,
             "children_cpu": children.ru_utime + children.ru_stime}
    Path(report).write_text(json.dumps(usage))
    return rc


def _counting_graphviz() -> dict[str, int]:
    """Counts, by program, the Graphviz processes this process starts from now on (each costs about 16 ms of
    start-up: issue 30)."""
    started: dict[str, int] = {}
    start = subprocess.Popen.__init__

    def counted(self: subprocess.Popen, args: object, *rest: object, **options: object) -> None:
        program = Path(str(args[0])).name if isinstance(args, (list, tuple)) and args else ""
        if program in ("dot", "neato", "fdp", "sfdp", "circo", "twopi"):
            started[program] = started.get(program, 0) + 1
        start(self, args, *rest, **options)  # type: ignore[arg-type]

    subprocess.Popen.__init__ = counted  # type: ignore[method-assign]
    return started


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
    if path.exists():
        return path
    if case.tts:
        sys.path.insert(0, str(ROOT / "tests" / "support"))
        import tts_int8

        return tts_int8.save_int8(path, case.layers)
    transformer_models.write(path, case.layers, case.names)
    return path


def operator_count(path: Path) -> int:
    import onnx

    return len(onnx.load(str(path), load_external_data=False).graph.node)


def fmt_bytes(n: int) -> str:
    return f"{n / 2**20:,.0f} MiB"


def run_case(case: Case, model: Path, folder: Path, args: argparse.Namespace, flat_flags: list[str],
             skip_ours: bool, skip_bare: bool, unit: tuple[float, float] | None = None
             ) -> tuple[Measure, Measure | None]:
    """Ours and the floor (bare dot on the flat DOT) for ``case``, each printed; ``unit``: the yardstick's
    wall and CPU seconds, measured just before."""
    out = folder / case.name / "out.svg"
    out.parent.mkdir(parents=True, exist_ok=True)
    if skip_ours:
        ours = Measure(None, skipped=True)
    else:
        argv = ["render", str(model), "-q", *args.fresh, "-o", str(out)]
        if args.before:
            before, ours = measure_alternating(argv, args.cap, args.repeat, args.before)
            if unit:
                print_before(before, ours, unit, args.cap)
        else:
            ours = measure_repeated(argv, args.cap, args.repeat)
    pages = out.parent / (out.name + ".pages")
    page_count = 1 + (len([p for p in pages.rglob("*.svg")]) if pages.is_dir() else 0) if out.exists() else 0
    bare = None
    if not args.no_bare:
        if skip_bare:
            bare = Measure(None, skipped=True)
        else:
            flat = folder / case.name / "flat.dot"
            made = subprocess.run([sys.executable, "-m", "renderer", "render", str(model), "-q", *flat_flags,
                                   "-o", str(flat)], check=False, capture_output=True, text=True, env=ENV)
            if made.returncode != 0:
                bare = Measure(None, failed=(made.stderr.strip().splitlines() or ["?"])[-1])
            else:
                bare = measure_dot(flat, folder / case.name / "bare.svg", args.cap)
    line = f"  annograph render -o out.svg: {ours.time_text(args.cap)}"
    if ours.seconds is not None and not ours.failed:
        line += (f"{ours.spread}, peak {fmt_bytes(ours.peak_bytes)} ({ours.detail}), {page_count} page(s), "
                 f"Graphviz processes: {ours.graphviz}")
    print(line, flush=True)
    if unit and ours.seconds and not ours.failed:
        print(f"  = {ours.seconds / unit[0]:.1f}× the yardstick's wall time; CPU {ours.cpu:.2f} s = "
              f"{ours.cpu / unit[1]:.1f}× the yardstick's CPU (child processes {ours.children_cpu:.2f} s of it)",
              flush=True)
    if bare is not None:
        line = f"  bare dot -Tsvg on the flat DOT: {bare.time_text(args.cap)}"
        if bare.seconds is not None and not bare.failed:
            line += f", peak {fmt_bytes(bare.peak_bytes)}"
        print(line + f"; ratio ours/bare: {ratio(ours, bare, args.cap)}", flush=True)
    return ours, bare


def measure_alternating(argv: list[str], cap: float, repeat: int, before: Path) -> tuple[Measure, Measure]:
    """The median render of ``before``'s checkout and of this one, ``repeat`` rounds each, a round of one after a
    round of the other (a machine whose load moves weighs on both alike); this checkout's output is left."""
    runs: tuple[list[Measure], list[Measure]] = ([], [])
    for _ in range(max(1, repeat)):
        runs[0].append(measure_render(argv, cap, before.resolve()))
        runs[1].append(measure_render(argv, cap))
    return _median(runs[0]), _median(runs[1])


def print_before(before: Measure, after: Measure, unit: tuple[float, float], cap: float) -> None:
    if before.seconds is None or before.failed or after.seconds is None or after.failed:
        print(f"  before: {before.time_text(cap)}; after: {after.time_text(cap)}", flush=True)
        return
    print(f"  before → after: wall {before.seconds:.2f} → {after.seconds:.2f} s = {before.seconds / unit[0]:.1f}× → "
          f"{after.seconds / unit[0]:.1f}× the yardstick{before.spread and ' (before' + before.spread + ')'}; CPU "
          f"{before.cpu:.2f} → {after.cpu:.2f} s = {before.cpu / unit[1]:.1f}× → {after.cpu / unit[1]:.1f}×; "
          f"Graphviz processes {before.graphviz} → {after.graphviz}", flush=True)


def measure_repeated(argv: list[str], cap: float, repeat: int) -> Measure:
    """``measure_render`` ``repeat`` times: the median run, its ``spread`` the fastest and slowest."""
    return _median([measure_render(argv, cap) for _ in range(max(1, repeat))])


def _median(runs: list[Measure]) -> Measure:
    timed = sorted((m for m in runs if m.seconds is not None and not m.failed), key=lambda m: m.seconds or 0.0)
    if len(timed) < len(runs):
        return next(m for m in runs if m.seconds is None or m.failed)
    median = timed[len(timed) // 2]
    if len(timed) > 1:
        cpus = sorted(m.cpu for m in timed)
        median.spread = (f" (of {len(timed)}: {timed[0].seconds:.2f}–{timed[-1].seconds:.2f} s; CPU "
                         f"{cpus[0]:.2f}–{cpus[-1]:.2f} s)")
    return median


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


def keep_bytecode(folder: Path, roots: list[Path]) -> None:
    """Python's bytecode kept for the run, in ``folder`` (``PYTHONPYCACHEPREFIX``), as an installed annograph has
    it (``bench_layout_cache`` does the same): without it (``PYTHONDONTWRITEBYTECODE``) every render compiles
    its modules again, about a second of CPU no user pays. Each checkout's ``renderer`` is compiled, and one
    small render of each warms what it imports."""
    ENV.pop("PYTHONDONTWRITEBYTECODE", None)
    ENV["PYTHONPYCACHEPREFIX"] = str(folder / "bytecode")
    for root in roots:
        env = dict(ENV, PYTHONPATH=str(root) + os.pathsep + os.environ.get("PYTHONPATH", ""))
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(root / "renderer")], env=env, check=True,
                       stdout=subprocess.DEVNULL)
        subprocess.run([sys.executable, "-m", "renderer", "render", str(ROOT / "samples" / "onnx" / "tiny_cnn.onnx"),
                        "-q", "--no-layout-cache", "-o", str(folder / "warm.svg")], env=env, check=True)


def main() -> int:
    if sys.argv[1:2] == ["--child"]:  # python bench_big.py --child REPORT ROOT -- ANNOGRAPH_ARGV...
        return child(sys.argv[2], sys.argv[3], sys.argv[5:])
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cap", type=float, default=120.0, help="seconds before a run is killed (default 120)")
    parser.add_argument("--only", action="append", default=[], metavar="NAME",
                        help="run only the cases whose name contains NAME (repeatable)")
    parser.add_argument("--no-bare", action="store_true", help="skip the bare dot baseline")
    parser.add_argument("--keep", type=Path, metavar="DIR", help="write the models and outputs here and keep them")
    parser.add_argument("--repeat", type=int, default=1, help="renders of each case (the median is shown)")
    parser.add_argument("--before", type=Path, metavar="DIR",
                        help="also render each case with the annograph checked out in DIR (e.g. `git archive "
                             "main | tar -x -C DIR`), rounds alternating, and print its ratios before → after")
    args = parser.parse_args()
    from benchmarks import yardstick

    flat_flags = ["--collapse", "none"] if "--collapse" in render_help() else []
    args.fresh = ["--no-layout-cache"] if "--no-layout-cache" in render_help() else []  # each render a first one
    print("flat DOT made with: " + " ".join(["annograph render MODEL", *flat_flags, "-o flat.dot"]))
    cases = [c for c in CASES if not args.only or any(o in c.name for o in args.only)]
    results: dict[str, tuple[int, Measure, Measure | None]] = {}
    units: dict[str, tuple[float, float]] = {}
    capped: dict[str, set[str]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.keep or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        keep_bytecode(Path(tmp), [ROOT, *([args.before.resolve()] if args.before else [])])
        for case in cases:
            model = model_for(case, folder)
            if model is None:
                print(f"{case.name}: samples/onnx/{case.sample} not found, skipped")
                continue
            ops = operator_count(model)
            print(f"{case.name}: {ops:,} operators, {model.stat().st_size / 2**20:.1f} MiB model", flush=True)
            hit = capped.setdefault(case.series, set()) if case.series else set()
            unit = units[case.name] = yardstick.seconds(), yardstick.cpu_seconds()
            print(f"  yardstick (dot -Tsvg, {yardstick.NODES:,}-box chain): {unit[0]:.2f} s, CPU {unit[1]:.2f} s; "
                  f"load {os.getloadavg()[0]:.1f}", flush=True)
            ours, bare = run_case(case, model, folder, args, flat_flags, "ours" in hit, "bare" in hit, unit)
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
    print_goals(cases, results, units, args.cap)
    return 0


def print_goals(cases: list[Case], results: dict[str, tuple[int, Measure, Measure | None]],
                units: dict[str, tuple[float, float]], cap: float) -> None:
    print("goals:")
    for case in cases:
        if case.name not in results:
            continue
        ops, ours = results[case.name][:2]
        if case.goal is not None:
            print(goal_line(f"{case.name} ({ops:,} ops)", ours, case.goal, cap))
        if case.yardsticks is not None:
            if ours.seconds is None or ours.failed:
                print(f"GOAL {case.name} ≤ {case.yardsticks:g}× the yardstick: {ours.time_text(cap)}, MISSED")
                continue
            (wall, cpu), goal = units[case.name], case.yardsticks
            print(f"GOAL {case.name} ({ops:,} ops) ≤ {goal:g}× the yardstick: wall {ours.seconds / wall:.1f}× "
                  f"({ours.seconds:.2f} s / {wall:.2f} s), {'met' if ours.seconds / wall <= goal else 'MISSED'}; "
                  f"CPU {ours.cpu / cpu:.1f}× ({ours.cpu:.2f} s / {cpu:.2f} s), "
                  f"{'met' if ours.cpu / cpu <= goal else 'MISSED'}")
    measured = [(name, r[1]) for name, r in results.items() if r[1].seconds is not None and not r[1].failed]
    if measured:
        name, worst = max(measured, key=lambda item: item[1].peak_bytes)
        verdict = "met" if worst.peak_bytes <= MEMORY_GOAL else "MISSED"
        print(f"GOAL peak memory ≤ 1 GiB: worst {fmt_bytes(worst.peak_bytes)} ({name}), {verdict} "
              f"(runs killed at the cap not counted)")


if __name__ == "__main__":
    sys.exit(main())
