"""The layout cache (issue 30 item 1): a re-render with new numbers against the first render, in CPU ratios.

    python benchmarks/bench_layout_cache.py [--repeat 3] [--only NAME]

CPU is user + system time of ``annograph render`` and every process it waits for (``dot``, ``neato``), read from
``getrusage(RUSAGE_CHILDREN)``: wall time on a shared machine says more about the neighbours than about us. In
the same run:

    yardstick       ``dot -Tsvg`` on a fixed chain of 2,000 boxes (``benchmarks/yardstick.py``; 0.26 s on the
                    2-core machine of issue 30), the unit the issue's figures are in
    first           ``render MODEL -a latency1.csv -o m.svg`` into an empty ``--layout-cache`` folder
    no cache        the same with ``--no-layout-cache`` (what the two-step layout costs without a cache)
    re-render       ``render MODEL -a latency2.csv -o m.svg`` on the folder ``first`` filled: other latencies
                    (another random draw), so other fills, values and tooltips, the same layouts, and the
                    model's shape runs and MACs formulas from the folder too (``files/disk_cache.py``)
    plain dot       the picture step as it was before the cache, on the same pictures and pages (the DOT
                    the first render wrote beside its SVG, ``-o m.dot``): one ``dot -Tsvg`` each, against this
                    step as a first render takes it (the skeleton, ``dot -Tdot -Tsvg`` of it, the text put back),
                    both in CPU of this process and its children; and the first render against one whose
                    picture step is the plain one (first − step + plain)

    tts-int8-3.6k   tests/tts_int8.py's Kokoro-shaped int8 TTS transformer at 20 encoder layers (3,656 operators),
                    built here (onnxruntime's quantizer, ~20 s)
    light_resnet50  samples/onnx/light_resnet50.onnx (415 operators)

The goals printed against the figures: re-render ≤ 0.3× the first on both; a first render ≤ 1.05× one drawn by
plain ``dot -Tsvg``. Python's bytecode is kept for the run (``PYTHONPYCACHEPREFIX`` in a temporary folder, one
render made before any is measured), as an installed annograph has it: without it (``PYTHONDONTWRITEBYTECODE``)
every render would compile its modules again, a cost no user pays.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_formats import ENV, cpu_seconds, model_for  # the same CPU measure and the same models as bench_formats

GOAL = 0.3
FIRST_GOAL = 1.05


def latency_file(model: Path, path: Path, seed: int) -> Path:
    """A generic CSV of one latency a drawn operator (by index), drawn at random around 1 ms."""
    import onnx

    count = len(onnx.load(str(model), load_external_data=False).graph.node)
    draw = random.Random(seed)
    path.write_text("id,latency_ms\n" + "".join(f"{i},{draw.lognormvariate(0, 1):.4f}\n" for i in range(count)))
    return path


def run_case(name: str, folder: Path, repeat: int, unit: float) -> float:
    model = model_for(name, folder)
    latencies = [latency_file(model, folder / f"{name}-latency{seed}.csv", seed) for seed in (1, 2)]
    base = [sys.executable, "-m", "renderer", "render", str(model), "-q", "-o", str(folder / f"{name}.svg")]
    first, plain, again = [], [], []
    for attempt in range(repeat):
        cache = folder / f"{name}-cache-{attempt}"
        first.append(cpu_seconds([*base, "-a", str(latencies[0]), "--layout-cache", str(cache)]))
        plain.append(cpu_seconds([*base, "-a", str(latencies[0]), "--no-layout-cache"]))
        again.append(cpu_seconds([*base, "-a", str(latencies[1]), "--layout-cache", str(cache)]))
    once, none, re = (statistics.median(t) for t in (first, plain, again))
    spread = sorted(a / f for a, f in zip(again, first))
    print(f"{name}: first {once:.2f} s CPU = {once / unit:.1f}× the yardstick; no cache {none:.2f} s = "
          f"{none / once:.2f}× the first; re-render with other latencies {re:.2f} s = {re / once:.2f}× the first "
          f"({spread[0]:.2f}–{spread[-1]:.2f}× by round)", flush=True)
    print(f"  GOAL re-render ≤ {GOAL}× the first: {re / once:.2f}×, {'met' if re / once <= GOAL else 'MISSED'}")
    sources = dot_sources([*base, "-o", str(folder / f"{name}.dot"), "-a", str(latencies[0]), "--no-layout-cache"],
                          folder / f"{name}.dot")
    ours, theirs = picture_step(sources, repeat)
    before = once - ours + theirs
    print(f"  picture step: {ours:.2f} s CPU for {len(sources)} pictures, plain dot -Tsvg {theirs:.2f} s "
          f"= {ours / theirs:.2f}×; first render against one drawn by plain dot: {once / before:.2f}× "
          f"(GOAL ≤ {FIRST_GOAL}×: {'met' if once / before <= FIRST_GOAL else 'MISSED'})", flush=True)
    return re / once


def dot_sources(command: list[str], dot: Path) -> list[str]:
    """The DOT of every picture and page a render writes (``-o m.dot``)."""
    subprocess.run(command, check=True, env=ENV, capture_output=True)
    pages = dot.parent / f"{dot.name}.pages"
    found = [dot] + (sorted(pages.glob("*.dot")) if pages.is_dir() else [])
    return [path.read_text(encoding="utf-8") for path in found]


def picture_step(sources: list[str], repeat: int) -> tuple[float, float]:
    """CPU (this process and its children) of drawing ``sources`` as SVG: as a first render does (no cache),
    and by one plain ``dot -Tsvg`` each; medians of ``repeat`` rounds."""
    from renderer.picture import graphviz_run

    def cpu(draw: object) -> float:
        start = os.times()
        for source in sources:
            draw(source)  # type: ignore[operator]
        end = os.times()
        return sum(end[:4]) - sum(start[:4])

    ours = [cpu(lambda s: graphviz_run.render_formats(s, ["svg"])) for _ in range(repeat)]
    theirs = [cpu(lambda s: graphviz_run.run_dot(s, "svg")) for _ in range(repeat)]
    return statistics.median(ours), statistics.median(theirs)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--only", choices=("tts-int8-3.6k", "light_resnet50"))
    args = parser.parse_args()
    import yardstick

    unit = yardstick.cpu_seconds(args.repeat)
    print(f"yardstick: dot -Tsvg on {yardstick.NODES:,} nodes {unit:.2f} s CPU; load {os.getloadavg()[0]:.1f}",
          flush=True)
    ratios = {}
    with tempfile.TemporaryDirectory(prefix="bench-layout-cache-") as folder:
        ENV.pop("PYTHONDONTWRITEBYTECODE", None)
        ENV["PYTHONPYCACHEPREFIX"] = str(Path(folder) / "bytecode")
        subprocess.run([sys.executable, "-m", "renderer", "render", str(ROOT / "samples" / "onnx" / "tiny_cnn.onnx"),
                        "-q", "--no-layout-cache", "-o", str(Path(folder) / "warm.svg")], env=ENV, check=True)
        for name in ("tts-int8-3.6k", "light_resnet50"):
            if args.only in (None, name):
                ratios[name] = run_case(name, Path(folder), args.repeat, unit)
    print("re-render / first: " + ", ".join(f"{name} {ratio:.2f}×" for name, ratio in ratios.items())
          + f" (GOAL ≤ {GOAL}×); load average after: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
