"""The examples in docstrings run: every module of the package that has one is doctested."""

from __future__ import annotations

import doctest
import importlib

import pytest

from payloads import ROOT

MODULES = sorted(".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
                 for p in (ROOT / "renderer").rglob("*.py") if ">>>" in p.read_text(encoding="utf-8"))


def test_the_documented_modules_are_found() -> None:
    assert {"renderer.core.escape", "renderer.colour.maps", "renderer.annotations.style"} <= set(MODULES)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed in {name}"
