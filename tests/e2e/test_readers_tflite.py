"""TFLite tool outputs: QuantizationDebugger layer statistics (real TensorFlow output), benchmark_model op
profiles (real output of a 2022 binary, plus hand-made files for the newer layout) and LiteRT op profiles
(real ai-edge-litert output), see tests/fixtures/README.md."""

from __future__ import annotations

import csv
import itertools
import json
import re
from pathlib import Path

import pytest

from conftest import ROOT, TFLITE, one_line_error, run_cli
from renderer.annotations.readers import tflite_benchmark, tflite_quant_debug
from renderer.annotations.registry import load_annotations, read_file
from renderer.core.errors import AnnotationError
from renderer.loaders.registry import load_model

FIXTURES = ROOT / "tests" / "fixtures"
DEBUGGER = FIXTURES / "tflite_debugger"
BENCH = FIXTURES / "tflite_benchmark"
REAL_MODELS = {
    "face_detection": TFLITE / "face_detection_short_range.tflite",
    "okay_nabu": TFLITE / "okay_nabu.tflite",
    "tiny_keras_float": DEBUGGER / "tiny_keras_float.tflite",
}


def csv_rows(path: Path) -> list[list[str]]:
    with open(path, newline="") as f:
        return list(csv.reader(f))


# -- QuantizationDebugger ------------------------------------------------------------------------------------


@pytest.mark.parametrize("variant", ["int8", "float"])
def test_debugger_rows_map_by_tensor_name_and_op_type(variant: str) -> None:
    path = DEBUGGER / "layer_stats.csv"
    assert tflite_quant_debug.match(path, path.read_text()[:4096])
    model = load_model(DEBUGGER / f"tiny_keras_{variant}.tflite")
    notes = load_annotations(path, model)
    header, *rows = csv_rows(path)
    assert notes.coverage[0].matched_ops == len(rows) and not notes.coverage[0].unmatched
    by_type_and_error = {
        (model.main.nodes[k[2]].op_type, e.values["mean_squared_error"]) for k, e in notes.ops.items()
    }
    for row in rows:
        cells = dict(zip(header, row))
        assert (cells["op_name"], float(cells["mean_squared_error"])) in by_type_and_error
    assert notes.metrics["mean_squared_error"].higher_is_better is False


def test_debugger_error_in_quantization_steps_is_the_main_metric(tmp_path: Path) -> None:
    """rmse_per_scale = sqrt(mean_squared_error) / scale per row (TensorFlow's guide ranks layers by it); a file
    without a scale column keeps mean_squared_error as its main metric."""
    path = DEBUGGER / "layer_stats.csv"
    model = load_model(DEBUGGER / "tiny_keras_int8.tflite")
    notes = load_annotations(path, model)
    header, *rows = csv_rows(path)
    expected = sorted(float(c["mean_squared_error"]) ** 0.5 / float(c["scale"])
                      for c in (dict(zip(header, row)) for row in rows))
    got = sorted(e.values["rmse_per_scale"] for e in notes.ops.values())
    assert got == pytest.approx(expected, rel=1e-12) and len(got) == len(rows)
    assert min(got) > 0 and max(got) / min(got) > 2  # a ranking, not one number
    assert notes.metrics["rmse_per_scale"].main and not notes.metrics["mean_squared_error"].main
    assert notes.metrics["rmse_per_scale"].higher_is_better is False
    scale_at = header.index("scale")
    no_scale = tmp_path / "no_scale.csv"
    no_scale.write_text("\n".join(",".join(r[:scale_at] + r[scale_at + 1:]) for r in [header, *rows]) + "\n")
    plain = load_annotations(no_scale, model)
    assert "rmse_per_scale" not in plain.metrics and plain.metrics["mean_squared_error"].main
    assert all("rmse_per_scale" not in e.values for e in plain.ops.values())


def test_debugger_trailing_digit_quirk_maps_softmax_not_dequantize() -> None:
    model = load_model(DEBUGGER / "tiny_keras_int8.tflite")
    softmax = next(n for n in model.main.nodes if n.op_type == "SOFTMAX")
    dequantize = next(n for n in model.main.nodes if n.op_type == "DEQUANTIZE")
    header, *rows = csv_rows(DEBUGGER / "layer_stats.csv")
    row = dict(zip(header, next(r for r in rows if r[0] == "SOFTMAX")))
    # the debugger wrote the name without the deployed model's last digit, and that name is the DEQUANTIZE output
    assert dequantize.outputs[0].name == row["tensor_name"]
    assert softmax.outputs[0].name == row["tensor_name"] + softmax.outputs[0].name[-1]
    notes = load_annotations(DEBUGGER / "layer_stats.csv", model)
    assert notes.ops[softmax.key].values["max_abs_error"] == float(row["max_abs_error"])
    assert dequantize.key not in notes.ops
    assert notes.tensors[softmax.outputs[0].key].values["scale"] == float(row["scale"])


