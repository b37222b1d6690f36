#!/usr/bin/env python3
"""Export a small BERT-like encoder with torch, three ways, for the big-model tests (issue 9).

torch is not a dependency of annograph or of its tests: run this in a side virtual environment,
pinning the CPU build (a plain ``pip install torch`` pulls the much bigger CUDA build)::

    python3 -m venv /work/venv-torch
    /work/venv-torch/bin/pip install torch==2.13.0 onnx onnxscript onnxruntime
    /work/venv-torch/bin/python samples/make_transformers.py              # writes samples/onnx/bert_*.onnx
    /work/venv-torch/bin/python samples/make_transformers.py --out-dir /tmp/x   # somewhere else

It writes:

* ``bert_scoped.onnx``: ``torch.onnx.export(dynamo=False)`` (the TorchScript exporter). Node names are
  scoped by module, ``/encoder/layer.0/attention/self/query/MatMul``, and every ``view`` of a dynamic shape
  becomes a Shape → Gather → Unsqueeze → Concat → Reshape chain.
* ``bert_dynamo.onnx``: ``torch.onnx.export(dynamo=True)``. Flat node names (``node_MatMul_64``); the module
  path is in each node's metadata (``namespace``, ``pkg.torch.onnx.name_scopes``, ...).
* ``bert_scoped_int8.onnx``: ``bert_scoped.onnx`` after onnxruntime's ``quantize_dynamic`` (int8 weights).

The weights are random (``torch.manual_seed(0)``): these are architectures, not trained models. The
script checks each file with ``onnx.checker``, runs it in onnxruntime on a batch of 2 sequences of 7 tokens
and, for the float models, compares the result with torch's. It prints each file's node count, op-type
histogram, size and SHA-256.
"""

from __future__ import annotations

import argparse
import hashlib
import math
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import torch
from onnxruntime.quantization import QuantType, quantize_dynamic
from torch import nn

OUT_DIR = Path(__file__).resolve().parent / "onnx"
SEED = 0
VOCAB, MAX_POSITIONS, HIDDEN, HEADS, INTERMEDIATE, LAYERS = 512, 64, 32, 4, 128, 12
OPSET = 17
# Metadata the dynamo exporter writes that holds paths of this machine (the source file of each module).
MACHINE_SPECIFIC_METADATA = ("pkg.torch.onnx.stack_trace",)


