"""The exactly-once writer's protocol without Spark, against the 3-broker cluster: the task
side (write_transaction) and the driver side (recover, commit_batch, abort_batch) called
directly, with the driver "crashing" (an exception out of EndTxn) at each step, then a
restart (recover, and the batch run again as Spark replays an unrecorded batch): a
read_committed read of the output holds every input record exactly once."""

from __future__ import annotations

import uuid
from collections.abc import Callable

import pytest

from kraftlog_client import Admin, PreparedTxnState
from spark_integration.commit_log import CommitLog, Decision
from spark_integration.exactly_once import StaleBatchError, abort_batch, commit_batch, recover
from spark_integration.options import WriteOptions, parse_write_options
from spark_integration.transactional_writer import write_transaction
from tests.integration.transactions.reads import read_values
from tests.spark.helpers import DEADLINE_S

pytestmark = pytest.mark.integration

TASKS = 3  # Spark partitions of every batch
ROWS_PER_TASK = 40
OUT_PARTITIONS = 2


class DriverCrash(Exception):
    """Stands for the driver process dying at this point."""


def writer_options(bootstrap: str, topic: str) -> WriteOptions:
    return parse_write_options(
        {
            "kafka.bootstrap.servers": bootstrap,
            "topic": topic,
            "transactionalIdPrefix": f"eos-{uuid.uuid4().hex[:8]}",
            "exactlyOnce.commitLog": "_eos_protocol_decisions",
        },
        streaming=True,
    )


def batch_rows(batch_id: int) -> list[list[tuple[bytes]]]:
    """The rows of each task of batch ``batch_id`` (the same on every replay)."""
    return [
        [(b"b%d-t%d-r%d" % (batch_id, t, r),) for r in range(ROWS_PER_TASK)] for t in range(TASKS)
    ]


def run_tasks(options: WriteOptions, batch_id: int) -> list[PreparedTxnState]:
    out = []
    for task, rows in enumerate(batch_rows(batch_id)):
        written = write_transaction(options, task, ["value"], iter(rows))
        assert written.records == ROWS_PER_TASK and written.prepared is not None
        out.append(written.prepared)
    return out


@pytest.fixture
def crash_after_end_txns(monkeypatch: pytest.MonkeyPatch) -> Callable[[int | None], None]:
    """``arm(n)``: the driver dies before its (n+1)-th EndTxn, or (n = TASKS) before it
    marks the decision applied; ``arm(None)``: it does not die."""
    real_complete = Admin.complete_transaction
    real_append = CommitLog.append
    budget: list[int | None] = [None]

    def complete(self: Admin, prepared: PreparedTxnState, commit: bool, **kw: object) -> None:
        if budget[0] is not None:
            if budget[0] == 0:
                raise DriverCrash(f"before EndTxn of {prepared.transactional_id}")
            budget[0] -= 1
        real_complete(self, prepared, commit, **kw)  # type: ignore[arg-type]

    def append(self: CommitLog, decision: Decision) -> None:
        if budget[0] == 0 and decision.applied:
            raise DriverCrash("before marking the decision applied")
        real_append(self, decision)

    monkeypatch.setattr(Admin, "complete_transaction", complete)
    monkeypatch.setattr(CommitLog, "append", append)

    def arm(n: int | None) -> None:
        budget[0] = n

    return arm


def read_committed(bootstrap: str, topic: str, expected: int) -> list[bytes]:
    """Every value of ``topic`` a read_committed consumer sees (polls until ``expected``,
    then until 2 s pass without a record)."""
    return read_values(bootstrap, topic, OUT_PARTITIONS, "read_committed", expected)


def expected_values(batches: int) -> list[bytes]:
    return sorted(v for b in range(batches) for rows in batch_rows(b) for (v,) in rows)


