"""Operator knowledge lives in ``renderer/data/*-ops.json``, one entry per operator, checked when read; graph-valued
attributes are typed, not text."""

from __future__ import annotations

import inspect
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import renderer
from conftest import ONNX, ROOT, TFLITE, run_cli
from renderer.core.errors import OperatorDataError
from renderer.core.ir import SubgraphRef
from renderer.data import categories, operators
from renderer.metrics import onnx_ops, tflite_ops

FORMATS = {"onnx": onnx_ops, "tflite": tflite_ops}
SCHEMA = ROOT / "renderer/data/ops.schema.json"


def _document(fmt: str) -> dict:
    return json.loads((ROOT / f"renderer/data/{fmt}-ops.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("fmt", FORMATS)
def test_data_files_match_the_schema_and_the_schema_matches_the_reader(fmt: str) -> None:
    import jsonschema

    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.Draft202012Validator(schema).validate(_document(fmt))
    fields = schema["$defs"]["operator"]["properties"]
    assert list(fields) == list(operators.FIELDS)
    assert fields["category"]["enum"] == list(operators.CATEGORIES) == list(categories.CATEGORIES)
    assert set(fields["roles"]["items"]["enum"]) == operators.ROLES
    assert set(fields["fold"]["enum"]) == operators.FOLDS
    assert set(fields["size_from"]["oneOf"][0]["enum"]) == operators.SIZE_FROM
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"operators": {"Conv": {"cost": "conv", "colour": "red"}}}, schema)


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_cost_formula_named_in_the_data_resolves_and_every_formula_is_used(fmt: str) -> None:
    module = FORMATS[fmt]
    entries = operators.operators(fmt)
    table = module.formula_by_op()
    named = {(name, "") for name, op in entries.items() if op.cost}
    named |= {(name, domain) for name, op in entries.items() for domain in op.cost_by_domain}
    assert set(table) == named and len(named) > 100
    used = {op.cost for op in entries.values()} | {f for op in entries.values() for f in op.cost_by_domain.values()}
    assert used - {None} == set(module.FORMULAS)  # no formula the data forgot, none it names that is missing
    for name, op in entries.items():  # the numbers an entry gives are the formula's keyword arguments
        if op.cost:
            params = inspect.signature(module.FORMULAS[op.cost]).parameters
            assert set(op.args) <= set(params) - {"op"}, name


def test_every_operator_named_in_the_data_is_a_real_operator() -> None:
    """ONNX names are operators of onnx or of onnxruntime's contrib domains; TFLite names are BuiltinOperator
    members (test_loader_tflite checks there is an entry for each), or custom codes costed under the domain
    ``custom`` only (MediaPipe's Convolution2DTransposeBias)."""
    import onnx.defs
    import tflite
    from onnxruntime.capi import onnxruntime_pybind11_state as ort

    known = {s.name for s in onnx.defs.get_all_schemas_with_history()} | {s.name for s in ort.get_all_operator_schema()}
    assert set(operators.operators("onnx")) - known == set()
    builtins = {k for k in vars(tflite.BuiltinOperator) if not k.startswith("_")}
    custom = {name for name, op in operators.operators("tflite").items()
              if not op.cost and set(op.cost_by_domain) == {"custom"} and not name.isupper()}
    assert set(operators.operators("tflite")) - builtins == custom and custom


@pytest.mark.parametrize("fmt", FORMATS)
def test_roles_and_folds_name_known_operators_and_control_flow_is_category_control(fmt: str) -> None:
    entries = operators.operators(fmt)
    for role in ("runs_subgraphs", "weight_layout", "weight_cast", "dequantize"):
        assert operators.with_role(fmt, role), (fmt, role)
    assert all(categories.category(fmt, op) == "control" for op in operators.with_role(fmt, "runs_subgraphs"))
    assert all(entries[op].category == "shape" for op in operators.with_fold(fmt, "shape") if op != "Size")
    for op in operators.with_fold(fmt, "storage"):  # what folding lists as the stored tensor only re-holds it
        assert entries[op].roles & {"weight_cast", "dequantize"}, op
    with pytest.raises(ValueError, match="not one of"):
        operators.with_role(fmt, "weights")


