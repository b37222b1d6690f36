"""One option vocabulary: the parser is walked, and every option two commands share has one spelling, one default
and one help text; every picture option of ``render`` is offered by ``batch`` and ``diff`` or left out for a
reason they give; the old spellings still work, hidden, with a warning; the options builder takes its defaults
from ``RenderOptions``."""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import json
from pathlib import Path

import pytest

import renderer
from conftest import ONNX, SVG_NS, parse_svg, run_cli, svg_groups, tooltip_of
from renderer.commands.cli import build_parser
from renderer.commands.common import PICTURE_OPTIONS, SHARED
from renderer.core.options import RenderOptions, from_values

OWN_MEANING = {
    ("-o", "--output"): "every command writes its own kind of output: a picture, a folder, a table, a model",
    ("-a", "--annotations"): "batch takes glob patterns (a picture set per file); metrics reads onnxruntime "
                             "profiles only (for their shapes)",
    ("--color-by", "--colour-by"): "batch takes a list of metrics, a picture set each",
    ("--inputs",): "compare runs both models on these values (and offers --random-inputs instead)",
    ("--timeout",): "compare's is the time its two model runs may take, not Graphviz's",
    ("--cmap",): "export's names the gradient of a model-explorer overlay",
    ("--metric",): "diff's names the metric compared; export's the metric a model-explorer overlay carries",
}
"""Option strings two commands give a meaning of their own (each command's help says which), and why."""

WIDENED = {("batch", "color_by"), ("batch", "annotations"), ("metrics", "annotations"), ("compare", "inputs"),
           ("compare", "timeout"), ("export", "cmap"), ("diff", "metric"), ("export", "metric")}
"""(command, dest) of those options: not built from ``SHARED``."""


