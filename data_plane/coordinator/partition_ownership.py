"""Which ``__consumer_offsets`` partitions this broker's group coordinator serves.

A partition is owned from ``begin`` (this broker became its leader) to ``drop`` (leadership
moved); while owned it is loading until ``mark_loaded``. A group lives in partition
``partition_for(group_id, num_partitions)``; requests for a group in a partition not owned get
NOT_COORDINATOR, in one still loading COORDINATOR_LOAD_IN_PROGRESS.

Thread-safety: none; the coordinator's owner (the broker event loop) serialises access.
"""

from __future__ import annotations

from common.error_codes import ErrorCode
from data_plane.coordinator.hashing import partition_for


class PartitionOwnership:
    def __init__(self, num_partitions: int = 0) -> None:
        self.num_partitions = num_partitions
        # Owned partition -> True once loaded.
        self._loaded: dict[int, bool] = {}

    def set_num_partitions(self, num_partitions: int) -> None:
        """The partition count of ``__consumer_offsets`` (from the metadata image)."""
        if num_partitions < 0:
            raise ValueError(f"num_partitions must be >= 0, got {num_partitions}")
        self.num_partitions = num_partitions

    def partition_of(self, group_id: str) -> int:
        return partition_for(group_id, self.num_partitions)

    def begin(self, partition: int) -> None:
        """``partition`` is owned and loading."""
        self._loaded[partition] = False

    def mark_loaded(self, partition: int) -> None:
        if partition not in self._loaded:
            raise ValueError(f"partition {partition} is not owned")
        self._loaded[partition] = True

    def drop(self, partition: int) -> bool:
        """``partition`` is no longer owned; False when it was not."""
        return self._loaded.pop(partition, None) is not None

    def is_loaded(self, partition: int) -> bool:
        """Owned and loaded: its groups may be served and its writes count."""
        return self._loaded.get(partition, False)

    def any_loading(self) -> bool:
        return not all(self._loaded.values())

    def owned(self) -> dict[int, bool]:
        """Partition -> True when loaded, False while loading."""
        return dict(self._loaded)

    def error(self, group_id: str) -> int:
        """NO_ERROR when this coordinator serves ``group_id`` now."""
        if self.num_partitions <= 0:
            return ErrorCode.NOT_COORDINATOR
        loaded = self._loaded.get(self.partition_of(group_id))
        if loaded is None:
            return ErrorCode.NOT_COORDINATOR
        if not loaded:
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        return ErrorCode.NO_ERROR
