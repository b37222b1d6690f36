"""The same inputs give byte-identical outputs: across runs, processes and PYTHONHASHSEED values, in every
registered output format (PDF and PNG included: graphviz_run fixes SOURCE_DATE_EPOCH for cairo)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import payloads as P
from conftest import ONNX, ROOT, SAMPLES, TFLITE

FORMATS = P.output_formats()
MODELS = [ONNX / "tiny_cnn.onnx", ONNX / "control_flow.onnx", TFLITE / "okay_nabu.tflite"]
ANNOTATIONS = SAMPLES / "annotations" / "tiny_cnn.latency.yaml"
HASH_SEEDS = ("0", "1", "4242")


def _batch(folder: Path, hash_seed: str) -> subprocess.Popen:
    folder.mkdir(parents=True)
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONHASHSEED=hash_seed)
    command = [sys.executable, "-m", "renderer", "render", *map(str, MODELS), "-a", str(ANNOTATIONS), "-q",
               "--no-sidecar", "--format", ",".join(FORMATS), "-o", f"{folder}/"]
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=ROOT)


@pytest.mark.slow
def test_byte_identical_across_hash_seeds(tmp_path: Path) -> None:
    """Three CLI processes with different hash seeds (run side by side), every model × every format."""
    runs = {seed: _batch(tmp_path / f"seed-{seed}", seed) for seed in HASH_SEEDS}
    for seed, process in runs.items():
        _, stderr = process.communicate(timeout=600)
        assert process.returncode == 0, stderr.decode()
    reference = tmp_path / f"seed-{HASH_SEEDS[0]}"
    names = sorted(p.name for p in reference.iterdir())
    assert len(names) == len(MODELS) * len(FORMATS), names
    for seed in HASH_SEEDS[1:]:
        other = tmp_path / f"seed-{seed}"
        assert sorted(p.name for p in other.iterdir()) == names
        for name in names:
            assert (reference / name).read_bytes() == (other / name).read_bytes(), \
                f"{name} differs between PYTHONHASHSEED={HASH_SEEDS[0]} and {seed}"
    pdf = (reference / "tiny_cnn.pdf").read_bytes()
    dates = re.findall(rb"/(?:CreationDate|ModDate) \(D:(\d{4})", pdf)
    assert dates and all(year == b"1980" for year in dates), dates  # SOURCE_DATE_EPOCH 315532800


@pytest.mark.slow
def test_pages_in_columns_under_a_band_are_written_alike_whatever_the_hash_seed(tmp_path: Path) -> None:
    """basic-pitch nmp's pages 1 and 2 are drawn with their first column across the top and their chain in
    columns under it (``columns.cut_levels``): the DOT listed the ends of the top column over ``colsep_under`` in
    the order of a set of names, which PYTHONHASHSEED changed (the SVG came out the same, the DOT pages did not).
    Which pages those are follows the page numbering: found by their content."""
    from wheel_models import wheel_model

    model = wheel_model("basic_pitch_nmp")
    runs = {}
    for seed in ("1", "7"):
        folder = tmp_path / f"seed-{seed}"
        folder.mkdir()
        env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONHASHSEED=seed)
        runs[seed] = subprocess.Popen([sys.executable, "-m", "renderer", "render", str(model), "-q", "--no-sidecar",
                                       "--no-layout-cache", "-o", "nmp.svg", "-o", "nmp.dot"],
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=folder)
    for process in runs.values():
        _, stderr = process.communicate(timeout=600)
        assert process.returncode == 0, stderr.decode()
    pages = [sorted((tmp_path / f"seed-{seed}" / "nmp.dot.pages").iterdir()) for seed in runs]
    assert [p.name for p in pages[0]] == [p.name for p in pages[1]] and len(pages[0]) >= 4
    assert any("colsep_under" in page.read_text() for page in pages[0])  # a page drawn under its band
    for one, other in zip(*pages):
        assert one.read_bytes() == other.read_bytes(), f"{one.name} differs between hash seeds 1 and 7"


def test_same_process_renders_twice_identically(tmp_path: Path) -> None:
    """Caches (metrics profiles, colour maps, templates) do not change a second render in the same process."""
    from renderer.annotations.registry import load_annotations
    from renderer.compose.rendering import render_bytes
    from renderer.core.options import RenderOptions
    from renderer.loaders.registry import load_model

    text_formats = [f for f in FORMATS if f not in ("pdf", "png")]
    for path in (ONNX / "tiny_cnn.onnx", TFLITE / "okay_nabu.tflite"):
        outputs = []
        for _ in range(2):
            model = load_model(path)
            annotations = load_annotations([ANNOTATIONS], model) if path.suffix == ".onnx" else None
            options = RenderOptions(color_by="latency_us" if annotations else None)
            outputs.append({fmt: render_bytes(model, annotations, options, fmt) for fmt in text_formats})
        for fmt in text_formats:
            assert outputs[0][fmt] == outputs[1][fmt], f"{path.name} {fmt} differs between two renders"
            assert outputs[0][fmt], fmt
