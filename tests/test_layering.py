"""Imports run one way: no module of the package reaches back up into the package root (``renderer/__init__``),
which would pull the public API, and through it rendering, into readers and loaders."""

from __future__ import annotations

import ast

from payloads import ROOT

PACKAGE = ROOT / "renderer"


def _root_imports(source: str, module: str) -> list[str]:
    """Names the code ``source`` of ``module`` (dotted) imports from the package root, not from its modules."""
    parts = tuple(module.split("."))
    package = parts[:-1] if parts[-1] != "__init__" else parts
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name == "renderer"]
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else ()
            target = base + tuple(node.module.split(".")) if node.module else base
            if target == ("renderer",):
                found += [a.name for a in node.names
                          if not (PACKAGE / f"{a.name}.py").is_file() and not (PACKAGE / a.name).is_dir()]
    return found


def test_no_module_imports_the_package_root() -> None:
    offenders = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        if module != "renderer.__init__" and (names := _root_imports(path.read_text(encoding="utf-8"), module)):
            offenders[module] = names
    assert not offenders, offenders


def test_the_check_sees_a_root_import() -> None:
    source = "from .. import __version__\nfrom .. import ir\nfrom ..ir import Model\nimport renderer\n"
    assert _root_imports(source, "renderer.annotations.embedded") == ["__version__", "renderer"]
    assert _root_imports("from . import __version__\n", "renderer.cli") == ["__version__"]
    assert _root_imports("from .version import __version__\n", "renderer.cli") == []


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
    for reader in ("annotations/onnx_tool_csv.py", "annotations/tflite_quant_debug.py"):
        tree = ast.parse((PACKAGE / reader).read_text(encoding="utf-8"))
        imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        assert "csv" not in imported, reader
    for writer in ("picture/rendering.py", "metrics/export.py"):
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
    for module, name in (("renderer.annotations.tflite_benchmark", "read"), ("renderer.loaders.onnx", "_Builder._graph"),
                         ("renderer.annotations.__init__", "merge"), ("renderer.metrics.weight_metrics", "compute")):
        assert _length(module, name) <= 40, (module, name, _length(module, name))


def test_module_names_say_what_they_hold_and_dead_code_stays_gone() -> None:
    """Issue 12 found ``annotations/model.py`` (not the ML model), ``metrics/profile.py`` (no profiling), two
    ``ids.py``, and ``Annotations.entry`` and ``Node.constant_inputs`` that nothing called."""
    from renderer.ir import Node
    from renderer.records import Annotations

    modules = [p.relative_to(PACKAGE).as_posix() for p in PACKAGE.rglob("*.py")]
    assert "annotations/model.py" not in modules and "metrics/profile.py" not in modules
    assert [m for m in modules if m.endswith("/ids.py") or m == "ids.py"] == []
    assert not hasattr(Annotations, "entry") and not hasattr(Node, "constant_inputs")
