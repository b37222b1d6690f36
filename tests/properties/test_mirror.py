"""The tests mirror the package (issue 29): a test of one module is ``tests/unit/<its folder>/test_<module>.py``,
next to the folders for whole commands (``e2e/``), properties of every input or output (``properties/``), the
helpers (``support/``) and the fixtures; nothing else lies in ``tests/``."""

from __future__ import annotations

from pathlib import Path

from conftest import ROOT

TESTS = ROOT / "tests"
FOLDERS = {"unit", "e2e", "properties", "support", "fixtures"}


def misplaced(unit: Path, package: Path) -> list[str]:
    """The ``test_X.py`` files under ``unit`` whose X is neither a module nor a package at the same path under
    ``package``."""
    wrong = []
    for path in sorted(unit.rglob("test_*.py")):
        folder = package / path.parent.relative_to(unit)
        name = path.stem.removeprefix("test_")
        if not ((folder / f"{name}.py").is_file() or (folder / name / "__init__.py").is_file()):
            wrong.append(str(path.relative_to(unit)))
    return wrong


def test_every_unit_test_names_a_module_at_its_path() -> None:
    assert len(list((TESTS / "unit").rglob("test_*.py"))) > 30
    assert misplaced(TESTS / "unit", ROOT / "renderer") == []


def test_the_check_finds_a_test_away_from_its_module(tmp_path: Path) -> None:
    package, unit = tmp_path / "renderer", tmp_path / "unit"
    for module in ("core/ir.py", "picture/grouping/__init__.py"):
        (package / module).parent.mkdir(parents=True, exist_ok=True)
        (package / module).write_text("")
    for test in ("core/test_ir.py", "picture/test_grouping.py", "picture/test_ir.py", "test_core.py"):
        (unit / test).parent.mkdir(parents=True, exist_ok=True)
        (unit / test).write_text("")
    assert misplaced(unit, package) == ["picture/test_ir.py", "test_core.py"]


def test_tests_live_in_the_folders_of_the_house() -> None:
    assert sorted(p.name for p in TESTS.glob("*.py")) == ["conftest.py"]
    assert {p.name for p in TESTS.iterdir() if p.is_dir() and p.name != "__pycache__"} == FOLDERS


def test_every_test_folder_is_a_package() -> None:
    """Test modules are imported by their dotted path from tests/ (``unit.picture.test_pages``): two modules of
    one name in different folders (``unit/loaders/onnx/test_loader.py``, ``unit/loaders/tflite/test_loader.py``)
    stay apart."""
    folders = {p.parent for name in ("unit", "e2e", "properties") for p in (TESTS / name).rglob("test_*.py")}
    lacking = sorted(str(f.relative_to(TESTS)) for f in folders for up in [f, *f.parents]
                     if up != TESTS and TESTS in up.parents and not (up / "__init__.py").is_file())
    assert lacking == []
