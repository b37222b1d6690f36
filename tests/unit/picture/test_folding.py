"""Shape computations fold into the boxes that read them (issue 9), checked on torch's own exports.

The expected folded set is computed without our code: onnxruntime runs the model on two different token
sequences of the same shape with every intermediate tensor exposed, and the operators whose outputs are the
same both times are the ones computed from constants and shapes only.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest

import renderer
from conftest import ONNX, ROOT, SVG_NS, parse_svg, run_cli, svg_groups, tooltip_of
from renderer.compose.rendering import prepare
from renderer.picture.folding import fold

sys.path.insert(0, str(ROOT))
from benchmarks import transformer_models  # noqa: E402

TORCH_EXPORTS = ["bert_scoped.onnx", "bert_dynamo.onnx", "bert_scoped_int8.onnx"]


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The benchmark's 4-layer transformer (387 operators) with the TorchScript exporter's shape chains."""
    return transformer_models.write(tmp_path_factory.mktemp("gen") / "bert4.onnx", 4)


def data_invariant_nodes(path: Path) -> set[int]:
    """Indices of the nodes whose every output is equal on two different inputs of one shape."""
    model = onnx.load(str(path))
    listed = {o.name for o in model.graph.output}
    for node in model.graph.node:
        model.graph.output.extend(onnx.ValueInfoProto(name=o) for o in node.output if o and o not in listed)
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(7)
    first, second = rng.integers(1, 500, (2, 9)), rng.integers(1, 500, (2, 9))
    first[0, 6:], second[1, 4:] = 0, 0  # padding at different places: the attention masks differ too
    names = [o.name for o in session.get_outputs()]
    a = dict(zip(names, session.run(None, {"input_ids": first}), strict=True))
    b = dict(zip(names, session.run(None, {"input_ids": second}), strict=True))
    return {i for i, node in enumerate(model.graph.node)
            if all(np.array_equal(a[o], b[o]) for o in node.output if o)}


@pytest.mark.parametrize("name", [*TORCH_EXPORTS, "generated"])
def test_folded_operators_are_exactly_those_computed_from_constants_and_shapes(name: str, generated: Path) -> None:
    path = generated if name == "generated" else ONNX / name
    model = renderer.load_model(path)
    folding = fold(model)
    assert {n.index for n in model.main.nodes if folding.is_hidden(n)} == data_invariant_nodes(path)
    shape_ops = [n for n in model.main.nodes if n.op_type == "Shape"]
    assert shape_ops and all(folding.is_hidden(n) for n in shape_ops)
    assert not fold(model, show_constants=True).hidden


def test_torch_export_draws_only_the_computation(tmp_path: Path) -> None:
    """bert_scoped: 1,147 nodes, of which 726 are constants, shape chains and the position ids."""
    model = renderer.load_model(ONNX / "bert_scoped.onnx")
    expected = data_invariant_nodes(ONNX / "bert_scoped.onnx")
    source = renderer.to_dot(model, options=renderer.RenderOptions(collapse="none"))  # one flat picture
    drawn = {int(i) for i in re.findall(r'id="op-0-(\d+)"', source)}
    assert drawn == set(range(len(model.main.nodes))) - expected and len(drawn) == 421
    assert f"1,147 ({len(expected)} folded into the boxes that read them)" in source


