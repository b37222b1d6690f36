"""The ``annograph`` command line (renderer/commands/cli.py): ``annograph MODEL`` is ``annograph render MODEL``,
run in a fresh folder as a newcomer would, with the real ``dot``."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ONNX, ROOT, SVG_NS, TFLITE, parse_svg, run_cli
from renderer.commands.cli import COMMANDS, with_command

TINY = ONNX / "tiny_cnn.onnx"


def annograph(folder: Path, *args: str | Path) -> subprocess.CompletedProcess[str]:
    """``python -m renderer ARGS`` run in ``folder``."""
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-m", "renderer", *map(str, args)], capture_output=True, text=True,
                          env=env, cwd=folder, timeout=300)


def _files(folder: Path) -> set[str]:
    return {p.name for p in folder.iterdir()}


def test_a_model_alone_renders_its_svg_in_the_current_folder(tmp_path: Path) -> None:
    """``annograph MODEL`` writes MODEL_STEM.svg in the current folder (not beside the model), the same bytes as
    ``annograph render MODEL -o x.svg``; ``render`` without ``-o`` does the same."""
    here, there = tmp_path / "here", tmp_path / "there"
    here.mkdir()
    there.mkdir()
    model = shutil.copy(TINY, there / "tiny_cnn.onnx")
    done = annograph(here, model, "-q", "--no-sidecar")
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert _files(here) == {"tiny_cnn.svg"} and _files(there) == {"tiny_cnn.onnx"}
    explicit = annograph(tmp_path, "render", model, "-q", "--no-sidecar", "-o", tmp_path / "explicit.svg")
    assert explicit.returncode == 0, explicit.stderr
    assert (here / "tiny_cnn.svg").read_bytes() == (tmp_path / "explicit.svg").read_bytes()
    root = parse_svg(here / "tiny_cnn.svg")
    assert len([g for g in root.iter(f"{SVG_NS}g") if "op" in (g.get("class") or "").split()]) > 5
    (here / "tiny_cnn.svg").unlink()
    again = annograph(here, "render", model, "-q", "--no-sidecar")
    assert again.returncode == 0 and _files(here) == {"tiny_cnn.svg"}, again.stderr
    assert (here / "tiny_cnn.svg").read_bytes() == (tmp_path / "explicit.svg").read_bytes()


def test_options_and_formats_work_without_the_command(tmp_path: Path) -> None:
    """Options go before or after the model; ``--format`` without ``-o`` writes each format here; several
    models without ``-o`` each get their own file here."""
    face = TFLITE / "face_detection_short_range.tflite"
    done = annograph(tmp_path, "-q", TINY, "--color-by", "macs", "--format", "svg,png", "--no-sidecar")
    assert done.returncode == 0, done.stderr
    assert _files(tmp_path) == {"tiny_cnn.svg", "tiny_cnn.png"}
    assert (tmp_path / "tiny_cnn.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "macs" in (tmp_path / "tiny_cnn.svg").read_text(encoding="utf-8")
    several = annograph(tmp_path, TINY, face, "-q", "--no-sidecar", "--format", "dot")
    assert several.returncode == 0, several.stderr
    assert {"tiny_cnn.dot", "face_detection_short_range.dot"} <= _files(tmp_path)


def test_a_command_name_wins_over_a_model_file_of_that_name(tmp_path: Path) -> None:
    """A model file named ``diff`` in the current folder: ``annograph diff`` is still the diff command (here a
    usage error: it wants two models); ``annograph ./diff`` and ``annograph render diff`` render the file."""
    shutil.copy(TINY, tmp_path / "diff")
    command = annograph(tmp_path, "diff")
    assert command.returncode == 2 and "annograph diff" in command.stderr.splitlines()[-1], command.stderr
    assert _files(tmp_path) == {"diff"}
    for args in (["./diff"], ["render", "diff"]):
        done = annograph(tmp_path, *args, "-q", "--no-sidecar")
        assert done.returncode == 0 and _files(tmp_path) == {"diff", "diff.svg"}, done.stderr
        (tmp_path / "diff.svg").unlink()


def test_a_mistyped_command_is_one_line_naming_the_command(tmp_path: Path) -> None:
    done = annograph(tmp_path, "inof", TINY)
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1, done.stderr
    assert "'inof' is neither a command" in done.stderr and "did you mean info?" in done.stderr
    assert "./inof" in done.stderr and _files(tmp_path) == set()
    missing = annograph(tmp_path, "nope.onnx")
    assert missing.returncode == 1 and "nope.onnx: no such file" in missing.stderr and _files(tmp_path) == set()


def test_help_says_how_to_render_without_the_command(tmp_path: Path) -> None:
    done = annograph(tmp_path, "--help")
    assert done.returncode == 0 and "annograph MODEL [render options]" in done.stdout
    assert "annograph ./diff" in done.stdout
    assert annograph(tmp_path, "--version").stdout.startswith("annograph ")


@pytest.mark.parametrize(("argv", "expected"), [
    (["m.onnx"], ["render", "m.onnx"]),
    (["-q", "m.onnx", "-o", "x.png"], ["render", "-q", "m.onnx", "-o", "x.png"]),
    (["./render"], ["render", "./render"]),
    (["--help"], ["--help"]), (["-h"], ["-h"]), (["--ver"], ["--ver"]), ([], []),
    *[([name, "x"], [name, "x"]) for name in COMMANDS],
])
def test_with_command(argv: list[str], expected: list[str]) -> None:
    assert with_command(argv) == expected


@pytest.mark.parametrize("command", ["render", "batch", "info", "metrics"])
def test_the_model_argument_names_every_format_a_loader_reads(command: str) -> None:
    """``COMMAND --help`` names each registered loader's format (``common.MODEL_FORMATS`` has one for each, so a
    loader added later must be named): it said "ONNX, TFLite or torch.export" after ExecuTorch, OpenVINO and
    TensorRT loaders had landed."""
    from renderer.commands.common import MODEL_FORMATS
    from renderer.loaders.registry import loader_modules

    assert set(MODEL_FORMATS) == {module.FORMAT for module in loader_modules()}
    run = run_cli(command, "--help")
    assert run.returncode == 0, run.stderr
    shown = " ".join(run.stdout.split())
    for name in MODEL_FORMATS.values():
        assert name in shown, (command, name)
