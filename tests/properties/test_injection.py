"""Hostile names, titles and annotation text through every input field and every output format.

Each payload of ``tests/support/payloads.py`` is put into every string field of an ONNX model (built with
onnx.helper), of a TFLite model (built with the flatbuffers builder, and patched into the real
okay_nabu.tflite), into annotation ids, keys, values, graph title and meta in every generic syntax and in
the injection file of every reader in ``tests/support/registry.py``, and into ``--title``; the outputs of every format
and the extra outputs of ``registry.OUTPUTS`` (the PR summary) are then parsed: SVG with defusedxml, HTML with
html.parser, DOT by the real ``dot``, Markdown by markdown-it-py (as GitHub reads a comment), and
must carry no script, event handler, foreign object or javascript:/data: link, while short payloads show
up as literal text.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

import payloads as P
import registry
from conftest import ONNX, one_line_error, run_cli

FORMATS = P.output_formats()
# Graphviz re-renderings of the checked DOT into binary formats: once per model (test_every_format_*), not
# once per payload. Any other format, including ones added later, is checked for every payload.
RASTER = {"pdf", "png"}
PER_PAYLOAD = [f for f in FORMATS if f not in RASTER]
SHORT = {p.name for p in P.SHORT_PAYLOADS}


def _normal(text: str) -> str:
    return " ".join(text.replace("\xa0", " ").split())


def render_all(model, annotations, options, folder: Path, formats: list[str]) -> dict[str, bytes]:  # type: ignore[no-untyped-def]
    from renderer.compose.rendering import render

    outputs = [folder / f"out{P.extension(fmt)}" for fmt in formats]
    render(model, annotations, options, output=outputs)
    return {fmt: path.read_bytes() for fmt, path in zip(formats, outputs)}


def check_all(outputs: dict[str, bytes], folder: Path, literal: str | None) -> None:
    """Every output passes its checks; ``literal`` (when given) is visible in each format that has text."""
    for fmt, data in outputs.items():
        text = P.check_output(fmt, data, folder)
        if literal is not None and text is not None:
            assert _normal(literal) in _normal(text), f"{literal!r} is not shown literally in the {fmt} output"


def hostile_annotations(text: str, model, folder: Path, ids: list[str]):  # type: ignore[no-untyped-def]
    from renderer.annotations.embedded import from_model
    from renderer.annotations.registry import load_annotations

    files = [P.annotation_file(text, syntax, folder, ids) for syntax in P.GENERIC_SYNTAXES]
    files += [path for _, path in P.injected_reader_files(text, folder)]
    return load_annotations(files, model, extra=from_model(model))


def _options(text: str):  # type: ignore[no-untyped-def]
    from renderer.core.options import RenderOptions

    return RenderOptions(title=text, color_by="latency_ms", show=["all"], edge_by="bytes")


# ---- every field of every input, every text output ---------------------------------------------------------


@pytest.mark.parametrize("payload", P.PAYLOADS, ids=[p.name for p in P.PAYLOADS])
def test_onnx_fields(payload: P.Payload, tmp_path: Path) -> None:
    from renderer.loaders.registry import load_model

    model = load_model(P.hostile_onnx(payload.text, tmp_path / "hostile.onnx"))
    first = model.main.nodes[0]
    assert first.name == payload.text and model.main.name == payload.text
    assert model.metadata.get("plain") == payload.text and first.metadata
    assert model.main.nodes[2].attributes["note"] == payload.text
    annotations = hostile_annotations(payload.text, model, tmp_path, ids=["0", "0:1"])
    assert annotations.ops, "no annotation matched: the payload id should match the node named by it"
    outputs = render_all(model, annotations, _options(payload.text), tmp_path, PER_PAYLOAD)
    check_all(outputs, tmp_path, payload.text if payload.name in SHORT else None)


@pytest.mark.parametrize("payload", P.PAYLOADS, ids=[p.name for p in P.PAYLOADS])
def test_tflite_fields(payload: P.Payload, tmp_path: Path) -> None:
    from renderer.loaders.registry import load_model

    path = tmp_path / "hostile.tflite"
    path.write_bytes(P.hostile_tflite(payload.text))
    model = load_model(path)
    assert model.main.values[1].name == payload.text and model.main.name == payload.text
    assert model.main.nodes[2].op_type == (payload.text or "Custom") and payload.text in model.metadata
    annotations = hostile_annotations(payload.text, model, tmp_path, ids=["0", "0:1"])
    outputs = render_all(model, annotations, _options(payload.text), tmp_path, PER_PAYLOAD)
    check_all(outputs, tmp_path, payload.text if payload.name in SHORT else None)


def _hostile_engine(text: str, folder: Path) -> tuple[Path, Path]:
    """A TensorRT layer graph carrying ``text`` in its layer names (fused), types, tensor names, formats, fields
    and ONNX Metadata, and a trtexec profile of it naming the layers."""
    import json

    port = {"Name": text, "Dimensions": [1, 4], "Format/Datatype": f"{text} FP32", "Location": text}
    layers = [{"Name": f"{text} + {text} + PWN({text})", "LayerType": text, "ParameterType": "Convolution",
               "Inputs": [port], "Outputs": [{**port, "Name": f"{text}/out"}], "TacticName": text, text: text,
               "Weights": {"Type": text, "Count": 4}, "Metadata": f"[ONNX Layer: {text}]\x1f[ONNX Layer: x]"},
              {"Name": text, "LayerType": "Reformat", "Inputs": [{**port, "Name": f"{text}/out"}],
               "Outputs": [{**port, "Name": "y"}]}]
    graph = folder / "hostile.graph.json"
    graph.write_text(json.dumps({"Layers": layers, "Bindings": [text, "y"]}), encoding="utf-8")
    rows = [{"count": 10}] + [{"name": layer["Name"], "timeMs": 1.0, "averageMs": 0.1, "medianMs": 0.1,
                               "percentage": 50.0} for layer in layers]
    profile = folder / "hostile.profile.json"
    profile.write_text(json.dumps(rows), encoding="utf-8")
    return graph, profile


@pytest.mark.parametrize("payload", P.PAYLOADS, ids=[p.name for p in P.PAYLOADS])
def test_tensorrt_fields(payload: P.Payload, tmp_path: Path) -> None:
    from renderer.annotations.registry import load_annotations
    from renderer.loaders.registry import load_model

    graph, profile = _hostile_engine(payload.text, tmp_path)
    model = load_model(graph)
    assert model.format == "tensorrt" and model.main.nodes[1].name == payload.text
    annotations = load_annotations(profile, model, embedded=False)
    assert len(annotations.ops) == 2, "the profile's layers should land on the hostile layers"
    from renderer.core.options import RenderOptions

    options = RenderOptions(title=payload.text, color_by="average_ms", show=["all"], edge_by="bytes")
    outputs = render_all(model, annotations, options, tmp_path, PER_PAYLOAD)
    check_all(outputs, tmp_path, payload.text if payload.name in SHORT else None)


@pytest.mark.parametrize("payload", P.PAYLOADS, ids=[p.name for p in P.PAYLOADS])
def test_openvino_ir_fields(payload: P.Payload, tmp_path: Path) -> None:
    """An OpenVINO IR with ``payload`` in its names, a layer's type and its data (``openvino_models``)."""
    import struct

    from openvino_models import hostile_net, xml_text
    from renderer.core.options import RenderOptions
    from renderer.loaders.registry import load_model

    path = tmp_path / "hostile.xml"
    path.write_bytes(hostile_net(payload.text))
    path.with_suffix(".bin").write_bytes(struct.pack("<4f", 1, 0, 0, 2))
    model = load_model(path)
    assert model.format == "openvino" and len(model.main.nodes) == 2
    options = RenderOptions(title=payload.text, show=["all"], edge_by="bytes", show_constants=True)
    outputs = render_all(model, None, options, tmp_path, PER_PAYLOAD)
    literal = payload.name in SHORT and xml_text(payload.text) == payload.text
    check_all(outputs, tmp_path, payload.text if literal else None)


