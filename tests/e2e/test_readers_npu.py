"""Readers of the NPU and inference-engine tools: Arm Vela, OpenVINO benchmark_app, TensorRT trtexec.

Vela and benchmark_app run here for real (both come with the ``test`` extra), once per module, on the sample
models; each picture is checked against the tool's own file, read here with ``csv``, not by the readers:
every operator the tool reports carries the tool's number in its tooltip, and the rows that name no operator are
counted in the coverage line. TensorRT needs a GPU: its reader is checked on the fixtures built from NVIDIA's
documented formats (tests/fixtures/tensorrt/README.md).
"""

from __future__ import annotations

import csv
import json
import re
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ONNX, ROOT, TFLITE, first_fill, one_line_error, parse_svg, run_cli, svg_groups, tooltip_of
from picture_checks import close, shown

FIXTURES = ROOT / "tests" / "fixtures"
TINY_INT8 = TFLITE / "tiny_keras_int8_asymmetric.tflite"
NABU = TFLITE / "okay_nabu.tflite"
TRT = FIXTURES / "tensorrt"


def tool(name: str) -> Path:
    """A console script installed beside this Python (the ``test`` extra installs vela and benchmark_app)."""
    path = Path(sys.executable).parent / name
    assert path.is_file(), f"{name} is not installed in this environment (pip install -e '.[test]')"
    return path


def tooltip_values(text: str) -> dict[str, str]:
    """An operator tooltip's annotation values (the ``key: value`` lines after its ``—`` rule), with ``name``:
    the node's name."""
    lines = text.splitlines()
    rule = lines.index("—") if "—" in lines else len(lines)
    values = dict(line.split(": ", 1) for line in lines[rule + 1:] if ": " in line)
    values["name"] = next((line[6:] for line in lines[:rule] if line.startswith("name: ")), "")
    return values


def tooltips(svg: Path) -> dict[str, dict[str, str]]:
    """Operator element id → its tooltip's annotation values."""
    return {element_id: tooltip_values(tooltip_of(group))
            for element_id, group in svg_groups(parse_svg(svg), "op").items()}


def render(model: Path, annotations: Path, out: Path, *more: str) -> str:
    run = run_cli("render", model, "-a", annotations, "-o", out, *more)
    assert run.returncode == 0, run.stderr
    return run.stderr


def element_ids_by_output(model_path: Path) -> dict[str, str]:
    """Output tensor name → element id of the operator writing it (from the loaded model)."""
    import renderer

    model = renderer.load_model(model_path)
    return {v.name: n.element_id for n in model.nodes() for v in n.outputs}


