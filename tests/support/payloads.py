"""Hostile input shared by the injection, fuzz, limit and determinism tests, and by ``fuzz/harness.py``.

Everything here is driven by the registries, so a loader, reader or output format added later is covered
without editing the tests:
    * ``renderer.loaders.registry.LOADERS``       → ``loader_modules()``
    * ``renderer.annotations.registry.READERS``   → ``reader_modules()``
    * ``renderer.compose.output_plan.OUTPUT_FORMATS`` → ``output_formats()``

Seed files for fuzzing are found, not listed: every file under ``samples/`` and ``tests/fixtures/`` that a
loader recognises (by ``match`` on its first bytes, or by extension), and for each annotation reader the files
that ``read_file`` would hand to it. What else the tests need per module (extra seeds, the model a reader's
seeds refer to, the reader's injection file) is in ``tests/support/registry.py``, which has an entry for every
registered loader and reader.

A reader whose ``match`` accepts anything (the ``generic`` fallback) gets the annotation files that no earlier
reader claims, plus the generated files of ``annotation_seed_files``; a reader that finds no seeds at all is
fuzzed with those generated files too, so at least its error paths run.
"""

from __future__ import annotations

import csv
import glob
import html.parser
import io
import json
import os
import re
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import registry

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "samples"
FIXTURES = ROOT / "tests" / "fixtures"
NABU = SAMPLES / "tflite" / "okay_nabu.tflite"
SEED_DIRS = (SAMPLES, FIXTURES)
NOT_SEEDS = {".md", ".py", ".pyc"}
ANNOTATION_SUFFIXES = {".json", ".yaml", ".yml", ".csv", ".tsv", ".txt"}


# ---- the payloads ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Payload:
    """One hostile string. ``name`` is the pytest id."""

    name: str
    text: str

    @property
    def short(self) -> bool:
        """Short and printable: it must appear verbatim (after unescaping) in every picture it is drawn in."""
        return len(self.text) <= 40 and not re.search(
            r"[\x00-\x1f\x7f-\x9f\u061c\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff\ufffe\uffff]", self.text)


BIG = 100_000