@pytest.mark.parametrize("payload", P.PAYLOADS, ids=[p.name for p in P.PAYLOADS])
def test_openvino_exec_graph_fields(payload: P.Payload, tmp_path: Path) -> None:
    """An OpenVINO execution graph with ``payload`` in its names, a primitive's type, originalLayersNames and
    primitiveType, coloured by its own times."""
    from openvino_models import hostile_net, xml_text
    from renderer.annotations.registry import load_annotations
    from renderer.core.options import RenderOptions
    from renderer.loaders.registry import load_model

    path = tmp_path / "hostile.exec.xml"
    path.write_bytes(hostile_net(payload.text, executed=True))
    model = load_model(path)
    assert model.format == "openvino-exec" and len(model.main.nodes) == 2
    annotations = load_annotations([], model, sidecar=False)
    assert len(annotations.ops) == 2, "each primitive's execTimeMcs should be its annotation"
    options = RenderOptions(title=payload.text, color_by="exec_time_us", show=["all"], edge_by="bytes")
    outputs = render_all(model, annotations, options, tmp_path, PER_PAYLOAD)
    literal = payload.name in SHORT and xml_text(payload.text) == payload.text
    check_all(outputs, tmp_path, payload.text if literal else None)


@pytest.mark.parametrize("payload", P.PAYLOADS, ids=[p.name for p in P.PAYLOADS])
def test_executorch_etrecord_fields(payload: P.Payload, tmp_path: Path) -> None:
    """An ExecuTorch program given an ETRecord (``--etrecord``) with ``payload`` in its node names, argument names,
    module paths and source lines: every output passes its checks, and a render from the layout cache (the
    second) is the bytes of a first and of one without the cache."""
    from renderer.core.options import RenderOptions
    from renderer.loaders.executorch.etrecord import MAX_NAME_CHARS
    from renderer.loaders.registry import load_model

    record = P.hostile_etrecord(payload.text, tmp_path / "hostile.etrecord")
    model = load_model(P.FIXTURES / "executorch" / "portable.pte", etrecord=record)
    assert [n.name for n in model.main.nodes][:2] == [f"{payload.text}{i}"[:MAX_NAME_CHARS] for i in (0, 1)]
    outputs = []
    for k, cache in enumerate((str(tmp_path / "cache"), str(tmp_path / "cache"), "")):
        (tmp_path / str(k)).mkdir()
        options = RenderOptions(title=payload.text, show=["all"], edge_by="bytes", layout_cache=cache)
        outputs.append(render_all(model, None, options, tmp_path / str(k), PER_PAYLOAD))
    assert outputs[0] == outputs[1] == outputs[2]
    check_all(outputs[0], tmp_path, payload.text if payload.name in SHORT else None)