def test_debugger_fused_names_match_part_by_part(tmp_path: Path) -> None:
    model = load_model(DEBUGGER / "tiny_keras_int8.tflite")
    text = (DEBUGGER / "layer_stats.csv").read_text()
    # keep only the second half of a ';'-joined name, as another converter version might
    edited = tmp_path / "stats.csv"
    edited.write_text(
        text.replace(
            "tiny_keras_1/stem_conv_1/Relu;tiny_keras_1/stem_conv_1/convolution",
            "tiny_keras_1/stem_conv_1/convolution",
        )
    )
    notes = load_annotations(edited, model)
    conv = next(n for n in model.main.nodes if n.op_type == "CONV_2D")
    assert conv.key in notes.ops and not notes.coverage[0].unmatched


def test_debugger_malformed_and_unmatched(tmp_path: Path) -> None:
    model = load_model(DEBUGGER / "tiny_keras_int8.tflite")
    bad = tmp_path / "bad.csv"
    bad.write_text("op_name,tensor_idx,mean_error,scale,zero_point,tensor_name\nADD,3,0.1,0.5\n")
    with pytest.raises(AnnotationError, match=r"bad\.csv:2: 4 cells but 6 columns"):
        read_file(bad, model)
    other = tmp_path / "other.csv"
    other.write_text(
        "op_name,tensor_idx,mean_error,scale,zero_point,tensor_name\nADD,3,0.1,0.5,0,not/there\n"
    )
    assert load_annotations(other, model).coverage[0].unmatched == ["ADD not/there"]


# -- benchmark_model -----------------------------------------------------------------------------------------


def text_rows(path: Path) -> list[tuple[str, list[str], str]]:
    """(type, numbers, name) of every Run Order row of the regular section, split by tabs."""
    rows, in_regular, in_table = [], False, False
    for line in path.read_text().splitlines():
        if "Operator-wise Profiling Info for Regular Benchmark Runs" in line:
            in_regular = True
        elif in_regular and "Run Order" in line:
            in_table = True
        elif in_table and line.startswith("\t") and "[node type]" not in line:
            cells = [c.strip() for c in line.split("\t")[1:]]
            rows.append((cells[0], cells[1:-1], cells[-1]))
        elif in_table and not line.strip():
            in_table = False
    return rows


def test_benchmark_text_with_delegate() -> None:
    path = BENCH / "tiny_keras_float.xnnpack.txt"
    assert tflite_benchmark.match(path, path.read_text()[:4096])
    model = load_model(DEBUGGER / "tiny_keras_float.tflite")
    aset = read_file(path, model)
    notes = load_annotations(path, model)
    rows = text_rows(path)
    delegated = [
        name for _, _, name in rows if name.startswith("Delegate/") or not re.match(r"^\[.*\]:\d+$", name)
    ]
    kernel = [name for node_type, _, name in rows if node_type == "TfLiteXNNPackDelegate"]
    assert set(aset.unmatched) == set(delegated) | set(kernel)
    assert notes.coverage[0].matched_ops == len(rows) - len(aset.unmatched) == 3
    for node_type, numbers, name in rows:
        index = int(name.rsplit(":", 1)[1])
        if name in aset.unmatched:
            continue
        node = model.main.nodes[index]
        assert node.op_type == node_type
        values = notes.ops[node.key].values
        first, avg, share = float(numbers[0]), float(numbers[1]), float(numbers[2].rstrip("%"))
        assert values["latency_us"] == pytest.approx(avg * 1000)
        assert values["latency_first_us"] == pytest.approx(first * 1000)
        assert values["percent"] == pytest.approx(share)
    assert notes.metrics["latency_us"].unit == "µs"


