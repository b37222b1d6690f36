"""ExecuTorch loader: a ``.pte`` program → ir.Model, read by content (file identifier ``ETnn``) without executorch.

What becomes what (``program`` reads the tables):
    * graphs: one per execution plan (method), in file order; ``forward`` is usually the only one.
    * operators: the plan's kernel calls and delegate calls, in instruction order (moves, jumps and frees are not
      drawn; a note counts them). A kernel call's ``op_type`` is its operator's name without the ``aten``
      namespace (``convolution``, ``addmm``), ``namespace.name`` for other namespaces; ``domain`` the namespace;
      the overload (``out``) an attribute. A delegate call is one box: ``op_type`` the backend
      (``XnnpackBackend``), ``domain`` ``delegate``, its blob's size and compile-spec keys as attributes, the
      kinds of the nodes an XNNPACK blob holds (``xnnpack_nodes``, read from the blob: ``xnnpack_blob``), and
      with an ETRecord the edge operators it holds (``holds``).
    * inputs and outputs: a kernel call's arguments are its schema arguments, then its ``out`` tensors, then
      its return value (the same tensors). Input slot ``i`` is argument ``i`` up to the last tensor argument
      (a tensor list takes one slot per tensor); other arguments are attributes (``arg3``, or the schema's name
      with an ETRecord). A delegate call's arguments are its inputs, then its outputs: the trailing tensors no
      earlier instruction wrote (as many as the ETRecord says, when it does). A tensor read before any
      instruction writes it, placed where the memory plan put a live tensor of the same size, is a view of that
      tensor (``view_of``): it joins its producer's outputs, so the edge is drawn.
    * tensors: every ``Tensor`` value, named ``value_N`` (``N`` its index in the plan's values, as ETDump and
      the runtime count them), or by its fully qualified name when the program stores one. Shapes are the
      stored sizes (upper bounds for bounded dynamic shapes), dtypes the scalar types. Constant data comes from
      the constant segment (or the older inline buffers) as read-only views of the mapped file.

With an ETRecord (``etrecord.NEIGHBOUR_NAMES`` beside the program, or ``etrecord=``), each kernel call is matched to
its edge-graph node through the debug handles: the node's name becomes the operator's name
(``aten_convolution_default``), its argument names the attribute names, its tensors' names the tensors' names
(parameters by their state-dict name, ``conv.weight``), and its ``nn_module_stack`` the operator's group (written
as the name scopes torch's ONNX exporter writes). Without one, operators are named ``kernel_I`` and ``delegate_I``,
``I`` the instruction index. ``Node.metadata["instruction"]`` is that index either way (ETDump's
``instruction_id``).
"""

from __future__ import annotations

import math
import struct
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from renderer.core import ir
from renderer.core.errors import LoaderError, first_line
from renderer.core.escape import clean
from renderer.data.categories import category
from renderer.files.flatbuffer_view import Corrupt
from renderer.loaders.executorch import etrecord as records
from renderer.loaders.executorch.program import (
    SCALAR_TYPES,
    Delegate,
    Instruction,
    Plan,
    Program,
    TensorInfo,
    matches,
    parse,
)
from renderer.loaders.executorch.xnnpack_blob import node_kinds
from renderer.loaders.mapped import map_file
from renderer.loaders.protocol import RealValues
from renderer.loaders.registry import refuse_impossible_shapes

if TYPE_CHECKING:
    import numpy as np

FORMAT = "executorch"
EXTENSIONS = (".pte",)
NAME_SCOPES_KEY = "pkg.torch.onnx.name_scopes"
INSTRUCTION_KEY = "instruction"


def match(head: bytes) -> bool:
    """A FlatBuffer with ExecuTorch's program identifier (``ET12``; ``ET`` and two digits)."""
    return matches(head)


def pinnable(path: Path) -> list[str]:
    """An ExecuTorch program's shapes are fixed when it is made: nothing to pin."""
    return []


