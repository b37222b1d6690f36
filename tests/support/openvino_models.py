"""OpenVINO artefacts made with the real ``openvino`` package (the ``test`` extra): a small ONNX model built
with onnx (conv + bias, ReLU, depthwise conv, max and average pooling, reshape, Linear as Gemm, ReLU, MatMul),
its IR (``openvino.convert_model`` + ``save_model``, float32 or compressed to float16) and the execution graph
of the model compiled on CPU with ``PERF_COUNT`` after a few inferences (``get_runtime_model()`` serialized)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

SVG = "{http://www.w3.org/2000/svg}"
XLINK = "{http://www.w3.org/1999/xlink}"
INPUT = (1, 3, 16, 16)
CONV = (8, 3, 3, 3)
DEPTHWISE = (8, 1, 3, 3)
LINEAR = (10, 128)
MATMUL = (10, 5)


def small_onnx(path: Path) -> Path:
    """The ONNX model (names with a ``block/`` and a ``head/`` scope), written to ``path``."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)

    def weight(name: str, shape: tuple[int, ...], dtype: type = np.float32) -> onnx.TensorProto:
        data = rng.standard_normal(shape).astype(dtype) if dtype is np.float32 else np.array(shape, dtype)
        return numpy_helper.from_array(data, name)

    nodes = [
        helper.make_node("Conv", ["x", "conv.w", "conv.b"], ["c"], name="block/conv", pads=[1, 1, 1, 1],
                         kernel_shape=[3, 3]),
        helper.make_node("Relu", ["c"], ["r"], name="block/relu"),
        helper.make_node("Conv", ["r", "dw.w"], ["d"], name="block/dw", pads=[1, 1, 1, 1], group=8,
                         kernel_shape=[3, 3]),
        helper.make_node("MaxPool", ["d"], ["p"], name="block/pool", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("AveragePool", ["p"], ["a"], name="block/avg", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Reshape", ["a", "flat"], ["f"], name="head/flatten"),
        helper.make_node("Gemm", ["f", "fc.w", "fc.b"], ["g"], name="head/fc", transB=1),
        helper.make_node("Relu", ["g"], ["gr"], name="head/relu"),
        helper.make_node("MatMul", ["gr", "mm.w"], ["y"], name="head/matmul"),
    ]
    initializers = [weight("conv.w", CONV), weight("conv.b", (8,)), weight("dw.w", DEPTHWISE),
                    weight("flat", (1, 128), np.int64), weight("fc.w", LINEAR), weight("fc.b", (10,)),
                    weight("mm.w", MATMUL)]
    graph = helper.make_graph(nodes, "small", [helper.make_tensor_value_info("x", TensorProto.FLOAT, INPUT)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, (1, 5))], initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, path)
    return path


def free_onnx(path: Path) -> Path:
    """x [batch, seq, 16] → MatMul 16×32 + bias → ReLU → MatMul 32×8: free batch and sequence."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(1)
    weights = [numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32), name)
               for name, shape in (("w1", (16, 32)), ("b1", (32,)), ("w2", (32, 8)))]
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h"], name="fc1"), helper.make_node("Add", ["h", "b1"], ["hb"],
             name="fc1/bias"), helper.make_node("Relu", ["hb"], ["r"], name="relu"),
             helper.make_node("MatMul", ["r", "w2"], ["y"], name="fc2")]
    graph = helper.make_graph(nodes, "free", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "seq",
                                                                                                     16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", "seq", 8])], weights)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def save_ir(onnx_path: Path, xml: Path, fp16: bool = False) -> Path:
    """The IR of ``onnx_path`` at ``xml`` (its ``.bin`` beside it)."""
    import openvino

    openvino.save_model(openvino.convert_model(onnx_path), xml, compress_to_fp16=fp16)
    return xml


def save_exec_graph(model_path: Path, xml: Path, runs: int = 3) -> Path:
    """The execution graph of ``model_path`` compiled on CPU with the performance counters on, after ``runs``
    inferences on zeros."""
    import openvino

    compiled = openvino.Core().compile_model(model_path, "CPU", {"PERF_COUNT": "YES"})
    request = compiled.create_infer_request()
    for _ in range(runs):
        request.infer({compiled.inputs[0]: np.zeros(INPUT, np.float32)})
    openvino.serialize(compiled.get_runtime_model(), xml)
    return xml


def small_set(folder: Path) -> dict[str, Path]:
    """The small ONNX model written in ``folder`` (``onnx``) and what openvino makes of it: its IR (``ir``), the IR
    compressed to float16 (``fp16``), the execution graph of the ONNX model (``exec``) and of the IR after five
    inferences (``exec_ir``)."""
    onnx_path = small_onnx(folder / "small.onnx")
    ir = save_ir(onnx_path, folder / "small.xml")
    return {"onnx": onnx_path, "ir": ir, "fp16": save_ir(onnx_path, folder / "small_fp16.xml", fp16=True),
            "exec": save_exec_graph(onnx_path, folder / "small.exec.xml"),
            "exec_ir": save_exec_graph(ir, folder / "small_ir.exec.xml", runs=5)}


def xml_text(text: str) -> str:
    """``text`` without the characters XML 1.0 cannot hold (any XML writer must leave them out)."""
    return "".join(c for c in text if c in "\t\n\r" or ("\x20" <= c <= "\ud7ff") or ("\ue000" <= c <= "\ufffd")
                   or c >= "\U00010000")


def _port(index: int, dims: tuple[int, ...], names: str = "", precision: str = "FP32") -> str:
    from xml.sax.saxutils import quoteattr

    named = f" names={quoteattr(names)}" if names else ""
    return (f'<port id="{index}" precision="{precision}"{named}>' + "".join(f"<dim>{d}</dim>" for d in dims)
            + "</port>")


def hostile_net(text: str, executed: bool = False) -> bytes:
    """An IR (or, ``executed``, an execution graph) carrying ``text`` in its net, layer and tensor names, a
    layer's type, its ``<data>`` values (an execution graph's ``originalLayersNames`` and ``primitiveType``):
    Parameter → Convolution with a Const weight (its 16 bytes at offset 0 of the ``.bin``) → a layer typed
    ``text`` → Result."""
    from xml.sax.saxutils import quoteattr

    clean = xml_text(text)
    q = quoteattr(clean)
    timing = (f' execTimeMcs="12" originalLayersNames={quoteattr(clean + "," + clean + "·add")} '
              f"primitiveType={q} runtimePrecision={q}") if executed else ""
    version = "" if executed else ' version="opset1"'
    kinds = ("Input", "Const", "Output") if executed else ("Parameter", "Const", "Result")
    layers = [
        f'<layer id="0" name={q} type="{kinds[0]}"{version}><data shape="1,1,2,2" element_type="f32"{timing}/>'
        f"<output>{_port(0, (1, 1, 2, 2), clean)}</output></layer>",
        f'<layer id="1" name={quoteattr(clean + "·w")} type="{kinds[1]}"{version}><data element_type="f32" '
        f'shape="1,1,2,2" offset="0" size="16"/><output>{_port(0, (1, 1, 2, 2))}</output></layer>',
        f'<layer id="2" name={quoteattr(clean + "/conv")} type="Convolution"{version}><data strides="1, 1" '
        f"auto_pad={q}{timing}/><input>{_port(0, (1, 1, 2, 2))}{_port(1, (1, 1, 2, 2))}</input>"
        f"<output>{_port(2, (1, 1, 1, 1), clean + '/out')}</output></layer>",
        f'<layer id="3" name={quoteattr(clean + "/odd")} type={quoteattr(clean or "X")}{version}><data mode={q}'
        f"{timing}/><input>{_port(0, (1, 1, 1, 1))}</input><output>{_port(1, (1, 1, 1, 1), clean + '·y')}</output>"
        "</layer>",
        f'<layer id="4" name={quoteattr(clean + "·sink")} type="{kinds[2]}"{version}>'
        f"<input>{_port(0, (1, 1, 1, 1))}</input></layer>"]
    edges = [(0, 0, 2, 0), (1, 0, 2, 1), (2, 2, 3, 0), (3, 1, 4, 0)]
    return ("<?xml version=\"1.0\"?>\n" + f"<net name={q} version=\"11\">\n<layers>\n" + "\n".join(layers)
            + "\n</layers>\n<edges>\n" + "\n".join(f'<edge from-layer="{a}" from-port="{b}" to-layer="{c}" '
                                                 f'to-port="{d}"/>' for a, b, c, d in edges)
            + "\n</edges>\n</net>\n").encode()


def svg_boxes(svg: Path) -> dict[str, tuple[str, str, str]]:
    """Each operator box of the SVG picture by the name its tooltip gives: (its text, its tooltip, its fill); a
    name drawn twice fails."""
    import xml.etree.ElementTree as ET

    found: dict[str, tuple[str, str, str]] = {}
    for group in ET.parse(svg).getroot().iter(f"{SVG}g"):
        if group.get("id", "").startswith("op-") and "op" in group.get("class", "").split():
            link = next(group.iter(f"{SVG}a"), None)
            tip = (link.get(f"{XLINK}title") or "") if link is not None else ""
            name = next(line[6:] for line in tip.splitlines() if line.startswith("name: "))
            assert name not in found, f"{name} drawn twice"
            text = " ".join(" ".join("".join(t.itertext()) for t in group.iter(f"{SVG}text")).split())
            found[name] = (text, tip, [p.get("fill") for p in group.iter(f"{SVG}polygon")][0])
    return found
