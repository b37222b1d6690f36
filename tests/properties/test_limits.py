"""Limits and clear errors: every CLI error path ends in one ``annograph: error:`` line and a non-zero exit, never
a traceback; Graphviz's --timeout; the tensor-size cap on weight statistics; big and hostile annotation files
read in bounded time and memory; unknown formats, versions and missing files named."""

from __future__ import annotations

import os
import re
import resource
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

import payloads as P
from conftest import ONNX, ROOT, TFLITE, Run, one_line_error, run_cli

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4


def _tflite_version_offset(data: bytes) -> int:
    """Byte offset of Model.version (table field 0) in a TFLite flatbuffer, found through its vtable."""
    table = int.from_bytes(data[0:4], "little")
    vtable = table - int.from_bytes(data[table:table + 4], "little", signed=True)
    field = int.from_bytes(data[vtable + 4:vtable + 6], "little")
    assert field, "the sample stores its schema version"
    return table + field


def _onnx_with(path: Path, **changes: int) -> Path:
    import onnx

    model = onnx.load(str(ONNX / "tiny_cnn.onnx"))
    if "ir_version" in changes:
        model.ir_version = changes["ir_version"]
    if "opset" in changes:
        model.opset_import[0].version = changes["opset"]
    onnx.save(model, str(path))
    return path


def _impossible_initializer(path: Path) -> Path:
    """An Add whose initializer declares 20 dims of 2**62 (2**1240 elements) over 16 bytes of data."""
    import onnx
    from onnx import TensorProto, helper

    weight = onnx.TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[2**62] * 20, raw_data=b"\0" * 16)
    graph = helper.make_graph([helper.make_node("Add", ["x", "w"], ["y"], name="add")], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], initializer=[weight])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


def _embedded(path: Path, document: str) -> Path:
    """tiny_cnn with ``document`` as its embedded annotations (the model metadata entry ``embed`` writes)."""
    import onnx

    from renderer.annotations.embedded import ENTRY

    model = onnx.load(str(ONNX / "tiny_cnn.onnx"))
    entry = model.metadata_props.add()
    entry.key, entry.value = ENTRY, document
    onnx.save(model, str(path))
    return path


@dataclass
class Case:
    args: list[str]
    fragment: str
    env: dict[str, str] | None = None