def test_size_from_names_slots_the_operators_have() -> None:
    """TFLite entries name the input slots whose values decide the output size (within the slots the entry names,
    where it names them); ONNX entries use the two words ``value_sizes`` reads for ONNX."""
    tflite = {name: op for name, op in operators.operators("tflite").items() if op.size_from is not None}
    assert {"RESHAPE", "SLICE", "STRIDED_SLICE", "RANGE", "IF"} <= set(tflite)
    assert tflite["STRIDED_SLICE"].size_from == (1, 2, 3) and tflite["RANGE"].size_from == "every_input"
    for name, op in tflite.items():
        assert op.size_from == "every_input" or isinstance(op.size_from, tuple), name
        if isinstance(op.size_from, tuple) and op.inputs:
            assert max(op.size_from) < len(op.inputs), name
    assert "GATHER" not in tflite and operators.with_fold("tflite", "shape") == {"SHAPE"}
    onnx = {op.size_from for op in operators.operators("onnx").values()}
    assert onnx == operators.SIZE_FROM | {None}


@pytest.mark.parametrize("text, message", [
    ('{"operators": {"Conv": {"colour": "red"}}}', "operator 'Conv': unknown field 'colour' (known: category,"),
    ('{"operators": {"Conv": {"category": "layers"}}}', "operator 'Conv': 'layers' is not one of activation,"),
    ('{"operators": {"Conv": {}, "Conv": {}}}', "'Conv' is listed twice"),
    ('{"operators": {"Relu": {"ops": 2}}}', "operator 'Relu': ops without a cost formula"),
    ('{"operators": {"Relu": {"cost": "elementwise", "ops": -1}}}', "operator 'Relu': -1 is not a number ≥ 0"),
    ('{"operators": {"Conv": {"weights": [[1, 2]]}}}', "operator 'Conv': [1, 2] is not [slot, zero point slot,"),
    ('{"operators": {"Conv": {"weights": [-1]}}}', "operator 'Conv': slot -1 is not an index ≥ 0"),
    ('{"operators": {"If": {"roles": ["loops"]}}}', "operator 'If': 'loops' is not one of dequantize,"),
    ('{"operators": {"Shape": {"fold": "hidden"}}}', "operator 'Shape': 'hidden' is not one of constant,"),
    ('{"operators": {"Range": {"size_from": "all"}}}', "operator 'Range': 'all' is not one of every_input, "
                                                       "later_inputs or a non-empty list of slots"),
    ('{"operators": {"SLICE": {"size_from": [1, -2]}}}', "operator 'SLICE': slot -2 is not an index ≥ 0"),
    ('{"operators": ["Conv"]}', 'no "operators" object'),
    ('{"operators": {"Conv": "layer"}}', "operator 'Conv': not an object"),
    ('{"operators": {', "Expecting property name"),
])
def test_a_malformed_data_file_is_one_error_naming_the_file_and_operator(text: str, message: str) -> None:
    with pytest.raises(OperatorDataError) as info:
        operators.parse("renderer/data/onnx-ops.json", text)
    assert str(info.value).startswith("renderer/data/onnx-ops.json: ")
    assert message in str(info.value) and "\n" not in str(info.value)


@pytest.mark.parametrize("entry, message", [
    ({"cost": "convolution"}, "operator 'X': unknown cost formula 'convolution' (known: attention, conv,"),
    ({"cost": "conv", "cost_by_domain": {"com.microsoft": "ms_conv"}}, "unknown cost formula 'ms_conv'"),
    ({"cost": "recurrent", "ops": 13}, "operator 'X': formula 'recurrent': missing a required argument: 'gates'"),
    ({"cost": "conv", "ops": 2}, "operator 'X': formula 'conv': got an unexpected keyword argument 'ops'"),
])
def test_a_formula_the_code_does_not_have_is_an_error_naming_the_operator(entry: dict, message: str) -> None:
    entries = operators.parse("x.json", json.dumps({"operators": {"X": entry}}))
    with pytest.raises(OperatorDataError, match="^x.json: ") as info:
        operators.bind_formulas("x.json", entries, onnx_ops.FORMULAS)
    assert message in str(info.value)


