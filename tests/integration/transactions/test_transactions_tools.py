"""``kraftlog transactions`` against 3 real brokers: list and describe an ongoing transaction,
find a hanging one with describe-producers, and abort it so that read_committed readers move
past it.

A hanging transaction needs a partition leader that does not verify transactions with their
coordinator (``transaction.partition.verification.enable=false``, as brokers before KIP-890
were): these tests run on a cluster of their own configured so."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator

import pytest

from common.protocol.api_keys import ApiKey
from common.protocol.messages.add_partitions_to_txn import (
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnRequestTopic,
)
from data_plane.storage import Record, build_batch
from deploy.cli import main
from deploy.local_cluster import LocalCluster
from tests.integration.clusters import running_cluster
from tests.integration.replication.helpers import wait_for
from tests.integration.transactions.conftest import TXN_OVERRIDES
from tests.integration.transactions.test_transactions_clients import read_all
from tests.integration.transactions.test_transactions_wire import (
    find_coordinator,
    init,
    latest,
    produce,
    setting,
)

pytestmark = [pytest.mark.integration]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    path = tmp_path_factory.mktemp("transaction-tools") / "cluster"
    overrides = {**TXN_OVERRIDES, "transaction.partition.verification.enable": "false"}
    with running_cluster(path, brokers=3, overrides=overrides) as c:
        yield c


def kraftlog(cluster: LocalCluster, capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    """Run ``kraftlog transactions ARGV --bootstrap-server ...``; its stdout (exit 0)."""
    bootstrap = ",".join(cluster.bootstrap_servers())
    code = main(["transactions", *argv, "--bootstrap-server", bootstrap])
    out, err = capsys.readouterr()
    assert code == 0, (argv, out, err)
    return out


def test_list_describe_and_abort_a_hanging_transaction(
    cluster: LocalCluster, capsys: pytest.CaptureFixture[str]
) -> None:
    topic, txn_id, coordinator, leader = setting(cluster, "tools")
    try:
        # An ongoing transaction the coordinator knows about.
        ids = init(coordinator, txn_id, 120_000)
        added = coordinator.call(
            ApiKey.ADD_PARTITIONS_TO_TXN,
            2,
            AddPartitionsToTxnRequest(
                v3_and_below_transactional_id=txn_id,
                v3_and_below_producer_id=ids.producer_id,
                v3_and_below_producer_epoch=ids.producer_epoch,
                v3_and_below_topics=[AddPartitionsToTxnRequestTopic(name=topic, partitions=[0])],
            ),
        )
        result = added.results_by_topic_v3_and_below[0].results_by_partition[0]
        assert result.partition_error_code == 0
        listed = json.loads(kraftlog(cluster, capsys, "list", "--state", "Ongoing", "--json"))
        assert {"transactional_id": txn_id, "producer_id": ids.producer_id,
                "state": "Ongoing"}.items() <= next(
            t for t in listed if t["transactional_id"] == txn_id
        ).items()  # fmt: skip
        described = json.loads(kraftlog(cluster, capsys, "describe", txn_id, "--json"))
        assert described["state"] == "Ongoing"
        assert described["producer_id"] == ids.producer_id
        assert described["partitions"] == [f"{topic}-0"]
        assert described["start_time_ms"] > 0

        # A hanging transaction: a transactional batch its coordinator never heard of (the
        # id was initialised but never added the partition; this cluster's leaders do not
        # verify), so no timeout will end it.
        hanging_id = f"hang-{uuid.uuid4().hex[:6]}"
        hanging_coordinator = find_coordinator(cluster, hanging_id)
        try:
            hanging = init(hanging_coordinator, hanging_id, 120_000)
        finally:
            hanging_coordinator.close()
        plain = produce(leader, topic, build_batch([Record(None, b"before", 1)]), None)
        batch = build_batch(
            [Record(None, b"never-visible", 1)],
            producer_id=hanging.producer_id,
            producer_epoch=hanging.producer_epoch,
            base_sequence=0,
            is_transactional=True,
        )
        first = produce(leader, topic, batch, hanging_id)
        assert first["error_code"] == 0, first
        after = produce(leader, topic, build_batch([Record(None, b"after", 1)]), None)
        assert latest(leader, topic, 1) == plain["base_offset"] + 1  # held at the hang
        producers = json.loads(
            kraftlog(cluster, capsys, "describe-producers", "--topic", topic,
                     "--partition", "0", "--json")
        )  # fmt: skip
        mine = next(p for p in producers if p["producer_id"] == hanging.producer_id)
        assert mine["current_txn_start_offset"] == first["base_offset"]
        assert mine["producer_epoch"] == hanging.producer_epoch
        text = kraftlog(cluster, capsys, "describe-producers", "--topic", topic, "--partition", "0")
        assert "CURRENT-TXN-START-OFFSET" in text and str(first["base_offset"]) in text

        out = kraftlog(
            cluster, capsys, "abort", "--topic", topic, "--partition", "0",
            "--start-offset", str(first["base_offset"]),
        )  # fmt: skip
        assert f"producer {hanging.producer_id}" in out
        # The ongoing transaction (first offset none yet here: it wrote nothing) still
        # stands; the hanging one no longer holds the last stable offset.
        wait_for(
            lambda: latest(leader, topic, 1) > after["base_offset"],
            "the last stable offset to pass the aborted transaction",
        )
    finally:
        coordinator.close()
        leader.close()
    assert sorted(read_all(cluster, topic, "read_committed", 2, partitions=1)) == [
        b"after",
        b"before",
    ]


def test_tool_errors_are_clear(cluster: LocalCluster, capsys: pytest.CaptureFixture[str]) -> None:
    bootstrap = ",".join(cluster.bootstrap_servers())
    assert main(["transactions", "describe", f"nobody-{uuid.uuid4().hex[:6]}",
                 "--bootstrap-server", bootstrap]) == 1  # fmt: skip
    assert "TRANSACTIONAL_ID_NOT_FOUND" in capsys.readouterr().err
    assert main(["transactions", "list", "--state", "Sleeping",
                 "--bootstrap-server", bootstrap]) == 1  # fmt: skip
    assert "Sleeping" in capsys.readouterr().err
    topic, _txn_id, coordinator, leader = setting(cluster, "noabort")
    coordinator.close()
    leader.close()
    assert main(["transactions", "abort", "--topic", topic, "--partition", "0",
                 "--start-offset", "0", "--bootstrap-server", bootstrap]) == 1  # fmt: skip
    assert "no transaction open" in capsys.readouterr().err
