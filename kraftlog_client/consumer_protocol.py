"""Kafka's ConsumerProtocol: the member metadata and assignment bytes inside group requests.

The group coordinator treats them as opaque bytes (JoinGroup ``protocols[].metadata``,
SyncGroup ``assignments[].assignment``); every consumer of a group must read what the others
wrote, so the layouts are exactly Kafka's (``ConsumerProtocolSubscription.json`` and
``ConsumerProtocolAssignment.json``, non-flexible, big-endian)::

    Subscription := version i16 | topics [string] | user_data nullable bytes
                    | v1+: owned_partitions [topic string | partitions [i32]]
                    | v2+: generation_id i32 | v3+: rack_id nullable string
    Assignment   := version i16 | assigned_partitions [topic string | partitions [i32]]
                    | user_data nullable bytes          (the same layout in v0..v3)

Arrays are an i32 count (-1 = null), strings an i16 length, bytes an i32 length (-1 = null).
Newer versions only append fields, so (like Kafka's ConsumerProtocol) a message of a version
above the highest we know is read as that highest version and the tail is ignored; this is how
members of different client versions (kafka-python, librdkafka, Java) share one group.

We write version 1 subscriptions (with owned partitions, which other members' cooperative
assignors read) and version 0 assignments; both are what the eager assignors of Kafka write.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from dataclasses import dataclass, field

from common.topic_partition import TopicPartition

PROTOCOL_TYPE = "consumer"
SUBSCRIPTION_VERSION = 1
ASSIGNMENT_VERSION = 0
HIGHEST_KNOWN_VERSION = 3

# Bounds against a corrupt or hostile peer: a member's metadata is at most this many entries.
MAX_ARRAY_ENTRIES = 1_000_000


class ConsumerProtocolError(ValueError):
    """Bytes that are not a valid ConsumerProtocol message."""


@dataclass(frozen=True)
class Subscription:
    topics: tuple[str, ...]
    user_data: bytes | None = None
    owned_partitions: tuple[TopicPartition, ...] = ()
    generation_id: int = -1
    rack_id: str | None = None
    version: int = SUBSCRIPTION_VERSION


@dataclass(frozen=True)
class Assignment:
    partitions: tuple[TopicPartition, ...] = field(default=())
    user_data: bytes | None = None
    version: int = ASSIGNMENT_VERSION


# -- encoding --------------------------------------------------------------------------------


def _string(out: bytearray, value: str | None) -> None:
    if value is None:
        out += struct.pack(">h", -1)
        return
    raw = value.encode()
    if len(raw) > 0x7FFF:
        raise ConsumerProtocolError(f"string of {len(raw)} bytes is too long")
    out += struct.pack(">h", len(raw)) + raw


def _bytes(out: bytearray, value: bytes | None) -> None:
    if value is None:
        out += struct.pack(">i", -1)
    else:
        out += struct.pack(">i", len(value)) + value


def _topic_partitions(out: bytearray, partitions: Iterable[TopicPartition]) -> None:
    by_topic: dict[str, list[int]] = {}
    for tp in partitions:
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    out += struct.pack(">i", len(by_topic))
    for topic in sorted(by_topic):
        _string(out, topic)
        parts = sorted(by_topic[topic])
        out += struct.pack(f">i{len(parts)}i", len(parts), *parts)


def encode_subscription(sub: Subscription) -> bytes:
    if not 0 <= sub.version <= HIGHEST_KNOWN_VERSION:
        raise ConsumerProtocolError(f"cannot write subscription version {sub.version}")
    out = bytearray(struct.pack(">h", sub.version))
    out += struct.pack(">i", len(sub.topics))
    for topic in sub.topics:
        _string(out, topic)
    _bytes(out, sub.user_data)
    if sub.version >= 1:
        _topic_partitions(out, sub.owned_partitions)
    if sub.version >= 2:
        out += struct.pack(">i", sub.generation_id)
    if sub.version >= 3:
        _string(out, sub.rack_id)
    return bytes(out)


def encode_assignment(assignment: Assignment) -> bytes:
    if not 0 <= assignment.version <= HIGHEST_KNOWN_VERSION:
        raise ConsumerProtocolError(f"cannot write assignment version {assignment.version}")
    out = bytearray(struct.pack(">h", assignment.version))
    _topic_partitions(out, assignment.partitions)
    _bytes(out, assignment.user_data)
    return bytes(out)


# -- decoding --------------------------------------------------------------------------------


class _Reader:
    __slots__ = ("buf", "pos")

    def __init__(self, buf: bytes) -> None:
        self.buf = memoryview(buf)
        self.pos = 0

    def _take(self, n: int) -> memoryview:
        if n < 0 or self.pos + n > len(self.buf):
            raise ConsumerProtocolError(
                f"truncated: need {n} bytes at {self.pos}, have {len(self.buf) - self.pos}"
            )
        chunk = self.buf[self.pos : self.pos + n]
        self.pos += n
        return chunk

    def i16(self) -> int:
        value: int = struct.unpack(">h", self._take(2))[0]
        return value

    def i32(self) -> int:
        value: int = struct.unpack(">i", self._take(4))[0]
        return value

    def count(self) -> int:
        n = self.i32()
        if n < -1 or n > MAX_ARRAY_ENTRIES:
            raise ConsumerProtocolError(f"array length {n} out of range")
        return max(n, 0)  # a null array reads as empty

    def string(self) -> str | None:
        n = self.i16()
        if n == -1:
            return None
        try:
            return bytes(self._take(n)).decode()
        except UnicodeDecodeError as e:
            raise ConsumerProtocolError(f"string is not UTF-8: {e}") from None

    def nullable_bytes(self) -> bytes | None:
        n = self.i32()
        return None if n == -1 else bytes(self._take(n))

    def topic_partitions(self) -> tuple[TopicPartition, ...]:
        out: list[TopicPartition] = []
        for _ in range(self.count()):
            topic = self.string()
            if topic is None:
                raise ConsumerProtocolError("null topic name")
            out.extend(TopicPartition(topic, self.i32()) for _ in range(self.count()))
        return tuple(out)


def _version(r: _Reader) -> int:
    version = r.i16()
    if version < 0:
        raise ConsumerProtocolError(f"negative ConsumerProtocol version {version}")
    return version


def decode_subscription(data: bytes) -> Subscription:
    r = _Reader(data)
    version = _version(r)
    read_as = min(version, HIGHEST_KNOWN_VERSION)
    topics = []
    for _ in range(r.count()):
        topic = r.string()
        if topic is None:
            raise ConsumerProtocolError("null topic name in subscription")
        topics.append(topic)
    user_data = r.nullable_bytes()
    owned: tuple[TopicPartition, ...] = ()
    generation_id = -1
    rack_id = None
    # Fields of v1+ are "ignorable": a writer that claims v1 but stopped early is tolerated
    # the way Kafka tolerates it (librdkafka once wrote short v1 metadata).
    if read_as >= 1 and r.pos < len(r.buf):
        owned = r.topic_partitions()
    if read_as >= 2 and r.pos < len(r.buf):
        generation_id = r.i32()
    if read_as >= 3 and r.pos < len(r.buf):
        rack_id = r.string()
    return Subscription(tuple(topics), user_data, owned, generation_id, rack_id, version)


def decode_assignment(data: bytes) -> Assignment:
    """An empty byte string is an empty assignment (the coordinator sends one to members the
    leader left out, and on errors)."""
    if not data:
        return Assignment()
    r = _Reader(data)
    version = _version(r)
    partitions = r.topic_partitions()
    user_data = r.nullable_bytes() if r.pos < len(r.buf) else None
    return Assignment(partitions, user_data, version)
