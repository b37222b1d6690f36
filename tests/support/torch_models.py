"""Small ``torch.export`` programs made by torch itself (no binaries in the repository), and their ONNX exports.

Each maker returns the bytes of a ``.pt2`` archive written by ``torch.export.save`` for a real ``nn.Module``:
    * ``conv_net``: Conv2d + BatchNorm2d + ReLU + MaxPool2d + AdaptiveAvgPool2d + Linear on 1×3×16×16;
    * ``mlp``: Linear(16, 32) + GELU + Linear(32, 4) on 2×16;
    * ``transformer``: two pre-norm blocks (LayerNorm, a QKV Linear, scaled_dot_product_attention, an MLP) on
      2×8×16, the module tree ``blocks.0.qkv``…;
    * ``transformer(dynamic=True)``: the same with a symbolic batch (``torch.export.Dim``, 1..64);
    * ``branches``: ``torch.cond`` choosing between two Linear layers (a higher-order operator with two subgraphs);
    * ``layers``: conv, hardtanh, max and avg pooling, a bilinear upsample, linear, clamp, topk on 1×4×8×8 (also
      lowered to ExecuTorch by ``executorch_models.py``);
    * ``decomposed=True``: the program after ``run_decompositions()`` (core ATen: addmm, native_layer_norm…).
``onnx_of`` exports the same module to ONNX with torch's exporter, for comparing the counts. ``rewrite`` edits the
program JSON (or adds members) of an archive, for hostile files.
"""

from __future__ import annotations

import io
import json
import tempfile
import zipfile
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

CONV_INPUT = (1, 3, 16, 16)
MLP_INPUT = (2, 16)
TRANSFORMER_INPUT = (2, 8, 16)
LAYERS_INPUT = (1, 4, 8, 8)


def _modules() -> dict[str, Any]:
    import torch
    from torch import nn
    from torch.nn import functional as F

    class ConvNet(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv = nn.Conv2d(3, 8, 3, padding=1)
            self.bn = nn.BatchNorm2d(8)
            self.pool = nn.MaxPool2d(2)
            self.head = nn.Linear(8, 10)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            y = self.pool(torch.relu(self.bn(self.conv(x))))
            return self.head(F.adaptive_avg_pool2d(y, 1).flatten(1))

    class Block(nn.Module):
        def __init__(self, width: int = 16, heads: int = 2) -> None:
            super().__init__()
            self.ln = nn.LayerNorm(width)
            self.qkv = nn.Linear(width, 3 * width)
            self.proj = nn.Linear(width, width)
            self.mlp = nn.Sequential(nn.Linear(width, 32), nn.GELU(), nn.Linear(32, width))
            self.heads = heads

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            b, t, d = x.shape
            q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2)
                       for z in self.qkv(self.ln(x)).split(d, dim=-1))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(b, t, d)
            x = x + self.proj(y)
            return x + self.mlp(x)

    class Transformer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.blocks = nn.ModuleList([Block(), Block()])

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            for block in self.blocks:
                x = block(x)
            return x

    class Branches(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.a, self.b = nn.Linear(4, 4), nn.Linear(4, 4)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.cond(x.sum() > 0, lambda x: self.a(x).relu(), lambda x: self.b(x) * 2, (x,))

    class Layers(nn.Module):
        """conv 4→6 (3×3, pad 1), hardtanh, 2×2 max pool, bilinear ×2 upsample, 2×2 avg pool, global avg pool,
        linear 6→5, clamp, topk(2): the layers whose arguments a cost reads (kernel_size, transposed)."""

        def __init__(self) -> None:
            super().__init__()
            self.conv = nn.Conv2d(4, 6, 3, padding=1)
            self.up = nn.Upsample(scale_factor=2, mode="bilinear")
            self.head = nn.Linear(6, 5)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            y = F.avg_pool2d(self.up(F.max_pool2d(F.hardtanh(self.conv(x)), 2)), 2)
            y = self.head(F.adaptive_avg_pool2d(y, 1).flatten(1))
            return torch.topk(torch.clamp(y, -1, 1), 2).values

    torch.manual_seed(0)
    mlp = nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.Linear(32, 4))
    return {"conv_net": (ConvNet().eval(), CONV_INPUT), "mlp": (mlp.eval(), MLP_INPUT),
            "transformer": (Transformer().eval(), TRANSFORMER_INPUT), "branches": (Branches().eval(), (2, 4)),
            "layers": (Layers().eval(), LAYERS_INPUT)}


@cache
def module(name: str) -> tuple[Any, tuple[int, ...]]:
    """The ``nn.Module`` ``name`` (in eval mode, seeded weights) and its input shape."""
    return _modules()[name]


