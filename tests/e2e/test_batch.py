"""``annograph batch``: pictures of one model share their geometry byte for byte; Dask and local runs agree."""

from __future__ import annotations

import html.parser
import subprocess
from pathlib import Path

import numpy as np
import pytest

import renderer
from conftest import ONNX, SVG_NS, TFLITE, XLINK_NS, first_fill, parse_svg, run_cli, svg_groups
from renderer.core.numbers import format_number

TITLE = f"{XLINK_NS}title"


def write_runs(model_path: Path, folder: Path, count: int, seed: int = 0) -> list[Path]:
    """``count`` annotation files with two metrics on every operator, of very different magnitudes per run."""
    model = renderer.load_model(str(model_path))
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for run in range(count):
        scale = 10.0 ** (run * 3 - 3)  # 0.001 … 1000: value texts of different widths
        lines = ["id,latency_us,error"]
        for node in model.nodes():
            lines.append(f"{node.graph.index}:{node.index},{rng.uniform(1, 500) * scale:.6g},{rng.uniform(0, 1):.6g}")
        path = folder / f"run{run}.csv"
        path.write_text("\n".join(lines) + "\n")
        paths.append(path)
    return paths


def batch(*args: str | Path) -> None:
    run = run_cli("batch", *args)
    assert run.returncode == 0, run.stderr


def svgs(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.glob("*.svg"))}


def sheet_links(folder: Path) -> tuple[list[str], str]:
    """The contact sheet's links and its text."""

    class Sheet(html.parser.HTMLParser):
        def __init__(self) -> None:
            super().__init__()
            self.links: list[str] = []
            self.text: list[str] = []

        def handle_starttag(self, tag, attrs):  # type: ignore[no-untyped-def]
            if tag == "a":
                self.links.append(dict(attrs)["href"])

        def handle_data(self, data):  # type: ignore[no-untyped-def]
            self.text.append(data)

    sheet = Sheet()
    sheet.feed((folder / "index.html").read_text(encoding="utf-8"))
    return sheet.links, " ".join(sheet.text)


def op_texts(group) -> list:  # type: ignore[no-untyped-def]
    return list(group.iter(f"{SVG_NS}text"))


def assert_same_but_fills_and_values(a: bytes, b: bytes) -> int:
    """Everything equal but fill attributes, the value row of operator boxes, their tooltip's value line, and the
    caption's texts. Returns how many fills differ."""
    ra, rb = parse_svg(a), parse_svg(b)
    ops_a = {id(t): g for g in svg_groups(ra, "op").values() for t in op_texts(g)[-2:]}
    caption_a = {id(e) for e in ra.find(".//*[@id='batch-caption']").iter()}
    fills = 0
    ea, eb = list(ra.iter()), list(rb.iter())
    assert len(ea) == len(eb)
    for x, y in zip(ea, eb):
        assert x.tag == y.tag
        ax = {k: v for k, v in x.attrib.items() if k not in ("fill", TITLE)}
        ay = {k: v for k, v in y.attrib.items() if k not in ("fill", TITLE)}
        assert ax == ay, (x.tag, ax, ay)
        fills += x.get("fill") != y.get("fill")
        if x.get(TITLE) != y.get(TITLE):
            lines_x, lines_y = x.get(TITLE).split("\n"), y.get(TITLE).split("\n")
            assert len(lines_x) == len(lines_y)
            assert sum(p != q for p, q in zip(lines_x, lines_y)) == 1  # only "metric: value"
        if (x.text or "") != (y.text or ""):
            assert x.tag == f"{SVG_NS}text" and (id(x) in ops_a or id(x) in caption_a), (x.text, y.text)
    return fills


@pytest.fixture(scope="module")
def tiny_batch(tmp_path_factory) -> tuple[Path, list[Path]]:  # type: ignore[no-untyped-def]
    root = tmp_path_factory.mktemp("batch")
    runs = write_runs(ONNX / "tiny_cnn.onnx", root / "runs", 3)
    out = root / "out"
    batch(ONNX / "tiny_cnn.onnx", "-a", str(root / "runs" / "run*.csv"), "--color-by", "latency_us,error", "-o", out)
    return out, runs


def test_every_picture_has_the_geometry_of_the_first(tiny_batch) -> None:  # type: ignore[no-untyped-def]
    out, runs = tiny_batch
    pictures = svgs(out)
    assert sorted(pictures) == [f"{i:03d}_run{i}.{m}.svg" for i in range(3) for m in ("error", "latency_us")]
    names = sorted(pictures)
    first = pictures[names[0]]
    changed = [assert_same_but_fills_and_values(first, pictures[n]) for n in names[1:]]
    assert all(c > 10 for c in changed)  # the heatmaps do differ
    sizes = {parse_svg(p).get("viewBox") for p in pictures.values()}
    assert len(sizes) == 1


