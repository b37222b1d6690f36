"""TFLite loader: a ``.tflite`` flatbuffer → ir.Model, through the ``tflite`` package's generated accessors.

Numbering follows the file, so the ids users type are the ones TFLite tools print:
    * graph ``S`` is subgraph ``S`` (0 is the main graph);
    * ``Graph.values[N]`` is tensor ``N`` of its subgraph, ``Graph.nodes[N]`` is operator ``N``.

Operators that run other subgraphs (IF, WHILE, CALL, CALL_ONCE, the StableHLO ops with a body) list the
targets in ``Node.subgraphs``; each target's ``parent`` is the first operator, in graph then operator order,
that references it. The main graph never gets a parent; a reference cycle is a LoaderError.

Builtin options become ``Node.attributes`` with snake_case names (``stride_w``, ``fused_activation_function``);
enums become their schema names (``SAME``, ``RELU6``) and tensor types their dtype names (``int32``).
Custom operators have ``domain="custom"``, the custom code as ``op_type`` and ``custom_options_bytes``.

Constant data is never copied at load time: the file is memory-mapped and each constant's ``ir.Tensor``
reader returns a read-only numpy view over it. Exceptions: ``int4`` data is unpacked to int8, ``bfloat16``
is widened to float32 and ``string`` tensors decode to an object array of bytes. A sparse tensor's data is its
stored values, a flat 1-D tensor whose ``dense_shape`` is the tensor's shape when its sparsity parameters
(``tflite_sparsity``) index exactly the values the buffer holds; ``Value.metadata["sparsity"]`` describes them.
A constant whose buffer does not match its shape (corrupt files) gets a flat 1-D tensor of whatever the buffer
holds and a ``Value.metadata["data"]`` note.

``dims`` pins dynamic dimensions (-1 in ``shape_signature``) by position: ``axisK`` for axis K, ``batch`` for
axis 0. The main graph's inputs are resized and LiteRT propagates the shapes through every operator
(``litert_shapes``); where it cannot, each tensor's own -1 axes are pinned by position, and a note on the model
says why. Signatures keep their -1. A key naming no dynamic axis of an input is an error (``pinning``).
``--inputs FILE.npz`` resizes the inputs to its arrays' shapes instead and runs the model once on them, so sizes
only the values decide are those of that run; on a model without dynamic dims a note says they are not needed.

Dynamic axes nothing pins keep the file's placeholder sizes (``Model.assumed_dims``), but a length or image side
written as 1, which ``lengths`` sizes as ``free_dims`` does an ONNX model's, where LiteRT prepares the model at it.
Tensors with a dynamic axis past the batch that LiteRT's preparation leaves at 1 (kernels that size their output
while running) take the shapes of one LiteRT run on zero inputs (``_run_shapes``).

``Model.raw`` is ``(tflite.Model, buffer)``: the flatbuffer accessor and the mapped file bytes it reads.
Writers that edit a copy of the file (``annograph embed``) ask ``layout`` where its parts are, rather than
reading the flatbuffer themselves.
"""

from __future__ import annotations

import inspect
import math
import mmap
import re
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from renderer.core import ir
from renderer.core.errors import LoaderError, OperatorDataError, first_line
from renderer.data.categories import category
from renderer.data.operators import operator
from renderer.loaders.mapped import map_file
from renderer.loaders.protocol import RealValues
from renderer.loaders.registry import decode_text, refuse_impossible_shapes
from renderer.loaders.tflite import layout as tflite_layout
from renderer.loaders.tflite import lengths, litert_shapes
from renderer.loaders.tflite import sparsity as tflite_sparsity
from renderer.loaders.value_sizes import named, tflite_value_sized

if TYPE_CHECKING:
    import numpy as np
    import tflite

FORMAT = "tflite"
EXTENSIONS = (".tflite", ".lite", ".tfl")

_IDENTIFIER = tflite_layout.IDENTIFIER
_MAX_SCHEMA_VERSION = 3
_OFFSET_SIZE = 4  # a vector of tables stores one 4-byte offset per element

# Options fields holding an enum, by accessor name → enum class name in the tflite package.
_ENUM_FIELDS = {
    "Padding": "Padding",
    "FusedActivationFunction": "ActivationFunctionType",
    "KernelType": "LSTMKernelType",
    "Combiner": "CombinerType",
    "Mode": "MirrorPadMode",
    "WeightsFormat": "FullyConnectedOptionsWeightsFormat",
    "ComparisonDirection": "StablehloComparisonDirection",
    "CompareType": "StablehloComparisonType",
    "PrecisionConfig": "StablehloPrecisionConfig",
    "Algorithm": "RngAlgorithm",
    "ReduceFunction": "ReduceWindowFunction",
    "CompositeAttributesFormat": "CustomOptionsFormat",
    "QuantizedBiasType": "TensorType",
    "InDataType": "TensorType",
    "OutDataType": "TensorType",
    "OutputType": "TensorType",
    "OutType": "TensorType",
    "IdxOutType": "TensorType",
    "KeyDtype": "TensorType",
    "ValueDtype": "TensorType",
}
# Same accessor name, different enum.
_ENUM_FIELDS_BY_CLASS = {("LSHProjectionOptions", "Type"): "LSHProjectionType"}
# Fields whose zero means "not set" rather than the enum's first member (FLOAT32), left out when zero.
_UNSET_WHEN_ZERO = {"QuantizedBiasType"}

