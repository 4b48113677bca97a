"""Versioned coordinator records (``__consumer_offsets``, ``__transaction_state``): an int16
schema version followed by a body in the protocol codec's encoding (non-flexible, or flexible
for the record types Kafka defines so: compact strings and arrays, tagged fields), compiled
once per (schema, version) by the same schema compiler as the wire protocol.

Pure functions; the compiled-codec cache is filled idempotently (thread-safe under the GIL).
"""

from __future__ import annotations

import struct
from typing import Any, cast

from common.protocol.compiler import CompiledMessage, compile_message
from common.protocol.errors import ProtocolError
from common.protocol.fields import F

# Bound on the array elements one record may decode to (a group's members, a transaction's
# partitions).
MAX_RECORD_ELEMENTS = 100_000

_I16 = struct.Struct(">h")
_CODECS: dict[tuple[str, int, bool], CompiledMessage] = {}


def _codec(name: str, fields: tuple[F, ...], version: int, flexible: bool) -> CompiledMessage:
    key = (name, version, flexible)
    c = _CODECS.get(key)
    if c is None:
        c = compile_message(fields, version, f"coordinator record {name}", flexible)
        _CODECS[key] = c
    return c


def encode_versioned(
    version: int, fields: tuple[F, ...], name: str, body: dict[str, Any], flexible: bool = False
) -> bytes:
    out = bytearray(_I16.pack(version))
    _codec(name, fields, version, flexible).encode(out, body, [])
    return bytes(out)


def decode_versioned(
    data: bytes,
    fields: tuple[F, ...],
    name: str,
    version: int,
    error: type[ValueError],
    flexible: bool = False,
) -> dict[str, Any]:
    """Decode the body after the version; any malformation raises ``error``."""
    try:
        body, _ = _codec(name, fields, version, flexible).decode(
            memoryview(data), 2, MAX_RECORD_ELEMENTS
        )
    except (ProtocolError, struct.error, IndexError, UnicodeDecodeError, ValueError) as e:
        raise error(f"{name} v{version}: {e}") from None
    # Record schemas have no generated classes: their codec always builds dicts.
    return cast(dict[str, Any], body)


def record_version(data: bytes, what: str, error: type[ValueError]) -> int:
    if len(data) < 2:
        raise error(f"{what} of {len(data)} bytes has no version")
    return int(_I16.unpack_from(data, 0)[0])
