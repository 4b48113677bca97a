"""AlterPartitionManager: sends ISR change proposals to the controller (Kafka's
AlterPartitionManager).

- :meth:`submit` queues one proposal per partition (a newer one replaces a queued older one).
- One AlterPartition request in flight at a time, carrying every queued item: the blocking
  ``ControllerClient.alter_partition`` runs on ``executor``, never on the event loop.
- Answers are applied on the event loop through ``on_result(tp, proposal, result)``; a
  partition missing from the answer, or a request-wide retriable error (no controller,
  timeout, NOT_CONTROLLER, STALE_BROKER_EPOCH while re-registering), puts the items back and
  retries after ``retry_backoff_ms``. Per-partition errors are final for that proposal (the
  partition proposes again from fresh state), and that partition's next proposal waits
  ``rejected_backoff_ms``: a restarted broker whose replicas the controller still fences
  (INELIGIBLE_REPLICA) would otherwise be proposed and refused on every follower fetch.
- Rejections are logged at INFO once per error code per :data:`REJECTION_LOG_INTERVAL_S`, as
  one line with how many proposals it refused since the last line and one example.

A leader cut off from the controller quorum keeps retrying; its proposals never commit, so
its ISR never shrinks and acks=all produces that need the lost followers cannot complete.

Thread-safety: every method runs on the event loop; only the controller call runs on the
executor.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import time
from collections.abc import Callable
from typing import Protocol

from common.error_codes import ErrorCode
from common.topic_partition import TopicPartition
from data_plane.replication.leader_state import IsrChangeProposal
from metadata.messages import (
    AlterPartitionItem,
    AlterPartitionResponse,
    AlterPartitionResult,
    AlterPartitionTopic,
)

logger = logging.getLogger(__name__)

DEFAULT_RETRY_BACKOFF_MS = 100
# A partition whose proposal the controller refused proposes again no sooner than this.
DEFAULT_REJECTED_BACKOFF_MS = 1000
# At most one log line per error code in this many seconds (with the count since the last).
REJECTION_LOG_INTERVAL_S = 10.0
# Items per AlterPartition request (the controller appends them as one batch).
MAX_ITEMS_PER_REQUEST = 1000


class AlterPartitionSender(Protocol):
    def alter_partition(
        self, broker_id: int, broker_epoch: int, topics: list[AlterPartitionTopic]
    ) -> AlterPartitionResponse: ...


ResultCallback = Callable[[TopicPartition, IsrChangeProposal, AlterPartitionResult], None]


class AlterPartitionManager:
    def __init__(
        self,
        broker_id: int,
        broker_epoch: Callable[[], int],
        sender: AlterPartitionSender,
        executor: concurrent.futures.Executor,
        on_result: ResultCallback,
        *,
        retry_backoff_ms: int = DEFAULT_RETRY_BACKOFF_MS,
        rejected_backoff_ms: int = DEFAULT_REJECTED_BACKOFF_MS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.broker_id = broker_id
        self._broker_epoch = broker_epoch
        self._sender = sender
        self._executor = executor
        self._on_result = on_result
        self.retry_backoff_ms = retry_backoff_ms
        self.rejected_backoff_ms = rejected_backoff_ms
        self._clock = clock
        # Partitions whose last proposal was refused -> when they may propose again.
        self._not_before: dict[TopicPartition, float] = {}
        # Error code -> (when it was last logged, rejections since then).
        self._rejections_logged: dict[int, tuple[float, int]] = {}
        self._queued: dict[TopicPartition, IsrChangeProposal] = {}
        self._in_flight: dict[TopicPartition, IsrChangeProposal] = {}
        self._task: asyncio.Task[None] | None = None
        self._closed = False
        self.requests_sent = 0

    def pending(self) -> dict[TopicPartition, IsrChangeProposal]:
        return {**self._in_flight, **self._queued}

    def submit(self, tp: TopicPartition, proposal: IsrChangeProposal) -> None:
        if self._closed:
            return
        self._queued[tp] = proposal
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while self._queued and not self._closed:
            now = self._clock()
            ready = [
                (tp, p) for tp, p in self._queued.items() if self._not_before.get(tp, 0.0) <= now
            ]
            if not ready:
                wake = min(self._not_before.get(tp, now) for tp in self._queued)
                await asyncio.sleep(max(0.001, wake - now))
                continue
            batch = dict(ready[:MAX_ITEMS_PER_REQUEST])
            for tp in batch:
                del self._queued[tp]
                self._not_before.pop(tp, None)
            self._in_flight = batch
            try:
                response = await loop.run_in_executor(
                    self._executor, self._send, self._broker_epoch(), batch
                )
            except asyncio.CancelledError:
                raise
            except Exception as e:  # no controller reachable, timeout, shutdown
                logger.warning("AlterPartition for %d partitions failed: %s", len(batch), e)
                self._requeue(batch)
                await asyncio.sleep(self.retry_backoff_ms / 1000)
                continue
            finally:
                self._in_flight = {}
            retry = self._apply(batch, response)
            if retry:
                self._requeue(retry)
                await asyncio.sleep(self.retry_backoff_ms / 1000)

    def _send(
        self, broker_epoch: int, batch: dict[TopicPartition, IsrChangeProposal]
    ) -> AlterPartitionResponse:
        by_topic: dict[str, list[AlterPartitionItem]] = {}
        for tp, p in batch.items():
            by_topic.setdefault(tp.topic, []).append(
                AlterPartitionItem(tp.partition, p.leader_epoch, list(p.new_isr), p.partition_epoch)
            )
        topics = [AlterPartitionTopic(name, items) for name, items in by_topic.items()]
        self.requests_sent += 1
        return self._sender.alter_partition(self.broker_id, broker_epoch, topics)

    def _apply(
        self, batch: dict[TopicPartition, IsrChangeProposal], response: AlterPartitionResponse
    ) -> dict[TopicPartition, IsrChangeProposal]:
        """Hand each answered item to ``on_result``; return the items to retry."""
        if response.error_code != ErrorCode.NO_ERROR:
            logger.warning(
                "AlterPartition rejected: %s (%s)", response.error_code, response.error_message
            )
            return batch
        retry = dict(batch)
        now = self._clock()
        for result in response.partitions:
            tp = TopicPartition(result.name, result.partition_index)
            proposal = retry.pop(tp, None)
            if proposal is None:
                continue
            if result.error_code != ErrorCode.NO_ERROR:
                self._not_before[tp] = now + self.rejected_backoff_ms / 1000
                self._log_rejection(tp, proposal, result, now)
            try:
                self._on_result(tp, proposal, result)
            except Exception:
                logger.exception("applying the AlterPartition result for %s failed", tp)
        return retry

    def _log_rejection(
        self,
        tp: TopicPartition,
        proposal: IsrChangeProposal,
        result: AlterPartitionResult,
        now: float,
    ) -> None:
        code = int(result.error_code)
        last, count = self._rejections_logged.get(code, (-REJECTION_LOG_INTERVAL_S, 0))
        count += 1
        if now - last < REJECTION_LOG_INTERVAL_S:
            self._rejections_logged[code] = (last, count)
            return
        self._rejections_logged[code] = (now, 0)
        logger.info(
            "AlterPartition rejected %d proposal(s) with %s since the last such line, e.g. %s -> "
            "%s (%s); each partition proposes again after %d ms",
            count,
            _code_name(code),
            tp,
            list(proposal.new_isr),
            result.error_message,
            self.rejected_backoff_ms,
        )

    def _requeue(self, items: dict[TopicPartition, IsrChangeProposal]) -> None:
        for tp, proposal in items.items():
            self._queued.setdefault(tp, proposal)  # a newer proposal wins

    def close(self) -> None:
        self._closed = True
        self._queued.clear()
        if self._task is not None:
            self._task.cancel()


def _code_name(code: int) -> str:
    try:
        return ErrorCode(code).name
    except ValueError:
        return str(code)
