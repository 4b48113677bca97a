"""Writing rows to kraftlog with the idempotent native producer (acks=all).

Columns, as Spark's Kafka sink takes them: ``value`` (binary or string, required), ``key``
(binary or string, null = no key), ``topic`` (string; the ``topic`` option wins over it),
``partition`` (int; null = the default partitioner: murmur2 of the key), ``headers``
(array<struct<key:string,value:binary>>). Other columns are ignored, as Spark's sink does.

A Spark task writes its rows with one producer and returns once every record is acknowledged
by the partition's in-sync replicas; the first failed record fails the task. Retries of a
task (or of a whole job) may write records again: the idempotent producer removes duplicates
within one producer session only, so this path is at-least-once, like Spark's Kafka sink.
With ``exactlyOnce`` the same rows go through :mod:`spark_integration.transactional_writer`
(:func:`send_rows` serves both).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from kraftlog_client import Producer
from spark_integration.options import OptionError, WriteOptions

# Bound on waiting for the last acknowledgements of a task.
FLUSH_TIMEOUT_S = 120.0
_KNOWN_COLUMNS = ("key", "value", "topic", "partition", "headers")


def check_write_schema(columns: Sequence[str], options: WriteOptions) -> None:
    """Fail before any task starts when the DataFrame cannot be written."""
    if "value" not in columns:
        raise OptionError(
            f"writing format kraftlog needs a value column (got columns {list(columns)})"
        )
    if options.topic is None and "topic" not in columns:
        raise OptionError("writing format kraftlog needs the topic option or a topic column")


def _as_bytes(name: str, value: Any) -> bytes | None:
    if value is None or isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, bytearray | memoryview):
        return bytes(value)
    raise OptionError(f"column {name} must be binary or string, got {type(value).__name__}")


def _headers(value: Any) -> list[tuple[str, bytes | None]] | None:
    if value is None:
        return None
    out = []
    for h in value:
        key, val = (h["key"], h["value"]) if not isinstance(h, tuple) else h
        if not isinstance(key, str):
            raise OptionError(f"header keys must be strings, got {type(key).__name__}")
        out.append((key, _as_bytes("headers.value", val)))
    return out


class DeliveryErrors:
    """The first failed record's error, kept by :meth:`on_delivery` (called on the
    producer's sender thread; one list append is atomic under the GIL)."""

    def __init__(self) -> None:
        self.errors: list[Exception] = []

    def on_delivery(self, error: Exception | None, _metadata: object) -> None:
        if error is not None and not self.errors:
            self.errors.append(error)

    def raise_first(self) -> None:
        if self.errors:
            raise self.errors[0]


def send_rows(
    producer: Producer,
    options: WriteOptions,
    columns: Sequence[str],
    rows: Iterable[Any],
    errors: DeliveryErrors,
) -> int:
    """Queue every row with ``producer`` (nothing waits for acknowledgements); returns the
    number of records queued. Stops early once a record failed; the caller flushes, then
    :meth:`DeliveryErrors.raise_first`."""
    index = {name: columns.index(name) for name in _KNOWN_COLUMNS if name in columns}
    count = 0
    for row in rows:
        if errors.errors:
            break
        topic = options.topic or (row[index["topic"]] if "topic" in index else None)
        if not topic:
            raise OptionError(f"row {count} has no topic (null topic column)")
        producer.send(
            topic,
            _as_bytes("value", row[index["value"]]),
            key=_as_bytes("key", row[index["key"]]) if "key" in index else None,
            headers=_headers(row[index["headers"]]) if "headers" in index else None,
            partition=row[index["partition"]] if "partition" in index else None,
            on_delivery=errors.on_delivery,
        )
        count += 1
    return count


def write_rows(options: WriteOptions, columns: Sequence[str], rows: Iterable[Any]) -> int:
    """Send every row (at-least-once); returns the number of records written (all
    acknowledged)."""
    errors = DeliveryErrors()
    producer = Producer(options.client_props())
    try:
        count = send_rows(producer, options, columns, rows, errors)
        producer.flush(FLUSH_TIMEOUT_S)
    finally:
        producer.close(FLUSH_TIMEOUT_S)
    errors.raise_first()
    return count
