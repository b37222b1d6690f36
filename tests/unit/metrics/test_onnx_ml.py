"""ONNX-ML models from skl2onnx: parameters from the attributes that hold them, the documented costs, and a colour
metric that has no value anywhere drawing n/a boxes (exit 0, one line). Hand counts come from the fitted
scikit-learn estimators, not from the ONNX files; onnxruntime runs every file first."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

from conftest import first_fill, parse_svg, run_cli, svg_groups, tooltip_of

N = 5  # --dim X.axis0=5: skl2onnx leaves the batch dim free (an unnamed dim, X.axis0)
POST = {"NONE": 0, "SOFTMAX": 3, "LOGISTIC": 1}


def data() -> tuple[np.ndarray, np.ndarray]:
    from sklearn.datasets import load_iris

    x, y = load_iris(return_X_y=True)
    return x.astype(np.float32), y


def tree_counts(estimators: list, outputs_per_leaf: int) -> tuple[int, int, int]:
    """(branch nodes, leaf weights, Σ depth) of fitted scikit-learn trees."""
    branches = sum(t.tree_.node_count - t.tree_.n_leaves for t in estimators)
    leaves = sum(t.tree_.n_leaves for t in estimators) * outputs_per_leaf
    return branches, leaves, sum(t.tree_.max_depth for t in estimators)


def random_forest():  # type: ignore[no-untyped-def]
    from sklearn.ensemble import RandomForestClassifier

    x, y = data()
    model = RandomForestClassifier(n_estimators=4, max_depth=4, random_state=0).fit(x, y)
    branches, weights, depth = tree_counts(model.estimators_, 3)
    macs = N * (depth + len(model.estimators_) * 3)  # compares on the deepest paths, a leaf's 3 weights per tree
    return model, "TreeEnsembleClassifier", branches + weights, macs


def gradient_boosting():  # type: ignore[no-untyped-def]
    from sklearn.ensemble import GradientBoostingRegressor

    x, _ = data()
    model = GradientBoostingRegressor(n_estimators=5, max_depth=3, random_state=0).fit(x, x[:, 0])
    trees = [t[0] for t in model.estimators_]
    branches, weights, depth = tree_counts(trees, 1)
    return model, "TreeEnsembleRegressor", branches + weights + 1, N * (depth + len(trees))  # + base value


def linear_regression():  # type: ignore[no-untyped-def]
    from sklearn.linear_model import LinearRegression

    x, _ = data()
    model = LinearRegression().fit(x[:, 1:], x[:, 0])
    features = 3
    return model, "LinearRegressor", features + 1, N * features + N


def svr():  # type: ignore[no-untyped-def]
    from sklearn.svm import SVR

    x, _ = data()
    model = SVR().fit(x, x[:, 0])
    vectors, features = model.support_vectors_.shape
    params = vectors * features + vectors + 1 + 3  # support vectors, dual coefficients, rho, γ/coef0/degree
    macs = N * (vectors * features + 2 * vectors) + N * vectors + N  # RBF kernels, then Σ coefficient × kernel + ρ
    return model, "SVMRegressor", params, macs


CASES = {"random_forest": random_forest, "gradient_boosting": gradient_boosting,
         "linear_regression": linear_regression, "svr": svr}


def convert(model, path: Path, features: int) -> None:  # type: ignore[no-untyped-def]
    import onnxruntime as ort
    from skl2onnx import to_onnx

    path.write_bytes(to_onnx(model, np.zeros((1, features), np.float32)).SerializeToString())
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    session.run(None, {session.get_inputs()[0].name: np.ones((N, features), np.float32)})


def operator_rows(path: Path, out: Path, *extra: str) -> tuple[dict[str, dict[str, str]], str]:
    done = run_cli("metrics", path, "-o", out, "--dim", f"X.axis0={N}", *extra)
    assert done.returncode == 0, done.stderr
    with out.open(newline="", encoding="utf-8") as f:
        return {row["id"]: row for row in csv.DictReader(f) if row["kind"] == "operator"}, done.stderr


@pytest.mark.parametrize("case", sorted(CASES))
def test_estimator_params_and_macs_match_hand_counts(case: str, tmp_path: Path) -> None:
    model, op_type, params, macs = CASES[case]()
    path = tmp_path / f"{case}.onnx"
    convert(model, path, model.n_features_in_)
    rows, line = operator_rows(path, tmp_path / "m.csv")
    import onnx

    nodes = onnx.load(path).graph.node
    index = next(i for i, n in enumerate(nodes) if n.op_type == op_type)
    row = rows[f"0:{index}"]
    assert nodes[index].domain == "ai.onnx.ml"
    assert int(row["params"]) == params
    assert int(row["macs"]) == macs
    assert int(row["weight_bytes"]) > 4 * params // 2  # the attribute tables, stored as floats and ints
    assert f"parameters {params}" in line or f"parameters {params / 1000:.1f}k" in line, line
    assert "n/a" not in line.split("MACs ")[1].split(",")[0], line


def test_linear_classifier_normalizer_zipmap(tmp_path: Path) -> None:
    """StandardScaler → Normalizer → LogisticRegression, as skl2onnx writes it: Scaler, Normalizer,
    LinearClassifier (softmax), Cast, Normalizer, ZipMap."""
    import onnx
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import Normalizer, StandardScaler

    x, y = data()
    pipeline = make_pipeline(StandardScaler(), Normalizer(), LogisticRegression(max_iter=500)).fit(x, y)
    path = tmp_path / "pipeline.onnx"
    convert(pipeline, path, 4)
    rows, _ = operator_rows(path, tmp_path / "m.csv")
    nodes = onnx.load(path).graph.node
    by_type = {}
    for i, node in enumerate(nodes):
        by_type.setdefault(node.op_type, []).append(rows[f"0:{i}"])
    classes, features = 3, 4
    scaler, linear, zipmap = by_type["Scaler"][0], by_type["LinearClassifier"][0], by_type["ZipMap"][0]
    assert int(scaler["params"]) == 2 * features  # offset and scale
    assert int(scaler["macs"]) == 2 * N * features
    assert [int(r["params"]) for r in by_type["Normalizer"]] == [0, 0]
    assert [int(r["macs"]) for r in by_type["Normalizer"]] == [2 * N * features, 2 * N * classes]
    assert int(linear["params"]) == classes * features + classes
    post = next(a.s.decode() for a in nodes[[n.op_type for n in nodes].index("LinearClassifier")].attribute
                if a.name == "post_transform")
    assert int(linear["macs"]) == N * classes * features + N * classes + POST[post] * N * classes
    assert zipmap["params"] == "0" and zipmap["macs"] == "0"

    svg = tmp_path / "pipeline.svg"
    done = run_cli("render", path, "--color-by", "macs", "--dim", f"X.axis0={N}", "-o", svg)
    assert done.returncode == 0 and "n/a" not in done.stderr, done.stderr
    fills = {ident: first_fill(group) for ident, group in svg_groups(parse_svg(svg), "op").items()}
    assert len(set(fills.values())) >= 3  # coloured by their MACs, not one n/a grey


def test_a_colour_metric_with_no_value_anywhere_draws_na_boxes(tmp_path: Path) -> None:
    model, *_ = linear_regression()
    path = tmp_path / "linear.onnx"
    convert(model, path, 3)
    svg = tmp_path / "linear.svg"
    done = run_cli("render", path, "--color-by", "sparsity", "-o", svg)  # no initializer: no op has weights
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stderr.splitlines() if "sparsity" in line]
    assert len(lines) == 1 and "every box is drawn n/a" in lines[0], done.stderr
    boxes = svg_groups(parse_svg(svg), "op")
    assert boxes and all("sparsity" not in tooltip_of(g) or "sparsity: n/a" in tooltip_of(g) for g in boxes.values())
    legend = next(g for g in parse_svg(svg).iter("{http://www.w3.org/2000/svg}g") if g.get("id") == "legend")
    assert "without a value" in "".join(t.text or "" for t in legend.iter("{http://www.w3.org/2000/svg}text"))

    done = run_cli("render", path, "--color-by", "macs", "--keep-free-dims", "-o", svg)  # MACs n/a everywhere
    assert done.returncode == 0, done.stderr
    said = [line for line in done.stderr.splitlines() if "macs" in line or "--dim" in line]
    assert len(said) == 1 and "X.axis0" in said[0], done.stderr


def tree_regressor(path: Path, true_ids: list[int], false_ids: list[int], modes: list[str]) -> None:
    """One TreeEnsembleRegressor tree over X [N, 2] with the given node links, written with onnx.helper."""
    import onnx
    from onnx import TensorProto, helper

    count = len(modes)
    leaves = [i for i, mode in enumerate(modes) if mode == "LEAF"]
    node = helper.make_node(
        "TreeEnsembleRegressor", ["X"], ["y"], domain="ai.onnx.ml", n_targets=1,
        nodes_treeids=[0] * count, nodes_nodeids=list(range(count)), nodes_featureids=[0] * count,
        nodes_values=[0.5] * count, nodes_modes=modes, nodes_truenodeids=true_ids, nodes_falsenodeids=false_ids,
        target_treeids=[0] * len(leaves), target_nodeids=leaves, target_ids=[0] * len(leaves),
        target_weights=[1.0] * len(leaves))
    graph = helper.make_graph([node], "tree", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [N, 2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [N, 1])])
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid("ai.onnx.ml", 3)]
    onnx.save(helper.make_model(graph, opset_imports=opsets), path)


def test_hand_made_trees(tmp_path: Path) -> None:
    """A lopsided tree (depth 3 on one side, 1 on the other) by hand, and one whose links form a cycle."""
    import onnxruntime as ort

    path = tmp_path / "tree.onnx"
    # (true, false) children: 0 → (6, 1), 1 → (5, 2), 2 → (4, 3); 3–6 leaves: 3 branches on the deepest path,
    # onnxruntime's order (a false child right after its parent)
    tree_regressor(path, [6, 5, 4, 0, 0, 0, 0], [1, 2, 3, 0, 0, 0, 0], ["BRANCH_LEQ"] * 3 + ["LEAF"] * 4)
    ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"X": np.ones((N, 2), np.float32)})
    done = run_cli("metrics", path, "-o", tmp_path / "m.csv")
    assert done.returncode == 0, done.stderr
    with (tmp_path / "m.csv").open(newline="", encoding="utf-8") as f:
        row = next(r for r in csv.DictReader(f) if r["kind"] == "operator")
    assert int(row["params"]) == 3 + 4  # 3 split values, 4 leaf weights
    assert int(row["macs"]) == N * (3 + 1)  # the deepest path's 3 compares, then 1 leaf weight

    cycle = tmp_path / "cycle.onnx"
    tree_regressor(cycle, [1, 0, 0], [2, 0, 0], ["BRANCH_LEQ", "BRANCH_LEQ", "LEAF"])  # 1 → 0: no root at all
    done = run_cli("metrics", cycle, "-o", tmp_path / "c.csv")
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    with (tmp_path / "c.csv").open(newline="", encoding="utf-8") as f:
        row = next(r for r in csv.DictReader(f) if r["kind"] == "operator")
    assert row["macs"].startswith("n/a (") and "cycle" in row["macs"]

    looping = tmp_path / "loop.onnx"
    tree_regressor(looping, [1, 3, 0, 0], [2, 1, 0, 0], ["BRANCH_LEQ", "BRANCH_LEQ", "LEAF", "LEAF"])  # 1 → 1
    done = run_cli("metrics", looping, "-o", tmp_path / "l.csv")
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    with (tmp_path / "l.csv").open(newline="", encoding="utf-8") as f:
        row = next(r for r in csv.DictReader(f) if r["kind"] == "operator")
    assert row["macs"].startswith("n/a (") and "cycle" in row["macs"]


def test_tree_ensemble_of_ml_opset_5(tmp_path: Path) -> None:
    """TreeEnsemble (ai.onnx.ml 5), written with onnx.helper and run by onnxruntime: the same lopsided tree as
    above, its branch nodes and leaves in separate tables."""
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper

    node = helper.make_node(
        "TreeEnsemble", ["X"], ["y"], domain="ai.onnx.ml", n_targets=1, aggregate_function=1, post_transform=0,
        tree_roots=[0], nodes_featureids=[0, 1, 0], nodes_modes=numpy_helper.from_array(np.zeros(3, np.uint8)),
        nodes_splits=numpy_helper.from_array(np.array([0.5, 0.25, 0.75], np.float32)),
        nodes_truenodeids=[0, 1, 2], nodes_trueleafs=[1, 1, 1], nodes_falsenodeids=[1, 2, 3],
        nodes_falseleafs=[0, 0, 1], leaf_targetids=[0] * 4,
        leaf_weights=numpy_helper.from_array(np.array([1, 2, 3, 4], np.float32)))
    graph = helper.make_graph([node], "tree5", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [N, 2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [N, 1])])
    path = tmp_path / "tree5.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21),
                                                      helper.make_opsetid("ai.onnx.ml", 5)]), path)
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    assert session.run(None, {"X": np.ones((N, 2), np.float32)})[0].ravel().tolist() == [4.0] * N  # all false
    done = run_cli("metrics", path, "-o", tmp_path / "m.csv")
    assert done.returncode == 0, done.stderr
    with (tmp_path / "m.csv").open(newline="", encoding="utf-8") as f:
        row = next(r for r in csv.DictReader(f) if r["kind"] == "operator")
    assert int(row["params"]) == 3 + 4
    assert int(row["macs"]) == N * (3 + 1)
    assert int(row["weight_bytes"]) == 3 * 4 + 4 * 4 + 3 + 8 * (1 + 3 + 3 * 4 + 4)  # tensors, then int lists
