"""The native producer, idempotent by default (acks=all), across a leader kill -9
(client side): replication factor 3, min.insync.replicas 2. Afterwards every
acknowledged record is in the log exactly once, at its acknowledged offset, in send order,
and all replicas' segment bytes are identical up to the high watermark."""

from __future__ import annotations

import pytest

from deploy.local_cluster import LocalCluster
from kraftlog_client import Producer
from tests.integration.idempotence.test_idempotent_failover import (
    KILL_AFTER_ACKS,
    Acks,
    KillLeaderAfterAcks,
    check_exactly_once_in_order,
    values,
)
from tests.integration.replication.helpers import DEADLINE_S, create_topic

pytestmark = [
    pytest.mark.integration,
    pytest.mark.filterwarnings("ignore::DeprecationWarning:importlib.resources._legacy"),
    pytest.mark.filterwarnings("ignore:(read|open)_text is deprecated:DeprecationWarning"),
]


def test_native_producer_is_idempotent_by_default_across_a_leader_kill(
    cluster: LocalCluster,
) -> None:
    topic = "idem-native"
    old_leader = create_topic(cluster, topic, min_isr=2)
    sent = values(b"n")
    acks = Acks()
    producer = Producer(
        {
            "bootstrap.servers": ",".join(cluster.bootstrap_servers()),
            "linger.ms": 2,
            "batch.size": 1024,  # about 50 records a batch: many batches, 5 in flight
            "retry.backoff.ms": 100,
            "metadata.max.age.ms": 1000,
        }
    )
    assert producer.config.idempotent and producer.config.acks_value == -1

    def callback(value: bytes) -> object:
        def done(error: Exception | None, md: object) -> None:
            if error is None:
                acks.ok(value, md.offset)  # type: ignore[attr-defined]
            else:
                acks.fail(value, error)

        return done

    killer = KillLeaderAfterAcks(cluster, old_leader, acks, KILL_AFTER_ACKS)
    killer.start()
    try:
        for v in sent:
            producer.send(topic, v, partition=0, on_delivery=callback(v))  # type: ignore[arg-type]
        producer.flush(DEADLINE_S * 2)
    finally:
        producer.close(DEADLINE_S)
        killer.finish()
    assert producer._sender.idempotence is not None
    assert producer._sender.idempotence.producer_id >= 0
    check_exactly_once_in_order(cluster, topic, old_leader, sent, acks)
