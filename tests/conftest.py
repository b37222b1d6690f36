"""Shared helpers: paths to the real sample models, running the CLI as a user would, parsing SVG."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SUPPORT = ROOT / "tests" / "support"
FIXTURES = ROOT / "tests" / "fixtures"
# the helpers (payloads, registry, wheel_models, ...) are imported by their names from every folder
sys.path.insert(0, str(SUPPORT))
SAMPLES = ROOT / "samples"
ONNX = SAMPLES / "onnx"
TFLITE = SAMPLES / "tflite"
SVG_NS = "{http://www.w3.org/2000/svg}"

# Layouts are kept in a folder of this session and signed with a key of its own, never the user's (issue 30);
# run_cli's subprocesses inherit both.
_CACHE = Path(__import__("tempfile").mkdtemp(prefix="annograph-test-layouts-"))
os.environ["ANNOGRAPH_CACHE_DIR"] = str(_CACHE / "layouts")
os.environ["ANNOGRAPH_CACHE_KEY"] = str(_CACHE / "layout-cache.key")


@pytest.fixture(autouse=True)
def _no_results_cache_outside_a_render():  # type: ignore[no-untyped-def]
    """Each test starts with no results cache in use (``disk_cache.using``), as a command does; one that left it
    in use would let later tests of the worker recall runs they mean to make: reset here, and named in a warning."""
    from renderer.files import disk_cache

    token = disk_cache._SETTING.set(disk_cache.OFF)
    yield
    left = disk_cache.setting()
    disk_cache._SETTING.reset(token)
    if left != disk_cache.OFF:
        import warnings

        warnings.warn(f"the test left the results cache in use: {left!r}", stacklevel=1)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    import shutil

    shutil.rmtree(_CACHE, ignore_errors=True)
XLINK_NS = "{http://www.w3.org/1999/xlink}"


@dataclass
class Run:
    returncode: int
    stdout: str
    stderr: str


def run_cli(*args: str | Path, env: dict[str, str] | None = None, timeout: float = 300,
            cwd: Path = ROOT) -> Run:
    """``python -m renderer ARGS`` in a subprocess (in ``cwd``), the way the console command runs."""
    full_env = dict(os.environ)
    full_env["PYTHONPATH"] = str(ROOT) + os.pathsep + full_env.get("PYTHONPATH", "")
    if env:
        full_env.update(env)
    done = subprocess.run([sys.executable, "-m", "renderer", *map(str, args)], capture_output=True, text=True,
                          env=full_env, timeout=timeout, cwd=cwd)
    return Run(done.returncode, done.stdout, done.stderr)


def transformer_models():  # type: ignore[no-untyped-def]
    """``benchmarks/transformer_models.py`` (the generated BERT-like encoders), imported by path."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("transformer_models", ROOT / "benchmarks" / "transformer_models.py")
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    sys.modules.setdefault("transformer_models", module)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def parse_svg(data: bytes | str | Path):  # type: ignore[no-untyped-def]
    """The SVG as an ElementTree root, parsed with defusedxml (no entities, no network)."""
    from defusedxml import ElementTree

    if isinstance(data, Path):
        data = data.read_bytes()
    if isinstance(data, str):
        data = data.encode("utf-8")
    return ElementTree.fromstring(data)


def legend_texts(path: Path) -> list[str]:
    """The text lines of a page's legend, in order, stripped (its crumbs, then ``(where the page stands)``)."""
    root = parse_svg(path)
    legend = next(g for g in root.iter(f"{SVG_NS}g") if (g.get("id") or "").endswith("-legend"))
    return [(t.text or "").strip() for t in legend.iter(f"{SVG_NS}text")]


def legend_where(path: Path) -> tuple[list[str], str]:
    """A page's crumbs (the page names from the first page down to this one) and the bracketed text after them."""
    texts = legend_texts(path)
    at = next(k for k, text in enumerate(texts) if text.startswith("(") and text.endswith(")"))
    crumbs = [texts[at - 1]]
    while texts[at - len(crumbs) * 2] == "›":
        crumbs.insert(0, texts[at - len(crumbs) * 2 - 1])
    return crumbs, texts[at]


