"""Attention with a KV cache and rotary embeddings (renderer/metrics/attention_ops.py), counted on small models
made with onnx.helper and run by onnxruntime first; each expected count is written out by hand. The genai LLM's
GroupQueryAttention is in test_genai_llm."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

from conftest import run_cli

B, S, P, HEADS, KV_HEADS, HEAD = 1, 3, 5, 4, 2, 16  # batch, new tokens, past tokens, heads, head size
T = P + S


def measured(nodes, inputs, outputs, path: Path, feeds: dict[str, np.ndarray] | None = None,  # type: ignore[no-untyped-def]
             run: bool = True) -> dict[str, str]:
    """Save the one-graph model, run it in onnxruntime (on ``feeds``, else ones), measure it: its last
    operator's row."""
    import onnx
    import onnxruntime as ort
    from onnx import helper

    graph = helper.make_graph(nodes, "attention", inputs, outputs)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23),
                                                    helper.make_opsetid("com.microsoft", 1)])
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    if run:
        session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        given = feeds or {}
        session.run(None, {i.name: given.get(i.name, np.ones(i.shape, np.float32)) for i in session.get_inputs()})
    out = path.with_suffix(".csv")
    done = run_cli("metrics", path, "-o", out)
    assert done.returncode == 0, done.stderr
    with out.open(newline="") as f:
        return next(row for row in csv.DictReader(f) if row["id"] == f"0:{len(nodes) - 1}")


def tensor(name: str, shape: list[int], kind: str = "FLOAT"):  # type: ignore[no-untyped-def]
    from onnx import TensorProto, helper

    return helper.make_tensor_value_info(name, getattr(TensorProto, kind), shape)


def test_onnx_attention_with_a_past(tmp_path: Path) -> None:
    from onnx import helper

    node = helper.make_node("Attention", ["q", "k", "v", "", "past_k", "past_v"], ["y", "present_k", "present_v"],
                            is_causal=1)
    row = measured([node], [tensor("q", [B, HEADS, S, HEAD]), tensor("k", [B, KV_HEADS, S, HEAD]),
                            tensor("v", [B, KV_HEADS, S, HEAD]), tensor("past_k", [B, KV_HEADS, P, HEAD]),
                            tensor("past_v", [B, KV_HEADS, P, HEAD])],
                   [tensor("y", [B, HEADS, S, HEAD]), tensor("present_k", [B, KV_HEADS, T, HEAD]),
                    tensor("present_v", [B, KV_HEADS, T, HEAD])], tmp_path / "a.onnx")
    # 4 heads × 3 queries × 8 keys × 16 for QKᵀ, as much for scores × V, softmax 3 per score of the rectangle
    assert int(row["macs"]) == 1536 + 1536 + 3 * 4 * 3 * 8


def test_multi_head_attention_with_a_past(tmp_path: Path) -> None:
    from onnx import helper

    node = helper.make_node("MultiHeadAttention", ["q", "k", "v", "", "", "", "past_k", "past_v"],
                            ["y", "present_k", "present_v"], domain="com.microsoft", num_heads=HEADS)
    hidden = HEADS * HEAD
    row = measured([node], [tensor("q", [B, S, hidden]), tensor("k", [B, S, hidden]), tensor("v", [B, S, hidden]),
                            tensor("past_k", [B, HEADS, P, HEAD]), tensor("past_v", [B, HEADS, P, HEAD])],
                   [tensor("y", [B, S, hidden]), tensor("present_k", [B, HEADS, T, HEAD]),
                    tensor("present_v", [B, HEADS, T, HEAD])], tmp_path / "mha.onnx")
    assert int(row["macs"]) == 1536 + 1536 + 3 * 4 * 3 * 8


def test_multi_head_attention_with_packed_qkv(tmp_path: Path) -> None:
    from onnx import helper

    node = helper.make_node("MultiHeadAttention", ["qkv"], ["y"], domain="com.microsoft", num_heads=HEADS)
    row = measured([node], [tensor("qkv", [B, S, HEADS, 3, HEAD])], [tensor("y", [B, S, HEADS * HEAD])],
                   tmp_path / "packed.onnx", run=False)  # onnxruntime's CPU kernel takes no packed QKV
    assert int(row["macs"]) == 2 * (4 * 3 * 3 * 16) + 3 * 4 * 3 * 3  # self-attention over the 3 tokens


