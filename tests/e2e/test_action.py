"""action.yml, the composite GitHub Action: it passes GitHub's action schema (schemastore's, as check-jsonschema
vendors it, read offline), and its steps' own shell, run here with bash as the runner would run it (the inputs and
step outputs substituted into each step's ``env``, ``GITHUB_STEP_SUMMARY`` and ``GITHUB_OUTPUT`` in temporary
files), draws real models: a render with annotations, a diff against a base commit of a real git repository that
trips the gate, a model that cannot be read. Only the pip step is not run (the test venv's annograph stands for the
one it installs); the Graphviz step runs, and installs nothing where ``dot`` is on PATH."""

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
from conftest import ONNX, ROOT, SAMPLES, SVG_NS, TFLITE, parse_svg

ACTION = ROOT / "action.yml"
EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
PIP_STEP = "install"  # the step run here by the test venv instead
pytestmark = pytest.mark.skipif(shutil.which("dot") is None, reason="needs Graphviz's dot (scripts/test installs it)")


def _action() -> dict:
    return yaml.safe_load(ACTION.read_text(encoding="utf-8"))


def test_the_action_passes_githubs_action_schema_offline(tmp_path: Path) -> None:
    """check-jsonschema's vendored github-actions schema; proxies that lead nowhere show nothing is fetched. A
    composite step without its shell fails it, so the check bites."""
    offline = {**os.environ, "HTTP_PROXY": "http://127.0.0.1:9", "HTTPS_PROXY": "http://127.0.0.1:9",
               "http_proxy": "http://127.0.0.1:9", "https_proxy": "http://127.0.0.1:9"}
    check = [sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.github-actions"]
    done = subprocess.run([*check, str(ACTION)], capture_output=True, text=True, env=offline, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    broken = _action()
    del broken["runs"]["steps"][0]["shell"]
    (tmp_path / "action.yml").write_text(yaml.safe_dump(broken), encoding="utf-8")
    done = subprocess.run([*check, str(tmp_path / "action.yml")], capture_output=True, text=True, env=offline,
                          timeout=120)
    assert done.returncode != 0


def _docs_workflow() -> str:
    """The workflow docs/ci.md says to save as .github/workflows/models.yml."""
    text = (ROOT / "docs" / "ci.md").read_text(encoding="utf-8")
    found = re.search(r"`\.github/workflows/models\.yml` in your repository:\n\n```yaml\n(.*?)^```", text, re.S | re.M)
    assert found, "docs/ci.md shows a workflow using the action"
    return found.group(1)


def test_the_docs_workflow_uses_the_action_with_its_inputs_and_passes_the_workflow_schema(tmp_path: Path) -> None:
    workflow = yaml.safe_load(_docs_workflow())
    steps = [step for job in workflow["jobs"].values() for step in job["steps"]]
    uses = [step for step in steps if step.get("uses", "").startswith("OWNER/annograph@")]
    assert len(uses) == 1 and set(uses[0]["with"]) <= set(_action()["inputs"]), uses
    assert "models" in uses[0]["with"]
    (tmp_path / "models.yml").write_text(_docs_workflow(), encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.github-workflows",
                           str(tmp_path / "models.yml")], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "HTTPS_PROXY": "http://127.0.0.1:9", "https_proxy": "http://127.0.0.1:9"})
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_action_is_composite_installs_graphviz_and_annograph_at_its_ref() -> None:
    action = _action()
    assert action["runs"]["using"] == "composite"
    steps = {step.get("id", step["name"]): step for step in action["runs"]["steps"]}
    assert "apt-get install" in steps["Install Graphviz"]["run"] and "graphviz" in steps["Install Graphviz"]["run"]
    assert steps[PIP_STEP]["env"]["ACTION_PATH"] == "${{ github.action_path }}"
    assert 'pip install -q --disable-pip-version-check "$ACTION_PATH"' in steps[PIP_STEP]["run"]
    upload = next(step for step in action["runs"]["steps"] if "uses" in step)
    assert upload["uses"].startswith("actions/upload-artifact@")
    assert upload["with"]["path"] == "${{ inputs.output-dir }}"
    # no expression is pasted into a script (a model or file name could run as shell): only into env
    assert all("${{" not in step.get("run", "") for step in action["runs"]["steps"])


