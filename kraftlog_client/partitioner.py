"""Kafka's default partitioner: murmur2 of the key, sticky partitions for null keys.

A keyed record goes to ``toPositive(murmur2(key)) % num_partitions`` exactly as the Java
client's ``BuiltInPartitioner`` computes it (and librdkafka's ``murmur2_random``), so the same
key lands on the same partition from every client. ``toPositive`` is ``h & 0x7fffffff``, not
``abs`` (which would differ for negative hashes).

A record without a key sticks to one partition per topic until the batch it was appended to
is complete (the accumulator calls :meth:`DefaultPartitioner.on_new_batch`); then another
partition is chosen at random. Filling one batch at a time gives bigger batches and lower
latency than round robin (KIP-480).

Thread-safety: :class:`DefaultPartitioner` is called from ``send()`` under the accumulator's
lock, so it needs none of its own.
"""

from __future__ import annotations

import random
import struct

_M = 0x5BD1E995
_SEED = 0x9747B28C
_MASK32 = 0xFFFFFFFF


def murmur2(data: bytes | bytearray | memoryview) -> int:
    """Java Kafka's ``Utils.murmur2``: 32-bit MurmurHash2 with seed 0x9747b28c, as a signed
    int32 (the value the Java code returns)."""
    length = len(data)
    h = (_SEED ^ length) & _MASK32
    blocks = length >> 2
    if blocks:
        for k in struct.unpack_from(f"<{blocks}I", data, 0):
            k = (k * _M) & _MASK32
            k ^= k >> 24
            k = (k * _M) & _MASK32
            h = ((h * _M) & _MASK32) ^ k
    tail = length & 3
    base = blocks << 2
    if tail == 3:
        h ^= data[base + 2] << 16
    if tail >= 2:
        h ^= data[base + 1] << 8
    if tail >= 1:
        h ^= data[base]
        h = (h * _M) & _MASK32
    h ^= h >> 13
    h = (h * _M) & _MASK32
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def partition_for_key(key: bytes, num_partitions: int) -> int:
    """The partition Kafka's default partitioner picks for ``key``."""
    if num_partitions <= 0:
        raise ValueError(f"a topic has at least one partition, got {num_partitions}")
    return (murmur2(key) & 0x7FFFFFFF) % num_partitions


class DefaultPartitioner:
    """murmur2 for keys, a sticky random partition per topic for null keys."""

    __slots__ = ("_rng", "sticky")

    def __init__(self, rng: random.Random | None = None) -> None:
        self._rng = rng or random.Random()
        # topic -> current sticky partition; the producer reads it directly on its hot path
        # (only this class writes it).
        self.sticky: dict[str, int] = {}

    def partition(self, topic: str, key: bytes | None, num_partitions: int) -> int:
        if key is not None:
            return partition_for_key(key, num_partitions)
        current = self.sticky.get(topic)
        if current is None or current >= num_partitions:
            current = self._rng.randrange(num_partitions)
            self.sticky[topic] = current
        return current

    def on_new_batch(self, topic: str, num_partitions: int, previous: int) -> None:
        """The batch of ``previous`` is complete: move null-key records of ``topic`` to
        another partition (the same one only if the topic has a single partition)."""
        if self.sticky.get(topic) != previous:
            return  # already moved on (a keyed record completed that batch)
        if num_partitions <= 1:
            self.sticky[topic] = 0
            return
        choice = self._rng.randrange(num_partitions - 1)
        self.sticky[topic] = choice if choice < previous else choice + 1
