"""torch.export programs (``.pt2`` from ``torch.export.save``): real modules exported by torch (``torch_models``),
loaded, drawn and counted by the CLI, the outputs parsed; the counts checked by hand and against torch's own ONNX
export of the same module read by the ONNX loader; hostile archives refused in one line, pickles never run."""

from __future__ import annotations

import contextlib
import io
import json
import pickle
import re
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest

import torch_models as TM
from conftest import ROOT, parse_svg, svg_groups, tooltip_of

pytest.importorskip("torch")

PROGRAMS = {"conv_net": {}, "mlp": {}, "transformer": {}, "transformer_dynamic": {"dynamic": True},
            "transformer_core": {"decomposed": True}}


def _cli(*argv: str | Path) -> tuple[int, str]:
    """``annograph ARGV`` in this process: (exit status, stderr)."""
    from renderer.commands.cli import main

    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = main([str(a) for a in argv])
    return code, err.getvalue()


def _program_file(folder: Path, key: str) -> Path:
    name = key.split("_", 1)[0] if key.startswith("transformer") else key
    return TM.write(folder, f"{key}.pt2", TM.pt2(name, **PROGRAMS[key]))


def _metrics(path: Path, folder: Path, *extra: str) -> dict[str, dict[str, Any]]:
    """Operator name → its metrics, from ``annograph metrics -o FILE.json`` (names from the model's own ids)."""
    from renderer.loaders import load_model

    out = folder / f"{path.stem}.metrics.json"
    code, err = _cli("metrics", path, "-o", out, "-q", *extra)
    assert code == 0, err
    model = load_model(path)
    ids = {f"0:{n.index}": n for n in model.main.nodes}
    return {ids[op["id"]].name or ids[op["id"]].op_type: {"type": ids[op["id"]].op_type, **op["meta"]}
            for op in json.loads(out.read_text())["operators"]}


# ---- the picture: every call_function node once, shapes on edges, module groups -------------------------------


@pytest.mark.parametrize("key", PROGRAMS)
def test_every_call_function_node_is_drawn_once_with_its_fx_name_and_shapes_on_edges(key: str, tmp_path: Path) -> None:
    """Every FX ``call_function`` node (``getitem`` folded by torch's serializer) is an operator named by its FX
    name, drawn as one box, or, when it only prepares a weight (core ATen's ``permute`` of a Linear's weight),
    folded into the box reading it as the ONNX picture folds a weight's Transpose; each edge shows its shape."""
    from renderer.loaders import load_model
    from renderer.picture.folding import fold

    path = _program_file(tmp_path, key)
    name = key.split("_", 1)[0] if key.startswith("transformer") else key
    expected = TM.program_nodes(name, **PROGRAMS[key])
    model = load_model(path)
    assert [n.name for n in model.main.nodes] == [fx for fx, _ in expected]
    assert [f"aten.{n.op_type}.{n.attributes['overload']}" if n.domain == "aten" else n.op_type
            for n in model.main.nodes] == [target for _, target in expected]
    svg = tmp_path / "out.svg"
    code, err = _cli("render", path, "-o", svg, "--collapse", "none", "-q")
    assert code == 0, err
    root = parse_svg(svg)
    boxes = svg_groups(root, "op")
    folding = fold(model)
    drawn = [n for n in model.main.nodes if not folding.is_hidden(n)]
    assert sorted(boxes) == sorted(f"op-0-{n.index}" for n in drawn)  # each once, nothing else
    for node in drawn:
        assert f"name: {node.name}" in tooltip_of(boxes[f"op-0-{node.index}"])
    tooltips = "\n".join(tooltip_of(box) for box in boxes.values())
    for node in model.main.nodes:  # a weight's permute (core ATen) is listed in the box reading it
        assert node in drawn or f"folded {node.op_type} (aten) 0:{node.index}:" in tooltips, node
    assert key != "transformer_core" or len(drawn) < len(model.main.nodes)
    labelled = 0
    for edge_id, group in svg_groups(root, "tensor").items():
        value = model.main.values[int(edge_id.split("-")[2].split(".")[0])]
        texts = ["".join(t.itertext()) for t in group.iter() if t.tag.endswith("text")]
        if value.type is not None and value.type.static_shape and texts:
            assert value.type.shape_text() in texts, (edge_id, texts)
            labelled += 1
    assert labelled >= len(model.main.nodes) // 2