class SelfAttention(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.head_size = HIDDEN // HEADS
        self.query = nn.Linear(HIDDEN, HIDDEN)
        self.key = nn.Linear(HIDDEN, HIDDEN)
        self.value = nn.Linear(HIDDEN, HIDDEN)

    def heads(self, x: torch.Tensor) -> torch.Tensor:
        # [batch, seq, hidden] -> [batch, heads, seq, head_size], the shape read at run time as BERT does
        return x.view(x.size()[:-1] + (HEADS, self.head_size)).permute(0, 2, 1, 3)

    def forward(self, hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        q, k, v = self.heads(self.query(hidden)), self.heads(self.key(hidden)), self.heads(self.value(hidden))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_size) + mask
        context = torch.matmul(torch.softmax(scores, dim=-1), v).permute(0, 2, 1, 3).contiguous()
        return context.view(context.size()[:-2] + (HIDDEN,))


class SelfOutput(nn.Module):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.dense = nn.Linear(width, HIDDEN)
        self.LayerNorm = nn.LayerNorm(HIDDEN)

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        return self.LayerNorm(self.dense(x) + residual)


class Attention(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.self = SelfAttention()
        self.output = SelfOutput(HIDDEN)

    def forward(self, hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return self.output(self.self(hidden, mask), hidden)


class Intermediate(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.dense = nn.Linear(HIDDEN, INTERMEDIATE)
        self.intermediate_act_fn = nn.GELU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.intermediate_act_fn(self.dense(x))


class Layer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.attention = Attention()
        self.intermediate = Intermediate()
        self.output = SelfOutput(INTERMEDIATE)

    def forward(self, hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        attended = self.attention(hidden, mask)
        return self.output(self.intermediate(attended), attended)


class Encoder(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layer = nn.ModuleList(Layer() for _ in range(LAYERS))

    def forward(self, hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        for layer in self.layer:
            hidden = layer(hidden, mask)
        return hidden


class Embeddings(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.word_embeddings = nn.Embedding(VOCAB, HIDDEN)
        self.position_embeddings = nn.Embedding(MAX_POSITIONS, HIDDEN)
        self.LayerNorm = nn.LayerNorm(HIDDEN)

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(input_ids.size(1), dtype=torch.long).unsqueeze(0).expand_as(input_ids)
        return self.LayerNorm(self.word_embeddings(input_ids) + self.position_embeddings(positions))


class Pooler(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.dense = nn.Linear(HIDDEN, HIDDEN)
        self.activation = nn.Tanh()

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        return self.activation(self.dense(hidden[:, 0]))


class Bert(nn.Module):
    """A 12-layer BERT encoder with HuggingFace's module names, at a tiny width; padding id 0 is masked."""

    def __init__(self) -> None:
        super().__init__()
        self.embeddings = Embeddings()
        self.encoder = Encoder()
        self.pooler = Pooler()

    def forward(self, input_ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        mask = (input_ids != 0)[:, None, None, :].to(torch.float32)
        mask = (1.0 - mask) * torch.finfo(torch.float32).min
        hidden = self.encoder(self.embeddings(input_ids), mask)
        return hidden, self.pooler(hidden)


def sample_ids() -> torch.Tensor:
    ids = torch.randint(1, VOCAB, (2, 7), generator=torch.Generator().manual_seed(SEED + 1))
    ids[1, 5:] = 0  # padding in the second sequence
    return ids


def export(model: nn.Module, path: Path, dynamo: bool) -> None:
    ids = sample_ids()
    names = {"input_names": ["input_ids"], "output_names": ["last_hidden_state", "pooler_output"]}
    if dynamo:
        batch, sequence = torch.export.Dim("batch"), torch.export.Dim("sequence", max=MAX_POSITIONS)
        program = torch.onnx.export(model, (ids,), dynamo=True, opset_version=18, optimize=True,
                                    dynamic_shapes={"input_ids": {0: batch, 1: sequence}}, **names)
        program.save(str(path))
        proto = onnx.load(str(path))
        for node in proto.graph.node:
            kept = [p for p in node.metadata_props if p.key not in MACHINE_SPECIFIC_METADATA]
            del node.metadata_props[:]
            node.metadata_props.extend(kept)
        onnx.save(proto, str(path))
    else:
        torch.onnx.export(model, (ids,), str(path), dynamo=False, opset_version=OPSET, do_constant_folding=True,
                          dynamic_axes={"input_ids": {0: "batch", 1: "sequence"},
                                        "last_hidden_state": {0: "batch", 1: "sequence"},
                                        "pooler_output": {0: "batch"}}, **names)


def check(path: Path, model: nn.Module | None) -> None:
    proto = onnx.load(str(path))
    onnx.checker.check_model(proto, full_check=True)
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    ids = sample_ids()
    got = session.run(None, {"input_ids": ids.numpy()})
    if model is not None:
        with torch.no_grad():
            want = model(ids)
        for a, b in zip(got, want, strict=True):
            np.testing.assert_allclose(a, b.numpy(), rtol=1e-3, atol=1e-4)
    ops = Counter(n.op_type for n in proto.graph.node)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    print(f"{path.name}: {len(proto.graph.node)} nodes, {path.stat().st_size:,} bytes, sha256 {digest}")
    print("  " + ", ".join(f"{op}×{n}" if n > 1 else op for op, n in sorted(ops.items())))
    keys = Counter(p.key for n in proto.graph.node for p in n.metadata_props)
    if keys:
        print("  node metadata: " + ", ".join(f"{k} ({n} nodes)" for k, n in sorted(keys.items())))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out-dir", type=Path, default=OUT_DIR)
    args = parser.parse_args()
    args.out_dir.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(SEED)
    model = Bert().eval()
    scoped, dynamo, int8 = (args.out_dir / f"bert_{kind}.onnx" for kind in ("scoped", "dynamo", "scoped_int8"))
    with torch.no_grad():
        export(model, scoped, dynamo=False)
        export(model, dynamo, dynamo=True)
    quantize_dynamic(str(scoped), str(int8), weight_type=QuantType.QInt8)
    check(scoped, model)
    check(dynamo, model)
    check(int8, None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
