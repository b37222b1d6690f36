"""docs/ci.md: its GitHub Actions workflow has the shape GitHub expects, and the shell of its render step, run
with bash in a real git repository holding a base commit and a pull-request commit, renders exactly the models
the pull request changed and writes one comment with a section each."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import payloads as P
from conftest import ONNX, ROOT, SAMPLES, TFLITE

CI_DOC = ROOT / "docs" / "ci.md"
GITHUB_COMMENT_LIMIT = 65_536


def _workflow() -> dict:
    blocks = re.findall(r"^```yaml\n(.*?)^```", CI_DOC.read_text(encoding="utf-8"), re.S | re.M)
    assert len(blocks) == 1, "docs/ci.md should hold exactly one YAML block: the workflow"
    return yaml.safe_load(blocks[0])


def _render_step(workflow: dict) -> dict:
    steps = [step for job in workflow["jobs"].values() for step in job["steps"]]
    return next(step for step in steps if step.get("id") == "render")


def test_the_workflow_has_the_shape_github_expects() -> None:
    workflow = _workflow()
    triggers = workflow.get("on", workflow.get(True))  # YAML 1.1 reads a bare `on` key as true
    assert "pull_request" in triggers
    assert workflow["permissions"]["pull-requests"] == "write"
    assert workflow["jobs"]
    for name, job in workflow["jobs"].items():
        assert isinstance(job["runs-on"], str) and job["steps"], name
        for step in job["steps"]:
            assert ("uses" in step) != ("run" in step), step  # each step does exactly one of the two
            if "uses" in step:
                assert re.fullmatch(r"[\w.-]+/[\w.-]+@v\d+", step["uses"]), step["uses"]
    uses = [step["uses"].split("@")[0] for job in workflow["jobs"].values() for step in job["steps"] if "uses" in step]
    assert {"actions/checkout", "actions/upload-artifact", "marocchino/sticky-pull-request-comment"} <= set(uses)
    install = next(step["run"] for job in workflow["jobs"].values() for step in job["steps"]
                   if "pip install annograph" in step.get("run", ""))
    assert "apt-get install" in install and "graphviz" in install
    render = _render_step(workflow)
    assert render["shell"] == "bash" and {"BASE_SHA", "HEAD_SHA"} <= set(render["env"])


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True,
                          env={**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
                               "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"})
    return done.stdout.strip()


def _pull_request(repo: Path) -> tuple[str, str, list[str]]:
    """A repository with a base commit of three models and a README, and a pull-request commit that changes
    two of the models (one of them in a folder with a space in its name), the README, and adds a latency
    profile beside one model. Returns the two commits and the changed models."""
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    (repo / "models" / "vision net").mkdir(parents=True)
    shutil.copy(ONNX / "tiny_cnn_dynamic.onnx", repo / "models" / "vision net" / "cnn.onnx")
    shutil.copy(ONNX / "tiny_transformer.onnx", repo / "models" / "kept.onnx")
    shutil.copy(TFLITE / "tiny_keras_int8_asymmetric.tflite", repo / "models" / "small.tflite")
    (repo / "README.md").write_text("models\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "base")
    base = _git(repo, "rev-parse", "HEAD")
    _git(repo, "checkout", "-q", "-b", "pr")
    shutil.copy(ONNX / "tiny_cnn.onnx", repo / "models" / "vision net" / "cnn.onnx")
    shutil.copy(TFLITE / "face_detection_short_range.tflite", repo / "models" / "small.tflite")
    # a profile beside the model (a sidecar) colours it and ranks its operators
    shutil.copy(SAMPLES / "annotations" / "tiny_cnn.latency.yaml", repo / "models" / "vision net" / "cnn.annotations.yaml")
    (repo / "README.md").write_text("models, changed\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "pr")
    return base, _git(repo, "rev-parse", "HEAD"), ["models/small.tflite", "models/vision net/cnn.onnx"]


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_the_render_step_renders_exactly_the_changed_models(tmp_path: Path) -> None:
    step = _render_step(_workflow())
    script = tmp_path / "render.sh"
    script.write_text(step["run"])
    base, head, changed = _pull_request(tmp_path / "repo")
    outputs = tmp_path / "github_output"
    env = {**os.environ,
           **{k: str(v) for k, v in step["env"].items() if "${{" not in str(v)},  # the literal ones, as written
           "BASE_SHA": base, "HEAD_SHA": head, "GITHUB_OUTPUT": str(outputs),
           "GITHUB_SERVER_URL": "https://github.com", "GITHUB_REPOSITORY": "octo/models", "GITHUB_RUN_ID": "42",
           "PATH": str(Path(sys.executable).parent) + os.pathsep + os.environ["PATH"]}  # annograph of this venv
    assert shutil.which("annograph", path=env["PATH"]), "annograph is not installed in the test venv"
    # as GitHub runs a `shell: bash` step
    done = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)], cwd=tmp_path / "repo",
                          env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr

    out = tmp_path / "repo" / "annograph-out"
    stems = [f"{k:03d}-{Path(m).name}" for k, m in enumerate(changed, 1)]  # git lists paths in sorted order
    expected = {f"{stem}.{ext}" for stem in stems for ext in ("svg", "html", "md")} | {"comment.md"}
    assert {p.name for p in out.iterdir()} == expected
    assert dict(line.split("=", 1) for line in outputs.read_text().splitlines()) == {"count": "2", "failed": "0"}

    comment = (out / "comment.md").read_text(encoding="utf-8")
    P.check_markdown(comment.encode())
    assert len(comment) < GITHUB_COMMENT_LIMIT
    for path, stem in zip(changed, stems):
        name = Path(path).name
        fmt = "TFLite" if name.endswith(".tflite") else "ONNX"
        assert comment.count(f"`{name}` · {fmt}") == 1, name  # the model's section, once
        summary = (out / f"{stem}.md").read_text(encoding="utf-8")
        assert summary in comment
        links = [t.attrGet("href") for t in P.markdown_tokens(summary) if t.type == "link_open"]  # type: ignore[attr-defined]
        run_page = "https://github.com/octo/models/actions/runs/42#artifacts/"
        assert links == [run_page + f"{stem}.svg", run_page + f"{stem}.html"]
        assert (out / f"{stem}.svg").read_bytes().lstrip().startswith((b"<?xml", b"<svg"))
        assert b"<html" in (out / f"{stem}.html").read_bytes()[:500].lower()
    assert "kept.onnx" not in comment and "README" not in comment
    cnn = (out / f"{stems[1]}.md").read_text(encoding="utf-8")
    assert "Top 10 operators by `latency_us`" in cnn and "cnn.annotations.yaml (generic): matched 18/18" in cnn
    assert comment.count("\n### ") == len(changed)  # one section heading per model


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_a_model_that_fails_is_named_and_counted(tmp_path: Path) -> None:
    step = _render_step(_workflow())
    script = tmp_path / "render.sh"
    script.write_text(step["run"])
    repo = tmp_path / "repo"
    base, _, _ = _pull_request(repo)
    (repo / "broken `x`.onnx").write_bytes(b"not a model")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "broken")
    head = _git(repo, "rev-parse", "HEAD")
    outputs = tmp_path / "github_output"
    env = {**os.environ, "ANNOGRAPH_ARGS": "", "LINK_BASE": "", "BASE_SHA": base, "HEAD_SHA": head,
           "GITHUB_OUTPUT": str(outputs), "GITHUB_SERVER_URL": "https://github.com", "GITHUB_REPOSITORY": "o/r",
           "GITHUB_RUN_ID": "1", "PATH": str(Path(sys.executable).parent) + os.pathsep + os.environ["PATH"]}
    done = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)], cwd=repo, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert dict(line.split("=", 1) for line in outputs.read_text().splitlines()) == {"count": "3", "failed": "1"}
    comment = (repo / "annograph-out" / "comment.md").read_text(encoding="utf-8")
    P.check_markdown(comment.encode())
    assert "- `001-broken__x_.onnx`: could not be rendered" in comment