def _cases(folder: Path) -> dict[str, Case]:
    """Every bad input or environment a user can hit, with a piece of the message that must name it."""
    files = {
        "empty.onnx": b"",
        "picture.bin": PNG,
        "picture.onnx": PNG,
        "picture.tflite": PNG,
        "truncated.onnx": (ONNX / "tiny_cnn.onnx").read_bytes()[:700],
        "truncated.tflite": (TFLITE / "okay_nabu.tflite").read_bytes()[:3000],
        "bad.json": b'{"operators": [\n  {"id": "stem/conv",\n   "meta": {latency: 1}}]}\n',
        "bad.yaml": b"operators:\n  - id: [unclosed\n",
        "noid.csv": b"name,latency\nstem/conv,1\n",
        "bad.txt": b"operator_id: 0\nthis is not a key value line\n",
        "top.yaml": b"layers:\n  - id: 0\n",
        "style.yaml": b'operators:\n  - id: 0\n    style: {fillcolor: "url(javascript:alert(1))"}\n',
        "unmatched.yaml": b"operators:\n  - id: no/such/op\n    meta: {x: 1}\n",
        "binary.yaml": b"\x00\x01\x02 not text",
        "latin1.csv": "id,note\n0,caf\xe9\n".encode("latin-1"),
        "deep.json": b'{"operators": [{"id": 0, "meta": {"x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}}]}",
        "wide.csv": b"id,note\n0," + b"x" * 200_000 + b"\n",
        "digits.json": b'{"operators": [{"id": 0, "latency_ms": ' + b"9" * 5000 + b"}]}",
        "digits.yaml": b"operators:\n  - {id: 0, latency_ms: " + b"9" * 5000 + b"}\n",
        "nan_gradient.json": b'{"results": {"0": {"value": 1}}, "gradient": [{"stop": NaN, "bgColor": "#ff0000"}]}',
    }
    for name, data in files.items():
        (folder / name).write_bytes(data)
    _onnx_with(folder / "ir99.onnx", ir_version=99)
    _onnx_with(folder / "opset99.onnx", opset=99)
    nabu = bytearray((TFLITE / "okay_nabu.tflite").read_bytes())
    offset = _tflite_version_offset(bytes(nabu))
    nabu[offset:offset + 4] = (99).to_bytes(4, "little")
    (folder / "schema99.tflite").write_bytes(bytes(nabu))
    (folder / "empty-bin").mkdir()
    _impossible_initializer(folder / "impossible.onnx")
    _embedded(folder / "embedded-digits.onnx", '{"operators": {"0": {"latency_ms": ' + "9" * 5000 + "}}}")
    f, model = str(folder), str(ONNX / "tiny_cnn.onnx")
    out = ["-o", f"{f}/out.svg"]

    def render(*args: str, env: dict[str, str] | None = None, fragment: str) -> Case:
        return Case(["render", *args, "-q", "--no-sidecar"] + (out if "-o" not in args else []), fragment, env)

    return {
        "missing model": render(f"{f}/nope.onnx", fragment="nope.onnx: no such file"),
        "folder as model": render(f, fragment="is a directory"),
        "empty model": render(f"{f}/empty.onnx", fragment="empty.onnx: empty file"),
        "unknown format": render(f"{f}/picture.bin", fragment="picture.bin: unknown model format"),
        "png named .onnx": render(f"{f}/picture.onnx", fragment="picture.onnx: not a valid ONNX model"),
        "png named .tflite": render(f"{f}/picture.tflite", fragment="picture.tflite: not a TFLite model"),
        "truncated onnx": render(f"{f}/truncated.onnx", fragment="truncated.onnx: not a valid ONNX model"),
        "truncated tflite": render(f"{f}/truncated.tflite", fragment="truncated.tflite: not a valid TFLite model"),
        "onnx ir version": render(f"{f}/ir99.onnx", fragment="IR version 99"),
        "onnx opset": render(f"{f}/opset99.onnx", fragment="opset 99"),
        "tflite schema": render(f"{f}/schema99.tflite", fragment="schema version 99"),
        "json syntax": render(model, "-a", f"{f}/bad.json", fragment="bad.json:3: invalid JSON"),
        "yaml syntax": render(model, "-a", f"{f}/bad.yaml", fragment="bad.yaml:"),
        "csv without id": render(model, "-a", f"{f}/noid.csv", fragment="noid.csv:1: CSV needs an 'id' column"),
        "text syntax": render(model, "-a", f"{f}/bad.txt", fragment="bad.txt:2:"),
        "unknown top-level key": render(model, "-a", f"{f}/top.yaml", fragment="unknown top-level key 'layers'"),
        "hostile style": render(model, "-a", f"{f}/style.yaml", fragment="style.yaml:2: style fillcolor"),
        "binary annotations": render(model, "-a", f"{f}/binary.yaml", fragment="binary.yaml: binary file"),
        "not utf-8": render(model, "-a", f"{f}/latin1.csv", fragment="latin1.csv:2: not UTF-8"),
        "nested too deep": render(model, "-a", f"{f}/deep.json", fragment="deep.json"),
        "field too wide": render(model, "-a", f"{f}/wide.csv", fragment="wide.csv:"),
        "missing annotations": render(model, "-a", f"{f}/nope.yaml", fragment="nope.yaml: no such file"),
        "unknown reader": render(model, "-a", f"{f}/bad.txt", "--annotations-format", "nope",
                                 fragment="unknown annotation format 'nope'"),
        "strict unmatched": render(model, "-a", f"{f}/unmatched.yaml", "--strict", fragment="no/such/op"),
        "unknown metric": render(model, "--color-by", "no_such_metric", fragment="no_such_metric"),
        "unknown extension": render(model, "-o", f"{f}/out.xyz", fragment="unknown output extension '.xyz'"),
        "unknown format list": render(model, "-o", f"{f}/", "--format", "svg,xyz", fragment="--format 'xyz'"),
        "bad dim": render(model, "--dim", "batch", fragment="--dim 'batch'"),
        "several models, one file": render(model, model, fragment="several models need a folder output"),
        "output folder missing": render(model, "-o", f"{f}/missing/out.svg", fragment="does not exist"),
        "no dot program": render(model, env={"PATH": f"{f}/empty-bin"}, fragment="install Graphviz"),
        # --no-layout-cache: a layout another test kept would be drawn without Graphviz, so nothing to time out
        "graphviz timeout": render(str(ONNX / "light_resnet50.onnx"), "--timeout", "0.01", "--no-layout-cache",
                                   fragment="Graphviz did not finish page "),
        "int of 5000 digits in json": render(model, "-a", f"{f}/digits.json",
                                             fragment="digits.json: invalid JSON (an integer of more than 4300"),
        "int of 5000 digits in yaml": render(model, "-a", f"{f}/digits.yaml", fragment="digits.yaml: invalid YAML"),
        "int of 5000 digits embedded": render(f"{f}/embedded-digits.onnx",
                                              fragment="embedded-digits.onnx: metadata 'annograph.annotations'"),
        "gradient stop nan": render(str(TFLITE / "face_detection_short_range.tflite"), "-a",
                                    f"{f}/nan_gradient.json", fragment="nan_gradient.json: gradient stop nan"),
        "initializer of 20 dims of 2**62": render(f"{f}/impossible.onnx", fragment="impossible.onnx: tensor 'w'"),
        "superscript dim": render(model, "--dim", "batch=\u00b2", fragment="--dim 'batch=\u00b2'"),
        "arabic-indic dim": render(model, "--dim", "batch=\u0661", fragment="--dim 'batch=\u0661'"),
        "timeout nan": render(model, "--timeout", "nan", fragment="argument --timeout: 'nan'"),
        "timeout inf": render(model, "--timeout", "inf", fragment="argument --timeout: 'inf'"),
        "vmin nan": render(model, "--color-by", "macs", "--vmin", "nan", fragment="argument --vmin: 'nan'"),
        "center nan": render(model, "--color-by", "macs", "--center", "nan", fragment="argument --center: 'nan'"),
        "vmin -inf vmax inf": render(model, "--color-by", "macs", "--vmin=-inf", "--vmax=inf",
                                     fragment="argument --vmin: '-inf'"),
        "vmax 1e308": render(model, "--color-by", "macs", "--vmax=1e308", fragment="argument --vmax: '1e308'"),
        "info missing": Case(["info", f"{f}/nope.tflite"], "nope.tflite: no such file"),
        "info corrupt": Case(["info", f"{f}/truncated.tflite"], "truncated.tflite: not a valid TFLite model"),
    }


