"""Sidecar discovery: ``model.onnx.annotations.*`` and ``model.annotations.*`` beside the model are read by
``render`` (and ``export``) unless ``--no-sidecar``."""

from __future__ import annotations

import shutil
from pathlib import Path

from conftest import ONNX, parse_svg, run_cli, svg_groups, tooltip_of
from renderer.annotations.sidecar import sidecars


def test_sidecars_are_found_in_a_stable_order(tmp_path: Path) -> None:
    model = tmp_path / "net.onnx"
    shutil.copy(ONNX / "tiny_cnn.onnx", model)
    assert sidecars(model) == []
    full = tmp_path / "net.onnx.annotations.yaml"
    short = tmp_path / "net.annotations.csv"
    unrelated = tmp_path / "net.onnx.annotations.exe"
    for path in (full, short, unrelated):
        path.write_text("")
    assert sidecars(model) == [full, short]


def test_render_uses_sidecars_unless_told_not_to(tmp_path: Path) -> None:
    model = tmp_path / "net.onnx"
    shutil.copy(ONNX / "tiny_cnn.onnx", model)
    (tmp_path / "net.onnx.annotations.yaml").write_text(
        "operators:\n  - {id: stem/conv, meta: {sidecar_metric: 41.5}}\n"
    )
    (tmp_path / "net.annotations.csv").write_text("id,other_metric\nhead/fc,7\n")
    out = tmp_path / "net.svg"
    run = run_cli("render", model, "--color-by", "sidecar_metric", "-o", out)
    assert run.returncode == 0, run.stderr
    assert "using sidecar annotations" in run.stderr and "net.annotations.csv" in run.stderr
    groups = svg_groups(parse_svg(out), "op")
    assert "sidecar_metric: 41.5" in tooltip_of(groups["op-0-0"])
    fc = next(g for g in groups.values() if "other_metric: 7" in tooltip_of(g))
    assert fc is not None

    run = run_cli("render", model, "--no-sidecar", "-o", out)
    assert run.returncode == 0, run.stderr
    assert "using sidecar annotations" not in run.stderr
    assert "sidecar_metric" not in tooltip_of(svg_groups(parse_svg(out), "op")["op-0-0"])


def test_export_picks_up_sidecars_too(tmp_path: Path) -> None:
    model = tmp_path / "net.onnx"
    shutil.copy(ONNX / "tiny_cnn.onnx", model)
    (tmp_path / "net.annotations.json").write_text('{"operators": [{"id": "stem/conv", "meta": {"m": 2}}]}')
    run = run_cli("export", model, "--to", "csv", "-o", tmp_path / "out.csv")
    assert run.returncode == 0, run.stderr
    assert "stem/conv,operator" in (tmp_path / "out.csv").read_text().replace(",,", ",")
