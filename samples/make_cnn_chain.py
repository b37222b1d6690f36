#!/usr/bin/env python3
"""Export a deep CNN chain with torch, the shape of an OCR text recognizer, for the page-size tests (issue 17).

A MobileNetV3-like backbone on a 32-pixel-high text line: a stem convolution, 61 inverted-residual blocks
(1×1 expand, 3×3 depthwise, 1×1 project, HardSwish, a residual Add when the shape allows), squeeze-and-excite
on every other block, then a sequence head (pool over the height, Transpose, a Linear per column, LogSoftmax).
Exported by the TorchScript exporter, which folds every BatchNorm into its Conv: a long chain of about 550
operators, one rank each, which drawn as one picture is far taller than the 14,400 pt PDF viewers open.

torch is not a dependency of annograph or of its tests: run this in a side virtual environment::

    python3 -m venv /work/venv-torch
    /work/venv-torch/bin/pip install torch==2.13.0 onnx onnxscript
    /work/venv-torch/bin/python samples/make_cnn_chain.py          # writes samples/onnx/cnn_chain.onnx

Channels are few (8 to 16) so the file stays small; the weights are random (``torch.manual_seed(0)``).
The script checks the file with ``onnx.checker`` and prints its node count, op-type histogram and SHA-256.
"""

from __future__ import annotations

import argparse
import hashlib
from collections import Counter
from pathlib import Path

import onnx
import torch
from torch import nn

BLOCKS = 61
WIDTH = 8


class SqueezeExcite(nn.Module):
    def __init__(self, channels: int) -> None:
        super().__init__()
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.reduce = nn.Conv2d(channels, channels // 2, 1)
        self.act = nn.ReLU()
        self.expand = nn.Conv2d(channels // 2, channels, 1)
        self.gate = nn.Hardsigmoid()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.gate(self.expand(self.act(self.reduce(self.pool(x)))))


class InvertedResidual(nn.Module):
    def __init__(self, channels: int, squeeze: bool, stride: tuple[int, int]) -> None:
        super().__init__()
        hidden = channels * 2
        self.expand = nn.Sequential(nn.Conv2d(channels, hidden, 1, bias=False), nn.BatchNorm2d(hidden), nn.Hardswish())
        self.depthwise = nn.Sequential(nn.Conv2d(hidden, hidden, 3, stride, 1, groups=hidden, bias=False),
                                       nn.BatchNorm2d(hidden), nn.Hardswish())
        self.se = SqueezeExcite(hidden) if squeeze else nn.Identity()
        self.project = nn.Sequential(nn.Conv2d(hidden, channels, 1, bias=False), nn.BatchNorm2d(channels))
        self.residual = stride == (1, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.project(self.se(self.depthwise(self.expand(x))))
        return x + y if self.residual else y


class Recognizer(nn.Module):
    def __init__(self, classes: int = 40) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, WIDTH, 3, 2, 1, bias=False), nn.BatchNorm2d(WIDTH), nn.Hardswish())
        strides = {8: (2, 1), 20: (2, 1), 36: (2, 1)}  # halve the height, keep the columns
        self.blocks = nn.Sequential(*[InvertedResidual(WIDTH, i % 2 == 1, strides.get(i, (1, 1)))
                                      for i in range(BLOCKS)])
        self.head = nn.Linear(WIDTH, classes)

    def forward(self, image: torch.Tensor) -> torch.Tensor:
        features = self.blocks(self.stem(image)).mean(2)  # N, C, W: pooled over the height
        columns = features.transpose(1, 2)  # N, W, C
        return self.head(columns).log_softmax(-1)


def export(path: Path) -> None:
    torch.manual_seed(0)
    model = Recognizer().eval()
    image = torch.randn(1, 3, 32, 128)
    torch.onnx.export(model, (image,), str(path), dynamo=False, opset_version=17, input_names=["image"],
                      output_names=["log_probs"], dynamic_axes={"image": {3: "width"}, "log_probs": {1: "columns"}})
    loaded = onnx.load(str(path))
    onnx.checker.check_model(loaded)
    counts = Counter(n.op_type for n in loaded.graph.node)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    print(f"{path}: {len(loaded.graph.node)} nodes, {path.stat().st_size:,} bytes, sha256 {digest}")
    print(", ".join(f"{op}×{n}" if n > 1 else op for op, n in sorted(counts.items())))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out-dir", type=Path, default=Path(__file__).resolve().parent / "onnx")
    args = parser.parse_args()
    args.out_dir.mkdir(parents=True, exist_ok=True)
    export(args.out_dir / "cnn_chain.onnx")


if __name__ == "__main__":
    main()
