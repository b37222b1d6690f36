"""Tiny ONNX models (a few hundred bytes) that ask a runtime for huge or endless work (issue 19).

Shared by the tests (with low limits) and ``benchmarks/bench_bounds.py`` (with the defaults). Each builder
returns the model's bytes.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = [helper.make_opsetid("", 17)]


def _model(graph: onnx.GraphProto) -> bytes:
    model = helper.make_model(graph, opset_imports=OPSET)
    model.ir_version = 8
    return model.SerializeToString()


def computed_tensor(elements: int) -> bytes:
    """``ConstantOfShape`` of a length taken from the input's value (``n + elements``), then ``Cast`` and ``Add`` of
    the input and a ``ReduceSum``: a float32 tensor of ``elements`` values that no static shape announces (three
    of them alive at once when every tensor is exposed). Input ``n``: int64 [1]."""
    one = helper.make_tensor("one", TensorProto.FLOAT, [1], [1.0])
    graph = helper.make_graph(
        [helper.make_node("Add", ["n", "size"], ["length"], name="length"),
         helper.make_node("ConstantOfShape", ["length"], ["ones"], name="ones", value=one),
         helper.make_node("Cast", ["n"], ["n_float"], name="n_float", to=TensorProto.FLOAT),
         helper.make_node("Add", ["ones", "n_float"], ["big"], name="big"),
         helper.make_node("ReduceSum", ["big"], ["total"], name="total", keepdims=0)], "computed_tensor",
        [helper.make_tensor_value_info("n", TensorProto.INT64, [1])],
        [helper.make_tensor_value_info("total", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(np.array([elements], np.int64), "size")])
    return _model(graph)


def static_tensor(elements: int) -> bytes:
    """``Expand`` of the float input [1] to a constant shape of ``elements`` values, then ``ReduceSum``: the huge
    tensor's size is known before anything runs."""
    graph = helper.make_graph(
        [helper.make_node("Expand", ["x", "shape"], ["big"], name="big"),
         helper.make_node("ReduceSum", ["big"], ["total"], name="total", keepdims=0)], "static_tensor",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("total", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(np.array([elements], np.int64), "shape")])
    return _model(graph)


def _loop(trip_count: int, block: int, name: str) -> bytes:
    """A Loop of ``trip_count`` iterations over a float carry (input ``x``, float [1]); with ``block`` > 0 each
    iteration also emits ``block`` zeros as a scan output, which the runtime keeps for the stacked result: memory
    grows by ``4 * block`` bytes a step, without bound, at the speed of the loop."""
    body_nodes = [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
                  helper.make_node("Add", ["carry_in", "carry_in"], ["carry_out"])]
    outputs = [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
               helper.make_tensor_value_info("carry_out", TensorProto.FLOAT, None)]
    loop_outputs = ["carried"]
    if block:
        zero = helper.make_tensor("zero", TensorProto.FLOAT, [1], [0.0])
        size = helper.make_tensor("size", TensorProto.INT64, [1], [block])
        body_nodes += [helper.make_node("Constant", [], ["block_shape"], value=size),
                       helper.make_node("ConstantOfShape", ["block_shape"], ["emitted"], value=zero)]
        outputs.append(helper.make_tensor_value_info("emitted", TensorProto.FLOAT, None))
        loop_outputs.append("stacked")
    body = helper.make_graph(
        body_nodes, "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("carry_in", TensorProto.FLOAT, None)], outputs)
    graph = helper.make_graph(
        [helper.make_node("Loop", ["trips", "cond", "x"], loop_outputs, name="loop", body=body),
         helper.make_node("ReduceSum", [loop_outputs[-1]], ["total"], name="total", keepdims=0)], name,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("total", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(np.array(trip_count, np.int64), "trips"),
         numpy_helper.from_array(np.array(True), "cond")])
    return _model(graph)


def endless_loop() -> bytes:
    """A Loop with trip count 2^62 whose carry stays one float: endless work in constant memory."""
    return _loop(2**62, 0, "endless_loop")


def growing_loop(block: int = 1 << 16) -> bytes:
    """A Loop with trip count 2^62 emitting ``block`` floats a step (256 KiB by default): memory without bound."""
    return _loop(2**62, block, "growing_loop")