def load(path: Path, dims: dict[str, int] | None = None, check_dims: bool = True, shape_run: bool = True,
         values: RealValues | None = None, assume: bool = True, etrecord: Path | None = None) -> ir.Model:
    """Parse ``path`` (see the module docstring); any failure is a one-line LoaderError naming the file.
    ``dims``, ``shape_run``, ``values`` and ``assume`` have nothing to act on (shapes are static); ``etrecord``:
    the ETRecord to take names and groups from, instead of the one beside the program."""
    from renderer.core.pinning import resolve

    resolve(path, dims, [], (), check_dims)
    data = map_file(path)
    if not matches(bytes(data[:8])):
        raise LoaderError(f"{path}: not an ExecuTorch program (no ET file identifier)")
    try:
        program = parse(data)
    except Corrupt as e:
        raise LoaderError(f"{path}: not a valid ExecuTorch program ({e})") from None
    except (struct.error, ValueError, IndexError, OverflowError) as e:
        raise LoaderError(f"{path}: not a valid ExecuTorch program ({type(e).__name__}: {first_line(e)})") from None
    model = ir.Model(format=FORMAT, path=str(path), producer="ExecuTorch",
                     version=f"{bytes(data[4:8]).decode('ascii')} program, schema version {program.version}")
    record = _etrecord(path, etrecord, program, model)
    for plan in program.plans:
        _PlanBuilder(model, program, plan, record.methods.get(plan.name) if record else None).build()
    if values is not None and (values.inputs is not None or values.profiles):
        model.notes.append(f"{path}: an ExecuTorch program's shapes are fixed; --inputs and profiles give it none")
    model.raw = program
    return refuse_impossible_shapes(model, path)


def _etrecord(path: Path, given: Path | None, program: Program, model: ir.Model) -> records.ETRecord | None:
    """The ETRecord given (``--etrecord``: a broken one is an error), or found beside ``path`` (a broken one found
    there is left out, with a note). Either is a side file of the load (``Model.side_files``)."""
    methods = [plan.name for plan in program.plans]
    if given is not None:
        found = records.read(records.given(Path(given)), methods)
        if why := _misfit(found, program):
            raise LoaderError(f"{given}: not the ETRecord of {path}: {why}")
    else:
        near = records.beside(path)
        if near is None:
            return None
        try:
            found = records.read(near, methods)
        except LoaderError as e:
            model.notes.append(f"{e}; names and groups are the program's own")
            return None
        if why := _misfit(found, program):
            model.notes.append(f"{near}: left out: {why}; names and groups are the program's own")
            return None
    model.metadata["etrecord"] = found.path
    model.side_files.append(found.path)
    return found


def _misfit(record: records.ETRecord, program: Program) -> str:
    """Why ``record`` is no ETRecord of ``program`` ("" when its debug handles fit the program's instructions)."""
    for plan in program.plans:
        method = record.methods.get(plan.name)
        if plan.instructions and (method is None or not method.handles):
            return f"it maps no instruction of method {clean(plan.name, 80)!r} to a debug handle"
        last = max(method.handles, default=-1)
        if last >= len(plan.instructions):
            return (f"it maps instruction {last} of method {clean(plan.name, 80)!r}, which has "
                    f"{len(plan.instructions)} (the ETRecord of another program?)")
    return ""


def op_identity(name: str) -> tuple[str, str]:
    """``aten::convolution`` → (``aten``, ``convolution``); ``quantized_decomposed::add`` →
    (``quantized_decomposed``, ``quantized_decomposed.add``); a name without namespace is its own type."""
    namespace, sep, op = name.partition("::")
    if not sep:
        return "", name or "unknown"
    return namespace, op if namespace == "aten" else f"{namespace}.{op}"


