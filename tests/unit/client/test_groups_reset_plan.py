"""`kraftlog groups reset-offsets` planning: every strategy, clamped into [log start, high
watermark] as kafka-consumer-groups does, and --to-datetime parsing."""

from __future__ import annotations

import argparse
from types import SimpleNamespace

import pytest

from deploy.cmd_groups import parse_datetime_ms, plan_reset
from deploy.cmd_produce import CommandError
from kraftlog_client import OffsetAndTimestamp, TopicPartition

T0, T1 = TopicPartition("t", 0), TopicPartition("t", 1)
STARTS = {T0: 10, T1: 0}
ENDS = {T0: 100, T1: 50}


class StaticCluster:
    """Answers the three Admin calls plan_reset makes from fixed tables."""

    def __init__(self, committed: dict[TopicPartition, int]) -> None:
        self.committed = committed

    def list_consumer_group_offsets(self, group: str) -> dict[TopicPartition, int]:
        return dict(self.committed)

    def describe_topics(self, names: list[str]) -> dict:
        parts = (SimpleNamespace(partition=0), SimpleNamespace(partition=1))
        return {n: SimpleNamespace(partitions=parts) for n in names}

    def list_offsets(self, specs: dict) -> dict[TopicPartition, OffsetAndTimestamp]:
        out = {}
        for tp, spec in specs.items():
            if spec == "earliest":
                out[tp] = OffsetAndTimestamp(STARTS[tp], -1)
            elif spec == "latest":
                out[tp] = OffsetAndTimestamp(ENDS[tp], -1)
            else:  # a timestamp: only partition 0 has records that late
                out[tp] = OffsetAndTimestamp(42 if tp == T0 else -1, spec)
        return out


def args(**kw) -> argparse.Namespace:
    base = dict(
        group="g",
        all_topics=False,
        topic=["t"],
        to_earliest=False,
        to_latest=False,
        to_offset=None,
        shift_by=None,
        to_datetime=None,
    )
    base.update(kw)
    return argparse.Namespace(**base)


def test_strategies_and_clamping() -> None:
    cluster = StaticCluster({T0: 60})
    assert plan_reset(cluster, args(to_earliest=True)) == {T0: 10, T1: 0}
    assert plan_reset(cluster, args(to_latest=True)) == {T0: 100, T1: 50}
    assert plan_reset(cluster, args(to_offset=70)) == {T0: 70, T1: 50}
    assert plan_reset(cluster, args(to_offset=5)) == {T0: 10, T1: 5}
    # shift from the committed offset; from the end where nothing is committed
    assert plan_reset(cluster, args(shift_by=-55)) == {T0: 10, T1: 0}
    assert plan_reset(cluster, args(shift_by=-5)) == {T0: 55, T1: 45}
    assert plan_reset(cluster, args(to_datetime="2026-01-01T00:00:00")) == {T0: 42, T1: 50}


def test_topic_partition_selection() -> None:
    cluster = StaticCluster({T1: 7})
    assert plan_reset(cluster, args(topic=["t:1"], to_earliest=True)) == {T1: 0}
    assert plan_reset(cluster, args(topic=None, all_topics=True, to_latest=True)) == {T1: 50}
    with pytest.raises(CommandError, match="no committed offsets"):
        plan_reset(StaticCluster({}), args(topic=None, all_topics=True, to_latest=True))
    with pytest.raises(CommandError, match="partitions must be numbers"):
        plan_reset(cluster, args(topic=["t:x"], to_latest=True))


def test_datetime_parsing() -> None:
    assert parse_datetime_ms("1970-01-01T00:00:01") == 1000
    assert parse_datetime_ms("1970-01-01T01:00:00+01:00") == 0
    with pytest.raises(CommandError, match="ISO 8601"):
        parse_datetime_ms("yesterday")