@pytest.mark.parametrize(
    "crash",
    [
        "after_prepare",
        "after_decision",
        "after_one_end_txn",
        "before_applied_mark",
        "after_all_end_txns",
    ],
)
def test_a_driver_crash_at_each_step_then_restart_writes_each_record_once(
    bootstrap: str,
    new_topic: Callable[..., str],
    crash_after_end_txns: Callable[[int | None], None],
    crash: str,
) -> None:
    topic = new_topic(partitions=OUT_PARTITIONS, replication_factor=3, prefix="eos-out")
    options = writer_options(bootstrap, topic)
    assert recover(options) is None  # a new prefix: nothing to roll forward
    # Batch 0 commits normally; Spark records it.
    assert commit_batch(options, run_tasks(options, 0), 0)
    # Batch 1: the driver dies at the step under test; Spark has not recorded batch 1.
    prepared = run_tasks(options, 1)
    if crash != "after_prepare":
        crash_after_end_txns(
            {"after_decision": 0, "after_one_end_txn": 1, "before_applied_mark": TASKS}.get(crash)
        )
        try:
            commit_batch(options, prepared, 1)
        except DriverCrash:
            assert crash != "after_all_end_txns"
        else:
            assert crash == "after_all_end_txns"
        crash_after_end_txns(None)
    # Restart: the writer's recovery, then Spark replays batch 1 (same rows, same ids).
    latest = recover(options)
    assert latest is not None and latest.applied
    assert latest.batch_id == (0 if crash == "after_prepare" else 1)
    committed_now = commit_batch(options, run_tasks(options, 1), 1)
    # The replay's own transactions commit only if the first run decided nothing.
    assert committed_now == (crash == "after_prepare")
    # The query goes on.
    assert commit_batch(options, run_tasks(options, 2), 2)
    got = read_committed(bootstrap, topic, TASKS * ROWS_PER_TASK * 3)
    assert sorted(got) == expected_values(3)


def test_recovery_after_a_crash_in_the_next_batches_tasks_is_not_a_lost_transaction(
    bootstrap: str, new_topic: Callable[..., str]
) -> None:
    """Batch 0 committed and recorded; batch 1's tasks bumped every id's epoch, then the
    driver died: the roll-forward must not mistake batch 0's (applied) decision for lost."""
    topic = new_topic(partitions=OUT_PARTITIONS, replication_factor=3, prefix="eos-out")
    options = writer_options(bootstrap, topic)
    assert commit_batch(options, run_tasks(options, 0), 0)
    run_tasks(options, 1)  # prepared, never decided
    latest = recover(options)
    assert latest is not None and (latest.batch_id, latest.applied) == (0, True)
    assert commit_batch(options, run_tasks(options, 1), 1)
    assert sorted(read_committed(bootstrap, topic, 2 * TASKS * ROWS_PER_TASK)) == (
        expected_values(2)
    )


def test_spark_abort_after_a_failed_commit_keeps_the_decided_transactions(
    bootstrap: str,
    new_topic: Callable[..., str],
    crash_after_end_txns: Callable[[int | None], None],
) -> None:
    """Spark calls abort() with the same messages when commit() raised; the decision was
    written, so abort rolls it forward instead of aborting."""
    topic = new_topic(partitions=OUT_PARTITIONS, replication_factor=3, prefix="eos-out")
    options = writer_options(bootstrap, topic)
    prepared = run_tasks(options, 0)
    crash_after_end_txns(1)
    with pytest.raises(DriverCrash):
        commit_batch(options, prepared, 0)
    crash_after_end_txns(None)
    abort_batch(options, prepared)
    log = CommitLog(bootstrap, options.commit_log, DEADLINE_S)
    assert log.latest(options.transactional_id_prefix or "") == Decision(
        options.transactional_id_prefix or "", 0, tuple(prepared), True
    )
    assert sorted(read_committed(bootstrap, topic, TASKS * ROWS_PER_TASK)) == (expected_values(1))


def test_a_batch_older_than_the_last_decision_is_refused(
    bootstrap: str, new_topic: Callable[..., str]
) -> None:
    """A new checkpoint reusing an old query's prefix starts at batch 0 again: refused, not
    silently dropped as a replay."""
    topic = new_topic(partitions=OUT_PARTITIONS, replication_factor=3, prefix="eos-out")
    options = writer_options(bootstrap, topic)
    assert commit_batch(options, [], 4)
    prepared = run_tasks(options, 0)
    with pytest.raises(StaleBatchError, match="needs its own transactionalIdPrefix"):
        commit_batch(options, prepared, 0)
    abort_batch(options, prepared)
    assert read_committed(bootstrap, topic, 0) == []


def test_an_aborted_batch_leaves_nothing_visible(
    bootstrap: str, new_topic: Callable[..., str]
) -> None:
    topic = new_topic(partitions=OUT_PARTITIONS, replication_factor=3, prefix="eos-out")
    options = writer_options(bootstrap, topic)
    abort_batch(options, run_tasks(options, 0))
    assert commit_batch(options, run_tasks(options, 1), 1)
    got = read_committed(bootstrap, topic, TASKS * ROWS_PER_TASK)
    assert sorted(got) == sorted(v for rows in batch_rows(1) for (v,) in rows)