def test_every_tool_reader_has_an_inject_hook_that_matches(tmp_path: Path) -> None:
    """Each tool reader's injection file (``tests/support/registry.py``) is detected as its own format and names an
    operator of the hostile model (ONNX, or TFLite when the reader's registry model is), so the injected strings
    really reach the outputs."""
    from renderer.annotations.registry import load_annotations
    from renderer.loaders.registry import load_model

    text = "<b>x</b>"
    models = {".onnx": load_model(P.hostile_onnx(text, tmp_path / "hostile.onnx"))}
    (tmp_path / "hostile.tflite").write_bytes(P.hostile_tflite(text))
    models[".tflite"] = load_model(tmp_path / "hostile.tflite")
    (tmp_path / "hostile.pte").write_bytes(P.hostile_pte(text))
    models[".pte"] = load_model(tmp_path / "hostile.pte")
    readers = [m for m in P.reader_modules() if not P.is_fallback(m)]
    assert readers and not [m.NAME for m in readers if not callable(registry.reader(m).inject)]
    files = dict(P.injected_reader_files(text, tmp_path))
    for module in readers:
        annotations = load_annotations(files[module], models[P.reader_model(module).suffix], embedded=False)
        assert [c.source for c in annotations.coverage] == [module.NAME], (module.NAME, annotations.coverage)
        assert annotations.ops, f"{module.NAME}: the injection file matched no operator"


@pytest.mark.parametrize("payload", P.SHORT_PAYLOADS + (P.payload("controls"), P.payload("rtl-override"),
                                                        P.payload("xml-forbidden")),
                         ids=lambda p: p.name)
