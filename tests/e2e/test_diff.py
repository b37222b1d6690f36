"""``annograph diff`` on files with known changes: fills on the right side of the map, numbers recomputed from
the values the test wrote, the summary's tables in the right order, and ``--fail-above`` exit codes just under
and just over a threshold. Two-model mode on tiny_cnn and a copy changed with onnx (a node removed, one renamed,
a Conv kernel shrunk)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from conftest import ONNX, ROOT, SVG_NS, first_fill, one_line_error, parse_svg, run_cli, svg_groups, tooltip_of

MODEL = ONNX / "tiny_cnn.onnx"
DIVERGING = json.loads((ROOT / "colormaps" / "diverging.json").read_text(encoding="utf-8"))["colors"]
NA_FILL = "#e6e6e6"

# operator name → (before, after) latency in µs; None: no value on that side
LATENCY: dict[str, tuple[float | None, float | None]] = {
    "stem/conv": (10.0, 15.0),        # +50 %
    "block1/pwconv": (8.0, 10.0),     # +25 %
    "block1/dwconv": (20.0, 16.0),    # -20 %
    "block2/conv": (30.0, 15.0),      # -50 %
    "stem/relu": (4.0, 4.0),          # 0
    "head/fc": (5.0, None),           # only before
    "block1/add": (None, 3.0),        # only after
}
OP_INDEX = {"stem/conv": 0, "stem/relu": 2, "block1/dwconv": 4, "block1/pwconv": 7, "block1/add": 9,
            "block2/conv": 11, "head/fc": 16}


def _write_sides(folder: Path, values: dict[str, tuple[float | None, float | None]], metric: str = "latency_us",
                 meta: dict | None = None) -> tuple[Path, Path]:
    paths = []
    for side in (0, 1):
        doc = {"metrics": meta or {metric: {"unit": "µs"}},
               "operators": [{"id": name, metric: pair[side]} for name, pair in values.items()
                             if pair[side] is not None]}
        path = folder / f"{'before' if side == 0 else 'after'}.json"
        path.write_text(json.dumps(doc), encoding="utf-8")
        paths.append(path)
    return paths[0], paths[1]


def _relative(before: float, after: float) -> float:
    return (after - before) / abs(before) * 100


def _rgb(color: str) -> tuple[int, int, int]:
    return int(color[1:3], 16), int(color[3:5], 16), int(color[5:7], 16)


def _intensity(color: str) -> int:
    """How far a fill is from white: the diverging map's centre is (near) white, its ends dark."""
    return sum(255 - c for c in _rgb(color))


def _warm(color: str) -> bool:
    r, _, b = _rgb(color)
    return r > b + 20


def _cool(color: str) -> bool:
    r, _, b = _rgb(color)
    return b > r + 20


def _texts(group) -> str:  # type: ignore[no-untyped-def]
    text = " ".join(" ".join(t.itertext()) for t in group.iter(f"{SVG_NS}text"))
    return " ".join(text.replace("\xa0", " ").split())


def _dashed(group) -> bool:  # type: ignore[no-untyped-def]
    return any(e.get("stroke-dasharray") for e in group.iter() if e.tag in (f"{SVG_NS}polygon", f"{SVG_NS}path",
                                                                           f"{SVG_NS}polyline"))


def _table(markdown: str, heading: str) -> list[list[str]]:
    """The cells of the first table after ``## heading``."""
    section = markdown.split(f"## {heading}", 1)[1]
    rows = []
    for line in section.splitlines()[1:]:
        if line.startswith("## "):
            break
        if line.startswith("|") and not set(line) <= set("|-: "):
            rows.append([cell.strip().strip("`") for cell in line.strip("|").split("|")])  # names are code spans
    return rows[1:]  # without the header


