"""The OpenVINO XML parser both OpenVINO loaders and the exec-graph reader share: what it reads from a real IR,
and hostile XML refused in one error naming the file and line (entities never expanded, nothing fetched, every
count bounded as it is reached)."""

from __future__ import annotations

from pathlib import Path

import pytest

from renderer.core.errors import LoaderError
from renderer.files import openvino_xml

NET = ('<?xml version="1.0"?>\n<net name="m" version="11">\n<layers>\n'
       '<layer id="0" name="x" type="Parameter" version="opset1"><data shape="1,2" element_type="f32"/>'
       '<output><port id="0" precision="FP32" names="x,x\\,y"><dim>-1</dim><dim>2</dim></port></output>'
       '<rt_info><attribute name="fused_names" version="0" value="x"/></rt_info></layer>\n'
       '<layer id="1" name="r" type="ReLU" version="opset1"><input><port id="0"><dim>1</dim><dim>2</dim></port>'
       '</input><output><port id="1" precision="FP32"><dim>1</dim><dim>2</dim></port></output>'
       '<body><layers><layer id="9" name="inner" type="ReLU"/></layers></body></layer>\n'
       '</layers>\n<edges>\n<edge from-layer="0" from-port="0" to-layer="1" to-port="0"/>\n</edges>\n'
       '<rt_info><Runtime_version value="2026.4"/></rt_info>\n</net>\n')


def _read(tmp_path: Path, text: str | bytes, max_layers: int = 100) -> openvino_xml.Net:
    path = tmp_path / "m.xml"
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return openvino_xml.read_net(path, LoaderError, "an OpenVINO IR", max_layers, 1 << 20)


def test_layers_ports_dims_edges_and_rt_info(tmp_path: Path) -> None:
    net = _read(tmp_path, NET)
    assert (net.name, net.version, net.rt_info) == ("m", "11", {"Runtime_version": "2026.4"})
    assert [(la.id, la.name, la.type, la.version) for la in net.layers] == [
        ("0", "x", "Parameter", "opset1"), ("1", "r", "ReLU", "opset1")]  # the body's layer is not read
    parameter, relu = net.layers
    assert parameter.data == {"shape": "1,2", "element_type": "f32"} and parameter.rt_info == {"fused_names": "x"}
    assert parameter.outputs[0].dims == [None, 2] and parameter.outputs[0].names == "x,x\\,y"
    assert [p.dims for p in relu.inputs] == [[1, 2]] and relu.line == 5
    assert net.edges == [openvino_xml.Edge("0", "0", "1", "0", 8)]


@pytest.mark.parametrize(("text", "expected"), [
    ('<?xml version="1.0"?>\n<!DOCTYPE net [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;">]>\n'
     '<net name="&b;"><layers/></net>', ":2: a DOCTYPE"),
    ('<?xml version="1.0"?>\n<!DOCTYPE net [<!ENTITY s SYSTEM "file:///etc/passwd">]>\n<net name="&s;"/>',
     ":2: a DOCTYPE"),
    ("<graph><layers/></graph>", "not an OpenVINO IR (<net> with <layers>)"),
    ('<net name="m"><edges/></net>', "not an OpenVINO IR (<net> with <layers>)"),
    (NET.replace("<dim>2</dim>", "<dim>²</dim>", 1), ":4: dim '²' is not a size"),
    (NET.replace("<dim>1</dim>", "<dim>1</dim>" * 65, 1), "more than 64 dims"),
    (NET.replace('<edge from-layer="0"', '<edge from-lair="0"'), ":8: an <edge> without"),
    (NET[:200], "invalid XML"),
    (NET.replace("<dim>2</dim>", "<dim>9223372036854775808</dim>", 1), "dim '9223372036854775808' is not a size"),
    (NET.replace("<body>", "<body>" + "<a>" * 80_000 + "</a>" * 80_000, 1), "nested more than 64 deep"),
], ids=["entity-expansion", "external-entity", "root", "no-layers", "unicode-digit", "rank", "edge", "truncated",
        "dim-past-int64", "deep-nesting"])
def test_hostile_xml_is_one_error(text: str, expected: str, tmp_path: Path) -> None:
    with pytest.raises(LoaderError) as caught:
        _read(tmp_path, text)
    assert expected in str(caught.value) and str(tmp_path / "m.xml") in str(caught.value)
    assert "no an" not in str(caught.value)


def test_layers_and_tags_are_bounded_as_they_are_reached(tmp_path: Path) -> None:
    many = NET.replace("</layers>", '<layer id="7" name="a" type="ReLU"/>' * 200 + "</layers>")
    with pytest.raises(LoaderError, match=r"m\.xml:\d+: more than 100 layers"):
        _read(tmp_path, many)
    long_tag = b'<net name="' + b"x" * (openvino_xml.MAX_TAG_BYTES + 10)
    path = tmp_path / "long.xml"
    path.write_bytes(long_tag)
    with pytest.raises(LoaderError, match="without a tag ending"):
        openvino_xml.read_net(path, LoaderError, "an OpenVINO IR", 10, 1 << 26)