PAYLOADS: tuple[Payload, ...] = (
    Payload("script", "<script>alert(1)</script>"),
    Payload("svg-onload", '"><svg onload=alert(1)>'),
    Payload("img-onerror", "<img src=x onerror=alert(1)>"),
    Payload("attr-break", "' onmouseover='alert(1)' x='"),
    Payload("javascript-url", "javascript:alert(document.domain)"),
    Payload("data-url", "data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg=="),
    Payload("cdata-end", "]]>"),
    Payload("cdata", "<![CDATA[</text><script>alert(1)</script>]]>"),
    Payload("comment-end", "-->"),
    Payload("comment", "<!-- x --><foreignObject>"),
    Payload("xml-entity", '<!DOCTYPE x [<!ENTITY e SYSTEM "file:///etc/passwd">]>&e;'),
    Payload("entities", "&lt;b&gt; &amp; &#60; &#x3c; &nbsp; &bogus; & alone"),
    Payload("gv-escapes", r"\N \G \L \E \H \T \l \r \n"),
    Payload("backslashes", "C:\\path\\to\\dir\\"),
    Payload("backslash-quote", '\\"];x[label="'),
    Payload("quotes", "\"double\" 'single' `back`"),
    Payload("braces", "{a|<p>b} [x] <y> (z)"),
    Payload("html-label", "<<B>bold</B>></TD></TR></TABLE>"),
    Payload("dot-keywords", "strict digraph G { node edge subgraph a -> b }"),
    Payload("dot-break", '"]; evil [label="x"]; a -> b; //'),
    Payload("newlines", "line1\nline2\r\nline3\rline4"),
    Payload("controls", "a\x00b\x01c\x07d\x08e\x0bf\x0cg\x1b[31mh\x7fi\x85j\x9f"),
    Payload("rtl-override", "abc\u202edcba\u2066x\u2069\u200b\ufeff"),
    Payload("xml-forbidden", "a\ufffeb\uffffc\ud7ff\ue000\ufffd"),  # U+FFFE/U+FFFF are not XML 1.0 characters
    Payload("big", "A<&>\"'" * (BIG // 6)),
    Payload("input-0", "input:0"),
    Payload("index-like", "0:1"),
    Payload("element-id", "op-0-0"),
    Payload("markdown", "| a | b | **bold** _it_ [x](javascript:alert(1)) ![i](data:x) `c` # h ~s~"),
    Payload("css", "</style><style>*{background:url(javascript:alert(1))}</style>"),
    Payload("noscript-end", "</noscript><img src=x onerror=alert(1)>"),  # the HTML report's pages are <noscript> text
    Payload("jinja", "{{ 7*7 }}{% raw %}${7*7}"),
    Payload("format", "%s %n %x {0} {name}"),
    Payload("unicode", "Ünïcødé 😀 中文 \u0301\U0010fffd"),
    Payload("spaces", "  leading and trailing  "),
    # what GitHub makes live in a comment's text: autolinks, mentions, references, math
    Payload("gfm-autolinks", "www.evil.test https://e.test/x a@b.cd"),
    Payload("gfm-mentions", "@user @org/team #1 GH-2 $x^2$"),
)

SHORT_PAYLOADS = tuple(p for p in PAYLOADS if p.short)

# ``--dim NAME=VALUE`` values no dim can take: characters that pass isdigit() but not int() ("²") or that int()
# reads as digits but are no ASCII number ("١", "１"), numbers past int64 and past Python's 4300-digit limit,
# signs, spaces, other notations, nothing at all.
DIM_VALUES: tuple[str, ...] = ("\u00b2", "\u0661", "\uff11", "1\u0660", "0", "-1", "+8", " 8", "8 ", "8.0", "1e3",
                               "0x10", "nan", "inf", str(2**63), "9" * 400, "9" * 5000, "", "=", "1=2", "8\n9")


def payload(name: str) -> Payload:
    return next(p for p in PAYLOADS if p.name == name)


def for_cli(text: str) -> str:
    """``text`` as a command-line argument can carry it (no NUL)."""
    return text.replace("\x00", "\\0")


# ---- the registries -------------------------------------------------------------------------------------------


def loader_modules() -> list[ModuleType]:
    from renderer.loaders.registry import loader_modules as modules

    return modules()


def reader_modules() -> list[ModuleType]:
    from renderer.annotations.registry import reader_modules as modules

    return modules()


def output_formats() -> list[str]:
    """Every distinct output format, in a stable order."""
    from renderer.compose.output_plan import OUTPUT_FORMATS

    return sorted(set(OUTPUT_FORMATS.values()))


def extension(fmt: str) -> str:
    """The first file extension that produces ``fmt``."""
    from renderer.compose.output_plan import OUTPUT_FORMATS

    return next(ext for ext, f in OUTPUT_FORMATS.items() if f == fmt)


# ---- seeds ----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Seed:
    """A starting file for mutation: ``name`` keeps the extension the target may look at."""

    name: str
    data: bytes


def _candidate_files() -> list[Path]:
    files = []
    for folder in SEED_DIRS:
        if folder.is_dir():
            files += [p for p in folder.rglob("*") if p.is_file() and p.suffix.lower() not in NOT_SEEDS
                      and "__pycache__" not in p.parts]
    return sorted(files)


def _hook_seeds(module: ModuleType) -> list[Seed]:
    """The extra seeds ``tests/support/registry.py`` gives ``module``."""
    entry = registry.loader(module) if module.__name__.startswith("renderer.loaders.") else registry.reader(module)
    hook = entry.seeds
    if callable(hook):
        return [Seed(str(name), bytes(data)) for name, data in hook()]
    seeds = []
    for pattern in hook:
        for match in sorted(glob.glob(str(ROOT / pattern))):
            seeds.append(Seed(Path(match).name, Path(match).read_bytes()))
    return seeds


def loader_seeds(module: ModuleType) -> list[Seed]:
    """Sample and fixture files ``module`` recognises, plus its extra seeds from the registry."""
    from renderer.loaders.registry import HEAD_BYTES

    seeds = []
    for path in _candidate_files():
        with open(path, "rb") as f:
            head = f.read(HEAD_BYTES)
        if module.match(head) or path.suffix.lower() in module.EXTENSIONS:
            seeds.append(Seed(path.name, path.read_bytes()))
    return seeds + _hook_seeds(module)


def is_fallback(module: ModuleType) -> bool:
    """True for a reader that claims any file (tried last)."""
    return bool(module.match(Path("probe.bin"), "\x00\x01 nothing any format would claim \x02"))


def reader_model(module: ModuleType) -> Path:
    """The sample model ``module``'s seed and injection files refer to."""
    return ROOT / registry.reader(module).model


def path_seeds(name: str) -> list[Seed]:
    """The seeds of command path ``name`` in ``tests/support/registry.py``."""
    hook = registry.PATHS[name].seeds
    if callable(hook):
        return [Seed(str(file), bytes(data)) for file, data in hook()]
    return [Seed(Path(m).name, Path(m).read_bytes())
            for pattern in hook for m in sorted(glob.glob(str(ROOT / pattern)))]


def reader_files(module: ModuleType) -> list[Path]:
    """The sample and fixture files ``read_file`` would hand to ``module``, where they lie (beside the files a
    reader may look for: a TensorRT profile's layer information)."""
    from renderer.annotations.registry import HEAD_CHARS
    from renderer.loaders.registry import HEAD_BYTES

    readers = reader_modules()
    found = []
    for path in _candidate_files():
        if any(loader.match(path.read_bytes()[:HEAD_BYTES]) for loader in loader_modules()):
            continue
        head = path.read_bytes()[:HEAD_CHARS].decode("utf-8-sig", "replace")
        chosen = next((r for r in readers if r.match(path, head)), None)
        if chosen is not module:
            continue
        if is_fallback(module) and path.suffix.lower() not in ANNOTATION_SUFFIXES:
            continue
        found.append(path)
    return found


def reader_seeds(module: ModuleType) -> list[Seed]:
    """The files ``read_file`` would hand to ``module``, its extra seeds, and generated ones when that is
    all there is (see the module docstring)."""
    seeds = [Seed(path.name, path.read_bytes()) for path in reader_files(module)]
    seeds += _hook_seeds(module)
    if is_fallback(module) or not seeds:
        seeds += annotation_seed_files()
    return seeds


def annotation_seed_files() -> list[Seed]:
    """Small, valid files of every generic syntax for the sample models (fuzz seeds when none are found)."""
    title = "tiny_cnn on CPU"
    doc = {
        "graph": {"title": title, "meta": {"Device": "CPU", "Total latency": "1.5 ms"}},
        "operators": [
            {"id": "stem/conv", "meta": {"latency_ms": 0.25, "note": "tiled x4"}, "style": {"fillcolor": "#ff0000"}},
            {"id": "0:3", "meta": {"latency_ms": "0.5 ms"}},
            {"id": 5, "latency_ms": 1.25, "style": {"style": "dashed", "penwidth": 2}},
        ],
        "tensors": {"image": {"meta": {"bytes": 12288}, "style": {"color": "0xd62728", "penwidth": 3}}},
    }
    import yaml

    csv_text = (
        "id,kind,latency_ms,note,style.fillcolor\n"
        "stem/conv,operator,0.25,\"tiled, x4\",#00ff00\n"
        "3,,0.5 ms,,\n"
        "image,tensor,,input,\n"
        ",graph,1.5,whole model,\n"
    )
    text = (
        "graph_title: \"tiny_cnn on CPU\"\n"
        "graph_meta: \"Device: CPU; Total latency: 1.5 ms\"\n"
        "operator_id: stem/conv\n"
        "operator_meta: \"Latency: 0.25 ms; Note: tiled\"\n"
        "operator_style: \"color: 0xFF0000;\"\n"
        "tensor_id: image\n"
        "tensor_meta: \"bytes: 12288\"\n"
    )
    return [
        Seed("seed.json", json.dumps(doc, indent=1).encode()),
        Seed("seed.yaml", yaml.safe_dump(doc, sort_keys=False).encode()),
        Seed("seed.csv", csv_text.encode()),
        Seed("seed.txt", text.encode()),
    ]


# ---- hostile models -------------------------------------------------------------------------------------------


def hostile_onnx(text: str, path: Path) -> Path:
    """An ONNX model with ``text`` in every string field a model file can carry, written to ``path``.

    Relu (named ``text``, output ``text``) → Add with an initializer → an operator of a custom domain whose
    op type, domain and attributes are ``text`` → graph output. The graph name, doc strings, producer,
    model and node metadata_props (keys and values), and a symbolic dimension are ``text`` too. Names that
    must differ get a suffix.
    """
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    x, relu_out, weight, add_out, y = text + "·in", text, text + "·w", text + "·add", text + "·out"
    relu = helper.make_node("Relu", [x], [relu_out], name=text, doc_string=text)
    add = helper.make_node("Add", [relu_out, weight], [add_out], name=text + "·add")
    custom = helper.make_node(text or "Custom", [add_out], [y], name=text + "·custom", domain=text + ".domain",
                              note=text, notes=[text, text + "2"], count=3)
    for node in (relu, add, custom):
        entry = node.metadata_props.add()
        entry.key, entry.value = text or "key", text
    graph = helper.make_graph(
        [relu, add, custom], text, [helper.make_tensor_value_info(x, TensorProto.FLOAT, [text or "batch", 4])],
        [helper.make_tensor_value_info(y, TensorProto.FLOAT, None)],
        initializer=[numpy_helper.from_array(np.arange(4, dtype=np.float32), weight)],
        doc_string=text,
        value_info=[helper.make_tensor_value_info(relu_out, TensorProto.FLOAT, [text or "batch", 4])],
    )
    model = helper.make_model(graph, producer_name=text, producer_version=text, doc_string=text,
                              opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(text + ".domain", 1)])
    model.ir_version = 8
    helper.set_model_props(model, {text or "key": text, "plain": text})
    onnx.save(model, str(path))
    return path


def combined_onnx(path: Path, payloads: Iterable[Payload] = PAYLOADS) -> Path:
    """One ONNX model with a chain of Relu nodes, each named by a payload and writing a tensor named by it."""
    import onnx
    from onnx import TensorProto, helper

    nodes, previous = [], "input"
    for i, p in enumerate(payloads):
        out = f"{p.text}#{i}"
        node = helper.make_node("Relu", [previous], [out], name=p.text)
        entry = node.metadata_props.add()
        entry.key, entry.value = p.text or "key", p.text
        nodes.append(node)
        previous = out
    graph = helper.make_graph(nodes, "combined", [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 4])],
                              [helper.make_tensor_value_info(previous, TensorProto.FLOAT, [1, 4])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


def hostile_tflite(text: str) -> bytes:
    """A TFLite flatbuffer with ``text`` in every string it can carry.

    Subgraph name, every tensor name, a custom operator's code, model description, a metadata entry's name,
    the min_runtime_version metadata content, and a signature's key and input/output names.
    """
    import flatbuffers
    import numpy as np
    import tflite

    import tflite_build as fb

    b = flatbuffers.Builder(4096)
    encoded = text.encode("utf-8")
    buffers = [fb.buffer(b, None), fb.buffer(b, np.arange(4, dtype=np.float32).tobytes()),
               fb.buffer(b, encoded[:200] + b"\0"), fb.buffer(b, encoded[:1000])]
    codes = [fb.opcode(b, tflite.BuiltinOperator.RELU), fb.opcode(b, tflite.BuiltinOperator.ADD),
             fb.opcode(b, tflite.BuiltinOperator.CUSTOM, text or "Custom")]
    tensors = [fb.tensor(b, name, [1, 4], buffer=1 if name == text + "·w" else 0)
               for name in (text + "·in", text, text + "·w", text + "·add", text + "·out")]
    ops = [fb.operator(b, 0, [0], [1]), fb.operator(b, 1, [1, 2], [3]),
           fb.operator(b, 2, [3], [4], custom=encoded[:64] or b"\0")]
    subgraph = fb.subgraph(b, text, tensors, ops, [0], [4])
    signature = fb.signature(b, text, {text: 0}, {text + "·out": 4})
    meta = [fb.metadata(b, "min_runtime_version", 2), fb.metadata(b, text, 3)]
    return fb.model(b, codes=codes, subgraphs=[subgraph], buffers=buffers, description=text, metadata=meta,
                    signatures=[signature])


def hostile_pte(text: str) -> bytes:
    """An ExecuTorch program with ``text`` in every string it can carry (``executorch_build.hostile_program``)."""
    from executorch_build import hostile_program

    return hostile_program(text)


def hostile_etrecord(text: str, path: Path) -> Path:
    """The ETRecord of ``tests/fixtures/executorch/portable.pte`` with ``text`` in each edge node's name (and so its
    output tensor's), argument names, module path and type (``nn_module_stack``) and source line, written to
    ``path``."""
    import zipfile

    member = "edge_dialect_exported_program/forward"
    with zipfile.ZipFile(FIXTURES / "executorch" / "portable.etrecord") as source, zipfile.ZipFile(path, "w") as out:
        for info in source.infolist():
            data = source.read(info)
            out.writestr(info, _hostile_edge_program(json.loads(data), text) if info.filename == member else data)
    return path


def _hostile_edge_program(program: dict, text: str) -> bytes:
    renamed = {}
    for i, node in enumerate(program["graph_module"]["graph"]["nodes"]):
        renamed[node["name"]] = node["name"] = f"{text}{i}"
        node.setdefault("metadata", {}).update({
            "nn_module_stack": f"L__self__,,{text};L__self__x,{text}.{i},{text}",
            "stack_trace": f'File "{text}", line 1, in {text}\n    {text}'})
        for argument in node["inputs"]:
            argument["name"] = text + argument["name"]
    document = json.dumps(program)
    for old, new in renamed.items():  # the tensors the nodes return, wherever they are used
        document = document.replace(json.dumps(old), json.dumps(new))
    return document.encode()


def tflite_name_spans(data: bytes) -> list[tuple[int, int]]:
    """(offset, length) in ``data`` of every tensor name's bytes, found through the flatbuffer's own tables."""
    import tflite

    fb = tflite.Model.GetRootAsModel(data, 0)
    spans = []
    for s in range(fb.SubgraphsLength()):
        sg = fb.Subgraphs(s)
        for t in range(sg.TensorsLength()):
            tab = sg.Tensors(t)._tab
            field = tab.Offset(10)  # Tensor.name is field 3: vtable slot 4 + 2 * 3
            if field:
                start = tab.Vector(field)  # the string's first byte (after its uint32 length)
                length = int.from_bytes(data[start - 4:start], "little")
                if length:
                    spans.append((start, length))
    return spans


def patch_tflite_names(data: bytes, text: str | list[str]) -> bytes:
    """``data`` with every tensor name overwritten in place by ``text`` (or name k by ``text[k % len(text)]``)
    cut or padded with ``_`` to the same number of bytes, so the flatbuffer stays valid. Names keep a 2-byte
    tail so they stay distinct."""
    out = bytearray(data)
    texts = [text] if isinstance(text, str) else text
    for k, (start, length) in enumerate(tflite_name_spans(data)):
        encoded = texts[k % len(texts)].encode("utf-8")
        tail = f"{k % 100:02d}".encode() if length > 2 else b""
        room = length - len(tail)
        body = encoded[:room]
        while body and room:  # do not cut a UTF-8 sequence in half
            try:
                body.decode("utf-8")
                break
            except UnicodeDecodeError:
                body = body[:-1]
        out[start:start + length] = body + b"_" * (room - len(body)) + tail
    return bytes(out)


# ---- hostile annotation files ---------------------------------------------------------------------------------

GENERIC_SYNTAXES = ("json", "yaml", "csv", "txt")


def annotation_document(text: str, ids: Iterable[str] = ("0",)) -> dict:
    """A generic annotation document with ``text`` as title, meta keys and values, and as an id."""
    operators = [{"id": text, "meta": {text or "k": text, "latency_ms": 2.5}}]
    operators += [{"id": i, "meta": {text or "k": text, "latency_ms": 1.5 + n, "note": text}}
                  for n, i in enumerate(ids)]
    return {
        "graph": {"title": text, "meta": {text or "k": text, "Device": text}},
        "operators": operators,
        "tensors": [{"id": text, "meta": {text or "k": text, "bytes": 64}}, {"id": "0", "meta": {"note": text}}],
    }


def _text_value(text: str) -> str:
    """``text`` as the Netron-style text form can carry it: one line, no ';' (the pair separator), no NUL."""
    return re.sub(r"[\r\n;\x00]", " ", text)


def annotation_file(text: str, syntax: str, folder: Path, ids: Iterable[str] = ("0",)) -> Path:
    """``annotation_document`` written in ``syntax`` (json, yaml, csv or txt) into ``folder``."""
    import yaml

    ids = list(ids)
    doc = annotation_document(text, ids)
    path = folder / f"hostile.{syntax}"
    if syntax == "json":
        path.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    elif syntax == "yaml":
        dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
        path.write_text(yaml.dump(doc, Dumper=dumper, allow_unicode=True, sort_keys=False), encoding="utf-8")
    elif syntax == "csv":
        text = text.replace("\x00", "")  # a NUL byte marks a binary file, rightly refused
        out = io.StringIO()
        writer = csv.writer(out)
        column = text.strip() or "k"
        if column.lower() in ("id", "kind") or column.lower().startswith("style."):
            column = "x" + column
        writer.writerow(["id", "kind", "latency_ms", column, "note"])
        writer.writerow([text.strip() or "x", "operator", "2.5", text, text])
        for n, i in enumerate(ids):
            writer.writerow([i, "operator", str(1.5 + n), text, text])
        writer.writerow([text.strip() or "x", "tensor", "", text, text])
        writer.writerow(["", "graph", "", text, text])
        path.write_text(out.getvalue(), encoding="utf-8")
    elif syntax == "txt":
        value = _text_value(text)
        key = value.replace(":", " ").strip() or "k"
        lines = [f'graph_title: "{value}"', f'graph_meta: "{key}: {value}"', f"operator_id: {value.strip() or 'x'}",
                 f'operator_meta: "{key}: {value}; latency_ms: 2.5"']
        for n, i in enumerate(ids):
            lines += [f"operator_id: {i}", f'operator_meta: "{key}: {value}; latency_ms: {1.5 + n}"']
        lines += [f"tensor_id: {value.strip() or 'x'}", f'tensor_meta: "{key}: {value}"']
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    else:
        raise ValueError(syntax)
    return path


def injected_reader_files(text: str, folder: Path) -> list[tuple[ModuleType, Path]]:
    """The injection file of every reader that has one in the registry, written into ``folder``."""
    found = []
    for module in reader_modules():
        hook = registry.reader(module).inject
        if hook is None:
            continue
        name, data = hook(text)
        path = folder / f"{module.NAME}-{Path(name).name}"
        path.write_bytes(data)
        found.append((module, path))
    return found


# ---- checking the outputs -------------------------------------------------------------------------------------

DANGEROUS_ELEMENTS = {"script", "foreignobject", "iframe", "object", "embed", "handler", "listener", "set",
                      "animate", "base", "meta", "link", "style"}
URL_ATTRIBUTES = {"href", "src", "action", "formaction", "data", "xlink:href", "from", "to", "values"}
_BAD_URL = re.compile(r"^\s*(javascript|data|vbscript):", re.I)
# The only links an output may hold are ones we write: in-page fragments and plain https addresses.
_OWN_LINK = re.compile(r"^(#[\w.:-]+|https://[\w./#?=&%+-]+)$")


def _local(name: str) -> str:
    return name.rsplit("}", 1)[-1].lower()


def check_svg(data: bytes) -> object:
    """Parse the SVG with defusedxml and assert it carries no active content. Returns the root element."""
    from defusedxml import ElementTree

    root = ElementTree.fromstring(data)
    for element in root.iter():
        tag = _local(element.tag)
        assert tag not in DANGEROUS_ELEMENTS, f"<{tag}> element in SVG"
        for name, value in element.attrib.items():
            local = _local(name)
            assert not local.startswith("on"), f"event handler attribute {local}={value[:60]!r}"
            if local in URL_ATTRIBUTES or name.endswith("}href"):
                assert not _BAD_URL.match(value), f"{local}={value[:60]!r}"
                assert _OWN_LINK.match(value), f"link attribute {local}={value[:60]!r}: no user string may reach a URL"
            if local == "style":
                assert "url(" not in value.lower() and "expression(" not in value.lower(), value[:80]
    return root


def svg_texts(root: object) -> list[str]:
    """Every piece of text a viewer sees or hovers: <text>/<title> content and xlink:title attributes."""
    texts = []
    for element in root.iter():  # type: ignore[attr-defined]
        if _local(element.tag) in ("text", "title") and element.text:
            texts.append(element.text)
        for name, value in element.attrib.items():
            if _local(name) == "title":
                texts.append(value)
    return texts


class _HtmlAudit(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, list[tuple[str, str | None]]]] = []
        self.text: list[str] = []
        self.scripts: list[list[str]] = []  # the text of each <script>, as the browser hashes it
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, attrs))
        if tag == "script":
            self.scripts.append([])
            self._in_script = True

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self._in_script = False

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, attrs))

    def handle_data(self, data: str) -> None:
        if self._in_script:
            self.scripts[-1].append(data)
        else:
            self.text.append(data)