@pytest.fixture(scope="module")
def error_folder(tmp_path_factory) -> Path:  # type: ignore[no-untyped-def]
    return tmp_path_factory.mktemp("errors")


@pytest.fixture(scope="module")
def error_runs(error_folder: Path) -> dict[str, tuple[Case, Run]]:
    """Every case run once, four CLI processes at a time."""
    cases = _cases(error_folder)

    def run(item: tuple[str, Case]) -> tuple[str, tuple[Case, Run]]:
        name, case = item
        return name, (case, run_cli(*case.args, env=case.env, timeout=300))

    with ThreadPoolExecutor(max_workers=4) as pool:
        return dict(pool.map(run, cases.items()))


USAGE_CASES = {"unknown format list", "bad dim", "superscript dim", "arabic-indic dim"}


def _case_names() -> list[str]:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        return list(_cases(Path(tmp)))


@pytest.mark.parametrize("name", _case_names())
def test_cli_error_is_one_line(name: str, error_runs) -> None:  # type: ignore[no-untyped-def]
    case, run = error_runs[name]
    # a usage mistake: argparse's own, or a bad option value found before any file is read (errors.UsageError)
    usage = run.stderr.rstrip().endswith("--help)") or name in USAGE_CASES
    assert run.returncode == (2 if usage else 1), (run.returncode, run.stderr)
    assert "Traceback" not in run.stderr and "internal error" not in run.stderr, run.stderr
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("annograph: error: "), run.stderr
    assert case.fragment in lines[0], (case.fragment, lines[0])


