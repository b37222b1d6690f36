"""The package is its pipeline: each layer (a folder under ``renderer/``) imports only from the layers below it,
no module reaches back up into one that (through any chain, function-level imports included) imports it, and the
packages' ``__init__`` files only re-export."""

from __future__ import annotations

import ast

from payloads import ROOT

PACKAGE = ROOT / "renderer"

LAYERS = [
    "version", "core", "data", "files", "annotations", "loaders", "metrics", "colour", "picture", "reports",
    "compose", "exporters", "compare", "diff", "batch", "integrations", "commands", "__main__", "__init__",
]
"""Lowest first. ``annotations`` sit below ``loaders``: no reader loads a model, and the ONNX loader takes shapes
from an onnxruntime profile through the ``ort_profile`` reader. ``compose`` is the only layer that joins the
picture and the reports; ``integrations`` and ``commands`` are the ways in."""


def _module(path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def _imports(module: str, source: str, is_package: bool) -> set[str]:
    """The ``renderer`` modules ``source`` imports anywhere in it (function-level and TYPE_CHECKING imports too)."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.split(".")[0] == "renderer"}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".") if is_package else module.split(".")[:-1]
                target = ".".join(base[: len(base) - node.level + 1] + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != "renderer":
                continue
            for alias in node.names:
                found.add(f"{target}.{alias.name}" if f"{target}.{alias.name}" in MODULES else target)
    return found - {module}


def _graph() -> dict[str, set[str]]:
    return {module: _imports(module, path.read_text(encoding="utf-8"), path.name == "__init__.py")
            for module, path in MODULES.items()}


def _layer(module: str) -> int:
    parts = module.split(".")
    return LAYERS.index(parts[1] if len(parts) > 1 else "__init__")


def test_every_module_is_in_a_layer() -> None:
    assert all(module.split(".")[1] in LAYERS for module in MODULES if module != "renderer")


def test_layers_import_only_from_below() -> None:
    upward = sorted(f"{module} -> {target}" for module, targets in _graph().items() for target in targets
                    if _layer(target) > _layer(module))
    assert not upward, upward


def _cycle(graph: dict[str, set[str]]) -> list[str]:
    """One import circle in ``graph`` (a depth-first walk), or []."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str]:
        state[node] = 1
        stack.append(node)
        for target in sorted(graph.get(node, ())):
            if state.get(target) == 1:
                return stack[stack.index(target):] + [target]
            if target not in state and (found := visit(target)):
                return found
        state[node] = 2
        stack.pop()
        return []

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return []


def test_no_import_circles() -> None:
    assert _cycle(_graph()) == []


def test_the_picture_writes_nothing() -> None:
    """``picture/`` makes DOT and runs Graphviz; it writes no output: the atomic writer is for ``compose`` and the
    commands."""
    offenders = sorted(module for module, targets in _graph().items()
                       if module.startswith("renderer.picture.") and "renderer.files.atomic" in targets)
    assert not offenders, offenders


def test_the_checks_see_a_circle_and_a_climb() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    source = "from renderer.compose.rendering import render\n\ndef f():\n    from ..picture import dot\n"
    found = _imports("renderer.core.options", source, False)
    assert found == {"renderer.compose.rendering", "renderer.picture.dot"}
    assert _layer("renderer.compose.rendering") > _layer("renderer.core.options")


def test_package_faces_only_re_export() -> None:
    """A package's ``__init__`` holds a docstring, imports and ``__all__``; the root's also its lazy
    ``__getattr__`` (``annograph --help`` and ``import renderer`` stay instant), which only it may hold."""
    for module, path in MODULES.items():
        if path.name != "__init__.py":
            continue
        body = ast.parse(path.read_text(encoding="utf-8")).body
        for node in body:
            if isinstance(node, (ast.Import, ast.ImportFrom)) or (
                    isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)):
                continue
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and "__all__" in ast.unparse(node).split("=")[0]:
                continue
            if module == "renderer" and (isinstance(node, ast.If) or getattr(node, "name", None) == "__getattr__"
                                         or "_LAZY" in ast.unparse(node).split("=")[0]):
                continue
            raise AssertionError(f"{module}: {ast.unparse(node).splitlines()[0]}")