@pytest.fixture(scope="module")
def known(tmp_path_factory: pytest.TempPathFactory) -> dict:  # type: ignore[type-arg]
    """One run of the command on the known changes: its SVG, summary, stderr and exit code."""
    folder = tmp_path_factory.mktemp("diff")
    before, after = _write_sides(folder, LATENCY)
    svg, md, png = folder / "diff.svg", folder / "diff.md", folder / "diff.png"
    run = run_cli("diff", MODEL, "--before", before, "--after", after, "--metric", "latency_us",
                  "-o", svg, "-o", png, "--summary", md, "--fail-above", "30%")
    return {"run": run, "svg": parse_svg(svg), "md": md.read_text(encoding="utf-8"), "png": png, "folder": folder}


def test_fills_are_warm_for_regressions_cool_for_improvements_and_ordered_by_magnitude(
        known: dict) -> None:  # type: ignore[type-arg]
    ops = svg_groups(known["svg"], "op")
    fill = {name: first_fill(ops[f"op-0-{i}"]) for name, i in OP_INDEX.items()}
    assert _warm(fill["stem/conv"]) and _warm(fill["block1/pwconv"]), fill
    assert _cool(fill["block2/conv"]) and _cool(fill["block1/dwconv"]), fill
    assert _intensity(fill["stem/conv"]) > _intensity(fill["block1/pwconv"]) > _intensity(fill["stem/relu"])
    assert _intensity(fill["block2/conv"]) > _intensity(fill["block1/dwconv"]) > _intensity(fill["stem/relu"])
    # a symmetric range: ±50 % are the two ends of our diverging map, 0 its centre
    assert fill["stem/conv"] == DIVERGING[-1] and fill["block2/conv"] == DIVERGING[0], fill
    centre = _rgb(DIVERGING[len(DIVERGING) // 2])  # the map's middle entry of 256 is a hair off the stop
    assert max(abs(a - b) for a, b in zip(_rgb(fill["stem/relu"]), centre)) <= 2, fill
    # a value on one side only: the n/a fill and a dashed border, said in the box
    for name, side in (("head/fc", "only before"), ("block1/add", "only after")):
        group = ops[f"op-0-{OP_INDEX[name]}"]
        assert fill[name] == NA_FILL and _dashed(group), (name, fill[name])
        assert f"diff: {side}" in _texts(group)
    assert not _dashed(ops["op-0-0"])
    png = known["png"].read_bytes()
    assert png.startswith(b"\x89PNG") and len(png) > 10_000


def test_boxes_and_tooltips_carry_the_recomputed_numbers(known: dict) -> None:  # type: ignore[type-arg]
    ops = svg_groups(known["svg"], "op")
    for name, (before, after) in LATENCY.items():
        group = ops[f"op-0-{OP_INDEX[name]}"]
        text, tip = _texts(group), tooltip_of(group)
        shown_before = "—" if before is None else f"{before:g}"
        shown_after = "—" if after is None else f"{after:g}"
        assert f"before → after: {shown_before} → {shown_after} µs" in text, (name, text)
        if before is None or after is None:
            assert "Δ latency_us: n/a" in text
            continue
        relative = _relative(before, after)
        change = "0" if relative == 0 else f"{relative:+g}%"
        assert f"Δ latency_us: {change}" in text, (name, text)
        assert f"relative change: {change}" in tip, tip
        absolute = after - before
        assert f"absolute change: {'0' if absolute == 0 else f'{absolute:+g}'}" in tip, tip
        assert f"before: {before:g}" in tip and f"after: {after:g}" in tip


def test_legend_lists_the_largest_regressions_and_improvements(known: dict) -> None:  # type: ignore[type-arg]
    legend = _texts(next(g for g in known["svg"].iter(f"{SVG_NS}g") if g.get("id") == "legend"))
    assert "Δ latency_us: before.json → after.json" in legend
    assert re.search(r"worse #1\s+stem/conv \+50% \(10 → 15 µs\)", legend), legend
    assert re.search(r"worse #2\s+block1/pwconv \+25% \(8 → 10 µs\)", legend), legend
    assert re.search(r"better #1\s+block2/conv -50% \(30 → 15 µs\)", legend), legend
    assert re.search(r"better #2\s+block1/dwconv -20% \(20 → 16 µs\)", legend), legend
    assert "worse #3" not in legend and "better #3" not in legend
    assert "2 worse · 2 better · 1 unchanged" in legend and "1 only before · 1 only after" in legend
    befores = [b for b, _ in LATENCY.values() if b is not None]
    afters = [a for _, a in LATENCY.values() if a is not None]
    assert f"{sum(befores):g} → {sum(afters):g} µs" in legend, legend


def test_summary_tables_list_the_right_operators_in_order(known: dict) -> None:  # type: ignore[type-arg]
    md = known["md"]
    assert len(md) < 65_536 and md.endswith("\n") and not md.endswith("\n\n")
    regressions = _table(md, "Regressions")
    assert [(r[0], r[1], r[2], r[3]) for r in regressions] == [
        ("stem/conv", "Conv", "10 → 15 µs", "+50%"), ("block1/pwconv", "Conv", "8 → 10 µs", "+25%")]
    assert [r[4] for r in regressions] == ["+5 µs", "+2 µs"]
    improvements = _table(md, "Improvements")
    assert [(r[0], r[3]) for r in improvements] == [("block2/conv", "-50%"), ("block1/dwconv", "-20%")]
    totals = md.split("| model |", 1)[1].split("\n", 1)[0]
    befores = sum(b for b, _ in LATENCY.values() if b is not None)
    afters = sum(a for _, a in LATENCY.values() if a is not None)
    cells = [c.strip() for c in totals.strip(" |").split("|")]
    assert cells[0] == f"{befores:g} → {afters:g} µs", cells
    assert cells[1] == f"{_relative(befores, afters):+.4g}%" and cells[2] == f"{afters - befores:+.4g} µs", cells
    crossing = _table(md, "Gate")
    assert [r[0] for r in crossing] == ["stem/conv"]
    assert "**1 operator past --fail-above 30%** (operators of at least 1% of the model total)" in md
    assert "1 only before: `head/fc` (`Gemm` 0:16)" in md and "1 only after: `block1/add` (`Add` 0:9)" in md
    assert "pictures: [`diff.svg`](diff.svg), [`diff.png`](diff.png)" in md


def test_fail_above_exit_code_and_stderr(known: dict) -> None:  # type: ignore[type-arg]
    run = known["run"]
    assert run.returncode == 3, run.stderr
    lines = [ln for ln in run.stderr.splitlines() if "--fail-above" in ln]
    assert lines == ["annograph: stem/conv (Conv 0:0): latency_us +50% (10 → 15 µs) is past --fail-above 30%"]


@pytest.mark.parametrize("threshold, code, crossing", [
    ("50.01%", 0, []), ("49.99%", 3, ["stem/conv"]), ("25.01%", 3, ["stem/conv"]),
    ("24.99%", 3, ["stem/conv", "block1/pwconv"]),
    ("5.01", 0, []), ("4.99", 3, ["stem/conv"]), ("1.99", 3, ["stem/conv", "block1/pwconv"]),
])
def test_fail_above_just_under_and_just_over(threshold: str, code: int, crossing: list[str], tmp_path: Path) -> None:
    before, after = _write_sides(tmp_path, LATENCY)
    out, summary = tmp_path / "d.svg", tmp_path / "d.md"
    run = run_cli("diff", MODEL, "--before", before, "--after", after, "--metric", "latency_us", "-o", out,
                  "--summary", summary, "--fail-above", threshold, "-q")
    assert run.returncode == code, run.stderr
    listed = [ln.split(": ", 1)[1].split(" (", 1)[0] for ln in run.stderr.splitlines() if "--fail-above" in ln]
    assert listed == crossing
    assert out.is_file() and summary.is_file()  # written whether or not the gate fails


def test_fail_above_lists_twenty_then_counts(tmp_path: Path) -> None:
    """33 operators of tiny_transformer past the gate: the worst 20 on stderr, worst first, then one count."""
    values = {str(i): (10.0, 11.0 + i) for i in range(33)}
    before, after = _write_sides(tmp_path, values)
    run = run_cli("diff", ONNX / "tiny_transformer.onnx", "--before", before, "--after", after, "--metric",
                  "latency_us", "-o", tmp_path / "d.svg", "--fail-above", "5%", "-q", "--collapse", "none")
    lines = [ln for ln in run.stderr.splitlines() if "--fail-above" in ln]
    assert run.returncode == 3 and len(lines) == 21, run.stderr
    assert [ln.split(": ")[-1].split(" (")[0] for ln in lines[:20]] == [
        f"latency_us +{_relative(10.0, 11.0 + i):.4g}%" for i in range(32, 12, -1)]
    assert lines[20] == "annograph: … and 13 more operators past --fail-above 5%"


def test_higher_is_better_metric_makes_a_drop_the_regression(tmp_path: Path) -> None:
    values = {"stem/conv": (30.0, 20.0), "block2/conv": (30.0, 40.0), "head/fc": (25.0, 25.0)}
    meta = {"sqnr_db": {"unit": "dB", "higher_is_better": True}}
    before, after = _write_sides(tmp_path, values, "sqnr_db", meta)
    out, summary = tmp_path / "q.svg", tmp_path / "q.md"
    run = run_cli("diff", MODEL, "--before", before, "--after", after, "--metric", "sqnr_db", "-o", out,
                  "--summary", summary, "--fail-above", "5", "--change", "absolute")
    assert run.returncode == 3, run.stderr
    assert "stem/conv (Conv 0:0): sqnr_db -10 dB (30 → 20 dB) is past --fail-above 5" in run.stderr
    ops = svg_groups(parse_svg(out), "op")
    assert _warm(first_fill(ops["op-0-0"])) and _cool(first_fill(ops["op-0-11"]))
    assert "higher is better" in summary.read_text(encoding="utf-8")
    assert [r[0] for r in _table(summary.read_text(encoding="utf-8"), "Regressions")] == ["stem/conv"]
    # the command line can say the opposite of the files
    flipped = run_cli("diff", MODEL, "--before", before, "--after", after, "--metric", "sqnr_db", "-o", out,
                      "--lower-is-better", "--fail-above", "5", "--change", "absolute", "-q")
    assert flipped.returncode == 3 and "block2/conv" in flipped.stderr and "stem/conv" not in flipped.stderr


def test_from_zero_and_non_finite_values(tmp_path: Path) -> None:
    """0 → 3 is an infinite relative change at the warm end; a "nan" value is no value."""
    before = tmp_path / "b.yaml"
    after = tmp_path / "a.yaml"
    before.write_text("operators:\n  - {id: stem/conv, latency_us: 0}\n  - {id: block2/conv, latency_us: nan}\n"
                      "  - {id: head/fc, latency_us: 4}\n", encoding="utf-8")
    after.write_text("operators:\n  - {id: stem/conv, latency_us: 3}\n  - {id: block2/conv, latency_us: 5}\n"
                     "  - {id: head/fc, latency_us: 2}\n", encoding="utf-8")
    out = tmp_path / "z.svg"
    run = run_cli("diff", MODEL, "--before", before, "--after", after, "--metric", "latency_us", "-o", out,
                  "--fail-above", "1000%", "-q")
    assert run.returncode == 3 and "stem/conv" in run.stderr and "+inf %" in run.stderr, run.stderr
    ops = svg_groups(parse_svg(out), "op")
    assert first_fill(ops["op-0-0"]) == DIVERGING[-1]
    assert first_fill(ops["op-0-16"]) == DIVERGING[0]  # -50 %, the largest finite change
    assert "diff: only after" in _texts(ops["op-0-11"])


def test_book_of_pages_works(tmp_path: Path) -> None:
    before, after = _write_sides(tmp_path, LATENCY)
    out = tmp_path / "book.svg"
    run = run_cli("diff", MODEL, "--before", before, "--after", after, "--metric", "latency_us", "-o", out,
                  "-o", tmp_path / "book.html", "--collapse", "1", "-q")
    assert run.returncode == 0, run.stderr
    pages = sorted((tmp_path / "book.svg.pages").glob("page-*.svg"))
    assert pages
    fills = {}
    for page in [out, *pages]:
        for key, group in svg_groups(parse_svg(page), "op").items():
            fills[key] = first_fill(group)
    assert len(fills) == 18 and fills["op-0-0"] == DIVERGING[-1] and fills["op-0-11"] == DIVERGING[0], fills
    assert _warm(fills["op-0-7"]) and _cool(fills["op-0-4"])  # on the page of block1
    assert "block1/pwconv" in (tmp_path / "book.html").read_text(encoding="utf-8")


def test_same_input_same_bytes(tmp_path: Path) -> None:
    before, after = _write_sides(tmp_path, LATENCY)
    outputs = []
    for n in (1, 2):
        svg, md = tmp_path / f"{n}.svg", tmp_path / f"{n}.md"
        run_cli("diff", MODEL, "--before", before, "--after", after, "--metric", "latency_us", "-o", svg,
                "--summary", md, "-q", env={"PYTHONHASHSEED": str(n)})
        outputs.append((svg.read_bytes(), md.read_bytes().replace(f"{n}.svg".encode(), b"X")))
    assert outputs[0] == outputs[1]


# ---- two models ----------------------------------------------------------------------------------------------


def _modified_copy(path: Path) -> Path:
    """tiny_cnn with stem/relu removed (its reader rewired), block1/relu1 renamed (its output kept), and block2's
    3×3 Conv made 1×1 (pads 0, so the output shape stays and its MACs drop)."""
    import numpy as np
    import onnx
    from onnx import numpy_helper

    model = onnx.load(str(MODEL))
    graph = model.graph
    relu = next(n for n in graph.node if n.name == "stem/relu")
    for node in graph.node:
        node.input[:] = [relu.input[0] if name == relu.output[0] else name for name in node.input]
    graph.node.remove(relu)
    next(n for n in graph.node if n.name == "block1/relu1").name = "block1/act1"
    conv = next(n for n in graph.node if n.name == "block2/conv")
    weight = next(i for i in graph.initializer if i.name == conv.input[1])
    array = numpy_helper.to_array(weight)[:, :, 1:2, 1:2].copy()
    weight.CopyFrom(numpy_helper.from_array(np.ascontiguousarray(array), weight.name))
    for attribute in conv.attribute:
        if attribute.name == "kernel_shape":
            attribute.ints[:] = [1, 1]
        if attribute.name == "pads":
            attribute.ints[:] = [0, 0, 0, 0]
    del graph.value_info[:]
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path


def test_two_models_match_by_name_then_output_and_show_the_macs_change(tmp_path: Path) -> None:
    changed = _modified_copy(tmp_path / "tiny_cnn_changed.onnx")
    out, summary = tmp_path / "m.svg", tmp_path / "m.md"
    run = run_cli("diff", MODEL, changed, "--metric", "macs", "--change", "absolute", "-o", out,
                  "--summary", summary, "--fail-above", "0")
    assert run.returncode == 0, run.stderr  # fewer MACs: an improvement, nothing crosses
    line = next(ln for ln in run.stderr.splitlines() if "matched" in ln and "tiny_cnn_changed" in ln)
    assert "matched 17/18 operators of tiny_cnn.onnx in tiny_cnn_changed.onnx (16 by name, 1 by output tensor)" \
        in line, line
    assert "1 only before: stem/relu" in line and "only after" not in line
    # block2/conv: 32 output channels of 8×8, 16 input channels; a MAC per weight tap, +1 per output for the bias
    outputs = 32 * 8 * 8
    before_macs, after_macs = outputs * 16 * 3 * 3 + outputs, outputs * 16 * 1 * 1 + outputs
    ops = svg_groups(parse_svg(out), "op")
    conv = next(g for g in ops.values() if "block2/conv" in _texts(g))
    tip = tooltip_of(conv)
    assert f"before: {before_macs / 1000:.3g}k" in tip and f"after: {after_macs / 1000:.3g}k" in tip, tip
    absolute = float(re.search(r"absolute change: (\S+)", tip).group(1))
    assert absolute == pytest.approx(after_macs - before_macs, rel=1e-3)
    assert _cool(first_fill(conv)) and first_fill(conv) == DIVERGING[0]  # the only change: the cool end
    renamed = next(g for g in ops.values() if "block1/act1" in _texts(g))
    assert "before operator: 0:6 in tiny_cnn.onnx" in tooltip_of(renamed)
    improvements = _table(summary.read_text(encoding="utf-8"), "Improvements")
    assert [r[0] for r in improvements] == ["block2/conv"]
    text = summary.read_text(encoding="utf-8")
    assert "1 only before: `stem/relu` (`Relu` 0:2, operator)" in text
    assert "matched 17/18 operators · 16 by name, 1 by output tensor; 1 only before: `stem/relu`" in text


def test_two_models_an_operator_only_after_is_marked(tmp_path: Path) -> None:
    changed = _modified_copy(tmp_path / "changed.onnx")
    out = tmp_path / "r.svg"
    run = run_cli("diff", changed, MODEL, "--metric", "macs", "-o", out)  # reversed: stem/relu is new
    assert run.returncode == 0, run.stderr
    assert "1 only after: stem/relu" in run.stderr
    relu = svg_groups(parse_svg(out), "op")["op-0-2"]
    assert "diff: only after" in _texts(relu) and _dashed(relu) and first_fill(relu) == NA_FILL
    assert "no such operator in changed.onnx" in tooltip_of(relu)


# ---- refusals ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("args, says", [
    (["--before", "B", "--metric", "latency_us"], "--before FILE --after FILE"),
    (["--before", "B", "--after", "A", "--metric", "latency_us", "--fail-above", "ten%"], "--fail-above 'ten%'"),
    (["--before", "B", "--after", "A", "--metric", "latency_us", "--fail-above", "-1"], "--fail-above '-1'"),
    (["--before", "B", "--after", "A", "--metric", "latncy_us"], "did you mean latency_us"),
    (["--before", "B", "--after", "A", "--metric", "latency_us", "-o", "x.txt"], "unknown output extension"),
])
def test_bad_input_is_one_line(args: list[str], says: str, tmp_path: Path) -> None:
    before, after = _write_sides(tmp_path, LATENCY)
    argv = [str(before) if a == "B" else str(after) if a == "A" else a for a in args]
    if "-o" not in argv:
        argv += ["-o", str(tmp_path / "d.svg")]
    error = one_line_error(run_cli("diff", MODEL, *argv))
    assert says in error, error
    assert not (tmp_path / "d.svg").exists()


