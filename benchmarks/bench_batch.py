"""Batch rendering speed, as ratios against a baseline measured in the same run.

    python benchmarks/bench_batch.py [--runs 50] [--skip-dask]

1. 50 heatmaps of light_resnet50.onnx (415 operators) with ``annograph batch`` (one layout, 50 recolourings),
   against one ``annograph render`` of the same model with one of those annotation files. Goal: ≤ 2×.
   A loop of renders would cost about 50× (printed for reference, not run).
2. 200 pictures: 4 models × 50 annotation files, ``annograph batch --jobs 2`` on local cores, and
   ``--dask`` on a ``LocalCluster`` of 2 single-threaded worker processes (started before the clock runs);
   time per picture for both.
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
sys.path.insert(0, str(ROOT))
ENV = dict(os.environ, PYTHONPATH=str(ROOT))
MODELS = ["light_resnet50", "light_inception_v1", "light_squeezenet", "tiny_cnn"]


def write_runs(model_path: Path, folder: Path, count: int) -> list[Path]:
    """``count`` CSV annotation files with a latency on every operator (seeded, so every run is the same)."""
    import numpy as np

    import renderer

    model = renderer.load_model(str(model_path))
    rng = np.random.default_rng(0)
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for run in range(count):
        lines = ["id,latency_us"] + [f"{n.graph.index}:{n.index},{rng.uniform(1, 500):.4g}" for n in model.nodes()]
        path = folder / f"run{run:03d}.csv"
        path.write_text("\n".join(lines) + "\n")
        paths.append(path)
    return paths


def timed(command: list[str], repeat: int = 1) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        done = subprocess.run(command, capture_output=True, env=ENV)
        times.append(time.perf_counter() - start)
        if done.returncode != 0:
            raise SystemExit(f"failed: {' '.join(command)}\n{done.stderr.decode()[-2000:]}")
    return statistics.median(times)


def annograph(*args: str | Path) -> list[str]:
    return [sys.executable, "-m", "renderer", *map(str, args)]


def one_model(tmp: Path, runs: int, repeat: int) -> None:
    model = ROOT / "samples" / "onnx" / "light_resnet50.onnx"
    files = write_runs(model, tmp / "resnet", runs)
    single = timed(annograph("render", model, "-a", files[0], "--color-by", "latency_us", "--no-sidecar", "-q",
                             "-o", tmp / "single.svg"), repeat)
    many = timed(annograph("batch", model, "-a", tmp / "resnet" / "*.csv", "--color-by", "latency_us", "--jobs", "1",
                           "-q", "-o", tmp / "batch"), repeat)
    print(f"light_resnet50 (415 ops): one render {single:.2f} s; batch of {runs} heatmaps {many:.2f} s "
          f"= {many / single:.2f}x one render (goal <= 2x; a loop of renders ~{runs}x = {runs * single:.0f} s)")


def many_models(tmp: Path, runs: int, skip_dask: bool) -> None:
    for name in MODELS:
        write_runs(ROOT / "samples" / "onnx" / f"{name}.onnx", tmp / "runs" / name, runs)
    models = [ROOT / "samples" / "onnx" / f"{name}.onnx" for name in MODELS]
    pattern = tmp / "runs" / "{model}" / "*.csv"
    pictures = len(models) * runs
    local = timed(annograph("batch", *models, "-a", pattern, "--color-by", "latency_us", "--jobs", "2", "-q",
                            "-o", tmp / "local"))
    print(f"{pictures} pictures ({len(models)} models x {runs} runs), local --jobs 2: {local:.1f} s, "
          f"{local / pictures * 1000:.0f} ms per picture")
    if skip_dask:
        return
    from distributed import LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        remote = timed(annograph("batch", *models, "-a", pattern, "--color-by", "latency_us", "--dask",
                                 cluster.scheduler_address, "-q", "-o", tmp / "dask"))
    same = all((tmp / "dask" / p.name).read_bytes() == p.read_bytes() for p in (tmp / "local").glob("*.svg"))
    print(f"{pictures} pictures on a LocalCluster of 2 workers: {remote:.1f} s, {remote / pictures * 1000:.0f} ms "
          f"per picture ({remote / local:.2f}x the local run; same bytes as the local run: {same})")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--skip-dask", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        one_model(Path(tmp), args.runs, args.repeat)
        many_models(Path(tmp), args.runs, args.skip_dask)
    return 0


if __name__ == "__main__":
    sys.exit(main())