def svg_groups(root, cls: str) -> dict[str, object]:  # type: ignore[no-untyped-def]
    """id → <g> element for every group whose class list contains ``cls``."""
    found = {}
    for g in root.iter(f"{SVG_NS}g"):
        if cls in (g.get("class") or "").split():
            found[g.get("id")] = g
    return found


def first_fill(group) -> str | None:  # type: ignore[no-untyped-def]
    """The fill of the first filled polygon/path in a node group (the box background)."""
    for element in group.iter():
        if element.tag in (f"{SVG_NS}polygon", f"{SVG_NS}path"):
            fill = element.get("fill")
            if fill and fill not in ("none", "transparent"):
                return fill.lower()
    return None


def tooltip_of(group) -> str:  # type: ignore[no-untyped-def]
    for a in group.iter(f"{SVG_NS}a"):
        title = a.get(f"{XLINK_NS}title")
        if title is not None:
            return title
    return ""


def one_line_error(run: Run) -> str:
    """Assert the run failed the way every bad input must: non-zero, one line on stderr, no traceback."""
    assert run.returncode != 0, run.stdout
    lines = [ln for ln in run.stderr.splitlines() if ln.strip()]
    assert "Traceback" not in run.stderr, run.stderr
    errors = [ln for ln in lines if ln.startswith("annograph: error:")]
    assert len(errors) == 1, run.stderr
    return errors[0]


@pytest.fixture(scope="session")
def genai_model(tmp_path_factory):  # type: ignore[no-untyped-def]
    """``genai_model("int4" | "int4-asym" | "fp32")`` → model.onnx of a small Llama made by onnxruntime-genai's
    builder (tests/support/genai_models.py), built once per session; skips when the builder's packages are missing."""
    from genai_models import GenaiModels, needs_builder

    needs_builder()
    return GenaiModels(tmp_path_factory.mktemp("genai"))


@pytest.fixture(scope="session")
def ort_optimized_model(tmp_path_factory):  # type: ignore[no-untyped-def]
    """``ort_optimized_model("bert_scoped" | "hf_bert")`` → a BERT after onnxruntime's transformer optimizer
    (tests/support/ort_optimized.py): samples/onnx/bert_scoped.onnx, or a ``transformers`` BertModel exported by
    torch; each made once per session."""
    import ort_optimized

    folder = tmp_path_factory.mktemp("ort-optimized")

    def made(name: str) -> Path:
        source = ONNX / "bert_scoped.onnx" if name == "bert_scoped" else ort_optimized.hf_bert(folder / f"{name}.onnx")
        return ort_optimized.optimized(source, folder / f"{name}_optimized.onnx")

    return made


@pytest.fixture(scope="module", params=["committed", "fresh"])
def executorch_portable(request, tmp_path_factory):  # type: ignore[no-untyped-def]
    """The folder of ``portable.pte`` with its ETRecord and ETDump made by executorch itself: the committed ones,
    then ones made in this run (skipped without the executorch venv: ``executorch_models.artefacts``)."""
    from executorch_models import artefacts

    return artefacts(request.param, tmp_path_factory.mktemp("executorch"), "portable")


def escaping_external_data(folder: Path) -> Path:
    """tiny_cnn with its first initializer stored as external data at a location that climbs out of the model's
    folder (``../../…/etc/passwd``): never to be followed."""
    import onnx

    model = onnx.load(str(ONNX / "tiny_cnn.onnx"))
    tensor = model.graph.initializer[0]
    tensor.ClearField("raw_data")
    tensor.data_location = onnx.TensorProto.EXTERNAL
    entry = tensor.external_data.add()
    entry.key, entry.value = "location", "../../../../../../etc/passwd"
    path = folder / "escape.onnx"
    onnx.save(model, str(path))
    return path
