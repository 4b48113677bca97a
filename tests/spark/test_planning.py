"""Offset-range planning: resolution, data loss, minPartitions splits, rate limits."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from common.topic_partition import TopicPartition
from spark_integration.offsets import EARLIEST, LATEST, PartitionOffsets, PartitionTimestamps
from spark_integration.planning import (
    DataLossError,
    OffsetRange,
    PartitionBounds,
    PlanError,
    plan_ranges,
    rate_limit,
    resolve_offsets,
    split_ranges,
)

A0, A1 = TopicPartition("a", 0), TopicPartition("a", 1)
BOUNDS = {A0: PartitionBounds(10, 100), A1: PartitionBounds(0, 50)}


def test_earliest_latest_and_json_with_special_values() -> None:
    parts = [A0, A1]
    assert resolve_offsets(EARLIEST, parts, BOUNDS, {}, ending=False) == {A0: 10, A1: 0}
    assert resolve_offsets(LATEST, parts, BOUNDS, {}, ending=True) == {A0: 100, A1: 50}
    spec = PartitionOffsets({A0: -2, A1: -1})
    assert resolve_offsets(spec, parts, BOUNDS, {}, ending=False) == {A0: 10, A1: 50}
    assert resolve_offsets(PartitionOffsets({A0: 42, A1: 7}), parts, BOUNDS, {}, ending=False) == {
        A0: 42,
        A1: 7,
    }
    with pytest.raises(PlanError, match="must name every partition"):
        resolve_offsets(PartitionOffsets({A0: 1}), parts, BOUNDS, {}, ending=False)


def test_timestamps_resolve_to_found_offsets_or_latest() -> None:
    spec = PartitionTimestamps(global_ms=1000)
    found = {A0: 33, A1: None}
    assert resolve_offsets(spec, [A0, A1], BOUNDS, found, ending=True) == {A0: 33, A1: 50}
    with pytest.raises(PlanError, match="startingOffsetsByTimestampStrategy"):
        resolve_offsets(spec, [A0, A1], BOUNDS, found, ending=False)
    assert resolve_offsets(
        spec, [A0, A1], BOUNDS, found, ending=False, no_match_strategy="latest"
    ) == {A0: 33, A1: 50}


def test_plan_ranges_checks_data_loss_and_the_high_watermark() -> None:
    ranges = plan_ranges({A0: 10, A1: 5}, {A0: 100, A1: 20}, BOUNDS, fail_on_data_loss=True)
    assert ranges == [OffsetRange("a", 0, 10, 100), OffsetRange("a", 1, 5, 20)]
    with pytest.raises(DataLossError, match="failOnDataLoss"):
        plan_ranges({A0: 3, A1: 0}, {A0: 100, A1: 50}, BOUNDS, fail_on_data_loss=True)
    lenient = plan_ranges({A0: 3, A1: 0}, {A0: 100, A1: 50}, BOUNDS, fail_on_data_loss=False)
    assert lenient[0] == OffsetRange("a", 0, 10, 100)
    with pytest.raises(PlanError, match="beyond its high watermark"):
        plan_ranges({A0: 10, A1: 0}, {A0: 101, A1: 50}, BOUNDS, fail_on_data_loss=True)
    with pytest.raises(PlanError, match="after its ending offset"):
        plan_ranges({A0: 60, A1: 0}, {A0: 50, A1: 50}, BOUNDS, fail_on_data_loss=True)


def test_min_partitions_splits_big_ranges_in_proportion() -> None:
    ranges = [OffsetRange("a", 0, 0, 900), OffsetRange("a", 1, 0, 100), OffsetRange("b", 0, 5, 5)]
    out = split_ranges(ranges, 10)
    assert len(out) == 10
    assert [r for r in out if r.partition == 1] == [OffsetRange("a", 1, 0, 100)]
    assert [r.size for r in out if r.partition == 0] == [100] * 9
    assert split_ranges(ranges, None) == ranges[:2]  # empty ranges dropped
    assert split_ranges(ranges, 2) == ranges[:2]  # enough already
    assert len(split_ranges([OffsetRange("a", 0, 0, 3)], 10)) == 3  # never an empty range


@settings(max_examples=100, deadline=None)
@given(
    sizes=st.lists(st.integers(0, 300), min_size=1, max_size=8),
    min_partitions=st.integers(1, 64),
)
def test_property_splits_cover_every_offset_once(sizes: list[int], min_partitions: int) -> None:
    ranges = [OffsetRange("t", i, 1000 * i, 1000 * i + s) for i, s in enumerate(sizes)]
    out = split_ranges(ranges, min_partitions)
    covered = sorted((r.partition, o) for r in out for o in range(r.start, r.end))
    expected = sorted((r.partition, o) for r in ranges for o in range(r.start, r.end))
    assert covered == expected
    assert all(r.size > 0 for r in out)
    non_empty = sum(1 for s in sizes if s)
    assert len(out) >= min(min_partitions, sum(sizes)) or len(out) >= non_empty
    assert len(out) == max(non_empty, min(min_partitions, sum(sizes)))


def test_rate_limit_is_proportional_to_backlog_and_never_starves() -> None:
    start = {A0: 0, A1: 0, TopicPartition("b", 0): 0}
    latest = {A0: 900, A1: 100, TopicPartition("b", 0): 1}
    end = rate_limit(start, latest, 100)
    assert end == {A0: 89, A1: 9, TopicPartition("b", 0): 1}  # floor, but at least one
    assert rate_limit(start, latest, 5000) == latest  # under the limit: everything
    with pytest.raises(PlanError):
        rate_limit(start, latest, 0)