def _broken_copy(tmp_path: Path, fmt: str, op: str, fields: dict) -> dict[str, str]:
    """A copy of the package whose ``fmt`` data gives ``op`` the entry ``fields``; the environment running it."""
    shutil.copytree(ROOT / "renderer", tmp_path / "renderer", ignore=shutil.ignore_patterns("__pycache__"))
    data = tmp_path / f"renderer/data/{fmt}-ops.json"
    document = json.loads(data.read_text(encoding="utf-8"))
    document["operators"][op] = fields
    data.write_text(json.dumps(document), encoding="utf-8")
    return dict(os.environ, PYTHONPATH=str(tmp_path))


@pytest.mark.parametrize("command, fmt, op, fields, message", [
    (["metrics", ONNX / "tiny_cnn.onnx"], "onnx", "Conv", {"category": "layer", "cost": "convolution"},
     "renderer/data/onnx-ops.json: operator 'Conv': unknown cost formula 'convolution'"),
    (["render", TFLITE / "okay_nabu.tflite"], "tflite", "CONV_2D", {"category": "layers"},
     "renderer/data/tflite-ops.json: operator 'CONV_2D': 'layers' is not one of"),
])
def test_the_cli_reports_a_broken_data_file_in_one_line_and_writes_nothing(
        tmp_path: Path, command: list, fmt: str, op: str, fields: dict, message: str) -> None:
    env = _broken_copy(tmp_path / "pkg", fmt, op, fields)
    out = tmp_path / "out.json" if command[0] == "metrics" else tmp_path / "out.svg"
    run = subprocess.run([sys.executable, "-m", "renderer", *map(str, command), "-o", str(out)], env=env,
                         cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert run.returncode != 0
    assert run.stderr.count("\n") == 1 and "Traceback" not in run.stderr, run.stderr
    assert message in run.stderr and "malformed" not in run.stderr and "corrupt" not in run.stderr, run.stderr
    assert not out.exists()


@pytest.mark.parametrize("path", [ONNX / "control_flow.onnx", ONNX / "silero_vad.onnx", TFLITE / "okay_nabu.tflite"])
def test_every_operator_with_subgraphs_is_control_flow_in_the_data(path: Path) -> None:
    model = renderer.load_model(path)
    runners = [n for n in model.nodes() if n.subgraphs]
    assert runners
    for node in runners:
        assert categories.runs_subgraphs(model.format, node.op_type), node.op_type
    from renderer.metrics import builtin as metrics

    totals = metrics.model_costs(model).totals()
    uncountable = [n for n in model.nodes() if categories.runs_subgraphs(model.format, n.op_type)]
    assert totals["macs_uncounted"] <= sum(len(g.nodes) for g in model.graphs) - len(uncountable)


def test_graph_attributes_are_typed_and_text_that_looks_like_one_is_shown(tmp_path: Path) -> None:
    import onnx
    from onnx import TensorProto, helper

    model = renderer.load_model(ONNX / "control_flow.onnx")
    gate = next(n for n in model.main.nodes if n.op_type == "If")
    branches = [gate.attributes["then_branch"], gate.attributes["else_branch"]]
    assert all(isinstance(b, SubgraphRef) for b in branches)
    assert {b.index for b in branches} == {g.index for g in gate.subgraphs}
    assert model.graphs[branches[0].index].name == "gate/then"
    assert str(branches[0]) == f"graph {branches[0].index}"

    node = helper.make_node("Scale", ["x"], ["y"], name="s", domain="example.custom", mode="graph 7 fast")
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    path = tmp_path / "m.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                      helper.make_opsetid("example.custom", 1)]), path)
    out = tmp_path / "m.dot"
    run = run_cli("render", path, "-o", out, "--no-sidecar")
    assert run.returncode == 0, run.stderr
    assert "mode=graph 7 fast" in out.read_text(encoding="utf-8")


def test_executorch_reads_the_torch_export_table() -> None:
    """An ExecuTorch program's kernels are ATen operators: one table for both formats, read once, named as
    torch's own file; the edge dialect's _copy views fold as the views they copy."""
    assert operators.operators("executorch") is operators.operators("torch")
    assert operators.where("executorch") == "renderer/data/torch-ops.json"
    for name in ("permute_copy", "view_copy", "t_copy", "squeeze_copy", "unsqueeze_copy"):
        assert "weight_layout" in operators.operator("executorch", name).roles  # type: ignore[union-attr]
        assert categories.category("executorch", name) == categories.category("torch", name.removesuffix("_copy"))
    assert categories.category("executorch", "topk") == "reduce" == categories.category("onnx", "TopK")
