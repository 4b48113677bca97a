"""The vocabulary of the declarative schema tables in :mod:`common.protocol.schemas`.

A message is a tuple of :class:`F` (field) entries. A field exists in versions
``since..until`` (``until=None``: every later version); it may hold null from version
``nullable`` on. Its type is a :class:`Primitive`, an :class:`ArrayOf` a primitive, or a list of
``F`` entries, meaning an array of structs with those fields (Kafka's ``[]SomeStruct``).
A field with a ``tag`` is a tagged field (KIP-482): it exists only in flexible versions,
travels in the tagged-field section at the end of its struct, and is sent only when its value
differs from its default. The tables are data only; :mod:`common.protocol.compiler` turns
each (message, version) into encode/decode functions once, on first use.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any


class Primitive(Enum):
    """Kafka's wire types (integers big-endian). The variable-width ones are written with an
    int16/int32 length in non-flexible versions and a compact unsigned-varint length (length + 1,
    0 = null) in flexible versions."""

    INT8 = "int8"
    INT16 = "int16"
    INT32 = "int32"
    INT64 = "int64"
    UINT16 = "uint16"
    FLOAT64 = "float64"
    BOOL = "bool"  # one byte, non-zero is true
    UUID = "uuid"  # 16 bytes (topic ids, directory ids); decoded as bytes
    STRING = "string"  # int16 length (-1 = null) + UTF-8
    BYTES = "bytes"  # int32 length (-1 = null) + bytes
    RECORDS = "records"  # as BYTES; decoded as a memoryview of the frame (zero copy)


INT8 = Primitive.INT8
INT16 = Primitive.INT16
INT32 = Primitive.INT32
INT64 = Primitive.INT64
UINT16 = Primitive.UINT16
FLOAT64 = Primitive.FLOAT64
BOOL = Primitive.BOOL
UUID = Primitive.UUID
STRING = Primitive.STRING
BYTES = Primitive.BYTES
RECORDS = Primitive.RECORDS


@dataclass(frozen=True, slots=True)
class ArrayOf:
    """An array (int32 count, -1 = null) of a primitive type, e.g. Kafka's ``[]int32``."""

    element: Primitive


def ARRAY(element: Primitive) -> ArrayOf:
    return ArrayOf(element)


@dataclass(frozen=True, slots=True)
class StructOf:
    """One nested struct (not an array), e.g. DescribeTopicPartitions' Cursor; flexible
    versions only. A nullable one starts with a one-byte marker: -1 null, 1 present."""

    fields: tuple[F, ...]


def STRUCT(*fields: F) -> StructOf:
    return StructOf(tuple(fields))


FieldType = Primitive | ArrayOf | StructOf | tuple["F", ...]


@dataclass(frozen=True, slots=True)
class F:
    """One field: ``F(name, type, since=0, until=None, nullable=None, default=None, tag=None)``.

    ``name`` is the snake_case form of the Kafka schema's field name. ``default`` is used on
    encode when a body dict lacks the field; None means the type's zero (0, False, "", [] or,
    for a field nullable in that version, null). ``tag`` makes it a tagged field, present only
    in the flexible versions among ``since..until``.
    """

    name: str
    type: Any
    since: int = 0
    until: int | None = None
    nullable: int | None = None
    default: Any = None
    tag: int | None = None

    def __post_init__(self) -> None:
        if isinstance(self.type, list):
            object.__setattr__(self, "type", tuple(self.type))

    def present_in(self, version: int) -> bool:
        return self.since <= version and (self.until is None or version <= self.until)

    def nullable_in(self, version: int) -> bool:
        return self.nullable is not None and version >= self.nullable