def test_title_and_annotations_through_the_command(payload: P.Payload, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    """``--title`` and a hostile annotation file as a user passes them (argument parsing included), outputs
    written by the command. In-process for speed; test_title_through_a_subprocess runs the real thing once."""
    from renderer.commands.cli import main

    annotation = P.annotation_file(payload.text, "yaml", tmp_path, ids=["stem/conv"])
    outputs = [tmp_path / f"out{P.extension(fmt)}" for fmt in PER_PAYLOAD]
    extra, extra_args = _extra_outputs(tmp_path)
    code = main(["render", str(ONNX / "tiny_cnn.onnx"), "-a", str(annotation), f"--title={P.for_cli(payload.text)}",
                 "--color-by", "latency_ms", "-q", *[a for o in outputs for a in ("-o", str(o))], *extra_args])
    assert code == 0, capsys.readouterr().err
    check_all({fmt: o.read_bytes() for fmt, o in zip(PER_PAYLOAD, outputs)}, tmp_path,
              payload.text if payload.name in SHORT else None)
    for name, (path, fmt) in extra.items():
        text = P.check_output(fmt, path.read_bytes(), tmp_path)
        if payload.name in SHORT and text is not None:
            assert _normal(payload.text) in _normal(text), f"{payload.text!r} is not shown literally in {name}"


def _extra_outputs(folder: Path) -> tuple[dict[str, tuple[Path, str]], list[str]]:
    """Each output of ``registry.OUTPUTS`` (written by its own option): name → (path, format), and the
    arguments writing them all."""
    paths = {name: (folder / f"out-{name}{entry.suffix}", entry.fmt) for name, entry in registry.OUTPUTS.items()}
    return paths, [a for name, entry in registry.OUTPUTS.items() for a in entry.args(str(paths[name][0]))]


@pytest.mark.parametrize("payload", P.SHORT_PAYLOADS + (P.payload("controls"), P.payload("rtl-override"),
                                                        P.payload("xml-forbidden"), P.payload("big")),
                         ids=lambda p: p.name)
@pytest.mark.parametrize("command", sorted(registry.COMMANDS))
def test_commands_of_the_registry_show_hostile_text_literally(command: str, payload: P.Payload, tmp_path: Path,
                                                              capsys) -> None:  # type: ignore[no-untyped-def]
    """Each command of ``registry.COMMANDS`` run on its hostile inputs: every output passes its format's checks
    and shows a short payload as written; stderr stays one line per message."""
    from renderer.commands.cli import main

    argv, outputs = registry.COMMANDS[command].inject(payload.text, tmp_path)
    code = main(argv)
    err = capsys.readouterr().err
    assert code in (0, 3), err
    assert "Traceback" not in err and all(line.startswith("annograph: ") for line in err.splitlines()), err
    for path in outputs:
        by_suffix = {".md": "md", ".svg": "svg", ".html": "html", ".dot": "dot"}
        fmt = "sheet" if path.name == "index.html" else by_suffix[path.suffix]
        text = P.check_output(fmt, path.read_bytes(), tmp_path)
        if payload.name in SHORT and text is not None:
            assert _normal(payload.text) in _normal(text), f"{payload.text!r} is not shown literally in {path.name}"


def test_title_through_a_subprocess(tmp_path: Path) -> None:
    title = "".join(p.text for p in P.SHORT_PAYLOADS[:4])
    outputs = [tmp_path / f"out{P.extension(fmt)}" for fmt in PER_PAYLOAD]
    extra, extra_args = _extra_outputs(tmp_path)
    run = run_cli("render", ONNX / "tiny_cnn.onnx", f"--title={title}", "-q", *[a for o in outputs for a in ("-o", o)],
                  *extra_args)
    assert run.returncode == 0 and "Traceback" not in run.stderr, run.stderr
    check_all({fmt: o.read_bytes() for fmt, o in zip(PER_PAYLOAD, outputs)}, tmp_path, None)
    for path, fmt in extra.values():
        P.check_output(fmt, path.read_bytes(), tmp_path)
    svg_text = "\n".join(P.svg_texts(P.check_svg((tmp_path / "out.svg").read_bytes())))
    assert _normal(P.SHORT_PAYLOADS[0].text) in _normal(svg_text)


# ---- every output format, pdf and png included --------------------------------------------------------------


def _all_payload_annotations(model, folder: Path):  # type: ignore[no-untyped-def]
    """One file per generic syntax holding every payload as an id, key and value."""
    from renderer.annotations.embedded import from_model
    from renderer.annotations.registry import load_annotations

    files = []
    for syntax in P.GENERIC_SYNTAXES:
        for k, p in enumerate(P.PAYLOADS):
            sub = folder / f"{syntax}-{k}"
            sub.mkdir()
            files.append(P.annotation_file(p.text, syntax, sub, ids=[str(k)]))
    return load_annotations(files, model, extra=from_model(model))


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["onnx", "tflite-sample"])
def test_every_format_with_every_payload(kind: str, tmp_path: Path) -> None:
    """A model carrying all payloads at once (ONNX built; the real okay_nabu.tflite with its tensor names
    overwritten in place), rendered to every registered output format."""
    from renderer.core.options import RenderOptions
    from renderer.loaders.registry import load_model

    if kind == "onnx":
        model = load_model(P.combined_onnx(tmp_path / "all.onnx"))
        assert [n.name for n in model.main.nodes] == [p.text for p in P.PAYLOADS]
    else:
        path = tmp_path / "nabu.tflite"
        path.write_bytes(P.patch_tflite_names(P.NABU.read_bytes(), [p.text for p in P.PAYLOADS]))
        model = load_model(path)
        original = load_model(P.NABU)
        assert len(model.nodes()) == len(original.nodes())
        assert [v.name for v in model.values()] != [v.name for v in original.values()]
    annotations = _all_payload_annotations(model, tmp_path)
    title = "".join(p.text for p in P.SHORT_PAYLOADS)
    outputs = render_all(model, annotations, RenderOptions(title=title, color_by="latency_ms", show=["all"]),
                         tmp_path, FORMATS)
    assert set(outputs) == set(FORMATS)
    for fmt, data in outputs.items():
        assert data, fmt
        P.check_output(fmt, data, tmp_path)
        if fmt in RASTER:
            P.check_binary(fmt, data)


