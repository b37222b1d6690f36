"""The held-out models from PyPI wheels (tests/support/wheel_models.py) load: `info --json` lists every operator."""

from __future__ import annotations

import json

import pytest

from conftest import run_cli
from wheel_models import MODELS, wheel_model


@pytest.mark.parametrize("key", sorted(MODELS))
def test_info_lists_every_operator(key: str) -> None:
    path = wheel_model(key)
    done = run_cli("info", path, "--json")
    assert done.returncode == 0, done.stderr
    listing = json.loads(done.stdout)
    operators = [op for graph in listing["graphs"] for op in graph["operators"]]
    assert len(operators) > 20, key