_TO_PLACEHOLDER = {"&lt;": "\ue000", "&gt;": "\ue001", "&amp;": "\ue002", "&#34;": "\ue003", "&quot;": "\ue003",
                   "&#39;": "\ue004"}
_FROM_PLACEHOLDER = {"\ue000": "<", "\ue001": ">", "\ue002": "&", "\ue003": '"', "\ue004": "'"}
_BACK = str.maketrans(_FROM_PLACEHOLDER)
_PLACEHOLDER = re.compile("[\ue000-\ue004]")


def _from_placeholders(text: str | None) -> str | None:
    return None if text is None else text.translate(_BACK)


def check_scripts(policy: str, scripts: list[dict[str, str | None]], texts: list[str]) -> None:
    """The report's scripts are ours, and only ours can run: at most one data block
    (``<script type="application/json" id="report-data">``, which a browser never runs) and at most one inline
    script without attributes, whose SHA-256 is the one script source the Content-Security-Policy allows."""
    import base64
    import hashlib

    if not scripts and not policy:  # a fragment (a notebook's HTML form): nothing to allow
        return
    run = [text for attrs, text in zip(scripts, texts) if not attrs]
    blocks = [(attrs, text) for attrs, text in zip(scripts, texts) if attrs]
    assert len(run) <= 1 and len(blocks) <= 1, f"{len(run)} scripts and {len(blocks)} data blocks"
    for attrs, text in blocks:
        assert attrs == {"type": "application/json", "id": "report-data"}, attrs
        assert "<" not in text, "the data block holds a '<'"
        json.loads(text)
    directives = {d.split()[0]: d.split()[1:] for d in policy.split(";") if d.strip()}
    assert directives.get("default-src") == ["'none'"], policy
    if run:
        digest = base64.b64encode(hashlib.sha256(run[0].encode("utf-8")).digest()).decode()
        assert directives.get("script-src") == [f"'sha256-{digest}'"], f"script-src does not hold our hash: {policy}"
    else:
        assert "script-src" not in directives, policy


