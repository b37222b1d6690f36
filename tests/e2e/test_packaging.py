"""templates/ and colormaps/ ship inside the wheel and are found there, not only in a checkout."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

from conftest import ROOT


def test_wheel_carries_templates_colormaps_and_data(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(tmp_path),
         str(ROOT)],
        capture_output=True, text=True,
    )
    assert done.returncode == 0, done.stderr
    wheel = next(tmp_path.glob("annograph-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    for expected in ("renderer/templates/report.html.j2", "renderer/templates/report.md.j2",
                     "renderer/templates/report.js",
                     "renderer/templates/diff.md.j2",
                     "renderer/colormaps/heat.json", "renderer/colormaps/categories.json",
                     "renderer/data/onnx-ops.json", "renderer/data/tflite-ops.json", "renderer/commands/cli.py"):
        assert expected in names, expected
    for package in ROOT.joinpath("renderer").rglob("__init__.py"):
        relative = package.relative_to(ROOT).as_posix()
        assert relative in names, f"{relative} is missing from the wheel: list it in pyproject.toml"
    entry_points = next(n for n in names if n.endswith("entry_points.txt"))
    assert "annograph = renderer.commands.cli:console" in zipfile.ZipFile(wheel).read(entry_points).decode()

    unpacked = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(unpacked)
    probe = (
        "import renderer.colour.maps as c, renderer.reports.report as r, renderer.data.resources as res\n"
        "assert 'heat' in c.own_colormaps(), c.own_colormaps()\n"
        "assert str(res.folder('templates')).startswith(%r), res.folder('templates')\n"
        "import renderer.reports.explore as e\n"
        "assert e.script_source().startswith('// annograph'), e.script_source()[:40]\n"
        "print(r._template_source('report.md.j2')[:1])\n" % str(unpacked)
    )
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=tmp_path,
                         env={"PYTHONPATH": str(unpacked), "PATH": "/usr/bin:/bin"})
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "#"
