"""LLMs made by onnxruntime-genai's model builder (tests/support/genai_models.py): what annograph counts on them."""

from __future__ import annotations

import csv
import shutil
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from conftest import parse_svg, run_cli, svg_groups, tooltip_of
from genai_models import CONFIG


@pytest.mark.parametrize("precision", ["int4", "fp32"])
def test_the_builder_makes_the_model_people_ship(genai_model, precision: str) -> None:
    import onnx

    path = genai_model(precision)
    model = onnx.load(str(path), load_external_data=False)
    ops = Counter(node.op_type for node in model.graph.node)
    layers = CONFIG["num_hidden_layers"]
    assert ops["GroupQueryAttention"] == layers
    assert ops["MatMulNBits" if precision == "int4" else "MatMul"] == 5 * layers + 1  # qkv, o, gate, up, down; lm_head
    inputs = {i.name for i in model.graph.input}
    assert {f"past_key_values.{n}.{kv}" for n in range(layers) for kv in ("key", "value")} <= inputs
    assert (path.parent / "model.onnx.data").stat().st_size > 0
    assert any(t.data_location == onnx.TensorProto.EXTERNAL for t in model.graph.initializer)


PREFILL = {"batch_size": 1, "sequence_length": 8, "past_sequence_length": 0, "total_sequence_length": 8,
           "kv_cache_dim": 16}
DECODE = {"batch_size": 1, "sequence_length": 1, "past_sequence_length": 7, "total_sequence_length": 8,
          "kv_cache_dim": 16}


def metrics(model: Path, out: Path, dims: dict[str, int]) -> tuple[dict[str, dict[str, str]], str]:
    """``annograph metrics`` on ``model`` with ``dims`` pinned: the CSV's operator rows by id, and stderr."""
    pinned = [arg for name, value in dims.items() for arg in ("--dim", f"{name}={value}")]
    run = run_cli("metrics", model, "-o", out, *pinned)
    assert run.returncode == 0, run.stderr
    with out.open(newline="") as f:
        rows = {row["id"]: row for row in csv.DictReader(f) if row["kind"] == "operator"}
    return rows, run.stderr


def op_ids(model: Path, op_type: str) -> list[str]:
    import onnx

    nodes = onnx.load(str(model), load_external_data=False).graph.node
    return [f"0:{i}" for i, node in enumerate(nodes) if node.op_type == op_type]


def without_value_info(model: Path, folder: Path) -> Path:
    """A copy of ``model`` (its external data beside it) without the value_info the builder wrote, as many
    exporters leave it: onnx cannot infer com.microsoft ops, so their outputs take the shape run."""
    import onnx

    proto = onnx.load(str(model), load_external_data=False)
    del proto.graph.value_info[:]
    folder.mkdir()
    onnx.save(proto, str(folder / model.name))
    shutil.copy(model.parent / "model.onnx.data", folder / "model.onnx.data")
    return folder / model.name


@pytest.mark.parametrize("precision", ["int4", "fp32"])
def test_the_shape_run_loads_the_genai_models(genai_model, tmp_path: Path, precision: str) -> None:
    # the builder's own value_info pins every shape: nothing to run for, and no failed run either (the
    # optional outputs left out, named "", used to be exposed and broke onnxruntime's load of the copy)
    rows, err = metrics(genai_model(precision), tmp_path / "as-built.csv", PREFILL)
    assert "onnxruntime" not in err and "GetMLDataType" not in err, err
    bare = without_value_info(genai_model(precision), tmp_path / "bare")
    for name, dims in (("prefill", PREFILL), ("decode", DECODE)):
        rows, err = metrics(bare, tmp_path / f"{name}.csv", dims)
        # 26 tensors: the outputs of the contrib ops and what follows them; the external data is read by
        # onnxruntime from the model's folder, and the mask all zeros (no token) that GroupQueryAttention refuses
        # is retried as ones
        assert (f"{bare}: shapes of 26 of 26 tensors that static inference cannot reach were taken from one "
                "onnxruntime run on zero inputs but for 'attention_mask', all ones") in err, err
        hidden, heads = CONFIG["hidden_size"], CONFIG["num_attention_heads"]
        kv = CONFIG["num_key_value_heads"] * hidden // heads
        matmul = "MatMulNBits" if precision == "int4" else "MatMul"
        qkv, o_proj = op_ids(bare, matmul)[:2]
        tokens = dims["sequence_length"]
        assert int(rows[qkv]["macs"]) == tokens * hidden * (hidden + 2 * kv)  # its input came from the run
        assert int(rows[o_proj]["output_bytes"]) == tokens * hidden * 4  # GroupQueryAttention's output, run


