"""What stating free dims and fitting MAC formulas costs a load: ``metrics`` with the default (dims assumed, the
formulas' extra loads) against ``--keep-free-dims`` (the baseline, measured in the same run), per model.

    python benchmarks/bench_free_dims.py [--only NAME] [--repeat 3]

Models: the samples with free input dims, and the held-out wheel models already in the test cache
(tests/support/wheel_models.py; none is downloaded here). Prints each model's best-of-N seconds both ways, the
ratio, and the formula of its total MACs (or why none).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "support"))


def models() -> list[Path]:
    from renderer.loaders.registry import load_model
    from wheel_models import MODELS, cache_dir

    found = []
    for path in sorted((ROOT / "samples" / "onnx").glob("*.onnx")):
        if load_model(path, assume_dims=False, shape_run=False).pinnable_dims:
            found.append(path)
    for model in MODELS.values():
        cached = cache_dir() / f"{model.package}-{model.version}" / Path(model.member).name
        if cached.suffix == ".onnx" and cached.exists():
            found.append(cached)
    return found


def seconds(path: Path, extra: list[str], out: Path, repeat: int) -> float:
    from renderer.commands.cli import main

    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        with contextlib.redirect_stderr(io.StringIO()):
            main(["metrics", str(path), "-o", str(out), "-q", *extra])
        best = min(best, time.perf_counter() - start)
    return best


def formula(path: Path) -> str:
    from renderer.loaders.registry import load_model
    from renderer.metrics.dim_formulas import total_line

    model = load_model(path)
    return total_line(model) or ("no assumed batch or length dim" if model.assumed_dims else "nothing assumed")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="models whose file name contains this")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"{'model':36} {'kept free':>10} {'assumed':>10} {'ratio':>6}  total MACs")
    with tempfile.TemporaryDirectory(prefix="bench-free-dims-") as folder:
        out = Path(folder) / "m.csv"
        for path in models():
            if args.only and args.only not in path.name:
                continue
            base = seconds(path, ["--keep-free-dims"], out, args.repeat)
            assumed = seconds(path, [], out, args.repeat)
            print(f"{path.name[:36]:36} {base:9.2f}s {assumed:9.2f}s {assumed / base:5.1f}×  {formula(path)}",
                  flush=True)


if __name__ == "__main__":
    main()
