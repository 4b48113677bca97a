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
from operator import itemgetter
from typing import Any

from kraftlog_client.errors import KafkaTimeoutError
from kraftlog_client.record_types import RecordMetadata

try:
    # The C descriptor behind collections.namedtuple's fields (CPython).
    from _collections import _tuplegetter
except ImportError:  # other interpreters: the same through a property

    def _tuplegetter(index: int, doc: str) -> Any:
        return property(itemgetter(index), doc=doc)


def _field(index: int, doc: str) -> Any:
    return _tuplegetter(index, doc)


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
    error = future[0].error
    fn(error, None if error is not None else future.metadata())


class FutureRecordMetadata(tuple[ProduceRequestResult, int, int, int, int]):
    """The future of one sent record: ``get(timeout)`` returns :class:`RecordMetadata` or
    raises the delivery error (:class:`KafkaTimeoutError` if ``timeout`` seconds pass).

    One is made per ``send()``, so it is a tuple (its batch's result, the record's relative
    offset, timestamp, key size, value size) built with one C-level call, a third cheaper than
    a ``__slots__`` object's ``__init__``; see :meth:`of`. Two futures are the same future
    only if they are the same object (``is``).
    """

    __slots__ = ()

    _result: ProduceRequestResult = _field(0, "the batch's shared result")
    relative_offset: int = _field(1, "the record's offset within its batch")
    timestamp: int = _field(2, "the record's CreateTime (ms)")
    key_size: int = _field(3, "bytes of the key, -1 for a null key")
    value_size: int = _field(4, "bytes of the value, -1 for a null value")

    @classmethod
    def of(
        cls,
        result: ProduceRequestResult,
        relative_offset: int,
        timestamp: int,
        key_size: int,
        value_size: int,
    ) -> FutureRecordMetadata:
        """A future from its fields as arguments (the hot path calls ``cls((...))``)."""
        return cls((result, relative_offset, timestamp, key_size, value_size))

    def done(self) -> bool:
        return self[0].is_done()

    def get(self, timeout: float | None = None) -> RecordMetadata:
        result = self[0]
        if not result.wait(timeout):
            raise KafkaTimeoutError(f"no delivery report within {timeout} s")
        error = result.error
        if error is not None:
            raise error
        return self.metadata()

    def result(self, timeout: float | None = None) -> RecordMetadata:
        """Alias of :meth:`get`, as in ``concurrent.futures.Future``."""
        return self.get(timeout)

    def exception(self, timeout: float | None = None) -> Exception | None:
        result = self[0]
        if not result.wait(timeout):
            raise KafkaTimeoutError(f"no delivery report within {timeout} s")
        return result.error

    def metadata(self) -> RecordMetadata:
        """The record's metadata (offset -1 when acks=0 or before the batch completed)."""
        r, relative_offset, timestamp, key_size, value_size = self
        offset = r.base_offset + relative_offset if r.base_offset >= 0 else -1
        if r.log_append_time_ms >= 0:
            timestamp = r.log_append_time_ms
        return RecordMetadata(r.topic, r.partition, offset, timestamp, key_size, value_size)

    def add_done_callback(self, fn: DeliveryCallback) -> None:
        """Call ``fn(error, metadata)`` once delivered or failed."""
        self[0].add_callback(self, fn)

    def __repr__(self) -> str:
        return (
            f"FutureRecordMetadata({self[0].topic}-{self[0].partition}, "
            f"relative_offset={self[1]}, done={self.done()})"
        )

    # Identity, not contents: a future is one record's pending outcome.
    __eq__ = object.__eq__
    __ne__ = object.__ne__
    __hash__ = object.__hash__
