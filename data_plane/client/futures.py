"""Delivery futures: one shared result per batch, one light future per record.

Creating a ``concurrent.futures.Future`` per record would cost more than encoding the record,
so, as in Kafka's Java client, a batch owns one :class:`ProduceRequestResult` (an Event plus
the base offset or error) and each ``send()`` returns a :class:`FutureRecordMetadata` that
points at it with the record's relative offset.

Thread-safety: the sender thread completes a result exactly once (:meth:`complete`); any thread
may wait on it or add callbacks. Callbacks run on the sender thread after the result is set
(or at once, on the caller's thread, if it is already set) and must not block.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from data_plane.client.errors import KafkaTimeoutError
from data_plane.client.records import RecordMetadata

DeliveryCallback = Callable[[Exception | None, RecordMetadata | None], None]
_Pending = tuple["FutureRecordMetadata", Callable[[Exception | None, RecordMetadata | None], None]]


class ProduceRequestResult:
    """The outcome of one batch: base offset and log-append time, or an error."""

    __slots__ = (
        "_callbacks",
        "_done",
        "_lock",
        "base_offset",
        "error",
        "log_append_time_ms",
        "partition",
        "topic",
    )

    def __init__(self, topic: str, partition: int) -> None:
        self.topic = topic
        self.partition = partition
        self.base_offset = -1
        self.log_append_time_ms = -1
        self.error: Exception | None = None
        self._done = threading.Event()
        self._lock = threading.Lock()
        self._callbacks: list[_Pending] = []

    def add_callback(self, future: FutureRecordMetadata, fn: DeliveryCallback) -> None:
        """Call ``fn(error, metadata)`` once the batch is done (now if it is already)."""
        with self._lock:
            if not self._done.is_set():
                self._callbacks.append((future, fn))
                return
        _invoke(future, fn)

    def complete(self, base_offset: int, log_append_time_ms: int, error: Exception | None) -> None:
        """Set the outcome (once) and run the callbacks on this thread."""
        with self._lock:
            if self._done.is_set():
                return
            self.base_offset = base_offset
            self.log_append_time_ms = log_append_time_ms
            self.error = error
            self._done.set()
            callbacks, self._callbacks = self._callbacks, []
        for future, fn in callbacks:
            _invoke(future, fn)

    def is_done(self) -> bool:
        return self._done.is_set()

    def wait(self, timeout_s: float | None) -> bool:
        return self._done.wait(timeout_s)


def _invoke(future: FutureRecordMetadata, fn: DeliveryCallback) -> None:
    error = future._result.error
    fn(error, None if error is not None else future.metadata())


class FutureRecordMetadata:
    """The future of one sent record: ``get(timeout)`` returns :class:`RecordMetadata` or
    raises the delivery error (:class:`KafkaTimeoutError` if ``timeout`` seconds pass)."""

    __slots__ = ("_result", "key_size", "relative_offset", "timestamp", "value_size")

    def __init__(
        self,
        result: ProduceRequestResult,
        relative_offset: int,
        timestamp: int,
        key_size: int,
        value_size: int,
    ) -> None:
        self._result = result
        self.relative_offset = relative_offset
        self.timestamp = timestamp
        self.key_size = key_size
        self.value_size = value_size

    def done(self) -> bool:
        return self._result.is_done()

    def get(self, timeout: float | None = None) -> RecordMetadata:
        if not self._result.wait(timeout):
            raise KafkaTimeoutError(f"no delivery report within {timeout} s")
        error = self._result.error
        if error is not None:
            raise error
        return self.metadata()

    def result(self, timeout: float | None = None) -> RecordMetadata:
        """Alias of :meth:`get`, as in ``concurrent.futures.Future``."""
        return self.get(timeout)

    def exception(self, timeout: float | None = None) -> Exception | None:
        if not self._result.wait(timeout):
            raise KafkaTimeoutError(f"no delivery report within {timeout} s")
        return self._result.error

    def metadata(self) -> RecordMetadata:
        """The record's metadata (offset -1 when acks=0 or before the batch completed)."""
        r = self._result
        offset = r.base_offset + self.relative_offset if r.base_offset >= 0 else -1
        timestamp = r.log_append_time_ms if r.log_append_time_ms >= 0 else self.timestamp
        return RecordMetadata(
            r.topic, r.partition, offset, timestamp, self.key_size, self.value_size
        )

    def add_done_callback(self, fn: DeliveryCallback) -> None:
        """Call ``fn(error, metadata)`` once delivered or failed."""
        self._result.add_callback(self, fn)
