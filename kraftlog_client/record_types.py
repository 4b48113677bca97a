"""Record types of the native client: what users send and what they receive.

:class:`ConsumerRecord` is created once per consumed record (a consumer decodes hundreds of
thousands per second), so it is a tuple subclass that the decoder builds without running any
Python code per record.
"""

from __future__ import annotations

from collections.abc import Sequence
from operator import itemgetter
from typing import Any, NamedTuple

try:
    # The C descriptor behind collections.namedtuple's fields (CPython); read as fast as a slot.
    from _collections import _tuplegetter
except ImportError:  # other interpreters: the same through a property

    def _tuplegetter(index: int, doc: str) -> Any:
        return property(itemgetter(index), doc=doc)


Header = tuple[str, bytes | None]


def _field(index: int, doc: str) -> Any:
    return _tuplegetter(index, doc)


CREATE_TIME = 0
LOG_APPEND_TIME = 1


class ProducerRecord:
    """A record to send, as interceptors see it (partition None = the partitioner picks)."""

    __slots__ = ("headers", "key", "partition", "timestamp_ms", "topic", "value")

    def __init__(
        self,
        topic: str,
        value: bytes | None,
        key: bytes | None = None,
        headers: Sequence[Header] | None = None,
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


# The fields of a ConsumerRecord, in order (see its docstring).
ConsumerRecordFields = tuple[
    str, int, int, int, int, bytes | None, bytes | None, tuple[Header, ...], int
]


class ConsumerRecord(ConsumerRecordFields):
    """One consumed record, an immutable tuple of its fields in this order: ``topic``,
    ``partition``, ``offset``, ``timestamp``, ``timestamp_type`` (0 CreateTime, 1
    LogAppendTime), ``key``, ``value``, ``headers`` (a tuple of (str, bytes | None) pairs)
    and ``leader_epoch`` (the partition leader epoch stamped on its batch, -1 if none).

    Built from one sequence of the fields, like ``os.stat_result`` and ``time.struct_time``
    (:meth:`create` takes them as arguments). The class defines no ``__new__`` on purpose:
    the decoder makes records with ``map(ConsumerRecord, zip(...))``, which then never runs
    Python code per record (half the cost of a ``__slots__`` class's ``__init__``, which was
    most of a consumer's CPU per record). Fields are read like named-tuple fields, at C speed.
    Records compare equal when every field is equal.
    """

    __slots__ = ()

    _fields = (
        "topic",
        "partition",
        "offset",
        "timestamp",
        "timestamp_type",
        "key",
        "value",
        "headers",
        "leader_epoch",
    )

    topic: str = _field(0, "the topic name")
    partition: int = _field(1, "the partition id")
    offset: int = _field(2, "the record's offset")
    timestamp: int = _field(3, "ms since the epoch")
    timestamp_type: int = _field(4, "0 = CreateTime, 1 = LogAppendTime")
    key: bytes | None = _field(5, "the key (None = null)")
    value: bytes | None = _field(6, "the value (None = null)")
    headers: tuple[Header, ...] = _field(7, "(str, bytes | None) pairs")
    leader_epoch: int = _field(8, "the batch's partition leader epoch")

    @classmethod
    def create(
        cls,
        topic: str,
        partition: int,
        offset: int,
        timestamp: int,
        timestamp_type: int,
        key: bytes | None,
        value: bytes | None,
        headers: tuple[Header, ...] = (),
        leader_epoch: int = -1,
    ) -> ConsumerRecord:
        """A record from its fields as arguments (tests, tools)."""
        return cls(
            (topic, partition, offset, timestamp, timestamp_type, key, value, headers, leader_epoch)
        )

    def _asdict(self) -> dict[str, object]:
        return dict(zip(self._fields, self, strict=True))

    def __repr__(self) -> str:
        fields = ", ".join(
            f"{name}={value!r}" for name, value in zip(self._fields, self, strict=True)
        )
        return f"ConsumerRecord({fields})"
