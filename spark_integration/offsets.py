"""Offset specifications and their JSON forms, as Spark's Kafka source writes them.

Sans-IO. A starting or ending position is one of:

- :data:`EARLIEST` / :data:`LATEST` (``"earliest"`` / ``"latest"``);
- :class:`PartitionOffsets`: ``{"topicA":{"0":23,"1":-1},"topicB":{"0":-2}}`` where -2 means
  earliest (the log start offset) and -1 latest (the high watermark: committed data only);
- :class:`PartitionTimestamps`: one timestamp in ms for every partition (``startingTimestamp``)
  or one per partition (``startingOffsetsByTimestamp``, same JSON shape as offsets); it
  resolves to the first offset whose record timestamp is at or after it.

Streaming offsets (what Spark checkpoints) use the same JSON shape: ``{"topic": {"0": 42}}``
maps every partition to the next offset to read. JSON object keys are strings, so partition
numbers travel as strings and come back as strings (:func:`offsets_from_json` converts).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

from common.topic_partition import TopicPartition

EARLIEST_OFFSET = -2
LATEST_OFFSET = -1


@dataclass(frozen=True, slots=True)
class SpecialOffset:
    """``earliest`` or ``latest`` for every partition."""

    name: str
    value: int


EARLIEST = SpecialOffset("earliest", EARLIEST_OFFSET)
LATEST = SpecialOffset("latest", LATEST_OFFSET)


@dataclass(frozen=True, slots=True)
class PartitionOffsets:
    """An offset per partition; -2 = earliest, -1 = latest."""

    offsets: Mapping[TopicPartition, int]


@dataclass(frozen=True, slots=True)
class PartitionTimestamps:
    """A timestamp (ms) for every partition (``global_ms``) or per partition."""

    global_ms: int | None = None
    per_partition: Mapping[TopicPartition, int] | None = None

    def timestamp_for(self, tp: TopicPartition) -> int | None:
        if self.per_partition is not None:
            return self.per_partition.get(tp)
        return self.global_ms


OffsetSpec = SpecialOffset | PartitionOffsets | PartitionTimestamps


def parse_partition_json(raw: str, option: str) -> dict[TopicPartition, int]:
    """``{"topic":{"0":23}}`` into ``{TopicPartition("topic", 0): 23}``; ValueError names
    ``option`` on bad input."""
    try:
        parsed = json.loads(raw)
    except json.JSONDecodeError as e:
        raise ValueError(
            f'{option} must be earliest, latest or JSON like {{"t":{{"0":23}}}}: {e}'
        ) from None
    if not isinstance(parsed, dict) or not parsed:
        raise ValueError(f'{option} must be a non-empty JSON object like {{"t":{{"0":23}}}}')
    out: dict[TopicPartition, int] = {}
    for topic, parts in parsed.items():
        if not isinstance(parts, dict) or not parts:
            raise ValueError(f"{option}: topic {topic!r} needs an object of partition: value")
        for key, value in parts.items():
            try:
                partition = int(key)
            except ValueError:
                raise ValueError(
                    f"{option}: partition {key!r} of {topic!r} is not a number"
                ) from None
            if partition < 0:
                raise ValueError(f"{option}: partition {partition} of {topic!r} is negative")
            if not isinstance(value, int) or isinstance(value, bool):
                raise ValueError(f"{option}: {topic}-{partition} needs an integer, got {value!r}")
            out[TopicPartition(topic, partition)] = value
    return out


def parse_offset_spec(raw: str, option: str) -> OffsetSpec:
    """``earliest``, ``latest`` or offsets JSON (values >= -2)."""
    low = raw.strip().lower()
    if low == EARLIEST.name:
        return EARLIEST
    if low == LATEST.name:
        return LATEST
    table = parse_partition_json(raw, option)
    for tp, offset in table.items():
        if offset < EARLIEST_OFFSET:
            raise ValueError(
                f"{option}: offset {offset} of {tp.topic}-{tp.partition} is invalid "
                "(use an offset >= 0, -2 for earliest or -1 for latest)"
            )
    return PartitionOffsets(table)


def offsets_to_json(offsets: Mapping[TopicPartition, int]) -> dict[str, dict[str, int]]:
    """``{tp: offset}`` as the JSON-able dict Spark checkpoints (sorted, stable)."""
    out: dict[str, dict[str, int]] = {}
    for tp in sorted(offsets):
        out.setdefault(tp.topic, {})[str(tp.partition)] = int(offsets[tp])
    return out


def offsets_from_json(data: Mapping[str, Mapping[str, int]]) -> dict[TopicPartition, int]:
    """The inverse of :func:`offsets_to_json` (partition keys arrive as strings)."""
    out: dict[TopicPartition, int] = {}
    for topic, parts in data.items():
        for key, value in parts.items():
            out[TopicPartition(topic, int(key))] = int(value)
    return out
