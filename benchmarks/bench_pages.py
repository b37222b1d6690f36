"""Page geometry and the cost of each format (issue 17): page sizes, area per drawn box, boxes per page, and
the CPU of PNG and PDF as ratios of the same model's SVG, measured in the same run.

    python benchmarks/bench_pages.py [--only NAME] [--keep DIR]

Cases: the torch-exported CNN chain (``samples/onnx/cnn_chain.onnx``, 550 drawn operators), onnx's
light_densenet121 and light_inception_v2, the samples bert_scoped and silero_vad (If bodies), and the generated
transformers (``benchmarks/transformer_models.py``) of 3,591 and 19,967 operators. Each render runs
``annograph render MODEL -q -o out.EXT`` in a child process; its CPU is the children's user + system time
(Python, Graphviz and every page's layout). Printed per case:

    pages, the largest side (goal: at most 14,328 pt, 199 in), area per drawn box in pt² (goal: at most
    150,000 on every page) and boxes per page as min / median / 90th percentile / max, the SVG's wall and
    CPU time, and PNG and PDF CPU as a ratio of the SVG's (goal: at most 3).

A drawn box is any Graphviz node but the legend: operators, group boxes, stubs, model inputs and outputs.
"""

from __future__ import annotations

import argparse
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

MAX_SIDE_PT = 199 * 72
MAX_AREA_PER_BOX = 150_000
CPU_RATIO_GOAL = 3.0
_SIZE = re.compile(r'<svg width="([0-9.]+)pt" height="([0-9.]+)pt"')
_NODE = re.compile(r'<g id="([^"]*)" class="node[ "]')


@dataclass(frozen=True)
class Case:
    name: str
    path: str = ""  # a file; else a generated transformer of ``layers`` layers
    layers: int = 0
    formats: tuple[str, ...] = ("svg", "png", "pdf")


def light(name: str) -> str:
    import onnx

    return str(Path(onnx.__file__).parent / "backend" / "test" / "data" / "light" / f"{name}.onnx")


CASES = (
    Case("cnn_chain", str(ROOT / "samples" / "onnx" / "cnn_chain.onnx")),
    Case("light_densenet121", light("light_densenet121")),
    Case("light_inception_v2", light("light_inception_v2")),
    Case("bert_scoped", str(ROOT / "samples" / "onnx" / "bert_scoped.onnx")),
    Case("silero_vad", str(ROOT / "samples" / "onnx" / "silero_vad.onnx")),
    Case("transformer-3600-scoped", layers=40),
    Case("scaling-20k", layers=224, formats=("svg",)),
)


def cpu_of_children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def render(model: Path, out: Path) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one ``annograph render``."""
    before, start = cpu_of_children(), time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "renderer", "render", str(model), "-q", "-o", str(out),
                           "--no-sidecar"], capture_output=True, text=True, cwd=ROOT)
    if done.returncode != 0:
        raise SystemExit(f"{model}: {done.stderr.strip()}")
    return time.perf_counter() - start, cpu_of_children() - before


def page_files(overview: Path) -> list[Path]:
    folder = overview.with_name(overview.name + ".pages")
    return [overview] + sorted(folder.glob("page-*.svg"))


def geometry(overview: Path) -> list[tuple[float, float, int]]:
    """(width, height, drawn boxes) of every page."""
    found = []
    for path in page_files(overview):
        text = path.read_text(encoding="utf-8")
        size = _SIZE.search(text)
        assert size is not None, path
        boxes = sum(1 for ident in _NODE.findall(text) if not ident.endswith("legend"))
        found.append((float(size.group(1)), float(size.group(2)), max(1, boxes)))
    return found


def spread(values: list[float]) -> str:
    ordered = sorted(values)
    p90 = ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))]
    return f"{ordered[0]:,.0f} / {statistics.median(ordered):,.0f} / {p90:,.0f} / {ordered[-1]:,.0f}"


def run_case(case: Case, folder: Path) -> None:
    model = Path(case.path) if case.path else folder / f"{case.name}.onnx"
    if not case.path:
        from benchmarks import transformer_models

        transformer_models.write(model, case.layers, "scoped")
    times = {}
    for fmt in case.formats:
        times[fmt] = render(model, folder / case.name / f"out.{fmt}")
    pages = geometry(folder / case.name / "out.svg")
    side = max(max(w, h) for w, h, _ in pages)
    areas = [w * h / boxes for w, h, boxes in pages]
    print(f"{case.name}: {len(pages)} page(s)", flush=True)
    print(f"  largest side {side:,.0f} pt ({'met' if side <= MAX_SIDE_PT else 'MISSED'}: ≤ {MAX_SIDE_PT:,} pt)")
    print(f"  pt² per box, min / median / p90 / max: {spread(areas)} "
          f"({sum(a > MAX_AREA_PER_BOX for a in areas)} page(s) over {MAX_AREA_PER_BOX:,})")
    print(f"  boxes per page, min / median / p90 / max: {spread([float(b) for _, _, b in pages])}")
    wall, cpu = times["svg"]
    print(f"  svg: {wall:.2f} s wall, {cpu:.2f} s CPU")
    for fmt in case.formats[1:]:
        ratio = times[fmt][1] / cpu
        verdict = "met" if ratio <= CPU_RATIO_GOAL else "MISSED"
        print(f"  {fmt}: {times[fmt][0]:.2f} s wall, {times[fmt][1]:.2f} s CPU, ratio {fmt}/svg {ratio:.2f} "
              f"({verdict}: ≤ {CPU_RATIO_GOAL:g})")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", action="append", default=[], metavar="NAME", help="cases whose name holds NAME")
    parser.add_argument("--keep", type=Path, metavar="DIR", help="write the outputs here and keep them")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.keep or Path(tmp)
        for case in CASES:
            if args.only and not any(o in case.name for o in args.only):
                continue
            (folder / case.name).mkdir(parents=True, exist_ok=True)
            run_case(case, folder)
    return 0


if __name__ == "__main__":
    sys.exit(main())