class Runner:
    """Runs the action's ``run:`` steps in order as the runner would: each step's ``env`` evaluated, its
    ``if:`` evaluated for the forms the action uses, step outputs read back from ``GITHUB_OUTPUT``."""

    def __init__(self, workspace: Path, temp: Path, inputs: dict[str, str]) -> None:
        action = _action()
        unknown = set(inputs) - set(action["inputs"])
        assert not unknown, unknown
        self.inputs = {name: str(spec.get("default", "")) for name, spec in action["inputs"].items()} | inputs
        self.steps = action["runs"]["steps"]
        self.workspace, self.temp = workspace, temp
        self.summary = temp / "step_summary.md"
        self.summary.write_text("", encoding="utf-8")
        self.outputs: dict[str, dict[str, str]] = {
            PIP_STEP: {"annograph": str(Path(sys.executable).parent / "annograph")}}
        self.logs: list[str] = []

    def value(self, expression: str) -> str:
        name = expression.split(".")
        if name[0] == "inputs":
            return self.inputs[name[1]]
        if name[0] == "steps":
            return self.outputs.get(name[1], {}).get(name[3], "")
        return {"github.action_path": str(ROOT), "runner.temp": str(self.temp)}[expression]

    def condition(self, text: str) -> bool:
        """``${{ … }}`` with ``!cancelled()``, ``inputs.x``/``steps.s.outputs.y`` compared to quoted strings."""
        inner = EXPRESSION.fullmatch(text.strip()).group(1)
        python = re.sub(r"(inputs|steps)\.[\w.-]+", lambda m: repr(self.value(m.group(0))), inner)
        python = python.replace("!cancelled()", "True").replace("&&", " and ").replace("||", " or ")
        assert re.fullmatch(r"(\s*('[^']*'|!=|==|and|or|True|\(|\)))*\s*", python), python  # strings compared
        return bool(eval(python, {"__builtins__": {}}))  # noqa: S307  (only the comparisons checked above)

    def run(self) -> int:
        """Runs every step (the pip one excepted) and returns the first failing step's status, else 0."""
        env_base = {**os.environ, "GITHUB_STEP_SUMMARY": str(self.summary), "GITHUB_SERVER_URL": "https://github.com",
                    "GITHUB_REPOSITORY": "octo/models", "GITHUB_RUN_ID": "1234"}
        for step in self.steps:
            ident = step.get("id", step["name"])
            if "run" not in step or ident == PIP_STEP or ("if" in step and not self.condition(step["if"])):
                continue
            outputs = self.temp / f"output-{ident}"
            outputs.write_text("", encoding="utf-8")
            env = {**env_base, "GITHUB_OUTPUT": str(outputs)}
            env |= {key: EXPRESSION.sub(lambda m: self.value(m.group(1)), str(value))
                    for key, value in step.get("env", {}).items()}
            done = subprocess.run(["bash", "--noprofile", "--norc", "-e", "-o", "pipefail", "-c", step["run"]],
                                  cwd=self.workspace, env=env, capture_output=True, text=True, timeout=900)
            self.logs.append(done.stdout + done.stderr)
            self.outputs[ident] = dict(line.split("=", 1) for line in outputs.read_text().splitlines() if line)
            if done.returncode:
                return done.returncode
        return 0


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args],
                          check=True, capture_output=True, text=True).stdout.strip()


def _headings(markdown: str) -> list[str]:
    tokens = P.markdown_tokens(markdown)
    return [tokens[i + 1].content for i, token in enumerate(tokens) if token.type == "heading_open"]