def test_the_subgraphs_of_a_higher_order_operator_are_drawn_and_counted(tmp_path: Path) -> None:
    """``torch.cond``'s two branches are subgraphs of the model beside the ``cond`` box, their operators drawn and
    counted (each Linear(4, 4) on 2×4: 8 outputs × 4 + 8 = 40 MACs); the cond itself is control flow, not n/a."""
    from renderer.loaders import load_model

    path = TM.write(tmp_path, "branches.pt2", TM.pt2("branches"))
    model = load_model(path)
    (cond,) = [n for n in model.main.nodes if n.op_type == "higher_order.cond"]
    assert [g.name for g in cond.subgraphs] == ["true_graph_0", "false_graph_0"]
    assert [[n.op_type for n in g.nodes] for g in cond.subgraphs] == [["linear", "relu"], ["linear", "mul"]]
    svg = tmp_path / "branches.svg"
    code, err = _cli("render", path, "-o", svg, "--collapse", "none", "-q")
    assert code == 0, err
    assert sorted(svg_groups(parse_svg(svg), "op")) == sorted(n.element_id for n in model.nodes())
    out = tmp_path / "branches.json"
    code, err = _cli("metrics", path, "-o", out)
    assert code == 0 and "n/a" not in err, err
    macs = {op["id"]: op["meta"]["macs"] for op in json.loads(out.read_text())["operators"]}
    assert macs["1:0"] == macs["2:0"] == 2 * 4 * 4 + 2 * 4 == 40 and macs["1:1"] == macs["2:1"] == 8


def test_module_paths_are_the_groups_of_the_picture(tmp_path: Path) -> None:
    """``nn_module_stack`` becomes name scopes: the transformer's operators group as blocks.0 / blocks.1, each
    holding its attention and MLP, as grouping sees an exported ONNX model's ``/blocks.0/...`` names."""
    from renderer.loaders import load_model
    from renderer.picture.grouping import group_model, scope_of

    model = load_model(_program_file(tmp_path, "transformer"))
    qkv = next(n for n in model.main.nodes if n.name == "linear_4")
    assert scope_of(qkv) == ("blocks.1", "qkv") and qkv.metadata["module_type"].endswith("Linear")
    tree = group_model(model, lambda n: True, max_items=30)
    labels = {g.label for g in tree.walk() if g.kind == "scope"}
    assert {"blocks.0", "blocks.1"} <= labels
    first = next(g for g in tree.walk() if g.label == "blocks.0")
    assert {n.op_type for n in first.members()} >= {"layer_norm", "linear", "scaled_dot_product_attention", "gelu"}
    svg = tmp_path / "grouped.svg"
    code, err = _cli("render", _program_file(tmp_path, "transformer"), "-o", svg, "--collapse", "2", "-q")
    assert code == 0, err
    frames = ["".join(c.itertext()) for c in svg_groups(parse_svg(svg), "cluster").values()]
    assert any("blocks.0" in f for f in frames) and any("blocks.1" in f for f in frames)


# ---- the counts: by hand, and equal to the ONNX export of the same module -------------------------------------


def test_conv_and_linear_macs_by_hand_and_as_the_onnx_export_counts(tmp_path: Path) -> None:
    """conv 3→8, 3×3 on 1×3×16×16, padding 1: 8·16·16 outputs × 27 + a bias per output = 57,344 MACs; the head
    Linear(8, 10): 10 × 8 + 10 = 90. torch's ONNX export of the same module (Conv, Gemm) counts the same."""
    ours = _metrics(_program_file(tmp_path, "conv_net"), tmp_path)
    onnx = _metrics(TM.write(tmp_path, "conv_net.onnx", TM.onnx_of("conv_net")), tmp_path)
    conv, head = ours["conv2d"], ours["linear"]
    assert conv["macs"] == 8 * 16 * 16 * 3 * 3 * 3 + 8 * 16 * 16 == 57_344 and conv["params"] == 8 * 27 + 8
    assert head["macs"] == 10 * 8 + 10 == 90 and head["params"] == 90
    by_type = {fields["type"]: fields for fields in onnx.values()}
    assert by_type["Conv"]["macs"] == conv["macs"] and by_type["Conv"]["params"] == conv["params"]
    assert by_type["Gemm"]["macs"] == head["macs"]
    assert by_type["BatchNormalization"]["macs"] == ours["batch_norm"]["macs"] == 8 * 16 * 16
    assert ours["max_pool2d"]["macs"] == 8 * 8 * 8 * 4 == by_type["MaxPool"]["macs"]


