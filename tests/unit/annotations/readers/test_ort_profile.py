"""The ONNX Runtime profile reader, on profiles that onnxruntime writes during the test run."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import numpy as np
import pytest

from conftest import ONNX, one_line_error, run_cli
from renderer.annotations.merge import merge
from renderer.annotations.readers import ort_profile
from renderer.annotations.registry import load_annotations, read_file
from renderer.core.errors import AnnotationError
from renderer.core.records import AnnotationSet, Entry
from renderer.loaders.registry import load_model

ort = pytest.importorskip("onnxruntime")

RUNS = 4


def make_profile(
    folder: Path, model_path: Path, level: str, feeds: dict | None = None, runs: int = RUNS
) -> Path:
    """Run ``model_path`` ``runs`` times with profiling on; return the profile file ORT wrote."""
    options = ort.SessionOptions()
    options.enable_profiling = True
    options.graph_optimization_level = getattr(ort.GraphOptimizationLevel, level)
    options.profile_file_prefix = str(folder / f"{model_path.stem}_{level}")
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(str(model_path), options, providers=["CPUExecutionProvider"])
    if feeds is None:
        rng = np.random.default_rng(0)
        feeds = {}
        for item in session.get_inputs():
            shape = [d if isinstance(d, int) else 2 for d in item.shape]
            feeds[item.name] = rng.standard_normal(shape).astype(np.float32)
    for _ in range(runs):
        session.run(None, feeds)
    return Path(session.end_profiling())


@pytest.fixture(scope="module")
def profiles(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], Path]:
    folder = tmp_path_factory.mktemp("ort_profiles")
    made = {}
    for name in ("tiny_cnn", "unnamed_nodes", "tiny_transformer"):
        for level in ("ORT_DISABLE_ALL", "ORT_ENABLE_EXTENDED", "ORT_ENABLE_ALL"):
            made[(name, level)] = make_profile(folder, ONNX / f"{name}.onnx", level)
    feeds = {"x": np.arange(4, dtype=np.float32) + 1.0, "trip_count": np.array(3, dtype=np.int64)}
    made[("control_flow", "ORT_DISABLE_ALL")] = make_profile(
        folder, ONNX / "control_flow.onnx", "ORT_DISABLE_ALL", feeds
    )
    return made


def expected_from_file(path: Path) -> dict[str, dict[str, float]]:
    """Per profiled name: mean/median/first of per-run totals, runs assigned by the model_run time windows."""
    events = json.loads(path.read_text())
    runs = sorted(
        (e["ts"], e["ts"] + e["dur"])
        for e in events
        if e.get("cat") == "Session" and e["name"] == "model_run"
    )
    per_run: dict[str, list[float]] = {}
    for event in events:
        if event.get("cat") != "Node" or not event["name"].endswith("_kernel_time"):
            continue
        run = next(i for i, (start, end) in enumerate(runs) if start <= event["ts"] <= end)
        totals = per_run.setdefault(event["name"][: -len("_kernel_time")], [0.0] * len(runs))
        totals[run] += event["dur"]
    result = {}
    for name, totals in per_run.items():
        used = totals[1:]
        result[name] = {
            "latency_us": statistics.fmean(used),
            "latency_us_median": statistics.median(used),
            "latency_first_us": totals[0],
        }
    return result


def node_by_name(model, name):  # type: ignore[no-untyped-def]
    return next(n for n in model.nodes() if n.name == name)


def test_detects_real_profiles_from_content(profiles: dict[tuple[str, str], Path]) -> None:
    model = load_model(ONNX / "tiny_cnn.onnx")
    for path in profiles.values():
        head = path.read_text()[:4096]
        assert ort_profile.match(path, head)
        assert read_file(path, model).source == "ort"


def test_named_nodes_map_with_mean_and_median_over_runs(profiles: dict[tuple[str, str], Path]) -> None:
    path = profiles[("tiny_cnn", "ORT_DISABLE_ALL")]
    model = load_model(ONNX / "tiny_cnn.onnx")
    notes = load_annotations(path, model)
    expected = expected_from_file(path)
    assert notes.coverage[0].matched_ops == len(model.main.nodes) == len(expected)
    assert notes.coverage[0].unmatched == []
    for name, numbers in expected.items():
        entry = notes.ops[node_by_name(model, name).key]
        for key, value in numbers.items():
            assert entry.values[key] == pytest.approx(value, abs=1e-3), (name, key)
        assert entry.values["provider"] == "CPUExecutionProvider"
        assert entry.values["op_name"] == node_by_name(model, name).op_type
    assert notes.metrics["latency_us"].unit == "µs"
    assert notes.graph.values["ort_runs"] == RUNS


def test_unnamed_nodes_use_ort_index_which_skips_constants(profiles: dict[tuple[str, str], Path]) -> None:
    path = profiles[("unnamed_nodes", "ORT_DISABLE_ALL")]
    model = load_model(ONNX / "unnamed_nodes.onnx")
    events = [
        e
        for e in json.loads(path.read_text())
        if e.get("cat") == "Node" and e["name"].endswith("_kernel_time")
    ]
    names = {e["name"][: -len("_kernel_time")]: e["args"] for e in events}
    assert set(names) == {"MatMul_0", "Add_1", "Relu_2", "Sigmoid_3", "Mul_4"}
    # the index is not the file position: the file starts with a Constant, so MatMul is node 1 there
    assert model.main.nodes[1].op_type == "MatMul" and model.main.nodes[0].op_type == "Constant"
    notes = load_annotations(path, model)
    assert notes.coverage[0].matched_ops == 5 and not notes.coverage[0].unmatched
    expected = expected_from_file(path)
    for key, entry in notes.ops.items():
        node = model.graphs[key[1]].nodes[key[2]]
        ort_name = entry.values["ort_node"]
        assert ort_name.startswith(node.op_type + "_")
        assert names[ort_name]["op_name"] == node.op_type
        assert entry.values["latency_us"] == pytest.approx(expected[ort_name]["latency_us"], abs=1e-3)
    # shapes reported by ORT agree with the mapped node's output
    add = next(n for n in model.main.nodes if n.op_type == "Add")
    assert notes.ops[add.key].values["output_type_shape"] == "float[1,4]"


@pytest.mark.parametrize("level", ["ORT_ENABLE_EXTENDED", "ORT_ENABLE_ALL"])
def test_optimized_profiles_map_what_can_be_mapped(profiles: dict[tuple[str, str], Path], level: str) -> None:
    for name in ("tiny_cnn", "tiny_transformer", "unnamed_nodes"):
        path = profiles[(name, level)]
        model = load_model(ONNX / f"{name}.onnx")
        aset = read_file(path, model)
        notes = merge([aset], model)
        events = {
            e["name"][: -len("_kernel_time")]: e["args"]
            for e in json.loads(path.read_text())
            if e.get("cat") == "Node" and e["name"].endswith("_kernel_time")
        }
        mapped = {
            n for entry in notes.ops.values() for n in entry.values.get("ort_node", "").split(", ") if n
        }
        mapped |= {
            model.graphs[k[1]].nodes[k[2]].name for k, e in notes.ops.items() if "ort_node" not in e.values
        }
        assert mapped | set(aset.unmatched) == set(events), name
        assert not mapped & set(aset.unmatched)
        node_names = {n.name for n in model.nodes() if n.name}
        for event in events:
            if event in node_names:  # a node that kept its name (maybe as FusedConv) maps to itself
                assert event in mapped
        assert len(aset.unmatched) < len(events) / 2, aset.unmatched


def test_fused_and_renamed_nodes(profiles: dict[tuple[str, str], Path]) -> None:
    model = load_model(ONNX / "tiny_cnn.onnx")
    extended = merge([read_file(profiles[("tiny_cnn", "ORT_ENABLE_EXTENDED")], model)], model)
    fused = {model.main.nodes[k[2]].name: e.values["op_name"] for k, e in extended.ops.items()}
    assert fused["stem/conv"] == "FusedConv"  # Conv+BN+Relu fused, the Conv's name kept

    transformer = load_model(ONNX / "tiny_transformer.onnx")
    path = profiles[("tiny_transformer", "ORT_ENABLE_ALL")]
    notes = merge([read_file(path, transformer)], transformer)
    by_ort = {e.values.get("ort_node"): transformer.main.nodes[k[2]].name for k, e in notes.ops.items()}
    fusion = [n for n in by_ort if n and "Fusion/" in n]
    assert fusion, by_ort
    for ort_name in fusion:
        assert ort_name.startswith(by_ort[ort_name] + "/")

    nchwc = merge([read_file(profiles[("tiny_cnn", "ORT_ENABLE_ALL")], model)], model)
    renamed = {
        e.values["ort_node"]: model.main.nodes[k[2]] for k, e in nchwc.ops.items() if "ort_node" in e.values
    }
    for ort_name, node in renamed.items():  # named after an output tensor: mapped to its producer
        assert any(ort_name.startswith(out.name) for out in node.outputs), (ort_name, node.name)


def test_loop_body_nodes_sum_per_run(profiles: dict[tuple[str, str], Path]) -> None:
    path = profiles[("control_flow", "ORT_DISABLE_ALL")]
    model = load_model(ONNX / "control_flow.onnx")
    notes = load_annotations(path, model)
    expected = expected_from_file(path)
    body = node_by_name(model, "loop/body/accumulate")
    entry = notes.ops[body.key]
    assert body.graph.index != 0
    assert entry.values["calls_per_run"] == 3
    assert entry.values["latency_us"] == pytest.approx(
        expected["loop/body/accumulate"]["latency_us"], abs=1e-3
    )
    then = node_by_name(model, "gate/then/double")
    assert notes.ops[then.key].values["latency_first_us"] == expected["gate/then/double"]["latency_first_us"]


def test_clashing_metrics_keep_their_source(profiles: dict[tuple[str, str], Path], tmp_path: Path) -> None:
    model = load_model(ONNX / "tiny_cnn.onnx")
    generic = tmp_path / "mine.yaml"
    generic.write_text("operators:\n  - {id: stem/conv, meta: {latency_us: 99.5, note: hand}}\n")
    notes = load_annotations([profiles[("tiny_cnn", "ORT_DISABLE_ALL")], generic], model)
    conv = notes.ops[node_by_name(model, "stem/conv").key]
    assert conv.values["generic.latency_us"] == 99.5
    assert conv.values["ort.latency_us"] == pytest.approx(
        expected_from_file(profiles[("tiny_cnn", "ORT_DISABLE_ALL")])["stem/conv"]["latency_us"], abs=1e-3
    )
    assert "latency_us" not in conv.values and conv.values["note"] == "hand"
    assert notes.metrics["ort.latency_us"].unit == "µs"
    assert (
        notes.ops[node_by_name(model, "stem/bn").key].values["latency_us_median"] > 0
    )  # no clash, no prefix


def test_cli_coverage_line_and_colour_metric(profiles: dict[tuple[str, str], Path], tmp_path: Path) -> None:
    path = profiles[("tiny_transformer", "ORT_ENABLE_ALL")]
    model = load_model(ONNX / "tiny_transformer.onnx")
    aset = read_file(path, model)
    run = run_cli(
        "render",
        ONNX / "tiny_transformer.onnx",
        "-a",
        path,
        "--color-by",
        "latency_us",
        "-o",
        tmp_path / "t.svg",
    )
    assert run.returncode == 0, run.stderr
    matched = len({r.key for r, _ in aset.operators})
    total = matched + len(aset.unmatched)
    assert f"matched {matched}/{total} operators; {len(aset.unmatched)} ids unmatched: " in run.stderr
    assert (tmp_path / "t.svg").stat().st_size > 0


def test_pretty_printed_profile_reads_the_same(profiles: dict[tuple[str, str], Path], tmp_path: Path) -> None:
    path = profiles[("tiny_cnn", "ORT_DISABLE_ALL")]
    pretty = tmp_path / "pretty.json"
    pretty.write_text(json.dumps(json.loads(path.read_text()), indent=2))
    model = load_model(ONNX / "tiny_cnn.onnx")
    a, b = load_annotations(path, model), load_annotations(pretty, model)
    assert {k: e.values for k, e in a.ops.items()} == {k: e.values for k, e in b.ops.items()}


def test_malformed_profiles_give_one_line(profiles: dict[tuple[str, str], Path], tmp_path: Path) -> None:
    lines = profiles[("tiny_cnn", "ORT_DISABLE_ALL")].read_text().splitlines()
    broken = tmp_path / "broken.json"
    broken.write_text("\n".join(lines[:5] + [lines[5][:40]] + lines[6:]))
    model = load_model(ONNX / "tiny_cnn.onnx")
    with pytest.raises(AnnotationError, match=r"broken\.json:6: invalid JSON"):
        read_file(broken, model)
    bad_dur = tmp_path / "dur.json"
    bad_dur.write_text(
        '[\n{"cat" : "Node","ph" : "X","name" :"stem/conv_kernel_time","dur" : "x","ts" : 1}\n]\n'
    )
    with pytest.raises(AnnotationError, match=r"dur\.json:2: .*non-numeric 'dur'"):
        read_file(bad_dur, model)
    error = one_line_error(run_cli("render", ONNX / "tiny_cnn.onnx", "-a", broken, "-o", tmp_path / "x.svg"))
    assert "broken.json:6" in error
    assert not (tmp_path / "x.svg").exists()


@pytest.mark.slow
def test_a_million_events_stream(tmp_path: Path) -> None:
    model = load_model(ONNX / "tiny_cnn.onnx")
    names = [n.name for n in model.main.nodes]
    path = tmp_path / "big.json"
    n_runs = 1_000_000 // (len(names) + 1)
    with open(path, "w") as f:
        f.write("[\n")
        ts = 0
        for run in range(n_runs):
            start = ts
            for i, name in enumerate(names):
                f.write(
                    f'{{"cat" : "Node","pid" :1,"tid" :1,"dur" :{i + run % 7},"ts" :{ts},"ph" : "X",'
                    f'"name" :"{name}_kernel_time","args" : {{"op_name" : "X"}}}},\n'
                )
                ts += 20
            f.write(
                f'{{"cat" : "Session","pid" :1,"tid" :1,"dur" :{ts - start},"ts" :{start},"ph" : "X",'
                f'"name" :"model_run","args" : {{}}}},\n'
            )
        f.write(
            '{"cat" : "Session","pid" :1,"tid" :1,"dur" :1,"ts" :0,"ph" : "X","name" :"end","args" : {}}\n]\n'
        )
    aset = read_file(path, model)
    conv = {r.key: e for r, e in aset.operators}[node_by_name(model, names[3]).key]
    runs = list(range(1, n_runs))
    assert conv.values["latency_us"] == pytest.approx(statistics.fmean(3 + r % 7 for r in runs), abs=1e-3)
    assert conv.values["latency_us_median"] == statistics.median(3 + r % 7 for r in runs)
    assert aset.graph.values["ort_runs"] == n_runs


def test_reader_is_registered_and_forcible(profiles: dict[tuple[str, str], Path]) -> None:
    model = load_model(ONNX / "tiny_cnn.onnx")
    forced = read_file(profiles[("tiny_cnn", "ORT_DISABLE_ALL")], model, fmt="ort")
    assert isinstance(forced, AnnotationSet) and forced.operators
    assert all(isinstance(e, Entry) for _, e in forced.operators)