def test_graphviz_timeout_stops_early(error_runs) -> None:  # type: ignore[no-untyped-def]
    """A tiny --timeout on a 415-operator model (planned as pages before any layout: its least length is over one
    page): the run ends by the timeout on one of its pages (not by the layout finishing). Which page is named
    depends on which of the pages laid out in parallel reaches the deadline first: the overview on one machine,
    page 1 on another."""
    _, run = error_runs["graphviz timeout"]
    assert run.returncode == 1 and re.search(r"did not finish page \d+ \(", run.stderr), run.stderr
    assert "within the 0.01 s of --timeout" in run.stderr, run.stderr


def test_no_output_left_by_any_failure(error_runs, error_folder: Path) -> None:  # type: ignore[no-untyped-def]
    assert len(error_runs) > 30
    assert not (error_folder / "out.svg").exists()
    assert not [p for p in error_folder.rglob("*.tmp")]


@pytest.mark.parametrize("command", __import__("renderer.commands.cli", fromlist=["COMMANDS"]).COMMANDS)
def test_every_command_names_a_missing_model(command: str, tmp_path: Path) -> None:
    """Registry-driven: each sub-command given a model that does not exist."""
    run = run_cli(command, tmp_path / "nope.onnx")
    assert "Traceback" not in run.stderr, run.stderr
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("annograph: error:"), run.stderr
    if "arguments are required" in lines[0]:  # a usage error (exit 2, also one line) comes before the model is read
        assert run.returncode == 2, run.stderr
    else:
        assert run.returncode == 1 and "nope.onnx" in lines[0], run.stderr


# ---- weights: external data, the statistics cap -----------------------------------------------------------------


@pytest.fixture(scope="module")
def external_model(tmp_path_factory) -> Path:  # type: ignore[no-untyped-def]
    """tiny_cnn saved with its weights in tiny_cnn.weights, which is then deleted."""
    import onnx

    folder = tmp_path_factory.mktemp("external")
    path = folder / "tiny_cnn.onnx"
    onnx.save(onnx.load(str(ONNX / "tiny_cnn.onnx")), str(path), save_as_external_data=True,
              all_tensors_to_one_file=True, location="tiny_cnn.weights", size_threshold=0)
    (folder / "tiny_cnn.weights").unlink()
    return path


def test_missing_external_data_is_named_when_weights_are_read(external_model: Path) -> None:
    from renderer.core.errors import LoaderError
    from renderer.loaders.registry import load_model

    model = load_model(external_model)  # the weights are not needed to load
    weights = [v.initializer for v in model.values() if v.initializer is not None and v.initializer.location]
    assert weights and all(t.location == "tiny_cnn.weights" for t in weights)
    with pytest.raises(LoaderError, match=r"tiny_cnn\.onnx: external data file 'tiny_cnn\.weights'") as caught:
        weights[0].numpy()
    assert "\n" not in str(caught.value)


def test_missing_external_data_does_not_stop_a_plain_render(external_model: Path, tmp_path: Path) -> None:
    run = run_cli("render", external_model, "-o", tmp_path / "out.svg", "-q", "--no-sidecar")
    assert run.returncode == 0, run.stderr
    P.check_svg((tmp_path / "out.svg").read_bytes())


def test_missing_external_data_is_said_in_one_line(external_model: Path, tmp_path: Path) -> None:
    """Nothing named the missing file unless a shape run failed on it, and then only as onnx's message about a file
    that 'is not regular file', advising --inputs, which cannot help (after runs at other sizes that cannot either)."""
    run = run_cli("metrics", external_model, "-o", tmp_path / "m.csv")
    assert run.returncode == 0, run.stderr
    said = [line for line in run.stderr.splitlines() if "tiny_cnn.weights" in line]
    assert said == [f"annograph: {external_model}: external data 'tiny_cnn.weights' not found beside the model: "
                    "weight values are n/a, and shapes static inference cannot reach are left unknown "
                    "(onnxruntime cannot run the model without it)"]
    assert "--inputs" not in run.stderr


