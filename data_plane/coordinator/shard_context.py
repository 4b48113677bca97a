"""What the parts of a group coordinator shard share: configuration, the injected clock, the
partitions it owns, its groups and timers, and its pending writes.

:class:`~data_plane.coordinator.coordinator.GroupCoordinator` (the shard) makes one and hands
it to each part (:class:`~data_plane.coordinator.group_metadata_manager.GroupMetadataManager`,
:class:`~data_plane.coordinator.offset_metadata_manager.OffsetMetadataManager`); a test makes
one to drive a part alone. The two parts never hold each other: they meet in the groups of
``groups`` and in the shard's methods that compose them.

Thread-safety: none; the coordinator's owner (the broker event loop) serialises access.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

from data_plane.coordinator.config import GroupCoordinatorConfig
from data_plane.coordinator.group_store import GroupStore
from data_plane.coordinator.partition_ownership import PartitionOwnership
from data_plane.coordinator.record_writes import RecordWrites

Clock = Callable[[], int]


def random_member_id(prefix: str) -> str:
    """Kafka's member ids: the client's id (or group.instance.id), a dash, a random UUID."""
    return f"{prefix}-{uuid.uuid4()}"


@dataclass(slots=True)
class ShardContext:
    config: GroupCoordinatorConfig
    clock_ms: Clock
    ownership: PartitionOwnership = field(default_factory=PartitionOwnership)
    groups: GroupStore = field(default_factory=GroupStore)
    writes: RecordWrites = field(default_factory=RecordWrites)
    # Member ids handed to new members, from a prefix (injected so tests get stable ids).
    new_member_id: Callable[[str], str] = random_member_id
