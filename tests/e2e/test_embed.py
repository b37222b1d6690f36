"""``annograph embed``: annotations written into a copy of the model load back, and the copy still runs the same
in onnxruntime (ONNX) and LiteRT (TFLite)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest

from conftest import ONNX, ROOT, TFLITE, one_line_error, run_cli
from payloads import hostile_tflite
from renderer.annotations.embedded import ENTRY, from_model
from renderer.annotations.registry import load_annotations
from renderer.exporters.embed_tflite import with_metadata
from renderer.loaders.registry import load_model

DEBUGGER = ROOT / "tests" / "fixtures" / "tflite_debugger"

CNN_NOTES = """graph: {title: "Tiny CNN on CPU", meta: {device: "x86, 2 cores"}}
operators:
  - {id: stem/conv, meta: {latency_us: 13.25, note: "tiled x4", calls: 2}, style: {fillcolor: "#ff0000"}}
  - {id: head/fc, meta: {latency_us: 0.5}}
  - {id: "0:3", meta: {latency_us: 7}}
tensors:
  - {id: stem/conv_out, meta: {bytes: 65536}, style: {color: "#00ff00", penwidth: 3}}
"""


def values(notes):  # type: ignore[no-untyped-def]
    return (
        {k: (e.values, e.style) for k, e in notes.ops.items()},
        {k: (e.values, e.style) for k, e in notes.tensors.items()},
    )


def embedded(path: Path):  # type: ignore[no-untyped-def]
    model = load_model(path)
    sets = from_model(model)
    assert len(sets) == 1
    return model, load_annotations([], model, extra=sets)


def ort_outputs(path: Path, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    import onnxruntime as ort

    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def litert_outputs(path: Path, seed: int = 0) -> list[np.ndarray]:
    interpreter_module = pytest.importorskip("ai_edge_litert.interpreter")
    interpreter = interpreter_module.Interpreter(model_path=str(path))
    interpreter.allocate_tensors()
    rng = np.random.default_rng(seed)
    for detail in interpreter.get_input_details():
        if np.issubdtype(detail["dtype"], np.floating):
            data = rng.standard_normal(detail["shape"]).astype(detail["dtype"])
        else:
            info = np.iinfo(detail["dtype"])
            data = rng.integers(info.min, info.max, detail["shape"], endpoint=True).astype(detail["dtype"])
        interpreter.set_tensor(detail["index"], data)
    interpreter.invoke()
    return [interpreter.get_tensor(d["index"]).copy() for d in interpreter.get_output_details()]


# -- ONNX ----------------------------------------------------------------------------------------------------


def test_onnx_embed_loads_back_and_runs_the_same(tmp_path: Path) -> None:
    notes_path = tmp_path / "notes.yaml"
    notes_path.write_text(CNN_NOTES)
    out = tmp_path / "cnn.annotated.onnx"
    run = run_cli("embed", ONNX / "tiny_cnn.onnx", "-a", notes_path, "-o", out)
    assert run.returncode == 0, run.stderr
    model = load_model(ONNX / "tiny_cnn.onnx")
    original = load_annotations(notes_path, model)
    _, back = embedded(out)
    assert values(back) == values(original)
    assert back.graph.values["title"] == "Tiny CNN on CPU" and back.graph.values["license"] == "Apache-2.0"
    # other ONNX tools see the values as node metadata_props
    proto = onnx.load(str(out))
    onnx.checker.check_model(proto, full_check=True)
    conv = next(n for n in proto.graph.node if n.name == "stem/conv")
    assert {p.key: p.value for p in conv.metadata_props} == {
        "latency_us": "13.25",
        "note": "tiled x4",
        "calls": "2",
    }
    assert json.loads({p.key: p.value for p in proto.metadata_props}[ENTRY])["version"] == 1
    rng = np.random.default_rng(1)
    feeds = {"image": rng.standard_normal((1, 3, 32, 32)).astype(np.float32)}
    for a, b in zip(ort_outputs(ONNX / "tiny_cnn.onnx", feeds), ort_outputs(out, feeds), strict=True):
        assert np.array_equal(a, b)


def test_onnx_embed_again_replaces(tmp_path: Path) -> None:
    first, second = tmp_path / "a.yaml", tmp_path / "b.yaml"
    first.write_text("operators:\n  - {id: stem/conv, meta: {old_metric: 1}}\n")
    second.write_text("operators:\n  - {id: head/fc, meta: {new_metric: 2}}\n")
    once, twice = tmp_path / "once.onnx", tmp_path / "twice.onnx"
    assert run_cli("embed", ONNX / "tiny_cnn.onnx", "-a", first, "-o", once).returncode == 0
    assert run_cli("embed", once, "-a", second, "-o", twice).returncode == 0
    proto = onnx.load(str(twice))
    props = {n.name: {p.key for p in n.metadata_props} for n in proto.graph.node}
    assert props["stem/conv"] == set() and props["head/fc"] == {"new_metric"}
    model, back = embedded(twice)
    fc = next(n for n in model.main.nodes if n.name == "head/fc")
    assert list(back.ops) == [fc.key] and back.ops[fc.key].values == {"new_metric": 2}


def test_onnx_subgraph_nodes(tmp_path: Path) -> None:
    notes_path = tmp_path / "cf.yaml"
    notes_path.write_text(
        "operators:\n  - {id: gate/then/double, meta: {latency_us: 3}}\n"
        "  - {id: loop/body/accumulate, meta: {latency_us: 4}}\n  - {id: loop, meta: {latency_us: 9}}\n"
    )
    out = tmp_path / "cf.onnx"
    assert run_cli("embed", ONNX / "control_flow.onnx", "-a", notes_path, "-o", out).returncode == 0
    proto = onnx.load(str(out))
    found = {}

    def walk(graph):  # type: ignore[no-untyped-def]
        for node in graph.node:
            if node.metadata_props:
                found[node.name] = {p.key: p.value for p in node.metadata_props}
            for attr in node.attribute:
                for sub in [attr.g] if attr.type == onnx.AttributeProto.GRAPH else list(attr.graphs):
                    walk(sub)

    walk(proto.graph)
    assert found == {
        "gate/then/double": {"latency_us": "3"},
        "loop/body/accumulate": {"latency_us": "4"},
        "loop": {"latency_us": "9"},
    }
    feeds = {"x": np.arange(4, dtype=np.float32), "trip_count": np.array(3, dtype=np.int64)}
    for a, b in zip(ort_outputs(ONNX / "control_flow.onnx", feeds), ort_outputs(out, feeds), strict=True):
        assert np.array_equal(a, b)


# -- TFLite --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "model_path,notes",
    [
        (DEBUGGER / "tiny_keras_int8.tflite", DEBUGGER / "layer_stats.csv"),
        (TFLITE / "face_detection_short_range.tflite", None),
        (TFLITE / "okay_nabu.tflite", None),
    ],
)
def test_tflite_embed_loads_back_and_runs_the_same(
    tmp_path: Path, model_path: Path, notes: Path | None
) -> None:
    if notes is None:
        notes = tmp_path / "notes.yaml"
        notes.write_text(
            "graph: {title: T}\noperators:\n  - {id: '0', meta: {latency_us: 1.5, note: first}}\n"
            "  - {id: '0:3', meta: {latency_us: 2}, style: {fillcolor: '#123456'}}\n"
            + ("  - {id: '1:2', meta: {latency_us: 3}}\n" if "nabu" in model_path.name else "")
            + "tensors:\n  - {id: '0', meta: {bytes: 12}}\n"
        )
    out = tmp_path / "copy.tflite"
    run = run_cli("embed", model_path, "-a", notes, "-o", out)
    assert run.returncode == 0, run.stderr
    model = load_model(model_path)
    original = load_annotations(notes, model)
    copy, back = embedded(out)
    assert values(back) == values(original)
    assert [len(g.nodes) for g in copy.graphs] == [len(g.nodes) for g in model.graphs]
    assert {k: v for k, v in copy.metadata.items() if k != ENTRY} == model.metadata
    assert copy.signatures == model.signatures
    for a, b in zip(litert_outputs(model_path), litert_outputs(out), strict=True):
        assert np.array_equal(a, b)


def test_tflite_embed_again_reuses_the_entry(tmp_path: Path) -> None:
    source = TFLITE / "okay_nabu.tflite"
    data = source.read_bytes()
    once = with_metadata(data, ENTRY, b'{"version": 1, "operators": []}')
    twice = with_metadata(
        once, ENTRY, b'{"version": 1, "operators": [{"subgraph": 0, "operator": 1, "values": {"x": 1}}]}'
    )
    import tflite

    first, second = tflite.Model.GetRootAsModel(once, 0), tflite.Model.GetRootAsModel(twice, 0)
    assert (
        first.MetadataLength()
        == second.MetadataLength()
        == tflite.Model.GetRootAsModel(data, 0).MetadataLength() + 1
    )
    assert first.BuffersLength() == second.BuffersLength()
    path = tmp_path / "twice.tflite"
    path.write_bytes(twice)
    assert json.loads(bytes(load_model(path).attachments[ENTRY]))["operators"][0]["values"] == {"x": 1}
    _, back = embedded(path)
    assert back.ops[("op", 0, 1)].values == {"x": 1}


def test_tflite_every_model_field_survives() -> None:
    import tflite

    data = hostile_tflite("plain")
    copy = with_metadata(data, ENTRY, b"{}")
    a, b = tflite.Model.GetRootAsModel(data, 0), tflite.Model.GetRootAsModel(copy, 0)
    assert b.Version() == a.Version() and b.Description() == a.Description()
    assert b.SignatureDefs(0).SignatureKey() == a.SignatureDefs(0).SignatureKey()
    assert [b.Metadata(i).Name() for i in range(a.MetadataLength())] == [
        a.Metadata(i).Name() for i in range(a.MetadataLength())
    ]
    assert b.Metadata(a.MetadataLength()).Name() == ENTRY.encode()
    for i in range(a.BuffersLength()):
        assert b.Buffers(i).DataLength() == a.Buffers(i).DataLength()
        if a.Buffers(i).DataLength():
            assert b.Buffers(i).DataAsNumpy().tobytes() == a.Buffers(i).DataAsNumpy().tobytes()
    assert b.Subgraphs(0).Tensors(2).Name() == a.Subgraphs(0).Tensors(2).Name()
    assert (len(copy) - len(data)) % 64 == 0  # every original byte keeps its alignment
    ours = b.Buffers(b.Metadata(a.MetadataLength()).Buffer())
    assert ours._tab.Vector(ours._tab.Offset(4)) % 16 == 0  # the new buffer's data is 16-byte aligned


def test_tflite_buffers_outside_the_flatbuffer_move_with_it() -> None:
    """Models over 2 GiB keep weights after the FlatBuffer at absolute offsets; those must be shifted."""
    import flatbuffers
    import tflite

    payload = np.arange(16, dtype=np.float32).tobytes()
    b = flatbuffers.Builder(256)
    tflite.BufferStart(b)
    empty = tflite.BufferEnd(b)
    tflite.BufferStart(b)
    tflite.BufferAddOffset(b, 1)  # placeholder, patched below once the size is known
    tflite.BufferAddSize(b, len(payload))
    external = tflite.BufferEnd(b)
    b.StartVector(4, 2, 4)
    b.PrependUOffsetTRelative(external)
    b.PrependUOffsetTRelative(empty)
    buffers = b.EndVector()
    tflite.SubGraphStart(b)
    subgraph = tflite.SubGraphEnd(b)
    b.StartVector(4, 1, 4)
    b.PrependUOffsetTRelative(subgraph)
    subgraphs = b.EndVector()
    tflite.ModelStart(b)
    tflite.ModelAddVersion(b, 3)
    tflite.ModelAddSubgraphs(b, subgraphs)
    tflite.ModelAddBuffers(b, buffers)
    b.Finish(tflite.ModelEnd(b), file_identifier=b"TFL3")
    flat = bytearray(b.Output())
    start = (len(flat) + 15) // 16 * 16
    model = tflite.Model.GetRootAsModel(flat, 0)
    # find the offset field of buffer 1 and point it at the data appended after the flatbuffer
    field = bytes(flat).index(np.uint64(1).tobytes())
    flat[field : field + 8] = np.uint64(start).tobytes()
    data = bytes(flat) + b"\0" * (start - len(flat)) + payload
    assert tflite.Model.GetRootAsModel(data, 0).Buffers(1).Offset() == start and model is not None
    copy = with_metadata(data, ENTRY, b'{"version": 1}')
    moved = tflite.Model.GetRootAsModel(copy, 0).Buffers(1)
    assert moved.Offset() == start + (len(copy) - len(data))
    assert copy[moved.Offset() : moved.Offset() + moved.Size()] == payload


# -- errors --------------------------------------------------------------------------------------------------


def test_embed_refuses_to_overwrite_and_empty_matches(tmp_path: Path) -> None:
    notes = tmp_path / "n.yaml"
    notes.write_text("operators:\n  - {id: nothing/here, meta: {x: 1}}\n")
    model = tmp_path / "m.onnx"
    model.write_bytes((ONNX / "tiny_cnn.onnx").read_bytes())
    assert "is an input of this run" in one_line_error(run_cli("embed", model, "-a", notes, "-o", model))
    error = one_line_error(run_cli("embed", model, "-a", notes, "-o", tmp_path / "out.onnx"))
    assert "nothing to embed" in error
    assert not (tmp_path / "out.onnx").exists()


def test_corrupt_embedded_entry_is_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.tflite"
    bad.write_bytes(with_metadata((DEBUGGER / "tiny_keras_int8.tflite").read_bytes(), ENTRY, b"{not json"))
    error = one_line_error(run_cli("render", bad, "-o", tmp_path / "x.svg"))
    assert f"metadata {ENTRY!r}" in error and "invalid JSON" in error


def test_tflite_is_parsed_once_and_embed_writes_what_was_loaded(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The loader's parse serves the embedded-annotation reader and the embedder: no second parse, no second
    read of the file (swapping the file on disk after loading changes nothing)."""
    import os

    import tflite

    from renderer.core.records import Annotations, Entry
    from renderer.exporters.embed_tflite import embed

    source = tmp_path / "nabu.tflite"
    source.write_bytes((TFLITE / "okay_nabu.tflite").read_bytes())
    notes = Annotations(ops={("op", 0, 1): Entry({"x": 1})})
    first = tmp_path / "first.tflite"
    embed(load_model(source), notes, first)

    parses = []
    original = tflite.Model.GetRootAsModel
    monkeypatch.setattr(tflite.Model, "GetRootAsModel",
                        classmethod(lambda cls, buf, offset=0: parses.append(offset) or original(buf, offset)))
    model = load_model(first)
    assert len(parses) == 1
    (found,) = from_model(model)
    assert len(parses) == 1 and found.operators[0][1].values == {"x": 1}

    os.replace(source, tmp_path / "elsewhere.tflite")  # what was loaded is what gets written
    (tmp_path / "junk.tflite").write_bytes(b"not a model")
    os.replace(tmp_path / "junk.tflite", first)
    second = tmp_path / "second.tflite"
    embed(model, Annotations(ops={("op", 0, 2): Entry({"y": 2})}), second)
    again = load_model(second)
    assert [e.values for _, e in from_model(again)[0].operators] == [{"y": 2}]
    assert len(parses) == 2  # only the load of the result


