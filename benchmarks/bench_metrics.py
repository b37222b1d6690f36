"""Built-in metric pass against onnx-tool's profile of the same model, ratio printed.

    python benchmarks/bench_metrics.py [--repeat 3] [--model cnn|transformer|both]

The models are generated here, deterministically (numpy seed 0), into a temporary folder, weights stored
inline, 30 % of the weight matrices pruned to 0:
    * cnn: a ResNet-like stack (3×3 convs up to 512 channels, BatchNormalization, Relu, strided downsampling,
      global pooling) and an MLP head of real-sized Gemm layers: 34M parameters, 32 operators;
    * transformer: 8 pre-LN encoder layers, hidden 640, MLP 2560, 10 heads, sequence 128: 39M parameters,
      ~260 operators.

Timed, in one process (onnx and onnx-tool imported before any timing), median of ``--repeat`` runs:
    1. end to end. Ours: ``load_model`` + every built-in metric (params, MACs, bytes, intensity, sparsity,
       effective MACs, weight and tensor statistics, which read every weight) + the CSV export. onnx-tool:
       ``onnx_tool.model_profile(path, save_profile=csv)``, its documented entry point;
    2. the profile of an already loaded model: onnx-tool's ``shape_infer()`` + ``profile()`` against our
       cheap pass (params, MACs, FLOPs, weight/output bytes, intensity, from shapes only);
    3. our full metric pass on an already loaded model (2 plus reading and reducing every weight: the part a
       render with ``--color-by sparsity`` adds).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def build_cnn(path: Path, scale: float = 1.0) -> int:
    """Write the ResNet-like benchmark model; return its parameter count."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    inits: list[onnx.TensorProto] = []
    nodes: list[onnx.NodeProto] = []

    def weight(name: str, shape: tuple[int, ...], prune: bool = True) -> str:
        data = (rng.standard_normal(shape, dtype=np.float32) * 0.02).astype(np.float32)
        if prune:
            data[rng.random(shape) < 0.3] = 0.0
        inits.append(numpy_helper.from_array(data, name))
        return name

    def conv(x: str, name: str, cin: int, cout: int, stride: int) -> str:
        w = weight(f"{name}.w", (cout, cin, 3, 3))
        b = weight(f"{name}.b", (cout,), prune=False)
        nodes.append(helper.make_node("Conv", [x, w, b], [f"{name}.conv"], name=f"{name}/conv", kernel_shape=[3, 3],
                                      pads=[1, 1, 1, 1], strides=[stride, stride]))
        bn = [weight(f"{name}.bn.{p}", (cout,), prune=False) for p in ("scale", "bias", "mean")]
        var = f"{name}.bn.var"
        inits.append(numpy_helper.from_array(np.ones(cout, np.float32), var))
        nodes.append(helper.make_node("BatchNormalization", [f"{name}.conv", *bn, var], [f"{name}.bn"],
                                      name=f"{name}/bn"))
        nodes.append(helper.make_node("Relu", [f"{name}.bn"], [f"{name}.out"], name=f"{name}/relu"))
        return f"{name}.out"

    def width(c: int) -> int:
        return max(8, int(c * scale))

    x = "image"
    channels = [(3, 64, 1), (64, 128, 2), (128, 256, 2), (256, 512, 2)]
    for i, (cin, cout, stride) in enumerate(channels):
        x = conv(x, f"stage{i}", width(cin) if i else 3, width(cout), stride)
    for i in range(4):
        x = conv(x, f"block{i}", width(512), width(512), 1)
    nodes.append(helper.make_node("GlobalAveragePool", [x], ["pooled"], name="head/pool"))
    nodes.append(helper.make_node("Flatten", ["pooled"], ["flat"], name="head/flatten"))
    x, features = "flat", width(512)
    for i, out in enumerate((width(4096), width(4096), 1000)):
        w = weight(f"fc{i}.w", (features, out))
        b = weight(f"fc{i}.b", (out,), prune=False)
        nodes.append(helper.make_node("Gemm", [x, w, b], [f"fc{i}.y"], name=f"head/fc{i}"))
        x, features = f"fc{i}.y", out
        if i < 2:
            nodes.append(helper.make_node("Relu", [x], [f"fc{i}.r"], name=f"head/relu{i}"))
            x = f"fc{i}.r"
    nodes.append(helper.make_node("Softmax", [x], ["probs"], name="head/softmax", axis=1))
    image = helper.make_tensor_value_info("image", TensorProto.FLOAT, [1, 3, 64, 64])
    graph = helper.make_graph(nodes, "bench", [image],
                              [helper.make_tensor_value_info("probs", TensorProto.FLOAT, [1, 1000])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="bench_metrics")
    onnx.save(model, str(path))
    return sum(int(np.prod(t.dims)) for t in inits)


def build_transformer(path: Path, layers: int = 8, hidden: int = 640, mlp: int = 2560, heads: int = 10,
                      seq: int = 128) -> int:
    """Write the transformer benchmark model; return its parameter count."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    inits: list[onnx.TensorProto] = []
    nodes: list[onnx.NodeProto] = []

    def tensor(name: str, data: np.ndarray) -> str:
        inits.append(numpy_helper.from_array(data, name))
        return name

    def weight(name: str, shape: tuple[int, ...]) -> str:
        data = (rng.standard_normal(shape, dtype=np.float32) * 0.02).astype(np.float32)
        data[rng.random(shape) < 0.3] = 0.0
        return tensor(name, data)

    def node(op: str, inputs: list[str], name: str, **attrs) -> str:  # type: ignore[no-untyped-def]
        nodes.append(helper.make_node(op, inputs, [name], name=name, **attrs))
        return name

    def linear(x: str, name: str, cin: int, cout: int) -> str:
        y = node("MatMul", [x, weight(f"{name}.w", (cin, cout))], f"{name}")
        return node("Add", [y, tensor(f"{name}.b", np.zeros(cout, np.float32))], f"{name}/bias")

    head = hidden // heads
    split = tensor("split_shape", np.array([1, seq, heads, head], np.int64))
    merge = tensor("merge_shape", np.array([1, seq, hidden], np.int64))
    scale = tensor("scale", np.array(np.sqrt(head), np.float32))
    x = "tokens"
    for i in range(layers):
        p = f"layer{i}"
        ln = node("LayerNormalization", [x, tensor(f"{p}.ln1.g", np.ones(hidden, np.float32)),
                                         tensor(f"{p}.ln1.b", np.zeros(hidden, np.float32))], f"{p}/ln1", axis=-1)
        q, k, v = (node("Transpose", [node("Reshape", [linear(ln, f"{p}/{n}", hidden, hidden), split],
                                           f"{p}/{n}/split")], f"{p}/{n}/t", perm=perm)
                   for n, perm in (("q", [0, 2, 1, 3]), ("k", [0, 2, 3, 1]), ("v", [0, 2, 1, 3])))
        scores = node("Softmax", [node("Div", [node("MatMul", [q, k], f"{p}/qk"), scale], f"{p}/scale")],
                      f"{p}/softmax", axis=-1)
        attn = node("Reshape", [node("Transpose", [node("MatMul", [scores, v], f"{p}/av")], f"{p}/merge_t",
                                     perm=[0, 2, 1, 3]), merge], f"{p}/merge")
        x = node("Add", [x, linear(attn, f"{p}/o", hidden, hidden)], f"{p}/residual1")
        ln = node("LayerNormalization", [x, tensor(f"{p}.ln2.g", np.ones(hidden, np.float32)),
                                         tensor(f"{p}.ln2.b", np.zeros(hidden, np.float32))], f"{p}/ln2", axis=-1)
        hidden_act = node("Relu", [linear(ln, f"{p}/fc1", hidden, mlp)], f"{p}/relu")
        x = node("Add", [x, linear(hidden_act, f"{p}/fc2", mlp, hidden)], f"{p}/residual2")
    nodes[-1].output[0] = "out"
    graph = helper.make_graph(nodes, "bench", [helper.make_tensor_value_info("tokens", TensorProto.FLOAT,
                                                                             [1, seq, hidden])],
                              [helper.make_tensor_value_info("out", TensorProto.FLOAT, [1, seq, hidden])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="bench_metrics")
    onnx.save(model, str(path))
    return sum(int(np.prod(t.dims)) for t in inits)


def timed(fn, repeat: int) -> float:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()):
            fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def bench(name: str, build, repeat: int) -> None:  # type: ignore[no-untyped-def]
    import onnx_tool

    from renderer.exporters.metric_table import render
    from renderer.files import atomic
    from renderer.loaders.registry import load_model
    from renderer.metrics import builtin as metrics

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"{name}.onnx"
        params = build(path)
        print(f"{name}: {params / 1e6:.1f}M parameters, {path.stat().st_size / 1e6:.0f} MB")

        def ours() -> None:
            model = load_model(path)
            ops, tensors = metrics.compute(model, progress=False)
            atomic.write_text(Path(tmp) / "ours.csv", render(model, ops, tensors, "csv"))

        def ours_same_work() -> None:
            model = load_model(path)
            ops, tensors = metrics.compute(model, set(metrics.CHEAP_OP_METRICS), set(), progress=False)
            atomic.write_text(Path(tmp) / "ours_cheap.csv", render(model, ops, tensors, "csv"))

        def theirs() -> None:
            onnx_tool.model_profile(str(path), save_profile=str(Path(tmp) / "onnx_tool.csv"))

        loaded = load_model(path)

        def cheap_pass() -> None:
            metrics._cache.clear()  # nothing remembered from an earlier run
            metrics.compute(loaded, set(metrics.CHEAP_OP_METRICS), set(), progress=False)

        def full_pass() -> None:
            metrics._cache.clear()
            metrics.compute(loaded, progress=False)

        their_model = onnx_tool.Model(str(path), {"verbose": False})

        def their_profile() -> None:
            graph = their_model.graph
            graph.shape_infer(None)
            graph.profile(exclude_ops=onnx_tool.NoMacsOps)

        ours_time = timed(ours, repeat)
        theirs_time = timed(theirs, repeat)
        same_work_time = timed(ours_same_work, repeat)
        cheap_time = timed(cheap_pass, max(repeat, 5))
        their_profile_time = timed(their_profile, max(repeat, 5))
        full_time = timed(full_pass, repeat)
        totals = metrics.totals(loaded)
    print(f"  operators {totals['operators']}, MACs {totals['MACs']}, weights {totals['weights']}")
    print(f"  1. end to end: ours {ours_time:.3f} s (load + all metrics incl. sparsity and weight statistics + CSV),"
          f" onnx-tool model_profile {theirs_time:.3f} s; ratio onnx-tool / ours {theirs_time / ours_time:.2f}")
    print(f"  1b. end to end, the work onnx-tool does (params, MACs, memory; no pass over the weights): ours "
          f"{same_work_time:.3f} s, onnx-tool {theirs_time:.3f} s; "
          f"ratio onnx-tool / ours {theirs_time / same_work_time:.2f}")
    print(f"  2. profile of a loaded model: ours {cheap_time * 1000:.1f} ms, onnx-tool shape_infer + profile "
          f"{their_profile_time * 1000:.1f} ms; ratio onnx-tool / ours {their_profile_time / cheap_time:.2f}")
    print(f"  3. our full metric pass on a loaded model (reads all {params / 1e6:.1f}M weights): {full_time:.3f} s")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--model", choices=("cnn", "transformer", "both"), default="both")
    args = parser.parse_args()

    import warnings

    import onnx  # noqa: F401  (imported before timing, for both sides)
    import onnx_tool  # noqa: F401

    warnings.simplefilter("ignore")
    if args.model in ("cnn", "both"):
        bench("cnn", build_cnn, args.repeat)
    if args.model in ("transformer", "both"):
        bench("transformer", build_transformer, args.repeat)
    print("ratio > 1: ours is faster")
    return 0


if __name__ == "__main__":
    sys.exit(main())
