"""GroupCoordinatorRuntime: the I/O around the sans-IO GroupCoordinator on a broker.

- Requests: each handler awaits one call (``join_group`` ...). The runtime gives the state
  machine an int waiter token, keeps an asyncio future per token, and resolves the futures the
  machine's outputs name. A client that disconnects leaves its future unresolved-and-dropped;
  the state machine still answers it later (into nothing), as Kafka's callbacks do.
- Writes: every :class:`RecordWrite` becomes one RecordBatch (no compression, record
  timestamps = broker wall clock) appended to ``__consumer_offsets-<p>`` through the
  :class:`PartitionWriter` the broker provides (an acks=all append that reports when the high
  watermark passed it, or ``offsets.commit.timeout.ms`` ran out). Its outcome goes back to the
  machine (``complete_write``): a commit is answered only once it is committed.
- Leadership: the broker reports every partition whose role changed; when this broker
  becomes leader of a ``__consumer_offsets`` partition (or its leader epoch changes) the
  runtime reads the partition from its log start to its log end (``offsets.load.buffer.size``
  per step, yielding to the event loop between steps) into the machine, which answers
  COORDINATOR_LOAD_IN_PROGRESS meanwhile; on losing leadership it unloads the partition.
- ``__consumer_offsets`` itself is created through the controller on the first FindCoordinator
  (:meth:`ensure_offsets_topic`), compacted, with ``offsets.topic.*`` settings.
- Timers: :meth:`tick` (the broker's housekeeping tick, every 10 ms) runs the machine's
  deadlines (sessions, rebalance timeouts, initial delay, retention).

Thread-safety: none; everything runs on the broker's event loop.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections.abc import Callable
from typing import Any, TypeVar

from common.error_codes import ErrorCode
from common.errors import ApiError
from common.topic_partition import TopicPartition
from data_plane.coordinator.coordinator import GroupCoordinator
from data_plane.coordinator.messages import (
    CoordinatorOutputs,
    DeleteGroupsResult,
    JoinGroupRequest,
    JoinGroupResult,
    OffsetCommitRequest,
    OffsetCommitResult,
    RecordWrite,
    SyncGroupRequest,
    SyncGroupResult,
)
from data_plane.coordinator.partition_writer import PartitionWriter
from data_plane.storage import FetchIsolation, Record, build_batch, decode_records
from metadata.topics import CONSUMER_OFFSETS_TOPIC

logger = logging.getLogger(__name__)

OFFSETS_TOPIC = CONSUMER_OFFSETS_TOPIC
T = TypeVar("T")

# A failed load (a storage error while reading) is retried after this pause, this many times;
# the partition then stays "loading" (clients retry COORDINATOR_LOAD_IN_PROGRESS) and the
# error is logged.
LOAD_RETRY_BACKOFF_S = 0.5
LOAD_MAX_ATTEMPTS = 5
# Records loaded between two yields to the event loop: decoding a 5 MB read in one go would
# stall every connection of the broker for a noticeable time.
LOAD_YIELD_RECORDS = 2000


def wall_clock_ms() -> int:
    """Epoch milliseconds: commit timestamps are persisted and compared across brokers."""
    return time.time_ns() // 1_000_000


class GroupCoordinatorRuntime:
    def __init__(
        self,
        coordinator: GroupCoordinator,
        writer: PartitionWriter,
        *,
        commit_timeout_ms: int,
        load_buffer_bytes: int,
        wall_clock: Callable[[], int] = wall_clock_ms,
    ) -> None:
        self.coordinator = coordinator
        self._writer = writer
        self._commit_timeout_ms = commit_timeout_ms
        self._load_buffer_bytes = load_buffer_bytes
        self._wall_clock = wall_clock
        self._waiters: dict[int, asyncio.Future[Any]] = {}
        self._tokens = itertools.count(1)
        # Partitions led here -> the leader epoch their load is for.
        self._led_epochs: dict[int, int] = {}
        self._load_tasks: dict[int, asyncio.Task[None]] = {}
        self._closed = False

    # --- requests -----------------------------------------------------------------------------

    async def _call(self, fn: Callable[[int], CoordinatorOutputs]) -> Any:
        token = next(self._tokens)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._waiters[token] = future
        try:
            self.process(fn(token))
            return await future
        finally:
            self._waiters.pop(token, None)

    async def join_group(self, req: JoinGroupRequest) -> JoinGroupResult:
        result: JoinGroupResult = await self._call(lambda w: self.coordinator.join_group(w, req))
        return result

    async def sync_group(self, req: SyncGroupRequest) -> SyncGroupResult:
        result: SyncGroupResult = await self._call(lambda w: self.coordinator.sync_group(w, req))
        return result

    async def commit_offsets(self, req: OffsetCommitRequest) -> OffsetCommitResult:
        result: OffsetCommitResult = await self._call(
            lambda w: self.coordinator.commit_offsets(w, req)
        )
        return result

    async def delete_groups(self, group_ids: list[str]) -> DeleteGroupsResult:
        result: DeleteGroupsResult = await self._call(
            lambda w: self.coordinator.delete_groups(w, group_ids)
        )
        return result

    def leave_group(self, group_id: str, member_id: str) -> int:
        error, out = self.coordinator.leave_group(group_id, member_id)
        self.process(out)
        return error

    def process(self, out: CoordinatorOutputs) -> None:
        """Resolve the futures ``out`` answers and start its writes."""
        for token, result in out.responses:
            future = self._waiters.get(token)  # type: ignore[call-overload]
            if future is not None and not future.done():
                future.set_result(result)
        for write in out.writes:
            self._append(write)

    # --- writes -------------------------------------------------------------------------------

    def _append(self, write: RecordWrite) -> None:
        tp = TopicPartition(OFFSETS_TOPIC, write.partition)
        now = self._wall_clock()
        batch = build_batch([Record(k, v, now) for k, v in write.records])

        def on_replicated(code: int) -> None:
            # May be called from inside the writer: finish on the next loop turn, not
            # re-entrantly.
            asyncio.get_running_loop().call_soon(self._write_done, write.write_id, code)

        error = self._writer.append(tp, batch, self._commit_timeout_ms, on_replicated)
        if error != ErrorCode.NO_ERROR:
            self._write_done(write.write_id, error)

    def _write_done(self, write_id: int, error_code: int) -> None:
        if self._closed:
            return
        self.process(self.coordinator.complete_write(write_id, error_code))

    # --- leadership and loading ---------------------------------------------------------------

    def on_partition_change(self, tp: TopicPartition) -> None:
        """``tp`` (of ``__consumer_offsets``) changed: load it if this broker now leads it in a
        new epoch, unload it if it no longer does."""
        if self._closed or tp.topic != OFFSETS_TOPIC:
            return
        epoch = self._writer.leader_epoch(tp)
        p = tp.partition
        if epoch is not None:
            if self._led_epochs.get(p) == epoch:
                return
            self._led_epochs[p] = epoch
            self._refresh_partition_count()
            self.process(self.coordinator.begin_loading(p))
            old = self._load_tasks.pop(p, None)
            if old is not None:
                old.cancel()
            task = asyncio.get_running_loop().create_task(self._load(p, epoch))
            self._load_tasks[p] = task
            task.add_done_callback(lambda t, p=p: self._load_finished(p, t))
        elif p in self._led_epochs:
            del self._led_epochs[p]
            old = self._load_tasks.pop(p, None)
            if old is not None:
                old.cancel()
            logger.info("%s-%d: no longer the leader, unloading its groups", OFFSETS_TOPIC, p)
            self.process(self.coordinator.unload(p))

    def _load_finished(self, p: int, task: asyncio.Task[None]) -> None:
        if self._load_tasks.get(p) is task:
            del self._load_tasks[p]
        if not task.cancelled() and task.exception() is not None:
            logger.error("%s-%d: loading failed", OFFSETS_TOPIC, p, exc_info=task.exception())

    async def _load(self, p: int, epoch: int) -> None:
        tp = TopicPartition(OFFSETS_TOPIC, p)
        for attempt in range(1, LOAD_MAX_ATTEMPTS + 1):
            try:
                await self._read_partition(tp, epoch)
                break
            except ApiError as e:
                logger.warning("%s: load attempt %d failed: %s", tp, attempt, e)
                self.process(self.coordinator.begin_loading(p))
                await asyncio.sleep(LOAD_RETRY_BACKOFF_S)
        else:
            logger.error("%s: giving up loading after %d attempts", tp, LOAD_MAX_ATTEMPTS)
            return
        if self._led_epochs.get(p) == epoch:
            self.process(self.coordinator.complete_loading(p))

    async def _read_partition(self, tp: TopicPartition, epoch: int) -> None:
        log_ = self._writer.local_log(tp)
        if log_ is None:
            return
        end = log_.log_end_offset
        offset = log_.log_start_offset
        started = time.monotonic()
        records = since_yield = 0
        while offset < end and self._led_epochs.get(tp.partition) == epoch:
            data = log_.read(
                offset, self._load_buffer_bytes, isolation=FetchIsolation.LOG_END, max_offset=end
            ).read_bytes()
            pos, progressed = 0, False
            while len(data) - pos > 0:
                try:
                    header, batch = decode_records(data, pos)
                except ApiError:
                    break  # the slice ended inside a batch: read on from there
                pos += header.size_in_bytes
                if header.next_offset <= offset:
                    continue
                if not header.is_control:
                    for r in batch:
                        if r.offset >= offset:
                            self.coordinator.load_record(tp.partition, r.key, r.value)
                            records += 1
                            since_yield += 1
                offset = header.next_offset
                progressed = True
                if since_yield >= LOAD_YIELD_RECORDS:
                    since_yield = 0
                    await asyncio.sleep(0)
                    if self._led_epochs.get(tp.partition) != epoch:
                        return  # leadership moved on meanwhile
            if not progressed:
                break
            await asyncio.sleep(0)
        logger.info(
            "%s: read %d records up to offset %d in %.3f s",
            tp,
            records,
            offset,
            time.monotonic() - started,
        )

    def _refresh_partition_count(self) -> None:
        count = self._writer.partition_count(OFFSETS_TOPIC)
        if count != self.coordinator.num_partitions:
            self.coordinator.set_num_partitions(count)

    # --- housekeeping -------------------------------------------------------------------------

    def tick(self) -> None:
        if self._closed:
            return
        self._refresh_partition_count()
        self.process(self.coordinator.tick())

    def close(self) -> None:
        self._closed = True
        for task in self._load_tasks.values():
            task.cancel()
        self._load_tasks.clear()
        for future in self._waiters.values():
            if not future.done():
                future.cancel()
