"""ONNX-ML (``ai.onnx.ml``) operators: their learned values live in attributes, not in initializers.

Parameters are the elements of the attributes the operator's data entry lists in ``params_from`` (a tree's
``nodes_values`` only at its branch nodes: a leaf stores a placeholder there); weight bytes are every list or
tensor attribute of the operator at its stored width (float 4, int 8 bytes, strings by length), structure
included. The cost formulas, per sample (a row of X [N, F]):
    * linear models: a dot product of the F features per class or target, + 1 for the intercept;
    * SVMs: per support vector a dot product of the F features and the kernel's operations, then one
      multiply-accumulate per dual coefficient (a linear SVM without support vectors: as a linear model);
    * tree ensembles: one compare per node on the deepest path of each tree (an upper bound of the nodes a
      sample visits), and one add per leaf weight of the leaf it reaches in each tree;
    * all of them: ``post_transform`` on each output score (softmax 3 per score, logistic or probit 1).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from renderer.core.ir import TensorAttribute
from renderer.data.operators import operator
from renderer.metrics.formulas import Cost, NotCountable, matmul, per_element, prod
from renderer.metrics.opview import Op

_POST_TRANSFORM_OPS = {"NONE": 0, "SOFTMAX": 3, "SOFTMAX_ZERO": 3, "LOGISTIC": 1, "PROBIT": 1}
_KERNEL_OPS = {"LINEAR": 0, "POLY": 2, "RBF": 2, "SIGMOID": 2}
"""Operations per support vector after its dot product: POLY (γ·d + c)^p, RBF exp(−γ·‖x − s‖²) (its squared
distance counted as the dot product), SIGMOID tanh(γ·d + c)."""
_MAX_TREE_NODES = 10_000_000


def _rows_features(op: Op) -> tuple[int, int]:
    """(samples, features) of X: [N, F], or [F] for one sample."""
    x = op.shape(0)
    if not x:
        raise NotCountable("scalar input")
    return (prod(x[:-1]) if len(x) > 1 else 1), x[-1]


def _numbers(op: Op, name: str) -> list[Any]:
    value = op.attr(name)
    return list(value) if isinstance(value, (list, tuple)) else []


def _count(op: Op, *names: str) -> int:
    """Elements of the first of ``names`` the op has (a list attribute, or its ``_as_tensor`` form)."""
    for name in names:
        value = op.attr(name)
        if isinstance(value, TensorAttribute):
            return value.size
        if isinstance(value, (list, tuple)):
            return len(value)
    return 0


_POST_TRANSFORM_CODES = ("NONE", "SOFTMAX", "LOGISTIC", "SOFTMAX_ZERO", "PROBIT")
"""TreeEnsemble (ai.onnx.ml 5) writes post_transform as an index into these."""


def _post_transform(op: Op, scores: int) -> Cost:
    transform = op.attr("post_transform", "NONE")
    if isinstance(transform, int) and 0 <= transform < len(_POST_TRANSFORM_CODES):
        transform = _POST_TRANSFORM_CODES[transform]
    transform = str(transform or "NONE").upper()
    if transform not in _POST_TRANSFORM_OPS:
        raise NotCountable(f"post_transform {transform!r}")
    return per_element(scores, _POST_TRANSFORM_OPS[transform])


def ml_linear(op: Op) -> Cost:
    """LinearClassifier, LinearRegressor: coefficients [outputs × F]."""
    rows, features = _rows_features(op)
    coefficients = _count(op, "coefficients")
    if features <= 0 or coefficients % features:
        raise NotCountable(f"{coefficients} coefficients for {features} features")
    outputs = coefficients // features
    return matmul(rows * outputs, features, bias=_count(op, "intercepts") > 0) + _post_transform(op, rows * outputs)


def ml_svm(op: Op) -> Cost:
    """SVMClassifier, SVMRegressor: support_vectors [S × F], coefficients one per (class pair ×) vector."""
    rows, features = _rows_features(op)
    vectors, coefficients = _count(op, "support_vectors"), _count(op, "coefficients")
    kernel = str(op.attr("kernel_type", "LINEAR") or "LINEAR").upper()
    if kernel not in _KERNEL_OPS:
        raise NotCountable(f"kernel_type {kernel!r}")
    outputs = max(1, _count(op, "rho"))
    if vectors == 0:  # a linear SVM keeps one coefficient row per class instead of support vectors
        if features <= 0 or coefficients % features:
            raise NotCountable(f"{coefficients} coefficients for {features} features")
        return matmul(rows * (coefficients // features), features, bias=True) + _post_transform(op, rows * outputs)
    if features <= 0 or vectors % features:
        raise NotCountable(f"{vectors} support vector values for {features} features")
    count = vectors // features
    kernels = matmul(rows * count, features) + per_element(rows * count, _KERNEL_OPS[kernel])
    dual = Cost(rows * coefficients + rows * outputs, rows * coefficients)  # coefficients, then + rho
    return kernels + dual + _post_transform(op, rows * outputs)


def ml_tree_ensemble(op: Op) -> Cost:
    """TreeEnsembleClassifier, TreeEnsembleRegressor: the deepest path of each tree, then its leaf's weights."""
    rows, _ = _rows_features(op)
    depths = _tree_depths(op)
    weights, leaves = _leaf_weights(op)
    adds = len(depths) * weights / leaves if leaves else 0  # one leaf per tree, its share of the weights
    outputs = max(1, _count(op, "base_values", "base_values_as_tensor"),
                  len(_numbers(op, "classlabels_int64s")) or len(_numbers(op, "classlabels_strings")),
                  int(op.attr("n_targets", 1) or 1))
    return Cost(rows * (sum(depths) + int(round(adds)))) + _post_transform(op, rows * outputs)


