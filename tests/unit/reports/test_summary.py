"""The pull-request summary (``render --summary FILE.md``, ``-o FILE.md``), read back the way GitHub reads a
comment: parsed with markdown-it-py, its numbers recomputed from the annotation files, its links followed to the
pictures of the same run, its size measured on big models and on hostile names."""

from __future__ import annotations

import csv
import math
import os
import sys
from pathlib import Path

import pytest
import yaml

import payloads as P
from conftest import ONNX, ROOT, SAMPLES, one_line_error, parse_svg, run_cli, svg_groups
from picture_checks import PROFILE, profile_latencies

sys.path.insert(0, str(ROOT))
from benchmarks import transformer_models  # noqa: E402

LATENCY_YAML = SAMPLES / "annotations" / "tiny_cnn.latency.yaml"
QDQ_CSV = SAMPLES / "annotations" / "tiny_cnn_qdq_u8.latency.csv"
COMMENT_BUDGET = 20_000  # far below GitHub's 65,536 characters per comment


def _cli(*args: str | Path) -> int:
    from renderer.commands.cli import main

    return main([str(a) for a in args])


def _tables(markdown: str) -> list[list[list[str]]]:
    """Each table as rows of cell texts (header row first), from markdown-it-py's tokens."""
    tables: list[list[list[str]]] = []
    row: list[str] | None = None
    cell: list[str] | None = None
    for token in P.markdown_tokens(markdown):
        kind = token.type  # type: ignore[attr-defined]
        if kind == "table_open":
            tables.append([])
        elif kind == "tr_open":
            row = []
        elif kind == "tr_close":
            tables[-1].append(row or [])
        elif kind in ("th_open", "td_open"):
            cell = []
        elif kind in ("th_close", "td_close"):
            row.append("".join(cell or []))  # type: ignore[union-attr]
            cell = None
        elif kind in ("text", "code_inline") and cell is not None:
            cell.append(token.content)  # type: ignore[attr-defined]
    return tables


def _links(markdown: str) -> list[str]:
    return [t.attrGet("href") for t in P.markdown_tokens(markdown) if t.type == "link_open"]  # type: ignore[attr-defined]


def _top_table(markdown: str) -> list[list[str]]:
    return next(t for t in _tables(markdown) if t[0][:3] == ["#", "operator", "type"])


def test_top_table_totals_and_links_from_the_files(tmp_path: Path) -> None:
    """Rank, value and share of each row recomputed from the YAML; the links lead to the pictures written."""
    (tmp_path / "pics").mkdir()
    (tmp_path / "sub").mkdir()
    summary = tmp_path / "sub" / "summary.md"
    assert _cli("render", ONNX / "tiny_cnn.onnx", "-a", LATENCY_YAML, "--color-by", "latency_us", "-q",
                "-o", tmp_path / "pics" / "m.svg", "-o", tmp_path / "pics" / "m.html", "-o", tmp_path / "m.dot",
                "--summary", summary, "--summary-rows", "5") == 0
    text = summary.read_text(encoding="utf-8")
    P.check_markdown(text.encode())
    latency = {row["id"]: row["meta"]["latency_us"] for row in yaml.safe_load(LATENCY_YAML.read_text())["operators"]}
    total = math.fsum(latency.values())
    expected = sorted(latency.items(), key=lambda item: -item[1])[:5]
    table = _top_table(text)
    assert table[0] == ["#", "operator", "type", "latency_us", "share of total"]
    assert len(table) == 1 + 5
    for k, ((name, value), row) in enumerate(zip(expected, table[1:]), 1):
        assert row[0] == str(k) and row[1] == name and row[2] in ("Conv", "BatchNormalization", "Relu", "MaxPool",
                                                                  "Add", "GlobalAveragePool", "Flatten", "Gemm")
        assert math.isclose(float(row[3]), value, rel_tol=1e-3)
        assert row[4].endswith(" %") and abs(float(row[4][:-2]) - 100 * value / total) <= 0.05
    totals = dict(row for row in next(t for t in _tables(text) if t[0] == ["totals", ""])[1:])
    assert math.isclose(float(totals["latency_us (sum)"].split()[0]), total, rel_tol=1e-3)
    assert f"{len(expected)} of {len(latency)} operators with a value shown" in text
    links = _links(text)
    assert links == ["../pics/m.svg", "../pics/m.html"]  # pictures only: not the DOT, not the summary itself
    assert all((summary.parent / link).is_file() for link in links)


def test_link_base_prefixes_the_links(tmp_path: Path) -> None:
    summary = tmp_path / "s.md"
    assert _cli("render", ONNX / "tiny_cnn.onnx", "-o", tmp_path / "a b.svg", "--summary", summary, "-q",
                "--summary-link-base", "https://ci.example/runs/7/artifacts/") == 0
    assert _links(summary.read_text(encoding="utf-8")) == ["https://ci.example/runs/7/artifacts/a%20b.svg"]


