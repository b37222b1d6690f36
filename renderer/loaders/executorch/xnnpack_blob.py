"""What an XNNPACK delegate blob of an ExecuTorch program holds: the kinds of its XNNPACK nodes, in order.

The blob (executorch's ``backends/xnnpack/serialization``) starts with the header ``XH00`` at byte 4: its length
(uint16), then the FlatBuffer's offset and size (uint32 each), then the constant data's. The FlatBuffer
(identifier ``XN01``, ``schema.fbs``) is an ``XNNGraph`` whose ``xnodes`` each hold one ``XNodeUnion`` member.
"""

from __future__ import annotations

from renderer.files.flatbuffer_view import Buffer, Corrupt, Data

HEADER_MAGIC = b"XH00"
GRAPH_XNODES = 1  # XNNGraph: version, xnodes, xvalues, …
NODE_KINDS = (
    "Add", "FullyConnected", "Softmax", "Sigmoid", "StaticTranspose", "Clamp", "Conv2d", "Div",
    "StaticResizeBilinear2D", "StaticConstantPad", "AvgPooling2d", "Minimum", "DepthwiseConv2d", "MaxPooling2d",
    "Multiply", "Subtract", "Floor", "Convert", "GlobalAvgPooling2d", "StaticReshape", "ArgMaxPooling2d",
    "SquareRoot", "Ceiling", "Hardswish", "LeakyReLU", "Maximum", "Negate", "Square", "ELU", "Abs", "PReLU",
    "Concatenate2", "Concatenate3", "Concatenate4", "StaticSlice", "ScaledDotProductAttention",
    "BatchMatrixMultiply", "Concatenate5", "ConvTranspose2d", "ReciprocalSquareRoot", "Log", "Gelu", "Tanh", "Exp",
    "Sin", "Copy", "Cos",
)
"""``XNodeUnion``'s members in schema order (type 1 is the first), without their ``XNN`` prefix."""


def node_kinds(data: Data, start: int, size: int) -> list[str] | None:
    """The node kinds of the XNNPACK blob at ``data[start:start + size]``; None when it is no XNNPACK blob or
    cannot be read (the box then lists nothing rather than failing the load)."""
    end = start + size
    if size < 30 or bytes(data[start + 4:start + 8]) != HEADER_MAGIC:
        return None
    offset = int.from_bytes(data[start + 10:start + 14], "little")
    length = int.from_bytes(data[start + 14:start + 18], "little")
    if offset + length > size:
        return None
    try:
        graph = Buffer(data, start + offset, min(end, start + offset + length)).root()
        kinds = []
        for node in graph.tables(GRAPH_XNODES):
            kind = int(node.scalar(0, "B"))
            kinds.append(NODE_KINDS[kind - 1] if 0 < kind <= len(NODE_KINDS) else f"node type {kind}")
        return kinds
    except (Corrupt, ValueError, IndexError):
        return None