def _commands() -> dict[str, argparse.ArgumentParser]:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def _visible(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [a for a in parser._actions if a.option_strings and a.help is not argparse.SUPPRESS
            and not isinstance(a, argparse._HelpAction)]


def _description(action: argparse.Action, kind: bool = True) -> str:
    """Everything that makes an option what it is, as text (defaults may be lists); ``kind``: with its class."""
    return repr((tuple(action.option_strings), action.dest, action.default, action.help, action.metavar,
                 action.choices, action.type, action.nargs, action.const, type(action).__name__ if kind else ""))


def test_every_shared_option_has_one_spelling_one_default_one_help() -> None:
    by_flag: dict[str, dict[str, argparse.Action]] = {}
    for name, parser in _commands().items():
        for action in _visible(parser):
            for flag in action.option_strings:
                by_flag.setdefault(flag, {})[name] = action
    shared = {flag: actions for flag, actions in by_flag.items() if len(actions) > 1}
    assert {"--dim", "--show", "--collapse", "--focus", "--summary-rows", "--no-sidecar"} <= set(shared)
    for flag, actions in shared.items():
        if any(flag in flags for flags in OWN_MEANING):
            continue
        descriptions = {name: _description(action) for name, action in actions.items()}
        assert len(set(descriptions.values())) == 1, (flag, descriptions)
        dest = next(iter(actions.values())).dest
        if flag not in ("-q", "--quiet", "-v", "--verbose"):
            assert dest in SHARED, f"{flag}: offered by {sorted(actions)} but not defined once in SHARED"


def test_options_of_their_own_meaning_are_the_listed_ones() -> None:
    """Every shared spelling with several meanings is in OWN_MEANING (with its reason), and no more."""
    seen: dict[str, set[str]] = {}
    for parser in _commands().values():
        for action in _visible(parser):
            for flag in action.option_strings:
                seen.setdefault(flag, set()).add(_description(action))
    several = {flag for flag, meanings in seen.items() if len(meanings) > 1}
    listed = {flag for flags in OWN_MEANING for flag in flags}
    assert several == listed
    assert all(reason.strip() for reason in OWN_MEANING.values())
    for name, parser in _commands().items():
        for action in _visible(parser):
            if action.dest in SHARED and (name, action.dest) not in WIDENED:
                assert _description(action) == _shared_description(action.dest), (name, action.dest)


def _shared_description(dest: str) -> str:
    parser = argparse.ArgumentParser()
    option = SHARED[dest]
    return _description(parser.add_argument(*option.flags, dest=dest, **option.settings))


def test_one_meaning_for_format_and_top() -> None:
    commands = _commands()
    formats = {name for name, p in commands.items() if any("--format" in a.option_strings for a in _visible(p))}
    assert formats == {"render"}
    tops = {name: a.dest for name, p in commands.items() for a in _visible(p) if "--top" in a.option_strings}
    assert tops == {"render": "top", "diff": "top"}
    assert not any("--top-k" in a.option_strings for p in commands.values() for a in _visible(p))


def test_every_long_option_starts_with_two_dashes() -> None:
    for name, parser in _commands().items():
        for action in _visible(parser):
            for flag in action.option_strings:
                assert flag.startswith("--") or len(flag) == 2, (name, flag)


@pytest.mark.parametrize("command", ["batch", "diff"])
def test_every_picture_option_of_render_is_offered_or_left_out_for_a_reason(command: str) -> None:
    left_out = importlib.import_module(f"renderer.commands.{command}").LEFT_OUT
    offered = {a.dest for a in _visible(_commands()[command])}
    render = {a.dest for a in _visible(_commands()["render"])}
    assert set(PICTURE_OPTIONS) <= render
    for dest in PICTURE_OPTIONS:
        assert (dest in offered) != (dest in left_out), (command, dest)
    assert set(left_out) <= set(PICTURE_OPTIONS)
    assert all(len(reason) > 20 for reason in left_out.values())


@pytest.mark.parametrize("command", ["render", "batch", "diff"])
def test_the_options_builder_takes_its_defaults_from_render_options(command: str) -> None:
    """No option given: the command's RenderOptions are RenderOptions() itself."""
    annotations = ["-a", "x.json"] if command == "batch" else []
    args = build_parser().parse_args([command, "m.onnx", "-o", "out/", *annotations])
    assert from_values(vars(args)) == RenderOptions()


def test_the_options_builder_reads_command_line_values_and_field_names() -> None:
    given = {"no_edge_labels": True, "dim": ["batch=1", "seq len=8"], "together": True, "summary_rows": 3,
             "collapse": "2", "show": "latency_ms, macs", "focus": ("a",), "radius": None, "models": ["m.onnx"]}
    options = from_values(given)
    assert options == dataclasses.replace(RenderOptions(), edge_labels=False, dims={"batch": 1, "seq len": 8},
                                          focus_together=True, summary_top_k=3, collapse=2,
                                          show=["latency_ms", "macs"], focus=["a"])
    assert from_values({"edge_labels": False, "show": "none"}) == RenderOptions(edge_labels=False, show=[])


def test_the_notebook_and_sphinx_fields_read_as_the_command_line_reads_them() -> None:
    """``renderer.show(..., collapse="2", show="latency_ms,macs")`` and the directive's options go through the same
    builder as ``annograph render --collapse 2 --show latency_ms,macs``."""
    from renderer.integrations.loading import render_options

    args = build_parser().parse_args(["render", "m.onnx", "--collapse", "2", "--show", "latency_ms,macs",
                                      "--no-edge-labels", "--color-by", "macs"])
    cli = from_values(vars(args))
    fields = render_options(collapse="2", show="latency_ms,macs", edge_labels=False, color_by="macs")
    assert fields == cli
    assert render_options(cli, show="none").show == [] and render_options(cli, collapse="none").collapse == "none"
    with pytest.raises(renderer.AnnographError, match="unknown render option 'colour'"):
        render_options(colour="macs")


@pytest.mark.parametrize(("command", "old", "new"), [
    (["diff", "m.onnx", "--after", "b.json", "-o", "d.svg"], ["-a-before", "a.json"], ["--before", "a.json"]),
    (["diff", "m.onnx", "--before", "a.json", "-o", "d.svg"], ["-a-after", "b.json"], ["--after", "b.json"]),
    (["render", "m.onnx"], ["--top-k", "4"], ["--summary-rows", "4"]),
    (["diff", "m.onnx", "-o", "d.svg"], ["--top-k", "4"], ["--summary-rows", "4"]),
    (["metrics", "m.onnx", "-o", "m.txt"], ["--format", "csv"], ["--table-format", "csv"]),
], ids=["a-before", "a-after", "render-top-k", "diff-top-k", "metrics-format"])
def test_old_spellings_still_work_hidden_with_a_warning(command: list[str], old: list[str], new: list[str],
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    parser = build_parser()
    assert vars(parser.parse_args([*command, *old])) == vars(parser.parse_args([*command, *new]))
    assert f"{old[0]} is deprecated and will be removed; use {new[0]}" in capsys.readouterr().err
    help_text = parser._subparsers._group_actions[0].choices[command[0]].format_help()  # type: ignore[union-attr]
    assert f"{old[0]} " not in help_text and new[0] in help_text


def test_an_old_spelling_runs_the_command(tmp_path: Path) -> None:
    before, after = _sides(tmp_path, {0: (10, 20)})
    out = tmp_path / "d.svg"
    run = run_cli("diff", ONNX / "tiny_cnn.onnx", "-a-before", before, "-a-after", after, "-o", out, "-q")
    assert run.returncode == 0, run.stderr
    assert run.stderr.count("is deprecated") == 2
    assert len(svg_groups(parse_svg(out), "op")) > 5


# --- the options batch and diff offer now reach their pictures -------------------------------------------------


def _sides(folder: Path, values: dict[int, tuple[float, float]]) -> tuple[Path, Path]:
    paths = []
    for side in (0, 1):
        doc = {"metrics": {"latency_us": {"unit": "µs"}},
               "operators": [{"id": key, "latency_us": pair[side]} for key, pair in values.items()]}
        path = folder / f"{'before' if side == 0 else 'after'}.json"
        path.write_text(json.dumps(doc), encoding="utf-8")
        paths.append(path)
    return paths[0], paths[1]


@pytest.fixture(scope="module")
def cnn_sides(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Latencies of every tiny_cnn operator before and after: operator N changes by N·10 %."""
    import renderer

    model = renderer.load_model(str(ONNX / "tiny_cnn.onnx"))
    values = {node.index: (100.0, 100.0 + 10 * node.index) for node in model.nodes()}
    return _sides(tmp_path_factory.mktemp("sides"), values)


def _diff(tmp_path: Path, sides: tuple[Path, Path], *options: str, model: Path = ONNX / "tiny_cnn.onnx") -> Path:
    out = tmp_path / "d.svg"
    run = run_cli("diff", model, "--before", sides[0], "--after", sides[1], "-o", out, "-q",
                  *options)
    assert run.returncode == 0, run.stderr
    return out


def _box_texts(path: Path) -> list[list[str]]:
    return [[t.text or "" for t in g.iter(f"{SVG_NS}text")] for g in svg_groups(parse_svg(path), "op").values()]


def test_diff_show_lists_the_values_asked_for(tmp_path: Path, cnn_sides: tuple[Path, Path]) -> None:
    default = _box_texts(_diff(tmp_path, cnn_sides))
    assert any(any("before → after" in t for t in box) for box in default)
    chosen = _box_texts(_diff(tmp_path, cnn_sides, "--show", "before,after"))
    assert len(chosen) == len(default)
    assert not any(any("before → after" in t for t in box) for box in chosen)
    assert sum(any(t.startswith("before") for t in box) and any(t.startswith("after") for t in box)
               for box in chosen) >= 10
    bare = _box_texts(_diff(tmp_path, cnn_sides, "--show", "none"))
    assert sum(map(len, bare)) < sum(map(len, default))


def test_diff_focus_and_radius_draw_one_neighbourhood(tmp_path: Path, cnn_sides: tuple[Path, Path]) -> None:
    whole = len(svg_groups(parse_svg(_diff(tmp_path, cnn_sides, "--collapse", "none")), "op"))
    out = _diff(tmp_path, cnn_sides, "--focus", "4", "--radius", "0")
    pages = sorted((tmp_path / "d.svg.pages").glob("*.svg")) or [out]
    focused = {k for page in pages for k in svg_groups(parse_svg(page), "op")}
    assert focused == {"op-0-4"} and whole > 10
    wider = _diff(tmp_path, cnn_sides, "--focus", "4", "--radius", "1", "--together")
    assert 1 < len(svg_groups(parse_svg(wider), "op")) < whole


def test_diff_top_draws_the_largest_changes(tmp_path: Path, cnn_sides: tuple[Path, Path]) -> None:
    import renderer

    last = max(node.index for node in renderer.load_model(str(ONNX / "tiny_cnn.onnx")).nodes())
    out = _diff(tmp_path, cnn_sides, "--top", "1", "--radius", "0")
    drawn = {k for page in [out, *(tmp_path / "d.svg.pages").glob("*.svg")] for k in svg_groups(parse_svg(page), "op")}
    assert drawn == {f"op-0-{last}"}  # operator N changed by N·10 %: the last one the most


def test_diff_aggregate_sets_the_rule_of_group_boxes(tmp_path: Path, cnn_sides: tuple[Path, Path]) -> None:
    def group_tips(*options: str) -> list[str]:
        out = _diff(tmp_path, cnn_sides, "--collapse", "1", *options)
        return [tooltip_of(g) for g in parse_svg(out).iter(f"{SVG_NS}g") if (g.get("id") or "").startswith("a_box-")]

    default, mean, largest = group_tips(), group_tips("--aggregate", "mean"), group_tips("--aggregate", "max")
    assert default and default == mean != largest  # relative changes average by default


def test_diff_max_tensor_elements_skips_weight_statistics(tmp_path: Path, cnn_sides: tuple[Path, Path]) -> None:
    """Weight statistics listed with --show are skipped for tensors over --max-tensor-elements, as render does."""
    def listed(*options: str) -> list[str]:
        out = _diff(tmp_path, cnn_sides, "--show", "weight_std", *options, model=ONNX / "light_squeezenet.onnx")
        return ["".join(box[box.index(t):box.index(t) + 2]) for box in _box_texts(out) for t in box
                if t.startswith("weight_std")]  # the key, then its value

    full, skipped = listed(), listed("--max-tensor-elements", "1000")
    assert len(full) == len(skipped) > 10
    assert not any("skipped" in t for t in full)
    assert sum("skipped" in t for t in skipped) > 10


def _batch(tmp_path: Path, model: Path, run: Path, *options: str) -> Path:
    out = tmp_path / "out"
    done = run_cli("batch", model, "-a", run, "-o", out, "--jobs", "1", "-q", *options)
    assert done.returncode == 0, done.stderr
    return out


def _latency_run(folder: Path) -> Path:
    import renderer

    model = renderer.load_model(str(ONNX / "tiny_cnn.onnx"))
    run = folder / "run.csv"
    run.write_text("id,latency_us\n" + "".join(f"0:{n.index},{1 + n.index}\n" for n in model.nodes()))
    return run


def test_batch_collapse_and_aggregate_reach_the_pictures(tmp_path: Path) -> None:
    run = _latency_run(tmp_path)
    flat = _batch(tmp_path / "a", ONNX / "tiny_cnn.onnx", run)
    assert not list(flat.glob("*.pages"))
    paged = _batch(tmp_path / "b", ONNX / "tiny_cnn.onnx", run, "--collapse", "1")
    assert len(list(paged.glob("*.pages/*.svg"))) >= 1
    largest = _batch(tmp_path / "c", ONNX / "tiny_cnn.onnx", run, "--collapse", "1", "--aggregate", "max")

    def group_tips(folder: Path) -> list[str]:
        picture = next(folder.glob("*.svg"))
        return [tooltip_of(g) for g in parse_svg(picture).iter(f"{SVG_NS}g")
                if (g.get("id") or "").startswith("a_box-")]

    summed, maxed = group_tips(paged), group_tips(largest)
    assert summed and maxed and summed != maxed
    assert any("latency_us max" in tip for tip in maxed) and not any("latency_us max" in tip for tip in summed)


def test_batch_no_sidecar_leaves_the_sidecar_out(tmp_path: Path) -> None:
    model = tmp_path / "m.onnx"
    model.write_bytes((ONNX / "tiny_cnn.onnx").read_bytes())
    (tmp_path / "m.annotations.json").write_text(json.dumps({"operators": [{"id": "0:0", "note_ms": 7.5}]}))
    run = _latency_run(tmp_path)

    def values(*options: str) -> list[str]:
        out = _batch(tmp_path / f"out{len(options)}", model, run, "--color-by", "note_ms", *options)
        picture = next(out.glob("*.svg"))
        return [tooltip_of(g) for g in svg_groups(parse_svg(picture), "op").values() if "note_ms: 7.5" in tooltip_of(g)]

    assert len(values()) == 1
    assert values("--no-sidecar") == []
