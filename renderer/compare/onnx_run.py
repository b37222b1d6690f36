"""Running an ONNX model in onnxruntime with every intermediate tensor of its main graph as an output.

Graph optimizations are off, so every tensor of the file keeps its name and its value is what the file's own
operators compute; a QDQ model therefore runs as float arithmetic on quantize-dequantized values (ORT's fused
integer kernels can round differently in the last bit).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from renderer.core.errors import AnnographError, LoaderError, first_line
from renderer.loaders.feeds import InputSpec, fixed_sizes
from renderer.loaders.isolated import allocation_failed

ORT_TYPES = {
    "tensor(float)": "float32", "tensor(double)": "float64", "tensor(float16)": "float16",
    "tensor(int8)": "int8", "tensor(uint8)": "uint8", "tensor(int16)": "int16", "tensor(uint16)": "uint16",
    "tensor(int32)": "int32", "tensor(uint32)": "uint32", "tensor(int64)": "int64", "tensor(uint64)": "uint64",
    "tensor(bool)": "bool",
}


def _load_external_data(proto: Any, path: str) -> None:
    """Weights stored beside the model, read into ``proto``; a location onnx refuses (leaving the model's folder,
    not a regular file) or cannot read is a line saying so, not "not an ONNX model"."""
    from onnx.external_data_helper import load_external_data_for_model, uses_external_data

    if not any(uses_external_data(t) for t in proto.graph.initializer):
        return
    try:
        load_external_data_for_model(proto, str(Path(path).resolve().parent))
    except Exception as e:  # noqa: BLE001  OSError, ValueError, onnx's ValidationError
        raise LoaderError(f"{path}: its external data was refused or cannot be read ({first_line(e)})") from None


class OnnxRun:
    """One model loaded for a comparison: its graph, its inputs, and a session exposing every tensor."""

    def __init__(self, path: str | Path) -> None:
        import onnx

        self.path = str(path)
        try:
            self.proto = onnx.load(self.path, load_external_data=False)
        except FileNotFoundError:
            raise LoaderError(f"{path}: no such file") from None
        except Exception as e:  # noqa: BLE001  protobuf raises several kinds on a file that is not ONNX
            raise LoaderError(f"{path}: not an ONNX model ({first_line(e)})") from None
        _load_external_data(self.proto, self.path)
        graph = self.proto.graph
        constants = {init.name for init in graph.initializer}
        constants |= {out for node in graph.node if node.op_type == "Constant" for out in node.output}
        self.constants = constants
        self.producers = {out: node for node in graph.node for out in node.output if out}
        self.order = [out for node in graph.node for out in node.output if out and out not in constants]
        """Names of the tensors the main graph computes, in graph order."""
        self._session: Any = None

    def inputs(self) -> list[InputSpec]:
        specs = []
        for value in self.session().get_inputs():
            dtype = ORT_TYPES.get(value.type)
            if dtype is None:
                raise AnnographError(f"{self.path}: input {value.name!r} has type {value.type}, "
                                     "which compare cannot feed")
            shape = tuple(value.shape)
            specs.append(InputSpec(value.name, shape, dtype, fixed_sizes(shape)))
        return specs

    def session(self) -> Any:
        if self._session is None:
            try:
                import onnxruntime as ort
            except ImportError:
                raise AnnographError("comparing ONNX models needs onnxruntime: pip install 'annograph[ort]'") from None

            exposed = self.proto.__class__()
            exposed.CopyFrom(self.proto)
            have = {o.name for o in exposed.graph.output}
            for name in self.order:
                if name not in have:
                    exposed.graph.output.add().name = name  # type left for ORT to infer
            options = ort.SessionOptions()
            options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
            options.log_severity_level = 3
            try:
                self._session = ort.InferenceSession(exposed.SerializeToString(), options,
                                                     providers=["CPUExecutionProvider"])
            except Exception as e:  # noqa: BLE001  ORT's own exception types are not importable by name
                raise AnnographError(f"{self.path}: onnxruntime cannot load it ({first_line(e)})") from None
        return self._session

    def run(self, feeds: dict[str, Any]) -> dict[str, Any]:
        """Every computed tensor of the main graph by name (graph outputs included)."""
        session = self.session()
        names = [o.name for o in session.get_outputs()]
        try:
            values = session.run(names, feeds)
        except Exception as e:  # noqa: BLE001
            if allocation_failed(str(e)):
                raise MemoryError from None  # the child's memory limit: its own line
            raise AnnographError(f"{self.path}: onnxruntime failed to run it ({first_line(e)})") from None
        return dict(zip(names, values))

    def dequantized(self) -> dict[str, str]:
        """Float tensor name → the name of its quantize-dequantized value in this (QDQ) model.

        quantize_static writes ``x → QuantizeLinear → x_QuantizeLinear_Output → DequantizeLinear →
        x_DequantizeLinear_Output``; the pair is found by structure, so other naming schemes work too. When
        the float tensor is a graph output, the quantizer renames its producer's output (``x_QuantizeLinear_Input``)
        and the DequantizeLinear output keeps the name ``x``: that name is then matched directly.
        """
        result: dict[str, str] = {}
        for node in self.proto.graph.node:
            if node.op_type != "DequantizeLinear" or not node.input or not node.output:
                continue
            quantize = self.producers.get(node.input[0])
            if quantize is None or quantize.op_type != "QuantizeLinear" or not quantize.input:
                continue
            source = quantize.input[0]
            if source in self.constants or node.output[0] in self.constants:
                continue
            result.setdefault(source, node.output[0])
        return result
