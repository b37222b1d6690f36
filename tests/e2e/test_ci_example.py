"""docs/ci.md: its two GitHub Actions workflows pass GitHub's workflow schema (schemastore's, as check-jsonschema
vendors it, read offline) and have the two-workflow shape that gives fork pull requests their comment; the install
step installs annograph from a wheel built from this source and refuses a changed one; the shell of the render
step, run with bash in a real git repository holding a base commit and a pull-request commit, renders exactly
the models the pull request changed and writes one comment with a section each; the comment workflow's check
takes the pull request number from that artifact and refuses one that is not a number or whose head moved."""

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


def _workflow_texts() -> dict[str, str]:
    """File name under .github/workflows/ → the YAML docs/ci.md says to save there."""
    found = re.findall(r"`\.github/workflows/([\w.-]+)`:\n\n```yaml\n(.*?)^```", CI_DOC.read_text(encoding="utf-8"),
                       re.S | re.M)
    return dict(found)


def _workflows() -> dict[str, dict]:
    texts = _workflow_texts()
    assert set(texts) == {"annograph.yml", "annograph-comment.yml"}, set(texts)
    return {name: yaml.safe_load(text) for name, text in texts.items()}


def _workflow() -> dict:
    return _workflows()["annograph.yml"]


def _step(workflow: dict, ident: str) -> dict:
    steps = [step for job in workflow["jobs"].values() for step in job["steps"]]
    return next(step for step in steps if step.get("id") == ident)


def _render_step(workflow: dict) -> dict:
    return _step(workflow, "render")


def test_the_workflows_pass_githubs_workflow_schema_offline(tmp_path: Path) -> None:
    """check-jsonschema's vendored copy of schemastore's github-workflow schema; proxies that lead nowhere show
    that nothing is fetched. A misspelt key fails it, so the check bites."""
    checker = shutil.which("check-jsonschema", path=str(Path(sys.executable).parent))
    assert checker, "check-jsonschema is in the test extra"
    offline = {**os.environ, "HTTP_PROXY": "http://127.0.0.1:9", "HTTPS_PROXY": "http://127.0.0.1:9",
               "http_proxy": "http://127.0.0.1:9", "https_proxy": "http://127.0.0.1:9"}
    files = []
    for name, text in _workflow_texts().items():
        files.append(tmp_path / name)
        files[-1].write_text(text, encoding="utf-8")
    bad = tmp_path / "bad.yml"
    bad.write_text(_workflow_texts()["annograph.yml"].replace("runs-on:", "run-on:"), encoding="utf-8")
    done = subprocess.run([checker, "--builtin-schema", "vendor.github-workflows", *map(str, files)],
                          capture_output=True, text=True, env=offline, timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    done = subprocess.run([checker, "--builtin-schema", "vendor.github-workflows", str(bad)],
                          capture_output=True, text=True, env=offline, timeout=120, check=False)
    assert done.returncode == 1 and "run-on" in done.stdout + done.stderr, done.stdout + done.stderr


def test_fork_pull_requests_get_their_comment_from_a_second_workflow() -> None:
    """The render run needs no write access (a fork's token has none); the comment run starts on its completion,
    checks out nothing, downloads that run's artifact and comments with the checked number."""
    workflows = _workflows()
    render, comment = workflows["annograph.yml"], workflows["annograph-comment.yml"]
    assert render["permissions"] == {"contents": "read"}
    trigger = comment.get("on", comment.get(True))["workflow_run"]
    assert trigger == {"workflows": [render["name"]], "types": ["completed"]}
    assert comment["permissions"] == {"actions": "read", "pull-requests": "write"}
    steps = [step for job in comment["jobs"].values() for step in job["steps"]]
    uses = [step["uses"].split("@")[0] for step in steps if "uses" in step]
    assert "actions/checkout" not in uses
    download = next(step for step in steps if step.get("uses", "").startswith("actions/download-artifact@"))
    assert download["with"]["run-id"] == "${{ github.event.workflow_run.id }}"
    post = next(step for step in steps if step.get("uses", "").startswith("marocchino/sticky-pull-request-comment@"))
    assert post["with"]["number"] == "${{ steps.pr.outputs.number }}"
    uploaded = next(step for job in render["jobs"].values() for step in job["steps"]
                    if step.get("uses", "").startswith("actions/upload-artifact@"))
    assert uploaded["with"]["name"] == download["with"]["name"]


def test_the_install_step_installs_the_committed_wheel_and_refuses_a_changed_one(tmp_path: Path) -> None:
    """The wheel built from this source as docs/ci.md says, installed by the install step's own shell (into a
    folder, dependencies aside: they are this venv's); one byte changed and the checksum stops it."""
    repo = tmp_path / "repo"
    wheels = repo / ".github" / "annograph"
    wheels.mkdir(parents=True)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w",
                    str(wheels), str(ROOT)], check=True, capture_output=True, timeout=300)
    wheel = next(wheels.glob("annograph-*.whl"))
    subprocess.run(f"sha256sum {wheel.name} > SHA256SUMS", shell=True, cwd=wheels, check=True)
    script = tmp_path / "install.sh"
    script.write_text(_step(_workflow(), "install")["run"])
    target = tmp_path / "site"
    env = {**os.environ, "PIP_TARGET": str(target), "PIP_NO_DEPS": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1",
           "PATH": str(Path(sys.executable).parent) + os.pathsep + os.environ["PATH"]}
    done = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)], cwd=repo, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert (target / "renderer" / "commands" / "cli.py").is_file() and list(target.glob("annograph-*.dist-info"))
    with wheel.open("ab") as f:
        f.write(b"\0")
    shutil.rmtree(target)
    done = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)], cwd=repo, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode != 0 and "FAILED" in done.stdout + done.stderr
    assert not target.exists()


