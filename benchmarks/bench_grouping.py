"""Grouping a big model (renderer.picture.grouping.build.group_model): time per operator from 2k to 20k operators.

    python benchmarks/bench_grouping.py [--repeat 5] [--sizes 2000,5000,10000,20000]

The models are the BERT-like encoder torch exports, built by benchmarks/transformer_models.py with as many
layers as each size needs (89 operators a layer, 60 of them drawn) and loaded with ``load_model``, in each
name style:
    * scoped: TorchScript names, grouped by scope (224 layer groups at 20k, gathered into runs);
    * dynamo: flat names with ``pkg.torch.onnx.name_scopes`` metadata, the same tree from parsed metadata;
    * flat: no scopes, cut into stages at the narrowest points, nested into super-stages.

Timed in CPU seconds (``process_time``: the machine is shared, wall time measures the neighbours), best of
``--repeat``, on the loaded model: ``fold(model)`` (the baseline: one cheap pass over every
operator that every render already makes) and ``group_model(model, fold(model).is_drawn)``. Printed: both
times, their ratio, and microseconds per drawn operator, whose flatness across sizes shows linear growth.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks import transformer_models  # noqa: E402
from renderer.loaders.registry import load_model  # noqa: E402
from renderer.picture.folding import fold  # noqa: E402
from renderer.picture.grouping.build import group_model


def best(repeat: int, run) -> float:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(repeat):
        start = time.process_time()
        run()
        times.append(time.process_time() - start)
    return min(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--sizes", default="2000,5000,10000,20000")
    args = parser.parse_args()
    print(f"{'naming':8} {'drawn':>7} {'fold s':>8} {'group s':>8} {'group/fold':>10} {'µs/op':>7}  tree")
    with tempfile.TemporaryDirectory() as folder:
        for size in (int(s) for s in args.sizes.split(",")):
            layers = transformer_models.layers_for(size)
            for naming in ("scoped", "dynamo", "flat"):
                path = transformer_models.write(Path(folder) / f"{naming}_{size}.onnx", layers, naming)
                model = load_model(path)
                baseline = best(args.repeat, lambda: fold(model))
                drawn = fold(model).is_drawn
                grouped = best(args.repeat, lambda: group_model(model, drawn))
                root = group_model(model, drawn)
                groups = sum(1 for _ in root.walk())
                widest = max(g.items for g in root.walk())
                print(f"{naming:8} {root.size:7d} {baseline:8.3f} {grouped:8.3f} {grouped / baseline:10.1f} "
                      f"{grouped / root.size * 1e6:7.1f}  {groups} groups, widest level {widest} items")
    return 0


if __name__ == "__main__":
    sys.exit(main())