# TensorType name → (ir dtype name, little-endian numpy dtype for the stored bytes or None).
_DTYPES: dict[str, tuple[str, str | None]] = {
    "FLOAT32": ("float32", "<f4"),
    "FLOAT16": ("float16", "<f2"),
    "FLOAT64": ("float64", "<f8"),
    "BFLOAT16": ("bfloat16", "<u2"),
    "INT4": ("int4", "u1"),
    "INT8": ("int8", "i1"),
    "INT16": ("int16", "<i2"),
    "INT32": ("int32", "<i4"),
    "INT64": ("int64", "<i8"),
    "UINT8": ("uint8", "u1"),
    "UINT16": ("uint16", "<u2"),
    "UINT32": ("uint32", "<u4"),
    "UINT64": ("uint64", "<u8"),
    "BOOL": ("bool", "?"),
    "COMPLEX64": ("complex64", "<c8"),
    "COMPLEX128": ("complex128", "<c16"),
    "STRING": ("string", None),
    "RESOURCE": ("resource", None),
    "VARIANT": ("variant", None),
}


def match(head: bytes) -> bool:
    """A flatbuffer carrying the TFLite file identifier ``TFL3``."""
    return len(head) >= 8 and head[4:8] == _IDENTIFIER


def _mapped(path: Path) -> bytes | mmap.mmap:
    buffer = map_file(path)
    if len(buffer) < 8 or buffer[4:8] != _IDENTIFIER:
        raise LoaderError(f"{path}: not a TFLite model (no TFL3 file identifier)")
    return buffer


def pinnable(path: Path) -> list[str]:
    """The names ``--dim`` can pin in the model at ``path`` (its inputs' dynamic axes), without loading it."""
    try:
        return _Builder(path, _mapped(path), {}).dynamic_input_axes()
    except LoaderError:
        raise
    except Exception as e:
        raise LoaderError(f"{path}: not a valid TFLite model (truncated or corrupt: {_describe(e)})") from None


def load(path: Path, dims: dict[str, int] | None = None, check_dims: bool = True,
         shape_run: bool = True, values: RealValues | None = None, assume: bool = True) -> ir.Model:
    """Parse ``path`` (see the module docstring); any failure is a one-line LoaderError naming the file.
    ``check_dims``: a ``dims`` name that is no dynamic input axis is an error (else it is left out).
    ``shape_run``: False pins dynamic axes by position without asking LiteRT to carry them through. ``values``
    ``values``: the arrays of ``--inputs`` resize the inputs and LiteRT runs once on them (``litert_shapes``);
    onnxruntime profiles are for ONNX models (a note says so when given). ``assume``: the dynamic axes nothing
    pins keep the file's placeholder sizes, listed in ``Model.assumed_dims``."""
    buffer = _mapped(path)
    from renderer.core.pinning import resolve

    try:
        builder = _Builder(path, buffer, {})
        free = builder.dynamic_input_axes()
        builder.dims = dims = resolve(path, dims, free, (), check_dims)
        values = values or RealValues()
        sized = lengths.assumed_sizes(path, builder.main_inputs(), dims) \
            if assume and shape_run and values.inputs is None else []
        builder.dims = dims = {**dims, **{a.name: a.value for a in sized}}
        model = builder.build()
        model.pinnable_dims = free
        if assume and values.inputs is None:
            model.assumed_dims = sorted(_placeholders(model.main, dims) + sized,
                                        key=lambda a: 0 if a.name == "batch" else int(a.name.removeprefix("axis")))
        if shape_run and values.inputs is None:
            if dims:
                _propagate_shapes(path, model, dims)
            if _run_shapes(path, model) or dims:
                _forget_value_sizes(path, model)
    except (LoaderError, OperatorDataError):  # the data's fault, not the model's
        raise
    except Exception as e:  # flatbuffers surfaces corruption as struct.error, IndexError, TypeError, ValueError…
        raise LoaderError(f"{path}: not a valid TFLite model (truncated or corrupt: {_describe(e)})") from None
    if values.inputs is not None:
        _shapes_from_inputs(path, model, values.inputs, shape_run)
    if values.profiles:
        model.notes.append(f"{path}: onnxruntime profiles give shapes to ONNX models only; a TFLite model's come "
                           "from the file, --dim and --inputs")
    return refuse_impossible_shapes(model, path)


