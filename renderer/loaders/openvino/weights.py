"""The IR's ``.bin``: each ``Const`` layer's data at its ``<data offset size element_type shape>``, checked
against the file (an offset or size past its end, or a size that is not the shape's bytes, is a LoaderError
naming the layer), mapped and read only when a metric asks for the values."""

from __future__ import annotations

import math
import mmap
from collections.abc import Callable
from pathlib import Path

import numpy as np

from renderer.core import ir
from renderer.core.errors import LoaderError
from renderer.core.escape import clean
from renderer.files import openvino_xml
from renderer.loaders.mapped import map_file
from renderer.loaders.openvino import types


class Bin:
    """The weights file beside ``xml`` (``model.bin``), mapped once; absent when the IR has none."""

    def __init__(self, xml: Path) -> None:
        self.path = xml.with_suffix(".bin")
        self.data: bytes | mmap.mmap | None = map_file(self.path) if self.path.is_file() else None

    def tensor(self, layer: openvino_xml.Layer, dtype: str, shape: tuple[int, ...], where: str) -> ir.Tensor:
        """The ``Const`` ``layer``'s data as a lazily read tensor; without a ``.bin``, or for element types whose
        values are not read, one that holds the shape only."""
        location = self.path.name
        if self.data is None or not {"offset", "size"} <= layer.data.keys():
            return ir.Tensor(dtype, shape, location=location if self.data is not None else None)
        offset, size = _number(layer.data["offset"], where, "offset"), _number(layer.data["size"], where, "size")
        if offset + size > len(self.data):
            raise LoaderError(f"{where}: {size:,} bytes at {offset:,} reach past the end of {self.path.name} "
                              f"({len(self.data):,} bytes)")
        bits = types.BITS.get(dtype)
        elements = math.prod(shape)
        if bits is not None and size != (elements * bits + 7) // 8:
            raise LoaderError(f"{where}: {size:,} bytes for {elements:,} {dtype} values "
                              f"(shape {clean(str(list(shape)), 80)})")
        numpy_type = types.NUMPY.get(dtype)
        reader = _reader(self.data, offset, numpy_type, dtype, shape) if numpy_type else None
        return ir.Tensor(dtype, shape, reader=reader, location=location)


def _number(text: str, where: str, key: str) -> int:
    if not (text.strip().isascii() and text.strip().isdigit()) or len(text.strip()) > 19:
        raise LoaderError(f"{where}: {key} {clean(text, 40)!r} is not a byte count")
    return int(text)


def _reader(data: bytes | mmap.mmap, offset: int, numpy_type: str, dtype: str,
            shape: tuple[int, ...]) -> Callable[[], np.ndarray]:
    def read() -> np.ndarray:
        count = math.prod(shape)
        values = np.frombuffer(data, dtype=np.dtype(numpy_type), count=count, offset=offset)
        if dtype == "bfloat16":  # numpy has no bfloat16: the float32 with the same top 16 bits
            values = (values.astype(np.uint32) << 16).view(np.float32)
        return values.reshape(shape)

    return read
