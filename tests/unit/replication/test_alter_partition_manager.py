"""AlterPartitionManager on a real event loop with a scripted controller endpoint: batching,
results, retries of request-wide failures, per-partition errors final."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading

from common.error_codes import ErrorCode
from common.topic_partition import TopicPartition
from data_plane.replication.alter_partition_manager import AlterPartitionManager
from data_plane.replication.leader_state import IsrChangeKind, IsrChangeProposal
from metadata.messages import AlterPartitionResponse, AlterPartitionResult, AlterPartitionTopic


class ScriptedController:
    """Answers AlterPartition from a script: 'down' raises, 'ok' commits every item, else the
    given per-item error code. Blocks until released so batching can be observed."""

    def __init__(self, script: list[object]) -> None:
        self.script = script
        self.requests: list[list[AlterPartitionTopic]] = []
        self.release = threading.Event()

    def alter_partition(self, broker_id, broker_epoch, topics) -> AlterPartitionResponse:
        self.release.wait(5)
        self.requests.append(topics)
        step = self.script.pop(0) if self.script else "ok"
        if step == "down":
            raise ConnectionError("no controller")
        results = [
            AlterPartitionResult(
                t.name,
                p.partition_index,
                0 if step == "ok" else step,
                None,
                broker_id,
                p.leader_epoch,
                list(p.new_isr),
                p.partition_epoch + 1,
            )
            for t in topics
            for p in t.partitions
        ]
        return AlterPartitionResponse(0, None, results)


def _proposal(isr=(1, 2)) -> IsrChangeProposal:
    return IsrChangeProposal(IsrChangeKind.SHRINK, isr, 3, 7)


def _run(script: list[object], submit_count: int) -> tuple[ScriptedController, list]:
    controller = ScriptedController(script)
    got: list = []
    executor = concurrent.futures.ThreadPoolExecutor(1)

    async def main() -> None:
        mgr = AlterPartitionManager(
            1,
            lambda: 9,
            controller,
            executor,
            lambda tp, p, r: got.append((tp, r)),
            retry_backoff_ms=1,
        )
        for i in range(submit_count):
            mgr.submit(TopicPartition("t", i), _proposal())
        controller.release.set()
        for _ in range(500):
            if len(got) >= submit_count and not mgr.pending():
                break
            await asyncio.sleep(0.01)
        mgr.close()

    try:
        asyncio.run(main())
    finally:
        executor.shutdown()
    return controller, got


def test_items_are_batched_and_results_applied() -> None:
    controller, got = _run(["ok"], 3)
    assert len(controller.requests) == 1
    assert sorted(p.partition_index for p in controller.requests[0][0].partitions) == [0, 1, 2]
    assert all(r.error_code == 0 and r.partition_epoch == 8 for _, r in got)


def test_unreachable_controller_is_retried() -> None:
    controller, got = _run(["down", "down", "ok"], 1)
    assert len(controller.requests) == 3
    assert [r.error_code for _, r in got] == [0]


def test_per_partition_errors_are_final() -> None:
    controller, got = _run([int(ErrorCode.INVALID_UPDATE_VERSION)], 1)
    assert len(controller.requests) == 1
    assert [r.error_code for _, r in got] == [ErrorCode.INVALID_UPDATE_VERSION]


def test_refused_partition_backs_off_and_rejections_log_once(caplog) -> None:
    """A partition that proposes again on every result (as a leader does on each follower
    fetch) while the controller keeps refusing: one request per backoff, one log line."""
    import logging

    controller = ScriptedController([int(ErrorCode.INELIGIBLE_REPLICA)] * 1000)
    controller.release.set()
    executor = concurrent.futures.ThreadPoolExecutor(1)
    results: list = []

    async def main() -> None:
        mgr: AlterPartitionManager

        def on_result(tp, proposal, result) -> None:
            results.append(result.error_code)
            mgr.submit(tp, _proposal())  # the partition proposes again at once

        mgr = AlterPartitionManager(
            1,
            lambda: 9,
            controller,
            executor,
            on_result,
            retry_backoff_ms=1,
            rejected_backoff_ms=200,
        )
        for i in range(50):
            mgr.submit(TopicPartition("t", i), _proposal())
        await asyncio.sleep(1.0)
        mgr.close()

    caplog.set_level(logging.INFO, logger="data_plane.replication.alter_partition_manager")
    try:
        asyncio.run(main())
    finally:
        executor.shutdown()
    # Without the backoff this loop sends a request per round trip (hundreds in a second).
    assert 1 <= len(controller.requests) <= 8
    assert len(results) == 50 * len(controller.requests)
    lines = [r for r in caplog.records if "AlterPartition rejected" in r.getMessage()]
    assert len(lines) == 1 and "INELIGIBLE_REPLICA" in lines[0].getMessage()
