"""GroupCoordinatorConfig: the settings the group state machine enforces.

The broker reads them under Kafka's property names (``group.*``, ``offsets.*``,
``offset.metadata.max.bytes``; see data_plane.broker.config.BrokerConfig) and hands this plain
dataclass to the coordinator, which does not depend on the broker package:
:class:`GroupCoordinatorProperties` names the broker settings it is built from.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

MAX_INT32 = 2_147_483_647
# group.coordinator.rebalance.protocols names.
CLASSIC_PROTOCOL = "classic"
CONSUMER_PROTOCOL = "consumer"


@dataclass(frozen=True, slots=True)
class GroupCoordinatorConfig:
    group_min_session_timeout_ms: int = 6000
    group_max_session_timeout_ms: int = 1_800_000
    group_initial_rebalance_delay_ms: int = 3000
    group_max_size: int = MAX_INT32
    # offsets.retention.minutes (7 days) in ms.
    offsets_retention_ms: int = 7 * 24 * 3_600_000
    offsets_retention_check_interval_ms: int = 600_000
    offset_metadata_max_bytes: int = 4096
    # KIP-848 consumer groups.
    rebalance_protocols: tuple[str, ...] = ("classic", "consumer")
    consumer_session_timeout_ms: int = 45_000
    consumer_heartbeat_interval_ms: int = 5_000
    consumer_assignors: tuple[str, ...] = ("uniform", "range")
    consumer_max_size: int = MAX_INT32


class GroupCoordinatorProperties(Protocol):
    """The broker settings (Kafka's property names, as BrokerConfig holds them) that
    ``data_plane.coordinator.coordinator_config`` turns into a :class:`GroupCoordinatorConfig`.
    Read-only here."""

    @property
    def group_min_session_timeout_ms(self) -> int: ...
    @property
    def group_max_session_timeout_ms(self) -> int: ...
    @property
    def group_initial_rebalance_delay_ms(self) -> int: ...
    @property
    def group_max_size(self) -> int: ...
    @property
    def offsets_retention_minutes(self) -> int: ...
    @property
    def offsets_retention_check_interval_ms(self) -> int: ...
    @property
    def offset_metadata_max_bytes(self) -> int: ...
    @property
    def group_coordinator_rebalance_protocols(self) -> Sequence[str]: ...
    @property
    def group_consumer_session_timeout_ms(self) -> int: ...
    @property
    def group_consumer_heartbeat_interval_ms(self) -> int: ...
    @property
    def group_consumer_assignors(self) -> Sequence[str]: ...
    @property
    def group_consumer_max_size(self) -> int: ...
