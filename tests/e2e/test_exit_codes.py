"""Exit statuses as argparse and POSIX tools have them: 2 for a usage error (argparse's own, and a bad option
value or options that do not go together, found before any file is read), 1 for any other error, 3 for the diff
gate; one line on stderr either way and nothing written."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import ONNX, one_line_error, run_cli

MODEL = ONNX / "tiny_cnn.onnx"
OTHER = ONNX / "tiny_transformer.onnx"
LATENCY = ONNX.parent / "annotations" / "tiny_cnn.latency.yaml"


def _usage_cases(tmp: Path) -> list[tuple[list[str], str]]:
    out = str(tmp / "out.svg")
    return [
        (["render", MODEL, "-o", out, "--collapse", "deep"], "--collapse 'deep'"),
        (["render", MODEL, "-o", out, "--summary", str(tmp / "s.md"), "--summary-rows", "99"], "--summary-rows 99"),
        (["render", MODEL, "-o", out, "--summary", str(tmp / "s.md"), "--summary-link-base", "ftp://x"],
         "--summary-link-base"),
        (["render", MODEL, "-o", out, "--summary", str(tmp / "s.txt")], "name a .md file"),
        (["render", MODEL, OTHER, "-o", str(tmp), "--summary", str(tmp / "s.md")], "--summary takes one model"),
        (["render", MODEL, OTHER, "-o", str(tmp), "--format", "gif"], "--format 'gif'"),
        (["metrics", MODEL, "-o", str(tmp / "m.csv"), "--max-tensor-elements", "-1"], "--max-tensor-elements"),
        (["diff", MODEL, MODEL, "--metric", "macs", "-o", out, "--fail-total-above", "x"], "--fail-total-above"),
        (["compare", "--dumps", str(tmp / "a.npz"), str(tmp / "b.npz"), "-o", str(tmp / "e.json")], "--dumps needs"),
        (["diff", MODEL, MODEL, MODEL, "--metric", "macs", "-o", out], "one model"),
        (["diff", MODEL, "--before", str(MODEL), "--metric", "macs", "-o", out], "--before FILE --after FILE"),
        (["diff", MODEL, MODEL, "--metric", "macs", "-o", out, "--fail-above", "ten"], "--fail-above 'ten'"),
        (["diff", MODEL, MODEL, "--metric", "macs", "-o", out, "--min-share", "101"], "--min-share '101'"),
    ]


@pytest.mark.parametrize("case", range(13))
def test_a_bad_option_value_is_a_usage_error(case: int, tmp_path: Path) -> None:
    argv, says = _usage_cases(tmp_path)[case]
    run = run_cli(*argv)
    error = one_line_error(run)
    assert run.returncode == 2, (argv, run.stderr)
    assert says in error, error
    assert not (tmp_path / "out.svg").exists() and not (tmp_path / "s.md").exists()


@pytest.mark.parametrize("command", ["info", "render", "batch", "metrics", "compare", "diff", "embed", "export"])
def test_argparse_mistakes_exit_2_and_other_errors_1(command: str, tmp_path: Path) -> None:
    run = run_cli(command, MODEL, "--no-such-option")
    assert run.returncode == 2 and "(see annograph " in one_line_error(run)
    missing = tmp_path / "missing.onnx"
    args = {"info": [missing], "render": [missing, "-o", tmp_path / "x.svg"],
            "batch": [missing, "-a", LATENCY, "-o", tmp_path / "b", "--color-by", "latency_us"],
            "metrics": [missing, "-o", tmp_path / "m.csv"],
            "compare": [missing, MODEL, "--random-inputs", "0", "-o", tmp_path / "e.json"],
            "diff": [missing, MODEL, "--metric", "macs", "-o", tmp_path / "d.svg"],
            "embed": [missing, "-a", MODEL, "-o", tmp_path / "e.onnx"],
            "export": [missing, "-a", MODEL, "--to", "csv", "-o", tmp_path / "x.csv"]}[command]
    run = run_cli(command, *args)
    assert run.returncode == 1 and "missing.onnx" in one_line_error(run), run.stderr


def test_malformed_dims_and_a_batch_without_files_are_usage_errors(tmp_path: Path) -> None:
    """The last usage mistakes that exited 1: a --dim that is not NAME=VALUE, and batch without -a."""
    for argv in (["render", ONNX / "tiny_cnn.onnx", "--dim", "batch=x", "-o", tmp_path / "a.svg"],
                 ["metrics", ONNX / "tiny_cnn.onnx", "--dim=--", "-o", tmp_path / "a.csv"],
                 ["batch", ONNX / "tiny_cnn.onnx", "-o", tmp_path / "out"]):
        run = run_cli(*argv)
        assert run.returncode == 2, (argv, run.stderr)
        assert len(run.stderr.strip().splitlines()) == 1 and "Traceback" not in run.stderr
    assert not any(tmp_path.iterdir())