def ml_tree_ensemble_v5(op: Op) -> Cost:
    """TreeEnsemble (ai.onnx.ml 5): branch nodes and leaves in separate tables, a leaf flag on each child link;
    one weight per leaf."""
    rows, _ = _rows_features(op)
    roots = _numbers(op, "tree_roots")
    links = [_numbers(op, name) for name in ("nodes_truenodeids", "nodes_trueleafs", "nodes_falsenodeids",
                                              "nodes_falseleafs")]
    if not roots or len({len(link) for link in links}) != 1:
        raise NotCountable("tree node attributes of different lengths")
    if len(links[0]) > _MAX_TREE_NODES:
        raise NotCountable(f"{len(links[0]):,} tree nodes")
    children: dict[tuple[int, int], tuple[int, int] | None] = {}
    for i, (yes, yes_leaf, no, no_leaf) in enumerate(zip(*links)):
        # leaves become ids past the branch nodes: a leaf has no entry, so the path ends there
        children[(0, i)] = (-1 - yes if yes_leaf else yes, -1 - no if no_leaf else no)
    known: dict[tuple[int, int], int] = {}
    depths = [_depth(children, (0, root), known) for root in roots]
    outputs = max(1, int(op.attr("n_targets", 1) or 1))
    return Cost(rows * (sum(depths) + len(roots))) + _post_transform(op, rows * outputs)


def _leaf_weights(op: Op) -> tuple[int, int]:
    """(leaf weights, distinct leaves holding them)."""
    for prefix in ("class", "target"):
        trees, nodes = _numbers(op, f"{prefix}_treeids"), _numbers(op, f"{prefix}_nodeids")
        if trees:
            return len(trees), len(set(zip(trees, nodes)))
    return 0, 0


def _tree_depths(op: Op) -> list[int]:
    """Branch nodes on the deepest root-to-leaf path of each tree (roots: nodes no other node points to)."""
    trees, ids = _numbers(op, "nodes_treeids"), _numbers(op, "nodes_nodeids")
    true, false, modes = (_numbers(op, "nodes_truenodeids"), _numbers(op, "nodes_falsenodeids"),
                          _numbers(op, "nodes_modes"))
    if not trees or not len(trees) == len(ids) == len(true) == len(false) == len(modes):
        raise NotCountable("tree node attributes of different lengths")
    if len(trees) > _MAX_TREE_NODES:
        raise NotCountable(f"{len(trees):,} tree nodes")
    children: dict[tuple[int, int], tuple[int, int] | None] = {}
    for tree, node, yes, no, mode in zip(trees, ids, true, false, modes):
        children[(tree, node)] = None if str(mode).upper() == "LEAF" else (yes, no)
    pointed = {(tree, child) for (tree, _), pair in children.items() if pair for child in pair}
    depths: dict[int, int] = {}
    known: dict[tuple[int, int], int] = {}
    for key in children:
        if key not in pointed:
            depths[key[0]] = max(depths.get(key[0], 0), _depth(children, key, known))
    if len(depths) != len(set(trees)):
        raise NotCountable("a tree without a root: its nodes form a cycle")
    return [depths[tree] for tree in sorted(depths)]


def _depth(children: Mapping[tuple[int, int], tuple[int, int] | None], root: tuple[int, int],
           known: dict[tuple[int, int], int]) -> int:
    """Branch nodes on the longest path from ``root`` (``known``: depths found so far); a cycle is refused."""
    stack, open_nodes = [root], set()
    while stack:
        key = stack[-1]
        pair = children.get(key)
        if key in known or pair is None:  # a leaf, or a child id naming no node: the path ends
            known.setdefault(key, 0)
            stack.pop()
            continue
        waiting = [(key[0], c) for c in pair if (key[0], c) not in known]
        if not waiting:
            known[key] = 1 + max(known[(key[0], c)] for c in pair)
            open_nodes.discard(key)
            stack.pop()
            continue
        if key in open_nodes:
            raise NotCountable("a tree whose nodes form a cycle")
        open_nodes.add(key)
        stack.extend(waiting)
    return known[root]


def attribute_weights(op: Op) -> tuple[int, int]:
    """(parameters, bytes) an operator keeps in attributes, from its entry's ``params_from``; (0, 0) for others."""
    entry = operator("onnx", op.type)
    if entry is None or not entry.params_from or op.node.domain != "ai.onnx.ml":
        return 0, 0
    params = 0
    for name in entry.params_from:
        if name not in op.node.attributes:
            continue
        if name.startswith("nodes_values"):
            modes = _numbers(op, "nodes_modes")
            params += sum(1 for mode in modes if str(mode).upper() != "LEAF") if modes else _count(op, name)
        else:
            params += _count(op, name)
    return params, sum(_attribute_bytes(value) for value in op.node.attributes.values())


def _attribute_bytes(value: Any) -> int:
    from renderer.metrics.tensors import DTYPE_BITS

    if isinstance(value, TensorAttribute):
        return (value.size * DTYPE_BITS.get(value.dtype, 0) + 7) // 8
    if not isinstance(value, (list, tuple)):
        return 0
    return sum(8 if isinstance(v, int) else 4 if isinstance(v, float) else len(str(v).encode()) for v in value)