def test_transformer_layers_count_as_their_onnx_export(tmp_path: Path) -> None:
    """Each Linear on 2×8×16 is one ``linear`` here and MatMul + Add in ONNX: the same MACs (qkv: 2·8·48 × 16 +
    768 = 13,056); the MLP of Linear(16, 32) + GELU + Linear(32, 4) likewise; attention by the ONNX formula."""
    ours = _metrics(_program_file(tmp_path, "transformer"), tmp_path)
    onnx = _metrics(TM.write(tmp_path, "transformer.onnx", TM.onnx_of("transformer")), tmp_path)
    linears = [f["macs"] for f in ours.values() if f["type"] == "linear"]
    assert linears[0] == 2 * 8 * 48 * 16 + 2 * 8 * 48 == 13_056
    matmuls = sorted(f["macs"] for f in onnx.values() if f["type"] == "MatMul" and f["params"])
    adds = sorted(f["macs"] for f in onnx.values() if f["type"] == "Add" and f["params"])
    assert sorted(linears) == sorted(m + a for m, a in zip(matmuls, adds)) and len(linears) == 8
    attention = next(f for f in ours.values() if f["type"] == "scaled_dot_product_attention")
    scores = 2 * 2 * 8 * 8  # batch × heads × queries × keys
    assert attention["macs"] == scores * 8 + 3 * scores + scores * 8
    mlp = _metrics(_program_file(tmp_path, "mlp"), tmp_path)
    mlp_onnx = _metrics(TM.write(tmp_path, "mlp.onnx", TM.onnx_of("mlp")), tmp_path)
    assert [f["macs"] for f in mlp.values()] == [f["macs"] for f in mlp_onnx.values()] == [1088, 64, 264]


def test_core_aten_programs_count_the_same_layers(tmp_path: Path) -> None:
    """After ``run_decompositions()`` a Linear is ``permute`` of the weight + ``addmm``: the same MACs, and the
    weight's parameters land on the addmm (traced through the permute, a weight layout op)."""
    core = _metrics(TM.write(tmp_path, "mlp_core.pt2", TM.pt2("mlp", decomposed=True)), tmp_path)
    plain = _metrics(_program_file(tmp_path, "mlp"), tmp_path)
    addmm = [f for f in core.values() if f["type"] == "addmm"]
    linear = [f for f in plain.values() if f["type"] == "linear"]
    assert [f["macs"] for f in addmm] == [f["macs"] for f in linear] == [1088, 264]
    assert [f["params"] for f in addmm] == [f["params"] for f in linear] == [544, 132]


@pytest.mark.slow
def test_a_transformers_llama_groups_by_layer_and_counts_as_its_onnx_export(tmp_path: Path) -> None:
    """A real transformers Llama (4 layers, seq 128): the overview shows its layers as one repeated block, and its
    projections and attention count what the ONNX export's MatMuls and Softmax count (the exporter decomposes
    attention into MatMul, Softmax and mask ops)."""
    from renderer.loaders import load_model
    from renderer.picture.grouping import group_model

    program, onnx = TM.llama()
    path, onnx_path = TM.write(tmp_path, "llama.pt2", program), TM.write(tmp_path, "llama.onnx", onnx)
    model = load_model(path)
    tree = group_model(model, lambda n: True, max_items=40)
    layers = [g for g in tree.walk() if g.label.startswith("layers.")]
    assert [g.label for g in layers] == [f"layers.{i}" for i in range(4)] and layers[0].repeat == 4
    ours, theirs = _metrics(path, tmp_path), _metrics(onnx_path, tmp_path)
    linear = sum(f["macs"] for f in ours.values() if f["type"] == "linear")
    attention = sum(f["macs"] for f in ours.values() if f["type"] == "scaled_dot_product_attention")
    scores = 4 * 4 * 128 * 128  # layers × heads × queries × keys
    assert attention == scores * 16 * 2 + 3 * scores  # QKᵀ and scores·V over head size 16, softmax 3 per score
    matmuls = sum(f["macs"] for f in theirs.values() if f["type"] == "MatMul")
    softmax = sum(f["macs"] for f in theirs.values() if f["type"] == "Softmax")
    assert linear + attention == matmuls + softmax


