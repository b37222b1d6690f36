"""The ONNX loader (``renderer.loaders.onnx.loader``) on what converters write besides tensors: a scikit-learn
classifier from skl2onnx ends in ZipMap, whose output is a sequence of maps (label → probability); its type is
said as such in ``info``, the output box, the edge into it and the tooltip, never as an unknown ``?``."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest

from conftest import SVG_NS, parse_svg, run_cli, svg_groups, tooltip_of
from renderer.loaders.registry import load_model

ZIPMAP = "seq(map(int64, float32))"


@pytest.fixture(scope="module")
def classifier(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A random forest fitted on iris, converted as skl2onnx does by default (ZipMap on the probabilities)."""
    pytest.importorskip("skl2onnx")
    from skl2onnx import to_onnx
    from sklearn.datasets import load_iris
    from sklearn.ensemble import RandomForestClassifier

    x, y = load_iris(return_X_y=True)
    fitted = RandomForestClassifier(n_estimators=3, max_depth=3, random_state=0).fit(x.astype(np.float32), y)
    path = tmp_path_factory.mktemp("zipmap") / "forest.onnx"
    onnx.save(to_onnx(fitted, x[:1].astype(np.float32)), path)
    return path


def test_a_zipmap_output_is_a_sequence_of_maps(classifier: Path, tmp_path: Path) -> None:
    proto = onnx.load(classifier)
    assert [o.type.WhichOneof("value") for o in proto.graph.output] == ["tensor_type", "sequence_type"]
    model = load_model(classifier)
    probabilities = model.main.outputs[1]
    assert probabilities.producer.op_type == "ZipMap"
    assert (str(probabilities.type), probabilities.type.shape_text()) == (ZIPMAP, ZIPMAP)
    assert str(model.main.outputs[0].type) == "int64[1]"  # the batch assumed 1: a tensor keeps its shape

    info = run_cli("info", classifier)
    assert info.returncode == 0, info.stderr
    assert any(line.split()[1:3] == [probabilities.name, "seq(map(int64,"] for line in info.stdout.splitlines()
               if line.strip().startswith("0:")), info.stdout

    svg = tmp_path / "forest.svg"
    assert run_cli("render", classifier, "-o", svg, "--no-sidecar").returncode == 0
    root = parse_svg(svg)
    box = next(g for g in svg_groups(root, "graph-output").values()
               if probabilities.name in [t.text for t in g.iter(f"{SVG_NS}text")])
    assert ZIPMAP in [t.text for t in box.iter(f"{SVG_NS}text")] and ZIPMAP in tooltip_of(box)
    labels = [t.text for g in svg_groups(root, "edge").values() for t in g.iter(f"{SVG_NS}text")]
    assert ZIPMAP in labels and "?" not in labels