def test_tflite_operators_pair_by_output_tensor(tmp_path: Path) -> None:
    """TFLite operators have no names: two copies of a model pair every operator by its output tensor, and
    an unchanged metric leaves every box at the centre of the map."""
    model = ROOT / "samples" / "tflite" / "okay_nabu.tflite"
    copy = tmp_path / "copy.tflite"
    copy.write_bytes(model.read_bytes())
    out, summary = tmp_path / "t.svg", tmp_path / "t.md"
    run = run_cli("diff", model, copy, "--metric", "params", "-o", out, "--summary", summary, "--fail-above", "0%")
    assert run.returncode == 0, run.stderr
    from renderer.loaders.registry import load_model

    count = sum(len(g.nodes) for g in load_model(model).graphs)
    line = next(ln for ln in run.stderr.splitlines() if "matched" in ln)
    found = re.search(r"matched (\d+)/(\d+) operators of okay_nabu.tflite in copy.tflite \(0 by name, (\d+) by output "
                      r"tensor, (\d+) by type and inputs\)$", line)
    assert found, line  # CALL_ONCE and ASSIGN_VARIABLE write no tensor: paired by what they read
    matched, total, by_output, by_inputs = map(int, found.groups())
    assert matched == total == count and by_output + by_inputs == count and by_inputs > 0
    assert "0 worse · 0 better" in summary.read_text(encoding="utf-8")
    centre = _rgb(DIVERGING[len(DIVERGING) // 2])
    for group in svg_groups(parse_svg(out), "op").values():
        fill = first_fill(group)
        assert fill is not None and max(abs(a - b) for a, b in zip(_rgb(fill), centre)) <= 2, fill


def test_a_files_border_style_is_drawn_too(tmp_path: Path) -> None:
    """The dashed border the diff gives one-sided boxes is the operator ``style`` any annotation file may set."""
    notes = tmp_path / "n.yaml"
    notes.write_text("operators:\n  - {id: stem/conv, style: {style: dotted}}\n  - {id: head/fc, style: {style: "
                     "'bold,dashed'}}\n", encoding="utf-8")
    out = tmp_path / "s.svg"
    run = run_cli("render", MODEL, "-a", notes, "-o", out, "-q")
    assert run.returncode == 0, run.stderr
    ops = svg_groups(parse_svg(out), "op")
    assert _dashed(ops["op-0-0"]) and _dashed(ops["op-0-16"]) and not _dashed(ops["op-0-2"])


def test_summary_stays_small_for_a_huge_diff() -> None:
    """The worst case for the summary's size: 20,000 operators with 300-character names, half worse and half
    better, every one past the gate, one in ten on one side only, and the largest --summary-rows."""
    from renderer import diff as differ
    from renderer.core.options import SUMMARY_MAX_TOP_K

    changes = []
    for i in range(20_000):
        name = f"@here #12 |`*[] /encoder/layer.{i}/" + "x" * 280
        before, after = 10.0 + i, (20.0 + i if i % 2 else 5.0)
        missing = "" if i % 10 else differ.ONLY_BEFORE
        changes.append(differ.OpChange(("op", 0, i), ("op", 0, i), name, "MatMul" * 20, before,
                                       None if missing else after, missing, bool(missing)))
    diff = differ.Diff("latency_us", "µs", False, True, "a" * 300 + ".json", "b" * 300 + ".json", changes)
    threshold = differ.Threshold(0.0, True)
    gate = differ.GateView(threshold, None, diff.gate(threshold, 0.0))
    text = differ.markdown(diff, gate, ["x.svg"] * 100, SUMMARY_MAX_TOP_K)
    assert len(text) < 65_536 // 2, len(text)
    assert len(_table(text, "Regressions")) == SUMMARY_MAX_TOP_K == len(_table(text, "Improvements"))
    assert "**10000 operators past --fail-above 0%**" in text
    assert "… and 9970 more." in text and "; … and 1980 more" in text
    outside_code = re.sub(r"(`+)(.+?)\1", "", text)
    assert "@here" in text and "@here" not in outside_code and "#12" not in outside_code  # no mention, no link


def test_without_metric_two_models_compare_what_render_colours_by(tmp_path: Path) -> None:
    """No --metric and no annotations: the diff compares built-in MACs, the default heat of ``render``, and
    says so; the pictures are the bytes ``--metric macs`` draws."""
    changed = _modified_copy(tmp_path / "tiny_cnn_changed.onnx")
    default, explicit = tmp_path / "d.svg", tmp_path / "e.svg"
    run = run_cli("diff", MODEL, changed, "-o", default)
    assert run.returncode == 0, run.stderr
    assert ("comparing macs: built in, known for 5 of 5 drawn layer and attention operators; "
            "--metric to choose another") in run.stderr
    assert run_cli("diff", MODEL, changed, "--metric", "macs", "-o", explicit).returncode == 0
    assert default.read_bytes() == explicit.read_bytes()
    several = tmp_path / "two.csv"
    several.write_text("id,latency_us,error\nstem/conv,3,0.5\n", encoding="utf-8")
    refused = run_cli("diff", MODEL, "--before", several, "--after", several, "-o", tmp_path / "x.svg")
    assert refused.returncode == 1 and "diff needs --metric: no default colour metric" in refused.stderr
    assert not (tmp_path / "x.svg").exists()