# ---- symbolic sizes: the free dims ----------------------------------------------------------------------------


def test_a_symbolic_batch_is_a_free_dim_assumed_pinned_and_bounded(tmp_path: Path) -> None:
    from renderer.loaders import load_model
    from renderer.loaders.torch_export.loader import pinnable

    path = _program_file(tmp_path, "transformer_dynamic")
    (symbol,) = pinnable(path)
    assumed = load_model(path)
    assert [(d.name, d.value, d.role) for d in assumed.assumed_dims] == [(symbol, 1, "batch")]
    assert assumed.main.inputs[0].type.shape == (1, 8, 16)
    pinned = load_model(path, dims={symbol: 4})
    assert pinned.main.inputs[0].type.shape == (4, 8, 16) and not pinned.assumed_dims
    reshaped = [n for n in pinned.main.nodes if n.op_type == "view"]
    assert reshaped and all(n.outputs[0].type.shape == (4, 8, 2, 8) for n in reshaped)
    free = load_model(path, assume_dims=False)
    assert free.main.inputs[0].type.shape == (symbol, 8, 16)
    one = _metrics(path, tmp_path)
    four = _metrics(path, tmp_path, "--dim", f"{symbol}=4")
    assert four["linear"]["macs"] == 4 * one["linear"]["macs"] == 4 * (8 * 48 * 16 + 8 * 48)  # batch 1 assumed
    code, err = _cli("info", path, "--dim", f"{symbol}=100")
    assert code == 1 and err.count("\n") == 1 and str(path) in err and "1..64" in err
    code, err = _cli("info", path, "--dim", "batch=2")
    assert code == 1 and err.count("\n") == 1 and symbol in err


def test_the_archive_keeps_no_dim_names(tmp_path: Path) -> None:
    """torch.export.save writes the ranges of ``Dim("batch", min=1, max=64)`` under torch's symbol (``s77``) and the
    name nowhere (not in ``range_constraints``, the signature, the sizes' expressions, the sample inputs or any
    other member), so the symbol is what the legend, ``--dim`` and the formulas can show. Should torch start to
    keep the name, this fails: then show it."""
    path = _program_file(tmp_path, "transformer_dynamic")
    with zipfile.ZipFile(path) as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    (program,) = [json.loads(data) for name, data in members.items() if name.endswith("models/model.json")]
    assert [(re.fullmatch(r"s\d+", key) is not None, bound) for key, bound in program["range_constraints"].items()] \
        == [(True, {"min_val": 1, "max_val": 64})]
    assert not [name for name, data in members.items() if b"batch" in data]


# ---- the other commands ---------------------------------------------------------------------------------------


def test_info_diff_batch_compare_and_the_html_report(tmp_path: Path) -> None:
    import payloads as P

    small, large = TM.write(tmp_path, "mlp2.pt2", TM.pt2("mlp")), TM.write(tmp_path, "mlp8.pt2", TM.pt2("mlp", batch=8))
    from renderer.commands.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["info", str(small)]) == 0
    assert "torch · export schema" in out.getvalue() and "0.weight  float32[32×16]" in out.getvalue()
    diff = tmp_path / "diff.svg"
    code, err = _cli("diff", small, large, "-o", diff, "--summary", tmp_path / "diff.md", "-q")
    assert code == 0, err
    assert "+300" in (tmp_path / "diff.md").read_text()  # every MAC ×4: batch 2 → 8
    assert len(svg_groups(parse_svg(diff), "op")) == 3
    times = tmp_path / "times.json"  # annotations keyed by the FX names
    times.write_text(json.dumps({"operators": [{"id": "linear", "latency_us": 3}, {"id": "linear_1", "latency_us": 1},
                                                {"id": "gelu", "latency_us": 2}]}))
    code, err = _cli("batch", small, large, "-a", times, "-o", tmp_path / "sheets", "-q")
    assert code == 0, err
    sheets = sorted((tmp_path / "sheets").rglob("*.svg"))
    assert len(sheets) >= 2 and all(len(svg_groups(parse_svg(p), "op")) == 3 for p in sheets if "mlp" in p.name)
    code, err = _cli("compare", small, large, "-o", tmp_path / "compare.json")
    assert code == 1 and err.count("\n") == 1 and "compare runs ONNX models" in err and str(small) in err
    report = tmp_path / "report.html"
    code, err = _cli("render", _program_file(tmp_path, "transformer"), "-o", report, "-q")
    assert code == 0, err
    P.check_output("html", report.read_bytes(), tmp_path)
    assert "scaled_dot_product_attention" in report.read_text(encoding="utf-8")