def test_external_data_outside_the_model_folder_is_refused(tmp_path: Path) -> None:
    """A location that climbs out of the model's folder is never followed."""
    from conftest import escaping_external_data
    from renderer.core.errors import LoaderError
    from renderer.loaders.registry import load_model

    path = escaping_external_data(tmp_path)
    loaded = load_model(path)
    value = next(v for v in loaded.values() if v.name == loaded.raw.proto.graph.initializer[0].name)
    with pytest.raises(LoaderError, match="escape.onnx: external data file"):
        value.initializer.numpy()  # type: ignore[union-attr]


def _statistics() -> list[str]:
    from renderer.metrics import builtin as metrics

    names = list(getattr(metrics, "EXPENSIVE_OP_METRICS", {}))
    return [n for n in names if n.startswith(("weight_", "value_"))]


def test_max_tensor_elements_flag_exists() -> None:
    run = run_cli("render", "--help")
    assert run.returncode == 0 and "--max-tensor-elements" in run.stdout


@pytest.mark.skipif(not _statistics(), reason="no weight-statistic metrics registered")
def test_tensor_statistics_are_capped() -> None:
    """Statistics over weights larger than the cap are skipped with a note, never computed."""
    from renderer.loaders.registry import load_model
    from renderer.metrics import builtin as metrics

    model = load_model(ONNX / "tiny_cnn.onnx")
    names = set(_statistics())
    full, _ = metrics.compute(model, names, set(), max_tensor_elements=10**9, progress=False)
    capped, _ = metrics.compute(model, names, set(), max_tensor_elements=16, progress=False)
    checked = 0
    for key, values in full.items():
        node = model.graphs[key[1]].nodes[key[2]]
        largest = max((v.initializer.size for v in node.inputs if v is not None and v.initializer is not None),
                      default=0)
        for name, value in values.items():
            if isinstance(value, float) and largest > 16:
                shown = capped[key][name]
                assert isinstance(shown, str) and "limit" in shown, (node.name, name, shown)
                checked += 1
    assert checked, "tiny_cnn has weights over 16 elements with statistics"


# ---- big and hostile annotation files ---------------------------------------------------------------------------


def _child_measure(code: str, limit_mb: int = 2048, timeout: float = 120) -> tuple[float, subprocess.CompletedProcess]:
    """Run ``code`` in a fresh interpreter under an address-space limit: (peak RSS MiB, result). ``timeout`` is
    the hang bound; the time taken is benchmarks/bench_annotations.py's to measure."""

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit_mb * 2**20, limit_mb * 2**20))

    env = dict(os.environ, PYTHONPATH=str(ROOT), OPENBLAS_NUM_THREADS="1")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT,
                          preexec_fn=limit, timeout=timeout)
    peak = float(done.stdout.strip().splitlines()[-1]) if done.returncode == 0 and done.stdout.strip() else -1.0
    return peak, done


_READ = """
import resource, sys
from renderer.annotations import load_annotations
from renderer.loaders import load_model
model = load_model({model!r})
result = load_annotations([{path!r}], model)
assert result.ops, "nothing matched"
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
"""


