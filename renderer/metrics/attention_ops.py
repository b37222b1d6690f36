"""Attention operators with a KV cache, and rotary embeddings: their ONNX cost formulas.

How the counts are made (the README's conventions say the same):
    * QKᵀ and scores × V cover every query row against every key of past + current length, per query head
      (``heads``; GroupQueryAttention shares each of its ``kv_num_heads`` among ``heads / kv_num_heads`` query
      heads, which changes what is read, not what is multiplied). A causal mask is applied to scores computed
      for the whole rectangle: onnxruntime's CPU kernels compute it all, then mask.
    * Softmax is 3 operations per score it normalizes: GroupQueryAttention (and PagedAttention) normalize only
      the causal ones, ``past + i + 1`` keys for query row ``i`` (at most ``local_window_size + 1``), as their
      kernels do; the others the whole row.
    * A rotary embedding rotates ``rotary_dim`` of each head's ``head_size`` values: ``ops`` operations (the
      entry's number) per rotated value. GroupQueryAttention with ``do_rotary`` rotates Q and K so.
    * The past length is the past_key input's sequence dim (0 when absent); a cache shared with the present
      (``past_present_share_buffer``, a buffer of the maximum length) is counted at that length.
"""

from __future__ import annotations

from collections.abc import Callable

from renderer.metrics.formulas import Cost, NotCountable, attention, causal_scores, matmul, per_element, prod
from renderer.metrics.opview import Op


def _heads(op: Op, name: str) -> int:
    heads = op.int_attr(name, 0)
    if heads <= 0:
        raise NotCountable(f"3-D attention input needs the {name} attribute")
    return heads


def _dim(op: Op, slot: int, axis: int) -> int:
    """One dim of an input, known even where others of its shape are not (a KV cache's ``kv_cache_dim``)."""
    value = op.input(slot)
    shape = value.type.shape if value.type is not None else None
    if shape is not None and -len(shape) <= axis < len(shape):
        dim = shape[axis]
        if isinstance(dim, int) and dim >= 0:
            return dim
    return op.shape(slot)[axis]


def _onnx_attention(op: Op) -> Cost:
    """ONNX Attention (opset 23): Q [B, Hq, S, D] or [B, S, Hq·D]; K, V likewise with Hkv; past_key [B, Hkv, P, D]."""
    q, k, v = op.shape(0), op.shape(1), op.shape(2)
    if len(q) == 4:
        batch, heads, q_len, head = q
    elif len(q) == 3:
        heads = _heads(op, "q_num_heads")
        batch, q_len, head = q[0], q[1], q[2] // heads
    else:
        raise NotCountable(f"query of rank {len(q)}")
    kv_len = k[2] if len(k) == 4 else k[1]
    if len(v) == 4:
        v_head = v[3]
    else:
        v_head = v[2] // _heads(op, "kv_num_heads")
    if op.has(4):
        kv_len += _dim(op, 4, 2)
    return attention(batch, heads, q_len, kv_len, head, v_head)


def _ms_multihead_attention(op: Op) -> Cost:
    """com.microsoft MultiHeadAttention: query [B, S, D] with key/value [B, L, D] or [B, N, L, H], or packed:
    query [B, S, N, 3, H] (no key), key [B, L, N, 2, H] (no value); past_key [B, N, P, H]."""
    heads = _heads(op, "num_heads")
    q = op.shape(0)
    if len(q) == 5:  # packed QKV: self-attention over the query's tokens
        batch, q_len, _, _, head = q
        kv_len, v_head = q_len, head
    elif len(q) == 3 and op.has(1):
        batch, q_len, head = q[0], q[1], q[2] // heads
        k = op.shape(1)
        kv_len = k[2] if len(k) == 4 else k[1]
        if len(k) == 5:
            v_head = k[4]
        elif op.has(2):
            value = op.shape(2)
            v_head = value[-1] if len(value) == 4 else value[-1] // heads
        else:
            v_head = head
    else:
        raise NotCountable("query of rank 3 needs a key input" if len(q) == 3 else f"query of rank {len(q)}")
    if op.has(6):
        kv_len += _dim(op, 6, 2)
    return attention(batch, heads, q_len, kv_len, head, v_head)


