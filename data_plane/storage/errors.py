"""Storage exceptions, each carrying the Kafka protocol error code it maps to.

The broker turns a raised :class:`StorageError` (like every :class:`common.errors.ApiError`,
which also covers the record-format errors of :mod:`common.errors`) into a partition-level
error in its response by reading ``error_code`` (and ``retriable``); it never needs to know
the concrete class.
"""

from __future__ import annotations

from common.error_codes import ErrorCode
from common.errors import ApiError


class StorageError(ApiError):
    """Base class of storage errors; ``error_code`` is the Kafka error code to answer with."""


class RecordListTooLargeError(StorageError):
    """A whole append is larger than a segment can hold (RECORD_LIST_TOO_LARGE)."""

    error_code = ErrorCode.RECORD_LIST_TOO_LARGE


class OffsetOutOfRangeError(StorageError):
    """A read or truncation names an offset outside [log start offset, log end offset]."""

    error_code = ErrorCode.OFFSET_OUT_OF_RANGE


class InvalidAppendOffsetError(StorageError):
    """A follower append whose offsets go backwards (below the log end offset, or not
    increasing inside the payload); Kafka's UnexpectedAppendOffset/OffsetsOutOfOrder."""

    error_code = ErrorCode.UNKNOWN_SERVER_ERROR


class KafkaStorageError(StorageError):
    """An I/O failure or unusable on-disk state (KAFKA_STORAGE_ERROR): the log is offline."""

    error_code = ErrorCode.KAFKA_STORAGE_ERROR


class LogDirLayoutError(KafkaStorageError):
    """A log directory holds something this broker does not recognise; the message names the
    offending path so an operator can move it away."""


class CorruptCheckpointError(KafkaStorageError):
    """A checkpoint file does not parse; the message names the file and the line."""


class LogClosedError(KafkaStorageError):
    """The log (or segment) was closed or deleted while an operation was using it."""
