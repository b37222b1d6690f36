"""What an operator box and an edge say (renderer/picture/dot.py): exporter metadata kept to the tooltip, long names
elided in the middle, invented dims shown as ``?``, shapes in characters every font has, a box for every
operator writing a graph output, standard ONNX domains never called custom ops."""

from __future__ import annotations

from pathlib import Path

import onnx
from onnx import TensorProto, helper

from conftest import ONNX, SVG_NS, parse_svg, run_cli, svg_groups, tooltip_of

WGL4_EXTRA = set("\xa0×·…→—›«»–’‘“”•±°µ²³¼½¾ΔΣ≤≥")
"""Non-ASCII characters our labels may use: all in WGL4, the set Arial, Helvetica and DejaVu fonts share."""


def box_texts(group) -> list[str]:  # type: ignore[no-untyped-def]
    return [t.text or "" for t in group.iter(f"{SVG_NS}text")]


def render_svg(tmp_path: Path, model: Path, *args: str) -> Path:
    out = tmp_path / f"{model.stem}.svg"
    run = run_cli("render", model, "--collapse", "none", *args, "-o", out)
    assert run.returncode == 0, run.stderr
    return out


def test_exporter_metadata_stays_in_the_tooltip_unless_show_all(tmp_path: Path) -> None:
    """torch's dynamo exporter writes namespace and pkg.torch.onnx.* props on every node of bert_dynamo."""
    model = onnx.load(ONNX / "bert_dynamo.onnx")
    stored = {p.key for n in model.graph.node for p in n.metadata_props}
    assert {"namespace", "pkg.torch.onnx.name_scopes"} <= stored
    ops = svg_groups(parse_svg(render_svg(tmp_path, ONNX / "bert_dynamo.onnx")), "op")
    assert len(ops) > 100
    for group in ops.values():
        text = " ".join(box_texts(group))
        assert "pkg.torch" not in text and "namespace" not in text, text
    with_props = [g for g in ops.values() if "pkg.torch.onnx.name_scopes: " in tooltip_of(g)]
    assert len(with_props) > 100
    assert all(tooltip_of(g).count("pkg.torch.onnx.name_scopes: ") == 1 for g in with_props)  # once, not twice
    everything = svg_groups(parse_svg(render_svg(tmp_path, ONNX / "bert_dynamo.onnx", "--show", "all")), "op")
    assert sum("pkg.torch.onnx.name_scopes:" in " ".join(box_texts(g)) for g in everything.values()) > 100


def chain_model(path: Path, names: list[str], dims: list[str | int]) -> Path:
    nodes = [helper.make_node("Relu", [f"t{i}"], [f"t{i + 1}"], name=name) for i, name in enumerate(names)]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("t0", TensorProto.FLOAT, dims)],
                              [helper.make_tensor_value_info(f"t{len(names)}", TensorProto.FLOAT, dims)])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def test_long_names_keep_their_distinctive_tail(tmp_path: Path) -> None:
    prefix = "If_0_else_branch__Inline_0__/encoder/layers.0/self_attn/very/deep/scope/"
    names = [f"{prefix}Relu_{i}_tail{i}" for i in range(6)]
    svg = render_svg(tmp_path, chain_model(tmp_path / "long.onnx", names, [1, 8]))
    shown = {gid: box_texts(g)[2] for gid, g in svg_groups(parse_svg(svg), "op").items()}
    assert len(set(shown.values())) == 6, shown  # cut from the right they would all read the same
    for i in range(6):
        text = shown[f"op-0-{i}"]
        assert text.startswith("If_0_") and text.endswith(f"Relu_{i}_tail{i}") and "…" in text, text
        assert len(text) <= 48


