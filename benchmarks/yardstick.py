"""The 2,000-node dot yardstick of issue 30: ``dot -Tsvg`` on a fixed chain of 2,000 boxes with one-line labels
(0.26 s on the 2-core machine of issue 30). Benchmarks print their figures as multiples of it, measured in the
same run, so that a figure does not depend on the machine or on its load.

    from benchmarks import yardstick            # or: import yardstick, with benchmarks/ on sys.path
    unit = yardstick.cpu_seconds()              # user + system CPU of dot, median of 3 runs
    unit = yardstick.seconds()                  # wall time, median of 3 runs
"""

from __future__ import annotations

import os
import resource
import shutil
import statistics
import subprocess
import time

NODES = 2000


def source(nodes: int = NODES) -> str:
    """The yardstick graph: ``nodes`` boxes in a chain."""
    lines = ["digraph yardstick {", "node [shape=box];"]
    lines += [f'n{i} [label="operator {i}"];' for i in range(nodes)]
    lines += [f"n{i} -> n{i + 1};" for i in range(nodes - 1)]
    return "\n".join(lines + ["}"])


def _run() -> tuple[float, float]:
    """Wall and CPU seconds of one ``dot -Tsvg`` of the yardstick."""
    dot = shutil.which("dot")
    if dot is None:
        raise SystemExit("the yardstick needs Graphviz's dot on PATH")
    data = source().encode()
    before, start = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    subprocess.run([dot, "-Tsvg", "-o", os.devnull], input=data, check=True, capture_output=True)
    wall, after = time.perf_counter() - start, resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def seconds(repeat: int = 3) -> float:
    """Median wall time of ``repeat`` runs."""
    return statistics.median(_run()[0] for _ in range(repeat))


def cpu_seconds(repeat: int = 3) -> float:
    """Median user + system CPU of ``repeat`` runs."""
    return statistics.median(_run()[1] for _ in range(repeat))