def test_same_bytes_across_hash_seeds(tmp_path: Path) -> None:
    """The transformer program (symbolic batch) drawn by two processes with different hash seeds: identical SVG,
    HTML and DOT."""
    import os

    path = _program_file(tmp_path, "transformer_dynamic")
    outputs = {}
    for seed in ("0", "4242"):
        folder = tmp_path / f"seed-{seed}"
        folder.mkdir()
        env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONHASHSEED=seed)
        argv = [sys.executable, "-m", "renderer", "render", str(path), "--format", "svg,html,dot", "-q",
                "-o", f"{folder}/"]
        done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=300, cwd=ROOT)
        assert done.returncode == 0, done.stderr
        outputs[seed] = {p.name: p.read_bytes() for p in sorted(folder.iterdir())}
    assert len(outputs["0"]) == 3 and outputs["0"] == outputs["4242"]


# ---- safety: no torch at startup, no pickle ever run, hostile archives in one line ------------------------------


def test_torch_is_not_imported_for_help_nor_to_load_a_program(tmp_path: Path) -> None:
    path = _program_file(tmp_path, "mlp")
    env = {"PYTHONPATH": str(ROOT)}
    help_run = subprocess.run([sys.executable, "-X", "importtime", "-m", "renderer", "--help"], capture_output=True,
                              text=True, env=env, timeout=120, cwd=ROOT)
    assert help_run.returncode == 0 and not re.search(r"\|\s+torch\b", help_run.stderr)
    code = ("import sys; from renderer.loaders import load_model; m = load_model(sys.argv[1]); "
            "assert len(m.main.nodes) == 3; print(sorted(k for k in sys.modules if k.split('.')[0] == 'torch'))")
    load_run = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, env=env,
                              timeout=120, cwd=ROOT)
    assert load_run.returncode == 0 and load_run.stdout.strip() == "[]", load_run.stderr


