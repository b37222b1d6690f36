"""``renderer/loaders/registry.py``'s ``detect``: the first loader in ``LOADERS`` order whose ``match`` takes the
file's head, importing only the loaders it asks (an ONNX render imports no ExecuTorch, torch.export, TensorRT
or OpenVINO module), and the extension when no content matches."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ONNX, ROOT, SAMPLES
from renderer.loaders import registry

MODELS = [ONNX / "tiny_cnn.onnx", ONNX / "control_flow.onnx", SAMPLES / "tflite" / "okay_nabu.tflite",
          SAMPLES / "tensorrt" / "resnet50_tf_fp32.onnx.engine.graph.json"]


@pytest.mark.parametrize("model", MODELS, ids=lambda p: p.name)
def test_the_loader_is_the_first_whose_match_takes_the_head(model: Path) -> None:
    head = model.read_bytes()[:registry.HEAD_BYTES]
    first = next(module for module in registry.loader_modules() if module.match(head))
    assert registry.detect(model) is first


def test_an_onnx_file_is_detected_without_importing_the_later_loaders() -> None:
    code = ("import sys\nfrom renderer.loaders import registry\n"
            f"print(registry.detect(__import__('pathlib').Path({str(ONNX / 'tiny_cnn.onnx')!r})).FORMAT)\n"
            "print(sorted(m for m in sys.modules if m.startswith('renderer.loaders.')"
            " and m.endswith('.loader')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    fmt, loaded = done.stdout.splitlines()
    assert fmt == "onnx"
    assert loaded == str(["renderer.loaders.onnx.loader", "renderer.loaders.tflite.loader"]), done.stdout


def test_a_file_no_content_matches_is_detected_by_its_extension(tmp_path: Path) -> None:
    model = tmp_path / "model.onnx"
    model.write_bytes(b"\x00" * 64)
    assert registry.detect(model).FORMAT == "onnx"
    other = tmp_path / "model.unknown"
    other.write_bytes(b"\x00" * 64)
    with pytest.raises(registry.LoaderError, match="unknown model format"):
        registry.detect(other)