def test_values_and_fills_are_those_of_a_single_render(tiny_batch, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    out, runs = tiny_batch
    single = tmp_path / "single.svg"
    run = run_cli("render", ONNX / "tiny_cnn.onnx", "-a", runs[2], "--color-by", "latency_us", "-o", single)
    assert run.returncode == 0, run.stderr
    expected = {k: first_fill(g) for k, g in svg_groups(parse_svg(single), "op").items()}
    root = parse_svg((out / "002_run2.latency_us.svg").read_bytes())
    got = svg_groups(root, "op")
    assert {k: first_fill(g) for k, g in got.items()} == expected
    values = {}
    for line in runs[2].read_text().splitlines()[1:]:
        ident, latency, _ = line.split(",")
        values["op-" + ident.replace(":", "-")] = format_number(float(latency))
    for key, group in got.items():
        texts = [t.text for t in op_texts(group)]
        assert texts[-2:] == ["latency_us: ", values[key]], texts
        assert f"latency_us: {values[key]}" in group.find(f".//{SVG_NS}a").get(TITLE)
    caption = "".join(root.find(".//*[@id='batch-caption']").itertext())
    assert "latency_us" in caption and "run2.csv" in caption and "lower is better" not in caption


def test_contact_sheet_links_every_picture(tiny_batch) -> None:  # type: ignore[no-untyped-def]
    out, runs = tiny_batch
    links, text = sheet_links(out)
    assert sorted(links) == sorted(svgs(out))
    for run in runs:
        assert run.name in text
    assert "latency_us" in text and "…" in text


def test_batch_is_deterministic_and_parallel_matches_serial(tmp_path: Path) -> None:
    runs_a = write_runs(ONNX / "tiny_cnn.onnx", tmp_path / "runs" / "tiny_cnn", 2)
    write_runs(ONNX / "light_squeezenet.onnx", tmp_path / "runs" / "light_squeezenet", 2, seed=1)
    pattern = str(tmp_path / "runs" / "{model}" / "*.csv")
    models = [ONNX / "tiny_cnn.onnx", ONNX / "light_squeezenet.onnx"]
    batch(*models, "-a", pattern, "--color-by", "error", "-o", tmp_path / "serial", "--jobs", "1")
    batch(*models, "-a", pattern, "--color-by", "error", "-o", tmp_path / "parallel", "--jobs", "2")
    serial, parallel = svgs(tmp_path / "serial"), svgs(tmp_path / "parallel")
    assert len(serial) == 4 and serial == parallel
    assert {n.split(".")[0] for n in serial} == {"tiny_cnn", "light_squeezenet"}
    assert (tmp_path / "serial" / "index.html").read_bytes() == (tmp_path / "parallel" / "index.html").read_bytes()
    assert runs_a


def test_dask_local_cluster_writes_the_bytes_of_the_local_run(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    distributed = pytest.importorskip("distributed", reason="the [dask] extra is not installed")
    from renderer.commands.cli import main

    write_runs(ONNX / "tiny_cnn.onnx", tmp_path / "runs" / "tiny_cnn", 2)
    write_runs(ONNX / "unnamed_nodes.onnx", tmp_path / "runs" / "unnamed_nodes", 2)
    pattern = str(tmp_path / "runs" / "{model}" / "*.csv")
    models = [str(ONNX / "tiny_cnn.onnx"), str(ONNX / "unnamed_nodes.onnx")]
    assert main(["batch", *models, "-a", pattern, "--color-by", "latency_us", "-o", str(tmp_path / "local"),
                 "--jobs", "1", "-q"]) == 0
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster:
        code = main(["batch", *models, "-a", pattern, "--color-by", "latency_us", "-o", str(tmp_path / "dask"),
                     "--dask", cluster.scheduler_address, "-q"])
    assert code == 0, capsys.readouterr().err
    local, remote = svgs(tmp_path / "local"), svgs(tmp_path / "dask")
    assert len(local) == 4 and local == remote


def test_a_bad_model_is_reported_and_the_others_written(tmp_path: Path) -> None:
    write_runs(ONNX / "tiny_cnn.onnx", tmp_path / "runs", 2)
    bad = tmp_path / "broken.onnx"
    bad.write_bytes(b"\x08\x07garbage that is not a model")
    run = run_cli("batch", ONNX / "tiny_cnn.onnx", bad, "-a", str(tmp_path / "runs" / "*.csv"), "--color-by", "error",
                  "-o", tmp_path / "out")
    assert run.returncode == 1
    assert "Traceback" not in run.stderr and "broken.onnx" in run.stderr
    assert "1 of 2 models failed" in run.stderr
    assert sorted(svgs(tmp_path / "out")) == ["tiny_cnn.000_run0.error.svg", "tiny_cnn.001_run1.error.svg"]
    assert "broken.onnx" in (tmp_path / "out" / "index.html").read_text()


def test_default_metric_and_hostile_names(tmp_path: Path) -> None:
    folder = tmp_path / "runs"
    folder.mkdir()
    hostile = folder / '<img src=x onerror=alert(1)>.yaml'
    hostile.write_text('operators:\n  - {id: "0", "<b>x</b>": 3}\n  - {id: "1", "<b>x</b>": 5}\n')
    out = tmp_path / "out"
    run = run_cli("batch", ONNX / "tiny_cnn.onnx", "-a", hostile, "-o", out)
    assert run.returncode == 0, run.stderr
    assert "colouring by <b>x</b>" in run.stderr
    [name] = svgs(out)
    assert set(name) <= set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")
    root = parse_svg(out / name)
    assert not list(root.iter(f"{SVG_NS}img")) and not list(root.iter(f"{SVG_NS}b"))
    texts = [t.text for t in root.iter(f"{SVG_NS}text")]
    assert "<b>x</b>: " in texts and "5" in texts
    sheet = (out / "index.html").read_text()
    assert "<img src=x" not in sheet and "&lt;img src=x onerror=alert(1)&gt;.yaml" in sheet


def test_several_metrics_need_color_by(tmp_path: Path) -> None:
    runs = write_runs(ONNX / "tiny_cnn.onnx", tmp_path / "runs", 1)
    run = run_cli("batch", ONNX / "tiny_cnn.onnx", "-a", runs[0], "-o", tmp_path / "out")
    assert run.returncode == 1 and "--color-by" in run.stderr and "error, latency_us" in run.stderr


def test_shared_scale_gives_every_run_one_range(tmp_path: Path) -> None:
    write_runs(ONNX / "tiny_cnn.onnx", tmp_path / "runs", 2)
    pattern = str(tmp_path / "runs" / "*.csv")
    batch(ONNX / "tiny_cnn.onnx", "-a", pattern, "--color-by", "latency_us", "-o", tmp_path / "own")
    batch(ONNX / "tiny_cnn.onnx", "-a", pattern, "--color-by", "latency_us", "--shared-scale",
          "-o", tmp_path / "shared")

    def ticks(path: Path) -> list[str]:
        group = parse_svg(path).find(".//*[@id='batch-caption']")
        return [t.text for t in group.iter(f"{SVG_NS}text")][-5:]

    own = [ticks(p) for p in sorted((tmp_path / "own").glob("*.svg"))]
    shared = [ticks(p) for p in sorted((tmp_path / "shared").glob("*.svg"))]
    assert own[0] != own[1] and shared[0] == shared[1]
    assert shared[0][0] == own[0][0] and shared[0][-1] == own[1][-1]  # run0 holds the lows, run1 the highs


def test_a_worker_dying_mid_task_does_not_lose_its_model(tmp_path: Path) -> None:
    """A Dask worker process killed while it renders a model: Dask re-runs the task on a live worker, and the
    pictures are the bytes of the local run."""
    import os
    import signal
    import threading
    import time

    distributed = pytest.importorskip("distributed", reason="the [dask] extra is not installed")
    from renderer.batch import ModelJob
    from renderer.batch.parallel import run_dask, run_local

    runs = write_runs(ONNX / "light_resnet50.onnx", tmp_path / "runs", 12)
    jobs = [ModelJob(str(ONNX / "light_resnet50.onnx"), tuple(map(str, runs)), ("latency_us",))]
    [local] = list(run_local(jobs, 1))
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        results: list = []
        thread = threading.Thread(target=lambda: results.extend(run_dask(jobs, cluster.scheduler_address)))
        with distributed.Client(cluster.scheduler_address) as watcher:
            thread.start()
            killed = None
            deadline = time.monotonic() + 120
            while killed is None and time.monotonic() < deadline and thread.is_alive():
                busy = [w for w, keys in watcher.processing().items() if keys]
                if busy:
                    killed = busy[0]
                    pid = watcher.run(os.getpid, workers=[killed])[killed]
                    os.kill(pid, signal.SIGKILL)
                time.sleep(0.05)
            thread.join(300)
    assert killed is not None, "the job finished before a worker could be killed"
    [remote] = results
    assert remote.error is None, remote.error
    assert remote.files == local.files and len(remote.pictures) == 12


def operator_ids(svg: bytes) -> set[str]:
    return set(svg_groups(parse_svg(svg), "op"))


def rendered_ids(model: Path) -> set[str]:
    """The operator ids of ``render``'s picture of ``model``."""
    from renderer.compose.rendering import render_bytes

    return operator_ids(render_bytes(renderer.load_model(str(model))))


def test_two_batches_on_one_cluster_each_get_their_own_pictures(tmp_path: Path) -> None:
    """A batch started while another holds its results on the same scheduler: each gets its own model's pictures
    (fixed task keys made Dask hand the second batch the first one's results)."""
    distributed = pytest.importorskip("distributed", reason="the [dask] extra is not installed")
    from renderer.batch import ModelJob
    from renderer.batch.parallel import run_dask
    from renderer.commands.cli import main

    first_runs = write_runs(ONNX / "tiny_cnn.onnx", tmp_path / "first", 2)
    second_runs = write_runs(ONNX / "unnamed_nodes.onnx", tmp_path / "second", 1, seed=3)
    first = [ModelJob(str(ONNX / "tiny_cnn.onnx"), (str(first_runs[0]),), ("latency_us",)),
             ModelJob(str(ONNX / "tiny_cnn.onnx"), (str(first_runs[1]),), ("error",))]
    tiny = rendered_ids(ONNX / "tiny_cnn.onnx")
    unnamed = rendered_ids(ONNX / "unnamed_nodes.onnx")
    assert tiny != unnamed
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                                  dashboard_address=None) as cluster:
        running = run_dask(first, cluster.scheduler_address)
        one = next(running)  # the first batch holds its tasks on the scheduler while the second one runs
        out = tmp_path / "out"
        assert main(["batch", str(ONNX / "unnamed_nodes.onnx"), "-a", str(second_runs[0]), "--color-by", "latency_us",
                     "-o", str(out), "--dask", cluster.scheduler_address, "-q"]) == 0
        rest = list(running)
    pictures = svgs(out)
    assert sorted(pictures) == ["000_run0.latency_us.svg"]
    assert operator_ids(pictures["000_run0.latency_us.svg"]) == unnamed
    links, text = sheet_links(out)
    assert links == ["000_run0.latency_us.svg"] and "unnamed_nodes.onnx" in text and "tiny_cnn" not in text
    for result, metric in zip([one, *rest], ("latency_us", "error")):
        assert result.error is None and result.model.endswith("tiny_cnn.onnx")
        [(name, data)] = result.files
        assert name.endswith(f".{metric}.svg") and operator_ids(data) == tiny


def test_a_result_is_checked_against_its_job(tmp_path: Path) -> None:
    """A result that is not its job's (as a reused task key gave) is an error for that model, never written."""
    from concurrent.futures import Future

    from renderer.batch import ModelJob, run_job
    from renderer.batch.parallel import _result

    runs = write_runs(ONNX / "tiny_cnn.onnx", tmp_path / "runs", 1)
    mine = ModelJob(str(ONNX / "unnamed_nodes.onnx"), (str(runs[0]),), ("latency_us",))
    other = ModelJob(str(ONNX / "tiny_cnn.onnx"), (str(runs[0]),), ("latency_us",))
    future: Future = Future()
    future.set_result(run_job(other))
    result = _result(mine, future)
    assert result.files == [] and "result of another job" in result.error and "unnamed_nodes.onnx" in result.error
    same: Future = Future()
    same.set_result(run_job(other))
    assert _result(other, same).error is None


def test_models_of_one_name_get_files_of_their_own(tmp_path: Path) -> None:
    """m.onnx and m.tflite, a/m.onnx and b/m.onnx, a_m.onnx: every model its own files, the index links each
    model to its own."""
    import shutil

    models = {"m.onnx": ONNX / "tiny_cnn.onnx", "m.tflite": TFLITE / "tiny_keras_int8_asymmetric.tflite",
              "a/m.onnx": ONNX / "unnamed_nodes.onnx", "b/m.onnx": ONNX / "light_squeezenet.onnx",
              "a_m.onnx": ONNX / "tiny_cnn_qdq_u8.onnx", "A_M.onnx": ONNX / "control_flow.onnx"}
    for name, source in models.items():
        (tmp_path / name).parent.mkdir(exist_ok=True)
        shutil.copyfile(source, tmp_path / name)
    run_file = tmp_path / "run.yaml"
    run_file.write_text("operators:\n  - {id: '0', cost: 3}\n")
    out = tmp_path / "out"
    run = run_cli("batch", *(tmp_path / n for n in models), "-a", run_file, "--color-by", "cost", "-o", out)
    assert run.returncode == 0, run.stderr
    pictures = svgs(out)
    assert len(pictures) == len(models), sorted(pictures)
    assert len({n.casefold() for n in pictures}) == len(models)
    expected = {name: rendered_ids(tmp_path / name)
                for name in models}
    assert len({frozenset(ids) for ids in expected.values()}) == len(models)  # six different models
    sheet = (out / "index.html").read_text(encoding="utf-8")
    for section in sheet.split("<h2>")[1:]:
        model = section.split("</h2>")[0]
        [link] = [line.split('href="')[1].split('"')[0] for line in section.splitlines() if 'href="' in line]
        [name] = [n for n in models if model == str(tmp_path / n)]
        assert operator_ids(pictures[link]) == expected[name], (model, link)
    assert {"m_onnx", "m_tflite"} <= {n.split(".")[0] for n in pictures}


def test_batch_never_replaces_a_file_it_did_not_write(tmp_path: Path) -> None:
    """A user's own index.html in the output folder is refused before anything is rendered; a picture name taken
    by a user's file fails that model; an earlier batch's files are replaced."""
    runs = write_runs(ONNX / "tiny_cnn.onnx", tmp_path / "runs", 1)
    out = tmp_path / "out"
    out.mkdir()
    (out / "index.html").write_text("<p>my notes</p>")
    run = run_cli("batch", ONNX / "tiny_cnn.onnx", "-a", runs[0], "--color-by", "error", "-o", out)
    assert run.returncode == 1 and len(run.stderr.strip().splitlines()) == 1
    assert "index.html" in run.stderr and "not written by annograph batch" in run.stderr
    assert (out / "index.html").read_text() == "<p>my notes</p>"
    assert sorted(p.name for p in out.iterdir()) == ["index.html"]
    (out / "index.html").unlink()
    (out / "000_run0.error.svg").write_text("mine")
    run = run_cli("batch", ONNX / "tiny_cnn.onnx", "-a", runs[0], "--color-by", "error", "-o", out)
    assert run.returncode == 1 and "000_run0.error.svg exists and was not written by annograph batch" in run.stderr
    assert (out / "000_run0.error.svg").read_text() == "mine"
    (out / "000_run0.error.svg").unlink()
    batch(ONNX / "tiny_cnn.onnx", "-a", runs[0], "--color-by", "error", "-o", out)
    batch(ONNX / "tiny_cnn.onnx", "-a", runs[0], "--color-by", "error", "-o", out)  # its own files: replaced
    assert sorted(p.name for p in out.iterdir()) == ["000_run0.error.svg", "index.html"]


def test_annotation_files_after_one_flag(tmp_path: Path) -> None:
    """``-a runs/a.csv runs/b.csv`` (an unquoted glob the shell expanded), a quoted pattern, and repeated flags
    give the same pictures."""
    runs = write_runs(ONNX / "tiny_cnn.onnx", tmp_path / "runs", 2)
    batch(ONNX / "tiny_cnn.onnx", "-a", *runs, "--color-by", "error", "-o", tmp_path / "listed")
    batch(ONNX / "tiny_cnn.onnx", "-a", str(tmp_path / "runs" / "*.csv"), "--color-by", "error",
          "-o", tmp_path / "glob")
    batch(ONNX / "tiny_cnn.onnx", "-a", runs[0], "-a", runs[1], "--color-by", "error", "-o", tmp_path / "repeated")
    listed = svgs(tmp_path / "listed")
    assert sorted(listed) == ["000_run0.error.svg", "001_run1.error.svg"]
    assert listed == svgs(tmp_path / "glob") == svgs(tmp_path / "repeated")


def test_bidi_controls_in_run_names_are_shown_not_obeyed(tmp_path: Path) -> None:
    folder = tmp_path / "runs"
    folder.mkdir()
    tricky = folder / "good\u202egpj.exe\u2066.yaml"
    tricky.write_text("operators:\n  - {id: '0', cost: 3}\n")
    out = tmp_path / "out"
    batch(ONNX / "tiny_cnn.onnx", "-a", tricky, "--color-by", "cost", "-o", out)
    sheet = (out / "index.html").read_text(encoding="utf-8")
    assert "\u202e" not in sheet and "\u2066" not in sheet
    assert "good&lt;U+202E&gt;gpj.exe&lt;U+2066&gt;.yaml" in sheet


@pytest.mark.parametrize("command", ["info", "render", "batch", "metrics", "compare", "diff", "embed", "export"])
def test_an_empty_output_name_is_a_usage_error(command: str, tmp_path: Path) -> None:
    from renderer.commands.cli import COMMANDS, build_parser

    assert command in COMMANDS
    parser = build_parser()._subparsers._group_actions[0].choices[command]
    takes_output = any("-o" in a.option_strings for a in parser._actions)
    run = run_cli(command, ONNX / "tiny_cnn.onnx", "-o", "", env={"HOME": str(tmp_path)})
    if not takes_output:
        assert run.returncode == 2 and "unrecognized arguments" in run.stderr
        return
    assert run.returncode == 2, run.stderr
    assert len(run.stderr.strip().splitlines()) == 1 and "-o" in run.stderr and "empty name" in run.stderr
    assert not list(tmp_path.iterdir())


def write_sparse_runs(model_path: Path, folder: Path, count: int) -> list[Path]:
    """``count`` runs giving a value to every drawn operator of ``model_path`` (a big one: ids S:N)."""
    from renderer.picture.folding import fold

    model = renderer.load_model(str(model_path))
    folding = fold(model, False)
    rng = np.random.default_rng(5)
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for run in range(count):
        lines = ["id,latency_us"] + [f"{n.graph.index}:{n.index},{rng.uniform(1, 100) * 10 ** run:.5g}"
                                     for n in model.nodes() if folding.is_drawn(n)]
        path = folder / f"run{run}.csv"
        path.write_text("\n".join(lines) + "\n")
        paths.append(path)
    return paths


@pytest.mark.parametrize("sample", ["bert_scoped.onnx", "bert_dynamo.onnx"])
def test_a_paged_model_is_drawn_with_pages_as_render_draws_it(sample: str, tmp_path: Path) -> None:
    """A big model (an overview and pages in ``render``): each picture of the batch is an overview and a pages
    folder, each page laid out once for every run and recoloured per run; the fills are ``render``'s; the
    links lead to the picture's own pages."""
    model = ONNX / sample
    runs = write_sparse_runs(model, tmp_path / "runs", 2)
    out = tmp_path / "out"
    batch(model, "-a", *runs, "--color-by", "latency_us", "-o", out)
    single = tmp_path / "single" / "m.svg"
    single.parent.mkdir()
    run = run_cli("render", model, "-a", runs[1], "--color-by", "latency_us", "-o", single, "--no-sidecar")
    assert run.returncode == 0, run.stderr
    rendered = sorted(p.name for p in (tmp_path / "single" / "m.svg.pages").iterdir())
    assert len(rendered) > 3
    names = ["000_run0.latency_us.svg", "001_run1.latency_us.svg"]
    assert sorted(p.name for p in out.iterdir()) == sorted([*names, *(n + ".pages" for n in names), "index.html"])
    links, _ = sheet_links(out)
    assert sorted(links) == names
    for name in names:
        folder = out / (name + ".pages")
        assert sorted(p.name for p in folder.iterdir()) == rendered
        hrefs = {h for p in [out / name] for h in _hrefs(p)}
        assert {f"{name}.pages/{page}" for page in rendered} <= {h.split("#")[0] for h in hrefs}
        for page in folder.iterdir():
            assert all(h.split("#")[0] in {f"../{name}", *rendered, ""} for h in _hrefs(page)), page
    pages = ["", *rendered]  # "": the overview
    drawn_fills: dict[str, str] = {}
    box_count = 0
    for page in pages:
        first, second = ((out / n) if not page else (out / (n + ".pages") / page) for n in names)
        same = [p.read_bytes().replace(n.encode(), b"PICTURE") for p, n in ((first, names[0]), (second, names[1]))]
        assert assert_same_but_fills_and_values(*same) > 0  # links name each picture's own files
        mine = {k: first_fill(g) for k, g in svg_groups(parse_svg(second), "op").items()}
        theirs_path = single if not page else single.with_name("m.svg.pages") / page
        theirs = {k: first_fill(g) for k, g in svg_groups(parse_svg(theirs_path), "op").items()}
        assert mine == theirs, page
        drawn_fills.update(mine)
        boxes = box_fills(second)
        assert boxes == box_fills(theirs_path), page  # group boxes and run cells: render's scale and fills
        box_count += len(boxes)
    assert len(set(drawn_fills.values())) > 10  # the boxes are coloured, not all n/a
    assert box_count >= 12  # the overview's run of 12 encoder layers, at least


def svg_size(path: Path) -> tuple[float, float]:
    """The canvas of an SVG in points, from its root's width and height ("827pt")."""
    root = parse_svg(path)
    return float(root.get("width").removesuffix("pt")), float(root.get("height").removesuffix("pt"))


def test_a_picture_too_big_for_one_page_goes_to_pages_as_render_draws_it(tmp_path: Path) -> None:
    """light_resnet50 is planned as one picture (under the operator limit of a page), but that picture is
    over ``MAX_PAGE_PT`` high: ``render`` draws an overview and pages instead (the layout's size check), and
    so does a batch picture now (it was one 17,000 pt picture): the same page files as render's, each within
    the limit (plus the caption), the overview linking to its pages, the contact sheet to the overview."""
    from renderer.batch import caption
    from renderer.picture.pages import MAX_PAGE_PT

    model = ONNX / "light_resnet50.onnx"
    flat = tmp_path / "flat.dot"  # the picture's DOT as emitted, before a layout could wrap it into columns
    assert run_cli("render", model, "--collapse", "none", "--color-by", "none", "-o", flat).returncode == 0
    (tmp_path / "flat.svg").write_bytes(subprocess.run(["dot", "-Tsvg", str(flat)], capture_output=True,
                                                       check=True).stdout)
    assert max(svg_size(tmp_path / "flat.svg")) > MAX_PAGE_PT  # one picture would be too big: the case under test
    runs = write_sparse_runs(model, tmp_path / "runs", 2)
    single = tmp_path / "single" / "m.svg"
    single.parent.mkdir()
    run = run_cli("render", model, "-a", runs[0], "--color-by", "latency_us", "-o", single, "--no-sidecar")
    assert run.returncode == 0, run.stderr
    rendered = sorted(p.name for p in single.with_name("m.svg.pages").iterdir())
    assert len(rendered) >= 2
    out = tmp_path / "out"
    batch(model, "-a", *runs, "--color-by", "latency_us", "-o", out)
    names = ["000_run0.latency_us.svg", "001_run1.latency_us.svg"]
    assert sorted(p.name for p in out.iterdir()) == sorted([*names, *(n + ".pages" for n in names), "index.html"])
    assert sorted(sheet_links(out)[0]) == names
    for name in names:
        pages = sorted((out / (name + ".pages")).iterdir())
        assert [p.name for p in pages] == rendered
        for picture in [out / name, *pages]:
            assert max(svg_size(picture)) <= MAX_PAGE_PT + caption.HEIGHT, (picture.name, svg_size(picture))
        assert {f"{name}.pages/{page}" for page in rendered} <= {h.split("#")[0] for h in _hrefs(out / name)}
        for page in pages:
            assert f"../{name}" in {h.split("#")[0] for h in _hrefs(page)}, page.name
    for page in rendered:  # the operators' fills are render's, page by page
        mine = {k: first_fill(g) for k, g in svg_groups(parse_svg(out / (names[0] + ".pages") / page), "op").items()}
        theirs = {k: first_fill(g) for k, g in svg_groups(parse_svg(single.with_name("m.svg.pages") / page),
                                                           "op").items()}
        assert mine == theirs and len(set(mine.values())) > 3, page


def box_fills(path: Path) -> dict[str, str | None]:
    """The fill of each group box (or run cell) leading to a page, by its link's id ``a_box-P``."""
    return {g.get("id"): first_fill(g) for g in parse_svg(path).iter(f"{SVG_NS}g")
            if (g.get("id") or "").startswith("a_box-")}


def _hrefs(path: Path) -> list[str]:
    return [v for e in parse_svg(path).iter() for k, v in e.attrib.items() if k.endswith("href")]


def test_a_paged_model_is_laid_out_once_per_page(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Three runs × two metrics of a paged model: Graphviz runs once per page of the book for each metric (the
    MACs pictures' legends hold the MACs formula of the free dims, the latency ones' do not), not per picture."""
    from renderer.batch import ModelJob, run_job
    from renderer.picture import graphviz_run

    runs = write_sparse_runs(ONNX / "bert_scoped.onnx", tmp_path / "runs", 3)
    calls: list[str] = []
    real = graphviz_run.render_formats

    def counted(source, formats, timeout=None, **options):  # type: ignore[no-untyped-def]
        calls.append(source)
        return real(source, formats, timeout=timeout, **options)

    monkeypatch.setattr(graphviz_run, "render_formats", counted)
    result = run_job(ModelJob(str(ONNX / "bert_scoped.onnx"), tuple(map(str, runs)), ("latency_us", "macs")))
    assert result.error is None, result.error
    folders = [files for _, files in result.files if isinstance(files, dict)]
    assert len(folders) == 6 and len(result.pictures) == 6
    pages = len(folders[0]) + 1  # the overview and each page
    assert pages <= len(calls) <= 2 * pages, (len(calls), pages)  # per metric at most, never per run (6 × pages)


def test_an_error_in_a_batch_names_its_model(tmp_path: Path) -> None:
    from renderer.batch import ModelJob, run_job

    runs = write_runs(ONNX / "tiny_cnn.onnx", tmp_path / "runs", 1)
    # A folder of its own: a layout another test kept for tiny_cnn would be drawn without Graphviz, so no timeout.
    options = renderer.RenderOptions(timeout=1e-9, layout_cache=str(tmp_path / "layouts"))
    result = run_job(ModelJob(str(ONNX / "tiny_cnn.onnx"), (str(runs[0]),), ("latency_us",), options=options))
    assert result.error is not None and result.error.startswith(str(ONNX / "tiny_cnn.onnx")), result.error


def test_a_refused_pages_folder_fails_its_model_only(tmp_path: Path) -> None:
    """A user's file in one picture's pages folder: that model fails (the file stays), the other is written."""
    runs = write_sparse_runs(ONNX / "bert_scoped.onnx", tmp_path / "runs", 1)
    out = tmp_path / "out"
    models = [ONNX / "bert_scoped.onnx", ONNX / "tiny_cnn.onnx"]
    batch(*models, "-a", runs[0], "--color-by", "latency_us", "-o", out)
    [folder] = out.glob("*.pages")
    (folder / "page-notes.svg").write_text("mine", encoding="utf-8")
    run = run_cli("batch", *models, "-a", runs[0], "--color-by", "latency_us", "-o", out)
    assert run.returncode == 1 and "page-notes.svg" in run.stderr and "1 of 2 models failed" in run.stderr
    assert (folder / "page-notes.svg").read_text(encoding="utf-8") == "mine"
    _, text = sheet_links(out)
    assert "bert_scoped.onnx" in text and "failed" in text


def test_runs_without_numbers_colour_by_the_builtin_default_as_render_does(tmp_path: Path) -> None:
    """Runs whose files carry only text: each picture is coloured by built-in MACs (render's default heat),
    with the same values render computes, and ``--color-by macs`` gives the same files."""
    runs = []
    for name in ("a", "b"):
        path = tmp_path / f"{name}.csv"
        path.write_text(f"id,note\nstem/conv,run {name}\n", encoding="utf-8")
        runs.append(path)
    default, explicit = tmp_path / "default", tmp_path / "explicit"
    run = run_cli("batch", ONNX / "tiny_cnn.onnx", "-a", *runs, "-o", default)
    assert run.returncode == 0, run.stderr
    assert "colouring by macs, built in, known for 5 of 5 drawn layer and attention operators" in run.stderr
    pictures = sorted(default.glob("*.svg"))
    assert [p.name for p in pictures] == ["000_a.macs.svg", "001_b.macs.svg"]
    assert run_cli("batch", ONNX / "tiny_cnn.onnx", "-a", *runs, "--color-by", "macs", "-o", explicit).returncode == 0
    assert [p.read_bytes() for p in pictures] == [p.read_bytes() for p in sorted(explicit.glob("*.svg"))]
    rendered = tmp_path / "r.svg"
    assert run_cli("render", ONNX / "tiny_cnn.onnx", "--color-by", "macs", "-o", rendered).returncode == 0
    render_fills = {k: first_fill(g) for k, g in svg_groups(parse_svg(rendered), "op").items()}
    batch_fills = {k: first_fill(g) for k, g in svg_groups(parse_svg(pictures[0]), "op").items()}
    assert batch_fills == render_fills and len(set(batch_fills.values())) >= 5


def test_a_paged_batch_is_the_same_bytes_every_time(tmp_path: Path) -> None:
    runs = write_sparse_runs(ONNX / "bert_scoped.onnx", tmp_path / "runs", 1)
    files = []
    for seed in ("1", "2"):
        out = tmp_path / f"out{seed}"
        run = run_cli("batch", ONNX / "bert_scoped.onnx", "-a", runs[0], "--color-by", "latency_us", "-o", out,
                      env={"PYTHONHASHSEED": seed})
        assert run.returncode == 0, run.stderr
        files.append({str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()})
    assert len(files[0]) > 5 and files[0] == files[1]
