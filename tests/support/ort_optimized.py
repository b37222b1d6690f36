"""Transformers as onnxruntime's transformer optimizer writes them, the graphs people deploy: fused ``Attention``,
``SkipLayerNormalization``, ``EmbedLayerNormalization``, ``BiasGelu`` (``com.microsoft`` operators). The fused
operators are named outside any scope (``Attention_0``, ``SkipLayerNorm_AddBias_3``) while the MatMuls around them
keep the exporter's scoped names, and their outputs keep the name of the last operator they replace.

* ``optimized(source, target)``: ``onnxruntime.transformers.optimizer.optimize_model`` with the heads and width it
  detects itself, written once to ``target`` (kept: a second call reads it back).
* ``hf_bert(target)``: a 6-layer ``transformers`` ``BertModel`` (random weights, hidden 64, 4 heads) with ids and
  an attention mask of free ``batch`` × ``sequence``, exported by ``torch.onnx.export(dynamo=False)``.
"""

from __future__ import annotations

import logging
from pathlib import Path


def optimized(source: Path, target: Path, model_type: str = "bert") -> Path:
    """``source`` through onnxruntime's transformer optimizer, at ``target`` (made once)."""
    if target.exists():
        return target
    from onnxruntime.transformers.optimizer import optimize_model

    logging.disable(logging.WARNING)  # its fusion statistics, on stderr
    try:
        model = optimize_model(str(source), model_type=model_type)
        part = target.with_name(target.name + ".part")
        model.save_model_to_file(str(part))
        part.replace(target)
    finally:
        logging.disable(logging.NOTSET)
    return target


def hf_bert(target: Path) -> Path:
    """A small ``transformers`` BERT of free batch and sequence, as torch's TorchScript exporter writes it."""
    if target.exists():
        return target
    import torch
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    bert = BertModel(BertConfig(vocab_size=1000, hidden_size=64, num_hidden_layers=6, num_attention_heads=4,
                                intermediate_size=128, max_position_embeddings=128)).eval()

    class Hidden(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.bert = bert

        def forward(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
            return self.bert(input_ids=ids, attention_mask=mask).last_hidden_state

    ids, mask = torch.randint(0, 1000, (2, 16)), torch.ones(2, 16, dtype=torch.int64)
    free = {0: "batch", 1: "sequence"}
    part = target.with_name(target.name + ".part.onnx")
    torch.onnx.export(Hidden().eval(), (ids, mask), str(part), dynamo=False, opset_version=17,
                      input_names=["input_ids", "attention_mask"], output_names=["last_hidden_state"],
                      dynamic_axes={"input_ids": free, "attention_mask": free})
    part.replace(target)
    return target
