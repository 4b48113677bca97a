"""GroupCoordinatorRuntime: the I/O around the sans-IO GroupCoordinator on a broker.

- Requests: each handler awaits one call (``join_group`` ...). The runtime (through
  :class:`~data_plane.coordinator.runtime_base.CoordinatorRuntimeBase`) gives the state
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

import logging
import time
from collections.abc import Callable, Mapping
from typing import TypeVar

from common.control_records import decode_end_txn_marker
from common.topic_partition import TopicPartition
from data_plane.coordinator.consumer_assignors import AssignorTopic
from data_plane.coordinator.coordinator import GroupCoordinator
from data_plane.coordinator.messages import (
    ConsumerHeartbeatRequest,
    ConsumerHeartbeatResult,
    CoordinatorOutputs,
    DeleteGroupsResult,
    JoinGroupRequest,
    JoinGroupResult,
    OffsetCommitRequest,
    OffsetCommitResult,
    OffsetDeleteResult,
    SyncGroupRequest,
    SyncGroupResult,
    TxnOffsetCommitRequest,
)
from data_plane.coordinator.partition_loader import load_partition
from data_plane.coordinator.partition_writer import PartitionWriter
from data_plane.coordinator.runtime_base import CoordinatorRuntimeBase
from data_plane.storage import DecodedRecord, RecordBatchHeader
from metadata.topics import CONSUMER_OFFSETS_TOPIC

logger = logging.getLogger(__name__)

OFFSETS_TOPIC = CONSUMER_OFFSETS_TOPIC
T = TypeVar("T")


def wall_clock_ms() -> int:
    """Epoch milliseconds: commit timestamps are persisted and compared across brokers."""
    return time.time_ns() // 1_000_000


class GroupCoordinatorRuntime(CoordinatorRuntimeBase[CoordinatorOutputs]):
    def __init__(
        self,
        coordinator: GroupCoordinator,
        writer: PartitionWriter,
        *,
        commit_timeout_ms: int,
        load_buffer_bytes: int,
        wall_clock: Callable[[], int] = wall_clock_ms,
    ) -> None:
        super().__init__(
            writer, OFFSETS_TOPIC, write_timeout_ms=commit_timeout_ms, wall_clock=wall_clock
        )
        self.coordinator = coordinator
        self._load_buffer_bytes = load_buffer_bytes

    # --- requests -----------------------------------------------------------------------------

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

    async def txn_commit_offsets(self, req: TxnOffsetCommitRequest) -> OffsetCommitResult:
        result: OffsetCommitResult = await self._call(
            lambda w: self.coordinator.txn_commit_offsets(w, req)
        )
        return result

    async def consumer_group_heartbeat(
        self, req: ConsumerHeartbeatRequest, topics: Mapping[str, AssignorTopic]
    ) -> ConsumerHeartbeatResult:
        result: ConsumerHeartbeatResult = await self._call(
            lambda w: self.coordinator.consumer_group_heartbeat(w, req, topics)
        )
        return result

    def complete_transaction(self, partition: int, producer_id: int, committed: bool) -> None:
        """An end marker of ``producer_id`` was written to ``__consumer_offsets-<partition>``
        (the WriteTxnMarkers handler calls this once it is replicated)."""
        self.process(self.coordinator.complete_transaction(partition, producer_id, committed))

    async def delete_groups(self, group_ids: list[str]) -> DeleteGroupsResult:
        result: DeleteGroupsResult = await self._call(
            lambda w: self.coordinator.delete_groups(w, group_ids)
        )
        return result

    async def delete_offsets(
        self, group_id: str, partitions: list[tuple[str, int]]
    ) -> OffsetDeleteResult:
        result: OffsetDeleteResult = await self._call(
            lambda w: self.coordinator.delete_offsets(w, group_id, partitions)
        )
        return result

    def leave_group(self, group_id: str, member_id: str) -> int:
        error, out = self.coordinator.leave_group(group_id, member_id)
        self.process(out)
        return error

    def leave_group_members(
        self, group_id: str, members: list[tuple[str, str | None]]
    ) -> tuple[int, list[int]]:
        error, errors, out = self.coordinator.leave_group_members(group_id, members)
        self.process(out)
        return error, errors

    def process(self, out: CoordinatorOutputs) -> None:
        """Resolve the futures ``out`` answers and start its writes."""
        self._resolve(out.responses)
        for write in out.writes:
            self._append(write)

    # --- writes -------------------------------------------------------------------------------

    def _complete_write(self, write_id: int, error_code: int) -> CoordinatorOutputs:
        return self.coordinator.complete_write(write_id, error_code)

    # --- leadership and loading ---------------------------------------------------------------

    def _begin_loading(self, partition: int, epoch: int) -> CoordinatorOutputs:
        return self.coordinator.begin_loading(partition)

    def _complete_loading(self, partition: int) -> CoordinatorOutputs:
        return self.coordinator.complete_loading(partition)

    def _unload(self, partition: int) -> CoordinatorOutputs:
        return self.coordinator.unload(partition)

    async def _read_partition(self, tp: TopicPartition, epoch: int) -> None:
        log_ = self._writer.local_log(tp)
        if log_ is None:
            return
        started = time.monotonic()
        p = tp.partition
        coordinator = self.coordinator

        def apply(header: RecordBatchHeader, batch: list[DecodedRecord], offset: int) -> int:
            if header.is_control:
                marker = decode_end_txn_marker(batch[0].key, batch[0].value) if batch else None
                if marker is not None:
                    coordinator.load_txn_marker(p, header.producer_id, marker.committed)
                return 0
            n = 0
            for r in batch:
                if r.offset < offset:
                    continue
                if header.is_transactional:
                    coordinator.load_txn_record(p, header.producer_id, r.key, r.value)
                else:
                    coordinator.load_record(p, r.key, r.value)
                n += 1
            return n

        records, offset = await load_partition(
            log_, self._load_buffer_bytes, self._still_leading(p, epoch), apply
        )
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
