"""``TopicPartition``: a partition's name everywhere in kraftlog (Kafka's TopicPartition).

A NamedTuple, so it is hashable, ordered (topic, then partition) and equal to the plain
``(topic, partition)`` tuple; immutable and thread-safe.
"""

from __future__ import annotations

from typing import NamedTuple


class TopicPartition(NamedTuple):
    topic: str
    partition: int
