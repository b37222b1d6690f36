"""``annograph diff`` as a CI gate and across quantization: the ``--min-share`` floor under ``--fail-above``, the
``--fail-total-above`` gate, quantized twins paired before tensors (a real ``quantize_dynamic``'d model and the
QDQ sample), ``--summary-link-base``, and summary tables that fit a ~900 px pull-request comment (measured on
the HTML markdown-it renders)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from conftest import ONNX, one_line_error, parse_svg, run_cli, svg_groups, tooltip_of
from e2e.test_diff import _table as _rows

TRANSFORMER = ONNX / "tiny_transformer.onnx"
CNN = ONNX / "tiny_cnn.onnx"
COMMENT_PX = 900


def _sides(folder: Path, before: dict[str, float], after: dict[str, float], metric: str = "latency_us") -> list[str]:
    paths = []
    for side, values in (("before", before), ("after", after)):
        path = folder / f"{side}.json"
        path.write_text(json.dumps({"metrics": {metric: {"unit": "µs"}},
                                    "operators": [{"id": k, metric: v} for k, v in values.items()]}))
        paths.append(str(path))
    return paths


def _gate_lines(stderr: str) -> list[str]:
    return [ln for ln in stderr.splitlines() if "is past --fail-above" in ln]


@pytest.fixture(scope="module")
def noisy(tmp_path_factory: pytest.TempPathFactory) -> dict:  # type: ignore[type-arg]
    """tiny_transformer: one big operator 65 % faster, its 32 others each 50 % slower (a µs of noise each)."""
    folder = tmp_path_factory.mktemp("noisy")
    small = [str(i) for i in range(1, 33)]
    before = {"0": 1000.0, **{k: 2.0 for k in small}}
    after = {"0": 350.0, **{k: 3.0 for k in small}}
    return {"folder": folder, "files": _sides(folder, before, after), "reversed": _sides(folder / "..", after, before)}


def _run_gate(noisy: dict, *extra: str, files: str = "files") -> tuple:  # type: ignore[type-arg]
    summary = noisy["folder"] / f"s{abs(hash(extra)) % 10**6}.md"
    before, after = noisy[files]
    run = run_cli("diff", TRANSFORMER, "--before", before, "--after", after, "--metric", "latency_us",
                  "-o", noisy["folder"] / "d.svg", "--summary", summary, "--collapse", "none", *extra)
    return run, summary.read_text(encoding="utf-8")


def test_operators_under_the_share_floor_do_not_trip_the_gate(noisy: dict) -> None:  # type: ignore[type-arg]
    run, md = _run_gate(noisy, "--fail-above", "10%")
    assert run.returncode == 0, run.stderr
    assert _gate_lines(run.stderr) == []
    assert "32 operators past --fail-above 10% are each under 1% of the model's latency_us" in run.stderr
    assert "No operator past --fail-above 10% (operators of at least 1% of the model total)." in md
    assert "32 operators past 10% but each under 1% of the model total: not counted (--min-share)." in md


@pytest.mark.parametrize("share, code, listed", [("0", 3, 32), ("0.2%", 3, 32), ("0.3", 0, 0), ("1%", 0, 0)])
def test_min_share_sets_the_floor(noisy: dict, share: str, code: int, listed: int) -> None:  # type: ignore[type-arg]
    # each small operator is 3 of 1,064 µs (0.28 %)
    run, md = _run_gate(noisy, "--fail-above", "10%", "--min-share", share, "-q")
    assert run.returncode == code, run.stderr
    assert len(_gate_lines(run.stderr)) == min(listed, 20)  # then one "… and N more" line
    if listed:
        assert f"**{listed} operators past --fail-above 10%**" in md


def test_fail_total_above_gates_the_model_total(noisy: dict) -> None:  # type: ignore[type-arg]
    run, md = _run_gate(noisy, "--fail-total-above", "5%")
    assert run.returncode == 0, run.stderr  # the model got faster: 1,064 → 446 µs
    assert "Model total -58.08%: within --fail-total-above 5%." in md
    run, md = _run_gate(noisy, "--fail-total-above", "5%", files="reversed")
    assert run.returncode == 3, run.stderr
    assert "annograph: model total: latency_us +138.6% (446 → 1064 µs) is past --fail-total-above 5%" in run.stderr
    assert "Model total +138.6%: **past** --fail-total-above 5%." in md
    run, _ = _run_gate(noisy, "--fail-total-above", "700", "-q", files="reversed")
    assert run.returncode == 0, run.stderr  # +618 µs is within 700 µs


@pytest.mark.parametrize("args, says", [
    (["--min-share", "200%"], "--min-share '200%'"), (["--min-share", "x"], "--min-share 'x'"),
    (["--fail-total-above=-1%"], "--fail-total-above '-1%'"),
    (["--summary-link-base", "javascript:x"], "--summary-link-base 'javascript:x'"),
])
def test_bad_gate_options_are_one_line(noisy: dict, args: list[str], says: str) -> None:  # type: ignore[type-arg]
    before, after = noisy["files"]
    error = one_line_error(run_cli("diff", TRANSFORMER, "--before", before, "--after", after, "--metric",
                                   "latency_us", "-o", noisy["folder"] / "bad.svg", *args))
    assert says in error
    assert not (noisy["folder"] / "bad.svg").exists()


def test_summary_link_base_links_the_pictures_where_ci_publishes_them(noisy: dict) -> None:  # type: ignore[type-arg]
    run, md = _run_gate(noisy, "--summary-link-base", "https://ci.example/runs/7/")
    assert run.returncode == 0, run.stderr
    assert "picture: [`d.svg`](https://ci.example/runs/7/d.svg)" in md


# ---- quantized twins --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def dynamic(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """tiny_transformer and tiny_cnn through onnxruntime's quantize_dynamic (MatMulInteger, ConvInteger)."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    folder = tmp_path_factory.mktemp("dynamic")
    made = {}
    for model in (TRANSFORMER, CNN):
        out = folder / f"{model.stem}_dynamic.onnx"
        quantize_dynamic(str(model), str(out), weight_type=QuantType.QUInt8,
                         op_types_to_quantize=["MatMul", "Conv", "Gemm"])
        made[model.stem] = out
    return made


