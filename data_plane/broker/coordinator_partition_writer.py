"""CoordinatorPartitionWriter: the broker's implementation of the coordinators'
:class:`~data_plane.coordinator.partition_writer.PartitionWriter`: appends go through the normal
produce path (``ReplicaManager.append_records``) and wait in the produce purgatory as a
:class:`DelayedProduce` until the high watermark passes them, exactly like an acks=all Produce.

Thread-safety: none; everything runs on the broker's event loop.
"""

from __future__ import annotations

from collections.abc import Callable

from common.error_codes import ErrorCode
from common.topic_partition import TopicPartition
from data_plane.broker.delayed import DelayedProduce
from data_plane.broker.purgatory import DelayedOperationPurgatory
from data_plane.broker.replica_manager import ReplicaManager
from data_plane.storage import AppendOrigin, Log


class CoordinatorPartitionWriter:
    def __init__(
        self,
        replica_manager: ReplicaManager,
        produce_purgatory: DelayedOperationPurgatory[TopicPartition],
    ) -> None:
        self._rm = replica_manager
        self._purgatory = produce_purgatory

    def append(
        self,
        tp: TopicPartition,
        batch: bytearray,
        timeout_ms: int,
        on_replicated: Callable[[int], None],
    ) -> int:
        result = self._rm.append_records(tp, batch, -1, AppendOrigin.COORDINATOR)
        if result.error_code != ErrorCode.NO_ERROR:
            return int(result.error_code)

        def on_done(outcome: dict[TopicPartition, int]) -> None:
            on_replicated(outcome.get(tp, ErrorCode.REQUEST_TIMED_OUT))

        op = DelayedProduce(timeout_ms, {tp: result.last_offset + 1}, self._rm, on_done)
        self._purgatory.try_complete_else_watch(op, [tp])
        return int(ErrorCode.NO_ERROR)

    def leader_epoch(self, tp: TopicPartition) -> int | None:
        part = self._rm.get_partition(tp)
        if part is None or not part.is_leader:
            return None
        return int(part.leader_epoch)

    def local_log(self, tp: TopicPartition) -> Log | None:
        part = self._rm.get_partition(tp)
        return part.log if part is not None else None

    def partition_count(self, topic: str) -> int:
        image = self._rm.image.topic(topic)
        return len(image.partitions) if image is not None else 0
