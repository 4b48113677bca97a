from __future__ import annotations

import uuid

import pytest

from common.topic_partition import TopicPartition
from metadata.delta import MetadataDelta, apply_records
from metadata.image import MetadataImage, SnapshotDecodeError
from metadata.records import (
    NO_LEADER_CHANGE,
    BrokerRegistrationChangeRecord,
    ConfigRecord,
    Listener,
    PartitionChangeRecord,
    PartitionRecord,
    ProducerIdsRecord,
    RegisterBrokerRecord,
    RemoveTopicRecord,
    TopicRecord,
    encode_record,
)
from metadata.snapshot import build_snapshot
from raft.api import LeaderChange, LogEntry, Snapshot

A = uuid.UUID(int=1, version=4)
B = uuid.UUID(int=2, version=4)


def broker(bid: int, epoch: int = 1) -> RegisterBrokerRecord:
    return RegisterBrokerRecord(bid, f"i{bid}", epoch, (Listener("P", "h", 1),), None, False, False)


def base_records() -> list:
    return [
        broker(1),
        broker(2),
        broker(3),
        TopicRecord("a", A),
        PartitionRecord(0, A, (1, 2, 3), (1, 2, 3), 1, 0, 0),
        PartitionRecord(1, A, (2, 3, 1), (2, 3, 1), 2, 0, 0),
        TopicRecord("b", B),
        PartitionRecord(0, B, (3, 1), (3, 1), 3, 0, 0),
        ConfigRecord(2, "a", "retention.ms", "100"),
        ProducerIdsRecord(1, 1, 1000),
    ]


def test_replay_builds_image() -> None:
    image = apply_records(MetadataImage(), base_records())
    assert set(image.topics_by_name) == {"a", "b"}
    assert image.topics_by_id[A].name == "a"
    assert image.partition("a", 1).leader == 2
    assert image.topic_config("a") == {"retention.ms": "100"}
    assert image.next_producer_id == 1000
    assert image.active_broker_ids() == [1, 2, 3]


def test_partition_change_epochs_as_kafka() -> None:
    image = apply_records(MetadataImage(), base_records())
    image = apply_records(image, [PartitionChangeRecord(0, A, (1, 2), NO_LEADER_CHANGE, None)])
    p = image.partition("a", 0)
    assert (p.isr, p.leader, p.leader_epoch, p.partition_epoch) == ((1, 2), 1, 0, 1)
    image = apply_records(image, [PartitionChangeRecord(0, A, (2,), 2, None)])
    p = image.partition("a", 0)
    assert (p.isr, p.leader, p.leader_epoch, p.partition_epoch) == ((2,), 2, 1, 2)


def test_copy_on_write_shares_untouched_parts() -> None:
    image = apply_records(MetadataImage(), base_records())
    after = apply_records(image, [PartitionChangeRecord(0, A, (1, 2), NO_LEADER_CHANGE, None)])
    assert after.topics_by_name["b"] is image.topics_by_name["b"]
    assert after.topics_by_name["a"].partitions[1] is image.topics_by_name["a"].partitions[1]
    assert after.brokers is image.brokers
    assert image.partition("a", 0).isr == (1, 2, 3)  # the old image did not change


def test_inconsistent_records_are_skipped_without_raising() -> None:
    image = apply_records(MetadataImage(), base_records())
    delta = MetadataDelta(image)
    delta.replay(PartitionChangeRecord(0, uuid.UUID(int=9, version=4), (1,), 1, None), 50)
    delta.replay(TopicRecord("a", uuid.UUID(int=10, version=4)), 51)
    delta.replay(BrokerRegistrationChangeRecord(1, 99, True, None), 52)
    delta.replay(ProducerIdsRecord(1, 1, 10), 53)
    assert delta.skipped_records == 4
    after = delta.apply()
    assert after.offset == 53
    assert after.topics_by_name == image.topics_by_name
    assert after.brokers[1].fenced is False