def _nodes(path: Path) -> dict[str, tuple[int, str]]:
    from renderer.loaders.registry import load_model

    return {n.name: (n.index, n.op_type) for n in load_model(path).main.nodes}


def test_quantize_dynamic_pairs_each_matmul_with_its_matmulinteger(dynamic: dict[str, Path], tmp_path: Path) -> None:
    """Each float MatMul meets the MatMulInteger standing for it (never the scale Mul that now writes its output
    tensor); the Cast and the Muls count with the twin: 10 µs → 4 + 1 + 0.5 + 0.5 µs."""
    quantized = dynamic["tiny_transformer"]
    nodes = _nodes(quantized)
    projections = ["q_proj", "k_proj", "v_proj"]
    float_nodes = _nodes(TRANSFORMER)
    before = {f"layer0/attn/{p}": 10.0 for p in projections}
    after = {}
    for p in projections:
        after[f"layer0/attn/{p}_quant"] = 4.0
        after[f"layer0/attn/{p}_out_output_quantized_cast"] = 1.0
        after[f"layer0/attn/{p}_quant_output_scale_mul"] = 0.5
        after[f"layer0/attn/{p}_quant_scales_mul"] = 0.5
    files = _sides(tmp_path, before, after)
    out, md = tmp_path / "q.svg", tmp_path / "q.md"
    run = run_cli("diff", TRANSFORMER, quantized, "--before", files[0], "--after", files[1], "--metric", "latency_us",
                  "-o", out, "--summary", md, "--collapse", "none")
    assert run.returncode == 0, run.stderr
    line = next(ln for ln in run.stderr.splitlines() if " operators of " in ln)
    twins = sum(1 for _, op in nodes.values() if op == "MatMulInteger")
    assert f"{twins} by quantized twin, 0 by output tensor" in line, line
    text = md.read_text(encoding="utf-8")
    rows = [r for r in _rows(text, "Improvements")]
    assert sorted((r[0], r[1], r[2], r[3]) for r in rows) == sorted(
        (f"layer0/attn/{p}_quant", "MatMulInteger", "10 → 6 µs", "-40%") for p in projections), rows
    ops = svg_groups(parse_svg(out), "op")
    for p in projections:
        twin = ops[f"op-0-{nodes[f'layer0/attn/{p}_quant'][0]}"]
        float_index = float_nodes[f"layer0/attn/{p}"][0]
        assert f"before operator: 0:{float_index} in tiny_transformer.onnx" in tooltip_of(twin)
        for helper in (f"layer0/attn/{p}_out_output_quantized_cast", f"layer0/attn/{p}_quant_output_scale_mul"):
            box = ops[f"op-0-{nodes[helper][0]}"]
            assert f"counted with layer0/attn/{p}_quant" in tooltip_of(box), helper
    assert not any(r[1] == "Mul" for r in _rows(text, "Regressions") + rows)


