"""``renderer/loaders/tflite/lengths.py``: a TFLite model's dynamic length or image side that the file writes as 1
is sized as ONNX's unnamed dims are, at a size LiteRT prepares the model at with no tensor left empty."""

from __future__ import annotations

from pathlib import Path

from conftest import run_cli
from renderer.loaders.registry import load_model
from renderer.loaders.tflite import lengths
from renderer.metrics import builtin as metrics
from unit.loaders.tflite.test_loader import build_dynamic_sequence_model
from wheel_models import wheel_model


def test_audio_samples_written_as_one_take_the_first_size_litert_prepares(tmp_path: Path) -> None:
    """openWakeWord's melspectrogram (pyopen-wakeword 1.1.0, held out): input ``[-1, -1]`` written ``[1, 1]``, two
    512-sample windows (CONV_2D, VALID) 160 apart. It was drawn at 1 sample: each window over 1 sample, MACs 273k.
    Axis 1 is a length; 128 and the retry sizes below 512 leave the windows' output empty, so 512 is taken and
    said, and the MACs are those of ``--dim axis1=512`` (one frame of 257 bins, then 32 mel bands)."""
    path = wheel_model("melspectrogram")
    model = load_model(path)
    (batch, samples) = model.assumed_dims
    assert (batch.name, batch.value, batch.source) == ("batch", 1, "the file's placeholder")
    assert (samples.name, samples.value, samples.role) == ("axis1", 512, "sequence")
    assert samples.source == f"{lengths.PREPARES} (128 fails; tried 128, 64, 32, 16, 8, 256, 512)"
    assert [v.type.shape for v in model.main.outputs] == [(1, 1, 1, 32)]
    assert not any(0 in v.type.shape for v in model.main.values if v.type is not None and v.type.shape)
    pinned = load_model(path, dims={"axis1": 512})
    assert metrics.model_costs(model).totals()["macs"] == metrics.model_costs(pinned).totals()["macs"] > 512 * 257
    run = run_cli("info", path)
    assert run.returncode == 0 and "batch=1, axis1=512 assumed (--dim to change)" in run.stdout, run.stdout[:400]


def test_a_model_litert_cannot_prepare_keeps_the_placeholder(tmp_path: Path) -> None:
    """A custom operator LiteRT lacks: no size prepares, so the file's 1 stays and no note is added."""
    path = tmp_path / "custom.tflite"
    path.write_bytes(build_dynamic_sequence_model(custom_last=True))
    model = load_model(path)
    assert [(a.name, a.value, a.source) for a in model.assumed_dims] == [("batch", 1, "the file's placeholder"),
                                                                         ("axis1", 1, "the file's placeholder")]
    assert model.main.values[0].type.shape == (1, 1, 16) and model.notes == []