def test_benchmark_csv_mode_has_commas_in_types_and_tabs_in_names() -> None:
    path = BENCH / "tiny_keras_float.xnnpack.csv"
    model = load_model(DEBUGGER / "tiny_keras_float.tflite")
    aset = read_file(path, model)
    assert "Delegate/Convolution (NHWC, F32) IGEMM:0" in aset.unmatched
    text_mode = {
        r.key: e.values for r, e in read_file(BENCH / "tiny_keras_float.xnnpack.txt", model).operators
    }
    csv_mode = {r.key: e.values for r, e in aset.operators}
    assert text_mode.keys() == csv_mode.keys() and len(csv_mode) == 3
    for (
        key,
        values,
    ) in csv_mode.items():  # the CSV keeps more digits; the text table rounds to 3 decimals of ms
        assert values["latency_us"] == pytest.approx(text_mode[key]["latency_us"], abs=0.5)
    line = next(ln for ln in path.read_text().splitlines() if ln.startswith("FULLY_CONNECTED"))
    fc = next(n for n in model.main.nodes if n.op_type == "FULLY_CONNECTED")
    assert csv_mode[fc.key]["latency_us"] == pytest.approx(float(line.split(", ")[2]) * 1000)


def test_benchmark_subgraph_banners(tmp_path: Path) -> None:
    model = load_model(TFLITE / "okay_nabu.tflite")
    main, sub = model.graphs[0].nodes[5], model.graphs[1].nodes[2]

    def row(node, ms: float) -> str:  # type: ignore[no-untyped-def]
        outs = ", ".join(v.name for v in node.outputs)
        return (f"\t{node.op_type:>24}\t{ms:9.3f}\t{ms:9.3f}\t{50.0:7.3f}%\t{50.0:7.3f}%\t{0.0:10.3f}\t{1:9d}"
                f"\t[{outs}]:{node.index}")

    header = "\t[node type]\t[first]\t[avg ms]\t[%]\t[cdf%]\t[mem KB]\t[times called]\t[Name]"
    banner = "============================== Run Order =============================="
    text = "\n".join(
        [
            "INFO: Operator-wise Profiling Info for Regular Benchmark Runs:",
            "Primary graph profile:",
            banner,
            header,
            row(main, 0.25),
            "",
            "Subgraph (index: 1) profile:",
            banner,
            header,
            row(sub, 0.5),
            row(main, 0.75),
            "",
        ]
    )
    path = tmp_path / "sub.txt"
    path.write_text(text)
    aset = read_file(path, model)
    mapped = {r.key: e.values["latency_us"] for r, e in aset.operators}
    assert mapped == {main.key: 250.0, sub.key: 500.0}
    assert aset.unmatched == [f"1:[{', '.join(v.name for v in main.outputs)}]:{main.index}"]


def test_benchmark_malformed_gives_one_line(tmp_path: Path) -> None:
    model = load_model(DEBUGGER / "tiny_keras_float.tflite")
    lines = (BENCH / "tiny_keras_float.xnnpack.txt").read_text().splitlines()
    at = next(i for i, ln in enumerate(lines) if "[tiny_keras_1/gap_1/Mean]:5" in ln)
    lines[at] = lines[at].replace("0.009", "fast!")
    bad = tmp_path / "bad.txt"
    bad.write_text("\n".join(lines))
    with pytest.raises(AnnotationError, match=rf"bad\.txt:{at + 1}: "):
        read_file(bad, model)
    empty = tmp_path / "none.txt"
    empty.write_text(
        "INFO: Profiling Info for Benchmark Initialization:\n============================== Run Order ===\n"
    )
    with pytest.raises(AnnotationError, match="no 'Operator-wise Profiling Info"):
        read_file(empty, model)
    error = one_line_error(
        run_cli("render", DEBUGGER / "tiny_keras_float.tflite", "-a", bad, "-o", tmp_path / "x.svg")
    )
    assert f"bad.txt:{at + 1}" in error


# -- benchmark_model: real output (samples/tools/make_benchmark_model_fixtures.py) --------------------------

