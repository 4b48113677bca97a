"""Client quota administration over the Kafka protocol (used by :class:`Admin`), as Kafka's
AdminClient and kafka-configs.sh do it: DescribeClientQuotas and AlterClientQuotas to any
broker.

An entity (:class:`ClientQuotaEntity`) is Kafka's map of entity type (``user``,
``client-id``, ``ip``) to name, a None name being the type's default entity. A filter is a
list of :class:`ClientQuotaFilterComponent` (exact name, default entity, or any entity of a
type) and ``strict`` (leave out entities with other types). Without DescribeConfigs (or
AlterConfigs) on the cluster a broker answers CLUSTER_AUTHORIZATION_FAILED; that and a refused
filter or entry raise :class:`KafkaError`.

Functions block on the calling thread up to ``timeout_ms``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from common.error_codes import ErrorCode
from common.protocol.api_keys import ApiKey
from common.protocol.messages.alter_client_quotas import (
    AlterClientQuotasRequest,
    AlterClientQuotasRequestEntity,
    AlterClientQuotasRequestEntry,
    AlterClientQuotasRequestOp,
    AlterClientQuotasResponse,
)
from common.protocol.messages.describe_client_quotas import (
    DescribeClientQuotasRequest,
    DescribeClientQuotasRequestComponent,
    DescribeClientQuotasResponse,
)
from common.security.quota import MATCH_TYPE_DEFAULT, MATCH_TYPE_EXACT, MATCH_TYPE_SPECIFIED
from kraftlog_client.errors import KafkaError
from kraftlog_client.network_client import NetworkClient


@dataclass(frozen=True, slots=True)
class ClientQuotaEntity:
    """Kafka's ClientQuotaEntity: (entity type, name) pairs sorted by type, each type once; a
    None name is the default entity of its type. Hashable, so it keys describe's answer."""

    entries: tuple[tuple[str, str | None], ...]

    @staticmethod
    def of(entries: Mapping[str, str | None]) -> ClientQuotaEntity:
        """``ClientQuotaEntity.of({"user": "alice", "client-id": None})``."""
        return ClientQuotaEntity(tuple(sorted(entries.items(), key=lambda kv: kv[0])))

    def as_dict(self) -> dict[str, str | None]:
        return dict(self.entries)


@dataclass(frozen=True, slots=True)
class ClientQuotaFilterComponent:
    """One entity type of a describe filter (Kafka's ClientQuotaFilterComponent)."""

    entity_type: str
    match_type: int
    match: str | None = None

    @staticmethod
    def of_entity(entity_type: str, name: str) -> ClientQuotaFilterComponent:
        """Entities whose ``entity_type`` is named ``name``."""
        return ClientQuotaFilterComponent(entity_type, MATCH_TYPE_EXACT, name)

    @staticmethod
    def of_default_entity(entity_type: str) -> ClientQuotaFilterComponent:
        """Entities whose ``entity_type`` is the default entity."""
        return ClientQuotaFilterComponent(entity_type, MATCH_TYPE_DEFAULT)

    @staticmethod
    def of_entity_type(entity_type: str) -> ClientQuotaFilterComponent:
        """Entities with any (named or default) ``entity_type``."""
        return ClientQuotaFilterComponent(entity_type, MATCH_TYPE_SPECIFIED)


@dataclass(frozen=True, slots=True)
class ClientQuotaOp:
    """Set quota ``key`` to ``value``, or remove it (``value`` None)."""

    key: str
    value: float | None


@dataclass(frozen=True, slots=True)
class ClientQuotaAlteration:
    entity: ClientQuotaEntity
    ops: tuple[ClientQuotaOp, ...]


def describe_client_quotas(
    client: NetworkClient,
    components: Sequence[ClientQuotaFilterComponent],
    strict: bool,
    timeout_ms: float,
) -> dict[ClientQuotaEntity, dict[str, float]]:
    """The quotas of every entity matching the filter: entity -> quota key -> value."""
    request = DescribeClientQuotasRequest(
        components=[
            DescribeClientQuotasRequestComponent(c.entity_type, c.match_type, c.match)
            for c in components
        ],
        strict=strict,
    )
    response = client.request(None, ApiKey.DESCRIBE_CLIENT_QUOTAS, request, timeout_ms)
    if not isinstance(response, DescribeClientQuotasResponse):
        raise TypeError(f"DescribeClientQuotas answered {type(response).__name__}")
    if response.error_code != ErrorCode.NO_ERROR:
        raise KafkaError(response.error_code, response.error_message or "")
    out: dict[ClientQuotaEntity, dict[str, float]] = {}
    for entry in response.entries or ():
        entity = ClientQuotaEntity.of({e.entity_type: e.entity_name for e in entry.entity})
        out[entity] = {v.key: v.value for v in entry.values}
    return out


def alter_client_quotas(
    client: NetworkClient,
    alterations: Sequence[ClientQuotaAlteration],
    validate_only: bool,
    timeout_ms: float,
) -> None:
    """Apply ``alterations`` (only check them with ``validate_only``). Raises the KafkaError
    of the first entry that failed, after the others were applied."""
    request = AlterClientQuotasRequest(
        entries=[
            AlterClientQuotasRequestEntry(
                entity=[AlterClientQuotasRequestEntity(t, n) for t, n in a.entity.entries],
                ops=[
                    AlterClientQuotasRequestOp(
                        op.key, 0.0 if op.value is None else op.value, op.value is None
                    )
                    for op in a.ops
                ],
            )
            for a in alterations
        ],
        validate_only=validate_only,
    )
    response = client.request(None, ApiKey.ALTER_CLIENT_QUOTAS, request, timeout_ms)
    if not isinstance(response, AlterClientQuotasResponse):
        raise TypeError(f"AlterClientQuotas answered {type(response).__name__}")
    for entry in response.entries:
        if entry.error_code != ErrorCode.NO_ERROR:
            raise KafkaError(entry.error_code, entry.error_message or "")