def test_shape_chains_fold_into_the_reshape_that_reads_them(generated: Path, tmp_path: Path) -> None:
    model = renderer.load_model(generated)
    expected = data_invariant_nodes(generated)
    out = tmp_path / "folded.svg"
    run = run_cli("render", generated, "-o", out, "--no-sidecar", "--collapse", "none")  # one picture, no pages
    assert run.returncode == 0, run.stderr
    svg = parse_svg(out)
    ops = svg_groups(svg, "op")
    assert set(ops) == {n.element_id for n in model.main.nodes if n.index not in expected}
    legend = " ".join(t.text or "" for g in svg.iter(f"{SVG_NS}g") if g.get("id") == "legend"
                      for t in g.iter(f"{SVG_NS}text"))
    assert f"387 ({len(expected)} folded into the boxes that read them)" in legend

    reshape = next(n for n in model.main.nodes if n.name == "/encoder/layer.0/attention/self/Reshape")
    texts = " ".join(t.text or "" for t in ops[reshape.element_id].iter(f"{SVG_NS}text"))
    assert "shape [4] int64 (computed)" in texts
    read = "/encoder/layer.0/attention/self/query/Add_output_0"
    # Concat, 2 Unsqueeze, 2 Gather, 2 Shape (the Constant indices are data, not computation)
    assert f"shape: computed by 7 folded ops from the shape of {read}" in tooltip_of(ops[reshape.element_id])
    # the activation whose shape is read has one edge left: to the Reshape, none to the two Shape ops
    query = next(v for v in model.main.values if v.name == read)
    assert len(query.consumers) == 3
    edges = [g for g in svg_groups(svg, "tensor") if g == query.element_id or g.startswith(query.element_id + ".")]
    assert edges == [query.element_id]


def test_show_constants_draws_every_operator(generated: Path, tmp_path: Path) -> None:
    out = tmp_path / "all.svg"
    run = run_cli("render", generated, "-o", out, "--no-sidecar", "--show-constants", "--collapse", "none")
    assert run.returncode == 0, run.stderr
    model = renderer.load_model(generated)
    assert set(svg_groups(parse_svg(out), "op")) == {n.element_id for n in model.main.nodes}


def test_heatmap_fits_the_drawn_boxes_and_folded_annotations_reach_the_reader(generated: Path,
                                                                              tmp_path: Path) -> None:
    """Folded ops get a latency 1,000 times any drawn op's: the scale ends at the drawn maximum, and the
    folded Shape's value shows in the tooltip of the Reshape that reads the chain."""
    model = renderer.load_model(generated)
    folding = fold(model)
    rows = ["id,latency_us"] + [f"{n.index},{1000.0 * (n.index + 1) if folding.is_hidden(n) else n.index + 1}"
                                for n in model.main.nodes]
    notes = tmp_path / "latency.csv"
    notes.write_text("\n".join(rows) + "\n", encoding="utf-8")
    annotations = renderer.load_annotations([notes], model)
    scene = prepare(model, annotations, renderer.RenderOptions(color_by="latency_us"))
    assert scene.heatmap is not None
    assert scene.heatmap.scale.vmax == max(n.index + 1 for n in model.main.nodes if folding.is_drawn(n))
    assert not set(scene.heatmap.values) & folding.hidden

    out = tmp_path / "latency.svg"
    assert run_cli("render", generated, "-a", notes, "--color-by", "latency_us", "-o", out,
                   "--no-sidecar", "-q", "--collapse", "none").returncode == 0  # one picture, no pages
    reshape = next(n for n in model.main.nodes if n.name == "/encoder/layer.1/attention/self/Reshape")
    shape = next(n for n in model.main.nodes if n.name == "/encoder/layer.1/attention/self/Shape")
    tooltip = tooltip_of(svg_groups(parse_svg(out), "op")[reshape.element_id])
    assert shape.index == 119 and "folded Shape 0:119: latency_us 120k" in tooltip  # 1000 × (119 + 1)


def test_weight_dequantize_folds_as_its_stored_tensor() -> None:
    """A DequantizeLinear of a stored int8 weight computes from constants only: the Conv lists the weight."""
    model = renderer.load_model(ONNX / "tiny_cnn_qdq_u8.onnx")
    folding = fold(model)
    conv = next(n for n in model.main.nodes if n.name == "stem/conv")
    dequantize = conv.inputs[1].producer
    assert dequantize is not None and dequantize.op_type == "DequantizeLinear" and folding.is_hidden(dequantize)
    activation = conv.inputs[0].producer
    assert activation is not None and activation.op_type == "DequantizeLinear" and folding.is_drawn(activation)
    stored = dequantize.inputs[0]
    assert folding.stored(conv.inputs[1]) is stored
    shape = "×".join(map(str, stored.initializer.shape))
    assert f"W [{shape}] uint8→float32" in renderer.to_dot(model)
