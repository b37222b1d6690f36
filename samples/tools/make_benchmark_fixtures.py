"""Write the hand-made ``benchmark_model --enable_op_profiling`` fixtures in the NEWER layout, under
``tests/fixtures/tflite_benchmark/``.

These files are HAND-MADE, not tool output. Real ``benchmark_model`` output, of a 2022 nightly binary, is made
by ``make_benchmark_model_fixtures.py`` (``*.benchmark_model.*``: tab-separated tables with the ``[start]``
column, no log prefixes, the CSV of ``--profiling_output_csv_file`` with a ``start`` column, no ``Delegate/``
rows), and real LiteRT op profiles, in LiteRT's own layout, by ``make_real_benchmark_fixtures.py``. The files
here keep what only newer ``benchmark_model`` versions write and no real file has: no ``[start]`` column,
``INFO:`` log prefixes, ``Delegate/<XNNPack op>:<n>`` rows (op profiling inside XNNPack), and the
``--op_profiling_output_mode=csv`` layout (no ``start`` column, node types with commas). They follow the layout
of TensorFlow's ``tensorflow/core/util/stats_calculator.cc`` (column widths, ``\\t`` separators, 3 decimals
in text mode, default stream formatting and ``%`` suffixes in CSV mode, commas in names turned into tabs) and
``tensorflow/lite/profiling/profile_summarizer.cc`` (``[output names]:<node index>`` names,
``Delegate/<name>:<n>`` rows, init and regular sections). Operator types, indices and tensor names come from
the real model; the timings are made up from a fixed seed. Regenerate with::

    PYTHONPATH=. python samples/tools/make_benchmark_fixtures.py

Files:
    * ``tiny_keras_float.xnnpack.txt``: stdout of a run with the XNNPack delegate (newer layout without
      ``[start]``, ``INFO:`` log prefixes): operators 0–4 delegated (``Delegate/…`` rows and one
      ``TfLiteXNNPackDelegate`` kernel node), 5–7 on the CPU.
    * ``tiny_keras_float.xnnpack.csv``: the same run in ``--op_profiling_output_mode=csv`` (the node type
      ``Convolution (NHWC, F32) IGEMM`` keeps its comma, the name has it as a tab).

(``face_detection.cpu.txt``, an imitation of the older layout with ``[start]``, is gone: the real
``face_detection.benchmark_model.cpu.txt`` has that layout.)
"""

from __future__ import annotations

import random
from pathlib import Path

from renderer.loaders.registry import load_model

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "fixtures" / "tflite_benchmark"
BANNER = "=============================="


def field(value: object, width: int) -> str:
    """One text-mode cell: a tab, then the value right-aligned in ``width`` (numbers with 3 decimals)."""
    text = f"{value:.3f}" if isinstance(value, float) else str(value)
    return "\t" + text.rjust(width)


def csv_number(value: float) -> str:
    """C++ ``ostream << double`` with the default precision (6 significant digits, like %g)."""
    return f"{value:g}"