class _PlanBuilder:
    """One execution plan → one ir.Graph (see the module docstring)."""

    def __init__(self, model: ir.Model, program: Program, plan: Plan, edge: records.Method | None) -> None:
        self.model, self.program, self.plan, self.edge = model, program, plan, edge
        self.graph = model.add_graph(plan.name)
        self.values: dict[int, ir.Value] = {}
        self.produced: set[int] = set()
        self.live: dict[tuple[int, int], int] = {}  # memory place → the tensor last written there
        self.used: set[int] = set()  # ids of the edge nodes already matched
        self.strays = 0  # kernel calls no edge node matched

    def build(self) -> None:
        for index, evalue in enumerate(self.plan.values):
            if evalue.kind == "tensor" and not _absent(evalue.value):
                self._value(index, evalue.value)
        inputs = [i for i in self.plan.inputs if i in self.values]
        self.produced.update(inputs)
        skipped = 0
        for instruction in self.plan.instructions:
            if instruction.kind == "kernel":
                self._kernel(instruction)
            elif instruction.kind == "delegate":
                self._delegate(instruction)
            else:
                skipped += 1
        self.graph.inputs = [self.values[i] for i in dict.fromkeys(inputs)]
        self.graph.outputs = [self.values[i] for i in dict.fromkeys(self.plan.outputs) if i in self.values]
        if self.edge is not None:
            self._name_values(self.graph.inputs, self.edge.inputs if len(self.edge.inputs) == len(inputs) else [])
            self._name_values(self.graph.outputs, self.edge.outputs)
        for value in self.graph.inputs:
            value.is_input = True
        for value in self.graph.outputs:
            value.is_output = True
        if skipped:
            self.model.notes.append(f"{self.model.path}: method {self.plan.name!r}: {skipped} move, jump and free "
                                    "instructions are not drawn")
        if self.strays:
            kernels = sum(1 for i in self.plan.instructions if i.kind == "kernel")
            self.model.notes.append(f"{self.model.path}: method {self.plan.name!r}: {self.strays} of {kernels} kernel "
                                    f"calls match no operator of the ETRecord {self.model.metadata.get('etrecord')} "
                                    "(the ETRecord of another program?); they keep the program's names")
        bounded = sum(1 for v in self.graph.values if "shape" in v.metadata)
        if bounded:
            self.model.notes.append(f"{self.model.path}: method {self.plan.name!r}: {bounded} tensors have dynamic "
                                    "shapes; their sizes (and the costs counted from them) are the upper bounds the "
                                    "memory plan was made for")

    def _value(self, index: int, tensor: TensorInfo) -> None:
        value = self.graph.add_value(tensor.name or f"value_{index}",
                                     type=ir.TensorType(tensor.dtype, tensor.sizes))
        value.metadata["evalue"] = str(index)
        if tensor.dynamism:
            value.metadata["shape"] = "upper bound (dynamic shape)" if tensor.dynamism == 1 else "dynamic (unbounded)"
        self.values[index] = value
        if tensor.constant:
            self._constant(value, tensor)
            self.produced.add(index)

    def _constant(self, value: ir.Value, tensor: TensorInfo) -> None:
        dtype, np_dtype = SCALAR_TYPES.get(tensor.scalar_type, (tensor.dtype, None))
        if any(size < 0 for size in tensor.sizes):
            np_dtype = None  # a corrupt shape: no data is read for it
        count = math.prod(tensor.sizes)
        itemsize = int(np_dtype[-1]) if np_dtype else 0
        where = self.program.constant_bytes(tensor, count * itemsize) if np_dtype else "packed sub-byte data"
        if isinstance(where, str):
            value.metadata["data"] = where
            value.initializer = ir.Tensor(dtype, tensor.sizes, _no_data(where),
                                          location="external" if tensor.external else None)
            return
        value.initializer = ir.Tensor(dtype, tensor.sizes, _array_reader(self.program.data, where[0],
                                                                          np_dtype, dtype, tensor.sizes))

    def _tensors(self, index: int) -> list[int]:
        """The tensor value indices argument ``index`` passes (one, several for a list, none for others)."""
        if index in self.values:
            return [index]
        if 0 <= index < len(self.plan.values) and self.plan.values[index].kind in ("tensor_list",
                                                                                    "optional_tensor_list"):
            return [i for i in self.plan.values[index].value if i in self.values]
        return []

    def _kernel(self, instruction: Instruction) -> None:
        args = instruction.args
        outputs = self._tensors(args[-1]) if args else []
        count = len(outputs)
        tail = [i for a in args[-1 - count:-1] for i in self._tensors(a)] if count else []
        inputs_end = len(args) - 1 - count if count and tail == outputs else max(len(args) - 1, 0)
        name, overload = self._operator(instruction.target)
        domain, op_type = op_identity(name)
        node = self.graph.add_node(op_type, domain=domain, category=category(FORMAT, op_type))
        node.attributes["overload"] = overload
        node.metadata["kernel"] = f"{name}.{overload}" if overload else name
        edge = self._edge_node(instruction.index, f"aten.{op_type}" if domain == "aten" else op_type)
        self.strays += self.edge is not None and edge is None
        self._arguments(node, args[:inputs_end], edge)
        self._outputs(node, outputs, edge.outputs if edge else [])
        self._identify(node, instruction, edge, "kernel")

    def _operator(self, index: int) -> tuple[str, str]:
        if 0 <= index < len(self.plan.operators):
            return self.plan.operators[index]
        return f"operator {index}", ""

    def _arguments(self, node: ir.Node, args: list[int], edge: records.EdgeNode | None) -> None:
        # the edge node lists the schema's arguments up to the last one not left at its default
        names = [n for n, _ in edge.arguments] if edge and len(edge.arguments) <= len(args) else []
        last = max((k for k, a in enumerate(args) if self._tensors(a)), default=-1)
        for k, arg in enumerate(args):
            label = names[k] if k < len(names) and names[k] else f"arg{k}"
            tensors = self._tensors(arg)
            if tensors:
                for i in tensors:
                    node.inputs.append(self._read(i))
                    node.input_names.append(label)
                if edge and k < len(names):
                    self._name_values([self.values[i] for i in tensors], edge.arguments[k][1])
            elif k <= last:
                node.inputs.append(None)
                node.input_names.append(label)
                if not self._is_null_tensor(arg):
                    node.attributes[label] = self._argument_value(arg)
            else:
                node.attributes[label] = self._argument_value(arg)
        for value in node.inputs:
            if value is not None:
                value.consumers.append(node)

    def _is_null_tensor(self, index: int) -> bool:
        if not 0 <= index < len(self.plan.values):
            return False
        evalue = self.plan.values[index]
        return evalue.kind == "null" or (evalue.kind == "tensor" and _absent(evalue.value))

    def _argument_value(self, index: int) -> object:
        """A non-tensor argument as a plain value (lists of ints as lists; None for null)."""
        if not 0 <= index < len(self.plan.values):
            return f"value {index} (missing)"
        evalue = self.plan.values[index]
        if evalue.kind == "int_list":  # boxed: the indices of Int values
            return [self.plan.values[i].value if 0 <= i < len(self.plan.values) and self.plan.values[i].kind == "int"
                    else i for i in evalue.value]
        return evalue.value if evalue.kind != "unknown" else "?"

    def _read(self, index: int) -> ir.Value:
        """The value an instruction reads: unwritten so far and placed where a live tensor of the same size
        lies, it is a view of that tensor and joins its producer's outputs."""
        value = self.values[index]
        if index not in self.produced:
            base = self._view_base(index)
            if base is not None and base.producer is not None:
                value.metadata["view_of"] = base.name
                base.producer.outputs.append(value)
                value.producer = base.producer
            self.produced.add(index)
        return value

    def _view_base(self, index: int) -> ir.Value | None:
        tensor = self.plan.values[index].value
        if not isinstance(tensor, TensorInfo) or tensor.place is None:
            return None
        base = self.live.get(tensor.place)
        if base is None or base == index:
            return None
        other = self.plan.values[base].value
        return self.values[base] if _nbytes(other) == _nbytes(tensor) else None

    def _outputs(self, node: ir.Node, outputs: list[int], names: list[str]) -> None:
        for i in dict.fromkeys(outputs):
            value = self.values[i]
            if i in self.produced and value.producer is not None:
                continue  # written in place: an input already
            node.outputs.append(value)
            value.producer = node
            self.produced.add(i)
            tensor = self.plan.values[i].value
            if isinstance(tensor, TensorInfo) and tensor.place is not None:
                self.live[tensor.place] = i
        if len(names) == len(node.outputs):
            self._name_values(node.outputs, names)

    def _delegate(self, instruction: Instruction) -> None:
        delegate = self._delegate_entry(instruction.target)
        node = self.graph.add_node(delegate.backend or "delegate", domain="delegate", category="layer")
        tensors = list(dict.fromkeys(i for a in instruction.args for i in self._tensors(a)))
        outputs = self._delegate_outputs(tensors)
        node.inputs = [self._read(i) for i in tensors if i not in outputs]
        for value in node.inputs:
            value.consumers.append(node)
        self._outputs(node, outputs, [])
        blob = self.program.blob(delegate)
        if blob is not None:
            node.attributes["blob_bytes"] = blob[1]
            kinds = node_kinds(self.program.data, *blob)
            if kinds:
                node.attributes["xnnpack_nodes"] = _listed(kinds)
        if delegate.specs:
            node.attributes["compile_specs"] = [key for key, _ in delegate.specs]
        held = self._held(instruction.index)
        if held:
            node.attributes["holds"] = _listed([n.op.removeprefix("aten.") for n in held])
            node.metadata["edge_nodes"] = ", ".join(n.name for n in held)[:2000]
        self._identify(node, instruction, _common_scope(held), "delegate")

    def _delegate_entry(self, index: int) -> Delegate:
        if 0 <= index < len(self.plan.delegates):
            return self.plan.delegates[index]
        return Delegate(f"delegate {index}", True, -1)

    def _delegate_outputs(self, tensors: list[int]) -> list[int]:
        """The trailing tensors no earlier instruction wrote and that are no view of a live one."""
        outputs: list[int] = []
        for i in reversed(tensors):
            if i in self.produced or self._view_base(i) is not None:
                break
            outputs.insert(0, i)
        return outputs

    def _held(self, instruction: int) -> list[records.EdgeNode]:
        if self.edge is None:
            return []
        return [n for h in self.edge.handles.get(instruction, []) for n in self.edge.nodes.get(h, [])]

    def _edge_node(self, instruction: int, wanted: str) -> records.EdgeNode | None:
        """The unmatched edge node of this instruction's debug handles running operator ``wanted``."""
        for node in self._held(instruction):
            if id(node) not in self.used and node.op == wanted:
                self.used.add(id(node))
                return node
        return None

    def _name_values(self, values: list[ir.Value], names: list[str]) -> None:
        """Values still called ``value_N`` take the edge graph's names (a placeholder's as what it stands for)."""
        for value, name in zip(values, names):
            if not name or value.name != f"value_{value.metadata.get('evalue')}":
                continue
            value.name = self.edge.placeholders.get(name, name) if self.edge else name

    def _identify(self, node: ir.Node, instruction: Instruction, edge: records.EdgeNode | None, kind: str) -> None:
        node.metadata[INSTRUCTION_KEY] = str(instruction.index)
        if instruction.chain:
            node.metadata["chain"] = str(instruction.chain)
        own = edge.name if edge is not None and kind == "kernel" else ""
        node.name = own or f"{kind}_{instruction.index}"
        if edge is not None and any(path for path, _ in edge.modules):
            paths = [path for path, _ in edge.modules]
            node.metadata[NAME_SCOPES_KEY] = repr([*paths, node.name])
            node.metadata["module"] = paths[-1]
            node.metadata["module_type"] = edge.modules[-1][1]
        if edge is not None and edge.source and kind == "kernel":
            node.metadata["source"] = edge.source[:300]
        if edge is not None and edge.handle >= 0 and kind == "kernel":
            node.metadata["debug_handle"] = str(edge.handle)