def test_folded_operators_counted_and_marked(tmp_path: Path) -> None:
    """Drawn/folded counts agree with the boxes in the SVG; a folded operator with a value is ranked and said
    to be folded."""
    svg, summary = tmp_path / "q.svg", tmp_path / "q.md"
    assert _cli("render", ONNX / "tiny_cnn_qdq_u8.onnx", "-a", QDQ_CSV, "--color-by", "latency_us", "-q",
                "-o", svg, "--summary", summary, "--summary-rows", "50") == 0
    text = summary.read_text(encoding="utf-8")
    P.check_markdown(text.encode())
    boxes = len(svg_groups(parse_svg(svg), "op"))
    from renderer.loaders.registry import load_model

    names = {node.name for node in load_model(ONNX / "tiny_cnn_qdq_u8.onnx").nodes()}
    operators = len(names)
    assert (f"{boxes} operators drawn, {operators - boxes} folded into the boxes that read them "
            f"({operators} in all)") in text
    with QDQ_CSV.open(newline="") as f:  # operator rows that name an operator (the file has one that does not)
        latency = {row["id"]: float(row["latency_us"]) for row in csv.DictReader(f)
                   if row["latency_us"] and row["kind"] in ("", "operator") and row["id"] in names}
    rows = _top_table(text)[1:]
    assert len(rows) == min(50, len(latency))
    best = sorted(latency.values(), reverse=True)[: len(rows)]
    assert all(math.isclose(float(r[3]), v, rel_tol=1e-3) for r, v in zip(rows, best))
    assert all(latency[r[1]] == pytest.approx(float(r[3]), rel=1e-3) for r in rows)  # each name has its value
    folded = [r for r in rows if r[2].endswith(" (folded)")]
    assert folded and all(r[2].startswith("DequantizeLinear") for r in folded)


def test_higher_is_better_lists_the_lowest_first_without_shares(tmp_path: Path) -> None:
    notes = tmp_path / "sqnr.yaml"
    values = {"stem/conv": 31.5, "stem/bn": 12.25, "block1/dwconv": 40.0, "block2/conv": 7.5}
    notes.write_text(yaml.safe_dump({"metrics": {"sqnr_db": {"unit": "dB", "higher_is_better": True}},
                                     "operators": [{"id": k, "sqnr_db": v} for k, v in values.items()]}))
    summary = tmp_path / "s.md"
    assert _cli("render", ONNX / "tiny_cnn.onnx", "-a", notes, "--color-by", "sqnr_db", "-o", summary, "-q") == 0
    text = summary.read_text(encoding="utf-8")
    table = _top_table(text)
    assert table[0] == ["#", "operator", "type", "sqnr_db"]  # a score does not add up: no share column
    assert [row[1] for row in table[1:]] == sorted(values, key=values.__getitem__)
    assert "lowest first (higher is better)" in text and "(sum)" not in text
    assert not _links(text)  # no picture in this run


def test_without_a_colour_metric_says_how_to_get_one(tmp_path: Path) -> None:
    summary = tmp_path / "s.md"
    assert _cli("render", ONNX / "tiny_cnn.onnx", "--color-by", "none", "-o", summary, "-q") == 0
    text = summary.read_text(encoding="utf-8")
    assert "No colour metric" in text and not [t for t in _tables(text) if t[0][:1] == ["#"]]


def test_a_profile_ranks_by_its_main_metric_without_color_by(tmp_path: Path) -> None:
    summary = tmp_path / "s.md"
    assert _cli("render", ONNX / "tiny_cnn.onnx", "-a", PROFILE, "-o", summary, "--summary-rows", "5", "-q") == 0
    text = summary.read_text(encoding="utf-8")
    table = _top_table(text)
    assert table[0] == ["#", "operator", "type", "latency_us", "share of total"]
    latency = profile_latencies()[0]
    assert [row[1] for row in table[1:]] == sorted(latency, key=lambda name: -latency[name])[:5]
    assert "No colour metric" not in text


def test_same_input_same_bytes(tmp_path: Path) -> None:
    runs = []
    for k in range(2):
        folder = tmp_path / str(k)
        folder.mkdir()
        assert _cli("render", ONNX / "tiny_cnn.onnx", "-a", LATENCY_YAML, "--color-by", "latency_us", "-q",
                    "-o", folder / "m.svg", "--summary", folder / "s.md") == 0
        runs.append((folder / "s.md").read_bytes())
    assert runs[0] == runs[1]