@pytest.mark.parametrize(("window", "scores"), [(-1, 6 + 7 + 8), (2, 3 + 3 + 3), (6, 6 + 7 + 7)])
def test_group_query_attention_normalizes_the_causal_scores(tmp_path: Path, window: int, scores: int) -> None:
    from onnx import helper

    node = helper.make_node("GroupQueryAttention", ["q", "k", "v", "past_k", "past_v", "seqlens_k", "total"],
                            ["y", "present_k", "present_v"], domain="com.microsoft", num_heads=HEADS,
                            kv_num_heads=KV_HEADS, local_window_size=window)
    feeds = {"seqlens_k": np.array([T - 1], np.int32), "total": np.array(T, np.int32)}
    row = measured([node], [tensor("q", [B, S, HEADS * HEAD]), tensor("k", [B, S, KV_HEADS * HEAD]),
                            tensor("v", [B, S, KV_HEADS * HEAD]), tensor("past_k", [B, KV_HEADS, P, HEAD]),
                            tensor("past_v", [B, KV_HEADS, P, HEAD]), tensor("seqlens_k", [B], "INT32"),
                            tensor("total", [], "INT32")],
                   [tensor("y", [B, S, HEADS * HEAD]), tensor("present_k", [B, KV_HEADS, T, HEAD]),
                    tensor("present_v", [B, KV_HEADS, T, HEAD])], tmp_path / "gqa.onnx", feeds)
    # query rows see 6, 7, 8 keys (past 5 + their own position), at most window + 1 of them
    assert int(row["macs"]) == 1536 + 1536 + 3 * 4 * scores


