"""The coordinators: consumer groups (Kafka's classic group protocol and committed offsets)
and transactions (KIP-98).

- :mod:`.coordinator`: the group coordinator shard, sans-IO (:class:`GroupCoordinator`),
  composing over one :mod:`.shard_context` (:mod:`.partition_ownership`, :mod:`.group_store`,
  :mod:`.record_writes`):
  - :mod:`.group_metadata_manager`: group membership, with :mod:`.classic_group_manager`
    (JoinGroup, SyncGroup, Heartbeat, LeaveGroup; records in :mod:`.classic_group_records`)
    and :mod:`.consumer_group_manager` (KIP-848 heartbeat and describe);
  - :mod:`.offset_metadata_manager`: committed and transactional offsets, retention;
- :mod:`.group`: one group's state (:class:`GroupMetadata`, :class:`GroupState`);
- :mod:`.consumer_group`: a KIP-848 group's state machine;
- :mod:`.group_metadata_records`: the ``__consumer_offsets`` key/value formats (Kafka's schemas);
- :mod:`.transaction_coordinator`: the transaction state machine, sans-IO, composing
  :mod:`.transaction_state_manager` (the transactional ids led here, loading, writes, expiry);
  its settings and outputs are :mod:`.transaction_outputs`;
- :mod:`.transaction_state`: a transactional id's states, legal transitions and metadata;
- :mod:`.transaction_log_records`: the ``__transaction_state`` key/value formats;
- :mod:`.record_schemas`: the versioned-record codec both topics' formats use;
- :mod:`.write_errors`: what a client is told when a coordinator's write fails;
- :mod:`.runtime_base`, :mod:`.partition_loader`: what both runtimes share (waiters, writes,
  loading a partition on leadership);
- :mod:`.transaction_runtime`: the broker-side I/O of the transaction coordinator;
- :mod:`.hashing`: ``java_string_hash`` / ``partition_for`` (which partition holds a group or a
  transactional id);
- :mod:`.runtime`: the broker-side I/O of the group coordinator (:class:`GroupCoordinatorRuntime`).

See docs/groups.md.
"""

from __future__ import annotations

from data_plane.coordinator.config import GroupCoordinatorConfig, GroupCoordinatorProperties
from data_plane.coordinator.coordinator import GroupCoordinator
from data_plane.coordinator.group import GroupMetadata, GroupState, MemberMetadata
from data_plane.coordinator.hashing import java_string_hash, partition_for
from data_plane.coordinator.runtime import OFFSETS_TOPIC, GroupCoordinatorRuntime, wall_clock_ms


def coordinator_config(broker_config: GroupCoordinatorProperties) -> GroupCoordinatorConfig:
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
        rebalance_protocols=tuple(c.group_coordinator_rebalance_protocols),
        consumer_session_timeout_ms=c.group_consumer_session_timeout_ms,
        consumer_heartbeat_interval_ms=c.group_consumer_heartbeat_interval_ms,
        consumer_assignors=tuple(c.group_consumer_assignors) or ("uniform",),
        consumer_max_size=c.group_consumer_max_size,
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