def test_render_mode_draws_every_model_with_the_annotations_into_summary_and_folder(tmp_path: Path) -> None:
    """Models by path and by pattern (one in a folder with a space in its name), the annotation file read for the
    ONNX one; each gets its SVG, HTML report and summary, and the job summary has a section each."""
    work = tmp_path / "repo"
    (work / "models" / "with space").mkdir(parents=True)
    shutil.copy(ONNX / "tiny_cnn.onnx", work / "models" / "tiny_cnn.onnx")
    shutil.copy(TFLITE / "tiny_keras_int8_asymmetric.tflite", work / "models" / "with space" / "k.tflite")
    shutil.copy(SAMPLES / "annotations" / "tiny_cnn.latency.yaml", work / "latency.yaml")
    runner = Runner(work, tmp_path, {"models": "models/tiny_cnn.onnx\nmodels/**/*.tflite\nmodels/gone.onnx\n",
                                     "annotations": "latency.yaml", "args": "--summary-rows 3"})
    assert runner.run() == 0, runner.logs
    assert runner.outputs["draw"] == {"count": "2", "failed": "0", "gated": "0"}
    out = work / "annograph-out"
    assert sorted(p.name for p in out.iterdir()) == [
        "001-tiny_cnn.onnx.html", "001-tiny_cnn.onnx.md", "001-tiny_cnn.onnx.svg",
        "002-k.tflite.html", "002-k.tflite.md", "002-k.tflite.svg"]
    boxes = [g for g in parse_svg(out / "001-tiny_cnn.onnx.svg").iter(f"{SVG_NS}g")
             if (g.get("class") or "").startswith("node op ")]
    assert len(boxes) == 18  # tiny_cnn's 18 operators, each drawn
    summary = runner.summary.read_text(encoding="utf-8")
    assert _headings(summary)[0] == "annograph"
    assert summary.count("](https://github.com/octo/models/actions/runs/1234#artifacts/001-tiny_cnn.onnx.svg)") == 1
    assert "latency_us" in (out / "001-tiny_cnn.onnx.md").read_text(encoding="utf-8")  # the annotations coloured it
    assert (out / "001-tiny_cnn.onnx.md").read_text(encoding="utf-8") in summary
    assert (out / "002-k.tflite.md").read_text(encoding="utf-8") in summary
    assert "::warning::annograph: no model file models/gone.onnx" in runner.logs[-1]


def test_diff_mode_against_the_base_commit_trips_the_gate_and_fails_the_job(tmp_path: Path) -> None:
    """A base commit with a model and its latency profile; the pull request's commit makes one operator twice as
    slow and adds a model. The changed model is a diff of its base version (the profile at the base is the before
    side), the new one a render; --fail-above 10% trips on the slower operator, the summary lists it, and the
    action's last step fails the job after the pictures are written."""
    repo = tmp_path / "repo"
    (repo / "models").mkdir(parents=True)
    _git(repo.parent, "init", "-q", "-b", "main", str(repo))
    shutil.copy(ONNX / "tiny_cnn.onnx", repo / "models" / "net.onnx")
    profile = (SAMPLES / "annotations" / "tiny_cnn.latency.yaml").read_text(encoding="utf-8")
    (repo / "latency.yaml").write_text(profile, encoding="utf-8")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "base")
    base = _git(repo, "rev-parse", "HEAD")
    slower = profile.replace("latency_us: 75.35}", "latency_us: 150.7}", 1)
    assert slower != profile
    (repo / "latency.yaml").write_text(slower, encoding="utf-8")
    shutil.copy(ONNX / "tiny_cnn_dynamic.onnx", repo / "models" / "added.onnx")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "pull request")
    runner = Runner(repo, tmp_path, {"models": "models/*.onnx", "annotations": "latency.yaml", "diff-base": base,
                                     "metric": "latency_us", "fail-above": "10%"})
    # added.onnx has no latency_us for the render: it is rendered with the profile's ids unmatched, not failed
    assert runner.run() == 1, runner.logs
    assert runner.outputs["draw"] == {"count": "2", "failed": "0", "gated": "1"}, runner.logs
    assert "::error::annograph: models/net.onnx: the diff gate failed" in runner.logs[-2]
    assert "1 models could not be drawn" not in runner.logs[-1] and "1 diffs failed the gate" in runner.logs[-1]
    out = repo / "annograph-out"
    diff = (out / "002-net.onnx.md").read_text(encoding="utf-8")
    assert _headings(diff)[0] == "Δ `latency_us`: `.annograph-base/models/net.onnx` → `models/net.onnx`"
    assert "stem/conv" in diff and "+100" in diff  # the slower Conv, +100 %, in the regressions
    summary = runner.summary.read_text(encoding="utf-8")
    assert diff in summary and (out / "001-added.onnx.md").read_text(encoding="utf-8") in summary
    assert (out / "002-net.onnx.svg").is_file() and (out / "002-net.onnx.html").is_file()
    assert not (repo / ".annograph-base").exists() and not _git(repo, "status", "--porcelain", "--", "models")