def _decoder_masked_attention(op: Op) -> Cost:
    """com.microsoft DecoderMaskedMultiHeadAttention, one decoding step: query [B, S, D]; self-attention with key
    [B, S, D] after past_key [B, N, P, H] (input 5), or cross-attention to key [B, N, L, H]. With
    past_present_share_buffer, past_key is a buffer of the maximum length and the past is the value of
    past_sequence_length (input 7): countable when it is a constant."""
    heads = _heads(op, "num_heads")
    q, k = op.shape(0), op.shape(1)
    if len(q) != 3:
        raise NotCountable(f"query of rank {len(q)}")
    batch, q_len, head = q[0], q[1], q[2] // heads
    if len(k) == 4:
        return attention(batch, heads, q_len, k[2], head, head)
    past = 0
    if op.int_attr("past_present_share_buffer", 0) and op.has(7):
        lengths = _constant(op, 7)
        past = lengths[0] if lengths else 0
    elif op.has(5):
        past = _dim(op, 5, 2)
    return attention(batch, heads, q_len, past + q_len, head, head)


def _ms_attention(op: Op) -> Cost:
    """com.microsoft Attention: the QKV projection, then the attention core; past [2, B, N, P, H] (input 4)."""
    return _projected_attention(op, 4)


def _q_attention(op: Op) -> Cost:
    """com.microsoft QAttention: Attention with a uint8 input and int8 weight; past is input 8."""
    return _projected_attention(op, 8)


