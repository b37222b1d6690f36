"""Small TFLite files built with the flatbuffers builder, for tests: one function per table of the schema.

Each function takes the ``flatbuffers.Builder`` and returns the offset of what it wrote; ``model`` finishes the
file. Used by the synthetic models of ``test_loader_tflite.py`` and the hostile ones of ``payloads.py``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import flatbuffers
import numpy as np
import tflite


def offsets(b: flatbuffers.Builder, items: Sequence[int]) -> int:
    """A vector of tables (or strings) written earlier."""
    b.StartVector(4, len(items), 4)
    for item in reversed(items):
        b.PrependUOffsetTRelative(item)
    return b.EndVector()


def ints(b: flatbuffers.Builder, values: Sequence[int]) -> int:
    return b.CreateNumpyVector(np.array(values, dtype=np.int32))


def buffer(b: flatbuffers.Builder, data: bytes | None) -> int:
    data_off = b.CreateByteVector(data) if data else None
    tflite.BufferStart(b)
    if data_off is not None:
        tflite.BufferAddData(b, data_off)
    return tflite.BufferEnd(b)


def opcode(b: flatbuffers.Builder, builtin: int, custom: str | None = None) -> int:
    custom_off = b.CreateString(custom) if custom is not None else None
    tflite.OperatorCodeStart(b)
    tflite.OperatorCodeAddDeprecatedBuiltinCode(b, min(builtin, 127))
    tflite.OperatorCodeAddBuiltinCode(b, builtin)
    if custom_off is not None:
        tflite.OperatorCodeAddCustomCode(b, custom_off)
    tflite.OperatorCodeAddVersion(b, 1)
    return tflite.OperatorCodeEnd(b)


def tensor(b: flatbuffers.Builder, name: str, shape: Sequence[int], dtype: int = tflite.TensorType.FLOAT32,
           buffer: int = 0, signature: Sequence[int] | None = None, variable: bool = False) -> int:
    name_off, shape_off = b.CreateString(name), ints(b, shape)
    sig_off = ints(b, signature) if signature is not None else None
    tflite.TensorStart(b)
    tflite.TensorAddName(b, name_off)
    tflite.TensorAddShape(b, shape_off)
    if sig_off is not None:
        tflite.TensorAddShapeSignature(b, sig_off)
    tflite.TensorAddType(b, dtype)
    tflite.TensorAddBuffer(b, buffer)
    if variable:
        tflite.TensorAddIsVariable(b, variable)
    return tflite.TensorEnd(b)


def fully_connected_options(b: flatbuffers.Builder, keep_num_dims: bool = False) -> int:
    """FullyConnectedOptions that keep the input's leading dims or flatten them."""
    tflite.FullyConnectedOptionsStart(b)
    tflite.FullyConnectedOptionsAddKeepNumDims(b, keep_num_dims)
    return tflite.FullyConnectedOptionsEnd(b)


def reshape_options(b: flatbuffers.Builder) -> int:
    """ReshapeOptions without a new_shape: the shape is the operator's second input."""
    tflite.ReshapeOptionsStart(b)
    return tflite.ReshapeOptionsEnd(b)


def operator(b: flatbuffers.Builder, code: int, inputs: Sequence[int], outputs: Sequence[int], options_type: int = 0,
             options: int | None = None, custom: bytes | None = None) -> int:
    in_off, out_off = ints(b, inputs), ints(b, outputs)
    custom_off = b.CreateByteVector(custom) if custom is not None else None
    tflite.OperatorStart(b)
    tflite.OperatorAddOpcodeIndex(b, code)
    tflite.OperatorAddInputs(b, in_off)
    tflite.OperatorAddOutputs(b, out_off)
    if options is not None:
        tflite.OperatorAddBuiltinOptionsType(b, options_type)
        tflite.OperatorAddBuiltinOptions(b, options)
    if custom_off is not None:
        tflite.OperatorAddCustomOptions(b, custom_off)
    return tflite.OperatorEnd(b)


def subgraph(b: flatbuffers.Builder, name: str, tensors: Sequence[int], operators: Sequence[int],
             inputs: Sequence[int], outputs: Sequence[int]) -> int:
    tensors_off, ops_off = offsets(b, tensors), offsets(b, operators)
    in_off, out_off, name_off = ints(b, inputs), ints(b, outputs), b.CreateString(name)
    tflite.SubGraphStart(b)
    tflite.SubGraphAddTensors(b, tensors_off)
    tflite.SubGraphAddOperators(b, ops_off)
    tflite.SubGraphAddInputs(b, in_off)
    tflite.SubGraphAddOutputs(b, out_off)
    tflite.SubGraphAddName(b, name_off)
    return tflite.SubGraphEnd(b)


def tensor_map(b: flatbuffers.Builder, name: str, index: int) -> int:
    name_off = b.CreateString(name)
    tflite.TensorMapStart(b)
    tflite.TensorMapAddName(b, name_off)
    tflite.TensorMapAddTensorIndex(b, index)
    return tflite.TensorMapEnd(b)


def signature(b: flatbuffers.Builder, key: str, inputs: dict[str, int], outputs: dict[str, int]) -> int:
    """A signature of subgraph 0: input and output names → tensor indices."""
    sig_in = offsets(b, [tensor_map(b, name, index) for name, index in inputs.items()])
    sig_out = offsets(b, [tensor_map(b, name, index) for name, index in outputs.items()])
    key_off = b.CreateString(key)
    tflite.SignatureDefStart(b)
    tflite.SignatureDefAddInputs(b, sig_in)
    tflite.SignatureDefAddOutputs(b, sig_out)
    tflite.SignatureDefAddSignatureKey(b, key_off)
    tflite.SignatureDefAddSubgraphIndex(b, 0)
    return tflite.SignatureDefEnd(b)