def test_no_module_imports_the_package_root() -> None:
    """No module reaches back up into ``renderer/__init__``, which would pull the public API, and through it
    rendering, into readers and loaders."""
    offenders = sorted(module for module, targets in _graph().items() if "renderer" in targets)
    assert offenders == ["renderer.__main__"] or not offenders, offenders


def _definitions() -> dict[str, list[str]]:
    """Module-level function, class and alias names → modules defining them."""
    found: dict[str, list[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                found.setdefault(node.name, []).append(module)
            elif isinstance(node, ast.Assign):
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        found.setdefault(target.id, []).append(module)
    return found


def test_shared_helpers_are_written_once() -> None:
    """Helpers that used to be rewritten per module, with different meanings, exist once under one name."""
    found = _definitions()
    for name in ("first_line", "json_values", "decode_text", "ElementKey", "IdIndex", "_cell", "item", "table",
                 "csv_rows", "parse_json", "chosen_format", "_stored_and_annotated"):
        assert len(found.get(name, [])) == 1, (name, found.get(name))
    for gone in ("_first_line", "plain", "_plain", "_text", "ModelLookup", "read_header", "_parse_json",
                 "_graphs_in_info_order", "_Reader"):
        assert gone not in found, (gone, found[gone])


def test_repeated_loops_have_one_home() -> None:
    """The tool CSV readers leave reading rows to ``lookup.csv_rows``, and the writers of pictures and metric
    tables leave "format from the option or the extension" to ``file_formats.chosen_format``."""
    for reader in ("annotations/readers/onnx_tool_csv.py", "annotations/readers/tflite_quant_debug.py"):
        tree = ast.parse((PACKAGE / reader).read_text(encoding="utf-8"))
        imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        assert "csv" not in imported, reader
    for writer in ("compose/rendering.py", "exporters/metric_table.py"):
        assert ".suffix" not in (PACKAGE / writer).read_text(encoding="utf-8"), writer


def _length(module: str, qualname: str) -> int:
    path = ROOT / (module.replace(".", "/") + ".py")
    body = ast.parse(path.read_text(encoding="utf-8")).body
    for part in qualname.split("."):
        node = next(n for n in body if isinstance(n, (ast.FunctionDef, ast.ClassDef)) and n.name == part)
        body = node.body
    return node.end_lineno - node.lineno + 1  # type: ignore[union-attr,operator]


def test_functions_that_were_split_stay_short() -> None:
    """The long functions issue 12 named (92 lines and 7 flags, …) were split into parts that each do one thing."""
    for module, name in (("renderer.annotations.readers.tflite_benchmark", "read"),
                         ("renderer.loaders.onnx.loader", "_Builder._graph"), ("renderer.annotations.merge", "merge"),
                         ("renderer.metrics.weight_metrics", "compute")):
        assert _length(module, name) <= 40, (module, name, _length(module, name))


def test_module_names_say_what_they_hold_and_dead_code_stays_gone() -> None:
    """Issue 12 found ``annotations/model.py`` (not the ML model), ``metrics/profile.py`` (no profiling), two
    ``ids.py``, and ``Annotations.entry`` and ``Node.constant_inputs`` that nothing called."""
    from renderer.core.ir import Node
    from renderer.core.records import Annotations

    modules = [p.relative_to(PACKAGE).as_posix() for p in PACKAGE.rglob("*.py")]
    assert "annotations/model.py" not in modules and "metrics/profile.py" not in modules
    assert [m for m in modules if m.endswith("/ids.py") or m == "ids.py"] == []
    assert not hasattr(Annotations, "entry") and not hasattr(Node, "constant_inputs")
