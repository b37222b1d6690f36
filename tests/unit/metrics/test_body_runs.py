"""``renderer/metrics/body_runs.py``: a Scan body's operators count every run of the body, one per element of the
Scan's scan inputs. The model is skl2onnx's k-nearest-neighbours classifier (it finds the distances with a Scan
over the training samples); the counts come from the fitted estimator, and onnxruntime runs the file first."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from renderer.loaders.registry import load_model
from renderer.metrics import builtin as metrics

TRAIN = 150  # training samples: the Scan's length
COMPONENTS = 6  # PCA components: the length of each distance


def knn_model(path: Path) -> None:
    """A scaler, a PCA and a 5-nearest-neighbours classifier over scikit-learn's digits, as skl2onnx writes it."""
    pytest.importorskip("skl2onnx")
    from skl2onnx import to_onnx
    from sklearn.datasets import load_digits
    from sklearn.decomposition import PCA
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    x, y = load_digits(return_X_y=True)
    x = x.astype(np.float32)
    pipeline = make_pipeline(StandardScaler(), PCA(COMPONENTS, random_state=0), KNeighborsClassifier(5))
    pipeline.fit(x[:TRAIN], y[:TRAIN])
    path.write_bytes(to_onnx(pipeline, x[:1], target_opset={"": 17, "ai.onnx.ml": 3}).SerializeToString())
    import onnxruntime as ort

    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    assert session.run(["output_label"], {"X": x[TRAIN:TRAIN + 3]})[0].tolist() == pipeline.predict(
        x[TRAIN:TRAIN + 3]).tolist()


def test_a_scan_body_counts_each_run_of_it(tmp_path: Path) -> None:
    """The body subtracts one training sample from each projected sample and sums the squares: per run
    ``COMPONENTS`` subtractions and ``COMPONENTS`` squares added, and it runs once per training sample. Those
    MACs were counted once (1/150 of them), under the PCA's MatMul; the whole model's headline follows."""
    path = tmp_path / "knn.onnx"
    knn_model(path)
    model = load_model(path, dims={"X.axis0": 1})
    (scan,) = [node for node in model.nodes() if node.op_type == "Scan"]
    body = {node.op_type: node for node in scan.subgraphs[0].nodes}
    ops, _ = metrics.compute(model, {"macs"}, set(), progress=False)
    assert ops[body["Sub"].key]["macs"] == TRAIN * COMPONENTS
    assert ops[body["ReduceSumSquare"].key]["macs"] == TRAIN * COMPONENTS
    (projection,) = [node for node in model.main.nodes if node.op_type == "MatMul"]
    assert ops[projection.key]["macs"] == 64 * COMPONENTS < ops[body["Sub"].key]["macs"]
    outside = sum(row["macs"] for key, row in ops.items()
                  if isinstance(row["macs"], int) and key[1] == 0)
    assert metrics.model_costs(model).totals()["macs"] == outside + 2 * TRAIN * COMPONENTS
