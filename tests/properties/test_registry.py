"""The test registry (``tests/support/registry.py``) covers every module in the package registries, and no hook is left
in a shipped module."""

from __future__ import annotations

import payloads as P
import registry
from payloads import ROOT


def test_every_loader_and_reader_has_a_registry_entry() -> None:
    loaders = {registry.registry_name(m) for m in P.loader_modules()}
    readers = {registry.registry_name(m) for m in P.reader_modules()}
    assert loaders and readers
    assert loaders == set(registry.LOADERS), "tests/support/registry.py LOADERS must list exactly the package's loaders"
    assert readers == set(registry.READERS), "tests/support/registry.py READERS must list exactly the package's readers"


def test_registry_models_exist_and_every_tool_reader_can_be_injected() -> None:
    for name, entry in registry.READERS.items():
        assert (ROOT / entry.model).is_file(), (name, entry.model)
    fallback = [registry.registry_name(m) for m in P.reader_modules() if P.is_fallback(m)]
    assert fallback == ["generic"]
    missing = [name for name, entry in registry.READERS.items() if entry.inject is None and name not in fallback]
    assert not missing, f"readers without an injection file in tests/support/registry.py: {missing}"


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

    assert set(registry.COMMANDS) <= set(COMMANDS), "tests/support/registry.py COMMANDS names a command annograph lacks"
    assert "diff" in registry.COMMANDS


def _breaks(module: object, protocol: type) -> list[str]:
    """How ``module`` fails ``protocol``: a missing or mistyped attribute, a missing function, or one whose
    parameters are not the protocol's (same names in the same order; none required that the protocol leaves
    optional)."""
    import inspect
    import typing

    problems = []
    for name, kind in typing.get_type_hints(protocol).items():
        origin = typing.get_origin(kind) or kind
        if not isinstance(getattr(module, name, None), origin):
            problems.append(f"{name}: not a {origin.__name__}")
    for name, member in vars(protocol).items():
        if name.startswith("_") or not inspect.isfunction(member):
            continue
        function = getattr(module, name, None)
        if not callable(function):
            problems.append(f"{name}(): missing")
            continue
        wanted = list(inspect.signature(member).parameters.values())[1:]
        given = list(inspect.signature(function).parameters.values())
        if [p.name for p in given[: len(wanted)]] != [p.name for p in wanted] or any(
                p.default is inspect.Parameter.empty for p in given[len(wanted):]) or any(
                g.default is inspect.Parameter.empty and w.default is not inspect.Parameter.empty
                for g, w in zip(given, wanted)):
            problems.append(f"{name}{inspect.signature(function)}: not {name}{inspect.signature(member)}")
    return problems


def test_registered_modules_meet_their_protocols() -> None:
    """Each registry line names a module that provides what its protocol says, names and parameters: the
    loaders ``Loader``, the readers ``Reader``, the exporters ``Exporter``."""
    from renderer.annotations.protocol import Reader
    from renderer.annotations.registry import reader_modules
    from renderer.exporters.protocol import Exporter
    from renderer.exporters.registry import exporter_modules
    from renderer.loaders.protocol import Loader
    from renderer.loaders.registry import loader_modules

    for modules, protocol in ((loader_modules(), Loader), (reader_modules(), Reader), (exporter_modules(), Exporter)):
        assert modules
        for module in modules:
            assert _breaks(module, protocol) == [], module.__name__


def test_the_protocol_check_sees_a_broken_module() -> None:
    import types

    from renderer.loaders.protocol import Loader

    def load(path, dims):  # noqa: ANN001, ANN202 — a loader missing the optional parameters
        return None

    broken = types.SimpleNamespace(FORMAT="x", EXTENSIONS=[".x"], match=lambda head: True, load=load)
    assert _breaks(broken, Loader) == [
        "EXTENSIONS: not a tuple",
        "load(path, dims): not load(self, path: 'Path', dims: 'dict[str, int] | None' = None, check_dims: 'bool' = "
        "True, shape_run: 'bool' = True, values: 'RealValues | None' = None, assume: 'bool' = True) -> 'Model'",
        "pinnable(): missing",
    ]
