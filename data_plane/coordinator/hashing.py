"""Which ``__consumer_offsets`` partition holds a group: Kafka's ``partitionFor``.

Kafka computes ``Utils.abs(groupId.hashCode()) % groupMetadataTopicPartitionCount``. Java's
``String.hashCode`` runs over UTF-16 code units (a character outside the Basic Multilingual
Plane counts as its two surrogates) with 32-bit signed overflow, and ``Utils.abs`` maps
Integer.MIN_VALUE to 0 (``n & 0x7fffffff``), unlike Math.abs. Both are reproduced exactly, so a
Kafka client or tool that computes the coordinator partition agrees with kraftlog.

Pure functions; thread-safe.
"""

from __future__ import annotations

_MASK_32 = 0xFFFFFFFF


def java_string_hash(s: str) -> int:
    """``s.hashCode()`` as Java computes it: ``h = 31 * h + c`` over UTF-16 code units,
    as a signed 32-bit int."""
    h = 0
    data = s.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & _MASK_32
    return h - (1 << 32) if h >= 1 << 31 else h


def kafka_abs(n: int) -> int:
    """Kafka's ``Utils.abs``: ``n & 0x7fffffff`` (so Integer.MIN_VALUE gives 0)."""
    return n & 0x7FFFFFFF


def partition_for(group_id: str, num_partitions: int) -> int:
    """The ``__consumer_offsets`` partition of ``group_id``."""
    if num_partitions <= 0:
        raise ValueError(f"num_partitions must be positive, got {num_partitions}")
    return kafka_abs(java_string_hash(group_id)) % num_partitions
