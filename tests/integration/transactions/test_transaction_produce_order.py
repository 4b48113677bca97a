"""A transactional producer pipelining many batches per partition (max.in.flight 5) while
the leaders verify each partition's first batch with the coordinator: the batches after the
first wait behind its verification, so every batch is appended in order (no
OUT_OF_ORDER_SEQUENCE_NUMBER) and the transaction commits every record."""

from __future__ import annotations

import threading
import uuid

import pytest

from deploy.local_cluster import LocalCluster
from kraftlog_client import Producer
from tests.integration.transactions.test_native_transactions import CALL_TIMEOUT_S, native_read
from tests.integration.transactions.test_transactions_clients import (
    bootstrap,
    make_topic,
)

pytestmark = [pytest.mark.integration]

RECORDS = 60_000  # per producer: hundreds of 16 KiB batches per partition


def test_pipelined_transactional_batches_are_appended_in_order(cluster: LocalCluster) -> None:
    topic = make_topic(cluster)
    errors: list[Exception] = []

    def write(n: int) -> None:
        p = Producer(
            {
                "bootstrap.servers": bootstrap(cluster),
                "transactional.id": f"order-{uuid.uuid4().hex[:6]}-{n}",
                "linger.ms": 0,
            }
        )
        try:
            p.init_transactions(CALL_TIMEOUT_S)
            p.begin_transaction()
            for i in range(RECORDS):
                p.send(topic, b"%d-%06d" % (n, i) + b"x" * 90)
            p.commit_transaction(CALL_TIMEOUT_S)
        except Exception as e:
            errors.append(e)
        finally:
            p.close(CALL_TIMEOUT_S)

    writers = [threading.Thread(target=write, args=(n,)) for n in range(2)]
    for t in writers:
        t.start()
    for t in writers:
        t.join(4 * CALL_TIMEOUT_S)
    assert not errors, errors
    got = native_read(cluster, topic, "read_committed", 2 * RECORDS)
    assert len(got) == 2 * RECORDS == len(set(got))
