"""A load at other dims made from an earlier load (``loader.load_like``, ``retype``): the operators copied, each
tensor typed as a build of the file at those dims types it; a model the copy cannot replay is built again."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from conftest import ONNX
from renderer.core import ir
from renderer.loaders.onnx.loader import load_like
from renderer.loaders.registry import load_model


def state(model: ir.Model) -> list[Any]:
    """Everything a build decides: each tensor's name, type, stored data's dtype and shape, links and flags; each
    operator's fields and slots; each graph's inputs and outputs."""
    found: list[Any] = []
    for graph in model.graphs:
        for v in graph.values:
            data = None if v.initializer is None else (v.initializer.dtype, v.initializer.shape)
            found.append((graph.index, v.index, v.name, v.type, data, v.is_input, v.is_output,
                          v.producer.index if v.producer else None, [c.index for c in v.consumers]))
        for n in graph.nodes:
            found.append((n.index, n.op_type, n.domain, n.name, n.category, n.input_names, n.attributes, n.defaults,
                          n.metadata, [None if x is None else x.index for x in n.inputs], [x.index for x in n.outputs]))
        found.append(([v.index for v in graph.inputs], [v.index for v in graph.outputs], graph.name, graph.not_run))
    return found


def copied(like: ir.Model, again: ir.Model) -> bool:
    """Whether ``again``'s operators were copied from ``like``'s (their attributes shared), not built."""
    return all(a.attributes is b.attributes for a, b in zip(like.nodes(), again.nodes(), strict=True))


def _constants_model(path: Path) -> Path:
    """What the copy replays besides inferred types: a stored weight without a value_info, a Constant of a float,
    a ConstantOfShape of a stored shape (folded) and of a computed one (not), and an output typed only by the
    graph's output list."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "seq", 8])
    z = helper.make_tensor_value_info("z", TensorProto.FLOAT, None)
    nodes = [
        helper.make_node("Constant", [], ["k"], value_float=2.0),
        helper.make_node("Mul", ["x", "k"], ["y"]),
        helper.make_node("MatMul", ["y", "w"], ["z"]),
        helper.make_node("ConstantOfShape", ["stored_shape"], ["filled"],
                         value=numpy_helper.from_array(np.array([1.5], np.float32))),
        helper.make_node("Add", ["filled", "filled"], ["doubled"]),
        helper.make_node("Shape", ["x"], ["x_shape"]),
        helper.make_node("ConstantOfShape", ["x_shape"], ["zeros"]),
        helper.make_node("Add", ["zeros", "x"], ["same"]),
    ]
    graph = helper.make_graph(
        nodes, "constants", [x], [z, helper.make_tensor_value_info("doubled", TensorProto.FLOAT, [2, 3]),
                                  helper.make_tensor_value_info("same", TensorProto.FLOAT, None)],
        initializer=[numpy_helper.from_array(np.ones((8, 4), np.float32), "w"),
                     numpy_helper.from_array(np.array([2, 3], np.int64), "stored_shape")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    path = path / "constants.onnx"
    onnx.save(model, path)
    return path


@pytest.mark.parametrize("source", ["constants", "tiny_transformer", "bert_dynamo"])
def test_a_load_at_other_dims_copies_the_operators_and_types_them_as_a_build(source: str, tmp_path: Path) -> None:
    path = _constants_model(tmp_path) if source == "constants" else ONNX / f"{source}.onnx"
    like = load_model(path)
    assert like.assumed_dims
    dims = {**like.pinned_dims, **{d.name: d.value + 16 for d in like.assumed_dims}}
    built = load_model(path, dims=dims, check_dims=False, shape_run=False)
    again = load_like(like, dims, shape_run=False)
    assert copied(like, again)
    assert state(again) == state(built)
    assert state(load_like(like, dims, shape_run=False)) == state(built)  # the file split once for both loads
    assert state(again) != state(like)  # the sizes moved
    assert again.pinned_dims == built.pinned_dims and again.assumed_dims == built.assumed_dims
    if source == "constants":
        values = {v.name: v for v in again.main.values}
        assert values["filled"].initializer is not None and values["zeros"].initializer is None
        assert values["z"].type.shape == (dims["batch"], dims["seq"], 4)


@pytest.mark.parametrize("source", ["constants", "tiny_transformer", "bert_dynamo", "silero_vad"])
def test_a_load_keeping_some_operators_counts_them_as_a_build(source: str, tmp_path: Path) -> None:
    """The MACs formulas' loads keep the operators counted at the assumed dims only: stand-ins over the earlier
    load's operators, whose tensors carry the types of a build at the other dims (subgraphs' too), and whose MACs
    are the build's, n/a where the build's are."""
    from renderer.metrics.builtin import op_macs
    from renderer.metrics.dim_formulas import _macs

    path = _constants_model(tmp_path) if source == "constants" else ONNX / f"{source}.onnx"
    like = load_model(path)
    dims = {**like.pinned_dims, **{d.name: d.value * 2 for d in like.assumed_dims}}
    counted = op_macs(like)
    keep = frozenset(key for key, count in counted.items() if count is not None)
    assert keep
    if source == "silero_vad":
        assert len(keep) < len(counted)  # operators n/a at the assumed dims are left out
    built = load_model(path, dims=dims, check_dims=False, shape_run=False)
    again = load_like(like, dims, shape_run=False, keep=keep)
    assert sorted(node.key for node in again.nodes()) == sorted(keep)
    assert not any(isinstance(node, ir.Node) for node in again.nodes())  # stand-ins, not copies
    assert all(node.attributes is like.graphs[node.key[1]].nodes[node.key[2]].attributes for node in again.nodes())
    kept = _macs(again)
    assert kept == {key: count for key, count in _macs(built).items() if key in keep}
    assert kept != {key: counted[key] for key in keep}  # the sizes moved
    types = {(n.key, slot): v.type for n in built.nodes() for slot, v in enumerate(n.outputs)}
    assert all(v.type == types[n.key, slot] for n in again.nodes() for slot, v in enumerate(n.outputs))


def test_a_model_with_subgraphs_is_built_again() -> None:
    """If branches and Loop bodies read the enclosing graph's tensors: such a model is built, as before."""
    path = ONNX / "silero_vad.onnx"
    like = load_model(path)
    dims = {**like.pinned_dims, **{d.name: d.value * 2 for d in like.assumed_dims}}
    again = load_like(like, dims, shape_run=False)
    assert len(again.graphs) > 1 and not copied(like, again)
    assert state(again) == state(load_model(path, dims=dims, check_dims=False, shape_run=False))


def test_a_tensor_both_stored_and_written_is_built_again(tmp_path: Path) -> None:
    """A Constant writing a name the file also stores (malformed, but loaded): which data and type the tensor
    ends with follows the build's order, which the copy does not replay."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n"])
    graph = helper.make_graph(
        [helper.make_node("Constant", [], ["k"], value=numpy_helper.from_array(np.ones(3, np.float32))),
         helper.make_node("Add", ["x", "k"], ["y"])], "twice", [x],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        initializer=[numpy_helper.from_array(np.ones(5, np.float32), "k")])
    path = tmp_path / "twice.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    like = load_model(path)
    again = load_like(like, {"n": 7}, shape_run=False)
    assert not copied(like, again)
    assert state(again) == state(load_model(path, dims={"n": 7}, check_dims=False, shape_run=False))


def test_the_formulas_from_copied_loads_are_those_of_built_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    from renderer.loaders.onnx import loader
    from renderer.metrics import dim_formulas

    path = ONNX / "bert_dynamo.onnx"
    fast = dim_formulas.formulas(load_model(path))

    def built(like: ir.Model, dims: dict[str, int], shape_run: bool, keep: object = None) -> ir.Model:
        return load_model(like.path, dims=dims, check_dims=False, shape_run=shape_run)

    monkeypatch.setattr(loader, "load_like", built)
    slow = dim_formulas.formulas(load_model(path))
    assert fast is not None and fast.total is not None
    assert fast == slow
