"""Render speed, as ratios against a baseline measured in the same run.

    python benchmarks/bench_render.py [--repeat 3]

1. End-to-end ``annograph render`` of light_resnet50.onnx (415 operators) to SVG, against bare
   ``dot -Tsvg`` on the DOT annograph emits for it: the ratio is our overhead on top of Graphviz's layout.
2. ``annograph --help`` start-up, against ``python -c pass``: the ratio shows what importing costs.
3. The same two for densenet121 (1,746 operators) from the onnx wheel, when ``--large`` is given.
4. One render to SVG, PNG and PDF together against one to SVG alone, and the Graphviz runs each makes (counted
   by a shim in front of ``dot`` and ``neato``): one layout serves every format, so the three-format render
   makes one ``dot`` run, and PNG and PDF are drawn from its positions by ``neato -n2``. The baseline is
   three bare ``dot`` layouts, one per format.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ENV = dict(os.environ, PYTHONPATH=str(ROOT))


def timed(command: list[str], stdin: bytes | None = None, repeat: int = 3) -> float:
    """Median wall time of ``repeat`` runs, in seconds."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(command, input=stdin, capture_output=True, check=True, env=ENV)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def render_case(model: Path, repeat: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        dot_file = Path(tmp) / "m.dot"
        svg_file = Path(tmp) / "m.svg"
        base = [sys.executable, "-m", "renderer", "render", str(model), "--no-sidecar", "-q", "--color-by", "macs"]
        subprocess.run([*base, "-o", str(dot_file)], check=True, env=ENV, capture_output=True)
        ours = timed([*base, "-o", str(svg_file)], repeat=repeat)
        bare = timed(["dot", "-Tsvg", str(dot_file), "-o", str(Path(tmp) / "bare.svg")], repeat=repeat)
    print(f"{model.name}: annograph render {ours:.2f} s, bare dot -Tsvg {bare:.2f} s, ratio {ours / bare:.2f}")


def multi_format_case(model: Path, repeat: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        shims = folder / "bin"
        shims.mkdir()
        log = folder / "runs.log"
        for program in ("dot", "neato"):
            real = subprocess.run(["which", program], capture_output=True, text=True, check=True).stdout.strip()
            shim = shims / program
            shim.write_text(f'#!/bin/sh\necho "{program} $*" >> "{log}"\nexec "{real}" "$@"\n', encoding="utf-8")
            shim.chmod(0o755)
        env = dict(ENV, PATH=f"{shims}{os.pathsep}{os.environ['PATH']}")
        base = [sys.executable, "-m", "renderer", "render", str(model), "--no-sidecar", "-q", "--color-by", "macs"]
        dot_file = folder / "m.dot"
        subprocess.run([*base, "-o", str(dot_file)], check=True, env=ENV, capture_output=True)

        def runs(outputs: list[str]) -> tuple[float, list[str]]:
            log.write_text("", encoding="utf-8")
            times = []
            for _ in range(repeat):
                start = time.perf_counter()
                subprocess.run([*base, *outputs], check=True, env=env, capture_output=True)
                times.append(time.perf_counter() - start)
            calls = [line.split()[0] for line in log.read_text(encoding="utf-8").splitlines()]
            return statistics.median(times), calls[: len(calls) // repeat]

        one, one_calls = runs(["-o", str(folder / "a.svg")])
        three, three_calls = runs(["-o", str(folder / "a.svg"), "-o", str(folder / "a.png"),
                                   "-o", str(folder / "a.pdf")])
        bare = sum(timed(["dot", f"-T{fmt}", str(dot_file), "-o", str(folder / f"bare.{fmt}")], repeat=repeat)
                   for fmt in ("svg", "png", "pdf"))
        bare_one = timed(["dot", "-Tsvg", str(dot_file), "-o", str(folder / "bare1.svg")], repeat=repeat)
    print(f"{model.name}: -o svg {one:.2f} s ({', '.join(one_calls)}); -o svg -o png -o pdf {three:.2f} s "
          f"({', '.join(three_calls)}: {three_calls.count('dot')} layout); ratio {three / one:.2f} "
          f"(three bare dot layouts: {bare:.2f} s, ratio {bare / bare_one:.2f} to one)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--large", action="store_true", help="also densenet121 (1,746 operators)")
    args = parser.parse_args()
    render_case(ROOT / "samples" / "onnx" / "light_resnet50.onnx", args.repeat)
    if args.large:
        import onnx

        render_case(Path(onnx.__file__).parent / "backend/test/data/light/light_densenet121.onnx", args.repeat)
    multi_format_case(ROOT / "samples" / "onnx" / "light_resnet50.onnx", args.repeat)
    help_time = timed([sys.executable, "-m", "renderer", "--help"], repeat=max(args.repeat, 5))
    bare_python = timed([sys.executable, "-c", "pass"], repeat=max(args.repeat, 5))
    print(f"annograph --help {help_time * 1000:.0f} ms, python -c pass {bare_python * 1000:.0f} ms, "
          f"ratio {help_time / bare_python:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
