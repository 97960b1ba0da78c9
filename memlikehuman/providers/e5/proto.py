"""The few ONNX messages graph.py builds, written straight in protobuf's wire format.

The onnx package would build them too, but importing it costs about a second at every model load
(its ml_dtypes extension alone took 0.83 s here), more than building the whole graph: a one-shot
`memlikehuman recall --mode semantic` paid it on every call. The messages and field numbers are
those of onnx.proto (ModelProto, GraphProto, NodeProto, AttributeProto, TensorProto, ValueInfoProto);
fields are written in field-number order, repeated scalars unpacked, as onnx's own serializer does
for these messages (tests/test_embedder_engines.py compares the bytes with onnx's, a dev dependency).
"""

from __future__ import annotations

import numbers
import struct
from collections.abc import Sequence

import numpy as np

# TensorProto.DataType
FLOAT, UINT8, INT8, INT32, INT64 = 1, 2, 3, 6, 7
_TYPES = {np.dtype(np.float32): FLOAT, np.dtype(np.uint8): UINT8, np.dtype(np.int8): INT8}
_TYPES |= {np.dtype(np.int32): INT32, np.dtype(np.int64): INT64}
# AttributeProto.AttributeType
_ATTR_FLOAT, _ATTR_INT, _ATTR_TENSOR, _ATTR_INTS = 1, 2, 4, 7
Attribute = int | float | Sequence[int] | np.ndarray


def _varint(value: int) -> bytes:
    value &= (1 << 64) - 1  # negative int64s as ten bytes of two's complement, as protobuf does
    out = bytearray()
    while value > 0x7F:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _int(field: int, value: int) -> bytes:
    return _varint(field << 3) + _varint(value)


def _bytes(field: int, data: bytes) -> bytes:
    return _varint(field << 3 | 2) + _varint(len(data)) + data


def _text(field: int, text: str) -> bytes:
    return _bytes(field, text.encode("utf-8"))


def tensor(name: str, value: np.ndarray) -> bytes:
    """A TensorProto: dims, data type, name (if any) and the little-endian values as raw data."""
    array = np.ascontiguousarray(value)
    kind = _TYPES[array.dtype]
    dims = b"".join(_int(1, d) for d in array.shape)
    named = _text(8, name) if name else b""
    return dims + _int(2, kind) + named + _bytes(9, array.astype(array.dtype.newbyteorder("<"), copy=False).tobytes())


def external_tensor(name: str, value: np.ndarray) -> bytes:
    """A TensorProto that names its data but does not hold it (its values come from the session's
    external initializers: onnxruntime reads them from the caller's array, no copy in the model)."""
    dims = b"".join(_int(1, d) for d in value.shape)
    location = _text(1, "location") + _text(2, "session external initializer")
    return dims + _int(2, _TYPES[value.dtype]) + _text(8, name) + _bytes(13, location) + _int(14, 1)


def _attribute(name: str, value: Attribute) -> bytes:
    if isinstance(value, np.ndarray):
        return _text(1, name) + _bytes(5, tensor("", value)) + _int(20, _ATTR_TENSOR)
    if isinstance(value, numbers.Integral):
        return _text(1, name) + _int(3, int(value)) + _int(20, _ATTR_INT)
    if isinstance(value, numbers.Real):
        return _text(1, name) + _varint(2 << 3 | 5) + struct.pack("<f", float(value)) + _int(20, _ATTR_FLOAT)
    if isinstance(value, Sequence) and all(isinstance(v, numbers.Integral) for v in value):
        return _text(1, name) + b"".join(_int(8, int(v)) for v in value) + _int(20, _ATTR_INTS)
    raise TypeError(f"attribute {name}: {type(value).__name__} is not written (int, float, ints or an array)")


def node(op: str, inputs: Sequence[str], outputs: Sequence[str], domain: str = "", **attributes: Attribute) -> bytes:
    """A NodeProto; attributes in name order, as onnx.helper.make_node puts them."""
    out = [_text(1, name) for name in inputs] + [_text(2, name) for name in outputs] + [_text(4, op)]
    out += [_bytes(5, _attribute(key, attributes[key])) for key in sorted(attributes)]
    return b"".join([*out, _text(7, domain)])


def value_info(name: str, kind: int, shape: Sequence[int | str]) -> bytes:
    """A ValueInfoProto of a tensor; a str dimension is symbolic (dim_param)."""
    dims = b"".join(_bytes(1, _int(1, d) if isinstance(d, int) else _text(2, d)) for d in shape)
    tensor_type = _int(1, kind) + _bytes(2, dims)
    return _text(1, name) + _bytes(2, _bytes(1, tensor_type))


def model(
    nodes: Sequence[bytes],
    name: str,
    inputs: Sequence[bytes],
    outputs: Sequence[bytes],
    initializers: Sequence[bytes],
    opsets: dict[str, int],
    ir_version: int,
) -> bytes:
    """A serialized ModelProto holding one graph."""
    graph = [_bytes(1, n) for n in nodes] + [_text(2, name)] + [_bytes(5, t) for t in initializers]
    graph += [_bytes(11, v) for v in inputs] + [_bytes(12, v) for v in outputs]
    opset = [_bytes(8, _text(1, domain) + _int(2, version)) for domain, version in opsets.items()]
    return b"".join([_int(1, ir_version), _bytes(7, b"".join(graph)), *opset])