def test_diff_mode_takes_the_sidecar_at_the_base_commit_as_the_before_side(tmp_path: Path) -> None:
    """The profile committed beside the model (``MODEL.annotations.yaml``): the pull request makes one operator
    faster; the diff's before side is the sidecar as it was, so the change is an improvement and the gate holds."""
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo.parent, "init", "-q", "-b", "main", str(repo))
    shutil.copy(ONNX / "tiny_cnn.onnx", repo / "net.onnx")
    profile = (SAMPLES / "annotations" / "tiny_cnn.latency.yaml").read_text(encoding="utf-8")
    (repo / "net.onnx.annotations.yaml").write_text(profile, encoding="utf-8")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "base")
    base = _git(repo, "rev-parse", "HEAD")
    (repo / "net.onnx.annotations.yaml").write_text(profile.replace("latency_us: 215.45}", "latency_us: 21.5}"),
                                                    encoding="utf-8")
    _git(repo, "commit", "-q", "-am", "pull request")
    runner = Runner(repo, tmp_path, {"models": "net.onnx", "diff-base": base, "fail-above": "10%"})
    assert runner.run() == 0, runner.logs
    assert runner.outputs["draw"] == {"count": "1", "failed": "0", "gated": "0"}
    diff = (repo / "annograph-out" / "001-net.onnx.md").read_text(encoding="utf-8")
    assert "1 worse" not in diff and "0 worse · 1 better" in diff and "`block1/bn1`" in diff
    assert "| `block1/bn1` | `BatchNormalization` | 215.4 → 21.5 | -90.02% |" in diff  # the sidecar as it was


def test_a_model_that_cannot_be_read_fails_the_job_after_the_others_are_drawn(tmp_path: Path) -> None:
    work = tmp_path / "repo"
    work.mkdir()
    (work / "broken.onnx").write_bytes(b"\x08\x07not a model")
    shutil.copy(ONNX / "tiny_cnn.onnx", work / "tiny_cnn.onnx")
    runner = Runner(work, tmp_path, {"models": "broken.onnx\ntiny_cnn.onnx", "output-dir": "pictures"})
    assert runner.run() == 1
    assert runner.outputs["draw"] == {"count": "2", "failed": "1", "gated": "0"}
    assert sorted(p.name for p in (work / "pictures").iterdir()) == [
        "002-tiny_cnn.onnx.html", "002-tiny_cnn.onnx.md", "002-tiny_cnn.onnx.svg"]
    summary = runner.summary.read_text(encoding="utf-8")
    assert "- `001-broken.onnx`: could not be drawn; the job log says why." in summary
    assert "broken.onnx" in runner.logs[-2] and "Traceback" not in runner.logs[-2]
