"""``annograph batch``: pictures of one model share their geometry byte for byte; Dask and local runs agree."""

from __future__ import annotations

import html.parser
from pathlib import Path

import numpy as np
import pytest

from conftest import ONNX, SVG_NS, XLINK_NS, first_fill, parse_svg, run_cli, svg_groups

import renderer
from renderer.colors import format_number

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


def op_texts(group) -> list:  # type: ignore[no-untyped-def]
    return list(group.iter(f"{SVG_NS}text"))


def assert_same_but_fills_and_values(a: bytes, b: bytes) -> int:
    """Everything equal but fill attributes, the value row of operator boxes, their tooltip's value line, and the
    caption's texts. Returns how many fills differ."""
    ra, rb = parse_svg(a), parse_svg(b)
    ops_a = {id(t): g for g in svg_groups(ra, "op").values() for t in op_texts(g)[-2:]}
    caption_a = {id(e) for e in ra.find(f".//*[@id='batch-caption']").iter()}
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

    class Links(html.parser.HTMLParser):
        def __init__(self) -> None:
            super().__init__()
            self.links: list[str] = []
            self.text: list[str] = []

        def handle_starttag(self, tag, attrs):  # type: ignore[no-untyped-def]
            if tag == "a":
                self.links.append(dict(attrs)["href"])

        def handle_data(self, data):  # type: ignore[no-untyped-def]
            self.text.append(data)

    sheet = Links()
    sheet.feed((out / "index.html").read_text(encoding="utf-8"))
    assert sorted(sheet.links) == sorted(svgs(out))
    text = " ".join(sheet.text)
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
    from renderer.cli import main

    write_runs(ONNX / "tiny_cnn.onnx", tmp_path / "runs" / "tiny_cnn", 2)
    write_runs(ONNX / "unnamed_nodes.onnx", tmp_path / "runs" / "unnamed_nodes", 2)
    pattern = str(tmp_path / "runs" / "{model}" / "*.csv")
    models = [str(ONNX / "tiny_cnn.onnx"), str(ONNX / "unnamed_nodes.onnx")]
    assert main(["batch", *models, "-a", pattern, "--color-by", "latency_us", "-o", str(tmp_path / "local"),
                 "--jobs", "1", "-q"]) == 0
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as cluster:
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
    batch(ONNX / "tiny_cnn.onnx", "-a", pattern, "--color-by", "latency_us", "--shared-scale", "-o", tmp_path / "shared")

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
    assert remote.files == local.files and len(remote.files) == 12
