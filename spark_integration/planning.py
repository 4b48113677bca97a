"""Offset-range planning: which offsets each Spark task reads. Sans-IO, pyspark-free.

The I/O side (:mod:`spark_integration.cluster`) supplies, per partition, its
:class:`PartitionBounds` (log start offset and high watermark, from ListOffsets -2 / -1) and,
for timestamp options, the offset found for a timestamp. These functions turn options and
bounds into :class:`OffsetRange` objects:

- :func:`resolve_offsets` maps a starting or ending :data:`OffsetSpec` to concrete offsets;
- :func:`plan_ranges` checks them against the bounds (data loss, ranges beyond the high
  watermark, start after end) and builds one range per partition;
- :func:`split_ranges` cuts ranges so there are at least ``minPartitions`` of them;
- :func:`rate_limit` caps a micro-batch at ``maxOffsetsPerTrigger`` records, split across
  partitions in proportion to their backlog.

Invariants: every range satisfies ``bounds.earliest <= start <= end <= bounds.latest`` at the
time it was planned, so a plan never reaches above the high watermark (committed data only);
end offsets are exclusive.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from common.topic_partition import TopicPartition
from spark_integration.offsets import (
    EARLIEST_OFFSET,
    LATEST_OFFSET,
    OffsetSpec,
    PartitionOffsets,
    PartitionTimestamps,
    SpecialOffset,
)

DATA_LOSS_HINT = (
    "Some data may have been lost because it is no longer available in kraftlog: retention "
    "(or DeleteRecords) removed it, or the topic was deleted. If you want your query to go on "
    "in such cases, set the source option failOnDataLoss to false."
)


class PlanError(ValueError):
    """The options ask for offsets that cannot be read (outside the log, start after end)."""


class DataLossError(RuntimeError):
    """Requested offsets are gone (retention, DeleteRecords, a deleted topic) and
    failOnDataLoss is true."""

    def __init__(self, detail: str) -> None:
        super().__init__(f"{detail}. {DATA_LOSS_HINT}")


@dataclass(frozen=True, slots=True)
class PartitionBounds:
    """``earliest`` = log start offset; ``latest`` = high watermark (exclusive end of the
    committed data)."""

    earliest: int
    latest: int


@dataclass(frozen=True, slots=True)
class OffsetRange:
    """Offsets ``[start, end)`` of one partition: one Spark task's work."""

    topic: str
    partition: int
    start: int
    end: int

    @property
    def size(self) -> int:
        return self.end - self.start

    @property
    def topic_partition(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)


def resolve_offsets(
    spec: OffsetSpec,
    partitions: Sequence[TopicPartition],
    bounds: Mapping[TopicPartition, PartitionBounds],
    by_timestamp: Mapping[TopicPartition, int | None],
    *,
    ending: bool,
    no_match_strategy: str = "error",
) -> dict[TopicPartition, int]:
    """Concrete offsets for ``partitions``. ``by_timestamp`` holds the offset ListOffsets found
    for each partition's timestamp (None: no record at or after it). A starting timestamp with
    no match fails (``no_match_strategy`` "error") or starts at latest ("latest"); an ending
    timestamp with no match ends at latest, as in Spark."""
    out: dict[TopicPartition, int] = {}
    if isinstance(spec, PartitionOffsets):
        missing = sorted(set(partitions) - set(spec.offsets))
        if missing:
            raise PlanError(
                f"{'ending' if ending else 'starting'} offsets JSON must name every partition "
                f"read; missing {', '.join(f'{t.topic}-{t.partition}' for t in missing)}"
            )
    for tp in partitions:
        b = bounds[tp]
        if isinstance(spec, SpecialOffset):
            out[tp] = b.earliest if spec.value == EARLIEST_OFFSET else b.latest
        elif isinstance(spec, PartitionOffsets):
            value = spec.offsets[tp]
            out[tp] = (
                b.earliest
                if value == EARLIEST_OFFSET
                else b.latest
                if value == LATEST_OFFSET
                else value
            )
        elif isinstance(spec, PartitionTimestamps):
            if spec.timestamp_for(tp) is None:
                raise PlanError(
                    f"offsetsByTimestamp JSON must name every partition read; "
                    f"missing {tp.topic}-{tp.partition}"
                )
            found = by_timestamp.get(tp)
            if found is None or found < 0:
                if ending or no_match_strategy == "latest":
                    out[tp] = b.latest
                else:
                    raise PlanError(
                        f"no record of {tp.topic}-{tp.partition} has a timestamp at or after "
                        f"{spec.timestamp_for(tp)} (set startingOffsetsByTimestampStrategy to "
                        "latest to start at the end instead)"
                    )
            else:
                out[tp] = found
        else:  # pragma: no cover - the OffsetSpec union is closed
            raise TypeError(f"unknown offset spec {spec!r}")
    return out


