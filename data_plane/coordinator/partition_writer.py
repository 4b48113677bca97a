"""PartitionWriter: what a coordinator runtime needs from the broker that hosts it (Kafka's
CoordinatorRuntime ``PartitionWriter``), so that the coordinator package never imports the
broker: the broker implements this interface over its replica manager and produce purgatory
(``data_plane.broker.coordinator_partition_writer``) and hands it to the runtime.

Thread-safety: every method is called on the broker's event loop, and the implementation calls
``on_replicated`` there too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from common.topic_partition import TopicPartition
from data_plane.storage import Log


class PartitionWriter(Protocol):
    def append(
        self,
        tp: TopicPartition,
        batch: bytearray,
        timeout_ms: int,
        on_replicated: Callable[[int], None],
    ) -> int:
        """Append one RecordBatch to ``tp``, which this broker leads, as an acks=all produce.
        Returns the error code of the append itself: not NO_ERROR means the batch was not
        written and ``on_replicated`` is never called. Otherwise ``on_replicated(error_code)``
        is called exactly once: NO_ERROR when the high watermark passed the batch,
        REQUEST_TIMED_OUT after ``timeout_ms``, or the error that stopped it (leadership lost).
        It may be called from inside this method or any later event-loop callback."""
        ...

    def leader_epoch(self, tp: TopicPartition) -> int | None:
        """The leader epoch of ``tp`` if this broker leads it, else None."""
        ...

    def local_log(self, tp: TopicPartition) -> Log | None:
        """This broker's log of ``tp`` (for loading the coordinator's state), if it has one."""
        ...

    def partition_count(self, topic: str) -> int:
        """How many partitions ``topic`` has in the broker's metadata image (0: none yet)."""
        ...