@pytest.mark.parametrize("payload", P.PAYLOADS, ids=[p.name for p in P.PAYLOADS])
def test_tflite_sample_with_patched_names(payload: P.Payload, tmp_path: Path) -> None:
    """The real okay_nabu.tflite with every tensor name overwritten in place by the payload."""
    from renderer.loaders.registry import load_model

    path = tmp_path / "nabu.tflite"
    path.write_bytes(P.patch_tflite_names(P.NABU.read_bytes(), payload.text))
    model = load_model(path)
    prefix = payload.text.encode()[:4].decode("utf-8", "ignore")
    assert all(v.name.startswith(prefix) for v in model.values() if len(v.name) > 6)
    from renderer.core.options import RenderOptions

    outputs = render_all(model, None, RenderOptions(title=payload.text), tmp_path, ["svg", "dot"])
    check_all(outputs, tmp_path, None)


# ---- the escaping rules, against the real Graphviz ----------------------------------------------------------


# (name, input, text shown in a label, hover text of a two-line tooltip of the input twice), written out by
# hand: the expected text must not come from the functions under test.
ESCAPE_CASES = [
    ("plain", "conv1/Relu:0", "conv1/Relu:0", "conv1/Relu:0\nconv1/Relu:0"),
    ("markup", '<b onclick="x">&amp;</b>', '<b onclick="x">&amp;</b>',
     '<b onclick="x">&amp;</b>\n<b onclick="x">&amp;</b>'),
    ("escstring", r"\N \G \L \\ \n", r"\N \G \L \\ \n", "\\N \\G \\L \\\\ \\n\n\\N \\G \\L \\\\ \\n"),
    ("quotes", "say \"hi\" 'x'", "say \"hi\" 'x'", "say \"hi\" 'x'\nsay \"hi\" 'x'"),
    ("controls", "a\x00b\x1bc\x7fd\x85e", r"a\x00b\x1bc\x7fd\x85e",
     "a\\x00b\\x1bc\\x7fd\\x85e\na\\x00b\\x1bc\\x7fd\\x85e"),
    ("bidi", "ab\u202ecd\u200be\ufeff", "ab<U+202E>cd<U+200B>e<U+FEFF>",
     "ab<U+202E>cd<U+200B>e<U+FEFF>\nab<U+202E>cd<U+200B>e<U+FEFF>"),
    ("tab-newline", "a\tb\nc\r\nd", "a b c d", "a b\nc\nd\na b\nc\nd"),
    ("surrogate", "x\ud800y", "x\ufffdy", "x\ufffdy\nx\ufffdy"),
    ("unicode", "名前 ☃ é", "名前 ☃ é", "名前 ☃ é\n名前 ☃ é"),
    ("long", "x" * 450, "x" * 399 + "…", "x" * 450 + "\n" + "x" * 450),
]