# ---- Arm Vela ---------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def vela_out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """vela run on the int8 samples (Ethos-U55 defaults), its per-layer CSVs in the returned folder; and on
    tiny_keras with its MAX_POOL_2D left to the CPU (``--ignore-ops``), in ``maxpool_on_cpu/``."""
    out = tmp_path_factory.mktemp("vela")
    runs = [(TINY_INT8, out), (NABU, out), (TINY_INT8, out / "maxpool_on_cpu", "--ignore-ops", "MAX_POOL_2D")]
    for model, folder, *more in runs:
        done = subprocess.run([tool("vela"), model, "--verbose-performance", "--output-dir", folder, *more],
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stdout + done.stderr
    return out


def vela_rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def test_vela_colours_an_int8_model_by_npu_cycles_and_marks_cpu_operators(vela_out: Path, tmp_path: Path) -> None:
    per_layer = vela_out / "tiny_keras_int8_asymmetric_per-layer.csv"
    rows = vela_rows(per_layer)
    assert {r["Target"] for r in rows} == {"NPU", "CPU"}, "the sample should have operators on both"
    svg = tmp_path / "m.svg"
    err = render(TINY_INT8, per_layer, svg)
    assert "(vela): matched 10/10 operators" in err and "colouring by op_cycles" in err, err
    tips = tooltips(svg)
    ids = element_ids_by_output(TINY_INT8)
    # every cycle Vela counted is on some operator, none twice
    assert sum(shown(t["op_cycles"]) for t in tips.values() if "op_cycles" in t) == sum(
        int(r["Op Cycles"]) for r in rows)
    # an operator Vela reports under its own output tensor carries its target, and its cycles (NPU) or none (CPU)
    groups = svg_groups(parse_svg(svg), "op")
    for row in rows:
        element = ids.get(row["Name"])
        if element is None:
            continue  # a tensor Vela made (a decomposed Softmax's parts): counted in the total above
        assert tips[element]["target"] == row["Target"], row
        border = [p for p in groups[element].iter() if p.get("stroke-dasharray")]
        if row["Target"] == "CPU":
            assert "op_cycles" not in tips[element] and border and border[0].get("stroke") == "#d62728", row
        else:
            assert shown(tips[element]["op_cycles"]) >= int(row["Op Cycles"]) and not border, row
    # the hottest operator is the Add (one row, no other operator comes close), filled apart from the CPU ones
    add = ids["tiny_keras_1/block_add_1/Add"]
    hottest = max((t for t in tips if "op_cycles" in tips[t]), key=lambda t: shown(tips[t]["op_cycles"]))
    assert hottest == add and shown(tips[add]["op_cycles"]) == max(int(r["Op Cycles"]) for r in rows)
    cpu_fills = {first_fill(groups[ids[r["Name"]]]) for r in rows if r["Target"] == "CPU"}
    assert len(cpu_fills) == 1 and first_fill(groups[add]) not in cpu_fills
    picture = svg.read_text(encoding="utf-8")  # the legend's rows
    assert "on the CPU (red dashed border)" in picture and "2 of 10 operators" in picture


def test_vela_an_operator_falling_back_mid_graph(vela_out: Path, tmp_path: Path) -> None:
    """Vela told to leave MAX_POOL_2D to the CPU: that box, between NPU operators, is the marked one."""
    per_layer = vela_out / "maxpool_on_cpu" / "tiny_keras_int8_asymmetric_per-layer.csv"
    cpu_rows = [r for r in vela_rows(per_layer) if r["Target"] == "CPU"]
    assert [r["Original Operator"] for r in cpu_rows] == ["Quantize", "MaxPool", "Dequantize"]
    svg = tmp_path / "m.svg"
    render(TINY_INT8, per_layer, svg)
    ids = element_ids_by_output(TINY_INT8)
    pool = ids["tiny_keras_1/pool_1/MaxPool2d"]
    groups = svg_groups(parse_svg(svg), "op")
    dashed = {i for i, g in groups.items() if any(p.get("stroke") == "#d62728" for p in g.iter()
                                                  if p.get("stroke-dasharray"))}
    assert dashed == {ids[r["Name"]] for r in cpu_rows} and pool in dashed
    assert tooltips(svg)[pool]["target"] == "CPU" and "3 of 10 operators" in svg.read_text(encoding="utf-8")


def test_vela_rows_of_a_decomposed_softmax_add_up_on_it(vela_out: Path, tmp_path: Path) -> None:
    per_layer = vela_out / "tiny_keras_int8_asymmetric_per-layer.csv"
    rows = vela_rows(per_layer)
    softmax = [r for r in rows if r["Original Operator"] == "Softmax"]
    assert len(softmax) > 5 and len({r["Name"] for r in softmax}) > 5  # Vela split it and named the parts
    svg = tmp_path / "m.svg"
    render(TINY_INT8, per_layer, svg)
    tip = tooltips(svg)[element_ids_by_output(TINY_INT8)["StatefulPartitionedCall_1:01"]]
    assert shown(tip["op_cycles"]) == sum(int(r["Op Cycles"]) for r in softmax)
    assert close(tip["mac_count"], sum(int(r["MAC Count"]) for r in softmax))
    assert tip["vela_ops"].count(" + ") == len(softmax) - 1


def test_vela_operators_without_outputs_and_a_second_subgraph(vela_out: Path, tmp_path: Path) -> None:
    """okay_nabu's ASSIGN_VARIABLE has no output: Vela names it placeholder-for-<index>-OFM."""
    import renderer

    per_layer = vela_out / "okay_nabu_per-layer.csv"
    rows = vela_rows(per_layer)
    svg = tmp_path / "n.svg"
    err = render(NABU, per_layer, svg)
    assert f"matched {len(rows)}/{len(rows)} operators" in err, err
    tips = tooltips(svg)
    model = renderer.load_model(NABU)
    for row in rows:
        found = re.fullmatch(r"placeholder-for-(\d+)-OFM", row["Name"])
        if found:
            node = model.graphs[1].nodes[int(found.group(1))]
            assert node.op_type == "ASSIGN_VARIABLE" and not node.outputs
            assert tips[node.element_id]["target"] == row["Target"] == "CPU"


