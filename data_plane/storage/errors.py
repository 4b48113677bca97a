"""Storage exceptions, each carrying the Kafka protocol error code it maps to.

The broker turns a raised :class:`StorageError` into a partition-level error in its response
by reading ``error_code`` (and ``retriable``); it never needs to know the concrete class. Codes
are Kafka's stable wire codes (``org.apache.kafka.common.protocol.Errors``).
"""

from __future__ import annotations

UNKNOWN_SERVER_ERROR = -1
OFFSET_OUT_OF_RANGE = 1
CORRUPT_MESSAGE = 2
MESSAGE_TOO_LARGE = 10
RECORD_LIST_TOO_LARGE = 18
KAFKA_STORAGE_ERROR = 56
UNSUPPORTED_COMPRESSION_TYPE = 76
INVALID_RECORD = 87


class StorageError(Exception):
    """Base class of storage errors; ``error_code`` is the Kafka error code to answer with."""

    error_code: int = UNKNOWN_SERVER_ERROR
    retriable: bool = False


class CorruptRecordError(StorageError):
    """A batch failed its CRC-32C, framing or magic check (CORRUPT_MESSAGE, retriable as in
    Kafka: a client may re-send, a consumer may re-fetch from another replica)."""

    error_code = CORRUPT_MESSAGE
    retriable = True


class InvalidRecordError(StorageError):
    """A well-framed batch breaks a rule the broker enforces: count mismatch, control batch from
    a client, missing sequence for an idempotent producer, bad record encoding (INVALID_RECORD)."""

    error_code = INVALID_RECORD


class UnsupportedCompressionTypeError(StorageError):
    """The batch uses a codec this broker does not implement (lz4, snappy, or an unknown id)."""

    error_code = UNSUPPORTED_COMPRESSION_TYPE


class RecordTooLargeError(StorageError):
    """One batch is larger than ``max.message.bytes`` (MESSAGE_TOO_LARGE)."""

    error_code = MESSAGE_TOO_LARGE


class RecordListTooLargeError(StorageError):
    """A whole append is larger than a segment can hold (RECORD_LIST_TOO_LARGE)."""

    error_code = RECORD_LIST_TOO_LARGE


class OffsetOutOfRangeError(StorageError):
    """A read or truncation names an offset outside [log start offset, log end offset]."""

    error_code = OFFSET_OUT_OF_RANGE


class InvalidAppendOffsetError(StorageError):
    """A follower append whose offsets go backwards (below the log end offset, or not
    increasing inside the payload); Kafka's UnexpectedAppendOffset/OffsetsOutOfOrder."""

    error_code = UNKNOWN_SERVER_ERROR


class KafkaStorageError(StorageError):
    """An I/O failure or unusable on-disk state (KAFKA_STORAGE_ERROR): the log is offline."""

    error_code = KAFKA_STORAGE_ERROR


class LogDirLayoutError(KafkaStorageError):
    """A log directory holds something this broker does not recognise; the message names the
    offending path so an operator can move it away."""


class CorruptCheckpointError(KafkaStorageError):
    """A checkpoint file does not parse; the message names the file and the line."""


class LogClosedError(KafkaStorageError):
    """The log (or segment) was closed or deleted while an operation was using it."""