def _projected_attention(op: Op, past_slot: int) -> Cost:
    """input [B, S, D] × weight [D, Q + K + V] (+ bias 2), then the attention core over past + S keys."""
    heads = _heads(op, "num_heads")
    x, w = op.shape(0), op.weight_shape(1)
    if len(x) != 3 or len(w) != 2:
        raise NotCountable("unexpected input ranks")
    batch, seq, _ = x
    sizes = op.attr("qkv_hidden_sizes") or [w[1] // 3] * 3
    projection = matmul(batch * seq * w[1], w[0], op.has(2))
    kv_len = seq + (_dim(op, past_slot, 3) if op.has(past_slot) else 0)
    return projection + attention(batch, heads, seq, kv_len, int(sizes[0]) // heads, int(sizes[2]) // heads)


def _group_query_attention(op: Op, ops: float) -> Cost:
    """com.microsoft GroupQueryAttention: query [B, S, Hq·D] with key/value [B, S, Hkv·D], or packed QKV
    [B, S, (Hq + 2·Hkv)·D] (no key); past_key [B, Hkv, P, D]; cos_cache [max, rotary_dim / 2]."""
    heads, kv_heads = _heads(op, "num_heads"), _heads(op, "kv_num_heads")
    q = op.shape(0)
    if len(q) != 3:
        raise NotCountable(f"query of rank {len(q)}")
    batch, q_len, width = q
    head = width // (heads if op.has(1) else heads + 2 * kv_heads)
    past = _dim(op, 3, 2) if op.has(3) else 0
    kv_len = past + q_len
    if op.int_attr("causal", 1):
        normalized = batch * heads * causal_scores(q_len, past, op.int_attr("local_window_size", -1))
    else:
        normalized = batch * heads * q_len * kv_len
    cost = attention(batch, heads, q_len, kv_len, head, head, normalized)
    if op.int_attr("do_rotary", 0):
        rotary = 2 * _dim(op, 7, 1) if op.has(7) else head
        cost += per_element(batch * q_len * (heads + kv_heads) * rotary, ops)
    return cost


def _paged_attention(op: Op, ops: float) -> Cost:
    """com.microsoft PagedAttention: the tokens of several sequences packed in query [T, Hq·D] (or packed QKV),
    each sequence attending to its cached past and itself; the lengths are the values of
    cumulative_sequence_length [B + 1] and past_seqlens [B], countable only when they are constants."""
    heads, kv_heads = _heads(op, "num_heads"), _heads(op, "kv_num_heads")
    q = op.shape(0)
    if len(q) != 2:
        raise NotCountable(f"query of rank {len(q)}")
    head = q[1] // (heads if op.has(1) else heads + 2 * kv_heads)
    v_head = op.int_attr("v_head_size", 0) or head
    starts, pasts = _constant(op, 5), _constant(op, 6)
    news = [b - a for a, b in zip(starts, starts[1:])]
    if len(news) != len(pasts) or any(n < 0 for n in news):
        raise NotCountable("cumulative_sequence_length and past_seqlens disagree (batch size, order)")
    window = op.int_attr("local_window_size", -1)
    cost = Cost(0)
    for new, past in zip(news, pasts):
        normalized = causal_scores(new, past, window) if op.int_attr("is_causal", 1) else new * (past + new)
        cost += attention(1, heads, new, past + new, head, v_head, heads * normalized)
    if op.int_attr("do_rotary", 0):
        rotary = 2 * _dim(op, 8, 1) if op.has(8) else head
        cost += per_element(sum(news) * (heads + kv_heads) * rotary, ops)
    return cost


_MAX_SEQUENCES = 1 << 16


def _constant(op: Op, slot: int) -> list[int]:
    """The lengths a constant input holds (a batch of at most ``_MAX_SEQUENCES``, none negative)."""
    value = op.input(slot)
    if value.initializer is None:
        raise NotCountable(f"the sequence lengths are input values ({value.name or f'input {slot}'}), not shapes")
    if value.initializer.size > _MAX_SEQUENCES + 1:
        raise NotCountable(f"a batch of over {_MAX_SEQUENCES} sequences")
    lengths = [int(n) for n in value.initializer.numpy().reshape(-1)]
    if any(n < 0 for n in lengths):
        raise NotCountable("negative sequence lengths")
    return lengths


def _rotary(op: Op, cos_slot: int, ops: float) -> Cost:
    """Rotary embedding of x [B, S, N·H] or [B, N, S, H]: ``rotary_dim`` of each head's H values rotated,
    ``rotary_embedding_dim`` or twice cos_cache's last dim."""
    x = op.shape(0)
    rotary = op.int_attr("rotary_embedding_dim", 0) or 2 * _dim(op, cos_slot, -1)
    heads = op.int_attr("num_heads", 0)
    if len(x) == 4:
        head = x[3]
    elif len(x) == 3:
        head = x[2] // heads if heads > 0 else rotary  # without num_heads, the whole head is rotated
    else:
        raise NotCountable(f"input of rank {len(x)}")
    if head <= 0:
        raise NotCountable("head size 0")
    return per_element(prod(x) * min(rotary, head) // head, ops)


def _onnx_rotary(op: Op, ops: float) -> Cost:
    """ONNX RotaryEmbedding (opset 23): X, cos_cache, sin_cache, position_ids."""
    return _rotary(op, 1, ops)


def _ms_rotary(op: Op, ops: float) -> Cost:
    """com.microsoft RotaryEmbedding: input, position_ids, cos_cache, sin_cache."""
    return _rotary(op, 2, ops)


FORMULAS: dict[str, Callable[..., Cost]] = {
    "attention": _onnx_attention, "ms_multihead_attention": _ms_multihead_attention, "ms_attention": _ms_attention,
    "q_attention": _q_attention, "decoder_masked_attention": _decoder_masked_attention,
    "group_query_attention": _group_query_attention, "paged_attention": _paged_attention,
    "rotary_embedding": _onnx_rotary, "ms_rotary_embedding": _ms_rotary,
}
"""The attention formulas ``onnx_ops.FORMULAS`` takes in."""