def metadata(b: flatbuffers.Builder, name: str, buffer_index: int) -> int:
    name_off = b.CreateString(name)
    tflite.MetadataStart(b)
    tflite.MetadataAddName(b, name_off)
    tflite.MetadataAddBuffer(b, buffer_index)
    return tflite.MetadataEnd(b)


def model(b: flatbuffers.Builder, *, codes: Sequence[int], subgraphs: Sequence[int], buffers: Sequence[int],
          description: str | None = None, metadata: Sequence[int] = (), signatures: Sequence[int] = (),
          version: int = 3) -> bytes:
    """The finished file; the optional fields are left out when not given."""
    codes_off, graphs_off, buffers_off = offsets(b, codes), offsets(b, subgraphs), offsets(b, buffers)
    meta_off = offsets(b, metadata) if metadata else None
    sigs_off = offsets(b, signatures) if signatures else None
    description_off = b.CreateString(description) if description is not None else None
    tflite.ModelStart(b)
    tflite.ModelAddVersion(b, version)
    tflite.ModelAddOperatorCodes(b, codes_off)
    tflite.ModelAddSubgraphs(b, graphs_off)
    if description_off is not None:
        tflite.ModelAddDescription(b, description_off)
    tflite.ModelAddBuffers(b, buffers_off)
    if meta_off is not None:
        tflite.ModelAddMetadata(b, meta_off)
    if sigs_off is not None:
        tflite.ModelAddSignatureDefs(b, sigs_off)
    b.Finish(tflite.ModelEnd(b), file_identifier=b"TFL3")
    return bytes(b.Output())


def sparsity(b: flatbuffers.Builder, traversal_order: Sequence[int],
             dims: Sequence[tuple[int, Sequence[int], Sequence[int]] | int], block_map: Sequence[int] = ()) -> int:
    """SparsityParameters: one entry per traversed dim, a dense size (DENSE) or (0, segments, indices) for a
    SPARSE_CSR dim with uint8 index vectors."""
    metadata = []
    for dim in dims:
        if isinstance(dim, int):
            tflite.DimensionMetadataStart(b)
            tflite.DimensionMetadataAddFormat(b, tflite.DimensionType.DENSE)
            tflite.DimensionMetadataAddDenseSize(b, dim)
            metadata.append(tflite.DimensionMetadataEnd(b))
            continue
        _, segments, indices = dim
        vectors = []
        for values in (segments, indices):
            data = b.CreateNumpyVector(np.array(values, dtype=np.uint8))
            tflite.Uint8VectorStart(b)
            tflite.Uint8VectorAddValues(b, data)
            vectors.append(tflite.Uint8VectorEnd(b))
        tflite.DimensionMetadataStart(b)
        tflite.DimensionMetadataAddFormat(b, tflite.DimensionType.SPARSE_CSR)
        tflite.DimensionMetadataAddArraySegmentsType(b, tflite.SparseIndexVector.Uint8Vector)
        tflite.DimensionMetadataAddArraySegments(b, vectors[0])
        tflite.DimensionMetadataAddArrayIndicesType(b, tflite.SparseIndexVector.Uint8Vector)
        tflite.DimensionMetadataAddArrayIndices(b, vectors[1])
        metadata.append(tflite.DimensionMetadataEnd(b))
    order_off, metadata_off = ints(b, traversal_order), offsets(b, metadata)
    block_off = ints(b, block_map) if block_map else None
    tflite.SparsityParametersStart(b)
    tflite.SparsityParametersAddTraversalOrder(b, order_off)
    if block_off is not None:
        tflite.SparsityParametersAddBlockMap(b, block_off)
    tflite.SparsityParametersAddDimMetadata(b, metadata_off)
    return tflite.SparsityParametersEnd(b)


def one_subgraph_model(tensors: Sequence[dict], operators: Sequence[tuple[int, Sequence[int], Sequence[int], Any]],
                       inputs: Sequence[int], outputs: Sequence[int]) -> bytes:
    """A model of one subgraph. ``tensors``: dicts with ``name``, ``shape`` and optionally ``dtype``, ``data``
    (bytes), ``variable``, ``sparsity`` (a function of the builder returning SparsityParameters). ``operators``:
    (builtin code, input tensors with -1 for omitted, output tensors, options: a function of the builder
    returning (options type, offset), or None)."""
    b = flatbuffers.Builder(1024)
    buffers = [buffer(b, None)]
    written = []
    for spec in tensors:
        index = 0
        if spec.get("data") is not None:
            buffers.append(buffer(b, spec["data"]))
            index = len(buffers) - 1
        sparse = spec["sparsity"](b) if spec.get("sparsity") else None
        name_off, shape_off = b.CreateString(spec["name"]), ints(b, spec["shape"])
        tflite.TensorStart(b)
        tflite.TensorAddName(b, name_off)
        tflite.TensorAddShape(b, shape_off)
        tflite.TensorAddType(b, spec.get("dtype", tflite.TensorType.FLOAT32))
        tflite.TensorAddBuffer(b, index)
        if spec.get("variable"):
            tflite.TensorAddIsVariable(b, True)
        if sparse is not None:
            tflite.TensorAddSparsity(b, sparse)
        written.append(tflite.TensorEnd(b))
    codes: list[int] = []
    ops = []
    for code, op_inputs, op_outputs, options in operators:
        if code not in codes:
            codes.append(code)
        kind, table = options(b) if options is not None else (0, None)
        ops.append(operator(b, codes.index(code), op_inputs, op_outputs, kind, table))
    graph = subgraph(b, "main", written, ops, inputs, outputs)
    return model(b, codes=[opcode(b, code) for code in codes], subgraphs=[graph], buffers=buffers)
