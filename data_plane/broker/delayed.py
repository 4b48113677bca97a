"""The two delayed operations of the data path (Kafka's DelayedFetch and DelayedProduce).

Both are sans-IO: their conditions read partition state through the ReplicaManager, and
completion calls a plain callback (the server resolves an asyncio future with it).

- :class:`DelayedFetch` completes when the partitions it reads hold at least ``min_bytes``
  readable bytes, when one of them stops being led here or its offset falls out of range
  (the response then carries the error), or at its deadline (``max_wait_ms``).
- :class:`DelayedProduce` (acks=all) completes when the high watermark of every partition it
  appended to has passed the appended batches (NOT_ENOUGH_REPLICAS_AFTER_APPEND if by then the
  ISR is smaller than ``min.insync.replicas``), or a partition lost its leadership (then
  NOT_LEADER_OR_FOLLOWER for it: a deposed leader fails its parked produces at once); at the
  deadline the partitions still waiting get REQUEST_TIMED_OUT.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import NamedTuple

from common.error_codes import ErrorCode
from common.errors import ApiError
from common.topic_partition import TopicPartition
from data_plane.broker.purgatory import DelayedOperation, DelayedOperationPurgatory
from data_plane.broker.replica_manager import ReplicaManager
from data_plane.storage import FetchIsolation


class FetchPartitionStatus(NamedTuple):
    tp: TopicPartition
    fetch_offset: int
    max_bytes: int


class DelayedFetch(DelayedOperation[TopicPartition]):
    """Readable bytes are counted per partition at the first check; a wake-up under one
    partition re-counts only that partition (every change of another one wakes this operation
    under its own key), so a follower's fetch of many idle partitions costs one read of the
    partition that moved, not one of each."""

    def __init__(
        self,
        delay_ms: int,
        min_bytes: int,
        partitions: list[FetchPartitionStatus],
        isolation: FetchIsolation,
        replica_manager: ReplicaManager,
        on_done: Callable[[bool], None],
        known: dict[TopicPartition, int] | None = None,
    ) -> None:
        """``known``: the readable bytes of some partitions as the caller just read them
        (every other one: none); the first check then takes them instead of reading."""
        super().__init__(delay_ms)
        self.min_bytes = min_bytes
        self.partitions = partitions
        self.isolation = isolation
        self._replicas = replica_manager
        self._on_done = on_done
        self._statuses = {status.tp: status for status in partitions}
        # tp -> readable bytes at its last check; complete (every partition) once a full
        # check did not complete the operation.
        self._available: dict[TopicPartition, int] = {}
        self._total = 0
        self._known = known
        # The partitions whose change woke this operation (the only ones besides those it
        # read at first that can have news for an incremental answer).
        self.woken: set[TopicPartition] = set()

    def try_complete(self) -> bool:
        known = self._known
        if known is not None:
            self._known = None
            self._available = {tp: known.get(tp, 0) for tp in self._statuses}
            self._total = sum(self._available.values())
            return self._total >= self.min_bytes
        total = 0
        available = self._available
        for status in self.partitions:
            n = self._readable(status)
            if n is None:
                return True
            available[status.tp] = n
            total += n
            if total >= self.min_bytes:
                return True
        self._total = total
        return False

    def try_complete_after(self, key: TopicPartition) -> bool:
        self.woken.add(key)
        before = self._available.get(key)
        if before is None or len(self._available) != len(self.partitions):
            return self.try_complete()
        status = self._statuses[key]
        n = self._readable(status)
        if n is None:
            return True
        self._available[status.tp] = n
        self._total += n - before
        return self._total >= self.min_bytes

    def _readable(self, status: FetchPartitionStatus) -> int | None:
        """Bytes a read of ``status`` would return now; None when the response must be sent
        now (the partition is not led here, its offset is out of range, a storage error)."""
        part = self._replicas.get_partition(status.tp)
        if part is None or not part.is_leader:
            return None  # the response reports the routing error now
        try:
            return part.available_bytes(status.fetch_offset, status.max_bytes, self.isolation)
        except ApiError:
            return None  # OFFSET_OUT_OF_RANGE or a storage error: answer now

    def on_complete(self, forced: bool) -> None:
        self._on_done(forced)


class DelayedProduce(DelayedOperation[TopicPartition]):
    """``required_offsets``: partition -> the offset the HW must reach (last appended + 1)."""

    def __init__(
        self,
        delay_ms: int,
        required_offsets: dict[TopicPartition, int],
        replica_manager: ReplicaManager,
        on_done: Callable[[dict[TopicPartition, int]], None],
    ) -> None:
        super().__init__(delay_ms)
        self.required_offsets = required_offsets
        self._replicas = replica_manager
        self._on_done = on_done
        # Partitions decided so far: tp -> error code (NO_ERROR when replicated).
        self.outcome: dict[TopicPartition, int] = {}

    def try_complete(self) -> bool:
        for tp in self.required_offsets:
            if tp not in self.outcome:
                self._check(tp)
        return len(self.outcome) == len(self.required_offsets)

    def try_complete_after(self, key: TopicPartition) -> bool:
        # Only the changed partition is re-checked: the others' state is as at their last
        # check (each change of theirs wakes this operation under its own key). A request of
        # many partitions parked by many producers would otherwise cost partitions x
        # producers checks per append.
        if key in self.required_offsets and key not in self.outcome:
            self._check(key)
        return len(self.outcome) == len(self.required_offsets)

    def _check(self, tp: TopicPartition) -> None:
        part = self._replicas.get_partition(tp)
        if part is None:
            self.outcome[tp] = self._replicas.missing_partition_error(tp)
            return
        done, error = part.check_enough_replicas_reach_offset(self.required_offsets[tp])
        if done:
            self.outcome[tp] = error

    def on_complete(self, forced: bool) -> None:
        for tp in self.required_offsets:
            self.outcome.setdefault(tp, ErrorCode.REQUEST_TIMED_OUT)
        self._on_done(self.outcome)


async def await_replication(
    purgatory: DelayedOperationPurgatory[TopicPartition],
    replica_manager: ReplicaManager,
    required_offsets: dict[TopicPartition, int],
    timeout_ms: int,
) -> dict[TopicPartition, int]:
    """Park a :class:`DelayedProduce` for ``required_offsets`` and return its outcome
    (partition -> error code). A cancelled waiter (the client went away) frees it."""
    done: asyncio.Future[dict[TopicPartition, int]] = asyncio.get_running_loop().create_future()

    def on_done(outcome: dict[TopicPartition, int]) -> None:
        if not done.done():
            done.set_result(outcome)

    op = DelayedProduce(timeout_ms, required_offsets, replica_manager, on_done)
    purgatory.try_complete_else_watch(op, required_offsets.keys())
    try:
        return await done
    finally:
        purgatory.cancel(op)  # a no-op once completed