REAL_BMK = sorted(BENCH.glob("*.benchmark_model.*.txt")) + sorted(BENCH.glob("*.benchmark_model.*.csv"))
KERNEL_164 = "[reshape, reshape_2, reshape_1, reshape_3]:164"
# file → (operators matched, Run Order rows, unmatched rows). Without XNNPack every operator of the main
# graph has a row (okay_nabu: its 61 main-graph operators; CALL_ONCE ran the 12-operator initialisation
# subgraph in the warm-up run, so that subgraph is not in the regular runs' table). With XNNPack only the
# delegate kernel node (numbered after the model's operators) and the operators left to the CPU have rows.
BMK_COVERAGE = {
    "face_detection.benchmark_model.cpu.txt": (164, 164, []),
    "face_detection.benchmark_model.xnnpack.txt": (2, 3, [KERNEL_164]),
    "face_detection.benchmark_model.xnnpack.csv": (2, 3, [KERNEL_164]),
    "okay_nabu.benchmark_model.cpu.txt": (61, 61, []),
    "okay_nabu.benchmark_model.cpu.csv": (61, 61, []),
    "tiny_keras_float.benchmark_model.cpu.txt": (8, 8, []),
    "tiny_keras_float.benchmark_model.cpu.csv": (8, 8, []),
    "tiny_keras_float.benchmark_model.xnnpack.txt": (0, 1, ["[StatefulPartitionedCall_1:0]:8"]),
}


def run_order(path: Path) -> list[dict[str, str]]:
    """The regular runs' Run Order rows as {column: cell}: text split on tabs, CSV read with the csv module
    (whose names have their commas as tabs). Column names lower-cased, without brackets, ``_`` as a space."""
    lines = path.read_text().splitlines()
    at = lines.index("Operator-wise Profiling Info for Regular Benchmark Runs:")
    assert re.fullmatch(r"=+ Run Order =+", lines[at + 1])
    table = list(itertools.takewhile(bool, lines[at + 2 :]))
    if path.suffix == ".csv":
        cells = [[c.replace("\t", ",") for c in row] for row in csv.reader(table, skipinitialspace=True)]
    else:
        cells = [[c.strip() for c in line.split("\t")[1:]] for line in table]
    header, *rows = cells
    columns = [c.strip("[]").lower().replace("_", " ") for c in header]
    assert all(len(row) == len(columns) for row in rows)
    return [dict(zip(columns, row)) for row in rows]


def row_name(name: str) -> tuple[list[str], int]:
    found = re.fullmatch(r"\[(.*)\]:(\d+)", name)
    assert found, name
    return (found.group(1).split(", ") if found.group(1) else []), int(found.group(2))


def test_benchmark_model_files_and_their_versions() -> None:
    versions = json.loads((BENCH / "benchmark_model.versions.json").read_text())
    assert versions["sha256"] == versions["sha256_expected"]
    assert versions["source"]["commit"] == "7e46c97809b6a39382daf660651a5e7bd9e8b3a4"
    found = sorted(p.name for p in REAL_BMK)
    assert sorted(versions["files"]) == found == sorted(BMK_COVERAGE)
    # the 2022 binary could not apply XNNPack to okay_nabu (it gives no reason): no such file
    refused = versions["refused"]
    assert list(refused) == ["okay_nabu.benchmark_model.xnnpack.txt"]
    assert "Failed to apply XNNPACK delegate." in refused["okay_nabu.benchmark_model.xnnpack.txt"]["output"]
    for name, made in versions["files"].items():
        text = (BENCH / name).read_text()
        if name.endswith(".txt"):
            # stdout as printed: no log prefixes, tab-separated cells with the [start] column; stderr (the
            # "INFO: Created TensorFlow Lite XNNPACK delegate" line) is not in the file
            assert made["saved"] == "stdout" and text.startswith("STARTING!\n") and "INFO:" not in text
            assert "\t          [start]\t" in text
            assert ("Use xnnpack: [1]" in text) == (".xnnpack." in name)
        else:
            # the file --profiling_output_csv_file wrote: CSV layout with a start column
            assert "node type, start, first, avg_ms, %, cdf%, mem KB, times called, name" in text
        assert tflite_benchmark.match(BENCH / name, text[:4096])