def _common_scope(nodes: list[records.EdgeNode]) -> records.EdgeNode | None:
    """A stand-in node carrying the module path the ``nodes`` share (for a delegate's group), None if none."""
    if not nodes:
        return None
    shared = nodes[0].modules
    for node in nodes[1:]:
        n = 0
        while n < min(len(shared), len(node.modules)) and shared[n] == node.modules[n]:
            n += 1
        shared = shared[:n]
    return records.EdgeNode("", "", modules=list(shared)) if shared else None


def _listed(names: list[str], most: int = 8) -> list[str]:
    """``names`` as a box shows them: all of a few, else each kind once with its count (``Conv2d×12``)."""
    if len(names) <= most:
        return names
    counts = Counter(names)
    return [f"{name}×{counts[name]}" if counts[name] > 1 else name for name in counts]


def _absent(tensor: TensorInfo) -> bool:
    """The empty byte tensor the emitter writes for an optional tensor argument left out (a Conv's bias)."""
    return tensor.sizes == (0,) and tensor.buffer == 0 and tensor.place is None and tensor.scalar_type == 0 \
        and not tensor.external


def _nbytes(tensor: object) -> int:
    if not isinstance(tensor, TensorInfo):
        return -1
    np_dtype = SCALAR_TYPES.get(tensor.scalar_type, ("", None))[1]
    return math.prod(tensor.sizes) * (int(np_dtype[-1]) if np_dtype else 1)


def _no_data(reason: str) -> Callable[[], np.ndarray]:
    def read() -> np.ndarray:
        raise ValueError(reason)

    return read


def _array_reader(buffer: object, start: int, np_dtype: str, dtype: str,
                  shape: tuple[int, ...]) -> Callable[[], np.ndarray]:
    def read() -> np.ndarray:
        import numpy as np

        data = np.frombuffer(buffer, dtype=np.dtype(np_dtype), count=math.prod(shape), offset=start)  # type: ignore[call-overload]
        if dtype == "bfloat16":  # numpy has no bfloat16: widen to the float32 with the same top 16 bits
            return (data.astype(np.uint32) << 16).view(np.float32).reshape(shape)
        return data.reshape(shape)

    return read