def _placeholders(graph: ir.Graph, dims: dict[str, int]) -> list[ir.AssumedDim]:
    """The dynamic input axes ``dims`` leaves free, at the size the file's shape gives them (the shapes are
    computed with it): ``batch`` for axis 0, ``axisK`` for the others."""
    found: dict[int, int] = {}
    for value in graph.inputs:
        t = value.type
        if t is None or t.shape is None or t.shape_signature is None or len(t.shape) != len(t.shape_signature):
            continue
        for axis, (size, declared) in enumerate(zip(t.shape, t.shape_signature)):
            if declared == -1 and isinstance(size, int) and litert_shapes.axis_value(dims, axis) is None:
                found.setdefault(axis, size)
    return [ir.AssumedDim("batch" if axis == 0 else f"axis{axis}", size, "batch" if axis == 0 else "other",
                          "the file's placeholder") for axis, size in sorted(found.items())]


def layout(source: ir.Model | bytes, path: Path = Path("model.tflite")) -> tflite_layout.Layout:
    """Where the parts of the file lie (``tflite_layout``), for writers that edit a copy: for a loaded model,
    read from the loader's own parse and mapping of the file (not a second parse or read); for bytes, from
    a parse of them."""
    if isinstance(source, ir.Model):
        if source.format != FORMAT or not isinstance(source.raw, tuple):
            raise LoaderError(f"{source.path}: not a loaded TFLite model")
        fb, buffer = source.raw
        return tflite_layout.read(buffer, Path(source.path), fb)
    return tflite_layout.read(source, path)


def _propagate_shapes(path: Path, model: ir.Model, dims: dict[str, int]) -> None:
    """Replace the position-pinned shapes of the main graph by LiteRT's, where the inputs have pinned axes."""
    resized = {}
    for value in model.main.inputs:
        t = value.type
        if t is None or t.shape is None or t.shape_signature is None:
            continue
        if any(size == -1 and litert_shapes.axis_value(dims, axis) is not None
               for axis, size in enumerate(t.shape_signature)):
            resized[value.index] = t.shape  # already pinned by position
    if not resized:
        return
    shapes, reason = litert_shapes.propagate(path, resized)
    if not shapes:
        model.notes.append(f"{path}: --dim pinned each tensor's dynamic axes by position: {reason}")
        return
    _take_shapes(model, shapes)


def _run_shapes(path: Path, model: ir.Model) -> bool:
    """Give the tensors whose dynamic axes past the batch LiteRT's preparation leaves at the file's placeholder
    (sizes its kernels work out only while running: BirdNET's spectrogram frames, a RANGE over the input's length
    read by SHAPE) the sizes of one LiteRT run on zero inputs of the shapes in force, as ONNX models get
    onnxruntime's; a note says how many. Whether the run gave any; without a runtime, or when it cannot run
    the model (custom ops), the shapes stay as they were."""
    import numpy as np

    graph = model.main
    inputs = {value.index for value in graph.inputs}
    dynamic = [value for value in graph.values if value.index not in inputs and value.initializer is None
               and value.type is not None and -1 in (value.type.shape_signature or ())[1:]]
    if not dynamic:
        return False
    feeds = {}
    for value in graph.inputs:
        shape = value.type.shape if value.type is not None else None
        try:
            dtype = np.dtype(value.type.dtype) if value.type is not None else None
        except TypeError:
            dtype = None
        if shape is None or None in shape or dtype is None or dtype.kind not in "biuf":
            return False
        feeds[value.index] = np.zeros(shape, dtype)
    shapes, _ = litert_shapes.propagate(path, {index: array.shape for index, array in feeds.items()}, feeds)
    changed = [value for value in dynamic if value.type.shape is not None
               and shapes.get(value.index, value.type.shape) != tuple(value.type.shape)]
    if not changed:
        return False
    _take_shapes(model, shapes)
    model.notes.append(f"{path}: shapes of {len(changed)} of {len(dynamic)} tensors with dynamic dims that LiteRT's "
                       "preparation cannot reach were taken from one LiteRT run on zero inputs")
    return True


def _forget_value_sizes(path: Path, model: ir.Model) -> None:
    """Leave unknown the dynamic dims of the tensors whose size the inputs' values decide (``value_sizes``):
    neither LiteRT's preparation nor pinning by position knows them (a placeholder 1 or a pinned axis would
    count wrong MACs without a word). A note names them and ``--inputs``."""
    graph = model.main
    graph.value_sized = tflite_value_sized(graph)
    if not graph.value_sized:
        return
    for index in graph.value_sized:
        t = graph.values[index].type
        if t is not None and t.shape is not None and t.shape_signature is not None \
                and len(t.shape_signature) == len(t.shape):
            shape = tuple(None if declared == -1 else size for size, declared in zip(t.shape, t.shape_signature))
            graph.values[index].type = ir.TensorType(t.dtype, shape, t.shape_signature)
    sized = [graph.values[index] for index in sorted(graph.value_sized)]
    names = named([value.name or f"tensor {value.index}" for value in sized])
    deciding = named(list(dict.fromkeys(name for value in sized for name in graph.value_sized[value.index])))
    count = f"{len(sized)} tensor sizes depend" if len(sized) > 1 else "1 tensor size depends"
    model.notes.append(f"{path}: {count} on input values ({names}; from the values of {deciding}), which --dim "
                       "cannot give: they are left unknown; --inputs FILE.npz gives their real sizes")