def test_remove_and_recreate_topic_in_one_delta() -> None:
    image = apply_records(MetadataImage(), base_records())
    c = uuid.UUID(int=3, version=4)
    delta = MetadataDelta(image)
    for rec in [
        RemoveTopicRecord(A),
        TopicRecord("a", c),
        PartitionRecord(0, c, (1,), (1,), 1, 0, 0),
    ]:
        delta.replay(rec)
    after = delta.apply()
    assert delta.changed_topic_configs() == ["a"]
    assert after.topics_by_name["a"].topic_id == c
    assert A not in after.topics_by_id
    assert after.topic_config("a") == {}
    changes = delta.local_changes(1)
    assert changes.deletes == {TopicPartition("a", 0): A, TopicPartition("a", 1): A}
    assert set(changes.leaders) == {TopicPartition("a", 0)}


def test_local_changes() -> None:
    image = apply_records(MetadataImage(), base_records())
    delta = MetadataDelta(image)
    delta.replay(PartitionChangeRecord(0, A, (2, 3), 2, None))
    delta.replay(PartitionChangeRecord(0, B, None, NO_LEADER_CHANGE, (3, 2)))
    delta.replay(ConfigRecord(2, "b", "retention.ms", "5"))
    assert delta.changed_topic_configs() == ["b"]
    ch2 = delta.local_changes(2)
    assert set(ch2.leaders) == {TopicPartition("a", 0)}
    assert set(ch2.followers) == {TopicPartition("b", 0)}
    ch1 = delta.local_changes(1)
    assert set(ch1.followers) == {TopicPartition("a", 0)}
    assert ch1.deletes == {TopicPartition("b", 0): B}
    assert ch1.followers[TopicPartition("a", 0)].registration.leader == 2


def test_snapshot_encoding_is_deterministic_and_roundtrips() -> None:
    records = base_records()
    one = apply_records(MetadataImage(), dict(enumerate(records)))
    # Another node, same records in the same order, built in two steps.
    two = apply_records(MetadataImage(), dict(enumerate(records[:4])))
    two = apply_records(two, {i + 4: r for i, r in enumerate(records[4:])})
    assert one == two
    assert one.encode() == two.encode()
    decoded = MetadataImage.decode(one.encode())
    assert decoded == one
    assert decoded.brokers[1].registered_offset == 0


def test_snapshot_decode_rejects_garbage() -> None:
    for data in (b"", b"\x93\x01\x02\x03", b"junk"):
        with pytest.raises(SnapshotDecodeError):
            MetadataImage.decode(data)


def test_build_snapshot_folds_incrementally_and_skips_control_entries() -> None:
    records = [encode_record(r) for r in base_records()]
    entries = [LogEntry(0, 1, LeaderChange(1, 1, b"x").encode(), is_control=True)]
    entries += [LogEntry(i + 1, 1, r) for i, r in enumerate(records)]
    whole = build_snapshot(None, entries)
    first = build_snapshot(None, entries[:5])
    second = build_snapshot(Snapshot(4, 1, first), entries[5:])
    assert whole == second
    image = MetadataImage.decode(whole)
    assert image.offset == len(records)
    assert image.partition("b", 0).leader == 3


def test_snapshot_delta_reports_differences() -> None:
    old = apply_records(MetadataImage(), base_records())
    new = apply_records(
        old,
        [
            RemoveTopicRecord(B),
            PartitionChangeRecord(1, A, None, 3, None),
            BrokerRegistrationChangeRecord(2, 1, True, None),
        ],
    )
    delta = MetadataDelta.from_snapshot(old, new)
    assert delta.apply() is new
    assert delta.changed_topic_configs() == []
    ch = delta.local_changes(3)
    assert set(ch.leaders) == {TopicPartition("a", 1)}
    assert ch.deletes == {TopicPartition("b", 0): B}
    assert delta.changed_broker_ids() == [2]
