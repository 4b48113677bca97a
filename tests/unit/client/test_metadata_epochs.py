"""The client's metadata never follows a leader epoch backwards (KIP-320): an answer naming
an older epoch (a deposed leader cut from the controllers still names itself) keeps the
newer leader and asks for another update; an older epoch still answered after
metadata.max.age.ms is believed (a topic deleted and created again starts its epochs over).
A chaos campaign found the consumer following such an answer to the old leader, whose log
ended before its position: OFFSET_OUT_OF_RANGE reset it to the earliest offset."""

from __future__ import annotations

from common.topic_partition import TopicPartition
from kraftlog_client.metadata import ClusterMetadata

MAX_AGE_MS = 5000
TP = TopicPartition("t", 0)


def answer(leader: int, epoch: int) -> dict:
    return {
        "brokers": [{"node_id": n, "host": "127.0.0.1", "port": 9000 + n} for n in (1, 2, 3)],
        "cluster_id": "c",
        "controller_id": 1,
        "topics": [
            {
                "name": "t",
                "error_code": 0,
                "partitions": [
                    {
                        "partition_index": 0,
                        "leader_id": leader,
                        "leader_epoch": epoch,
                        "replica_nodes": [1, 2, 3],
                        "isr_nodes": [1, 2, 3],
                        "error_code": 0,
                    }
                ],
            }
        ],
    }


def test_an_older_leader_epoch_is_not_followed() -> None:
    md = ClusterMetadata(MAX_AGE_MS, 100)
    md.update(answer(2, 8), 0.0)
    assert (md.leader_for(TP), md.leader_epoch_for(TP)) == (2, 8)
    md.update(answer(1, 7), 1000.0)  # the deposed leader's view
    assert (md.leader_for(TP), md.leader_epoch_for(TP)) == (2, 8)
    assert md.time_to_next_update_ms(1000.0 + 100) == 0  # asks again
    md.update(answer(3, 9), 2000.0)  # newer epochs are always taken
    assert (md.leader_for(TP), md.leader_epoch_for(TP)) == (3, 9)


def test_an_older_epoch_answered_for_max_age_is_a_recreated_topic() -> None:
    md = ClusterMetadata(MAX_AGE_MS, 100)
    md.update(answer(2, 8), 0.0)
    md.update(answer(1, 0), 1000.0)
    assert md.leader_for(TP) == 2
    md.update(answer(1, 0), 1000.0 + MAX_AGE_MS)
    assert (md.leader_for(TP), md.leader_epoch_for(TP)) == (1, 0)


def test_a_regression_that_ends_starts_the_clock_again() -> None:
    md = ClusterMetadata(MAX_AGE_MS, 100)
    md.update(answer(2, 8), 0.0)
    md.update(answer(1, 7), 1000.0)
    md.update(answer(2, 8), 2000.0)
    md.update(answer(1, 7), 1000.0 + MAX_AGE_MS)  # a new regression: not yet believed
    assert (md.leader_for(TP), md.leader_epoch_for(TP)) == (2, 8)