def test_quantize_dynamic_conv_becomes_convinteger_with_its_bias_add(dynamic: dict[str, Path],
                                                                     tmp_path: Path) -> None:
    out, md = tmp_path / "c.svg", tmp_path / "c.md"
    run = run_cli("diff", CNN, dynamic["tiny_cnn"], "--metric", "macs", "-o", out, "--summary", md)
    assert run.returncode == 0, run.stderr
    line = next(ln for ln in run.stderr.splitlines() if " operators of " in ln)
    assert "matched 18/18 operators" in line and "5 by quantized twin, 0 by output tensor" in line, line
    text = md.read_text(encoding="utf-8")
    types = {r[0]: r[1] for r in _rows(text, "Regressions") + _rows(text, "Improvements")}
    assert types == {"stem/conv_quant": "ConvInteger", "block1/dwconv_quant": "ConvInteger",
                     "block1/pwconv_quant": "ConvInteger", "block2/conv_quant": "ConvInteger",
                     "head/fc_MatMul_quant": "MatMulInteger"}, types
    only_after = re.search(r"- (\d+) only after: (.*)", text)
    assert only_after and set(re.findall(r"\(`(\w+)`", only_after.group(2))) == {"DynamicQuantizeLinear"}


def test_qdq_helpers_count_with_the_operator_they_wrap(tmp_path: Path) -> None:
    """tiny_cnn vs its QDQ version (quantize_static): operators pair by name; each Conv's weight and bias
    DequantizeLinear and the QuantizeLinear → DequantizeLinear after it count with it; only the input's pair is
    left over."""
    qdq = ONNX / "tiny_cnn_qdq_u8.onnx"
    nodes = _nodes(qdq)
    after = {"stem/conv": 7.0, "stem/conv.weight_DequantizeLinear": 1.0}
    after.update({name: 1.0 for name in nodes if name.startswith(("stem/conv_out_", "stem/conv.bias_"))})
    assert len(after) >= 4, sorted(nodes)
    files = _sides(tmp_path, {"stem/conv": 10.0}, after)
    md = tmp_path / "qdq.md"
    run = run_cli("diff", CNN, qdq, "--before", files[0], "--after", files[1], "--metric", "latency_us",
                  "-o", tmp_path / "qdq.dot", "--summary", md)
    assert run.returncode == 0, run.stderr
    line = next(ln for ln in run.stderr.splitlines() if " operators of " in ln)
    assert "0 by output tensor" in line and "2 only after: image_QuantizeLinear, image_DequantizeLinear" in line, line
    text = md.read_text(encoding="utf-8")
    expected = 7.0 + 1.0 * (len(after) - 1)
    assert _rows(text, "Regressions" if expected > 10 else "Improvements")[0][:3] == [
        "stem/conv", "Conv", f"10 → {expected:g} µs"]


# ---- the summary in a ~900 px comment -----------------------------------------------------------------------


def _table_widths(markdown: str) -> list[int]:
    """Each table's width in px as GitHub lays a comment out: per column its widest cell (rendered text; 8 px a
    character, a little more than GitHub's 14 px text and 85 % monospace code take) plus 26 px of padding."""
    from markdown_it import MarkdownIt

    widths, columns, cell, in_table = [], {}, None, False
    for token in MarkdownIt("gfm-like").parse(markdown):
        if token.type == "table_open":
            columns, in_table = {}, True
        elif token.type == "table_close":
            widths.append(sum(8 * n + 26 for n in columns.values()))
            in_table = False
        elif token.type == "tr_open":
            cell = 0
        elif token.type in ("th_open", "td_open"):
            cell = (cell or 0) + 1
        elif token.type == "inline" and in_table and cell:
            shown = "".join(c.content for c in token.children or [] if c.type in ("text", "code_inline"))
            columns[cell] = max(columns.get(cell, 0), len(shown))
    return widths


def test_summary_tables_fit_a_pull_request_comment(tmp_path: Path) -> None:
    """bert_scoped (names such as /encoder/layer.11/attention/self/query/MatMul) against its quantize_dynamic
    version: every table of the summary fits a ~900 px comment."""
    md = tmp_path / "bert.md"
    run = run_cli("diff", ONNX / "bert_scoped.onnx", ONNX / "bert_scoped_int8.onnx", "--metric", "macs",
                  "--dim", "batch=1", "--dim", "sequence=16", "-o", tmp_path / "bert.dot", "--summary", md,
                  "--collapse", "none", "--fail-above", "1%", "--min-share", "0", "--summary-rows", "50")
    assert run.returncode == 3, run.stderr
    text = md.read_text(encoding="utf-8")
    widths = _table_widths(text)
    assert len(widths) >= 3 and max(widths) <= COMMENT_PX, widths
    assert "73 by quantized twin" in text