def test_rotary_embeddings(tmp_path: Path) -> None:
    from onnx import helper

    positions = {"ids": np.arange(S, dtype=np.int64).reshape(1, S)}
    partial = helper.make_node("RotaryEmbedding", ["x", "ids", "cos", "sin"], ["y"], domain="com.microsoft",
                               num_heads=HEADS, rotary_embedding_dim=8)
    row = measured([partial], [tensor("x", [B, S, HEADS * HEAD]), tensor("ids", [B, S], "INT64"),
                               tensor("cos", [16, 4]), tensor("sin", [16, 4])], [tensor("y", [B, S, HEADS * HEAD])],
                   tmp_path / "partial.onnx", positions)
    assert int(row["macs"]) == 3 * (1 * 3 * 4 * 8)  # 8 of each head's 16 values rotated, 3 operations each
    whole = helper.make_node("RotaryEmbedding", ["x", "cos", "sin"], ["y"])  # ONNX opset 23, no position ids
    row = measured([whole], [tensor("x", [B, HEADS, S, HEAD]), tensor("cos", [B, S, HEAD // 2]),
                             tensor("sin", [B, S, HEAD // 2])], [tensor("y", [B, HEADS, S, HEAD])],
                   tmp_path / "whole.onnx")
    assert int(row["macs"]) == 3 * (1 * 4 * 3 * 16)


@pytest.mark.parametrize(("constant", "pasts"), [(True, [4, 6]), (False, [4, 6]), (True, [4, -6])])
def test_paged_attention_counts_each_sequence(tmp_path: Path, constant: bool, pasts: list[int]) -> None:
    from onnx import TensorProto, helper

    lengths = [helper.make_tensor("cumulative", TensorProto.INT32, [3], [0, 2, 3]),
               helper.make_tensor("pasts", TensorProto.INT32, [2], pasts)]
    inputs = [tensor("q", [3, HEADS * HEAD]), tensor("k", [3, KV_HEADS * HEAD]), tensor("v", [3, KV_HEADS * HEAD]),
              tensor("key_cache", [4, 4, KV_HEADS, HEAD]), tensor("value_cache", [4, 4, KV_HEADS, HEAD]),
              tensor("blocks", [2, 2], "INT32")]
    nodes = [helper.make_node("PagedAttention", ["q", "k", "v", "key_cache", "value_cache", "cumulative", "pasts",
                                                 "blocks"], ["y", "key_cache_out", "value_cache_out"],
                              domain="com.microsoft", num_heads=HEADS, kv_num_heads=KV_HEADS)]
    if constant:
        nodes = [helper.make_node("Constant", [], [t.name], value=t) for t in lengths] + nodes
    else:
        inputs += [tensor("cumulative", [3], "INT32"), tensor("pasts", [2], "INT32")]
    paged = measured(nodes, inputs, [tensor("y", [3, HEADS * HEAD])], tmp_path / "paged.onnx",
                     run=False)  # onnxruntime has no CPU kernel for it
    if not constant:
        assert paged["macs"] == "n/a (the sequence lengths are input values (cumulative), not shapes)"
        return
    if min(pasts) < 0:  # a hostile file: no negative MACs
        assert paged["macs"] == "n/a (negative sequence lengths)"
        return
    # sequence 1: 2 new tokens after 4 cached, sequence 2: 1 after 6; 4 heads of 16
    first = 2 * 4 * 2 * 6 * 16 + 3 * 4 * (5 + 6)
    second = 2 * 4 * 1 * 7 * 16 + 3 * 4 * 7
    assert int(paged["macs"]) == first + second


def test_quantized_attention_with_a_past(tmp_path: Path) -> None:
    from onnx import TensorProto, helper

    hidden = HEADS * HEAD
    rng = np.random.default_rng(0)
    weight = rng.integers(-127, 128, (hidden, 3 * hidden), dtype=np.int8)
    constants = [helper.make_tensor("weight", TensorProto.INT8, weight.shape, weight.tobytes(), raw=True),
                 helper.make_tensor("bias", TensorProto.FLOAT, [3 * hidden], [0.0] * (3 * hidden)),
                 helper.make_tensor("input_scale", TensorProto.FLOAT, [], [0.02]),
                 helper.make_tensor("weight_scale", TensorProto.FLOAT, [], [0.01]),
                 helper.make_tensor("input_zero_point", TensorProto.UINT8, [], [128]),
                 helper.make_tensor("weight_zero_point", TensorProto.INT8, [], [0])]
    nodes = [helper.make_node("Constant", [], [t.name], value=t) for t in constants]
    nodes.append(helper.make_node("QAttention", ["x", "weight", "bias", "input_scale", "weight_scale", "",
                                                 "input_zero_point", "weight_zero_point", "past"],
                                  ["y", "present"], domain="com.microsoft", num_heads=HEADS, unidirectional=1))
    feeds = {"x": np.full((B, S, hidden), 130, np.uint8), "past": np.zeros((2, B, HEADS, P, HEAD), np.float32)}
    row = measured(nodes, [tensor("x", [B, S, hidden], "UINT8"), tensor("past", [2, B, HEADS, P, HEAD])],
                   [tensor("y", [B, S, hidden]), tensor("present", [2, B, HEADS, T, HEAD])], tmp_path / "q.onnx",
                   feeds)
    projection = 3 * (3 * hidden) * hidden + 3 * (3 * hidden)  # the QKV projection and its bias add
    assert int(row["macs"]) == projection + 1536 + 1536 + 3 * 4 * 3 * 8
    assert int(row["params"]) == hidden * 3 * hidden + 3 * hidden  # scales and zero points are no parameters


@pytest.mark.parametrize("shared", [False, True])
def test_decoder_masked_attention_counts_one_step(tmp_path: Path, shared: bool) -> None:
    from onnx import TensorProto, helper

    hidden, maximum = HEADS * HEAD, 16
    buffer = maximum if shared else P
    nodes = [helper.make_node("Constant", [], ["past_length"],
                              value=helper.make_tensor("past_length", TensorProto.INT32, [], [P])),
             helper.make_node("DecoderMaskedMultiHeadAttention", ["q", "k", "v", "", "", "past_k", "past_v",
                                                                  "past_length"],
                              ["y", "present_k", "present_v"], domain="com.microsoft", num_heads=HEADS,
                              past_present_share_buffer=int(shared))]
    feeds = {"past_k": np.zeros((B, HEADS, buffer, HEAD), np.float32),
             "past_v": np.zeros((B, HEADS, buffer, HEAD), np.float32)}
    row = measured(nodes, [tensor("q", [B, 1, hidden]), tensor("k", [B, 1, hidden]), tensor("v", [B, 1, hidden]),
                           tensor("past_k", [B, HEADS, buffer, HEAD]), tensor("past_v", [B, HEADS, buffer, HEAD])],
                   [tensor("y", [B, 1, hidden]), tensor("present_k", [B, HEADS, maximum if shared else T - S + 1,
                                                                       HEAD]),
                    tensor("present_v", [B, HEADS, maximum if shared else T - S + 1, HEAD])],
                   tmp_path / "dmmha.onnx", feeds, run=shared)  # the CPU kernel takes only a shared buffer
    # one new token against the 5 cached and itself, whatever the buffer's length: 4 heads of 16
    assert int(row["macs"]) == 2 * (4 * 1 * 6 * 16) + 3 * 4 * 6