@pytest.mark.parametrize(("step", "dims"), [("prefill", PREFILL), ("decode", DECODE)])
def test_group_query_attention_macs_match_a_hand_count(genai_model, tmp_path: Path, step: str,
                                                       dims: dict[str, int]) -> None:
    model = genai_model("int4")
    pinned = {k: v for k, v in dims.items() if k != "kv_cache_dim"}  # the head size comes from the query
    rows, _ = metrics(model, tmp_path / "m.csv", pinned)
    gqa = op_ids(model, "GroupQueryAttention")
    assert len(gqa) == CONFIG["num_hidden_layers"]
    # by hand, from the config: 4 query heads of 16 values (hidden 64), 2 KV heads; rotary over the whole head
    # (cos_cache is [128, 8]); batch 1
    heads, kv_heads, head = 4, 2, 16
    new, past = dims["sequence_length"], dims["past_sequence_length"]
    total = past + new
    qk = heads * new * total * head  # every query row against every key, as the CPU kernel's GEMM
    av = heads * new * total * head
    causal = sum(past + i + 1 for i in range(new))  # keys each query row's softmax normalizes
    softmax = 3 * heads * causal
    rotary = 3 * new * (heads + kv_heads) * head  # Q and K rotated: 2 multiplies and an add per value
    expected = qk + av + softmax + rotary
    assert expected == {"prefill": 4096 + 4096 + 3 * 4 * 36 + 2304, "decode": 512 + 512 + 3 * 4 * 8 + 288}[step]
    for op in gqa:
        assert int(rows[op]["macs"]) == expected
        assert int(rows[op]["flops"]) == 2 * expected
    # the model total counts them: nothing n/a any more
    assert not [row["id"] for row in rows.values() if row["macs"].startswith("n/a")]


def test_the_picture_shows_attention_macs(genai_model, tmp_path: Path) -> None:
    model = genai_model("fp32")
    pinned = [arg for name, value in PREFILL.items() for arg in ("--dim", f"{name}={value}")]
    out = tmp_path / "llm.svg"
    run = run_cli("render", model, "-o", out, "--color-by", "macs", *pinned)
    assert run.returncode == 0, run.stderr
    tips = [tooltip_of(g) for g in svg_groups(parse_svg(out), "node").values()]
    gqa = [tip for tip in tips if tip.startswith("GroupQueryAttention (com.microsoft)")]
    assert len(gqa) == CONFIG["num_hidden_layers"], tips
    assert all("\nmacs: 10.9k\nflops: 21.9k\n" in tip for tip in gqa), gqa  # 10,928 MACs, as counted above


