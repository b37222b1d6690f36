"""Split an ONNX file into a light protobuf and the places of its large weights, by reading the wire format.

Parsing a ModelProto copies every ``raw_data`` byte into the message, and reading ``raw_data`` back copies it
again; for a model with tens of millions of weights that is most of a load. Here the file is mapped, the
protobuf wire format of ``ModelProto.graph.initializer[i].raw_data`` is located by walking the length prefixes
(nodes and other fields are skipped, not decoded), and a copy of the file without those fields is handed to
protobuf. The weights are then numpy views straight over the mapped file.

Only what is needed is understood: ModelProto field 7 (graph), GraphProto field 5 (initializer), TensorProto
field 9 (raw_data). Anything unusual (a repeated graph or raw_data field, groups, a length past the end) makes
``split`` return None, and the caller parses the whole file the ordinary way, which reports errors properly.
"""

from __future__ import annotations

from dataclasses import dataclass

_MODEL_GRAPH = 7
_GRAPH_INITIALIZER = 5
_TENSOR_RAW_DATA = 9

_VARINT, _FIXED64, _LENGTH, _FIXED32 = 0, 1, 2, 5

# raw_data shorter than this stays in the message: shape tensors and other small constants that shape
# inference's data propagation reads.
MIN_STRIPPED_BYTES = 8192


class _Malformed(Exception):
    pass


@dataclass(frozen=True)
class Split:
    light: bytes
    # initializer index in the main graph → (offset, length) of its raw_data in the file
    weights: dict[int, tuple[int, int]]


def _varint(buf: memoryview, pos: int, end: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= end or shift > 63:
            raise _Malformed
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, pos
        shift += 7


def _encode_varint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _fields(buf: memoryview, pos: int, end: int):  # type: ignore[no-untyped-def]
    """(field number, wire type, field start, payload start, payload end) for each field in [pos, end)."""
    while pos < end:
        start = pos
        key, pos = _varint(buf, pos, end)
        number, wire = key >> 3, key & 7
        if number == 0:
            raise _Malformed
        if wire == _VARINT:
            _, pos = _varint(buf, pos, end)
            payload = pos
        elif wire == _LENGTH:
            length, payload = _varint(buf, pos, end)
            pos = payload + length
        elif wire == _FIXED64:
            payload, pos = pos, pos + 8
        elif wire == _FIXED32:
            payload, pos = pos, pos + 4
        else:  # groups (3, 4) and invalid wire types
            raise _Malformed
        if pos > end:
            raise _Malformed
        yield number, wire, start, payload, pos


def split(buffer: bytes | memoryview, min_bytes: int = MIN_STRIPPED_BYTES) -> Split | None:
    """The light copy and weight places of ``buffer`` (a serialized ModelProto), or None if there is nothing
    worth stripping or the layout is not the plain one this understands."""
    buf = memoryview(buffer)
    try:
        return _split(buf, min_bytes)
    except _Malformed:
        return None


def _split(buf: memoryview, min_bytes: int) -> Split | None:
    graphs = [(start, payload, end) for number, wire, start, payload, end in _fields(buf, 0, len(buf))
              if number == _MODEL_GRAPH and wire == _LENGTH]
    if len(graphs) != 1:
        return None  # no graph, or several pieces protobuf would merge
    graph_start, graph_payload, graph_end = graphs[0]

    pieces: list[bytes | memoryview] = []  # the new graph payload
    weights: dict[int, tuple[int, int]] = {}
    copied = graph_payload
    index = 0
    for number, wire, start, payload, end in _fields(buf, graph_payload, graph_end):
        if number != _GRAPH_INITIALIZER or wire != _LENGTH:
            continue
        raw = [(w, s, p, e) for n, w, s, p, e in _fields(buf, payload, end) if n == _TENSOR_RAW_DATA]
        if len(raw) > 1 or (raw and raw[0][0] != _LENGTH):
            return None  # several raw_data fields (protobuf keeps the last) or a wrong wire type
        if raw and raw[0][3] - raw[0][2] >= min_bytes:
            _, raw_start, raw_payload, raw_end = raw[0]
            pieces.append(buf[copied:start])
            pieces.append(_encode_varint((_GRAPH_INITIALIZER << 3) | _LENGTH))
            pieces.append(_encode_varint((end - payload) - (raw_end - raw_start)))
            pieces.append(buf[payload:raw_start])
            pieces.append(buf[raw_end:end])
            copied = end
            weights[index] = (raw_payload, raw_end - raw_payload)
        index += 1
    if not weights:
        return None
    pieces.append(buf[copied:graph_end])
    graph = b"".join(pieces)
    light = b"".join((buf[:graph_start], _encode_varint((_MODEL_GRAPH << 3) | _LENGTH), _encode_varint(len(graph)),
                      graph, buf[graph_end:]))
    return Split(light, weights)