def test_vela_legacy_core_layout() -> None:
    """The legacy core's header (``TFLite_operator``, two ``Network%``) read from its real output."""
    import renderer
    from renderer.annotations.registry import load_annotations

    path = FIXTURES / "vela" / "tiny_keras_int8_asymmetric.legacy_per-layer.csv"
    model = renderer.load_model(TINY_INT8)
    annotations = load_annotations(path, model, embedded=False)
    [coverage] = annotations.coverage
    assert coverage.matched_ops == coverage.total_ops == 5, coverage.line()
    add = next(e for k, e in annotations.ops.items() if model.graphs[0].nodes[k[2]].op_type == "ADD")
    assert add.values["op_cycles"] == 3072.0 and add.values["mac_percent"] == 0.0
    assert add.values["cycles_percent"] == pytest.approx(34.8477, rel=1e-5)


def test_vela_bad_number_names_the_line(tmp_path: Path) -> None:
    lines = (FIXTURES / "vela" / "tiny_keras_int8_asymmetric_per-layer.csv").read_text().splitlines()
    lines[2] = lines[2].replace(",1984,", ",lots,", 1)  # the first Conv2D row
    bad = tmp_path / "bad_per-layer.csv"
    bad.write_text("\n".join(lines) + "\n")
    error = one_line_error(run_cli("render", TINY_INT8, "-a", bad, "-o", tmp_path / "x.svg"))
    assert f"{bad}:3:42: Op Cycles 'lots' is not a number" in error
    assert not (tmp_path / "x.svg").exists()


# ---- OpenVINO ------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def openvino_out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """benchmark_app's detailed counters (two infer requests) and execution graph for two ONNX samples, in
    sub-folders."""
    out = tmp_path_factory.mktemp("openvino")
    for name in ("tiny_cnn", "light_squeezenet"):
        folder = out / name
        folder.mkdir()
        done = subprocess.run(
            [tool("benchmark_app"), "-m", ONNX / f"{name}.onnx", "-d", "CPU", "-niter", "8", "-nireq", "2",
             "-nstreams", "2", "-hint", "none", "-report_type", "detailed_counters", "-report_folder", folder,
             "-exec_graph_path", folder / "exec_graph.xml"],
            capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return out


def openvino_tables(path: Path) -> list[list[list[str]]]:
    """The report's tables (one per infer request), each a list of rows' cells, header and Total left out."""
    tables: list[list[list[str]]] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("layerName;"):
            tables.append([])
        elif line and not line.startswith("Total;"):
            tables[-1].append(line.split(";"))
    return tables


def onnx_resolver(model_path: Path):  # type: ignore[no-untyped-def]
    """OpenVINO layer name → the ONNX node name it stands for (itself, a tensor's producer, without
    ``/WithoutBiases``), else None."""
    import onnx

    graph = onnx.load(str(model_path)).graph
    nodes = {n.name for n in graph.node}
    producers = {o: n.name for n in graph.node for o in n.output}

    def resolve(name: str) -> str | None:
        return next((producers.get(c, c) for c in (name, name.removesuffix("/WithoutBiases"))
                     if c in nodes or c in producers), None)

    return resolve


def check_openvino_picture(model_path: Path, report: Path, svg: Path, err: str) -> dict[str, float]:
    """Every executed layer named after an ONNX node (or ``<node>/WithoutBiases``) shows its mean real time on
    that node; the layers naming nothing are the coverage line's unmatched ids. Returns node → µs."""
    resolve = onnx_resolver(model_path)
    tables = openvino_tables(report)
    assert len(tables) == 2
    times: dict[str, list[float]] = {}
    unmatched = set()
    for table in tables:
        for name, status, layer_type, _, real, _ in table:
            if layer_type in ("Parameter", "Result"):
                continue
            node = resolve(name)
            if node is None:
                unmatched.add(name)
            elif status.endswith("EXECUTED"):
                times.setdefault(node, []).append(float(real) * 1000)
    tips = {t.get("name"): t for t in _named_tooltips(svg)}
    expected = {node: statistics.fmean(values) for node, values in times.items()}
    for node, micros in expected.items():
        assert close(tips[node]["real_time_us"], micros), (node, tips[node], micros)
    if unmatched:
        assert f"{len(unmatched)} ids unmatched" in err, err
    else:
        assert "unmatched" not in err, err
    return expected


