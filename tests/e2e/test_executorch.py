"""ExecuTorch programs (``.pte``) and their ETDumps, made by executorch itself.

Two sets of artefacts, each made by ``tests/support/executorch_models.py`` (``to_edge().to_executorch()``, and
the XNNPACK partitioner; ``generate_etrecord``; the pybindings runtime with ``enable_etdump=True``; the devtools
Inspector's dataframe as ``NAME.inspector.json``): the committed ones in ``tests/fixtures/executorch/``, and, when the
executorch venv is there (``ANNOGRAPH_EXECUTORCH_PYTHON``, made by ``scripts/test``), fresh ones made in this run,
with executorch's own reading of the program (``NAME.program.json``) as the reference for what is drawn.
"""

from __future__ import annotations

import json
import math
import os
import shutil
from pathlib import Path

import pytest

import executorch_models
import payloads as P
from conftest import ROOT, SVG_NS, one_line_error, parse_svg, run_cli, svg_groups, tooltip_of

FIXTURES = executorch_models.COMMITTED
MODELS = ("portable", "xnnpack")
STATS = {"avg_ms": "avg (ms)", "p50_ms": "p50 (ms)", "p10_ms": "p10 (ms)", "p90_ms": "p90 (ms)",
         "min_ms": "min (ms)", "max_ms": "max (ms)"}


