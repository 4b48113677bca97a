"""Consumer group coordinator: Kafka's classic group protocol and committed offsets.

- :mod:`.coordinator`: the sans-IO state machine (:class:`GroupCoordinator`);
- :mod:`.group`: one group's state (:class:`GroupMetadata`, :class:`GroupState`);
- :mod:`.group_metadata_records`: the ``__consumer_offsets`` key/value formats (Kafka's schemas);
- :mod:`.hashing`: ``java_string_hash`` / ``partition_for`` (which partition holds a group);
- :mod:`.runtime`: the broker-side I/O (:class:`GroupCoordinatorRuntime`).

See docs/groups.md.
"""

from __future__ import annotations

from typing import Any

from data_plane.coordinator.config import GroupCoordinatorConfig
from data_plane.coordinator.coordinator import GroupCoordinator
from data_plane.coordinator.group import GroupMetadata, GroupState, MemberMetadata
from data_plane.coordinator.hashing import java_string_hash, partition_for
from data_plane.coordinator.runtime import OFFSETS_TOPIC, GroupCoordinatorRuntime, wall_clock_ms


def coordinator_config(broker_config: Any) -> GroupCoordinatorConfig:
    """The coordinator's settings from a BrokerConfig (Kafka's property names live there)."""
    c = broker_config
    return GroupCoordinatorConfig(
        group_min_session_timeout_ms=c.group_min_session_timeout_ms,
        group_max_session_timeout_ms=c.group_max_session_timeout_ms,
        group_initial_rebalance_delay_ms=c.group_initial_rebalance_delay_ms,
        group_max_size=c.group_max_size,
        offsets_retention_ms=c.offsets_retention_minutes * 60_000,
        offsets_retention_check_interval_ms=c.offsets_retention_check_interval_ms,
        offset_metadata_max_bytes=c.offset_metadata_max_bytes,
    )


__all__ = [
    "OFFSETS_TOPIC",
    "GroupCoordinator",
    "GroupCoordinatorConfig",
    "GroupCoordinatorRuntime",
    "GroupMetadata",
    "GroupState",
    "MemberMetadata",
    "coordinator_config",
    "java_string_hash",
    "partition_for",
    "wall_clock_ms",
]