def _named_tooltips(svg: Path) -> list[dict[str, str]]:
    return list(tooltips(svg).values())


def test_openvino_times_land_on_the_onnx_nodes(openvino_out: Path, tmp_path: Path) -> None:
    report = openvino_out / "light_squeezenet" / "benchmark_detailed_counters_report.csv"
    svg = tmp_path / "sq.svg"
    err = render(ONNX / "light_squeezenet.onnx", report, svg)
    assert "colouring by real_time_us" in err
    expected = check_openvino_picture(ONNX / "light_squeezenet.onnx", report, svg, err)
    assert len(expected) > 20  # the convolutions (``nN/WithoutBiases``), pools, concats


def test_openvino_renamed_and_inserted_layers_are_counted(openvino_out: Path, tmp_path: Path) -> None:
    """tiny_cnn's Conv + BatchNormalization become ``Multiply_N`` layers, named after no node: reported, and the
    fused Relu says it did not run instead of showing 0 µs."""
    report = openvino_out / "tiny_cnn" / "benchmark_detailed_counters_report.csv"
    svg = tmp_path / "t.svg"
    err = render(ONNX / "tiny_cnn.onnx", report, svg)
    check_openvino_picture(ONNX / "tiny_cnn.onnx", report, svg, err)
    assert re.search(r"Multiply_\d+ \(Convolution, [\d.]+ µs\)", err), err
    tips = {t["name"]: t for t in _named_tooltips(svg)}
    assert tips["stem/relu"]["exec_status"] == "NOT_RUN" and "real_time_us" not in tips["stem/relu"]


@pytest.mark.parametrize("name", ["tiny_cnn", "light_squeezenet"])
def test_openvino_execution_graph_attributes_fused_layers(name: str, openvino_out: Path, tmp_path: Path) -> None:
    """Each executed layer's execTimeMcs lands on the first node its originalLayersNames reaches; the other
    nodes fused into it point there; layers reaching no node are the coverage line's unmatched ids."""
    from xml.etree import ElementTree

    model_path = ONNX / f"{name}.onnx"
    graph = openvino_out / name / "exec_graph.xml"
    svg = tmp_path / "exec.svg"
    err = render(model_path, graph, svg)
    assert "colouring by exec_time_us" in err
    resolve = onnx_resolver(model_path)
    expected: dict[str, float] = {}
    pointing: dict[str, str] = {}
    unmatched = 0
    for layer in ElementTree.parse(graph).getroot().iterfind("layers/layer"):
        data = layer.find("data").attrib
        if layer.get("type") in ("Input", "Output", "Const") or data["execTimeMcs"] == "not_executed":
            continue
        nodes = list(dict.fromkeys(n for n in map(resolve, data["originalLayersNames"].split(",")) if n))
        if not nodes:
            unmatched += 1
            continue
        expected[nodes[0]] = expected.get(nodes[0], 0) + float(data["execTimeMcs"])
        pointing.update({node: nodes[0] for node in nodes[1:]})
    tips = {t["name"]: t for t in _named_tooltips(svg)}
    for node, micros in expected.items():
        assert close(tips[node]["exec_time_us"], micros), (node, tips[node])
    for node, anchor in pointing.items():
        assert tips[node]["time_on"] == anchor and (node in expected or "exec_time_us" not in tips[node])
    assert f"{unmatched} ids unmatched" in err, err
    if name == "light_squeezenet":  # the Relus fused into the convolutions point to them
        assert tips["n1"]["time_on"] == "n0" and "exec_time_us" in tips["n0"]