def _take_shapes(model: ir.Model, shapes: dict[int, tuple[int, ...]]) -> None:
    """Give the main graph's activations LiteRT's shapes (tensor index → shape)."""
    for value in model.main.values:
        shape = shapes.get(value.index)
        if value.type is not None and shape is not None and value.initializer is None:
            value.type = ir.TensorType(value.type.dtype, shape, value.type.shape_signature)


def _shapes_from_inputs(path: Path, model: ir.Model, npz: Path, shape_run: bool) -> None:
    """The main graph's shapes from one LiteRT run on the arrays of ``npz`` (``--inputs``), its inputs resized to
    theirs; a note saying where they came from, or that every shape is static and needs no values."""
    feeds = litert_shapes.read_feeds(npz, model.main.inputs)
    dynamic = [value for value in model.main.values
               if value.type is not None and -1 in (value.type.shape_signature or ())]
    if not dynamic:
        model.notes.append(f"{path}: every tensor shape is static (no dynamic dims), so the input values of {npz} "
                           "are not needed for them")
        return
    if not shape_run:
        return
    resized = {i: tuple(a.shape) for i, a in feeds.items()}
    shapes, reason = litert_shapes.propagate(path, resized, feeds)
    if not shapes:
        prepared, _ = litert_shapes.propagate(path, resized)  # the arrays' shapes, carried as far as LiteRT can
        _take_shapes(model, prepared)
        kept = "; shapes are those LiteRT prepares for the arrays' shapes" if prepared else ""
        model.notes.append(f"{path}: {len(dynamic)} tensors have dynamic dims, and {reason}{kept}")
        return
    _take_shapes(model, shapes)
    model.notes.append(f"{path}: shapes of {len(dynamic)} tensors with dynamic dims were taken from one LiteRT run "
                       f"on the inputs of {npz}")


def _describe(e: BaseException) -> str:
    kind = type(e)
    name = kind.__qualname__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"
    return f"{name}: {first_line(e, empty='no details')}"