class Run:
    """Rows of one Run Order table: (node type, name, first ms, avg ms, mem KB, times called)."""

    def __init__(self) -> None:
        self.rows: list[tuple[str, str, float, float, float, int]] = []

    def add(
        self, node_type: str, name: str, first: float, avg: float, mem: float = 0.0, calls: int = 1
    ) -> None:
        self.rows.append((node_type, name, first, avg, mem, calls))

    def total(self) -> float:
        return sum(r[3] * r[5] for r in self.rows)

    def text(self, title: str, order: list[int]) -> list[str]:
        """The newer text layout, without the ``[start]`` column."""
        header = BANNER + f" {title} " + BANNER
        cells = (
            field("[node type]", 24)
            + field("[first]", 9)
            + field("[avg ms]", 9)
            + field("[%]", 8)
            + field("[cdf%]", 8)
            + field("[mem KB]", 10)
            + field("[times called]", 9)
            + "\t[Name]"
        )
        lines = [header, cells]
        total, cdf = self.total(), 0.0
        for i in order:
            node_type, name, first, avg, mem, calls = self.rows[i]
            share = avg * calls * 100.0 / total
            cdf += share
            line = (
                field(node_type, 24)
                + field(first, 9)
                + field(avg, 9)
                + field(share, 7)
                + "%"
                + field(cdf, 7)
                + "%"
                + field(mem, 10)
                + field(calls, 9)
                + "\t"
                + name
            )
            lines.append(line)
        return lines + [""]

    def csv(self, title: str, order: list[int]) -> list[str]:
        lines = [
            BANNER + f" {title} " + BANNER,
            "node type, first, avg_ms, %, cdf%, mem KB, times called, name",
        ]
        total, cdf = self.total(), 0.0
        for i in order:
            node_type, name, first, avg, mem, calls = self.rows[i]
            share = avg * calls * 100.0 / total
            cdf += share
            lines.append(
                ", ".join(
                    [
                        node_type,
                        csv_number(first),
                        csv_number(avg),
                        csv_number(share) + "%",
                        csv_number(cdf) + "%",
                        csv_number(mem),
                        str(calls),
                        name.replace(",", "\t"),
                    ]
                )
            )
        return lines + [""]

    def by_time(self) -> list[int]:
        return sorted(range(len(self.rows)), key=lambda i: -self.rows[i][3])

    def by_type(self, csv_mode: bool) -> list[str]:
        totals: dict[str, list[float]] = {}
        for node_type, _, _, avg, mem, calls in self.rows:
            item = totals.setdefault(node_type, [0, 0.0, 0.0, 0])
            item[0] += 1
            item[1] += int(avg * 1000) / 1000.0
            item[2] += mem
            item[3] += calls
        total = sum(v[1] for v in totals.values())
        lines = [BANNER + " Summary by node type " + BANNER]
        if csv_mode:
            lines.append("node type, count, avg_ms, avg %, cdf %, mem KB, times called")
        else:
            lines.append(
                field("[Node type]", 24)
                + field("[count]", 9)
                + field("[avg ms]", 10)
                + field("[avg %]", 11)
                + field("[cdf %]", 11)
                + field("[mem KB]", 10)
                + field("[times called]", 10)
            )
        cdf = 0.0
        for node_type, (count, ms, mem, calls) in sorted(totals.items(), key=lambda kv: -kv[1][1]):
            share = ms * 100.0 / total
            cdf += share
            if csv_mode:
                lines.append(
                    f"{node_type}, {count}, {csv_number(ms)}, {csv_number(share)}%, {csv_number(cdf)}%, "
                    f"{csv_number(mem)}, {calls}"
                )
            else:
                lines.append(
                    field(node_type, 24)
                    + field(count, 9)
                    + field(ms, 10)
                    + field(share, 10)
                    + "%"
                    + field(cdf, 10)
                    + "%"
                    + field(mem, 10)
                    + field(calls, 9)
                )
        return lines + [""]


def summary(runs: int, total_ms: float, count_nodes: int) -> list[str]:
    avg = int(total_ms * 1000)
    return [
        (
            f"Timings (microseconds): count={runs} first={int(avg * 1.6)} curr={avg} min={int(avg * 0.9)} "
            f"max={int(avg * 1.7)} avg={avg} std={max(1, avg // 20)}"
        ),
        "Memory (bytes): count=0",
        f"{count_nodes} nodes observed",
        "",
    ]


def init_section(csv_mode: bool) -> list[str]:
    run = Run()
    run.add("ModifyGraphWithDelegate", "ModifyGraphWithDelegate/0", 4.127, 4.127, 2816.0)
    run.add("AllocateTensors", "AllocateTensors/0", 0.352, 0.184, 0.0, 2)
    table = run.csv("Run Order", [0, 1]) if csv_mode else run.text("Run Order", [0, 1])
    return ["Profiling Info for Benchmark Initialization:", *table, *summary(1, 4.5, 2)]