def test_openvino_semicolons_in_names_and_bad_times(tmp_path: Path) -> None:
    import renderer
    from renderer.annotations.registry import load_annotations

    header = "layerName;execStatus;layerType;execType;realTime (ms);cpuTime (ms);"
    report = tmp_path / "benchmark_detailed_counters_report.csv"
    report.write_text(f"{header}\nstem/conv;EXECUTED;Convolution;jit;0.250000;0.240000;\n"
                      f"odd;name;EXECUTED;Reorder;ref;0.001000;0.001000;\nTotal;;;;0.251;0.241;\n\n")
    annotations = load_annotations(report, renderer.load_model(ONNX / "tiny_cnn.onnx"), embedded=False)
    [entry] = annotations.ops.values()
    assert entry.values["real_time_us"] == 250.0 and entry.values["cpu_time_us"] == 240.0
    assert annotations.coverage[0].unmatched == ["odd;name (Reorder, 1 µs)"]
    report.write_text(f"{header}\nstem/conv;EXECUTED;Convolution;jit;fast;0.24;\n")
    error = one_line_error(run_cli("render", ONNX / "tiny_cnn.onnx", "-a", report, "-o", tmp_path / "x.svg"))
    assert f"{report}:2:36: realTime (ms) 'fast' is not a number" in error


# ---- TensorRT (fixtures) -----------------------------------------------------------------------------------------


def trt_layers(path: Path = TRT / "tiny_cnn.profile.json") -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))[1:]


def onnx_names(metadata: str) -> list[str]:
    return [part.removeprefix("[ONNX Layer: ").removesuffix("]") for part in metadata.split("\x1f") if part]


def test_tensorrt_fused_layers_map_onto_their_onnx_nodes(tmp_path: Path) -> None:
    info = {layer["Name"]: layer for layer in json.loads((TRT / "tiny_cnn.layers.json").read_text())["Layers"]}
    svg = tmp_path / "trt.svg"
    err = render(ONNX / "tiny_cnn.onnx", TRT / "tiny_cnn.profile.json", svg)
    assert "colouring by average_ms" in err
    tips = {t["name"]: t for t in _named_tooltips(svg)}
    unmatched = []
    for layer in trt_layers():
        names = onnx_names(info[layer["name"]]["Metadata"])
        if not names:
            unmatched.append(layer["name"])
            continue
        assert close(tips[names[0]]["average_ms"], layer["averageMs"]), layer
        for name in names:
            assert tips[name]["trt_layer"] == layer["name"] and tips[name]["layer_type"] == info[layer["name"]][
                "LayerType"]
            assert name == names[0] or (tips[name]["time_on"] == names[0] and "average_ms" not in tips[name])
    assert len(unmatched) == 1 and f"1 ids unmatched: {unmatched[0]}" in err, err
    assert "tiny_cnn.layers.json" in svg.read_text(encoding="utf-8")  # the legend names the layer info used


def test_tensorrt_without_layer_info_reads_the_fused_names(tmp_path: Path) -> None:
    """Without the layer information a Myelin layer names no node: it joins the inserted one in coverage."""
    svg = tmp_path / "trt.svg"
    err = render(ONNX / "tiny_cnn.onnx", TRT / "names_only" / "trtexec_profile.json", svg)
    assert "2 ids unmatched: Reformatting CopyNode" in err and "{ForeignNode[head/flatten...head/softmax]}" in err
    tips = {t["name"]: t for t in _named_tooltips(svg)}
    fused = next(layer for layer in trt_layers() if layer["name"].startswith("block1/pwconv"))
    assert close(tips["block1/pwconv"]["average_ms"], fused["averageMs"])
    assert tips["block1/relu2"]["time_on"] == "block1/pwconv"