@pytest.mark.parametrize("case", ESCAPE_CASES, ids=[c[0] for c in ESCAPE_CASES])
def test_escape_rules_show_text_as_written_in_dot_output(case: tuple[str, str, str, str]) -> None:
    """html_text, attr and tooltip, as the real ``dot`` reads them, against texts written out here."""
    import graphviz

    from renderer.core import escape

    _, text, shown, hover = case
    one_line = re.sub(r"[\r\n]+", " ", text)  # a plain label breaks lines at newlines, on purpose
    dot = graphviz.Digraph("G")
    dot.node("h", label=escape.html_label(f"<B>{escape.html_text(text, 400)}</B>"), shape="plain", id="h",
             tooltip=escape.tooltip([text, text]))
    dot.node("a", label=escape.attr(one_line, 400), id="a", tooltip=escape.tooltip(["x"]))
    done = subprocess.run(["dot", "-Tsvg"], input=dot.source.encode(), capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr.decode()[:500]
    root = P.check_svg(done.stdout)
    ns = "{http://www.w3.org/2000/svg}"
    groups = {g.get("id"): g for g in root.iter(f"{ns}g")}
    for key in ("h", "a"):
        label = "".join(t.text or "" for t in groups[key].iter(f"{ns}text"))
        assert _normal(label) == _normal(shown), (key, label, shown)
    titles = [v for e in groups["h"].iter() for n, v in e.attrib.items() if n.endswith("}title")]
    assert titles and titles[0].replace("\xa0", " ") == hover, (titles[:1], hover)  # runs of spaces: nbsp


def test_escape_rules_keep_every_payload_as_clean_text_through_dot(tmp_path: Path) -> None:
    """Every payload, through html_text, attr and tooltip and the real ``dot``: the SVG shows what
    ``escape.clean`` makes of it, so the destinations add or lose nothing (``clean`` itself is checked
    against written-out texts by the test above)."""
    import graphviz

    from renderer.core import escape

    dot = graphviz.Digraph("G")
    expected: dict[str, str] = {}
    for k, p in enumerate(P.PAYLOADS):
        text = p.text[:300]
        dot.node(f"h{k}", label=escape.html_label(f"<B>{escape.html_text(text, 400)}</B>"), shape="plain",
                 id=f"h{k}", tooltip=escape.tooltip([text, text]))
        one_line = re.sub(r"[\r\n]", " ", text)  # a plain label breaks lines at newlines, on purpose
        dot.node(f"a{k}", label=escape.attr(one_line, 400), id=f"a{k}", tooltip=escape.tooltip(["x"]))
        expected[f"h{k}"] = escape.clean(text, 400)
        expected[f"h{k}-tip"] = escape.clean("\n".join([text, text]), 4000, newlines=True)
        expected[f"a{k}"] = escape.clean(one_line, 400)
    done = subprocess.run(["dot", "-Tsvg"], input=dot.source.encode(), capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr.decode()[:500]
    root = P.check_svg(done.stdout)
    ns = "{http://www.w3.org/2000/svg}"
    groups = {g.get("id"): g for g in root.iter(f"{ns}g")}
    for key, text in expected.items():
        group = groups[key.removesuffix("-tip")]
        if key.endswith("-tip"):
            titles = [v for e in group.iter() for n, v in e.attrib.items() if n.endswith("}title")]
            assert titles and titles[0].replace("\xa0", " ") == text, (key, titles[:1], text)  # runs of spaces: nbsp
        else:
            shown = "".join(t.text or "" for t in group.iter(f"{ns}text"))
            assert _normal(shown) == _normal(text), (key, shown, text)


def test_characters_xml_forbids_are_replaced() -> None:
    """U+FFFE and U+FFFF (and lone surrogates) are not XML 1.0 characters: Graphviz refuses them in a label and a
    tooltip holding one is not well-formed XML. Every destination shows U+FFFD instead."""
    from renderer.core import escape

    assert escape.clean("a\ufffeb\uffffc\ud800d\ufffd") == "a\ufffdb\ufffdc\ufffdd\ufffd"
    assert escape.html_text("<\uffff>") == "&lt;\ufffd&gt;"
    assert str(escape.tooltip(["x\ufffe"])) == "x\ufffd"
    assert escape.markdown_cell("\uffff|") == "`\ufffd\\|`"


def test_style_values_cannot_carry_markup() -> None:
    """Style is the one annotation field that reaches a Graphviz attribute raw: only checked values pass."""
    from renderer.annotations.style import validate_style
    from renderer.core.errors import AnnotationError

    for p in P.PAYLOADS:
        for key in ("fillcolor", "color", "fontcolor", "penwidth", "arrowsize", "style"):
            with pytest.raises(AnnotationError):
                validate_style({key: p.text}, "f.yaml:3")
    for key in ("URL", "href", "id", "class", "tooltip", "label", "target", "xlabel", "image"):
        with pytest.raises(AnnotationError, match="f.yaml:3"):
            validate_style({key: "javascript:alert(1)"}, "f.yaml:3")


def test_hostile_style_in_a_file_is_one_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "style.yaml"
    path.write_text('operators:\n  - id: 0\n    style: {href: "javascript:alert(1)"}\n', encoding="utf-8")
    run = run_cli("render", ONNX / "tiny_cnn.onnx", "-a", path, "-o", tmp_path / "out.svg")
    line = one_line_error(run)
    assert "style.yaml:" in line and "href" in line
    assert not (tmp_path / "out.svg").exists()


# ---- Graphviz's own failure signal --------------------------------------------------------------------------


def test_graphviz_exit_status_1_is_an_error() -> None:
    """``dot`` exits 1 on a broken HTML label yet still prints a picture; that must not count as success."""
    from renderer.core.errors import RenderError
    from renderer.picture.graphviz_run import run_dot

    source = 'digraph G { a [label=<<B>bold</I>>]; }'
    raw = subprocess.run(["dot", "-Tsvg"], input=source.encode(), capture_output=True, timeout=60)
    assert raw.returncode == 1 and raw.stdout, "premise: dot exits 1 and still writes output"
    with pytest.raises(RenderError, match="exit status 1") as caught:
        run_dot(source, "svg", timeout=60)
    assert "\n" not in str(caught.value)


# ---- terminal output --------------------------------------------------------------------------------------


_TERMINAL_UNSAFE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff]")


@pytest.mark.parametrize("payload", [P.payload("controls"), P.payload("rtl-override"), P.payload("newlines")],
                         ids=lambda p: p.name)
def test_info_prints_no_control_characters(payload: P.Payload, tmp_path: Path) -> None:
    """``annograph info`` writes names to a terminal: no escape sequences, bidi overrides or extra lines."""
    path = P.hostile_onnx(payload.text, tmp_path / "hostile.onnx")
    run = run_cli("info", path)
    assert run.returncode == 0, run.stderr
    bad = _TERMINAL_UNSAFE.search(run.stdout)
    assert bad is None, f"{bad.group()!r} in: {run.stdout[max(bad.start() - 60, 0):bad.end() + 20]!r}"  # type: ignore[union-attr]


# ---- exporters (annotations out to other viewers) ---------------------------------------------------------


def _exporters() -> list:  # type: ignore[type-arg]
    try:
        from renderer.exporters.registry import exporter_modules
    except ImportError:
        return []
    return exporter_modules()


@pytest.mark.parametrize("payload", P.PAYLOADS, ids=[p.name for p in P.PAYLOADS])
def test_exported_files_parse_and_read_back(payload: P.Payload, tmp_path: Path) -> None:
    """Every registered exporter writes hostile names and values as data its format can parse (JSON, CSV),
    and our own readers take the file back without any error but ours."""
    import csv
    import io
    import json

    from renderer.annotations.registry import read_file
    from renderer.core.errors import AnnographError
    from renderer.loaders.registry import load_model

    modules = _exporters()
    if not modules:
        pytest.skip("no exporters registered")
    from renderer.exporters.protocol import ExportOptions

    model = load_model(P.hostile_onnx(payload.text, tmp_path / "hostile.onnx"))
    annotations = hostile_annotations(payload.text, model, tmp_path, ids=["0", "0:1"])
    for module in modules:
        try:
            result = module.export(model, annotations, ExportOptions(metric="latency_ms"))
        except AnnographError as e:  # a format that cannot express this input may say so, in one line
            assert "\n" not in str(e), str(e)
            continue
        text = result.text
        assert "\x00" not in text, module.NAME
        if module.EXTENSION == ".json":
            json.loads(text)
        elif module.EXTENSION == ".csv":
            rows = list(csv.reader(io.StringIO(text, newline="")))
            assert rows and all(len(r) == len(rows[0]) for r in rows), module.NAME
        path = tmp_path / f"exported-{module.NAME}{module.EXTENSION}"
        path.write_text(text, encoding="utf-8")
        try:
            read_file(path, model)
        except AnnographError as e:
            assert "\n" not in str(e) and path.name in str(e), str(e)


def test_subgraph_link_tooltip_is_literal(tmp_path: Path) -> None:
    """An operator type (free text in a custom domain) that runs a subgraph names it in the link's tooltip."""
    import onnx
    from onnx import TensorProto, helper

    from renderer.core.options import RenderOptions
    from renderer.loaders.registry import load_model

    op_type = r"\N\G\L<b>"
    body = helper.make_graph([helper.make_node("Identity", ["a"], ["b"], name="inner")], "body",
                             [helper.make_tensor_value_info("a", TensorProto.FLOAT, [1])],
                             [helper.make_tensor_value_info("b", TensorProto.FLOAT, [1])])
    node = helper.make_node(op_type, ["x"], ["y"], name="outer", domain="hostile", body=body)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("hostile", 1)])
    onnx.save(model, str(tmp_path / "link.onnx"))
    outputs = render_all(load_model(tmp_path / "link.onnx"), None, RenderOptions(), tmp_path, ["svg"])
    root = P.check_svg(outputs["svg"])
    links = [g for g in root.iter("{http://www.w3.org/2000/svg}g") if (g.get("id") or "").startswith("link-")]
    assert links, "no subgraph link drawn"
    titles = [v for e in links[0].iter() for n, v in e.attrib.items() if n.endswith("}title")]
    assert any(t.startswith(f"{op_type} runs graph") for t in titles), titles


