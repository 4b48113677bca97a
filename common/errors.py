"""Exceptions that map to one Kafka error code, and those of the RecordBatch format.

:class:`ApiError` is the base of every exception a broker turns into a Kafka error code in its
response by reading ``error_code`` (and ``retriable``), without knowing the concrete class
(Kafka's ``ApiException``). The record-format errors below are raised by
:mod:`common.record_batch` and :mod:`common.compression`, on the broker and in clients alike;
the storage layer's own errors (``data_plane.storage.errors``) derive from the same base.
"""

from __future__ import annotations

from common.error_codes import ErrorCode


class ApiError(Exception):
    """An error with the Kafka error code to answer with (``error_code``) and whether a retry
    may succeed (``retriable``)."""

    error_code: int = ErrorCode.UNKNOWN_SERVER_ERROR
    retriable: bool = False


class CorruptRecordError(ApiError):
    """A batch failed its CRC-32C, framing or magic check (CORRUPT_MESSAGE, retriable as in
    Kafka: a client may re-send, a consumer may re-fetch from another replica)."""

    error_code = ErrorCode.CORRUPT_MESSAGE
    retriable = True


class InvalidRecordError(ApiError):
    """A well-framed batch breaks a rule the broker enforces: count mismatch, control batch from
    a client, missing sequence for an idempotent producer, bad record encoding (INVALID_RECORD)."""

    error_code = ErrorCode.INVALID_RECORD


class UnsupportedCompressionTypeError(ApiError):
    """The batch uses a codec this broker does not implement (lz4, snappy, or an unknown id)."""

    error_code = ErrorCode.UNSUPPORTED_COMPRESSION_TYPE


class RecordTooLargeError(ApiError):
    """One batch is larger than ``max.message.bytes`` (MESSAGE_TOO_LARGE)."""

    error_code = ErrorCode.MESSAGE_SIZE_TOO_LARGE