@pytest.mark.parametrize("path", REAL_BMK, ids=lambda p: p.name)
def test_benchmark_model_rows_map_to_their_operators(path: Path) -> None:
    model = load_model(REAL_MODELS[path.name.split(".")[0]])
    nodes = model.main.nodes
    aset = read_file(path, model)
    notes = load_annotations(path, model)
    rows = run_order(path)
    kernel = [row["name"] for row in rows if row["node type"] == "TfLiteXNNPackDelegate"]
    assert bool(kernel) == (".xnnpack." in path.name)
    # the delegate kernel node has no operator in the model: reported as unmatched; no Delegate/ rows (this
    # binary does not profile inside XNNPack)
    assert aset.unmatched == kernel and not any(r["name"].startswith("Delegate/") for r in rows)
    assert notes.coverage[0].matched_ops == len(rows) - len(kernel)
    for row in rows:
        outputs, index = row_name(row["name"])
        if row["name"] in kernel:
            assert index == len(nodes)  # numbered after the model's operators
            continue
        node = nodes[index]
        assert node.op_type == row["node type"] and outputs == [v.name for v in node.outputs]
        values = notes.ops[node.key].values
        assert values["latency_us"] == pytest.approx(float(row["avg ms"]) * 1000)
        assert values["latency_first_us"] == pytest.approx(float(row["first"]) * 1000)
        assert values["start_us"] == pytest.approx(float(row["start"]) * 1000)
        assert values["percent"] == pytest.approx(float(row["%"].rstrip("%")))
        assert values["times_called"] == float(row["times called"])
    text = path.read_text()
    timings = re.findall(r"^Timings \(microseconds\): .* avg=([\d.e+-]+) ", text, re.M)
    assert aset.graph.values["profile_avg_us"] == pytest.approx(float(timings[-1]))


@pytest.mark.parametrize("name", sorted(BMK_COVERAGE))
def test_benchmark_model_coverage(name: str) -> None:
    matched, total, unmatched = BMK_COVERAGE[name]
    model = load_model(REAL_MODELS[name.split(".")[0]])
    notes = load_annotations(BENCH / name, model)
    assert len(run_order(BENCH / name)) == total
    assert notes.coverage[0].matched_ops == matched and notes.coverage[0].unmatched == unmatched
    if name.startswith("face_detection.") and ".xnnpack." in name:
        # XNNPack took every operator but the two CONCATENATIONs at the end, which ran on the CPU
        concat = [model.main.nodes[162], model.main.nodes[163]]
        assert [n.op_type for n in concat] == ["CONCATENATION"] * 2
        assert {n.key for n in concat} == set(notes.ops)


def test_benchmark_model_csv_renders(tmp_path: Path) -> None:
    done = run_cli(
        "render",
        REAL_MODELS["face_detection"],
        "-a",
        BENCH / "face_detection.benchmark_model.xnnpack.csv",
        "-o",
        tmp_path / "x.svg",
        "--color-by",
        "latency_us",
    )
    assert done.returncode == 0, done.stderr
    assert f"matched 2/3 operators; 1 ids unmatched: {KERNEL_164}" in done.stderr


# -- LiteRT profile summary: real ai-edge-litert output (samples/tools/make_litert_profile_fixtures.py) ------


def litert_rows(path: Path) -> list[tuple[str, list[float], str, int]]:
    """(type, [start, first, avg ms, %, cdf%, mem KB, times called], kind, index) of each Run Order row."""
    rows, in_table = [], False
    for line in path.read_text().splitlines():
        if re.match(r"^=+ Run Order =+$", line):
            in_table = True
        elif in_table and not line.strip():
            break
        elif in_table and "[node type]" not in line:
            *node_type, start, first, avg, share, cdf, mem, calls, name = line.split()
            found = re.fullmatch(r"\[(Builtin|Delegate)\]:(\d+)", name)
            assert found, line
            kind, index = found.groups()
            numbers = [float(c.rstrip("%")) for c in (start, first, avg, share, cdf, mem, calls)]
            rows.append((" ".join(node_type), numbers, kind, int(index)))
    return rows


def check_values(values: dict[str, object], numbers: list[float]) -> None:
    start, first, avg, share, cdf, mem, calls = numbers
    assert values["start_us"] == pytest.approx(start * 1000)
    assert values["latency_first_us"] == pytest.approx(first * 1000)
    assert values["latency_us"] == pytest.approx(avg * 1000)
    assert values["percent"] == pytest.approx(share) and values["cdf_percent"] == pytest.approx(cdf)
    assert values["memory_kb"] == mem and values["times_called"] == calls


def test_litert_real_files_and_their_versions() -> None:
    versions = json.loads((BENCH / "litert_profile.versions.json").read_text())
    assert versions["package"] == "ai-edge-litert" and versions["version"] == "2.3.0"
    real = sorted(p.name for p in BENCH.glob("*.litert_profile.*.txt"))
    assert real and sorted(versions["files"]) == real
    for name, made in versions["files"].items():
        text = (BENCH / name).read_text()
        # LiteRT's summary: no benchmark_model section header, space-padded cells, and with XNNPack on, a
        # Delegate Statistics table
        assert text.startswith("=") and "Operator-wise" not in text and "\t" not in text
        assert ("Delegate Statistics" in text) == name.endswith(".xnnpack.txt")
        assert tflite_benchmark.match(BENCH / name, text[:4096])
        assert ("kernel_mode" in made["options"]["xnnpack"]) == name.endswith(".builtin.txt")


