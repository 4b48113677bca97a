"""Exceptions of the protocol codec; each carries the Kafka error code a peer should see."""

from __future__ import annotations

from typing import TYPE_CHECKING

from common.error_codes import ErrorCode

if TYPE_CHECKING:
    from common.protocol.codec import RequestHeader


class ProtocolError(Exception):
    """Malformed bytes: truncated, a bad length, invalid UTF-8, null where not nullable.

    ``error_code`` is what a broker reports if it can still answer (INVALID_REQUEST by
    default); usually it cannot frame an answer and closes the connection instead.
    """

    def __init__(self, message: str, error_code: ErrorCode = ErrorCode.INVALID_REQUEST) -> None:
        super().__init__(message)
        self.error_code = error_code


class UnsupportedVersionError(ProtocolError):
    """An unknown API key or a version outside ``SUPPORTED_VERSIONS``. The request header was
    parsed (``header``), so the broker can answer with
    :func:`common.protocol.codec.unsupported_version_response`."""

    def __init__(self, header: RequestHeader, message: str) -> None:
        super().__init__(message, ErrorCode.UNSUPPORTED_VERSION)
        self.header = header


class FrameTooLargeError(ProtocolError):
    """A size prefix announced more than the frame bound (``socket.request.max.bytes`` on a
    broker). Raised before any of the body is buffered; the connection must be closed."""

    def __init__(self, size_bytes: int, max_frame_bytes: int) -> None:
        super().__init__(
            f"frame of {size_bytes} bytes exceeds the limit of {max_frame_bytes} bytes",
            ErrorCode.INVALID_REQUEST,
        )
        self.size_bytes = size_bytes
        self.max_frame_bytes = max_frame_bytes


class EncodeError(ValueError):
    """A body dict does not fit the schema of the (api, version) it is encoded as: a value of
    the wrong type or out of range, null in a non-nullable field, a string over 32767 bytes.
    A programming error of the caller, never caused by peer input."""
