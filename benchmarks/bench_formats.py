"""What each output format costs, as CPU ratios against the SVG alone measured in the same run (issues 26 and 30).

    python benchmarks/bench_formats.py [--repeat 3] [--only NAME] [--keep DIR]

Every render is a first one (``--no-layout-cache``). CPU is user + system time of ``annograph render`` and every
process it waits for (``dot``, ``neato``, page
workers), read from ``getrusage(RUSAGE_CHILDREN)`` around each run: wall time on a shared 2-core machine says
more about the neighbours than about us. Each case renders the model to ``-o m.svg`` (the baseline), then
``-o m.png``, ``-o m.pdf``, ``-o m.svg -o m.pdf`` (one call, one layout) and ``-o m.html``; the median of
``--repeat`` runs of each, and the spread of each ratio over the rounds (each round's format against that round's
SVG). The HTML report's size is printed too, and every case starts with the yardstick (``benchmarks/yardstick.py``:
``dot -Tsvg`` on a chain of 2,000 boxes, its CPU) and the SVG as a multiple of it, with the machine's load.

    tts-int8-3.6k   tests/support/tts_int8.py's Kokoro-shaped int8 TTS transformer at 20 encoder layers (3,656
                    operators: quantize_dynamic's DynamicQuantizeLinear → MatMulInteger/ConvInteger chains),
                    built here (onnxruntime's quantizer, ~20 s)
    bert-3.6k       benchmarks/transformer_models.py's 40-layer encoder (3,591 operators, TorchScript's names)
    light_resnet50  samples/onnx/light_resnet50.onnx (415 operators)

Goals printed against the figures: PNG ≤ 3× and PDF ≤ 1.5× the SVG on the transformers, SVG + PDF ≤ 1.35× the
SVG alone on light_resnet50, the HTML report ≤ 8 MB.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "support"))
ENV = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
RUNS = {"svg": ["svg"], "png": ["png"], "pdf": ["pdf"], "svg+pdf": ["svg", "pdf"], "html": ["html"]}
GOALS = {"tts-int8-3.6k": {"png": 3.0, "pdf": 1.5}, "bert-3.6k": {"png": 3.0, "pdf": 1.5},
         "light_resnet50": {"svg+pdf": 1.35}}
HTML_GOAL = 8_000_000


def cpu_seconds(command: list[str]) -> float:
    """User + system CPU of ``command`` and every process it waited for."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(command, check=True, env=ENV, capture_output=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def fresh_layout() -> list[str]:
    """``--no-layout-cache`` where the CLI has it: every run lays its pages out, as a first render does (a layout
    kept by an earlier run of the same model would leave only the drawing to measure)."""
    done = subprocess.run([sys.executable, "-m", "renderer", "render", "--help"], capture_output=True, text=True,
                          env=ENV, check=True)
    return ["--no-layout-cache"] if "--no-layout-cache" in done.stdout else []


def model_for(name: str, folder: Path) -> Path:
    if name == "light_resnet50":
        return ROOT / "samples" / "onnx" / "light_resnet50.onnx"
    if name == "bert-3.6k":
        from benchmarks import transformer_models

        return transformer_models.write(folder / "bert40.onnx", 40)
    import tts_int8

    return tts_int8.save_int8(folder / "tts_int8.onnx", 20)


def run_case(name: str, folder: Path, repeat: int) -> None:
    from benchmarks import yardstick

    model = model_for(name, folder)
    out = folder / name
    out.mkdir(exist_ok=True)
    unit = yardstick.cpu_seconds()
    base = [sys.executable, "-m", "renderer", "render", str(model), "-q", *fresh_layout()]
    times: dict[str, list[float]] = {run: [] for run in RUNS}
    for _ in range(repeat):  # interleaved, so a busy minute on the machine weighs on every format alike
        for run, formats in RUNS.items():
            outputs = [arg for fmt in formats for arg in ("-o", str(out / f"m.{fmt}"))]
            times[run].append(cpu_seconds([*base, *outputs]))
    svg = statistics.median(times["svg"])
    size = (out / "m.html").stat().st_size
    print(f"{name}: yardstick {unit:.2f} s CPU, load {os.getloadavg()[0]:.1f}; svg {svg:.2f} s CPU = "
          f"{svg / unit:.1f}× the yardstick; " + ", ".join(
              f"{run} {statistics.median(t):.2f} s = {statistics.median(t) / svg:.2f}×{_spread(t, times['svg'])}"
              for run, t in times.items() if run != "svg") + f"; HTML report {size / 1e6:.2f} MB", flush=True)
    for run, goal in GOALS.get(name, {}).items():
        ratio = statistics.median(times[run]) / svg
        print(f"  GOAL {run} ≤ {goal}× the SVG: {ratio:.2f}×, {'met' if ratio <= goal else 'MISSED'}")
    if name != "light_resnet50":
        print(f"  GOAL HTML report ≤ 8 MB: {size / 1e6:.2f} MB, {'met' if size <= HTML_GOAL else 'MISSED'}")


def _spread(times: list[float], svg: list[float]) -> str:
    """`` (1.10–1.25×)``: the lowest and highest of each round's ratio to that round's SVG; "" for one round."""
    if len(times) < 2:
        return ""
    ratios = sorted(t / s for t, s in zip(times, svg))
    return f" ({ratios[0]:.2f}–{ratios[-1]:.2f}×)"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--only", action="append", default=[], metavar="NAME", help="only the cases named NAME")
    parser.add_argument("--keep", type=Path, metavar="DIR", help="write the models and outputs here and keep them")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        folder = args.keep or Path(scratch)
        folder.mkdir(parents=True, exist_ok=True)
        for name in ("tts-int8-3.6k", "bert-3.6k", "light_resnet50"):
            if not args.only or name in args.only:
                run_case(name, folder, args.repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main())