@pytest.mark.slow
def test_large_csv_in_bounded_time_and_memory(tmp_path: Path) -> None:
    """200,000 rows (benchmarks/bench_annotations.py measures 1,000,000 and the time, against reading the file
    with the csv module in the same run): memory that grows with the distinct ids rather than with the rows."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from bench_annotations import ids_for, write_file

    ids = ids_for(ONNX / "tiny_cnn.onnx")
    peaks = {}
    for rows in (20_000, 200_000):
        path = tmp_path / f"rows{rows}.csv"
        write_file(path, rows, "csv", ids)
        peak, done = _child_measure(_READ.format(model=str(ONNX / "tiny_cnn.onnx"), path=str(path)))
        assert done.returncode == 0, done.stderr[-2000:]
        peaks[rows] = peak
    # the 200k-row file is 5 MiB more text; a reader that kept every row would need over 100 MiB more
    assert peaks[200_000] - peaks[20_000] < 60, peaks


def test_yaml_alias_bomb_is_cheap(tmp_path: Path) -> None:
    """A "billion laughs" YAML: 9 levels of 10 aliases. The values are shown cut short, never expanded."""
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    lines += [f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 9)]
    path = tmp_path / "laughs.yaml"
    path.write_text("operators:\n  - id: stem/conv\n    meta:\n" + "".join(f"      {ln}\n" for ln in lines),
                    encoding="utf-8")
    peak, done = _child_measure(_READ.format(model=str(ONNX / "tiny_cnn.onnx"), path=str(path)), timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    assert peak < 1024, peak  # the whole process tree; expanded, the aliases would take tens of GB


def test_nested_values_are_cut_not_expanded(tmp_path: Path) -> None:
    from renderer.annotations.readers import generic

    path = tmp_path / "nested.json"
    path.write_text('{"operators": [{"id": 0, "meta": {"big": [' + ",".join(["[1, 2, 3]"] * 100_000) + "]}}]}",
                    encoding="utf-8")
    result = generic.read(path)
    shown = result.operators[0][1].values["big"]
    assert isinstance(shown, str) and len(shown) <= generic.NESTED_TEXT_LIMIT and shown.endswith("…")
    assert shown.startswith("[[1, 2, 3], [1, 2, 3]")


def test_file_name_with_a_newline_stays_one_line(tmp_path: Path) -> None:
    path = tmp_path / "bad\nname.onnx"
    path.write_bytes(b"not a model")
    run = run_cli("render", path, "-o", tmp_path / "out.svg")
    assert run.returncode == 1 and len(run.stderr.strip().splitlines()) == 1, run.stderr


def test_oversized_yaml_is_refused_with_advice(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """PyYAML holds a whole document (~80 bytes a character): past the cap the answer is one line, given before
    PyYAML is asked to parse anything."""
    import yaml

    from renderer.annotations.readers import generic
    from renderer.core.errors import AnnotationError

    def parse(*args: object, **kwargs: object) -> None:
        raise AssertionError("PyYAML was asked to parse a document over the cap")

    monkeypatch.setattr(yaml, "load", parse)

    path = tmp_path / "huge.yaml"
    row = '  - id: "stem/conv"\n    meta: {latency_ms: 1.5}\n'
    path.write_text("operators:\n" + row * (generic.YAML_MAX_CHARS // len(row) + 1), encoding="utf-8")
    with pytest.raises(AnnotationError, match="huge.yaml: .* write files this big as CSV or JSON") as caught:
        generic.read(path)
    assert "\n" not in str(caught.value)


def _cli_limited(*args: str | Path, limit_mb: int = 2048, timeout: float = 300) -> subprocess.CompletedProcess:
    """The CLI in a child under an address-space limit (MemoryError, not the machine's swap, if it overreaches)."""

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit_mb * 2**20, limit_mb * 2**20))

    env = dict(os.environ, PYTHONPATH=str(ROOT), OPENBLAS_NUM_THREADS="1")
    return subprocess.run([sys.executable, "-m", "renderer", *map(str, args)], capture_output=True, text=True,
                          env=env, cwd=ROOT, preexec_fn=limit, timeout=timeout)


@pytest.mark.slow
def test_csv_with_millions_of_columns_is_cut_and_said(tmp_path: Path) -> None:
    """A 50 MB one-line header (25M columns) took 44 s and 4.9 GB: now its first MAX_COLUMNS columns are read,
    under a 2 GiB address-space limit, and one line says so."""
    from renderer.annotations.lookup import MAX_COLUMNS

    wide = tmp_path / "wide.csv"
    with open(wide, "w", encoding="utf-8") as f:
        f.write("id,latency_ms," + "c," * 25_000_000 + "last\n0,2.5," + "1," * 100 + "\n1,3.5\n")
    assert wide.stat().st_size > 50_000_000
    out = tmp_path / "m.svg"
    done = _cli_limited("render", ONNX / "tiny_cnn.onnx", "-a", wide, "--color-by", "latency_ms", "-o", out,
                        "--no-sidecar", "-q")
    assert done.returncode == 0, done.stderr[-2000:]
    assert f"wide.csv: rows with more than {MAX_COLUMNS} columns are cut to their first {MAX_COLUMNS}" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    P.check_svg(out.read_bytes())


