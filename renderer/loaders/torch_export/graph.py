"""The graph of a serialized ``torch.export`` program (``ROOT/models/NAME.json``) → ir.Graph.

What becomes what:
    * operators: the FX ``call_function`` nodes, in graph order, ids their FX names (``conv2d``, ``linear_1``);
      ``getitem`` nodes are already folded into their producer's outputs by torch's serializer (a
      ``split_with_sizes`` writes ``getitem_3``, ``getitem_4``…). ``op_type`` is the aten operator's name
      (``conv2d``, ``addmm``), or ``namespace.name`` for other namespaces (``_operator.mul``,
      ``quantized_decomposed.dequantize_per_tensor``); the overload (``default``, ``Tensor``) is the
      ``overload`` attribute.
    * inputs: one slot per schema argument up to the last tensor one (a list of tensors, ``cat``'s, takes one
      slot per tensor), so slot ``i`` is argument ``i``: ``conv2d``'s weight is slot 1, its bias slot 2 (None
      when absent); ``input_names`` are the arguments' names. Other arguments are attributes.
    * tensors: each node output and placeholder, with dtype and sizes from the tensor metadata the exporter
      recorded (``meta["val"]``); symbolic sizes take the values of the dims (see ``loader``). Symbolic
      ints (``sym_size``'s output, ``_operator.mul``'s) are scalar int64 values, so the sizes ``view`` reads
      are edges.
    * weights: parameters, buffers and lifted constants are constants named by their state-dict name
      (``blocks.0.conv.weight``), their values from the archive (``archive``).
    * groups: ``nn_module_stack`` (the module path of each node: ``blocks.0`` → ``blocks.0.conv``) is written as
      the ``pkg.torch.onnx.name_scopes`` metadata torch's ONNX exporter writes, so grouping sees the modules
      as scopes exactly as it sees an exported ONNX model's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from renderer.core import ir
from renderer.core.errors import LoaderError
from renderer.core.escape import clean
from renderer.data.categories import category
from renderer.loaders.torch_export.archive import Archive, Stored
from renderer.loaders.torch_export.meta import dtype_name, sizes
from renderer.loaders.torch_export.tensors import stored_tensor

FORMAT = "torch"
NAME_SCOPES_KEY = "pkg.torch.onnx.name_scopes"
MAX_NODES = 5_000_000
MAX_NESTING = 16
"""Higher-order operators nested deeper than this are refused (a hostile file must not recurse for ever)."""

_LAYOUTS = {0: "unknown", 1: "sparse_coo", 2: "sparse_csr", 3: "sparse_csc", 4: "sparse_bsr", 5: "sparse_bsc",
            6: "mkldnn", 7: "strided"}
_MEMORY_FORMATS = {0: "unknown", 1: "contiguous_format", 2: "channels_last", 3: "channels_last_3d",
                   4: "preserve_format"}
_STATE_KINDS = {"parameter": "parameter_name", "buffer": "buffer_name", "tensor_constant": "tensor_constant_name"}


class GraphBuilder:
    """Builds the main graph of ``archive``'s program, sizes evaluated with ``dims``; with ``body`` (its name, its
    serialized graph, the operator running it), the subgraph a higher-order operator (``cond``, ``while_loop``,
    ``map``) runs, ``depth`` levels down."""

    def __init__(self, archive: Archive, model: ir.Model, dims: Mapping[str, int],
                 body: tuple[str, dict[str, Any], ir.Node] | None = None, depth: int = 0) -> None:
        self.archive, self.model, self.dims, self.depth = archive, model, dims, depth
        self.path = archive.path
        if body is None:
            self.module = _object(archive.document.get("graph_module"))
            self.source = _object(self.module.get("graph"))
            self.graph = model.add_graph("forward")
        else:
            name, source, parent = body
            self.module, self.source = {}, _object(source)
            self.graph = model.add_graph(name, parent=parent)
        self.values: dict[str, ir.Value] = {}
        self.tensor_meta = _object(self.source.get("tensor_values"))
        self.symbolic = {**_object(self.source.get("sym_int_values")), **_object(self.source.get("sym_float_values")),
                         **_object(self.source.get("sym_bool_values"))}

    def error(self, message: str) -> LoaderError:
        return LoaderError(f"{self.path}: {message}")

    def build(self) -> ir.Graph:
        self.add_inputs()
        nodes = self.source.get("nodes")
        if not isinstance(nodes, list):
            raise self.error("the program has no node list (not a torch.export program?)")
        if len(nodes) > MAX_NODES:
            raise self.error(f"{len(nodes):,} nodes, more than any program holds")
        for index, entry in enumerate(nodes):
            if not isinstance(entry, dict):
                raise self.error(f"node {index} is not an object")
            self.add_node(entry, index)
        self.add_outputs()
        return self.graph

    # ---- tensors ---------------------------------------------------------------------------------------------

    def value(self, name: str) -> ir.Value:
        """The value named ``name`` in the program, made on first use with its recorded type."""
        found = self.values.get(name)
        if found is None:
            found = self.values[name] = self.graph.add_value(name, type=self.type_of(name))
        return found

    def type_of(self, name: str) -> ir.TensorType | None:
        meta = self.tensor_meta.get(name)
        if isinstance(meta, dict):
            return self.tensor_type(meta)
        symbolic = self.symbolic.get(name)
        if symbolic is not None:
            return ir.TensorType("int64" if name not in _object(self.source.get("sym_float_values")) else "float64", ())
        return None

    def tensor_type(self, meta: Mapping[str, Any]) -> ir.TensorType:
        shape: list[ir.Dim] = []
        for size in sizes(meta):
            value = size.value(self.dims) if size is not None else None
            shape.append(value if value is not None else (size.text() if size is not None else None))
        return ir.TensorType(dtype_name(meta.get("dtype")), tuple(shape))

    def add_inputs(self) -> None:
        """Placeholders: user inputs become graph inputs; parameters, buffers and constants become constants named
        by their state-dict names."""
        signature = _object(self.module.get("signature"))
        specs = {}
        for spec in signature.get("input_specs") or []:
            kind, body = _union(spec)
            name = _tensor_name(_object(body).get("arg")) if kind != "user_input" else \
                _tensor_name(_object(_object(body).get("arg")).get("as_tensor"))
            if name:
                specs[name] = (kind, _object(body))
        for argument in self.source.get("inputs") or []:
            kind, body = _union(argument)
            name = _tensor_name(body) if kind == "as_tensor" else None
            if name is None:
                continue
            spec_kind, spec = specs.get(name, ("user_input", {}))
            target = spec.get(_STATE_KINDS.get(spec_kind, ""))
            if name in self.values:
                continue
            if isinstance(target, str) and target:
                self.add_state(name, target, spec_kind)
            else:
                value = self.value(name)
                value.is_input = True
                self.graph.inputs.append(value)

    def add_state(self, name: str, target: str, kind: str) -> None:
        """A parameter, buffer or constant: a constant value named ``target`` standing for placeholder ``name``."""
        if target in self.values:
            self.values[name] = self.values[target]  # one tensor under two placeholders (tied weights)
            return
        meta = self.tensor_meta.get(name)
        stored = self.archive.tensors.get(target)
        value = self.graph.add_value(target, type=self.tensor_type(meta) if isinstance(meta, dict) else None)
        value.metadata["kind"] = kind
        value.metadata["placeholder"] = name
        self.values[name] = self.values[target] = value
        if stored is None and isinstance(meta, dict):
            stored = Stored(None, meta, False)
        if stored is not None:
            value.initializer = stored_tensor(self.archive, stored, value)

    def add_outputs(self) -> None:
        signature = _object(self.module.get("signature"))
        kinds = [_union(spec)[0] for spec in signature.get("output_specs") or []]
        for index, argument in enumerate(self.source.get("outputs") or []):
            kind, body = _union(argument)
            names = _names(kind, body)
            for name in names:
                value = self.value(name)
                if not value.is_output:
                    value.is_output = True
                    self.graph.outputs.append(value)
                spec = kinds[index] if index < len(kinds) else "user_output"
                if spec != "user_output":
                    value.metadata["output"] = clean(spec, 40)

    # ---- operators -------------------------------------------------------------------------------------------

    def add_node(self, entry: dict[str, Any], index: int) -> None:
        target = entry.get("target")
        if not isinstance(target, str) or not target:
            raise self.error(f"node {index} has no target")
        domain, op_type, overload = split_target(target)
        node = self.graph.add_node(op_type, domain=domain, name=str(entry.get("name") or ""),
                                   category=category(FORMAT, op_type))
        if overload:
            node.attributes["overload"] = overload
            node.defaults.add("overload")
        self.add_arguments(node, entry.get("inputs"))
        for argument in entry.get("outputs") or []:
            kind, body = _union(argument)
            for name in _names(kind, body):
                value = self.value(name)
                if value.producer is not None or value.is_input or value.initializer is not None:
                    raise self.error(f"tensor {clean(name, 80)!r} is written twice (node {index})")
                value.producer = node
                node.outputs.append(value)
        node.metadata.update(node_metadata(_object(entry.get("metadata")), node.name))

    def add_arguments(self, node: ir.Node, arguments: Any) -> None:
        slots: list[tuple[str, ir.Value | None]] = []
        for argument in arguments if isinstance(arguments, list) else []:
            entry = _object(argument)
            name = str(entry.get("name") or f"arg{len(slots)}")
            kind, body = _union(_object(entry.get("arg")))
            names = _names(kind, body)
            plain = self.subgraph(node, body) if kind == "as_graph" else attribute(kind, body)
            if plain is not None:
                node.attributes[name] = plain
            slots.extend((name, self.value(n)) for n in names)
            if not names:
                slots.append((name, None))
        while slots and slots[-1][1] is None:
            slots.pop()
        for name, value in slots:
            node.inputs.append(value)
            node.input_names.append(name)
            if value is not None and (not value.consumers or value.consumers[-1] is not node):
                value.consumers.append(node)


    def subgraph(self, node: ir.Node, body: Any) -> ir.SubgraphRef | str:
        """The graph a higher-order operator runs, built as a subgraph of the model (its placeholders are its
        inputs, matched by position to the operator's operands)."""
        entry = _object(body)
        source = entry.get("graph")
        name = clean(entry.get("name") or f"graph {len(self.model.graphs)}", 200)
        if not isinstance(source, dict):
            return f"graph {name} (not saved)"
        if self.depth >= MAX_NESTING:
            raise self.error(f"subgraphs nested more than {MAX_NESTING} deep")
        child = GraphBuilder(self.archive, self.model, self.dims, (name, source, node), self.depth + 1)
        child.build()
        node.subgraphs.append(child.graph)
        return ir.SubgraphRef(child.graph.index)


def split_target(target: str) -> tuple[str, str, str]:
    """``torch.ops.aten.conv2d.default`` → (``aten``, ``conv2d``, ``default``); ``_operator.mul`` →
    (``_operator``, ``_operator.mul``, ``""``); other namespaces' ops are named ``namespace.name``."""
    if target.startswith("torch.ops."):
        namespace, _, rest = target[len("torch.ops."):].partition(".")
        name, _, overload = rest.partition(".")
        if namespace == "aten" and name:
            return namespace, name, overload
        return namespace, f"{namespace}.{name}" if name else namespace, overload
    module, _, name = target.rpartition(".")
    return module, target, ""


def node_metadata(meta: Mapping[str, Any], name: str) -> dict[str, str]:
    """What a node's metadata adds: its module path as name scopes, the module's type, where the code was."""
    found: dict[str, str] = {}
    stack = meta.get("nn_module_stack")
    if isinstance(stack, str) and stack:
        paths, types = [], []
        for item in stack.split(";"):
            parts = item.split(",")
            if len(parts) >= 3:
                paths.append(",".join(parts[1:-1]))
                types.append(parts[-1])
        if paths:
            found[NAME_SCOPES_KEY] = repr([*paths, name])
            found["module"] = paths[-1]
            found["module_type"] = types[-1]
    trace = meta.get("stack_trace")
    if isinstance(trace, str) and trace.strip():
        frames = [line.strip() for line in trace.splitlines() if line.strip().startswith("File ")]
        own = [frame for frame in frames if "/torch/" not in frame and "\\torch\\" not in frame]
        if frames:  # the innermost frame of the model's own code, not of torch.nn
            found["source"] = clean((own or frames)[-1], 300)
    return found


def attribute(kind: str, body: Any) -> Any:
    """The plain value of a non-tensor argument (numbers, lists, dtype names…), None for tensors and None."""
    if kind in ("as_int", "as_float", "as_bool", "as_string", "as_operator"):
        return body if isinstance(body, (int, float, str)) else None
    if kind in ("as_ints", "as_floats", "as_bools", "as_strings"):
        return [item for item in body if isinstance(item, (int, float, str))] if isinstance(body, list) else None
    if kind in ("as_sym_int", "as_sym_float", "as_sym_bool"):
        return _symbolic_plain(body)
    if kind in ("as_sym_ints", "as_sym_floats", "as_sym_bools"):
        return [_symbolic_plain(item) for item in body] if isinstance(body, list) else None
    if kind == "as_scalar_type":
        return dtype_name(body)
    if kind == "as_layout":
        return _LAYOUTS.get(body, clean(body, 20)) if isinstance(body, int) else None
    if kind == "as_memory_format":
        return _MEMORY_FORMATS.get(body, clean(body, 20)) if isinstance(body, int) else None
    if kind == "as_device":
        device = _object(body)
        index = device.get("index")
        return f"{clean(device.get('type'), 20)}" + (f":{index}" if isinstance(index, int) else "")
    if kind in ("as_graph", "as_custom_obj"):
        return f"{kind[3:]} {clean(_object(body).get('name'), 80)}"
    if kind in ("as_none", "as_tensor", "as_tensors", "as_optional_tensors", "as_optional_tensor", ""):
        return None
    return f"({clean(kind, 40)})"


def _symbolic_plain(body: Any) -> Any:
    """A symbolic int/float/bool argument: its constant, or the name of the value it reads."""
    kind, inner = _union(body)
    if kind == "as_name":
        return clean(inner, 200)
    return inner if isinstance(inner, (int, float, bool)) else None


def _names(kind: str, body: Any) -> list[str]:
    """The values an argument reads or writes: tensors, optional tensors, symbolic ints by name."""
    if kind == "as_tensor":
        return [n for n in [_tensor_name(body)] if n]
    if kind in ("as_tensors", "as_optional_tensors"):
        items = body if isinstance(body, list) else []
        return [n for item in items for n in _names(*_optional(item))]
    if kind == "as_optional_tensor":
        return _names(*_optional(body))
    if kind in ("as_sym_int", "as_sym_float", "as_sym_bool"):
        inner_kind, inner = _union(body)
        return [inner] if inner_kind == "as_name" and isinstance(inner, str) else []
    if kind in ("as_sym_ints", "as_sym_floats", "as_sym_bools"):
        return [n for item in (body if isinstance(body, list) else []) for n in _names(kind[:-1], item)]
    return []


def _optional(item: Any) -> tuple[str, Any]:
    kind, body = _union(item)
    if kind in ("as_tensor", "as_none"):
        return kind, body
    return ("as_tensor", item) if isinstance(item, dict) and "name" in item else ("as_none", None)


def _tensor_name(body: Any) -> str | None:
    name = body.get("name") if isinstance(body, dict) else None
    return name if isinstance(name, str) and name else None


def _union(entry: Any) -> tuple[str, Any]:
    """The one set field of a serialized union (``{"as_tensor": {...}}`` → ("as_tensor", {...}))."""
    if isinstance(entry, dict):
        for key, value in entry.items():
            if value is not None or key == "as_none":
                return str(key), value
    return "", None


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}