def test_the_workflow_has_the_shape_github_expects() -> None:
    workflow = _workflow()
    triggers = workflow.get("on", workflow.get(True))  # YAML 1.1 reads a bare `on` key as true
    assert "pull_request" in triggers
    assert workflow["jobs"]
    for name, job in workflow["jobs"].items():
        assert isinstance(job["runs-on"], str) and job["steps"], name
        for step in job["steps"]:
            assert ("uses" in step) != ("run" in step), step  # each step does exactly one of the two
            if "uses" in step:
                assert re.fullmatch(r"[\w.-]+/[\w.-]+@v\d+", step["uses"]), step["uses"]
    uses = [step["uses"].split("@")[0] for job in workflow["jobs"].values() for step in job["steps"] if "uses" in step]
    assert {"actions/checkout", "actions/upload-artifact"} <= set(uses)
    runs = "\n".join(step.get("run", "") for job in workflow["jobs"].values() for step in job["steps"])
    assert "apt-get install" in runs and "graphviz" in runs
    assert "pip install annograph" not in runs  # a name nobody has published, that anyone could take
    assert "sha256sum --check" in _step(workflow, "install")["run"]
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
    shutil.copy(SAMPLES / "annotations" / "tiny_cnn.latency.yaml",
                repo / "models" / "vision net" / "cnn.annotations.yaml")
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
           "BASE_SHA": base, "HEAD_SHA": head, "PR_NUMBER": "17", "GITHUB_OUTPUT": str(outputs),
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
    expected = {f"{stem}.{ext}" for stem in stems for ext in ("svg", "html", "md")} | {"comment.md", "pr-number",
                                                                                         "head-sha"}
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
    _check_the_comment_run(tmp_path, out, head)


def _check_the_comment_run(tmp_path: Path, artifact: Path, head: str) -> None:
    """The comment workflow's check on the artifact the render step left: the number goes to the post step
    when GitHub says that pull request's head is the rendered commit. ``gh`` stands in for GitHub's API here
    (a script answering ``gh api repos/R/pulls/N --jq .head.sha`` with a chosen commit)."""
    check = _step(_workflows()["annograph-comment.yml"], "pr")
    script = tmp_path / "check.sh"
    script.write_text(check["run"])
    work = tmp_path / "comment-run"
    shutil.copytree(artifact, work / "annograph-out")
    stub = tmp_path / "bin"
    stub.mkdir()

    def run(answer: str, number: str | None = None) -> tuple[subprocess.CompletedProcess, Path]:
        (stub / "gh").write_text(f"#!/bin/sh\necho {answer}\n")
        (stub / "gh").chmod(0o755)
        if number is not None:
            (work / "annograph-out" / "pr-number").write_text(number)
        outputs = work / "github_output"
        outputs.write_text("")
        env = {**os.environ, "REPOSITORY": "octo/models", "RUN_HEAD_SHA": head, "GH_TOKEN": "x",
               "GITHUB_OUTPUT": str(outputs), "PATH": str(stub) + os.pathsep + os.environ["PATH"]}
        done = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)], cwd=work, env=env,
                              capture_output=True, text=True, timeout=60)
        return done, outputs

    done, outputs = run(head)
    assert done.returncode == 0, done.stderr
    assert outputs.read_text() == "number=17\n"
    done, outputs = run("0" * 40)
    assert done.returncode != 0 and "is not at" in done.stderr and outputs.read_text() == ""
    for hostile in ("17; echo owned", "../1", "", "-1", "99999999999"):
        done, outputs = run(head, hostile)
        assert done.returncode != 0 and "not a pull request number" in done.stderr, hostile
        assert outputs.read_text() == ""


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
    env = {**os.environ, "ANNOGRAPH_ARGS": "", "LINK_BASE": "", "BASE_SHA": base, "HEAD_SHA": head, "PR_NUMBER": "3",
           "GITHUB_OUTPUT": str(outputs), "GITHUB_SERVER_URL": "https://github.com", "GITHUB_REPOSITORY": "o/r",
           "GITHUB_RUN_ID": "1", "PATH": str(Path(sys.executable).parent) + os.pathsep + os.environ["PATH"]}
    done = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)], cwd=repo, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert dict(line.split("=", 1) for line in outputs.read_text().splitlines()) == {"count": "3", "failed": "1"}
    comment = (repo / "annograph-out" / "comment.md").read_text(encoding="utf-8")
    P.check_markdown(comment.encode())
    assert "- `001-broken__x_.onnx`: could not be rendered" in comment
