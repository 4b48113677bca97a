"""Errors the native client raises or hands to delivery callbacks.

A broker's answer becomes a :class:`KafkaError` carrying the Kafka :class:`ErrorCode` (and its
``retriable`` flag); conditions detected inside the client have their own subclasses.
"""

from __future__ import annotations

from common.error_codes import ErrorCode


class KafkaError(Exception):
    """A Kafka error code with a message; ``retriable`` says whether trying again may work."""

    def __init__(self, code: ErrorCode | int, message: str = "") -> None:
        try:
            self.code = ErrorCode(code)
        except ValueError:
            self.code = ErrorCode.UNKNOWN_SERVER_ERROR
        self.message = message
        text = self.code.name if not message else f"{self.code.name}: {message}"
        super().__init__(text)

    @property
    def retriable(self) -> bool:
        return self.code.retriable


class KafkaTimeoutError(KafkaError):
    """A bounded wait passed: max.block.ms, delivery.timeout.ms, request.timeout.ms, a flush."""

    def __init__(self, message: str) -> None:
        super().__init__(ErrorCode.REQUEST_TIMED_OUT, message)


class KafkaConnectionError(KafkaError):
    """A connection to a broker failed or closed with requests in flight."""

    def __init__(self, message: str) -> None:
        super().__init__(ErrorCode.NETWORK_EXCEPTION, message)


class RecordTooLargeError(KafkaError):
    """One record is larger than max.request.size or buffer.memory."""

    def __init__(self, message: str) -> None:
        super().__init__(ErrorCode.MESSAGE_SIZE_TOO_LARGE, message)


class CommitFailedError(KafkaError):
    """A commit the group cannot accept: the member was removed or a rebalance reassigned
    the partitions since they were read (the records will be delivered again, as
    at-least-once allows)."""

    def __init__(self, code: ErrorCode | int, message: str) -> None:
        super().__init__(code, message)


class ClientClosedError(Exception):
    """The producer, consumer or admin client was used after close()."""


class IllegalStateError(Exception):
    """The call does not fit the client's state (e.g. poll() with nothing assigned)."""


class NoOffsetForPartitionError(IllegalStateError):
    """A partition has no position and auto.offset.reset is none."""


class UnsupportedFeatureError(Exception):
    """A configured feature this client does not provide (e.g. an API the broker lacks)."""
