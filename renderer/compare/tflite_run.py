"""Running a TFLite model in LiteRT (``ai-edge-litert``) keeping every intermediate tensor.

Quantized tensors are dequantized with their scale and zero point (per axis where the file says so), so an int8
model compares with its float original. Resource and variant tensors (variable handles) hold no data.
"""

from __future__ import annotations

import contextlib
import io
import warnings
from pathlib import Path
from typing import Any

from renderer.core.errors import AnnographError, first_line
from renderer.loaders.feeds import InputSpec, fixed_sizes
from renderer.loaders.isolated import allocation_failed


def _interpreter_class() -> Any:
    try:
        from ai_edge_litert.interpreter import Interpreter, OpResolverType
    except ImportError:
        raise AnnographError("comparing TFLite models needs LiteRT: pip install 'annograph[litert]'") from None
    return Interpreter, OpResolverType


class TfliteRun:
    """One TFLite model loaded for a comparison."""

    def __init__(self, path: str | Path) -> None:
        interpreter, resolver = _interpreter_class()
        self.path = str(path)
        try:
            with warnings.catch_warnings(), contextlib.redirect_stderr(io.StringIO()):
                warnings.simplefilter("ignore")  # "preserve_all_tensors is for debugging": that is what we do
                self.interpreter = interpreter(
                    model_path=self.path, experimental_preserve_all_tensors=True,
                    experimental_op_resolver_type=resolver.BUILTIN_WITHOUT_DEFAULT_DELEGATES,
                )
                self.interpreter.allocate_tensors()
        except (ValueError, RuntimeError) as e:
            raise AnnographError(f"{path}: LiteRT cannot load it ({first_line(e)})") from None
        self.details = self.interpreter.get_tensor_details()

    def inputs(self) -> list[InputSpec]:
        import numpy as np

        # the signature keeps -1 on dynamic axes (``shape`` says 1 there), so --dim can pin them
        specs = []
        for d in self.interpreter.get_input_details():
            shape = tuple(int(s) for s in d.get("shape_signature", d["shape"]))
            specs.append(InputSpec(d["name"], shape, np.dtype(d["dtype"]).name, fixed_sizes(shape)))
        return specs

    def quantize_feeds(self, feeds: dict[str, Any]) -> dict[str, Any]:
        """Float feeds for a quantized input quantized with the input's own scale and zero point."""
        import numpy as np

        out = dict(feeds)
        for d in self.interpreter.get_input_details():
            value = out.get(d["name"])
            dtype = np.dtype(d["dtype"])
            scales = d["quantization_parameters"]["scales"]
            if value is not None and value.dtype.kind == "f" and dtype.kind in "iu" and len(scales) == 1:
                zero = d["quantization_parameters"]["zero_points"][0]
                info = np.iinfo(dtype)
                out[d["name"]] = np.clip(np.round(value / scales[0]) + zero, info.min, info.max).astype(dtype)
        return out

    def run(self, feeds: dict[str, Any]) -> dict[int, tuple[str, Any]]:
        """Tensor index (subgraph 0) → (name, value as float where it was quantized), for every tensor with data."""
        import numpy as np

        by_name = {d["name"]: d for d in self.interpreter.get_input_details()}
        for name, value in feeds.items():
            detail = by_name[name]
            try:
                if tuple(value.shape) != tuple(detail["shape"]):
                    self.interpreter.resize_tensor_input(detail["index"], list(value.shape))
                    self.interpreter.allocate_tensors()
                self.interpreter.set_tensor(detail["index"], value.astype(detail["dtype"], copy=False))
            except (ValueError, RuntimeError) as e:
                raise AnnographError(f"{self.path}: input {name!r}: {first_line(e)}") from None
        try:
            self.interpreter.invoke()
        except (ValueError, RuntimeError) as e:
            if allocation_failed(str(e)):
                raise MemoryError from None  # the child's memory limit: its own line
            raise AnnographError(f"{self.path}: LiteRT failed to run it ({first_line(e)})") from None
        values: dict[int, tuple[str, Any]] = {}
        for detail in self.interpreter.get_tensor_details():
            if np.dtype(detail["dtype"]).kind not in "fiub":  # resource / variant handles hold no data
                continue
            try:
                data = self.interpreter.get_tensor(detail["index"])
            except ValueError:  # "Tensor data is null": never written
                continue
            values[detail["index"]] = (detail["name"], dequantize(data, detail["quantization_parameters"]))
        return values


def dequantize(data: Any, params: dict[str, Any]) -> Any:
    """``(q - zero_point) * scale`` as float32, per axis when there are several scales; other tensors as they are."""
    import numpy as np

    scales = np.asarray(params.get("scales", []), dtype=np.float64)
    if data.dtype.kind not in "iu" or scales.size == 0:
        return data
    zeros = np.asarray(params.get("zero_points", []), dtype=np.float64)
    if zeros.size == 0:
        zeros = np.zeros_like(scales)
    if scales.size > 1:
        axis = int(params.get("quantized_dimension", 0))
        shape = [1] * data.ndim
        shape[axis] = scales.size
        scales, zeros = scales.reshape(shape), zeros.reshape(shape)
    return ((data.astype(np.float64) - zeros) * scales).astype(np.float32)