@pytest.mark.parametrize("stem", ["face_detection", "tiny_keras_float"])
def test_litert_builtin_kernels_map_every_operator(stem: str) -> None:
    path = BENCH / f"{stem}.litert_profile.builtin.txt"
    model = load_model(REAL_MODELS[stem])
    notes = load_annotations(path, model)
    rows = litert_rows(path)
    assert len(rows) == len(model.main.nodes) and all(kind == "Builtin" for _, _, kind, _ in rows)
    assert notes.coverage[0].matched_ops == len(rows) and not notes.coverage[0].unmatched
    for node_type, numbers, _, index in rows:
        node = model.main.nodes[index]
        assert node.op_type == node_type
        check_values(notes.ops[node.key].values, numbers)
        assert notes.ops[node.key].values["node_type"] == node_type


def test_litert_subgraphs_share_one_table() -> None:
    # okay_nabu: CALL_ONCE (operator 0) runs the 12-operator initialisation subgraph in the first run only;
    # its rows follow CALL_ONCE's in the one Run Order table, with indices that restart at 0
    path = BENCH / "okay_nabu.litert_profile.builtin.txt"
    model = load_model(REAL_MODELS["okay_nabu"])
    main, init = model.graphs
    rows = litert_rows(path)
    assert len(rows) == len(main.nodes) + len(init.nodes)
    assert rows[0][0] == "CALL_ONCE" and [r[3] for r in rows[1 : 1 + len(init.nodes)]] == list(
        range(len(init.nodes))
    )
    notes = load_annotations(path, model)
    assert notes.coverage[0].matched_ops == len(rows) and not notes.coverage[0].unmatched
    runs = json.loads((BENCH / "litert_profile.versions.json").read_text())["runs"]
    for position, (node_type, numbers, _, index) in enumerate(rows):
        graph = init if 1 <= position <= len(init.nodes) else main
        node = graph.nodes[index]
        assert node.op_type == node_type
        # the initialisation subgraph ran once, the main graph in every run
        assert numbers[-1] == (1 if graph is init else runs)
        check_values(notes.ops[node.key].values, numbers)
    # the same index and type in both graphs (VAR_HANDLE at 2, 4 and 6) went to the right graph each time
    shared = [i for i in range(len(init.nodes)) if init.nodes[i].op_type == main.nodes[i].op_type]
    assert shared and all(init.nodes[i].key in notes.ops and main.nodes[i].key in notes.ops for i in shared)


@pytest.mark.parametrize("stem", ["face_detection", "okay_nabu", "tiny_keras_float"])
def test_litert_xnnpack_delegate_rows_are_unmatched(stem: str) -> None:
    path = BENCH / f"{stem}.litert_profile.xnnpack.txt"
    model = load_model(REAL_MODELS[stem])
    aset = read_file(path, model)
    rows = litert_rows(path)
    delegated = [f"{node_type}:{index}" for node_type, _, kind, index in rows if kind == "Delegate"]
    assert delegated and all(r[0].startswith("Delegate/") for r in rows if r[2] == "Delegate")
    assert aset.unmatched == delegated
    # the delegate's kernel node has no row: only the operators XNNPack left to the built-in kernels are timed
    builtin = [(node_type, numbers, index) for node_type, numbers, kind, index in rows if kind == "Builtin"]
    mapped = {r.key: e.values for r, e in aset.operators}
    assert len(mapped) == len(builtin)
    for node_type, numbers, index in builtin:
        node = model.main.nodes[index]
        assert node.op_type == node_type
        check_values(mapped[node.key], numbers)
    if stem == "okay_nabu":
        assert sorted(n for _, _, n in builtin) == [0, 25, 36, 46, 60]  # CALL_ONCE, 3 SPLIT_V, QUANTIZE


def test_litert_summary_renders(tmp_path: Path) -> None:
    done = run_cli(
        "render",
        REAL_MODELS["face_detection"],
        "-a",
        BENCH / "face_detection.litert_profile.builtin.txt",
        "-o",
        tmp_path / "x.svg",
        "--color-by",
        "latency_us",
    )
    assert done.returncode == 0, done.stderr
    assert "matched 164/164 operators" in done.stderr
