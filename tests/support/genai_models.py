"""Small LLMs as people ship them: a random Llama saved with ``transformers`` and converted by onnxruntime-genai's
own model builder (``python -m onnxruntime_genai.models.builder``), in int4 (``MatMulNBits``) and fp32.

Nothing is downloaded: the config is built here, the tokenizer the builder insists on is a ``tokenizers``
WordLevel one, and the builder runs with the Hugging Face hub offline. Each model takes a few seconds; tests
share them through the session fixture ``genai_model`` (tests/conftest.py), outside pytest ``GenaiModels(dir)``
caches them under any folder.

The config's numbers (``CONFIG``) are what hand counts in tests start from.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

CONFIG = {
    "vocab_size": 256, "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
    "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 128,
}
"""The Llama config every model here is made from (head size = hidden / heads = 16)."""

PRECISIONS = {
    "int4": ["-p", "int4"],  # symmetric: MatMulNBits with packed weights and scales, no zero points
    "int4-asym": ["-p", "int4", "--extra_options", "is_symmetric=false"],  # ... and uint4 zero points
    "fp32": ["-p", "fp32"],
    # the embedding tied to the LM head (tie_word_embeddings): int4 reads the head's packed weight with a
    # GatherBlockQuantized
    "int4-tied": ["-p", "int4", "--extra_options", "shared_embeddings=true",
                  "int4_op_types_to_quantize=MatMul/Gather"],
    "fp32-tied": ["-p", "fp32", "--extra_options", "shared_embeddings=true"],
}
"""Builder arguments of each variant (those ending in -tied are built from a checkpoint with tied embeddings)."""

OFFLINE = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}


def needs_builder() -> None:
    """Skip the calling test when the packages the builder needs are missing (they are in the ``test`` extra)."""
    import pytest

    for name in ("torch", "transformers", "tokenizers", "onnxruntime_genai", "onnx_ir", "onnxscript"):
        pytest.importorskip(name, reason="the test extra's LLM builder packages are not installed")


def save_llama(folder: Path, seed: int = 0, tied: bool = False) -> Path:
    """A random-weight ``LlamaForCausalLM`` of ``CONFIG`` (its embedding tied to the LM head with ``tied``) and a
    WordLevel tokenizer, saved in ``folder``."""
    config = {**CONFIG, "tie_word_embeddings": tied}
    code = f"""
import sys, torch
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast
torch.manual_seed({seed})
folder = sys.argv[1]
LlamaForCausalLM(LlamaConfig(**{config!r})).save_pretrained(folder)
vocab = {{"<unk>": 0, **{{f"t{{i}}": i for i in range(1, {CONFIG['vocab_size']})}}}}
tokenizer = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
PreTrainedTokenizerFast(tokenizer_object=tokenizer, unk_token="<unk>", bos_token="t1",
                        eos_token="t2").save_pretrained(folder)
"""
    folder.mkdir(parents=True, exist_ok=True)
    _run([sys.executable, "-c", code, str(folder)], "saving the Llama model")
    return folder


def build(source: Path, out: Path, precision: str) -> Path:
    """Run the builder on the saved model ``source``; the path of the ``model.onnx`` it wrote in ``out``."""
    args = [sys.executable, "-m", "onnxruntime_genai.models.builder", "-m", "annograph-tiny-llama",
            "-i", str(source), "-o", str(out), "-e", "cpu", "-c", str(out.with_name(out.name + "-cache")),
            *PRECISIONS[precision]]
    _run(args, f"the {precision} build")
    return out / "model.onnx"


def _run(args: list[str], what: str) -> None:
    env = {**os.environ, **OFFLINE}
    done = subprocess.run(args, capture_output=True, text=True, env=env, timeout=600)
    if done.returncode != 0:
        raise RuntimeError(f"{what} failed ({done.returncode}):\n{done.stderr[-4000:]}")


@dataclass
class GenaiModels:
    """Builds each variant once under ``folder`` (the Llama checkpoint too) and hands back its model.onnx."""

    folder: Path

    def __post_init__(self) -> None:
        self._built: dict[str, Path] = {}

    def __call__(self, precision: str = "int4") -> Path:
        if precision not in self._built:
            done = self.folder / precision / "model.onnx"
            if done.exists():
                self._built[precision] = done
                return done
            tied = precision.endswith("-tied")
            source = self.folder / ("llama-tied" if tied else "llama")
            if not (source / "config.json").exists():
                save_llama(source, tied=tied)
            self._built[precision] = build(source, self.folder / precision, precision)
        return self._built[precision]
