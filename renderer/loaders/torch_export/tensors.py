"""The weights of a ``torch.export`` program as ``ir.Tensor``: dtype and shape from the ``tensor_meta`` torch wrote
beside each one, values read on demand from the archive member holding its storage (raw little-endian bytes;
``sizes``, ``strides`` and ``storage_offset`` place the tensor in it, as in torch). Nothing is copied at load time.

A tensor whose member is a pickle, is missing, or whose strides reach past its storage keeps its dtype and
shape (parameters and bytes count) and says why its values cannot be read when a metric asks for them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from renderer.core import ir
from renderer.loaders.torch_export import meta
from renderer.loaders.torch_export.archive import Archive, Stored

if TYPE_CHECKING:
    import numpy as np


def stored_tensor(archive: Archive, stored: Stored, value: ir.Value) -> ir.Tensor | None:
    """The constant data of ``value`` (a parameter, buffer or constant), None when its shape is not static."""
    shape = _static(stored)
    if shape is None:
        value.metadata["data"] = "symbolic or unreadable sizes: no stored tensor"
        return None
    dtype = meta.dtype_name(stored.meta.get("dtype"))
    code = stored.meta.get("dtype")
    np_dtype = meta.DTYPES.get(code, ("", None))[1] if isinstance(code, int) else None
    if np_dtype is not None and archive.big_endian:  # torch writes the machine's byte order (``byteorder``)
        np_dtype = np_dtype.replace("<", ">")
    if stored.pickled:
        value.metadata["data"] = "a Python pickle in the archive: not read (annograph runs no pickles)"
    strides = _ints(stored.meta.get("strides"))
    offset = _int(stored.meta.get("storage_offset"))

    def decode(data: memoryview) -> np.ndarray:
        return _decode(data, dtype, np_dtype, shape, strides, offset)

    return ir.Tensor(dtype, shape, reader=archive.reader(stored, decode), location=stored.member)


def _static(stored: Stored) -> tuple[int, ...] | None:
    found = []
    for size in meta.sizes(stored.meta):
        if size is None or size.kind != "int" or size.number < 0:
            return None
        found.append(size.number)
    return tuple(found)


def _int(entry: object) -> int | None:
    value = entry.get("as_int") if isinstance(entry, dict) else None
    return value if type(value) is int else None


def _ints(entries: object) -> tuple[int, ...] | None:
    if not isinstance(entries, list):
        return None
    found = [_int(entry) for entry in entries]
    return None if any(v is None for v in found) else tuple(found)  # type: ignore[misc]


def _decode(data: memoryview, dtype: str, np_dtype: str | None, shape: tuple[int, ...],
            strides: tuple[int, ...] | None, offset: int | None) -> np.ndarray:
    """The tensor ``shape`` at element ``offset`` with element ``strides`` in the storage ``data``."""
    import numpy as np
    from numpy.lib.stride_tricks import as_strided

    if np_dtype is None:
        raise ValueError(f"no reader for {dtype} data")
    storage = np.frombuffer(data, dtype=np.dtype(np_dtype), count=len(data) // np.dtype(np_dtype).itemsize)
    strides = strides if strides is not None and len(strides) == len(shape) else None
    offset = offset or 0
    if strides is None or offset < 0 or any(s < 0 for s in strides):
        raise ValueError("the tensor's strides or offset are not readable")
    last = offset + sum((n - 1) * s for n, s in zip(shape, strides)) if all(shape) else offset - 1
    if last >= storage.size:
        raise ValueError(f"the tensor reaches element {last:,} of a storage of {storage.size:,}")
    if not all(shape):
        array = np.zeros(shape, dtype=storage.dtype)
    else:
        item = storage.dtype.itemsize
        array = as_strided(storage[offset:], shape=shape, strides=tuple(s * item for s in strides), writeable=False)
    if dtype == "bfloat16":  # numpy has no bfloat16: widen to the float32 with the same top 16 bits
        return (array.astype(np.uint32) << 16).view(np.float32)
    return array