class _Touch:
    """A pickle that creates a file when unpickled: what a hostile weight could do instead."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self) -> tuple[Any, tuple[Path]]:
        return Path.touch, (self.path,)


def _pickled_weight(data: bytes, marker: Path) -> bytes:
    """``data`` with its first weight marked ``use_pickle`` and its bytes a pickle that touches ``marker``."""
    archive = zipfile.ZipFile(io.BytesIO(data))
    root = archive.namelist()[0].split("/", 1)[0]
    config = json.loads(archive.read(f"{root}/data/weights/model_weights_config.json"))
    entry = next(iter(config["config"].values()))
    entry["use_pickle"] = True
    return TM.rewrite(data, extra={"data/weights/model_weights_config.json": json.dumps(config).encode(),
                                   f"data/weights/{entry['path_name']}": pickle.dumps(_Touch(marker))})


def test_a_pickled_weight_is_never_run_and_keeps_its_shape(tmp_path: Path) -> None:
    """torch.export.load unpickles such a weight (``weights_only=False``) and so runs the file's code: the marker
    appears. annograph draws and counts the program without running it: parameters from the weight's metadata,
    its statistics n/a with the reason."""
    import torch

    marker = tmp_path / "ran"
    path = TM.write(tmp_path, "pickled.pt2", _pickled_weight(TM.pt2("mlp"), marker))
    ours = _metrics(path, tmp_path)
    assert not marker.exists()
    assert ours["linear"]["params"] == 544 and ours["linear"]["macs"] == 1088
    assert "pickle" in str(ours["linear"].get("weight_mean", "")) or "weight_mean" not in ours["linear"]
    with contextlib.suppress(Exception):
        torch.export.load(str(path))
    assert marker.exists(), "torch.export.load no longer runs pickled weights: the README's warning can change"


def _huge(document: dict[str, Any]) -> None:
    for meta in document["graph_module"]["graph"]["tensor_values"].values():
        meta["sizes"] = [{"as_int": 2**40}] * 3


def _no_nodes(document: dict[str, Any]) -> None:
    document["graph_module"]["graph"]["nodes"] = "none"


def _wrong_types(document: dict[str, Any]) -> None:
    for node in document["graph_module"]["graph"]["nodes"]:
        node["target"] = 7


def _garbage_arguments(document: dict[str, Any]) -> None:
    for node in document["graph_module"]["graph"]["nodes"]:
        node["inputs"] = [{"name": 3, "arg": {"as_tensor": ["x"]}}, 7, None, {"arg": {"as_weird": {"a": 1}}}]
        node["outputs"] = [{"as_tensors": "y"}]
        node["metadata"] = {"nn_module_stack": ";;,,;a" * 1000, "stack_trace": 5}


def _twice(document: dict[str, Any]) -> None:
    nodes = document["graph_module"]["graph"]["nodes"]
    nodes[1]["outputs"] = nodes[0]["outputs"]


def _deep(document: dict[str, Any]) -> None:
    for meta in document["graph_module"]["graph"]["tensor_values"].values():
        meta["sizes"] = [{"as_expr": {"expr_str": "Add(" * 5000 + "Integer(1)" + ")" * 5000}}]


def _nested(document: dict[str, Any]) -> None:
    """A cond whose branch holds a cond whose branch… 40 deep."""
    node: dict[str, Any] = {"target": "torch.ops.aten.relu.default", "name": "leaf", "inputs": [], "outputs": []}
    for depth in range(40):
        graph = {"inputs": [], "outputs": [], "nodes": [node]}
        node = {"target": "torch.ops.higher_order.cond", "name": f"cond{depth}", "outputs": [],
                "inputs": [{"name": "", "arg": {"as_graph": {"name": f"g{depth}", "graph": graph}}}]}
    document["graph_module"]["graph"]["nodes"].append(node)


HOSTILE = {
    "truncated": lambda d: d[: len(d) // 2],
    "not-pt2": lambda d: TM.rewrite(d, extra={"archive_format": b"zip"}),
    "no-marker": lambda d: TM.rewrite(d, drop=("archive_format",)),
    "no-program": lambda d: TM.rewrite(d, drop=("models/model.json",)),
    "bad-json": lambda d: TM.rewrite(d, extra={"models/model.json": b"{\"graph_module\": [1, 2"}),
    "deep-json": lambda d: TM.rewrite(d, extra={"models/model.json": b"[" * 100_000 + b"]" * 100_000}),
    "huge-shapes": lambda d: TM.rewrite(d, _huge),
    "no-nodes": lambda d: TM.rewrite(d, _no_nodes),
    "wrong-types": lambda d: TM.rewrite(d, _wrong_types),
    "written-twice": lambda d: TM.rewrite(d, _twice),
    "nested-subgraphs": lambda d: TM.rewrite(d, _nested),
    "legacy": lambda d: TM.rewrite(d, drop=("archive_format",), extra={"../serialized_exported_program.json": b"{}"}),
}


@pytest.mark.parametrize("kind", HOSTILE)
def test_a_hostile_archive_is_one_line_naming_the_file(kind: str, tmp_path: Path) -> None:
    path = TM.write(tmp_path, "hostile.pt2", HOSTILE[kind](TM.pt2("mlp")))
    out = tmp_path / "out.svg"
    code, err = _cli("render", path, "-o", out, "-q")
    assert code == 1 and err.count("\n") == 1 and str(path) in err and "Traceback" not in err, err
    assert not out.exists()


def test_unreadable_sizes_and_weights_cost_only_themselves(tmp_path: Path) -> None:
    """Expressions too deep to read are unknown sizes (their MACs n/a), a weight whose strides reach past its
    storage is n/a for the statistics: the program still loads and draws."""
    from renderer.loaders import load_model

    path = TM.write(tmp_path, "deep.pt2", TM.rewrite(TM.pt2("mlp"), _deep))
    model = load_model(path, assume_dims=False)
    assert all(v.type is None or v.type.shape == (None,) for v in model.main.values if v.initializer is None)
    code, err = _cli("render", path, "-o", tmp_path / "deep.svg", "-q")
    assert code == 0 and len(svg_groups(parse_svg(tmp_path / "deep.svg"), "op")) == 3, err
    garbage = load_model(TM.write(tmp_path, "garbage.pt2", TM.rewrite(TM.pt2("mlp"), _garbage_arguments)))
    assert [n.outputs for n in garbage.main.nodes] == [[], [], []]  # what is no argument is left out
    data = TM.pt2("mlp")
    archive = zipfile.ZipFile(io.BytesIO(data))
    root = archive.namelist()[0].split("/", 1)[0]
    config = json.loads(archive.read(f"{root}/data/weights/model_weights_config.json"))
    next(iter(config["config"].values()))["tensor_meta"]["storage_offset"] = {"as_int": 10**6}
    strided = TM.write(tmp_path, "strided.pt2", TM.rewrite(
        data, extra={"data/weights/model_weights_config.json": json.dumps(config).encode()}))
    ours = _metrics(strided, tmp_path)
    assert ours["linear"]["params"] == 544 and "n/a" in str(ours["linear"]["sparsity"])


def test_detection_by_content(tmp_path: Path) -> None:
    """A .pt2 under any name is a torch.export program; a zip that is no PT2 archive (an .npz) is not."""
    import numpy as np

    from renderer.loaders import detect
    from renderer.loaders.torch_export import loader as torch_export

    path = TM.write(tmp_path, "program.bin", TM.pt2("mlp"))
    assert detect(path) is torch_export
    npz = tmp_path / "arrays.npz"
    np.savez(npz, a=np.zeros(3))
    assert not torch_export.match(npz.read_bytes()[:64])
    assert torch_export.match(path.read_bytes()[:64])


# ---- the operator data ----------------------------------------------------------------------------------------


def test_the_operator_data_is_valid_and_names_real_operators() -> None:
    import importlib

    import jsonschema
    import torch

    from renderer.data import operators
    from renderer.metrics import torch_ops

    document = json.loads((ROOT / "renderer/data/torch-ops.json").read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator(json.loads((ROOT / "renderer/data/ops.schema.json").read_text())).validate(document)
    entries = operators.operators("torch")
    assert set(torch_ops.formula_by_op()) == {(n, "") for n, op in entries.items() if op.cost}
    assert {op.cost for op in entries.values()} - {None} == set(torch_ops.FORMULAS)
    missing = []
    for name in entries:
        namespace, _, op = name.rpartition(".")
        if not namespace:
            found = hasattr(torch.ops.aten, name)
        elif namespace in ("_operator", "math", "torch"):
            found = hasattr(importlib.import_module(namespace), op)
        else:
            found = namespace == "higher_order" and hasattr(torch.ops.higher_order, op) or \
                namespace in ("quantized_decomposed", "dim_order_ops")  # ExecuTorch's own libraries
        if not found:
            missing.append(name)
    assert not missing, missing


# ---- hostile names ----------------------------------------------------------------------------------------------


def _named(text: str) -> Any:
    """Every FX node name, module path and module type, and the program's first weight name, replaced by ``text``
    (node names made unique by a suffix, as FX's are)."""
    def edit(document: dict[str, Any]) -> None:
        graph = document["graph_module"]["graph"]
        for index, node in enumerate(graph["nodes"]):
            node["name"] = f"{text}{index}"
            node["metadata"]["nn_module_stack"] = f"L__self__,{text},{text};L__self__x,{text}.{text},{text}"
            node["metadata"]["stack_trace"] = f'File "{text}", line 1, in {text}'
        spec = document["graph_module"]["signature"]["input_specs"][0]["parameter"]
        spec["parameter_name"] = text
    return edit


def test_hostile_fx_names_and_module_paths_stay_inert(tmp_path: Path) -> None:
    import payloads as P
    from renderer.loaders import load_model

    for index, payload in enumerate(P.PAYLOADS):
        folder = tmp_path / str(index)
        folder.mkdir()
        path = TM.write(folder, "hostile.pt2", TM.rewrite(TM.pt2("mlp"), _named(payload.text)))
        model = load_model(path)
        assert model.main.nodes[0].name == f"{payload.text}0" and model.main.values[0].name == (payload.text or "")
        for fmt in ("svg", "html", "dot"):
            out = folder / f"out.{fmt}"
            code, err = _cli("render", path, "-o", out, "--collapse", "2", "-q")
            assert code == 0, (payload.name, err)
            P.check_output(fmt, out.read_bytes(), folder)