def name_of(outputs: list[str], index: int) -> str:
    return f"[{', '.join(outputs)}]:{index}"


def tiny_keras_run(rng: random.Random) -> Run:
    model = load_model(ROOT / "tests/fixtures/tflite_debugger/tiny_keras_float.tflite")
    nodes = model.main.nodes
    run = Run()
    kinds = {
        "CONV_2D": "Convolution (NHWC, F32) IGEMM",
        "DEPTHWISE_CONV_2D": "Convolution (NHWC, F32) DWConv",
        "ADD": "Add (ND, F32)",
        "MAX_POOL_2D": "Max Pooling (NHWC, F32)",
    }
    for node in nodes[:5]:
        avg = round(rng.uniform(0.004, 0.060), 6)
        run.add(kinds[node.op_type], f"Delegate/{kinds[node.op_type]}:{node.index}", round(avg * 1.8, 6), avg)
    # TFLite adds the delegate kernel as a new node, numbered after the model's operators
    partition_out = [v.name for v in nodes[4].outputs]
    run.add("TfLiteXNNPackDelegate", name_of(partition_out, len(nodes)), 0.212, 0.121)
    for node in nodes[5:]:
        avg = round(rng.uniform(0.002, 0.030), 6)
        run.add(node.op_type, name_of([v.name for v in node.outputs], node.index), round(avg * 2.1, 6), avg)
    return run


def write_tiny_keras(rng: random.Random) -> None:
    run = tiny_keras_run(rng)
    order = list(range(len(run.rows)))
    text = [
        "INFO: STARTING!",
        "INFO: Log parameter values verbosely: [0]",
        "INFO: Num runs: [50]",
        "INFO: Graph: [tiny_keras_float.tflite]",
        "INFO: Enable op profiling: [1]",
        "INFO: Loaded model tiny_keras_float.tflite",
        "INFO: Created TensorFlow Lite XNNPACK delegate for CPU.",
        "INFO: The input model file size (MB): 0.00458",
        "INFO: Initialized session in 4.6ms.",
        (
            "INFO: Running benchmark for at least 1 iterations and at least 0.5 seconds but terminate if exceeding "
            "150 seconds."
        ),
        "INFO: count=1411 first=412 curr=301 min=270 max=1390 avg=322.5 std=61 p5=285 median=311 p95=398",
        (
            "INFO: Running benchmark for at least 50 iterations and at least 1 seconds but terminate if exceeding "
            "150 seconds."
        ),
        "INFO: count=3112 first=330 curr=296 min=268 max=880 avg=310.2 std=37 p5=281 median=303 p95=366",
        (
            "INFO: Inference timings in us: Init: 4612, First inference: 412, Warmup (avg): 322.5, "
            "Inference (avg): 310.2"
        ),
        "INFO: " + init_section(False)[0],
        *init_section(False)[1:],
        "INFO: Operator-wise Profiling Info for Regular Benchmark Runs:",
        *run.text("Run Order", order),
        *run.text("Top by Computation Time", run.by_time()),
        f"Number of nodes executed: {len(run.rows)}",
        *run.by_type(False),
        *summary(3112, run.total(), len(run.rows)),
    ]
    (OUT / "tiny_keras_float.xnnpack.txt").write_text("\n".join(text) + "\n")
    csv_lines = [
        *init_section(True),
        "Operator-wise Profiling Info for Regular Benchmark Runs:",
        *run.csv("Run Order", order),
        *run.csv("Top by Computation Time", run.by_time()),
        f"Number of nodes executed: {len(run.rows)}",
        *run.by_type(True),
        *summary(3112, run.total(), len(run.rows)),
    ]
    (OUT / "tiny_keras_float.xnnpack.csv").write_text("\n".join(csv_lines) + "\n")


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    rng = random.Random(20240607)
    write_tiny_keras(rng)
    for path in sorted(OUT.iterdir()):
        print(path.relative_to(ROOT), path.stat().st_size)


if __name__ == "__main__":
    main()
