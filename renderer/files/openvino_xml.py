"""OpenVINO's XML graphs, read once for everything that reads them: the IR's ``.xml`` (``openvino.save_model``,
``ovc``) and the execution graph of a compiled model (``benchmark_app -exec_graph_path``,
``serialize(compiled_model.get_runtime_model(), …)``). Both are ``<net name version><layers><layer id name type
[version]><data …/><input><port id precision [names]><dim>…</dim></port></input><output>…</output>
<rt_info>…</rt_info></layer>…</layers><edges><edge from-layer from-port to-layer to-port/>…</edges></net>``.

The file is parsed by the standard library's expat in chunks as it is read: no DTD is accepted (a
``<!DOCTYPE`` is refused before any entity can be declared, so neither entity expansion nor external entities
can happen; OpenVINO never writes one), a tag or text longer than ``MAX_TAG_BYTES`` is refused before expat
holds more of it, and the layers, ports, dims per port and edges are bounded as they are reached. Layers inside
a layer's ``<body>`` (TensorIterator, Loop, If) are not read.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from renderer.core.errors import AnnographError
from renderer.files import inputs

MAX_TAG_BYTES = 1 << 24
"""Longest tag or text (16 MiB): a longer one is refused as soon as that much of it is read."""
MAX_PORTS = 1 << 16
"""Ports of one layer."""
MAX_RANK = 64
MAX_DEPTH = 64
"""Deepest element nesting: an IR nests 6 deep, 3 more per TensorIterator/Loop/If body; deeper is refused
(each element's handling looks at the path to it, so unbounded nesting would cost its square)."""
MAX_DIM = (1 << 63) - 1
"""OpenVINO's dims are int64."""
PORTS_PER_LAYER = 16
"""The ports and edges of a file: at most this many per layer (plus ``MAX_PORTS``) in all."""


@dataclass(slots=True)
class Port:
    """One ``<port>`` of a layer's ``<input>`` or ``<output>``: its dims as integers (None for a dynamic one:
    ``-1``, ``?`` or a range ``1..8``), ``precision`` (``FP32``) and tensor ``names`` as written."""

    id: str
    precision: str
    names: str
    dims: list[int | None] = field(default_factory=list)
    element_type: str = ""


@dataclass(slots=True)
class Layer:
    """One ``<layer>`` under ``<net><layers>``: its attributes, ``<data>`` attributes, ports, the
    ``<rt_info><attribute name value>`` entries (``fused_names``…), and where it starts in the file."""

    id: str
    name: str
    type: str
    version: str
    line: int
    column: int
    data: dict[str, str] = field(default_factory=dict)
    inputs: list[Port] = field(default_factory=list)
    outputs: list[Port] = field(default_factory=list)
    rt_info: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Edge:
    """One ``<edge>``: the output port ``from_port`` of layer ``from_layer`` feeds input port ``to_port`` of
    ``to_layer`` (layer and port ids as written)."""

    from_layer: str
    from_port: str
    to_layer: str
    to_port: str
    line: int


@dataclass(slots=True)
class Net:
    """The ``<net>``: its name and IR version, its layers in file order and its edges."""

    name: str = ""
    version: str = ""
    layers: list[Layer] = field(default_factory=list)
    edges: list[Edge] = field(default_factory=list)
    rt_info: dict[str, str] = field(default_factory=dict)
    """The net's own ``<rt_info>`` entries with a value (``Runtime_version``, ``<info name value>``)."""
    listed: bool = False
    """A ``<layers>`` was found under ``<net>``."""


_LAYER = ("net", "layers", "layer")
_PORT_SIDES = ("input", "output")


class _Parse:
    """expat's handlers for one file."""

    def __init__(self, path: Path, error: type[AnnographError], what: str, max_layers: int) -> None:
        import xml.parsers.expat

        self.path, self.error, self.what, self.max_layers = path, error, what, max_layers
        self.max_ports = PORTS_PER_LAYER * max_layers + MAX_PORTS
        self.parser = xml.parsers.expat.ParserCreate()
        self.parser.StartElementHandler = self.start
        self.parser.EndElementHandler = self.end
        self.parser.CharacterDataHandler = self.text
        self.parser.StartDoctypeDeclHandler = self.doctype
        self.stack: list[str] = []
        self.net = Net()
        self.port: Port | None = None
        self.dim: list[str] | None = None
        self.ports = 0
        self.last = 0  # the byte where the last element started or ended

    def fail(self, message: str) -> AnnographError:
        return self.error(f"{self.path}:{self.parser.CurrentLineNumber}: {message}")

    def doctype(self, *_args: object) -> None:
        raise self.fail(f"a DOCTYPE, which {self.what} never has (refused: entities are not expanded)")

    def start(self, tag: str, attributes: dict[str, str]) -> None:
        depth = len(self.stack)
        if depth >= MAX_DEPTH:
            raise self.fail(f"elements nested more than {MAX_DEPTH} deep (OpenVINO nests far less); not read further")
        if depth == 0:
            if tag != "net":
                raise self.error(f"{self.path}: not {self.what} (<net> with <layers>)")
            self.net.name, self.net.version = attributes.get("name", ""), attributes.get("version", "")
        elif depth == 1 and tag == "layers":
            self.net.listed = True
        elif depth == 2 and self.stack == ["net", "layers"] and tag == "layer":
            self.layer(attributes)
        elif depth == 2 and self.stack == ["net", "edges"] and tag == "edge":
            self.edge(attributes)
        elif depth == 2 and self.stack == ["net", "rt_info"] and "value" in attributes and len(self.net.rt_info) < 64:
            self.net.rt_info[attributes.get("name", tag) if tag == "info" else tag] = attributes["value"]
        elif depth >= 3 and self.stack[:3] == list(_LAYER):
            self.in_layer(tag, attributes)
        self.stack.append(tag)
        self.last = self.parser.CurrentByteIndex

    def layer(self, attributes: dict[str, str]) -> None:
        if len(self.net.layers) >= self.max_layers:
            raise self.fail(f"more than {self.max_layers:,} layers")
        line, column = self.parser.CurrentLineNumber, self.parser.CurrentColumnNumber + 1
        self.net.layers.append(Layer(attributes.get("id", ""), attributes.get("name", ""),
                                     attributes.get("type", ""), attributes.get("version", ""), line, column))

    def edge(self, attributes: dict[str, str]) -> None:
        self.count_port()
        keys = ("from-layer", "from-port", "to-layer", "to-port")
        if any(key not in attributes for key in keys):
            raise self.fail("an <edge> without from-layer, from-port, to-layer and to-port")
        self.net.edges.append(Edge(*(attributes[key] for key in keys), self.parser.CurrentLineNumber))

    def in_layer(self, tag: str, attributes: dict[str, str]) -> None:
        """An element inside the current layer: its ``<data>``, ports and dims, ``<rt_info>`` attributes."""
        inner = self.stack[3:]
        layer = self.net.layers[-1]
        if not inner and tag == "data":
            layer.data.update(attributes)
        elif len(inner) == 1 and inner[0] in _PORT_SIDES and tag == "port":
            self.count_port()
            side = layer.inputs if inner[0] == "input" else layer.outputs
            if len(side) >= MAX_PORTS:
                raise self.fail(f"more than {MAX_PORTS:,} {inner[0]} ports")
            self.port = Port(attributes.get("id", ""), attributes.get("precision", ""), attributes.get("names", ""),
                             element_type=attributes.get("element_type", ""))
            side.append(self.port)
        elif len(inner) == 2 and inner[0] in _PORT_SIDES and tag == "dim" and self.port is not None:
            if len(self.port.dims) >= MAX_RANK:
                raise self.fail(f"a port with more than {MAX_RANK} dims")
            self.dim = []
        elif inner == ["rt_info"] and tag == "attribute" and "name" in attributes:
            layer.rt_info[attributes["name"]] = attributes.get("value", "")

    def count_port(self) -> None:
        self.ports += 1
        if self.ports > self.max_ports:
            raise self.fail(f"more than {self.max_ports:,} ports and edges for {len(self.net.layers):,} layers")

    def text(self, data: str) -> None:
        if self.dim is not None:
            self.dim.append(data)

    def end(self, tag: str) -> None:
        self.stack.pop()
        if self.dim is not None and tag == "dim":
            self.port.dims.append(dim_value("".join(self.dim).strip(), self))  # type: ignore[union-attr]
            self.dim = None
        elif tag == "port":
            self.port = None
        self.last = self.parser.CurrentByteIndex

    def feed(self, chunk: bytes, fed: int) -> None:
        """Parse the next ``chunk``, ``fed`` bytes having been parsed before it."""
        self.parser.Parse(chunk, False)
        if fed + len(chunk) - self.last > MAX_TAG_BYTES:
            raise self.fail(f"more than {MAX_TAG_BYTES:,} bytes without a tag ending, longer than any "
                            "OpenVINO writes; not read further")


def dim_value(text: str, parse: _Parse) -> int | None:
    """A ``<dim>``'s text as a size: an integer ≥ 0, None for a dynamic dim (``-1``, ``?``, ``1..8``)."""
    if text in ("-1", "?") or ".." in text:
        return None
    if not (text.isascii() and text.isdigit()) or len(text) > 19 or int(text) > MAX_DIM:
        raise parse.fail(f"dim {text[:40]!r} is not a size (OpenVINO's dims are int64)")
    return int(text)


def read_net(path: Path, error: type[AnnographError], what: str, max_layers: int, max_bytes: int) -> Net:
    """The net of the OpenVINO XML file at ``path`` (``what`` names the kind of file in messages), with at most
    ``max_layers`` layers and ``max_bytes`` bytes; anything else is ``error`` naming the file (and the line)."""
    import xml.parsers.expat

    parse = _Parse(path, error, what, max_layers)
    try:
        fed = 0
        for chunk in inputs.chunks(path, max_bytes, error, what):
            parse.feed(chunk, fed)
            fed += len(chunk)
        parse.parser.Parse(b"", True)
    except xml.parsers.expat.ExpatError as e:
        raise error(f"{path}:{e.lineno}: invalid XML ({xml.parsers.expat.ErrorString(e.code)})") from None
    except RecursionError:
        raise error(f"{path}: invalid XML (nested too deeply)") from None
    if not parse.net.listed:
        raise error(f"{path}: not {what} (<net> with <layers>)")
    return parse.net