def plan_ranges(
    starts: Mapping[TopicPartition, int],
    ends: Mapping[TopicPartition, int],
    bounds: Mapping[TopicPartition, PartitionBounds],
    *,
    fail_on_data_loss: bool,
) -> list[OffsetRange]:
    """One range per partition of ``ends``. A start below the log start offset is data loss
    (raised, or moved up to the log start); an end above the high watermark or a start after
    the end is a :class:`PlanError` (asking for uncommitted or future data)."""
    out: list[OffsetRange] = []
    for tp in sorted(ends):
        b = bounds[tp]
        start, end = starts[tp], ends[tp]
        if end > b.latest:
            raise PlanError(
                f"ending offset {end} of {tp.topic}-{tp.partition} is beyond its high "
                f"watermark {b.latest} (only committed data can be read)"
            )
        if start < b.earliest:
            if fail_on_data_loss:
                raise DataLossError(
                    f"offsets {start}..{min(end, b.earliest) - 1} of {tp.topic}-{tp.partition} "
                    f"are gone (the log starts at {b.earliest})"
                )
            start = min(b.earliest, end)
        if start > end:
            raise PlanError(
                f"starting offset {start} of {tp.topic}-{tp.partition} is after its ending "
                f"offset {end}"
            )
        out.append(OffsetRange(tp.topic, tp.partition, start, end))
    return out


def split_ranges(ranges: Sequence[OffsetRange], min_partitions: int | None) -> list[OffsetRange]:
    """Drop empty ranges; with ``min_partitions`` above the number left, cut the big ones so
    there are ``min_partitions`` ranges (fewer only when there are fewer offsets than that).

    Each range gets parts in proportion to its size (at least one, deterministic: ties go to
    the earlier range); a range's offsets are divided evenly among its parts, as Spark's
    KafkaOffsetRangeCalculator does.
    """
    non_empty = [r for r in ranges if r.size > 0]
    if min_partitions is None or len(non_empty) >= min_partitions:
        return non_empty
    total = sum(r.size for r in non_empty)
    target = min(min_partitions, total)
    # Parts in proportion to size (floor, at least one, at most one per offset), then
    # corrected to the target one part at a time: add where the share is most under-served,
    # remove where it is most over-served (excess of parts over the ideal share, times total).
    sizes = [r.size for r in non_empty]
    parts = [min(s, max(1, target * s // total)) for s in sizes]

    def excess(i: int) -> int:
        return parts[i] * total - target * sizes[i]

    indexes = range(len(sizes))
    while sum(parts) < target:
        i = min((i for i in indexes if parts[i] < sizes[i]), key=lambda i: (excess(i), i))
        parts[i] += 1
    while sum(parts) > target:
        i = max((i for i in indexes if parts[i] > 1), key=lambda i: (excess(i), -i))
        parts[i] -= 1
    out: list[OffsetRange] = []
    for r, n in zip(non_empty, parts, strict=True):
        bounds = [r.start + r.size * i // n for i in range(n + 1)]
        out.extend(
            OffsetRange(r.topic, r.partition, lo, hi)
            for lo, hi in itertools.pairwise(bounds)
            if hi > lo
        )
    return out


def rate_limit(
    start: Mapping[TopicPartition, int],
    latest: Mapping[TopicPartition, int],
    max_offsets: int,
) -> dict[TopicPartition, int]:
    """End offsets that read at most about ``max_offsets`` records: each partition with a
    backlog gets ``max_offsets * backlog / total`` of them (rounded down, but at least one, so
    a small partition is never starved; the sum may exceed the limit by those roundings up)."""
    if max_offsets < 1:
        raise PlanError(f"maxOffsetsPerTrigger must be >= 1, got {max_offsets}")
    backlog = {tp: latest[tp] - start[tp] for tp in latest if latest[tp] > start[tp]}
    total = sum(backlog.values())
    if total <= max_offsets:
        return dict(latest)
    out = dict(latest)
    for tp, size in backlog.items():
        share = max_offsets * size // total
        out[tp] = min(latest[tp], start[tp] + max(1, share))
    return out