def test_int4_parameters_equal_fp32s_and_the_configs(genai_model, tmp_path: Path) -> None:
    import renderer
    from renderer.metrics.builtin import model_costs

    counts = {}
    for precision in ("int4", "int4-asym", "fp32"):
        model = renderer.load_model(genai_model(precision), dims=PREFILL)
        counts[precision] = model_costs(model).totals()["params"]
    assert counts["int4"] == counts["int4-asym"] == counts["fp32"], counts
    # the matrices, by the config: per layer q, k, v (one qkv_proj), o, gate, up, down; the LM head
    hidden, ffn, vocab = CONFIG["hidden_size"], CONFIG["intermediate_size"], CONFIG["vocab_size"]
    kv = CONFIG["num_key_value_heads"] * hidden // CONFIG["num_attention_heads"]
    per_layer = [hidden * (hidden + 2 * kv), hidden * hidden, hidden * ffn, hidden * ffn, ffn * hidden]
    matrices = per_layer * CONFIG["num_hidden_layers"] + [hidden * vocab]
    int4, _ = metrics(genai_model("int4"), tmp_path / "int4.csv", PREFILL)
    fp32, _ = metrics(genai_model("fp32"), tmp_path / "fp32.csv", PREFILL)
    assert [int(int4[i]["params"]) for i in op_ids(genai_model("int4"), "MatMulNBits")] == matrices
    assert [int(fp32[i]["params"]) for i in op_ids(genai_model("fp32"), "MatMul")] == matrices
    # and the rest as transformers counts it (embedding, norms), plus the rotary tables and 2 index constants
    layers = CONFIG["num_hidden_layers"]
    rest = vocab * hidden + (2 * layers + 1) * hidden + 2 * CONFIG["max_position_embeddings"] * (hidden // 8) + 2
    assert counts["fp32"] == sum(matrices) + rest


@pytest.mark.parametrize("precision", ["int4", "int4-asym"])
def test_int4_weight_bytes_are_the_packed_bytes_scales_and_zero_points(genai_model, tmp_path: Path,
                                                                       precision: str) -> None:
    import onnx
    from onnx import numpy_helper

    path = genai_model(precision)
    proto = onnx.load(str(path))
    stored = {t.name: numpy_helper.to_array(t) for t in proto.graph.initializer}
    rows, _ = metrics(path, tmp_path / "m.csv", PREFILL)
    nodes = [n for n in proto.graph.node if n.op_type == "MatMulNBits"]
    zero_points = 0
    for op, node in zip(op_ids(path, "MatMulNBits"), nodes):
        arrays = [stored[name] for name in node.input[1:] if name]
        assert arrays[0].dtype == np.uint8 and len(arrays) == (3 if precision == "int4-asym" else 2)
        zero_points += len(arrays) == 3
        assert int(rows[op]["weight_bytes"]) == sum(a.nbytes for a in arrays)  # blobs + scales (+ zero points)
        attrs = {a.name: a.i for a in node.attribute}
        assert int(rows[op]["params"]) == attrs["K"] * attrs["N"]
    assert zero_points == (len(nodes) if precision == "int4-asym" else 0)


def test_a_tied_int4_embedding_counts_as_the_fp32_one(genai_model, tmp_path: Path) -> None:
    """With the embedding tied to the LM head, the int4 model reads the head's packed weight through a Reshape
    into a GatherBlockQuantized: the table's values are parameters there, counted once in the total."""
    import renderer
    from renderer.metrics.builtin import model_costs

    totals = {p: model_costs(renderer.load_model(genai_model(p), dims=PREFILL)).totals()["params"]
              for p in ("int4-tied", "fp32-tied")}
    # int4 also holds the 2 dims of the Reshape's shape ([256, 32]), a constant like any other
    assert totals["int4-tied"] == totals["fp32-tied"] + 2, totals
    vocab, hidden = CONFIG["vocab_size"], CONFIG["hidden_size"]
    assert totals["fp32-tied"] == counts_untied(genai_model, PREFILL) - vocab * hidden  # one table less
    rows, _ = metrics(genai_model("int4-tied"), tmp_path / "tied.csv", PREFILL)
    (gather,) = op_ids(genai_model("int4-tied"), "GatherBlockQuantized")
    assert int(rows[gather]["params"]) == vocab * hidden
    assert int(rows[gather]["weight_bytes"]) == vocab * hidden // 2 + vocab * (hidden // 32) * 4  # nibbles, scales


def counts_untied(genai_model, dims: dict[str, int]) -> int:  # type: ignore[no-untyped-def]
    import renderer
    from renderer.metrics.builtin import model_costs

    return model_costs(renderer.load_model(genai_model("fp32"), dims=dims)).totals()["params"]
