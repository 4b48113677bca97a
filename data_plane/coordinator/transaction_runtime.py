"""TransactionCoordinatorRuntime: the I/O around the sans-IO TransactionCoordinator on a
broker.

- Requests: each handler awaits one call (``init_producer_id`` ...); the state machine gets
  an int waiter token and the runtime resolves the asyncio future its outputs name. An
  InitProducerId that needs a new producer id gets one from the controller's blocks first
  (``allocate_producer_id``).
- Writes: every :class:`RecordWrite` becomes one RecordBatch appended to
  ``__transaction_state-<p>`` through the broker's :class:`PartitionWriter` (acks=all, bounded
  by ``transaction.state.log`` write timeout); the outcome goes back to the machine.
- Markers: every :class:`MarkerRequest` goes to the :class:`MarkerSender` the broker provides
  (WriteTxnMarkers to each partition's leader, retried until written or the topic is gone);
  when it reports the markers written, the machine writes CompleteCommit/CompleteAbort.
- Leadership: when this broker becomes leader of a ``__transaction_state`` partition (or its
  leader epoch, the coordinator epoch, changes) the partition is read from its log start to
  its log end into the machine (COORDINATOR_LOAD_IN_PROGRESS meanwhile), and the prepared
  transactions it holds are completed; on losing leadership it is unloaded.
- Timers: :meth:`tick` (the broker's housekeeping tick) runs the machine's timeouts.

Thread-safety: none; everything runs on the broker's event loop.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Protocol

from common.topic_partition import TopicPartition
from data_plane.coordinator.partition_loader import load_partition
from data_plane.coordinator.partition_writer import PartitionWriter
from data_plane.coordinator.runtime_base import CoordinatorRuntimeBase
from data_plane.coordinator.transaction_coordinator import (
    InitProducerIdResult,
    MarkerRequest,
    TransactionCoordinator,
    TxnCoordinatorOutputs,
)
from data_plane.storage import DecodedRecord, RecordBatchHeader
from metadata.topics import TRANSACTION_STATE_TOPIC

logger = logging.getLogger(__name__)

# Bytes read per step while loading a partition.
LOAD_BUFFER_BYTES = 5 * 1024 * 1024


class MarkerSender(Protocol):
    def send(
        self,
        request: MarkerRequest,
        on_written: Callable[[], None],
        still_needed: Callable[[], bool],
    ) -> None:
        """Write ``request``'s marker to every partition it names (each partition's current
        leader, retrying through leader changes; a partition whose topic was deleted counts
        as done) and then call ``on_written`` once, on the event loop. Stops without calling
        it once ``still_needed()`` is false or the sender is closed."""
        ...


class TransactionCoordinatorRuntime(CoordinatorRuntimeBase[TxnCoordinatorOutputs]):
    def __init__(
        self,
        coordinator: TransactionCoordinator,
        writer: PartitionWriter,
        markers: MarkerSender,
        allocate_producer_id: Callable[[], Awaitable[int]],
        *,
        write_timeout_ms: int,
        wall_clock: Callable[[], int],
    ) -> None:
        super().__init__(
            writer,
            TRANSACTION_STATE_TOPIC,
            write_timeout_ms=write_timeout_ms,
            wall_clock=wall_clock,
        )
        self.coordinator = coordinator
        self._markers = markers
        self._allocate_producer_id = allocate_producer_id
        # Seconds the last completed partition load took (a metric), None before any.
        self.last_load_seconds: float | None = None

    # --- requests -----------------------------------------------------------------------------

    async def init_producer_id(
        self,
        transactional_id: str,
        transaction_timeout_ms: int,
        expected_producer_id: int = -1,
        expected_producer_epoch: int = -1,
    ) -> InitProducerIdResult:
        """Raises :class:`ApiError` (from the producer id blocks) when no id is available.
        ``expected_*``: the producer's own id and epoch (InitProducerId v3+)."""
        self._refresh_partition_count()
        new_pid = None
        if self.coordinator.needs_producer_id(transactional_id):
            new_pid = await self._allocate_producer_id()
        result: InitProducerIdResult = await self._call(
            lambda w: self.coordinator.init_producer_id(
                w,
                transactional_id,
                transaction_timeout_ms,
                new_pid,
                expected_producer_id,
                expected_producer_epoch,
            )
        )
        return result

    async def add_partitions(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: list[tuple[str, int]],
    ) -> int:
        code: int = await self._call(
            lambda w: self.coordinator.add_partitions(
                w, transactional_id, producer_id, producer_epoch, partitions
            )
        )
        return code

    async def end_txn(
        self, transactional_id: str, producer_id: int, producer_epoch: int, committed: bool
    ) -> int:
        code: int = await self._call(
            lambda w: self.coordinator.end_txn(
                w, transactional_id, producer_id, producer_epoch, committed
            )
        )
        return code

    def process(self, out: TxnCoordinatorOutputs) -> None:
        """Resolve the futures ``out`` answers, start its writes and its markers."""
        self._resolve(out.responses)
        for write in out.writes:
            self._append(write)
        for request in out.markers:
            self._send_markers(request)

    # --- writes and markers -------------------------------------------------------------------

    def _complete_write(self, write_id: int, error_code: int) -> TxnCoordinatorOutputs:
        return self.coordinator.complete_write(write_id, error_code)

    def _send_markers(self, request: MarkerRequest) -> None:
        loop = asyncio.get_running_loop()

        def written() -> None:
            loop.call_soon(self._markers_written, request)

        self._markers.send(request, written, lambda: self.coordinator.markers_pending(request))

    def _markers_written(self, request: MarkerRequest) -> None:
        if self._closed:
            return
        self.process(
            self.coordinator.complete_markers(
                request.transactional_id,
                request.producer_id,
                request.producer_epoch,
                request.coordinator_epoch,
            )
        )

    # --- leadership and loading ---------------------------------------------------------------

    def _begin_loading(self, partition: int, epoch: int) -> TxnCoordinatorOutputs:
        return self.coordinator.begin_loading(partition, epoch)

    def _complete_loading(self, partition: int) -> TxnCoordinatorOutputs:
        return self.coordinator.complete_loading(partition)

    def _unload(self, partition: int) -> TxnCoordinatorOutputs:
        return self.coordinator.unload(partition)

    async def _read_partition(self, tp: TopicPartition, epoch: int) -> None:
        log_ = self._writer.local_log(tp)
        if log_ is None:
            return
        p = tp.partition
        coordinator = self.coordinator
        started = time.monotonic()

        def apply(header: RecordBatchHeader, batch: list[DecodedRecord], offset: int) -> int:
            if header.is_control:
                return 0
            n = 0
            for r in batch:
                if r.offset >= offset:
                    coordinator.load_record(p, r.key, r.value)
                    n += 1
            return n

        records, offset = await load_partition(
            log_, LOAD_BUFFER_BYTES, self._still_leading(p, epoch), apply
        )
        self.last_load_seconds = time.monotonic() - started
        logger.info(
            "%s: read %d records up to offset %d in %.3f s",
            tp,
            records,
            offset,
            self.last_load_seconds,
        )

    def _refresh_partition_count(self) -> None:
        count = self._writer.partition_count(TRANSACTION_STATE_TOPIC)
        if count and count != self.coordinator.num_partitions:
            self.coordinator.set_num_partitions(count)

    # --- housekeeping -------------------------------------------------------------------------

    def tick(self) -> None:
        if self._closed:
            return
        self.process(self.coordinator.tick())
