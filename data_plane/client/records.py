"""Record types of the native client: what users send and what they receive.

:class:`ConsumerRecord` is created once per consumed record, so it uses ``__slots__`` and a
plain positional ``__init__`` (the consumer decodes hundreds of thousands per second).
"""

from __future__ import annotations

from typing import NamedTuple

Header = tuple[str, bytes | None]

CREATE_TIME = 0
LOG_APPEND_TIME = 1


class TopicPartition(NamedTuple):
    topic: str
    partition: int


class ProducerRecord:
    """A record to send, as interceptors see it (partition None = the partitioner picks)."""

    __slots__ = ("headers", "key", "partition", "timestamp_ms", "topic", "value")

    def __init__(
        self,
        topic: str,
        value: bytes | None,
        key: bytes | None = None,
        headers: list[Header] | tuple[Header, ...] | None = None,
        partition: int | None = None,
        timestamp_ms: int | None = None,
    ) -> None:
        self.topic = topic
        self.value = value
        self.key = key
        self.headers = headers
        self.partition = partition
        self.timestamp_ms = timestamp_ms

    def __repr__(self) -> str:
        return (
            f"ProducerRecord(topic={self.topic!r}, partition={self.partition}, "
            f"key={self.key!r}, value={self.value!r}, headers={self.headers!r}, "
            f"timestamp_ms={self.timestamp_ms})"
        )


class RecordMetadata(NamedTuple):
    """Where an acknowledged record was written. ``offset`` is -1 with acks=0 (no response);
    ``timestamp`` is the broker's append time for LogAppendTime topics."""

    topic: str
    partition: int
    offset: int
    timestamp: int
    serialized_key_size: int
    serialized_value_size: int


class ConsumerRecord:
    """One consumed record. ``timestamp_type`` is 0 (CreateTime) or 1 (LogAppendTime);
    ``headers`` is a tuple of (str, bytes | None) pairs."""

    __slots__ = (
        "headers",
        "key",
        "offset",
        "partition",
        "timestamp",
        "timestamp_type",
        "topic",
        "value",
    )

    def __init__(
        self,
        topic: str,
        partition: int,
        offset: int,
        timestamp: int,
        timestamp_type: int,
        key: bytes | None,
        value: bytes | None,
        headers: tuple[Header, ...],
    ) -> None:
        self.topic = topic
        self.partition = partition
        self.offset = offset
        self.timestamp = timestamp
        self.timestamp_type = timestamp_type
        self.key = key
        self.value = value
        self.headers = headers

    def __repr__(self) -> str:
        return (
            f"ConsumerRecord(topic={self.topic!r}, partition={self.partition}, "
            f"offset={self.offset}, timestamp={self.timestamp}, "
            f"timestamp_type={self.timestamp_type}, key={self.key!r}, value={self.value!r}, "
            f"headers={self.headers!r})"
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ConsumerRecord):
            return NotImplemented
        return all(getattr(self, s) == getattr(other, s) for s in ConsumerRecord.__slots__)

    __hash__ = None  # type: ignore[assignment]