_OWN_FRAGMENT = re.compile(r"^#[\w.:-]+$")
_OWN_PICTURE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*\.svg$")
"""A picture a batch wrote, linked from its contact sheet: a plain file name in the same folder."""


def check_html(data: bytes, pictures: bool = False) -> str:
    """Parse the HTML report and assert it has no handler, dangerous link or foreign object, and no script but
    our own (``check_scripts``).

    Returns the visible text (entities resolved), scripts left out. Our own <meta> (charset, CSP, generator) and
    <style> in <head> are allowed, and only those: one each of the fixed ones the template writes. ``pictures``:
    links to plain ``.svg`` file names are allowed too (a batch's contact sheet).
    """
    document = data.decode("utf-8")
    # html.parser resolves each character reference through a Python callback: seconds for the megabytes of
    # &lt;&amp;… a 100 kB name turns into. The common five become private-use characters first (they can never
    # form markup either way) and are put back in the text and attribute values collected.
    fast = not _PLACEHOLDER.search(document)
    if fast:
        for entity, placeholder in _TO_PLACEHOLDER.items():
            document = document.replace(entity, placeholder)
    audit = _HtmlAudit()
    audit.feed(document)
    audit.close()
    if fast:
        audit.tags = [(tag, [(k, _from_placeholders(v)) for k, v in attrs]) for tag, attrs in audit.tags]
        audit.text = [_from_placeholders(t) for t in audit.text]  # type: ignore[misc]
        audit.scripts = [[_from_placeholders(t) for t in parts] for parts in audit.scripts]  # type: ignore[misc]
    styles = metas = 0
    policy = ""
    scripts = []
    for tag, attrs in audit.tags:
        if tag == "style":
            styles += 1
            continue
        if tag == "meta":
            metas += 1
            assert {k for k, _ in attrs} <= {"charset", "http-equiv", "content", "name"}, attrs
            if dict(attrs).get("http-equiv") == "Content-Security-Policy":
                policy = dict(attrs).get("content") or ""
            continue
        if tag == "script":
            scripts.append(dict(attrs))
            continue
        assert tag not in DANGEROUS_ELEMENTS, f"<{tag}> in HTML"
        for name, value in attrs:
            name = name.lower()
            assert not name.startswith("on"), f"event handler {name}={value!r:.60}"
            if name in URL_ATTRIBUTES or name.endswith(":href"):
                own = _OWN_FRAGMENT.match(value or "") or (pictures and _OWN_PICTURE.match(value or ""))
                assert own, f"link attribute {name}={value!r:.60} in HTML"
            if name == "style":
                assert "url(" not in (value or "").lower(), value
    assert styles <= 1 and metas <= 2, (styles, metas)
    check_scripts(policy, scripts, ["".join(s) for s in audit.scripts])
    return "".join(audit.text)