def _program(name: str, dynamic: bool, decomposed: bool, batch: int | None = None) -> Any:
    import torch

    model, shape = module(name)
    shape = shape if batch is None else (batch, *shape[1:])
    dynamic_shapes = {"x": {0: torch.export.Dim("batch", min=1, max=64)}} if dynamic else None
    program = torch.export.export(model, (torch.randn(*shape),), dynamic_shapes=dynamic_shapes)
    return program.run_decompositions() if decomposed else program


@cache
def pt2(name: str, dynamic: bool = False, decomposed: bool = False, batch: int | None = None) -> bytes:
    """The ``.pt2`` bytes of program ``name`` as ``torch.export.save`` writes them (``batch``: exported for that
    many rows instead)."""
    import torch

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"{name}.pt2"
        torch.export.save(_program(name, dynamic, decomposed, batch), str(path))
        return path.read_bytes()


def program_nodes(name: str, dynamic: bool = False, decomposed: bool = False) -> list[tuple[str, str]]:
    """(FX name, target) of every ``call_function`` node of the program, ``getitem`` left out, as torch has it."""
    import operator

    graph = _program(name, dynamic, decomposed).graph
    return [(node.name, str(node.target)) for node in graph.nodes
            if node.op == "call_function" and node.target is not operator.getitem]


@cache
def onnx_of(name: str) -> bytes:
    """The ONNX model torch's exporter writes for module ``name`` (opset 18, no optimization: one node per op)."""
    import torch

    model, shape = module(name)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"{name}.onnx"
        torch.onnx.export(model, (torch.randn(*shape),), str(path), dynamo=True, optimize=False, verbose=False,
                          external_data=False)
        return path.read_bytes()


def write(folder: Path, name: str, data: bytes) -> Path:
    path = folder / name
    path.write_bytes(data)
    return path


def rewrite(data: bytes, edit: Callable[[dict[str, Any]], None] | None = None,
            extra: dict[str, bytes] | None = None, drop: tuple[str, ...] = ()) -> bytes:
    """``data`` (a PT2 archive) with its program JSON passed through ``edit``, members ``extra`` added or replaced
    (names relative to the root folder) and members ending in ``drop`` left out; stored uncompressed, as torch
    writes them."""
    source = zipfile.ZipFile(io.BytesIO(data))
    root = source.namelist()[0].split("/", 1)[0]
    out = io.BytesIO()
    replaced = {f"{root}/{k}": v for k, v in (extra or {}).items()}
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as target:
        for info in source.infolist():
            if info.filename in replaced or info.filename.endswith(drop) and drop:
                continue
            body = source.read(info)
            if edit is not None and info.filename == f"{root}/models/model.json":
                document = json.loads(body)
                edit(document)
                body = json.dumps(document).encode()
            target.writestr(info.filename, body)
        for name, body in replaced.items():
            target.writestr(name, body)
    return out.getvalue()


def seeds() -> list[tuple[str, bytes]]:
    """Fuzz seeds: the small programs as saved, one decomposed, one with a symbolic batch, one with subgraphs."""
    return [("conv_net.pt2", pt2("conv_net")), ("mlp.pt2", pt2("mlp")),
            ("transformer_dynamic.pt2", pt2("transformer", dynamic=True)),
            ("mlp_core.pt2", pt2("mlp", decomposed=True)), ("branches.pt2", pt2("branches"))]


def _llama() -> Any:
    """A 4-layer Llama from transformers (random weights, hidden 64, 4 heads sharing 2 KV heads), returning logits."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=4,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128)
    torch.manual_seed(0)
    llama = LlamaForCausalLM(config).eval()

    class Logits(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.llama = llama

        def forward(self, ids: torch.Tensor) -> torch.Tensor:
            return self.llama(input_ids=ids, use_cache=False).logits

    return Logits().eval()


@cache
def llama(sequence: int = 128) -> tuple[bytes, bytes]:
    """(the .pt2 program, torch's ONNX export) of the Llama on 1×``sequence`` token ids."""
    import torch

    model, ids = _llama(), torch.randint(0, 256, (1, sequence))
    with tempfile.TemporaryDirectory() as folder:
        torch.export.save(torch.export.export(model, (ids,)), f"{folder}/llama.pt2")
        torch.onnx.export(model, (ids,), f"{folder}/llama.onnx", dynamo=True, optimize=False, verbose=False,
                          external_data=False)
        return Path(f"{folder}/llama.pt2").read_bytes(), Path(f"{folder}/llama.onnx").read_bytes()