@pytest.mark.slow
def test_a_million_keys_on_one_operator_are_cut_and_said(tmp_path: Path) -> None:
    """1M meta keys with --show all took over 60 s and 2 GB: now the first MAX_VALUES_PER_ELEMENT are kept, a box
    draws MAX_DRAWN_VALUES of them and counts the rest, and one line says each cut."""
    from renderer.core.records import MAX_VALUES_PER_ELEMENT
    from renderer.picture.dot import MAX_DRAWN_VALUES

    keys = tmp_path / "keys.json"
    with open(keys, "w", encoding="utf-8") as f:
        f.write('{"operators": [{"id": 0, "meta": {' + ",".join(f'"k{i}": {i}' for i in range(1_000_000)))
        f.write('}}, {"id": 1, "meta": {"k0": 1}}]}')
    out = tmp_path / "m.svg"
    done = _cli_limited("render", ONNX / "tiny_cnn.onnx", "-a", keys, "--show", "all", "-o", out, "--no-sidecar",
                        "-q")
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 2, done.stderr
    assert f"1 elements have more than {MAX_VALUES_PER_ELEMENT} values; only their first" in lines[0]
    assert f"1 boxes have more than {MAX_DRAWN_VALUES} values" in lines[1]
    from conftest import parse_svg, svg_groups

    box = svg_groups(parse_svg(out), "op")["op-0-0"]
    texts = [t.text or "" for t in box.iter("{http://www.w3.org/2000/svg}text")]
    more = [t for t in texts if "more values" in t]
    assert more and more[0].startswith("+") and int(more[0][1:].split()[0]) >= MAX_VALUES_PER_ELEMENT - MAX_DRAWN_VALUES
    assert sum(bool(re.fullmatch(r"k[0-9]+: ?", t)) for t in texts) == MAX_DRAWN_VALUES, texts[:12]


def test_out_of_memory_names_the_file_being_read(tmp_path: Path) -> None:
    """Issue 31: under a memory limit the only line was ``annograph: error: out of memory``, naming no file. A 70 MB
    JSON annotation file (two million entries, ~20 times its size once parsed) under a 700 MiB address space."""
    huge = tmp_path / "huge.json"
    with open(huge, "w", encoding="utf-8") as f:
        f.write('{"operators": [' + ",".join(f'{{"id": "stem/conv", "x{i % 50}": {i}}}' for i in range(2_000_000))
                + "]}")
    done = _cli_limited("render", ONNX / "tiny_cnn.onnx", "-a", huge, "-o", tmp_path / "x.svg", "-q", limit_mb=700)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.strip() == f"annograph: error: {huge}: out of memory reading it", done.stderr
    assert not (tmp_path / "x.svg").exists()


def test_a_line_past_the_limit_is_refused_by_every_line_reader(tmp_path: Path) -> None:
    """Issue 31: one long line under an OpenVINO or Vela header was built whole (2 GiB: 4.2 GB, 17 s) where the
    generic reader refused it; every reader now reads lines in pieces and refuses one past MAX_LINE_CHARS."""
    from renderer.annotations.lookup import MAX_LINE_CHARS

    long = "x" * (MAX_LINE_CHARS + 10)
    files = {"notes.csv": f"id,latency_ms\nstem/conv,{long}\n",
             "benchmark_detailed_counters_report.csv": "layerName;execStatus;layerType;execType;realTime (ms);"
                                                       f"cpuTime (ms)\n{long};EXECUTED;Conv;jit;1;1\n"}
    for name, text in files.items():
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        error = one_line_error(run_cli("render", ONNX / "tiny_cnn.onnx", "-a", path, "-o", tmp_path / "x.svg"))
        assert f"{path}:2: a line of more than {MAX_LINE_CHARS:,} characters" in error, error