@pytest.mark.slow
def test_big_models_stay_short(tmp_path: Path) -> None:
    """The ~3,600-operator transformer and bert_scoped.onnx, ranked by MACs: far below GitHub's limit."""
    big = transformer_models.write(tmp_path / "bert40.onnx", transformer_models.layers_for(3600))
    for model in (big, ONNX / "bert_scoped.onnx"):
        summary = tmp_path / f"{model.stem}.md"
        assert _cli("render", model, "--color-by", "macs", "--dim", "batch=1", "--dim", "sequence=16", "-o", summary,
                    "-q") == 0
        text = summary.read_text(encoding="utf-8")
        P.check_markdown(text.encode())
        assert len(text) < COMMENT_BUDGET, (model.name, len(text))
        assert len(_top_table(text)) == 1 + 10


def test_hostile_names_at_the_largest_table_stay_within_a_comment(tmp_path: Path) -> None:
    """50 operators whose names are all backticks and pipes (the escapes that grow most), every value there:
    the summary parses as 50 rows of the names as written and stays far below 65,536 characters."""
    import onnx
    from onnx import TensorProto, helper

    names = [("`|" * 60)[: 79 - len(str(k))] + str(k) for k in range(60)]
    nodes, previous = [], "x"
    for k, name in enumerate(names):
        nodes.append(helper.make_node("Relu", [previous], [f"t{k}"], name=name))
        previous = f"t{k}"
    graph = helper.make_graph(nodes, "g" * 500, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                              [helper.make_tensor_value_info(previous, TensorProto.FLOAT, [1, 4])])
    path = tmp_path / "pipes.onnx"
    onnx.save(helper.make_model(graph, producer_name="|`" * 200), path)
    notes = tmp_path / "n.yaml"
    notes.write_text(yaml.safe_dump({"operators": [{"id": str(k), "latency_us": 1000 - k} for k in range(60)]}))
    summary = tmp_path / "s.md"
    assert _cli("render", path, "-a", notes, "--color-by", "latency_us", "-o", tmp_path / "p.svg",
                "--summary", summary, "--summary-rows", "50", "-q") == 0
    text = summary.read_text(encoding="utf-8")
    P.check_markdown(text.encode())
    assert len(text) < COMMENT_BUDGET, len(text)
    rows = _top_table(text)[1:]
    assert [row[1] for row in rows] == names[:50]


@pytest.mark.parametrize("extra", [
    ["--summary", "{notes}"],                              # the annotation file read
    ["--summary", "{tmp}/s.txt"],                          # not a Markdown file name
    ["--summary", "{tmp}/s.md", "--summary-rows", "51"],
    ["--summary", "{tmp}/s.md", "--summary-link-base", "javascript:alert(1)//"],
    ["--summary", "{tmp}/s.md", "--summary-link-base", "https://a b/"],
], ids=["is-input", "not-md", "top-k", "link-scheme", "link-space"])
def test_refused_before_anything_is_written(extra: list[str], tmp_path: Path) -> None:
    notes = tmp_path / "notes.md"
    notes.write_text(LATENCY_YAML.read_text())
    before = notes.read_bytes()
    args = [a.format(notes=notes, tmp=tmp_path) for a in extra]
    run = run_cli("render", ONNX / "tiny_cnn.onnx", "-a", notes, "--annotations-format", "generic",
                  "-o", tmp_path / "m.svg", *args)
    line = one_line_error(run)
    assert "--summary" in line or "--summary-rows" in line or str(notes) in line, line
    assert notes.read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == ["notes.md"]


def test_one_summary_per_model(tmp_path: Path) -> None:
    run = run_cli("render", ONNX / "tiny_cnn.onnx", ONNX / "tiny_transformer.onnx", "-o", f"{tmp_path}/",
                  "--summary", tmp_path / "s.md")
    assert "--summary takes one model" in one_line_error(run)
    assert not (tmp_path / "s.md").exists()


def test_a_failed_run_keeps_the_old_summary(tmp_path: Path) -> None:
    summary = tmp_path / "s.md"
    summary.write_text("old")
    run = run_cli("render", ONNX / "tiny_cnn.onnx", "--color-by", "no_such_metric", "-o", tmp_path / "m.svg",
                  "--summary", summary)
    assert "no_such_metric" in one_line_error(run)
    assert summary.read_text() == "old" and not (tmp_path / "m.svg").exists()
    assert sorted(os.listdir(tmp_path)) == ["s.md"]  # no temporary file left behind


@pytest.mark.parametrize("bad", ["<b>x</b>", "![i](x.png)", "see https://evil.example", "cc @octocat", "fixes #12",
                                 "[a](javascript:x)", "<http://x.example>", "| a | b |\n|---|---|\n| x | y | z |"])
def test_the_markdown_check_catches_live_markup(bad: str) -> None:
    """The checker the injection tests use is not a rubber stamp."""
    with pytest.raises(AssertionError):
        P.check_markdown(bad.encode())