def test_invented_dims_read_question_marks_with_the_name_in_the_tooltip(tmp_path: Path) -> None:
    svg = render_svg(tmp_path, chain_model(tmp_path / "unk.onnx", ["a", "b"], ["unk__662", 1, "batch"]),
                     "--keep-free-dims")  # else unk__662 and batch are assumed 1
    root = parse_svg(svg)
    edges = svg_groups(root, "tensor")
    labels = {" ".join(box_texts(g)) for g in edges.values()}
    assert labels == {"?×1×batch"}, labels
    assert all("unk__662×1×batch" in tooltip_of(g) for g in edges.values())


def test_labels_use_only_characters_every_font_has(tmp_path: Path) -> None:
    for model in (ONNX / "tiny_cnn_qdq_u8.onnx", ONNX / "bert_scoped.onnx", ONNX / "silero_vad.onnx"):
        root = parse_svg(render_svg(tmp_path, model))
        text = "".join(t.text or "" for t in root.iter(f"{SVG_NS}text"))
        odd = {c for c in text if ord(c) > 127} - WGL4_EXTRA
        assert not odd, (model.name, sorted(odd))


def test_constant_writing_a_graph_output_gets_a_box_and_ml_ops_are_standard(tmp_path: Path) -> None:
    constant = helper.make_node("Constant", [], ["k"], name="the_constant",
                                value=helper.make_tensor("v", TensorProto.FLOAT, [2], [1.0, 2.0]))
    binarize = helper.make_node("Binarizer", ["x"], ["y"], name="binarize", domain="ai.onnx.ml", threshold=0.5)
    graph = helper.make_graph([constant, binarize], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])],
                              [helper.make_tensor_value_info("k", TensorProto.FLOAT, [2]),
                               helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("ai.onnx.ml", 3)])
    onnx.checker.check_model(model)
    onnx.save(model, tmp_path / "ml.onnx")
    import onnxruntime

    outputs = onnxruntime.InferenceSession(str(tmp_path / "ml.onnx")).run(None, {"x": [0.1, 0.7, 0.9]})
    assert [list(o) for o in outputs] == [[1.0, 2.0], [0.0, 1.0, 1.0]]  # a real, runnable model
    root = parse_svg(render_svg(tmp_path, tmp_path / "ml.onnx", "--color-by", "macs"))
    ops = svg_groups(root, "op")
    assert set(ops) == {"op-0-0", "op-0-1"}
    assert "the_constant" in box_texts(ops["op-0-0"])
    edge_ends = {g.get("id"): (g.find(f"{SVG_NS}title").text or "") for g in svg_groups(root, "tensor").values()}
    assert any(title.startswith("op_0_0") and "out_0_" in title for title in edge_ends.values()), edge_ends
    tip = tooltip_of(ops["op-0-1"])
    # ai.onnx.ml is a standard domain: Binarizer is counted as an elementwise op (one per element), not a custom op
    assert "macs: 3" in tip and "custom op" not in tip


def _labelled_edges(source: str) -> int:
    return sum(" -> " in line and "label=" in line for line in source.splitlines())


def test_a_scene_made_with_other_options_draws_its_edges_by_them() -> None:
    """A scene's edge attributes are made once and reused by every emission of it (``Scene.edge_styles``: the flat
    picture, then its pages), so two emissions of one scene are the same text; a scene made from it with other
    options (``dataclasses.replace``, as batch makes one per heatmap) draws its edges by its own options."""
    import dataclasses

    import renderer
    from renderer.compose.rendering import prepare
    from renderer.picture import dot

    scene = prepare(renderer.load_model(ONNX / "tiny_cnn.onnx"), None, renderer.RenderOptions(collapse="none"))
    first = dot.emit(scene)
    assert _labelled_edges(first) >= 5 and scene.edge_styles
    assert dot.emit(scene) == first
    unlabelled = dataclasses.replace(scene, options=dataclasses.replace(scene.options, edge_labels=False))
    assert not unlabelled.edge_styles
    again = dot.emit(unlabelled)
    assert _labelled_edges(again) == 0 and again.count(" -> ") == first.count(" -> ")
