"""Control records: the one record of a control batch (attribute bit 5), written by a
partition leader when a transaction coordinator tells it a transaction ended (Kafka's
EndTransactionMarker). Readers skip control batches; read_committed readers use them, with
the aborted-transaction list, to drop aborted records.

Byte layout of the record's key and value (big-endian, inside an ordinary v2 record)::

    key:   version i16 (= 0)   type i16 (0 = ABORT, 1 = COMMIT)
    value: version i16 (= 0)   coordinator_epoch i32

A marker batch is transactional and control, carries the producer id and epoch of the
transaction it ends, base sequence -1, and exactly one record.

Pure functions; thread-safe.
"""

from __future__ import annotations

import enum
import struct
from dataclasses import dataclass

from common.errors import CorruptRecordError

CONTROL_RECORD_KEY_VERSION = 0
END_TXN_MARKER_VALUE_VERSION = 0
_KEY = struct.Struct(">hh")
_VALUE = struct.Struct(">hi")


class ControlRecordType(enum.IntEnum):
    ABORT = 0
    COMMIT = 1


@dataclass(frozen=True, slots=True)
class EndTxnMarker:
    """A decoded end-of-transaction marker: COMMIT or ABORT, and the epoch of the coordinator
    that wrote it (a leader refuses markers from an older coordinator epoch)."""

    control_type: ControlRecordType
    coordinator_epoch: int

    @property
    def committed(self) -> bool:
        return self.control_type is ControlRecordType.COMMIT


def encode_control_key(control_type: ControlRecordType) -> bytes:
    return _KEY.pack(CONTROL_RECORD_KEY_VERSION, int(control_type))


def encode_end_txn_marker_value(coordinator_epoch: int) -> bytes:
    return _VALUE.pack(END_TXN_MARKER_VALUE_VERSION, coordinator_epoch)


def decode_control_type(key: bytes | None) -> ControlRecordType | None:
    """The type named by a control record's key, or None for a type this code does not know
    (Kafka readers ignore unknown control types). Raises :class:`CorruptRecordError` for a
    key too short to hold a version and a type."""
    if key is None or len(key) < _KEY.size:
        raise CorruptRecordError(f"control record key of {0 if key is None else len(key)} bytes")
    _version, value = _KEY.unpack_from(key)
    try:
        return ControlRecordType(value)
    except ValueError:
        return None


def decode_end_txn_marker(key: bytes | None, value: bytes | None) -> EndTxnMarker | None:
    """The marker held by a control record, or None if it is some other control record."""
    control_type = decode_control_type(key)
    if control_type is None:
        return None
    if value is None or len(value) < _VALUE.size:
        raise CorruptRecordError("end transaction marker value too short")
    _version, coordinator_epoch = _VALUE.unpack_from(value)
    return EndTxnMarker(control_type, coordinator_epoch)