# ---- --dim: hostile values and names ---------------------------------------------------------------------------

_ACCEPTED_DIM_VALUES = {"0": 0, " 8": 8, "8 ": 8}


@pytest.mark.parametrize("value", P.DIM_VALUES + ("--",), ids=repr)
def test_dim_values_no_dim_can_take_are_one_line_errors(value: str, tmp_path: Path) -> None:
    """Through the option parser (``--dim=--`` included, which argparse used to hand over as an empty list): a
    value that is no ASCII whole number of int64 is refused in one line naming the option, never read as some
    other number; the few that are plain numbers pin the dim to that number."""
    from renderer.core.errors import AnnographError

    model, out = registry.dims_model(), tmp_path / "pinned.dot"
    argv = ["render", str(model), "--show", "macs", f"--dim=height={value}", "--dim=width=8", "--dim=batch=1",
            "-o", str(out)]
    if value in _ACCEPTED_DIM_VALUES:
        registry.command(model, argv, out)
        size = _ACCEPTED_DIM_VALUES[value]
        # conv0's box states its output shape: batch 1, 8 channels, ceil(height / 2) × ceil(8 / 2)
        assert f"1×8×{(size + 1) // 2}×4" in out.read_text(encoding="utf-8") or size == 0
        return
    with pytest.raises(AnnographError) as error:
        registry.command(model, argv, out)
    assert f"--dim 'height={value}'" in str(error.value) or "--dim" in str(error.value), error.value
    assert not out.exists()


