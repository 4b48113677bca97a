"""What the transaction coordinator's calls return (plain values, no wire format): results
for parked requests, ``__transaction_state`` writes and end-marker requests; and its
settings.

Pure data; thread-safe (the outputs object is filled by one call, then read by its caller).
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any

from data_plane.coordinator.messages import RecordWrite

TopicPartitionKey = tuple[str, int]


@dataclass(frozen=True, slots=True)
class TransactionCoordinatorConfig:
    """Kafka's ``transaction.*`` and ``transactional.id.*`` settings."""

    # transaction.max.timeout.ms: the largest transaction.timeout.ms a producer may ask for.
    transaction_max_timeout_ms: int = 900_000
    # transactional.id.expiration.ms: an idle transactional id is forgotten after this.
    transactional_id_expiration_ms: int = 604_800_000
    # transaction.abort.timed.out.transaction.cleanup.interval.ms
    abort_timed_out_interval_ms: int = 10_000
    # transaction.remove.expired.transaction.cleanup.interval.ms
    remove_expired_interval_ms: int = 3_600_000


@dataclass(frozen=True, slots=True)
class InitProducerIdResult:
    error_code: int
    producer_id: int = -1
    producer_epoch: int = -1


@dataclass(frozen=True, slots=True)
class MarkerRequest:
    """Write an end marker for ``producer_id``/``producer_epoch`` to every partition in
    ``partitions`` with ``coordinator_epoch``, then call the coordinator's
    ``complete_markers``."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    committed: bool
    coordinator_epoch: int
    partitions: tuple[TopicPartitionKey, ...]


@dataclass(slots=True)
class TxnCoordinatorOutputs:
    responses: list[tuple[Hashable, Any]] = field(default_factory=list)
    writes: list[RecordWrite] = field(default_factory=list)
    markers: list[MarkerRequest] = field(default_factory=list)

    def respond(self, waiter: Hashable, result: Any) -> None:
        self.responses.append((waiter, result))

    def extend(self, other: TxnCoordinatorOutputs) -> None:
        self.responses.extend(other.responses)
        self.writes.extend(other.writes)
        self.markers.extend(other.markers)
