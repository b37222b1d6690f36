"""The held-out models from PyPI wheels (tests/support/wheel_models.py) load: `info --json` lists every operator;
the manual's gallery publishes pictures only of those whose licence allows it."""

from __future__ import annotations

import ast
import json

import pytest

from conftest import ROOT, run_cli
from wheel_models import MODELS, wheel_model


@pytest.mark.parametrize("key", sorted(MODELS))
def test_info_lists_every_operator(key: str) -> None:
    path = wheel_model(key)
    done = run_cli("info", path, "--json")
    assert done.returncode == 0, done.stderr
    listing = json.loads(done.stdout)
    operators = [op for graph in listing["graphs"] for op in graph["operators"]]
    assert len(operators) >= 10, key  # g2p-id-py's LSTM decoder has 18


def test_the_gallery_draws_no_model_kept_to_the_tests() -> None:
    """docs/conf.py draws ``GALLERY_WHEELS`` into the published manual; a model whose licence keeps it to the tests
    (yolov8n, AGPL) is never among them."""
    tree = ast.parse((ROOT / "docs" / "conf.py").read_text(encoding="utf-8"))
    gallery = next(ast.literal_eval(node.value) for node in tree.body if isinstance(node, ast.Assign)
                   and any(getattr(target, "id", "") == "GALLERY_WHEELS" for target in node.targets))
    assert gallery and set(gallery) <= set(MODELS), gallery
    kept = {key for key, model in MODELS.items() if "tests only" in model.licence}
    assert kept == {"yolov8n_320", "hey_jarvis", "melspectrogram", "madmom_beats_tcn", "madmom_key_cnn", "birdnet"}
    assert not kept & set(gallery)