_DIM_NAME_PAYLOADS = P.SHORT_PAYLOADS + (P.payload("controls"), P.payload("newlines"), P.payload("rtl-override"),
                                         P.payload("xml-forbidden"))


@pytest.mark.parametrize("payload", _DIM_NAME_PAYLOADS, ids=lambda p: p.name)
def test_dim_names_carrying_payloads(payload: P.Payload, tmp_path: Path) -> None:
    """A model whose symbolic input dim is the payload: the "pin it" hints (box tooltips, any stderr line) name
    it safely in the picture and on the terminal, and ``--dim PAYLOAD=3`` pins it, which sends the model through
    the onnxruntime shape run (its error, naming the payload op, must stay one clean line). NAME=VALUE splits at
    the last "=", so names holding "=" pin too; a name with NUL cannot be an argument, and the one given instead
    pins nothing: a one-line error that names the model's dim as safely."""
    model = P.hostile_onnx(payload.text, tmp_path / "hostile.onnx")
    out = tmp_path / "free.svg"
    err = registry.command(model, ["render", str(model), "--show", "output_bytes", "--edge-by", "bytes",
                                   "--keep-free-dims", "-o", str(out)], out)
    assert not _TERMINAL_UNSAFE.search(err) and len(err.splitlines()) == err.count("annograph: "), err
    text = P.check_output("svg", out.read_bytes(), tmp_path)
    if payload.name in SHORT:
        assert _normal(f"--dim {payload.text}=N") in _normal(text or "") + " " + _normal(err), err
    assumed = tmp_path / "assumed.svg"  # by default the legend states the value taken for it, as safely
    err = registry.command(model, ["render", str(model), "-o", str(assumed)], assumed)
    assert not _TERMINAL_UNSAFE.search(err) and len(err.splitlines()) == err.count("annograph: "), err
    legend = (P.check_output("svg", assumed.read_bytes(), tmp_path) or "").replace("\n", " ")  # lines wrap
    assert "assumed (--dim to change)" in legend, legend
    pinned = tmp_path / "pinned.svg"
    argv = ["render", str(model), "--show", "output_bytes", "-o", str(pinned), f"--dim={P.for_cli(payload.text)}=3"]
    if "\x00" in payload.text:
        from renderer.core.errors import AnnographError

        with pytest.raises(AnnographError, match="pins nothing: this model has no free input dim called") as error:
            registry.command(model, argv, pinned)
        assert not _TERMINAL_UNSAFE.search(str(error.value)) and str(model) in str(error.value)
        assert not pinned.exists()
        return
    err = registry.command(model, argv, pinned)  # every input dim known: onnxruntime runs for the custom op's
    assert not _TERMINAL_UNSAFE.search(err) and len(err.splitlines()) == err.count("annograph: "), err
    text = P.check_output("svg", pinned.read_bytes(), tmp_path) or ""
    assert "--dim" not in text and "--dim" not in err, (text[:500], err)  # nothing left to pin


def test_double_dash_as_an_option_value_is_that_text() -> None:
    """``--OPTION=--`` for every option of every command that takes one value: the command gets "--" (or a usage
    error), never the empty list argparse used to hand over (``--show=--`` was an internal error)."""
    import argparse

    from renderer.commands.cli import build_parser

    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
    checked = 0
    for name, sub in commands.items():
        positional = ["m.onnx"] * sum(1 for a in sub._actions if not a.option_strings and a.nargs in (None, 1))
        positional += ["m.onnx", "n.onnx"] * any(not a.option_strings and a.nargs in ("+", "*") for a in sub._actions)
        required = [x for a in sub._actions if a.option_strings and a.required for x in (a.option_strings[0], "out")]
        for action in sub._actions:
            if not action.option_strings or action.nargs is not None or action.const is not None or not action.dest:
                continue
            option = next((o for o in action.option_strings if o.startswith("--")), action.option_strings[0])
            try:  # the first spelling: a hidden old one such as diff's -a-before has no other
                args = parser.parse_args([name, *positional, *required, f"{option}=--"])
            except SystemExit as e:
                assert e.code == 2, (name, option)
                continue
            value = getattr(args, action.dest)
            assert value == "--" or isinstance(value, list) and value[-1:] == ["--"] \
                or not isinstance(value, (list, str)), (name, option, value)
            checked += 1
    assert checked > 20
