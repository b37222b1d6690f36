"""TensorRT engine layers (``loaders.tensorrt``) → the cost formulas, from what the layer graph states: the
layers' output dims and parameters (``Kernel``, ``OutMaps``, ``Groups``, ``WindowSize``, ``MatrixOpA``) and their
weights' counts. Which layer uses which formula is data (``renderer/data/tensorrt-ops.json``); a layer whose
numbers the file leaves out (a Myelin subgraph, fused pointwise ops) has none, and its MACs read n/a.

A convolution's weights are ``[out maps, in channels / groups, kernel…]`` (the loader shapes them so only when
that matches their count), so its MACs are the ONNX Conv's: each output element reads every weight of its map,
plus one add per output for a bias.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache

from renderer.data.operators import formula_table
from renderer.metrics.formulas import ZERO, Cost, NotCountable, convolution, matmul, per_element, pooling, prod
from renderer.metrics.opview import Op


def _slot(op: Op, name: str) -> int | None:
    names = op.node.input_names
    return names.index(name) if name in names else None


def _weight_shape(op: Op) -> tuple[int, ...]:
    slot = _slot(op, "weights")
    if slot is None:
        raise NotCountable(f"{op.type} layer declares no weights")
    return op.shape(slot)


def _convolution(op: Op) -> Cost:
    shape = _weight_shape(op)
    if len(shape) < 3:
        raise NotCountable("the weights' count does not match the layer's kernel, maps and groups")
    return convolution(op.out_elements(), shape, 0, _slot(op, "bias") is not None)


def _deconvolution(op: Op) -> Cost:
    shape = _weight_shape(op)
    maps = op.attr("OutMaps")
    if len(shape) < 2 or not isinstance(maps, int) or maps <= 0:
        raise NotCountable("the weights' count does not match the layer's kernel, maps and groups")
    macs = op.elements(0) * (prod(shape) // op.shape(0)[1]) if len(op.shape(0)) > 1 else None
    if macs is None:
        raise NotCountable("the input has no channel axis")
    return Cost(macs + (op.out_elements() if _slot(op, "bias") is not None else 0), macs)


def _fully_connected(op: Op) -> Cost:
    weights = prod(_weight_shape(op))
    maps = op.attr("OutMaps")
    if not isinstance(maps, int) or maps <= 0:
        raise NotCountable("no OutMaps")
    rows = op.out_elements() // maps
    return Cost(rows * weights + (op.out_elements() if _slot(op, "bias") is not None else 0), rows * weights)


def _matrix_multiply(op: Op) -> Cost:
    shape = op.shape(0)
    transposed = str(op.attr("MatrixOpA", "")).endswith("TRANSPOSE")
    if not shape:
        raise NotCountable("input 0 is a scalar")
    inner = shape[-2] if transposed and len(shape) > 1 else shape[-1]
    return matmul(op.out_elements(), inner)


def _pooling(op: Op) -> Cost:
    window = op.attr("WindowSize")
    if not isinstance(window, list) or not all(isinstance(w, int) and w > 0 for w in window):
        raise NotCountable("no WindowSize")
    return pooling(op.out_elements(), window)


def _elementwise(op: Op, ops: float = 1) -> Cost:
    return per_element(op.out_elements(), ops)


def _none(op: Op) -> Cost:
    return ZERO


FORMULAS: dict[str, Callable[..., Cost]] = {
    "convolution": _convolution, "deconvolution": _deconvolution, "fully_connected": _fully_connected,
    "matrix_multiply": _matrix_multiply, "pooling": _pooling, "elementwise": _elementwise, "none": _none,
}


@cache
def formula_by_op() -> dict[tuple[str, str], Callable[[Op], Cost]]:
    return formula_table("tensorrt", FORMULAS)


def cost(op: Op) -> Cost:
    """MACs of one engine layer; NotCountable with the reason when the file gives no formula's numbers."""
    formula = formula_by_op().get((op.type, ""))
    if formula is None:
        raise NotCountable(f"the layer graph gives no count for {op.type} layers")
    return formula(op)


def weight_slots(op: Op) -> tuple[tuple[int, None], ...]:
    slot = _slot(op, "weights")
    return () if slot is None else ((slot, None),)


def quantization_slots(op: Op) -> frozenset[int]:
    """An engine keeps its scales inside the layers: the file declares none."""
    return frozenset()


def attribute_weights(op: Op) -> tuple[int, int]:
    return 0, 0
