"""The test registry (``tests/registry.py``) covers every module in the package registries, and no hook is left
in a shipped module."""

from __future__ import annotations

import payloads as P
import registry
from payloads import ROOT


def test_every_loader_and_reader_has_a_registry_entry() -> None:
    loaders = {registry.registry_name(m) for m in P.loader_modules()}
    readers = {registry.registry_name(m) for m in P.reader_modules()}
    assert loaders and readers
    assert loaders == set(registry.LOADERS), "tests/registry.py LOADERS must list exactly the package's loaders"
    assert readers == set(registry.READERS), "tests/registry.py READERS must list exactly the package's readers"


def test_registry_models_exist_and_every_tool_reader_can_be_injected() -> None:
    for name, entry in registry.READERS.items():
        assert (ROOT / entry.model).is_file(), (name, entry.model)
    fallback = [registry.registry_name(m) for m in P.reader_modules() if P.is_fallback(m)]
    assert fallback == ["generic"]
    missing = [name for name, entry in registry.READERS.items() if entry.inject is None and name not in fallback]
    assert not missing, f"readers without an injection file in tests/registry.py: {missing}"


def test_no_test_hooks_in_shipped_modules() -> None:
    hooks = ("FUZZ_MODEL", "FUZZ_INJECT", "FUZZ_SEEDS", "_fuzz_inject")
    found = [f"{path.relative_to(ROOT)}: {hook}" for path in sorted((ROOT / "renderer").rglob("*.py"))
             for hook in hooks if hook in path.read_text(encoding="utf-8")]
    assert not found, found


def test_extra_outputs_are_options_of_render_checked_as_a_known_format() -> None:
    """``registry.OUTPUTS`` (the injection tests write each of them) names real ``render`` options."""
    import argparse

    from renderer.commands import render

    parser = argparse.ArgumentParser()
    render.add_arguments(parser)
    flags = {flag for action in parser._actions for flag in action.option_strings}
    assert registry.OUTPUTS
    for name, entry in registry.OUTPUTS.items():
        args = entry.args(f"out{entry.suffix}")
        assert [a for a in args if a.startswith("--")] and {a for a in args if a.startswith("--")} <= flags, name
        assert entry.fmt in P.output_formats(), name


def test_registry_commands_are_commands() -> None:
    from renderer.commands.cli import COMMANDS

    assert set(registry.COMMANDS) <= set(COMMANDS), "tests/registry.py COMMANDS names a command annograph lacks"
    assert "diff" in registry.COMMANDS
