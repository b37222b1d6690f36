"""A sparse TFLite tensor's sparsity parameters: how many values its buffer holds, and a line describing them.

The schema's ``SparsityParameters`` list the dims in ``traversal_order`` (the tensor's dims, then one per
``block_map`` entry for block sparsity), each ``DENSE`` (``dense_size`` entries per parent position) or
``SPARSE_CSR`` (``array_segments[p]..array_segments[p + 1]`` are the stored entries under parent position
``p``, ``array_indices`` their coordinates). Walking the dims in order gives the number of stored values:
a dense dim multiplies the positions by its size, a CSR dim replaces them by its last segment end.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Stored:
    """What the sparsity parameters say about a tensor's stored values.

    Attributes:
        count: the number of values they index, or None when the parameters do not describe a count.
        text: one line for the tensor's metadata (formats of the traversed dims, blocks, stored share).
    """

    count: int | None
    text: str


def _vector(kind: int, table: Any) -> list[int] | None:
    """The values of a SparseIndexVector union member (Int32Vector 1, Uint16Vector 2, Uint8Vector 3)."""
    import tflite

    classes = {1: tflite.Int32Vector, 2: tflite.Uint16Vector, 3: tflite.Uint8Vector}
    if table is None or kind not in classes:
        return None
    vector = classes[kind]()
    vector.Init(table.Bytes, table.Pos)
    if vector.ValuesLength() == 0:
        return []
    return vector.ValuesAsNumpy().tolist()


def read(sparsity: Any, dense: int | None) -> Stored:
    """The stored values that ``sparsity`` (a ``tflite.SparsityParameters``) indexes in a tensor of ``dense``
    elements (None when its shape is not static); parameters the accessors cannot read say so."""
    try:
        return _read(sparsity, dense)
    except Exception as e:  # a corrupt table costs the count, not the model
        return Stored(None, f"sparse: unreadable sparsity parameters ({type(e).__name__})")


def _read(sparsity: Any, dense: int | None) -> Stored:
    order = sparsity.TraversalOrderAsNumpy().tolist() if sparsity.TraversalOrderLength() else []
    blocks = sparsity.BlockMapAsNumpy().tolist() if sparsity.BlockMapLength() else []
    positions: int | None = 1
    formats = []
    for i in range(sparsity.DimMetadataLength()):
        dim = sparsity.DimMetadata(i)
        if dim.Format() == 0:  # DENSE
            formats.append(f"dense {dim.DenseSize()}")
            positions = positions * dim.DenseSize() if positions is not None else None
            continue
        formats.append("CSR")
        segments = _vector(dim.ArraySegmentsType(), dim.ArraySegments())
        if positions is None or segments is None or len(segments) != positions + 1:
            positions = None
        else:
            positions = int(segments[-1])
    if len(order) != len(formats):
        positions = None
    text = f"sparse: traversal order {','.join(map(str, order)) or '?'}"
    text += f"; blocks on dims {','.join(map(str, blocks))}" if blocks else ""
    text += f"; dims {', '.join(formats) or 'none'}"
    if positions is not None and dense:
        text += f"; {positions:,} of {dense:,} values stored ({positions / dense:.1%})"
    return Stored(positions, text)
