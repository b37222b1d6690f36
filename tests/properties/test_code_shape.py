"""The shape of the code (issue 20): no function or method of the package is over 60 lines, so that each one can
be read, and tested, as a whole; and no loose modules at the top of ``renderer/`` but the package face, ``python -m
renderer`` and the version: the rest sit in the layers that say what they are (``core/``, ``picture/``…)."""

from __future__ import annotations

import ast

from conftest import ROOT

MAX_LINES = 60
LOOSE_MODULES = ["__init__.py", "__main__.py", "version.py"]


def long_functions(source: str, where: str = "") -> list[str]:
    """``where:name (N lines)`` for every function or method in ``source`` longer than MAX_LINES, decorators
    and docstring included; a nested function counts within its parent and on its own."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            first = min([node.lineno] + [d.lineno for d in node.decorator_list])
            lines = (node.end_lineno or node.lineno) - first + 1
            if lines > MAX_LINES:
                found.append(f"{where}:{node.lineno} {node.name} ({lines} lines)")
    return found


def test_no_function_is_over_60_lines() -> None:
    offenders = [f for path in sorted((ROOT / "renderer").rglob("*.py"))
                 for f in long_functions(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)))]
    assert not offenders, "split these functions:\n" + "\n".join(offenders)


def _function(name: str, body_lines: int, indent: str = "") -> str:
    body = "".join(f"{indent}    x{i} = {i}\n" for i in range(body_lines))
    return f"{indent}def {name}() -> None:\n{body}"


def test_the_check_counts_lines_of_functions_and_methods() -> None:
    fits, over = _function("fits", MAX_LINES - 1), _function("over", MAX_LINES)
    assert long_functions(fits) == []
    assert long_functions(over, "m.py") == [f"m.py:1 over ({MAX_LINES + 1} lines)"]
    method = "class C:\n" + _function("method", MAX_LINES + 5, "    ")
    assert [f.split(" ")[1] for f in long_functions(method)] == ["method"]
    decorated = "@staticmethod\n" + _function("decorated", MAX_LINES - 1)
    assert len(long_functions(decorated)) == 1



def test_renderer_has_no_loose_modules() -> None:
    loose = sorted(p.name for p in (ROOT / "renderer").glob("*.py"))
    assert loose == LOOSE_MODULES, f"put new modules in the layer they belong to: {loose}"