def _snake(name: str) -> str:
    """``DilationHFactor`` → ``dilation_h_factor``, ``AdjX`` → ``adj_x``, ``PotScaleInt16`` → ``pot_scale_int16``."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name).lower()


@cache
def _enum_names(enum_name: str) -> dict[int, str]:
    import tflite

    enum = getattr(tflite, enum_name)
    return {v: k for k, v in vars(enum).items() if not k.startswith("_") and isinstance(v, int)}


@cache
def _builtin_op_names() -> dict[int, str]:
    return _enum_names("BuiltinOperator")


@cache
def _options_fields(cls: type) -> tuple[tuple[str, str, bool], ...]:
    """(accessor, attribute name, is_vector) for the data fields of a generated options class, in schema order."""
    fields = []
    for name, fn in vars(cls).items():
        if name.startswith("_") or name == "Init" or not inspect.isfunction(fn):
            continue
        if name.endswith(("Length", "IsNone", "AsNumpy")):
            continue
        is_vector = fn.__code__.co_argcount == 2
        if is_vector and not hasattr(cls, name + "AsNumpy"):
            continue  # vectors of tables/strings: none exist in the options tables today
        fields.append((name, _snake(name), is_vector))
    return tuple(fields)


def _enum_value(enum_name: str, value: int) -> str | int:
    name = _enum_names(enum_name).get(value)
    if name is None:
        return value
    if enum_name == "TensorType":
        return _DTYPES.get(name, (name.lower(), None))[0]
    return name


def _option_value(value: Any) -> Any:
    if isinstance(value, bytes):
        return decode_text(value)
    if isinstance(value, float):
        return float(f"{value:.7g}")  # float32 fields: 0.1 rather than 0.10000000149011612
    return value


class _Builder:
    """Walks the flatbuffer once, bounding every loop by the file size (hostile files must not hang)."""

    def __init__(self, path: Path, buffer: bytes | mmap.mmap, dims: dict[str, int]) -> None:
        import tflite  # here, not at module level: it imports ~190 generated modules

        self.tflite = tflite
        self.path = path
        self.buffer = buffer
        self.size = len(buffer)
        self.dims = dims
        # Elements we may still iterate over. Real files store every element at least once, so their total
        # stays well under the file size; shared or self-referencing offsets in a hostile file hit this.
        self.budget = self.size + 4096
        self.fb = tflite.Model.GetRootAsModel(buffer, 0)
        self.model = ir.Model(format=FORMAT, path=str(path), raw=(self.fb, buffer))

    # ---- bounds ----------------------------------------------------------------------------------------------

    def error(self, what: str) -> LoaderError:
        return LoaderError(f"{self.path}: not a valid TFLite model ({what})")

    def count(self, n: int, what: str, elem_size: int = _OFFSET_SIZE) -> int:
        """Check a vector length before iterating over it."""
        if n < 0 or n * elem_size > self.size:
            raise self.error(f"{what}: {n} entries cannot fit in a {self.size}-byte file")
        self.budget -= n
        if self.budget < 0:
            raise self.error(f"{what}: the file references more entries than it can hold")
        return n

    def array(self, arr: Any, what: str) -> np.ndarray:
        """A vector read with ``*AsNumpy`` (the accessors return 0 when the field is absent)."""
        import numpy as np

        if isinstance(arr, int):
            return np.zeros(0, dtype=np.int32)
        self.count(arr.size, what, arr.itemsize)
        return arr

    def index(self, i: int, n: int, what: str) -> int:
        if not 0 <= i < n:
            raise self.error(f"{what} {i} out of range (0..{n - 1})" if n else f"{what} {i} out of range (none)")
        return i

    # ---- model -----------------------------------------------------------------------------------------------

    def dynamic_input_axes(self) -> list[str]:
        """``axisK`` for each axis K that some input of the main graph declares dynamic (-1 in its shape
        signature), and ``batch`` with axis 0: the names ``dims`` can pin."""
        if self.fb.SubgraphsLength() < 1:
            return []
        sg = self.fb.Subgraphs(0)
        n_tensors = self.count(sg.TensorsLength(), "subgraph 0 tensors")
        axes: set[int] = set()
        for t in self.array(sg.InputsAsNumpy(), "subgraph 0 inputs").tolist():
            tensor = sg.Tensors(self.index(t, n_tensors, "subgraph 0 input tensor"))
            signature = self.array(tensor.ShapeSignatureAsNumpy(), "subgraph 0 input shape signature").tolist()
            axes.update(axis for axis, size in enumerate(signature) if size == -1)
        names = []
        for axis in sorted(axes):
            names += ["axis0", "batch"] if axis == 0 else [f"axis{axis}"]
        return names

    def main_inputs(self) -> list[lengths.Input]:
        """The main graph's inputs that declare a dynamic axis, read before the model is built."""
        if self.fb.SubgraphsLength() < 1:
            return []
        sg = self.fb.Subgraphs(0)
        n_tensors = self.count(sg.TensorsLength(), "subgraph 0 tensors")
        found = []
        for t in self.array(sg.InputsAsNumpy(), "subgraph 0 inputs").tolist():
            index = self.index(t, n_tensors, "subgraph 0 input tensor")
            tensor = sg.Tensors(index)
            signature = tuple(self.array(tensor.ShapeSignatureAsNumpy(), "subgraph 0 input shape signature").tolist())
            if -1 in signature:
                shape = tuple(self.array(tensor.ShapeAsNumpy(), "subgraph 0 input shape").tolist())
                dtype = self.dtype(tensor.Type())[0]
                found.append(lengths.Input(index, decode_text(tensor.Name()), shape, signature,
                                           dtype.startswith(("int", "uint"))))
        return found

    def build(self) -> ir.Model:
        fb, model = self.fb, self.model
        version = fb.Version()
        if version > _MAX_SCHEMA_VERSION:
            raise LoaderError(
                f"{self.path}: TFLite schema version {version} is not supported (newest known: {_MAX_SCHEMA_VERSION})"
            )
        model.version = f"schema v{version}"
        model.description = decode_text(fb.Description())
        self.n_buffers = self.count(fb.BuffersLength(), "buffers")
        self.opcodes = [self.opcode(i) for i in range(self.count(fb.OperatorCodesLength(), "operator codes"))]
        n_graphs = self.count(fb.SubgraphsLength(), "subgraphs")
        if n_graphs == 0:
            raise self.error("no subgraphs")
        subgraphs = [fb.Subgraphs(i) for i in range(n_graphs)]
        for sg in subgraphs:
            model.add_graph(name=decode_text(sg.Name()))
        for graph, sg in zip(model.graphs, subgraphs):
            self.fill_graph(graph, sg)
        self.link_parents()
        self.read_metadata()
        self.read_signatures()
        return model

    def opcode(self, i: int) -> tuple[str, str, int]:
        """(op_type, domain, version) of operator code ``i``."""
        code = self.fb.OperatorCodes(i)
        # Schema: builtin_code replaced the int8 deprecated_builtin_code; readers take the larger of the two.
        builtin = max(code.BuiltinCode(), code.DeprecatedBuiltinCode())
        version = code.Version()
        if builtin == self.tflite.BuiltinOperator.CUSTOM:
            return decode_text(code.CustomCode()) or "CUSTOM", "custom", version
        return _builtin_op_names().get(builtin, f"UNKNOWN_BUILTIN_{builtin}"), "", version

    # ---- graphs ----------------------------------------------------------------------------------------------

    def fill_graph(self, graph: ir.Graph, sg: tflite.SubGraph) -> None:
        n_tensors = self.count(sg.TensorsLength(), f"subgraph {graph.index} tensors")
        for t in range(n_tensors):
            self.add_value(graph, sg.Tensors(t))
        where = f"subgraph {graph.index}"
        for t in self.array(sg.InputsAsNumpy(), f"{where} inputs").tolist():
            value = graph.values[self.index(t, n_tensors, f"{where} input tensor")]
            value.is_input = True
            graph.inputs.append(value)
        for t in self.array(sg.OutputsAsNumpy(), f"{where} outputs").tolist():
            value = graph.values[self.index(t, n_tensors, f"{where} output tensor")]
            value.is_output = True
            graph.outputs.append(value)
        for i in range(self.count(sg.OperatorsLength(), f"{where} operators")):
            self.add_node(graph, sg.Operators(i))

    def add_value(self, graph: ir.Graph, tensor: tflite.Tensor) -> None:
        where = f"subgraph {graph.index} tensor {len(graph.values)}"
        dtype, np_dtype = self.dtype(tensor.Type())
        shape = tuple(self.array(tensor.ShapeAsNumpy(), f"{where} shape").tolist())
        signature = tuple(self.array(tensor.ShapeSignatureAsNumpy(), f"{where} shape signature").tolist())
        if not signature or signature == shape:
            signature = None
        else:
            shape = litert_shapes.pin(shape, signature, self.dims)
        value = graph.add_value(
            decode_text(tensor.Name()),
            type=ir.TensorType(dtype=dtype, shape=shape, shape_signature=signature),
            quantization=self.quantization(tensor, where),
        )
        if tensor.IsVariable():
            value.metadata["variable"] = "true"
        sparse = None
        if tensor.Sparsity() is not None:
            dense = value.type.static_shape if value.type is not None else None
            sparse = tflite_sparsity.read(tensor.Sparsity(), math.prod(dense) if dense is not None else None)
            value.metadata["sparsity"] = sparse.text
        buffer_index = tensor.Buffer()
        if buffer_index != 0:  # 0 is the schema's "no data" sentinel, valid even when the buffers vector is empty
            self.index(buffer_index, self.n_buffers, f"{where}: buffer")
            if not tensor.IsVariable():
                self.attach_data(value, buffer_index, np_dtype, sparse)

    def dtype(self, code: int) -> tuple[str, str | None]:
        name = _enum_names("TensorType").get(code)
        if name is None:
            return f"unknown_type_{code}", None
        return _DTYPES.get(name, (name.lower(), None))

    def quantization(self, tensor: tflite.Tensor, where: str) -> ir.Quantization | None:
        import numpy as np

        q = tensor.Quantization()
        if q is None:
            return None
        scale = np.array(self.array(q.ScaleAsNumpy(), f"{where} scales"), dtype=np.float32)
        if scale.size == 0:
            return None
        zero_point = np.array(self.array(q.ZeroPointAsNumpy(), f"{where} zero points"), dtype=np.int64)
        if zero_point.size != scale.size:
            zero_point = np.resize(zero_point, scale.size) if zero_point.size else np.zeros(scale.size, np.int64)
        axis = q.QuantizedDimension() if scale.size > 1 else None
        return ir.Quantization(scale=scale, zero_point=zero_point, axis=axis)

    # ---- constant data ---------------------------------------------------------------------------------------

    def buffer_span(self, index: int) -> tuple[int, int]:
        """(start, length) in the file of buffer ``index``'s bytes; length 0 when it holds none."""
        buf = self.fb.Buffers(index)
        if hasattr(buf, "Offset") and buf.Offset() > 1:  # >2 GB models keep data after the flatbuffer; 1 = none
            start, length = buf.Offset(), buf.Size()
        else:
            tab = buf._tab  # the generated API only exposes Data as a copy or per-byte; the position needs the table
            field = tab.Offset(4)
            if not field:
                return 0, 0
            start, length = tab.Vector(field), tab.VectorLen(field)
        if start + length > self.size:
            raise self.error(f"buffer {index} ({length} bytes at {start}) extends past the end of the file")
        return start, length

    def attach_data(self, value: ir.Value, buffer_index: int, np_dtype: str | None,
                    sparse: tflite_sparsity.Stored | None) -> None:
        start, length = self.buffer_span(buffer_index)
        if length == 0 or value.type is None:
            return
        dtype, shape = value.type.dtype, value.type.static_shape
        if dtype == "string":
            value.initializer = ir.Tensor(dtype, shape or (), reader=_string_reader(self.buffer, start, length, shape))
            return
        if np_dtype is None:
            return
        import numpy as np

        itemsize = np.dtype(np_dtype).itemsize
        n = int(np.prod(shape, dtype=np.int64)) if shape is not None else -1
        stored = (n + 1) // 2 if dtype == "int4" else n * itemsize
        dense = None
        if shape is None or sparse is not None or stored != length:
            if sparse is None:
                value.metadata["data"] = f"buffer {buffer_index} holds {length} bytes; shape {shape} needs {stored}"
            n = length * 2 if dtype == "int4" else length // itemsize
            if sparse is not None and shape is not None and sparse.count == n and n <= int(np.prod(shape)):
                dense = shape  # the stored values of a dense tensor of this shape
            elif sparse is not None:
                value.metadata["data"] = (f"buffer {buffer_index} holds {n:,} values; its sparsity parameters index "
                                          f"{'?' if sparse.count is None else f'{sparse.count:,}'}")
            shape = (n,)
        value.initializer = ir.Tensor(dtype, shape, reader=_array_reader(self.buffer, start, np_dtype, dtype, shape),
                                      dense_shape=dense)

    # ---- operators -------------------------------------------------------------------------------------------

    def add_node(self, graph: ir.Graph, op: tflite.Operator) -> None:
        where = f"subgraph {graph.index} operator {len(graph.nodes)}"
        op_type, domain, version = self.opcodes[self.index(op.OpcodeIndex(), len(self.opcodes), f"{where}: opcode")]
        node = graph.add_node(op_type, domain=domain, category=category(FORMAT, op_type))
        n_values = len(graph.values)
        for t in self.array(op.InputsAsNumpy(), f"{where} inputs").tolist():
            if t == -1:  # an omitted optional input
                node.inputs.append(None)
                continue
            value = graph.values[self.index(t, n_values, f"{where}: input tensor")]
            node.inputs.append(value)
            if not value.consumers or value.consumers[-1] is not node:
                value.consumers.append(node)
        for t in self.array(op.OutputsAsNumpy(), f"{where} outputs").tolist():
            if t == -1:
                continue
            value = graph.values[self.index(t, n_values, f"{where}: output tensor")]
            node.outputs.append(value)
            if value.producer is None:
                value.producer = node
        node.attributes = self.attributes(op, domain, where)
        entry = operator(FORMAT, op_type)  # the schema's names of the inputs, for the constant rows of a box
        node.input_names = list(entry.inputs if entry is not None else ())[: len(node.inputs)]
        # the kernel version: in the tooltip, not worth a line in the box
        node.attributes["op_version"] = version
        node.defaults.add("op_version")
        for name, value in node.attributes.items():
            if (value in ("", "NONE") or name.endswith("_bytes") and value == 0
                    or name.startswith("dilation") and value == 1 or name == "pot_scale_int16" and value is True):
                node.defaults.add(name)
        self.link_subgraphs(node, where)

    def attributes(self, op: tflite.Operator, domain: str, where: str) -> dict[str, Any]:
        if domain == "custom":
            large = op.LargeCustomOptionsSize() if hasattr(op, "LargeCustomOptionsSize") else 0
            size = op.CustomOptionsLength() or large
            return {"custom_options_bytes": int(size)}
        attrs: dict[str, Any] = {}
        try:
            self.decode_options(attrs, "BuiltinOptions", op.BuiltinOptionsType(), op.BuiltinOptions(), where)
            if hasattr(op, "BuiltinOptions2Type"):
                self.decode_options(attrs, "BuiltinOptions2", op.BuiltinOptions2Type(), op.BuiltinOptions2(), where)
        except LoaderError:
            raise
        except Exception as e:  # a bad options table should cost the attributes, not the whole model
            attrs["options_error"] = _describe(e)
        return attrs

    def decode_options(self, attrs: dict[str, Any], union: str, kind: int, table: Any, where: str) -> None:
        if kind == 0 or table is None:
            return
        class_name = _enum_names(union).get(kind)
        cls = getattr(self.tflite, class_name, None) if class_name else None
        if cls is None:
            attrs["options_error"] = f"unknown {union} type {kind}"
            return
        options = cls()
        options.Init(table.Bytes, table.Pos)
        for accessor, name, is_vector in _options_fields(cls):
            enum = _ENUM_FIELDS_BY_CLASS.get((class_name, accessor)) or _ENUM_FIELDS.get(accessor)
            if is_vector:
                arr = self.array(getattr(options, accessor + "AsNumpy")(), f"{where} option {name}")
                if arr.dtype.itemsize == 1 and arr.dtype.kind == "u":  # opaque serialized attributes
                    attrs[f"{name}_bytes"] = int(arr.size)
                    continue
                items = arr.tolist()
                attrs[name] = [_enum_value(enum, v) for v in items] if enum else items
            else:
                raw = getattr(options, accessor)()
                if raw == 0 and accessor in _UNSET_WHEN_ZERO:
                    continue
                attrs[name] = _enum_value(enum, raw) if enum and isinstance(raw, int) else _option_value(raw)

    def link_subgraphs(self, node: ir.Node, where: str) -> None:
        graphs = self.model.graphs
        for name, target in node.attributes.items():
            if not (name.endswith("subgraph_index") or name == "subgraph") or not isinstance(target, int):
                continue
            graph = graphs[self.index(target, len(graphs), f"{where}: {name}")]
            if graph not in node.subgraphs:
                node.subgraphs.append(graph)

    def link_parents(self) -> None:
        for graph in self.model.graphs:
            for node in graph.nodes:
                for target in node.subgraphs:
                    if target.index != 0 and target.parent is None:
                        target.parent = node
        self.check_acyclic()

    def check_acyclic(self) -> None:
        """Operators calling subgraphs must form a DAG: a cycle would make renderers recurse forever."""
        calls = [{t.index for n in g.nodes for t in n.subgraphs} for g in self.model.graphs]
        state = [0] * len(calls)  # 0 unseen, 1 on the current path, 2 done
        for root in range(len(calls)):
            if state[root]:
                continue
            state[root] = 1
            stack = [(root, iter(sorted(calls[root])))]
            while stack:
                current, children = stack[-1]
                child = next(children, None)
                if child is None:
                    state[current] = 2
                    stack.pop()
                elif state[child] == 1:
                    raise self.error(f"subgraph {current} calls subgraph {child}, which leads back to it")
                elif state[child] == 0:
                    state[child] = 1
                    stack.append((child, iter(sorted(calls[child]))))

    # ---- model-level tables ----------------------------------------------------------------------------------

    def read_metadata(self) -> None:
        fb, model = self.fb, self.model
        for i in range(self.count(fb.MetadataLength(), "metadata entries")):
            entry = fb.Metadata(i)
            name = decode_text(entry.Name())
            index = self.index(entry.Buffer(), self.n_buffers, f"metadata {name!r}: buffer")
            start, length = self.buffer_span(index)
            model.metadata[name] = f"buffer {index} ({length} bytes)"
            model.attachments.setdefault(name, memoryview(self.buffer)[start : start + length])
            if name == "min_runtime_version":
                text = decode_text(bytes(self.buffer[start : start + min(length, 256)]).split(b"\0", 1)[0])
                model.metadata[name] = text
                if text:
                    model.producer = f"TFLite (min runtime {text})"

    def read_signatures(self) -> None:
        fb, graphs = self.fb, self.model.graphs
        for i in range(self.count(fb.SignatureDefsLength(), "signatures")):
            sig = fb.SignatureDefs(i)
            key = decode_text(sig.SignatureKey()) or f"signature_{i}"
            graph = graphs[self.index(sig.SubgraphIndex(), len(graphs), f"signature {key!r}: subgraph")]
            n_values = len(graph.values)
            inputs, outputs = {}, {}
            for j in range(self.count(sig.InputsLength(), f"signature {key!r} inputs")):
                entry = sig.Inputs(j)
                where = f"signature {key!r}: tensor"
                inputs[decode_text(entry.Name())] = self.index(entry.TensorIndex(), n_values, where)
            for j in range(self.count(sig.OutputsLength(), f"signature {key!r} outputs")):
                entry = sig.Outputs(j)
                where = f"signature {key!r}: tensor"
                outputs[decode_text(entry.Name())] = self.index(entry.TensorIndex(), n_values, where)
            self.model.signatures[key] = {"subgraph": graph.index, "inputs": inputs, "outputs": outputs}