# -- one parse, in the loaders ---------------------------------------------------------------------------------


def _imported_modules(path: Path) -> set[str]:
    """Top-level names of the modules ``path`` imports (relative imports as ``.name``), wherever the import is."""
    import ast

    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names} | {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            found.add("." * node.level + (node.module or "").split(".")[0])
            found |= {f"{node.module}.{alias.name}" for alias in node.names} | {node.module or ""}
    return found


def _calls(path: Path) -> set[str]:
    import ast

    return {node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            for node in ast.walk(ast.parse(path.read_text())) if isinstance(node, ast.Call)}


def test_only_the_loaders_read_tflite_files() -> None:
    """The embedder and the embedded-annotation reader ask the loader (its IR, ``tflite.layout``) instead of
    reading the flatbuffer: no ``tflite``/``flatbuffers`` import, no byte unpacking or offset following (the
    TFLite embedder only writes bytes: its new tables)."""
    package = ROOT / "renderer"
    for name in ("exporters/embed_tflite.py", "exporters/embed_onnx.py", "annotations/embedded.py"):
        path = package / name
        assert not _imported_modules(path) & {"tflite", "flatbuffers", "struct"} - (
            {"struct"} if name == "exporters/embed_tflite.py" else set()), name
        assert not _calls(path) & {"unpack", "unpack_from", "GetRootAsModel", "Offset", "Indirect", "Vector"}, name
    assert not _imported_modules(package / "exporters/embed_onnx.py") & {"renderer.loaders.onnx.wire"}
    outside = [p for p in package.rglob("*.py") if "loaders" not in p.parts
               and _imported_modules(p) & {"tflite", "flatbuffers"}]
    assert outside == []


@pytest.mark.parametrize("model_path", sorted(TFLITE.glob("*.tflite")) + [DEBUGGER / "tiny_keras_float.tflite"],
                         ids=lambda p: p.name)
def test_tflite_embed_through_the_api_reads_back_the_same(tmp_path: Path, model_path: Path) -> None:
    """Every operator and tensor of every subgraph annotated, embedded through the API, read back through the
    loader: the same annotations; the file's own metadata entries stay, in order, with ours after them."""
    from renderer.core.records import Annotations, Entry
    from renderer.exporters.embed_tflite import embed
    from renderer.loaders.tflite import loader as tflite_loader

    model = load_model(model_path)
    notes = Annotations(
        ops={("op", g.index, n.index): Entry({"latency_us": 0.25 * n.index, "note": f"{n.op_type}·{g.index}"},
                                            {"fillcolor": "#102030"} if n.index % 2 else {})
             for g in model.graphs for n in g.nodes},
        tensors={("t", g.index, v.index): Entry({"bytes": v.index}) for g in model.graphs for v in g.values},
    )
    out = tmp_path / model_path.name
    counts = embed(model, notes, out)
    assert counts["operators"] == sum(len(g.nodes) for g in model.graphs) > 0
    copy, back = embedded(out)
    assert values(back) == values(notes)
    before, after = tflite_loader.layout(model), tflite_loader.layout(copy)
    assert [e.name for e in after.metadata] == [e.name for e in before.metadata] + [ENTRY.encode()]
    assert len(after.buffers) == len(before.buffers) + 1
    assert (len(after.data) - len(before.data)) % 64 == 0


def test_onnx_embed_rebuilds_the_file_from_the_loaders_parse(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """``embed`` neither reads nor parses the ONNX file again: with the file swapped on disk after loading and
    every onnx parse entry point counting, it writes what the first load read."""
    import os

    from renderer.core.records import Annotations, Entry
    from renderer.exporters.embed_onnx import embed

    source = tmp_path / "m.onnx"
    source.write_bytes((ONNX / "tiny_cnn.onnx").read_bytes())
    notes = Annotations(ops={("op", 0, 1): Entry({"x": 1})})
    model = load_model(source)
    reference = tmp_path / "reference.onnx"
    embed(load_model(source), notes, reference)

    parses: list[str] = []
    for name in ("load", "load_model", "load_model_from_string"):
        original = getattr(onnx, name)
        monkeypatch.setattr(onnx, name, lambda *a, _name=name, _f=original, **k: parses.append(_name) or _f(*a, **k))
    original_parse = onnx.ModelProto.ParseFromString
    monkeypatch.setattr(onnx.ModelProto, "ParseFromString",
                        lambda self, data: parses.append("ParseFromString") or original_parse(self, data))
    (tmp_path / "junk").write_bytes(b"not a model")
    os.replace(tmp_path / "junk", source)
    out = tmp_path / "out.onnx"
    embed(model, notes, out)
    assert parses == []
    assert out.read_bytes() == reference.read_bytes()


@pytest.mark.parametrize(
    ("name", "dims"),
    [("tiny_cnn.onnx", {}), ("tiny_cnn_dynamic.onnx", {}), ("control_flow.onnx", {}),
     ("silero_vad.onnx", {}), ("light_resnet50.onnx", {}), ("bert_dynamo.onnx", {"batch": 1, "sequence": 8})],
)
def test_onnx_stored_proto_is_the_file_as_stored(name: str, dims: dict[str, int]) -> None:
    """What the loader changed (inferred and pinned shapes, weights left in the mapped file) is put back:
    byte for byte what protobuf makes of the file."""
    from renderer.loaders.onnx.loader import stored_proto

    model = load_model(ONNX / name, dims=dims or None)
    rebuilt = stored_proto(model).SerializeToString()
    assert rebuilt == onnx.load(ONNX / name, load_external_data=False).SerializeToString()
    loaded = model.raw.proto.SerializeToString()
    assert loaded != rebuilt  # the loader's proto really differs (inferred shapes, pinned dims, stripped weights)
    if dims:
        pinned = model.raw.proto.graph.input[0].type.tensor_type.shape.dim
        assert [d.dim_value for d in pinned] == list(dims.values())