def test_tensorrt_raw_separators_and_bad_profiles(tmp_path: Path) -> None:
    """Layer info with the separator written raw (not ``\\u001f``) is read; a profile without its count header
    or with a non-numeric time is one error naming the file."""
    import renderer
    from renderer.annotations.registry import load_annotations

    profile = tmp_path / "run.profile.json"
    profile.write_bytes((TRT / "tiny_cnn.profile.json").read_bytes())
    raw = (TRT / "tiny_cnn.layers.json").read_text().replace("\\u001f", "\x1f")
    assert "\x1f" in raw
    (tmp_path / "run.layers.json").write_text(raw)
    model = renderer.load_model(ONNX / "tiny_cnn.onnx")
    annotations = load_annotations(profile, model, embedded=False)
    assert annotations.coverage[0].matched_ops == 18
    profile.write_text('[\n  { "count" : 3 }\n, { "name" : "stem/pool", "timeMs" : 1, "averageMs" : "fast" }\n]\n')
    error = one_line_error(run_cli("render", ONNX / "tiny_cnn.onnx", "-a", profile, "-o", tmp_path / "x.svg"))
    assert f"{profile}:3: entry 1 ('stem/pool') has no numeric 'averageMs'" in error


def test_openvino_execution_graph_errors(tmp_path: Path) -> None:
    """An IR without performance counters, broken XML and an external entity: one error naming the file."""
    graph = tmp_path / "exec_graph.xml"
    model = ONNX / "tiny_cnn.onnx"
    cases = {
        '<?xml version="1.0"?>\n<net name="m" version="11">\n<layers>\n<layer id="0" name="stem/conv" '
        'type="Convolution"><data strides="1,1"/></layer>\n</layers>\n</net>\n': "no layer has an execTimeMcs",
        '<?xml version="1.0"?>\n<net name="m" version="11">\n<layers>\n<layer id="0" name="x"\n': f"{graph}:",
        '<?xml version="1.0"?>\n<!DOCTYPE net [<!ENTITY secret SYSTEM "file:///etc/hostname">]>\n'
        '<net name="m" version="11">\n<layers>\n<layer id="0" name="stem/conv" type="Convolution"><data '
        'execTimeMcs="5" originalLayersNames="&secret;"/></layer>\n</layers>\n</net>\n': f"{graph}:",
    }
    for text, expected in cases.items():
        graph.write_text(text, encoding="utf-8")
        error = one_line_error(run_cli("render", model, "-a", graph, "-o", tmp_path / "x.svg"))
        assert expected in error and str(graph) in error, error


def test_vela_unquoted_name_with_commas(tmp_path: Path) -> None:
    """Vela 5 joins cells with commas and quotes nothing: a tensor name holding commas spreads over the last
    cells, and is still the name."""
    import payloads
    import renderer
    from registry import _vela  # the injection file: rows named by the hostile model's tensors
    from renderer.annotations.registry import load_annotations

    (tmp_path / "m.tflite").write_bytes(payloads.hostile_tflite("a,b, c"))
    name, data = _vela("a,b, c")
    path = tmp_path / name
    path.write_bytes(data)
    model = renderer.load_model(tmp_path / "m.tflite")
    annotations = load_annotations(path, model, embedded=False)
    by_index = {key[2]: entry.values for key, entry in annotations.ops.items()}
    assert by_index[0]["op_cycles"] == 120 and by_index[0]["target"] == "NPU"
    assert by_index[1]["target"] == "CPU" and "op_cycles" not in by_index[1]
    assert annotations.coverage[0].unmatched == ["a,b, c·missing (a b  c/Mul)"]


def test_tensorrt_layer_info_with_names_only(tmp_path: Path) -> None:
    """An engine built without detailed verbosity lists its layers as bare names: the names are split then."""
    import renderer
    from renderer.annotations.registry import load_annotations

    profile = tmp_path / "run_profile.json"
    profile.write_bytes((TRT / "tiny_cnn.profile.json").read_bytes())
    names = [layer["name"] for layer in trt_layers()]
    (tmp_path / "run_layers.json").write_text(json.dumps({"Layers": names, "Bindings": ["image", "probs"]}))
    annotations = load_annotations(profile, renderer.load_model(ONNX / "tiny_cnn.onnx"), embedded=False)
    [coverage] = annotations.coverage
    assert coverage.matched_ops == 15 and len(coverage.unmatched) == 2  # as with no layer information
    assert annotations.graph.values["TensorRT layer info"] == "run_layers.json"
