"""One Graphviz layout per picture, whatever the number of formats written (issue 12): ``dot`` runs once and
PNG and PDF are drawn from its laid-out graph by ``neato -n2``. Counted with shims in front of both programs."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from conftest import ONNX, run_cli


def _shimmed(tmp_path: Path) -> tuple[dict[str, str], Path]:
    shims, log = tmp_path / "bin", tmp_path / "runs.log"
    shims.mkdir()
    for program in ("dot", "neato"):
        real = shutil.which(program)
        assert real, f"{program} is not installed"
        shim = shims / program
        shim.write_text(f'#!/bin/sh\necho "{program} $*" >> "{log}"\nexec "{real}" "$@"\n', encoding="utf-8")
        shim.chmod(0o755)
    return {"PATH": f"{shims}{os.pathsep}{os.environ['PATH']}"}, log


def test_three_formats_share_one_layout(tmp_path: Path) -> None:
    env, log = _shimmed(tmp_path)
    model = ONNX / "tiny_cnn.onnx"
    outputs = [tmp_path / f"a.{fmt}" for fmt in ("svg", "png", "pdf")]
    run = run_cli("render", model, "-q", "--no-sidecar", *[a for o in outputs for a in ("-o", o)], env=env)
    assert run.returncode == 0, run.stderr
    calls = [line.split()[0] for line in log.read_text(encoding="utf-8").splitlines()]
    assert calls == ["dot", "neato", "neato"], calls
    assert all("-n2" in line for line in log.read_text(encoding="utf-8").splitlines()[1:])
    assert outputs[1].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and outputs[2].read_bytes()[:5] == b"%PDF-"

    log.write_text("", encoding="utf-8")  # the SVG is the one a single-format render lays out
    alone = tmp_path / "alone.svg"
    run = run_cli("render", model, "-q", "--no-sidecar", "-o", alone, env=env)
    assert run.returncode == 0 and log.read_text(encoding="utf-8").split()[0] == "dot"
    assert alone.read_bytes() == outputs[0].read_bytes()
