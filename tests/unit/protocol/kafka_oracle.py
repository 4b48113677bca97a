"""kafka-python 3.x as a test-only oracle: its request/response classes (built from the Apache
Kafka JSON schemas by an independent implementation) encode requests for our decoder and decode
our responses. Imported inside warnings.catch_warnings because kafka-python warns on import."""

from __future__ import annotations

import uuid
import warnings
from typing import Any

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    import kafka.protocol.admin as _admin
    import kafka.protocol.consumer as _consumer
    import kafka.protocol.metadata as _metadata
    import kafka.protocol.producer as _producer
    import kafka.protocol.sasl as _sasl
    from kafka.protocol.api_message import ApiMessage

from common.protocol.fields import ArrayOf, F, Primitive, StructOf


def _message_classes() -> dict[tuple[int, str], type]:
    classes: dict[tuple[int, str], type] = {}
    for module in (_admin, _consumer, _metadata, _producer, _sasl):
        for name in dir(module):
            obj = getattr(module, name)
            if isinstance(obj, type) and issubclass(obj, ApiMessage) and obj is not ApiMessage:
                classes[(obj.API_KEY, obj.type)] = obj
    return classes


CLASSES = _message_classes()


def request_class(api_key: int) -> Any:
    return CLASSES[(api_key, "request")]


def response_class(api_key: int) -> Any:
    return CLASSES[(api_key, "response")]


# kafka-python renames the int32 *_authorized_operations bitfields to a set of bit numbers
# (None for the "not requested" value INT32_MIN, i.e. only bit 31).
def _int_to_bits(value: int) -> set[int] | None:
    bits = {i for i in range(32) if (value & 0xFFFFFFFF) >> i & 1}
    return None if bits == {31} else bits


def _bits_to_int(bits: set[int] | int | None) -> int:
    if isinstance(bits, int):  # kept as the raw int32 where kafka-python does not convert
        return bits
    unsigned = sum(1 << i for i in ({31} if bits is None else bits))
    return unsigned - (1 << 32) if unsigned >= 1 << 31 else unsigned


def build(cls: Any, body: dict, version: int) -> Any:
    """A kafka-python object (top level or nested) holding ``body``."""
    kwargs: dict[str, Any] = {}
    fields = cls._struct.fields
    for name, value in body.items():
        if name.endswith("authorized_operations"):
            target = name if name in fields else "authorized_operations"
            kwargs[target] = _int_to_bits(value)
            continue
        field = fields[name]
        if value is not None and field.is_struct_array():
            value = [build(field.data_class, item, version) for item in value]
        elif value is not None and field.is_struct():
            value = build(field.data_class, value, version)
        elif getattr(field, "_type_str", None) == "uuid" and isinstance(value, bytes):
            # kafka-python: a uuid.UUID, None for the zero id.
            value = None if value == bytes(16) else uuid.UUID(bytes=value)
        kwargs[name] = value
    return cls(version=version, **kwargs)


def to_body(obj: Any, fields: tuple[F, ...], version: int) -> dict:
    """The fields of ``version`` (per our tables) read from a decoded kafka-python object."""
    body: dict[str, Any] = {}
    for f in fields:
        if not f.present_in(version):
            continue
        if f.name.endswith("authorized_operations"):
            source = f.name if f.name in obj._struct.fields else "authorized_operations"
            body[f.name] = _bits_to_int(getattr(obj, source))
            continue
        value = getattr(obj, f.name)
        if value is not None and isinstance(f.type, StructOf):
            value = to_body(value, f.type.fields, version)
        elif value is not None and not isinstance(f.type, (Primitive, ArrayOf)):
            value = [to_body(item, f.type, version) for item in value]
        elif value is not None and f.type in (Primitive.RECORDS, Primitive.BYTES):
            value = bytes(value) if not hasattr(value, "buffer") else bytes(value.buffer())
        elif f.type is Primitive.UUID:
            # kafka-python: a uuid.UUID, None for the zero id.
            value = bytes(16) if value is None else value.bytes
        elif isinstance(value, tuple):
            value = list(value)
        body[f.name] = value
    return body


def encode_request(
    api_key: int, version: int, correlation_id: int, client_id: str | None, body: dict
) -> bytes:
    """Request header + body as kafka-python puts them on the wire (without the size prefix)."""
    obj = build(request_class(api_key), body, version)
    obj.with_header(correlation_id=correlation_id, client_id=client_id)
    return bytes(obj.encode(header=True))


def decode_response(api_key: int, version: int, frame: bytes) -> tuple[int, Any]:
    """(correlation_id, kafka-python object) of a response frame without the size prefix."""
    obj = response_class(api_key).decode(frame, version=version, header=True)
    return obj.header.correlation_id, obj
