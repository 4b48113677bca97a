"""The records of ``__transaction_state``, byte for byte as Kafka's TransactionStateManager
writes them (version 0 of both schemas), so Kafka's tools decode them.

Key and value each start with an int16 schema version; integers big-endian, strings int16
length + UTF-8, arrays int32 count (-1 = null)::

    TransactionLogKey v0    version=0 i16 | transactional_id string
    TransactionLogValue v0  version=0 i16 | producer_id i64 | producer_epoch i16
                            | transaction_timeout_ms i32 | transaction_status i8
                            | transaction_partitions (nullable): count i32, per topic:
                                topic string | partition_ids: count i32, i32 each
                            | transaction_last_update_timestamp_ms i64
                            | transaction_start_timestamp_ms i64

``transaction_status`` is :class:`TransactionState`'s id. A null value is a tombstone: the
transactional id expired (the log cleaner then drops the key). Value version 1 is Kafka's
flexible form (tagged fields for KIP-890's producer id rotation); it is not written here and a
record in it is refused on load with a clear error.

Pure functions; thread-safe.
"""

from __future__ import annotations

from dataclasses import dataclass

from common.protocol.fields import ARRAY, INT8, INT16, INT32, INT64, STRING, F
from data_plane.coordinator.record_schemas import decode_versioned, encode_versioned, record_version
from data_plane.coordinator.transaction_state import TransactionState

TRANSACTION_LOG_KEY_VERSION = 0
TRANSACTION_LOG_VALUE_VERSION = 0

# fmt: off
_KEY = (
    F("transactional_id", STRING),
)
_VALUE = (
    F("producer_id", INT64),
    F("producer_epoch", INT16),
    F("transaction_timeout_ms", INT32),
    F("transaction_status", INT8),
    F("transaction_partitions", [
        F("topic", STRING),
        F("partition_ids", ARRAY(INT32)),
    ], nullable=0),
    F("transaction_last_update_timestamp_ms", INT64),
    F("transaction_start_timestamp_ms", INT64),
)
# fmt: on


class InvalidTransactionLogRecordError(ValueError):
    """A ``__transaction_state`` record this broker cannot decode."""


@dataclass(frozen=True, slots=True)
class TransactionLogValue:
    """What a ``__transaction_state`` value holds for one transactional id."""

    producer_id: int
    producer_epoch: int
    transaction_timeout_ms: int
    state: TransactionState
    # (topic, partition) pairs of the transaction, sorted; empty for Empty/Complete* states.
    partitions: tuple[tuple[str, int], ...]
    last_update_timestamp_ms: int
    start_timestamp_ms: int


def transaction_log_key(transactional_id: str) -> bytes:
    return encode_versioned(
        TRANSACTION_LOG_KEY_VERSION,
        _KEY,
        "TransactionLogKey",
        {"transactional_id": transactional_id},
    )


def transaction_log_value(value: TransactionLogValue) -> bytes:
    by_topic: dict[str, list[int]] = {}
    for topic, partition in sorted(value.partitions):
        by_topic.setdefault(topic, []).append(partition)
    return encode_versioned(
        TRANSACTION_LOG_VALUE_VERSION,
        _VALUE,
        "TransactionLogValue",
        {
            "producer_id": value.producer_id,
            "producer_epoch": value.producer_epoch,
            "transaction_timeout_ms": value.transaction_timeout_ms,
            "transaction_status": value.state.id,
            "transaction_partitions": [
                {"topic": t, "partition_ids": ps} for t, ps in by_topic.items()
            ],
            "transaction_last_update_timestamp_ms": value.last_update_timestamp_ms,
            "transaction_start_timestamp_ms": value.start_timestamp_ms,
        },
    )


def decode_transaction_log_key(data: bytes) -> str:
    version = record_version(data, "key", InvalidTransactionLogRecordError)
    if version != TRANSACTION_LOG_KEY_VERSION:
        raise InvalidTransactionLogRecordError(f"unknown transaction log key version {version}")
    body = decode_versioned(
        data, _KEY, "TransactionLogKey", version, InvalidTransactionLogRecordError
    )
    return str(body["transactional_id"])


def decode_transaction_log_value(data: bytes) -> TransactionLogValue:
    version = record_version(data, "value", InvalidTransactionLogRecordError)
    if version != TRANSACTION_LOG_VALUE_VERSION:
        raise InvalidTransactionLogRecordError(
            f"transaction log value version {version} is not supported (only 0)"
        )
    d = decode_versioned(
        data, _VALUE, "TransactionLogValue", version, InvalidTransactionLogRecordError
    )
    try:
        state = TransactionState.from_id(d["transaction_status"])
    except ValueError as e:
        raise InvalidTransactionLogRecordError(str(e)) from None
    partitions = tuple(
        sorted(
            (t["topic"], p)
            for t in d["transaction_partitions"] or ()
            for p in t["partition_ids"] or ()
        )
    )
    return TransactionLogValue(
        producer_id=d["producer_id"],
        producer_epoch=d["producer_epoch"],
        transaction_timeout_ms=d["transaction_timeout_ms"],
        state=state,
        partitions=partitions,
        last_update_timestamp_ms=d["transaction_last_update_timestamp_ms"],
        start_timestamp_ms=d["transaction_start_timestamp_ms"],
    )