def check_dot(data: bytes, folder: Path) -> None:
    """The DOT must parse: ``dot -Tsvg`` exits 0 and reports no syntax error."""
    source = folder / "check.dot"
    source.write_bytes(data)
    done = subprocess.run(["dot", "-Tsvg", "-o", os.devnull, str(source)], capture_output=True, timeout=120)
    stderr = done.stderr.decode("utf-8", "replace")
    assert done.returncode == 0, stderr[:500]
    assert "syntax error" not in stderr.lower() and "error" not in stderr.lower(), stderr[:500]


# What GitHub turns into a link or a notification when it stands in text outside a code span: a bare URL, a
# mention, an issue reference; and link syntax a parser left as text (an unsafe destination, as GitHub would).
_GITHUB_AUTOLINKS = re.compile(r"https?://|ftp://|www\.|@\w|#\d|GH-\d|\$|\]\(")
_SAFE_HREF = re.compile(r"(https?://[A-Za-z0-9.:/%#-]+/)?[A-Za-z0-9._~/%-]+")


def markdown_tokens(text: str) -> list[object]:
    """Every token of ``text`` parsed as GitHub reads a comment (markdown-it-py, GFM-like: tables, raw HTML
    passed through, bare URLs linked), inline children flattened in order."""
    from markdown_it import MarkdownIt

    flat = []
    for token in MarkdownIt("gfm-like").parse(text):
        flat.append(token)
        flat.extend(token.children or [])
    return flat