@pytest.fixture(scope="module", params=["committed", "fresh"])
def artefacts(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return executorch_models.artefacts(request.param, tmp_path_factory.mktemp("executorch"))


def _load(path: Path):  # type: ignore[no-untyped-def]
    from renderer.loaders import load_model

    return load_model(path)


def _inspector(folder: Path, name: str) -> list[dict]:
    return json.loads((folder / f"{name}.inspector.json").read_text())


def _kernel(node) -> str:  # type: ignore[no-untyped-def]
    return node.metadata.get("kernel", "")


def test_kernel_calls_are_operators_and_delegates_one_box(artefacts: Path, tmp_path: Path) -> None:
    """Every kernel call is one box, in instruction order, named by its operator (as executorch's own reading of
    the file lists them); the XNNPACK delegate is one box listing the edge operators it holds; the Inspector's
    kernel events name the same kernels."""
    portable, xnnpack = _load(artefacts / "portable.pte"), _load(artefacts / "xnnpack.pte")
    for model, name in ((portable, "portable"), (xnnpack, "xnnpack")):
        listing = json.loads((artefacts / f"{name}.program.json").read_text())
        assert [[n.domain == "delegate" and "delegate" or "kernel", _kernel(n) or n.op_type]
                for n in model.main.nodes] == listing["instructions"]
        sizes = {int(v.metadata["evalue"]): list(v.type.shape) for v in model.main.values}
        assert sizes == {index: shape for index, shape, _ in listing["tensors"] if shape != [0]}
    assert [_kernel(n) for n in portable.main.nodes] == ["aten::convolution.out", "aten::relu.out",
                                                         "aten::permute_copy.out", "aten::addmm.out",
                                                         "aten::topk.values"]
    assert [n.metadata["instruction"] for n in portable.main.nodes] == ["0", "1", "2", "3", "4"]
    kernels = [r["event_name"] for r in _inspector(artefacts, "portable")
               if r["event_name"].startswith("native_call_")]
    assert kernels == ["native_call_" + _kernel(n).split("::")[1] for n in portable.main.nodes]
    delegate, topk = xnnpack.main.nodes
    assert (delegate.op_type, delegate.domain, topk.op_type) == ("XnnpackBackend", "delegate", "topk")
    assert delegate.attributes["holds"] == ["convolution", "relu", "view_copy", "linear"]
    assert delegate.attributes["blob_bytes"] > 0
    # read from the XNNPACK blob itself: one node per event the backend logged (Transpose, Convolution, …)
    assert delegate.attributes["xnnpack_nodes"] == ["StaticTranspose", "Conv2d", "StaticTranspose", "StaticReshape",
                                                    "FullyConnected"]
    assert len([r for r in _inspector(artefacts, "xnnpack") if r["is_delegated_op"]]) == 5
    for model, name in ((portable, "portable"), (xnnpack, "xnnpack")):
        svg = tmp_path / f"{name}.svg"
        done = run_cli("render", artefacts / f"{name}.pte", "-o", svg, "--collapse", "none")
        assert done.returncode == 0, done.stderr
        boxes = svg_groups(parse_svg(svg), "node")
        ops = sorted(k for k in boxes if k.startswith("op-"))
        assert ops == sorted(n.element_id for n in model.main.nodes if n.op_type != "permute_copy")
        assert "XnnpackBackend" in tooltip_of(boxes["op-0-0"]) or name == "portable"


def test_shapes_dtypes_and_weights(artefacts: Path) -> None:
    """Tensors carry the program's sizes and scalar types; constants are the weights, named by the ETRecord."""
    import numpy as np

    model = _load(artefacts / "portable.pte")
    conv, relu, permute, addmm, topk = model.main.nodes
    assert [v.name for v in conv.inputs] == ["x", "stem.conv.weight", "stem.conv.bias"]
    assert str(conv.inputs[0].type) == "float32[1×3×8×8]" and str(conv.outputs[0].type) == "float32[1×8×8×8]"
    weight = conv.inputs[1].initializer.numpy()
    assert weight.shape == (8, 3, 3, 3) and weight.dtype == np.float32 and np.isfinite(weight).all()
    assert conv.attributes["stride"] == [1, 1] and conv.attributes["padding"] == [1, 1]
    assert addmm.inputs[1].metadata.get("view_of") == relu.outputs[0].name  # the flatten, a view in memory
    assert str(addmm.inputs[1].type) == "float32[1×512]" and str(permute.outputs[0].type) == "float32[512×10]"
    assert [str(v.type) for v in topk.outputs] == ["float32[1×3]", "int64[1×3]"]
    assert model.main.inputs == [conv.inputs[0]] and model.main.outputs == [topk.outputs[0]]


def test_macs_of_a_conv_and_a_linear_by_hand(artefacts: Path, tmp_path: Path) -> None:
    """conv 3→8, 3×3, on 8×8 with bias: 8·8·8 outputs × 3·3·3 + 512 bias adds; the linear (addmm) 512→10:
    10 × 512 + 10. Read back from ``annograph metrics``."""
    out = tmp_path / "metrics.json"
    done = run_cli("metrics", artefacts / "portable.pte", "-o", out)
    assert done.returncode == 0, done.stderr
    macs = {row["id"]: row["meta"]["macs"] for row in json.loads(out.read_text())["operators"]}
    assert macs["0:0"] == 8 * 8 * 8 * 3 * 3 * 3 + 8 * 8 * 8
    assert macs["0:3"] == 10 * 512 + 10
    assert macs["0:1"] == 512 and macs["0:2"] == 0


@pytest.mark.parametrize("name", MODELS)
def test_etdump_times_equal_the_inspectors(name: str, artefacts: Path) -> None:
    """Each kernel's p50/avg/min/max/p10/p90 equal the Inspector's row of its kernel event; the delegate's are its
    DELEGATE_CALL row's, and the events its backend logged sum to ``delegated_ms``."""
    from renderer.annotations import load_annotations

    model = _load(artefacts / f"{name}.pte")
    annotations = load_annotations([artefacts / f"{name}.etdp"], model, embedded=False, sidecar=False)
    (coverage,) = annotations.coverage
    assert (coverage.matched_ops, coverage.total_ops, coverage.unmatched) == (len(model.main.nodes),) * 2 + ([],)
    rows = [r for r in _inspector(artefacts, name) if r["event_block_name"] == "Execute"]
    for node in model.main.nodes:
        values = annotations.ops[node.key].values
        event = "DELEGATE_CALL" if node.domain == "delegate" else "native_call_" + _kernel(node).split("::")[1]
        (row,) = [r for r in rows if r["event_name"] == event]
        assert {k: values[k] for k in STATS} == {k: row[column] for k, column in STATS.items()}, node
        if node.domain == "delegate":
            delegated = [r for r in rows if r["is_delegated_op"]]
            assert values["delegated_events"] == len(delegated) > 0
            assert values["delegated_ms"] == pytest.approx(sum(r["avg (ms)"] for r in delegated), rel=1e-9)
        else:  # the runtime's call around the kernel is the row after it
            call = rows[rows.index(row) + 1]
            assert call["event_name"] == "OPERATOR_CALL" and values["call_avg_ms"] == call["avg (ms)"]
    (execute,) = [r for r in rows if r["event_name"] == "Method::execute"]
    assert annotations.graph.values["Method::execute avg_ms"] == execute["avg (ms)"]


def test_etdump_times_land_on_the_boxes(tmp_path: Path) -> None:
    """Rendered: each box's tooltip has its own avg_ms, and the picture is coloured by it."""
    from renderer.annotations import load_annotations

    model = _load(FIXTURES / "portable.pte")
    annotations = load_annotations([FIXTURES / "portable.etdp"], model, embedded=False, sidecar=False)
    svg = tmp_path / "p.svg"
    done = run_cli("render", FIXTURES / "portable.pte", "-a", FIXTURES / "portable.etdp", "-o", svg,
                   "--collapse", "none")
    assert done.returncode == 0 and "colouring by avg_ms" in done.stderr, done.stderr
    assert "matched 5/5 operators" in done.stderr
    boxes = svg_groups(parse_svg(svg), "node")
    from renderer.core.numbers import format_number

    for node in model.main.nodes:
        if node.element_id in boxes:
            shown = format_number(annotations.ops[node.key].values["avg_ms"])
            assert f"avg_ms: {shown}" in tooltip_of(boxes[node.element_id]).replace("\n", " ") or \
                shown in "".join(t.text or "" for t in boxes[node.element_id].iter(f"{SVG_NS}text")), node


def test_module_groups_come_from_the_etrecord(tmp_path: Path) -> None:
    """With the ETRecord beside the program, operators are named as the edge graph names them and grouped by
    their modules (``stem``/``conv``, ``head``); alone, they are ``kernel_I`` with no groups."""
    from renderer.picture.grouping import group_model, scope_of

    model = _load(FIXTURES / "portable.pte")
    assert model.metadata["etrecord"].endswith("portable.etrecord")
    assert [(n.name, scope_of(n)) for n in model.main.nodes] == [
        ("aten_convolution_default", ("stem", "conv")), ("aten_relu_default", ("stem",)),
        ("aten_permute_copy_default", ("head",)), ("aten_addmm_default", ("head",)), ("aten_topk_default", ())]
    alone = tmp_path / "portable.pte"
    shutil.copy(FIXTURES / "portable.pte", alone)
    bare = _load(alone)
    assert [n.name for n in bare.main.nodes] == [f"kernel_{i}" for i in range(5)]
    assert not any(scope_of(n) for n in bare.main.nodes)
    assert bare.main.nodes[0].inputs[1].name == "value_0"
    root = group_model(model, lambda node: True, max_items=3)  # small pages: the modules stay groups
    assert [(g.kind, g.label, [n.op_type for n in g.nodes]) for g in root.children] == [
        ("scope", "stem", ["convolution", "relu"]), ("scope", "head", ["permute_copy", "addmm"])]


def test_costs_do_not_need_the_etrecord(artefacts: Path, tmp_path: Path) -> None:
    """Without its ETRecord a kernel's arguments are named by position (``arg6``, not ``transposed``): the MACs
    counted from the ATen table are the same as with it, kernel by kernel."""
    from renderer.metrics.builtin import compute

    for name in MODELS:
        alone = tmp_path / f"{name}.pte"
        shutil.copy(artefacts / f"{name}.pte", alone)
        named, bare = _load(artefacts / f"{name}.pte"), _load(alone)
        assert any(k.startswith("arg") for n in bare.main.nodes for k in n.attributes)
        counted = [compute(model, {"macs"}, set())[0] for model in (named, bare)]
        assert counted[0] == counted[1] and any(v.get("macs") for v in counted[0].values())


LOWERED = {"convolution": "conv2d", "hardtanh": "hardtanh", "max_pool2d_with_indices": "max_pool2d",
           "upsample_bilinear2d": "upsample_bilinear2d", "avg_pool2d": "avg_pool2d", "addmm": "linear",
           "clamp": "clamp", "topk": "topk"}
"""ExecuTorch kernel → the ATen operator of the torch.export program it was lowered from (``layers``)."""


def test_kernels_count_as_the_operators_they_were_lowered_from(artefacts: Path, tmp_path: Path) -> None:
    """One ATen table for both formats: each kernel of the ``layers`` program has the category and the MACs of the
    torch.export operator it runs, with its ETRecord (arguments by name) or alone (by position: ``arg1`` is the
    pool's kernel_size). By hand: conv 6×8×8 outputs × 4·3·3 + bias = 14,208; 2×2 max pool to 6×4×4 = 384; bilinear
    ×2 to 6×8×8, 4 taps each = 1,536."""
    pytest.importorskip("torch")
    import torch_models as TM
    from renderer.metrics.builtin import compute

    exported = TM.write(tmp_path, "layers.pt2", TM.pt2("layers"))
    alone = tmp_path / "alone" / "layers.pte"
    alone.parent.mkdir()
    shutil.copy(artefacts / "layers.pte", alone)
    torch_model = _load(exported)
    torch_nodes = {n.op_type: n for n in torch_model.main.nodes}
    torch_macs = compute(torch_model, {"macs"}, set())[0]
    for program in (artefacts / "layers.pte", alone):
        model = _load(program)
        macs = compute(model, {"macs"}, set())[0]
        kernels = [n for n in model.main.nodes if n.op_type in LOWERED]
        assert sorted(n.op_type for n in kernels) == sorted(LOWERED)
        for node in kernels:
            twin = torch_nodes[LOWERED[node.op_type]]
            assert (node.category, macs[node.key]["macs"]) == (twin.category, torch_macs[twin.key]["macs"]), node
        by_type = {n.op_type: macs[n.key]["macs"] for n in kernels}
        assert (by_type["convolution"], by_type["max_pool2d_with_indices"], by_type["upsample_bilinear2d"]) == \
            (6 * 8 * 8 * 4 * 3 * 3 + 6 * 8 * 8, 6 * 4 * 4 * 4, 6 * 8 * 8 * 4)
        topk = next(n for n in kernels if n.op_type == "topk")
        assert by_type["topk"] == math.prod(topk.inputs[0].type.shape)  # a comparison per element, as ONNX TopK


def test_broken_programs_and_dumps_say_so_in_one_line(tmp_path: Path) -> None:
    data = (FIXTURES / "portable.pte").read_bytes()
    truncated = tmp_path / "truncated.pte"
    truncated.write_bytes(data[:600])
    error = one_line_error(run_cli("info", truncated))
    assert "truncated.pte" in error and "ExecuTorch" in error
    dump = tmp_path / "broken.etdp"
    dump.write_bytes((FIXTURES / "portable.etdp").read_bytes()[:200])
    error = one_line_error(run_cli("render", FIXTURES / "portable.pte", "-a", dump, "-o", tmp_path / "x.svg"))
    assert "broken.etdp" in error and "ETDump" in error
    bad_record = tmp_path / "program.pte"
    shutil.copy(FIXTURES / "portable.pte", bad_record)
    (tmp_path / "program.etrecord").write_bytes(b"PK\x03\x04 not a zip")
    model = _load(bad_record)
    assert any("program.etrecord" in note for note in model.notes) and model.main.nodes[0].name == "kernel_0"


def test_an_etdump_on_another_format_matches_nothing(tmp_path: Path) -> None:
    from renderer.annotations import load_annotations

    model = _load(ROOT / "samples" / "onnx" / "tiny_cnn.onnx")
    annotations = load_annotations([FIXTURES / "portable.etdp"], model, embedded=False, sidecar=False)
    (coverage,) = annotations.coverage
    assert coverage.matched_ops == 0 and len(coverage.unmatched) == 5
    assert any("not" in note or "ExecuTorch" in note for note in annotations.notes)


@pytest.mark.parametrize("payload", P.PAYLOADS, ids=lambda p: p.name)
def test_hostile_names_stay_inert(payload: P.Payload, tmp_path: Path) -> None:
    """A program with the payload as its method, operator, weight and delegate names, and an ETDump naming events
    after it: every output is checked as the injection tests check theirs."""
    from executorch_build import hostile_etdump
    from properties.test_injection import PER_PAYLOAD, SHORT, _options, check_all, hostile_annotations, render_all

    path = tmp_path / "hostile.pte"
    path.write_bytes(P.hostile_pte(payload.text))
    model = _load(path)
    assert model.main.name == payload.text and model.main.nodes[2].op_type == (payload.text or "unknown")
    assert model.main.nodes[0].inputs[1].name == payload.text + "·w"
    assert model.main.nodes[3].op_type == (payload.text or "delegate")
    dump = tmp_path / "hostile.etdp"
    dump.write_bytes(hostile_etdump(payload.text))
    annotations = hostile_annotations(payload.text, model, tmp_path, ids=["0", "0:1"])
    from renderer.annotations import load_annotations

    timed = load_annotations([dump], model, embedded=False, sidecar=False)
    assert timed.ops[model.main.nodes[0].key].values["event"] == payload.text[:100]
    annotations.ops.update(timed.ops)
    outputs = render_all(model, annotations, _options(payload.text), tmp_path, PER_PAYLOAD)
    check_all(outputs, tmp_path, payload.text if payload.name in SHORT else None)


def test_diff_batch_report_and_compare_take_programs(tmp_path: Path) -> None:
    """diff (times of one ETDump against another), batch and the HTML report read a program as they read ONNX;
    compare, which runs models, says in one line that it runs ONNX and TFLite only."""
    pte, dump = FIXTURES / "portable.pte", FIXTURES / "portable.etdp"
    done = run_cli("diff", pte, "--before", dump, "--after", dump, "-o", tmp_path / "d.svg", "--summary",
                   tmp_path / "d.md")
    assert done.returncode == 0 and "5 unchanged" in done.stderr, done.stderr
    assert "5 unchanged" in (tmp_path / "d.md").read_text()
    done = run_cli("batch", pte, "-a", dump, FIXTURES / "xnnpack.etdp", "-o", tmp_path / "batch")
    assert done.returncode == 0, done.stderr
    pictures = sorted((tmp_path / "batch").glob("*.svg"))
    assert len(pictures) == 2 and all(len([k for k in svg_groups(parse_svg(p), "node") if k.startswith("op-")]) == 4
                                      for p in pictures)
    done = run_cli("render", FIXTURES / "xnnpack.pte", "-a", FIXTURES / "xnnpack.etdp", "-o", tmp_path / "r.html")
    assert done.returncode == 0 and "XnnpackBackend" in (tmp_path / "r.html").read_text(), done.stderr
    error = one_line_error(run_cli("compare", pte, pte, "-o", tmp_path / "c.json"))
    assert "compare runs ONNX models" in error


def _op_titles(svg: Path) -> dict[str, str]:
    return {key: tooltip_of(group) for key, group in svg_groups(parse_svg(svg), "node").items()
            if key.startswith("op-")}


@pytest.mark.parametrize("name", MODELS)
def test_an_etrecord_given_names_a_program_found_alone(name: str, artefacts: Path, tmp_path: Path) -> None:
    """--etrecord gives a program alone in its folder what the ETRecord beside it gives: info, metrics, render,
    diff and batch name and group its operators as the edge graph does."""
    alone = tmp_path / "alone" / f"{name}.pte"
    alone.parent.mkdir()
    shutil.copy(artefacts / f"{name}.pte", alone)
    record = str(artefacts / f"{name}.etrecord")
    beside = _load(artefacts / f"{name}.pte")
    names = [n.name for n in beside.main.nodes]
    assert any(not n.startswith(("kernel_", "delegate_")) for n in names)
    done = run_cli("info", alone, "--json", "--etrecord", record)
    assert done.returncode == 0, done.stderr
    info = json.loads(done.stdout)
    assert [op["name"] for op in info["graphs"][0]["operators"]] == names and info["metadata"]["etrecord"] == record
    plain = json.loads(run_cli("info", alone, "--json").stdout)
    assert [op["name"] for op in plain["graphs"][0]["operators"]] != names
    for program, table in ((alone, "given.json"), (artefacts / f"{name}.pte", "beside.json")):
        done = run_cli("metrics", program, "--etrecord", record, "-o", tmp_path / table)
        assert done.returncode == 0 and "ETRecord" not in done.stderr, done.stderr
    assert (tmp_path / "given.json").read_bytes() == (tmp_path / "beside.json").read_bytes()
    for program, picture in ((alone, "given.svg"), (artefacts / f"{name}.pte", "beside.svg")):
        done = run_cli("render", program, "--etrecord", record, "-o", tmp_path / picture)
        assert done.returncode == 0, done.stderr
    titles = _op_titles(tmp_path / "given.svg")
    assert titles == _op_titles(tmp_path / "beside.svg") and titles
    for node in (n for n in beside.main.nodes if n.element_id in titles):
        assert f"name: {node.name}" in titles[node.element_id]
        module = node.metadata.get("module")
        assert module is None or f"module: {module}" in titles[node.element_id]
    dump = artefacts / f"{name}.etdp"
    done = run_cli("diff", alone, alone, "--before", dump, "--after", dump, "--etrecord", record,
                   "-o", tmp_path / "d.svg")
    assert done.returncode == 0, done.stderr
    titles = _op_titles(tmp_path / "d.svg")
    assert titles and all(f"name: {n.name}" in titles[n.element_id] for n in beside.main.nodes
                          if n.element_id in titles)
    done = run_cli("batch", alone, "-a", dump, "--etrecord", record, "-o", tmp_path / "batch")
    assert done.returncode == 0, done.stderr
    (picture,) = (tmp_path / "batch").glob("*.svg")
    titles = _op_titles(picture)
    assert titles and all(f"name: {n.name}" in titles[n.element_id] for n in beside.main.nodes
                          if n.element_id in titles)


def test_two_programs_take_their_etrecords_in_order(tmp_path: Path) -> None:
    """diff BEFORE AFTER of two programs takes one --etrecord each, in the programs' order; a count that does not
    fit, or one given to an ONNX model, is a usage error in one line."""
    for name in MODELS:
        shutil.copy(FIXTURES / f"{name}.pte", tmp_path / f"{name}.pte")
    records = [str(FIXTURES / f"{name}.etrecord") for name in MODELS]
    done = run_cli("diff", tmp_path / "portable.pte", tmp_path / "xnnpack.pte", "--metric", "params",
                   "--etrecord", records[0], "--etrecord", records[1], "-o", tmp_path / "d.svg")
    assert done.returncode == 0, done.stderr
    after = _load(FIXTURES / "xnnpack.pte")
    titles = _op_titles(tmp_path / "d.svg")
    assert f"name: {after.main.nodes[1].name}" in titles[after.main.nodes[1].element_id]
    assert "(1 by name" in done.stderr  # topk, named aten_topk_default by both ETRecords (kernel_4 and kernel_1 alone)
    error = one_line_error(run_cli("diff", tmp_path / "portable.pte", tmp_path / "xnnpack.pte", "--metric", "params",
                                   "--etrecord", records[0], "-o", tmp_path / "d2.svg"))
    assert "--etrecord is given 1 time for 2 ExecuTorch programs" in error
    error = one_line_error(run_cli("info", ROOT / "samples" / "onnx" / "tiny_cnn.onnx", "--etrecord", records[0]))
    assert "--etrecord" in error and "0 ExecuTorch programs" in error
    assert not (tmp_path / "d2.svg").exists()


def test_a_bad_etrecord_given_is_one_line_naming_it(tmp_path: Path) -> None:
    """A broken, missing or unreadable --etrecord, or the ETRecord of another program, stops the run in one line
    naming it, before anything is written; one of another program that happens to fit is said in a warning."""
    portable, xnnpack = tmp_path / "portable.pte", tmp_path / "xnnpack.pte"
    shutil.copy(FIXTURES / "portable.pte", portable)
    shutil.copy(FIXTURES / "xnnpack.pte", xnnpack)
    broken = tmp_path / "broken.etrecord"
    broken.write_bytes((FIXTURES / "portable.etrecord").read_bytes()[:3000])
    fifo = tmp_path / "fifo.etrecord"
    os.mkfifo(fifo)
    cases = [(portable, broken, "not a readable ETRecord"), (portable, tmp_path / "missing.etrecord", "no such file"),
             (portable, tmp_path, "a folder"), (portable, fifo, "not a regular file"),
             (portable, FIXTURES / "portable.pte", "not a readable ETRecord"),
             (xnnpack, FIXTURES / "portable.etrecord", "not the ETRecord of")]
    for program, record, why in cases:
        for command in (["info", program], ["render", program, "-o", tmp_path / "out.svg"]):
            error = one_line_error(run_cli(*command, "--etrecord", record, timeout=60))
            assert error.startswith(f"annograph: error: {record}:") and why in error, error
        assert not (tmp_path / "out.svg").exists()
    done = run_cli("info", portable, "--etrecord", FIXTURES / "xnnpack.etrecord")
    assert done.returncode == 0 and "4 of 5 kernel calls match no operator of the ETRecord" in done.stderr, done.stderr


def test_no_output_replaces_the_etrecord(tmp_path: Path) -> None:
    """The ETRecord read, given or found beside the program, is an input of the run: an output named as it is
    refused in one line and the file stays as it was."""
    shutil.copy(FIXTURES / "portable.pte", tmp_path / "portable.pte")
    record = tmp_path / "given.etrecord"
    shutil.copy(FIXTURES / "portable.etrecord", record)
    before = record.read_bytes()
    runs = [("render", "-o", record, "--etrecord", record), ("metrics", "--table-format", "json", "-o", record,
                                                               "--etrecord", record),
            ("diff", "--before", FIXTURES / "portable.etdp", "--after", FIXTURES / "portable.etdp", "-o", record,
             "--etrecord", record)]
    for command, *rest in runs:
        error = one_line_error(run_cli(command, tmp_path / "portable.pte", *rest))
        assert "given.etrecord: is an input of this run" in error, error
        assert record.read_bytes() == before
    shutil.copy(FIXTURES / "portable.etrecord", tmp_path / "portable.etrecord")
    error = one_line_error(run_cli("metrics", tmp_path / "portable.pte", "--table-format", "json",
                                   "-o", tmp_path / "portable.etrecord"))
    assert "portable.etrecord: is an input of this run" in error
    assert (tmp_path / "portable.etrecord").read_bytes() == before
