"""The one object model every loader produces and everything downstream reads.

It knows nothing about file formats: loaders (``renderer.loaders.registry.*``) translate ONNX protobufs and TFLite
flatbuffers into these classes, keeping the names exactly as they appear in the file.

Numbering (the ids users type and the SVG element ids):
    * Graphs are numbered ``S`` in the order ``Model.graphs`` holds them: 0 is the main graph, then
      subgraphs in the order ``annograph info`` lists them.
    * Operators are numbered ``N`` by their position in ``Graph.nodes``.
    * Tensors are numbered ``N`` by their position in ``Graph.values``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

Dim = int | str | None
"""A dimension: a known size, a symbolic name (``batch``), or unknown."""


ElementKey = tuple[str, int, int]
"""``("op", S, N)`` for operator N of graph S, ``("t", S, N)`` for tensor N of graph S (``Node.key``, ``Value.key``)."""


@dataclass(slots=True)
class TensorType:
    """Element type and shape of a value.

    Attributes:
        dtype: lower-case numpy-style name (``float32``, ``int8``, ``bool``, ``string``…), or an ONNX sequence, map or
            optional type written out (``seq(map(int64, float32))``, with no shape).
        shape: dims, or None when even the rank is unknown.
        shape_signature: TFLite's signature with -1 for dynamic dims, when it differs from ``shape``.
    """

    dtype: str
    shape: tuple[Dim, ...] | None = None
    shape_signature: tuple[int, ...] | None = None

    @property
    def static_shape(self) -> tuple[int, ...] | None:
        """The shape when every dim is a known non-negative int, else None."""
        if self.shape is None or not all(isinstance(d, int) and d >= 0 for d in self.shape):
            return None
        return tuple(int(d) for d in self.shape)  # type: ignore[arg-type]

    def shape_text(self, full: bool = False) -> str:
        """Shape as ``64×3×7×7`` (``?`` for unknown dims, ``scalar`` for rank 0, the type of a sequence or map).
        Dims a tool invented rather than a user named (``unk__662``, ``DynamicDimension.3``, a derived expression)
        read ``?`` unless ``full``: ``batch×?×768``, not ``batch×unk__662×768``."""
        if self.shape is None:
            return self.dtype if self.container else "?"
        if len(self.shape) == 0:
            return "scalar"
        return "×".join(_dim_text(d, full) for d in self.shape)

    @property
    def container(self) -> bool:
        """An ONNX sequence, map or optional (``seq(map(int64, float32))``): its type is all there is to say."""
        return self.shape is None and self.dtype.endswith(")")

    def __str__(self) -> str:
        return self.dtype if self.container else f"{self.dtype}[{self.shape_text(full=True)}]"


_INVENTED_DIM = re.compile(r"unk__\d+|DynamicDimension\.\d+|.*[()*/+].*|.*\s-\s.*", re.ASCII)
"""Dim names exporters and shape inference make up: tf2onnx's and onnxruntime's ``unk__N``, onnx's
``DynamicDimension.N``, and derived expressions (``floor(seq/2 - 1/2) + 1``)."""


def _dim_text(dim: Dim, full: bool) -> str:
    if dim is None:
        return "?"
    text = str(dim)
    return "?" if not full and isinstance(dim, str) and _INVENTED_DIM.fullmatch(text) else text


@dataclass(slots=True)
class Quantization:
    """Affine quantization parameters: ``real = scale * (q - zero_point)``.

    Attributes:
        scale: one value (per-tensor) or one per channel along ``axis``.
        zero_point: same length as ``scale``.
        axis: the channel axis for per-channel quantization, else None.
    """

    scale: np.ndarray
    zero_point: np.ndarray
    axis: int | None = None

    def __str__(self) -> str:
        if self.scale.size == 1:
            return f"scale={float(self.scale.ravel()[0]):.6g} zp={int(self.zero_point.ravel()[0])}"
        return f"per-channel axis={self.axis} ({self.scale.size} scales)"


@dataclass(slots=True, eq=False)
class Tensor:
    """Constant data, read only when ``numpy()`` is called (external data, mmapped buffers).

    Attributes:
        dtype: as in TensorType.
        shape: static shape of the data.
        reader: returns the array; called at most once, its result cached.
        location: where the bytes live when not inline (an external-data file), for error messages.
        dense_shape: for data stored compressed (a sparse TFLite tensor, whose ``shape`` is that of the stored
            values), the shape it expands to; the values it does not store are zeros. None otherwise.
    """

    dtype: str
    shape: tuple[int, ...]
    reader: Callable[[], np.ndarray] | None = None
    location: str | None = None
    dense_shape: tuple[int, ...] | None = None
    _array: np.ndarray | None = None

    @property
    def logical_size(self) -> int:
        """Number of elements of the tensor the data stands for (the dense tensor, for sparse data)."""
        if self.dense_shape is None:
            return self.size
        return _elements(self.dense_shape)

    @property
    def size(self) -> int:
        """Number of elements."""
        return _elements(self.shape)

    def numpy(self) -> np.ndarray:
        """The data as a numpy array (read on first use)."""
        if self._array is None:
            if self.reader is None:
                raise ValueError("tensor has no data")
            self._array = self.reader()
        return self._array


def _elements(shape: tuple[int, ...]) -> int:
    """The product of ``shape``'s dims in Python integers: numpy's int64 product wraps past 2**63 without a word
    (an OpenVINO IR may declare a Const of 2**62 x 27 elements and hold no data for it)."""
    return math.prod(int(dim) for dim in shape)


class TensorAttribute(str):
    """A tensor-valued attribute (ONNX-ML ``nodes_values_as_tensor``…) as it is shown, ``tensor float32[3×4]``,
    keeping its element type and dims for the metrics; the data itself is not kept."""

    dtype: str
    shape: tuple[int, ...]

    def __new__(cls, dtype: str, shape: tuple[int, ...]) -> TensorAttribute:
        text = super().__new__(cls, f"tensor {dtype}[{'×'.join(str(d) for d in shape) or 'scalar'}]")
        text.dtype, text.shape = dtype, tuple(shape)
        return text

    def __reduce__(self) -> tuple[type, tuple[str, tuple[int, ...]]]:
        return TensorAttribute, (self.dtype, self.shape)

    @property
    def size(self) -> int:
        import numpy as np  # (not at the top: a model restored from the results cache may need no numpy at all)

        return int(np.prod(self.shape, dtype=np.int64)) if self.shape else 1


@dataclass(slots=True, eq=False)
class Value:
    """A tensor flowing between operators (an edge of the graph).

    Invariant: ``graph.values[index] is self``; at most one producer.

    Attributes:
        name: the name in the file (may be empty in TFLite).
        index: position in ``Graph.values`` (the ``t-S-N`` id).
        type: dtype and shape, when known.
        initializer: constant data (ONNX initializer / Constant output, TFLite buffer), else None.
        quantization: TFLite quantization parameters, else None.
        producer: the operator writing it, None for graph inputs and constants.
        consumers: operators reading it, in graph order.
        is_input / is_output: whether it is a graph input or output.
        metadata: key/value strings stored in the file for this tensor.
    """

    name: str
    index: int
    graph: Graph
    type: TensorType | None = None
    initializer: Tensor | None = None
    quantization: Quantization | None = None
    producer: Node | None = None
    consumers: list[Node] = field(default_factory=list)
    is_input: bool = False
    is_output: bool = False
    metadata: dict[str, str] = field(default_factory=dict)

    def __repr__(self) -> str:
        return f"Value({self.graph.index}:{self.index} {self.name!r} {self.type or '?'})"

    @property
    def is_constant(self) -> bool:
        return self.initializer is not None

    @property
    def key(self) -> ElementKey:
        return ("t", self.graph.index, self.index)

    @property
    def element_id(self) -> str:
        """The stable SVG/HTML element id ``t-S-N``."""
        return f"t-{self.graph.index}-{self.index}"


@dataclass(frozen=True, slots=True)
class SubgraphRef:
    """An attribute whose value is one of the model's graphs (an If branch, a Loop body): ``Model.graphs[index]``.

    Shown as ``graph N``, the caption of that graph's cluster.
    """

    index: int

    def __str__(self) -> str:
        return f"graph {self.index}"


@dataclass(slots=True, eq=False)
class Node:
    """An operator.

    Attributes:
        index: position in ``Graph.nodes`` (the ``op-S-N`` id).
        op_type: operator type as the format names it (``Conv``, ``CONV_2D``, a custom op's name).
        domain: ONNX domain ("" for the default), ``custom`` for TFLite custom ops, else "".
        name: the node's own name (ONNX), or "" where the format has none (TFLite).
        category: display category from the op data files (``layer``, ``activation``…, ``other``).
        inputs: consumed values in slot order; None for an omitted optional input.
        input_names: the schema's name for each input slot (``X``, ``W``, ``B``; ``filter``), where known.
        outputs: produced values.
        attributes: attribute name → plain Python value (numbers, strings, lists, shapes), or ``SubgraphRef``
            (or a list of them) for a graph-valued attribute.
        defaults: names of attributes whose value equals the operator schema's default (not shown in boxes).
        subgraphs: graphs this operator runs (If branches, Loop bodies, TFLite IF/WHILE/CALL_ONCE targets).
        metadata: key/value strings stored in the file for this operator.
        title: what its box shows for the name when the name itself is too long to read there (a fused TensorRT
            layer's first part and ``+N fused``); "" shows the name.
    """

    index: int
    graph: Graph
    op_type: str
    domain: str = ""
    name: str = ""
    category: str = "other"
    inputs: list[Value | None] = field(default_factory=list)
    input_names: list[str] = field(default_factory=list)
    outputs: list[Value] = field(default_factory=list)
    attributes: dict[str, Any] = field(default_factory=dict)
    defaults: set[str] = field(default_factory=set)
    subgraphs: list[Graph] = field(default_factory=list)
    metadata: dict[str, str] = field(default_factory=dict)
    title: str = ""

    def __repr__(self) -> str:
        return f"Node({self.graph.index}:{self.index} {self.op_type} {self.name!r})"

    @property
    def key(self) -> ElementKey:
        return ("op", self.graph.index, self.index)

    @property
    def element_id(self) -> str:
        """The stable SVG/HTML element id ``op-S-N``."""
        return f"op-{self.graph.index}-{self.index}"

    @property
    def display_name(self) -> str:
        """The node name, else its first named output, else ``OpType#N``."""
        if self.name:
            return self.name
        for out in self.outputs:
            if out.name:
                return out.name
        return f"{self.op_type}#{self.index}"


@dataclass(slots=True, eq=False)
class Graph:
    """One graph: the main graph or a subgraph.

    Attributes:
        index: position in ``Model.graphs`` (the ``S`` of ids).
        name: name in the file.
        nodes: operators in file order.
        values: every tensor of the graph in a stable order (the ``N`` of ``t-S-N``).
        inputs / outputs: graph inputs and outputs.
        parent: the operator owning this subgraph, None for top-level graphs.
        not_run: for a subgraph the run or profile that gave the model's shapes never entered (an If branch not
            taken), the words saying so, which the n/a of its unknown shapes repeat; "" otherwise.
        value_sized: tensor index → the names of the inputs whose values decide its size, for the sizes left
            unknown because no run on real values gave them (TFLite ``--dim`` without ``--inputs``).
    """

    index: int
    name: str = ""
    nodes: list[Node] = field(default_factory=list)
    values: list[Value] = field(default_factory=list)
    inputs: list[Value] = field(default_factory=list)
    outputs: list[Value] = field(default_factory=list)
    parent: Node | None = None
    not_run: str = ""
    value_sized: dict[int, list[str]] = field(default_factory=dict)

    def __repr__(self) -> str:
        return f"Graph({self.index} {self.name!r}: {len(self.nodes)} nodes, {len(self.values)} values)"

    def add_value(self, name: str, **kwargs: Any) -> Value:
        value = Value(name=name, index=len(self.values), graph=self, **kwargs)
        self.values.append(value)
        return value

    def add_node(self, op_type: str, **kwargs: Any) -> Node:
        node = Node(index=len(self.nodes), graph=self, op_type=op_type, **kwargs)
        self.nodes.append(node)
        return node


@dataclass(frozen=True, slots=True)
class AssumedDim:
    """A free input dim that nothing pinned, and the value the load took for it (``loaders.free_dims``).

    Attributes:
        name: the dim as ``--dim`` pins it.
        value: the size taken.
        role: what it was read as: ``batch``, ``sequence``, ``past``, ``total``, ``height``, ``width``, ``expression``
            or ``other``.
        source: where the value came from: ``default``, ``the model's metadata imgsz``, ``genai_config.json``…
    """

    name: str
    value: int
    role: str
    source: str


@dataclass(slots=True, eq=False)
class Model:
    """A loaded model.

    Attributes:
        format: ``onnx``, ``tflite``, ``torch`` (a torch.export program), ``executorch``, ``tensorrt`` (an
            engine's layer graph), ``openvino`` (an IR) or ``openvino-exec`` (an OpenVINO execution graph).
        path: the file it came from.
        graphs: every graph, main graph first (see the module docstring for numbering).
        producer: the tool that wrote the file, with its version.
        version: format version (ONNX IR version + opsets, TFLite schema version).
        description: the model's doc string or description.
        metadata: model-level key/value strings (ONNX metadata_props, TFLite metadata entry names).
        signatures: TFLite SignatureDefs: name → {"inputs": {...}, "outputs": {...}, "subgraph": S}.
        opsets: ONNX domain → opset version.
        attachments: named data stored beside the graph (TFLite ``Metadata`` buffers; the first entry of a
            name), as views of the loaded file.
    """

    format: str
    path: str
    graphs: list[Graph] = field(default_factory=list)
    producer: str = ""
    version: str = ""
    description: str = ""
    metadata: dict[str, str] = field(default_factory=dict)
    signatures: dict[str, dict[str, Any]] = field(default_factory=dict)
    opsets: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    """What the loader wants the user told (one line each), e.g. how ``--dim`` could be applied."""
    pinnable_dims: list[str] = field(default_factory=list)
    """The names ``--dim`` can pin, as the file declares them (pinning leaves this as it was): the symbolic dims
    of an ONNX model's inputs, a TFLite model's dynamic input axes (``axisK``, ``batch`` for axis 0)."""
    pinned_dims: dict[str, int] = field(default_factory=dict)
    """Every input dim the load pinned by name, given or assumed, and its value (ONNX)."""
    assumed_dims: list[AssumedDim] = field(default_factory=list)
    """The free input dims nothing pinned and the values the shapes were computed with (stated in the legend,
    ``info`` and the metrics headline)."""
    attachments: dict[str, bytes | memoryview] = field(default_factory=dict)
    side_files: list[str] = field(default_factory=list)
    """Files the load read besides ``path`` and its weights' files (an ExecuTorch program's ETRecord): inputs of
    the run, which no output may replace."""
    raw: Any = None
    """The parsed file object (onnx.ModelProto, tflite.Model) for format-specific passes; None when freed."""

    def __repr__(self) -> str:
        return f"Model({self.format} {self.path!r}: {len(self.graphs)} graphs)"

    @property
    def main(self) -> Graph:
        return self.graphs[0]

    def add_graph(self, name: str = "", parent: Node | None = None) -> Graph:
        graph = Graph(index=len(self.graphs), name=name, parent=parent)
        self.graphs.append(graph)
        return graph

    def nodes(self) -> list[Node]:
        """Every operator of every graph, graph by graph."""
        return [n for g in self.graphs for n in g.nodes]

    def values(self) -> list[Value]:
        """Every tensor of every graph, graph by graph."""
        return [v for g in self.graphs for v in g.values]