def check_markdown(data: bytes) -> str:
    """Parsed as GitHub would parse it: no raw HTML, no image, no link from text (autolinks, bare URLs), links
    only to a plain percent-encoded path (the pictures annograph wrote), nothing outside code spans that GitHub
    makes a mention, issue reference or URL; every table row has its header's number of cells.

    Returns the text a reader sees (code spans and text, entities and escapes resolved), a line per block.
    """
    text = data.decode("utf-8")
    shown = []
    for token in markdown_tokens(text):
        kind = token.type  # type: ignore[attr-defined]
        assert kind not in ("html_block", "html_inline", "image"), f"{kind}: {token.content[:80]!r}"  # type: ignore[attr-defined]
        if kind == "link_open":
            href = token.attrGet("href")  # type: ignore[attr-defined]
            assert token.markup not in ("linkify", "autolink"), f"a link from text: {href!r:.80}"  # type: ignore[attr-defined]
            assert _SAFE_HREF.fullmatch(href or ""), f"link to {href!r:.80}"
        elif kind == "text":
            found = _GITHUB_AUTOLINKS.search(token.content)  # type: ignore[attr-defined]
            assert found is None, f"{found.group()!r} outside a code span: {token.content[:80]!r}"  # type: ignore[attr-defined]
        if kind in ("text", "code_inline"):
            shown.append(token.content)  # type: ignore[attr-defined]
        elif kind in ("softbreak", "hardbreak", "inline"):
            shown.append("\n")
    columns = None
    for line in text.splitlines():
        if not line.startswith("|"):
            columns = None
            continue
        cells = len(re.findall(r"(?<!\\)\|", line))
        if columns is None:
            columns = cells
        assert cells == columns, f"table row with {cells} cell separators, header has {columns}: {line[:120]!r}"
    return "".join(shown)


def check_binary(fmt: str, data: bytes) -> None:
    magic = {"pdf": b"%PDF-", "png": b"\x89PNG\r\n\x1a\n"}
    assert data.startswith(magic.get(fmt, b"")) and len(data) > 100, data[:16]


def check_output(fmt: str, data: bytes, folder: Path) -> str | None:
    """Check ``data`` as output format ``fmt``; returns its visible text where it has one.

    A format added later without a checker here still gets the generic text checks (or the binary one).
    """
    if fmt == "svg":
        return "\n".join(svg_texts(check_svg(data)))
    if fmt == "html":
        return check_html(data)
    if fmt == "sheet":  # a batch's index.html: links to the pictures beside it
        return check_html(data, pictures=True)
    if fmt == "dot":
        check_dot(data, folder)
        return None
    if fmt == "md":
        return check_markdown(data)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        check_binary(fmt, data)
        return None
    assert not re.search(r"<script|\son[a-z]+\s*=|javascript:|<foreignObject", text, re.I), fmt
    return text