# ---- lazy readers (run after load, when a metric or annotation asks for the data) -------------------------------


def _array_reader(
    buffer: bytes | mmap.mmap, start: int, np_dtype: str, dtype: str, shape: tuple[int, ...]
) -> Callable[[], np.ndarray]:
    def read() -> np.ndarray:
        import numpy as np

        n = int(np.prod(shape, dtype=np.int64))
        if dtype == "int4":  # two values per byte, low nibble first
            packed = np.frombuffer(buffer, dtype=np.uint8, count=(n + 1) // 2, offset=start)
            nibbles = np.stack([packed & 0x0F, packed >> 4], axis=-1).reshape(-1)[:n].astype(np.int8)
            return ((nibbles ^ 8) - 8).reshape(shape)
        data = np.frombuffer(buffer, dtype=np.dtype(np_dtype), count=n, offset=start)
        if dtype == "bfloat16":  # numpy has no bfloat16: widen to the float32 with the same top 16 bits
            return (data.astype(np.uint32) << 16).view(np.float32).reshape(shape)
        return data.reshape(shape)

    return read


def _string_reader(
    buffer: bytes | mmap.mmap, start: int, length: int, shape: tuple[int, ...] | None
) -> Callable[[], np.ndarray]:
    """TFLite strings: int32 count, int32 offsets[count + 1] from the buffer start, then the bytes."""

    def read() -> np.ndarray:
        import numpy as np

        data = bytes(buffer[start : start + length])
        count = int(np.frombuffer(data, dtype="<i4", count=1)[0]) if length >= 4 else -1
        if count < 0 or 4 * (count + 2) > length:
            raise ValueError(f"malformed string tensor data ({length} bytes)")
        offsets = np.frombuffer(data, dtype="<i4", count=count + 1, offset=4).tolist()
        items = np.empty(count, dtype=object)
        items[:] = [data[a:b] for a, b in zip(offsets, offsets[1:])]
        if shape is not None and int(np.prod(shape, dtype=np.int64)) == count:
            return items.reshape(shape)
        return items

    return read
