"""AlterClientQuotas (49): set or remove client quotas (``kafka-configs --alter --entity-type
users|clients --add-config producer_byte_rate=...``), forwarded to the active controller
(metadata.security_control), which checks the quota keys and values and commits the changes to
the metadata log; answered once this broker's image shows them (bounded by
request.timeout.ms), so a DescribeClientQuotas to this broker right after sees them. One
result per entry, in request order, naming the entity as the request did; ``validate_only``
checks every entry and changes nothing.

An entity is checked here, as Kafka's controller checks it, before anything is forwarded:
INVALID_REQUEST for an empty entity, a repeated entity type, an empty name, an entity type
other than ``user`` and ``client-id`` (``ip`` connection-rate quotas are not kept by kraftlog).
The controller answers INVALID_REQUEST for an unknown quota key (producer_byte_rate,
consumer_byte_rate and request_percentage are known), a key twice in one entry, a value not
above zero and a fractional byte rate. Needs AlterConfigs on the cluster (:func:`authorize`)."""

from __future__ import annotations

from typing import Any

from common.error_codes import ErrorCode
from common.protocol.messages.alter_client_quotas import (
    AlterClientQuotasRequest,
    AlterClientQuotasRequestEntity,
    AlterClientQuotasResponse,
    AlterClientQuotasResponseEntity,
    AlterClientQuotasResponseEntry,
)
from common.security.acl import AclOperation, ResourceType
from common.security.quota import DEFAULT_ENTITY, ENTITY_CLIENT_ID, ENTITY_IP, ENTITY_USER
from data_plane.broker.apis import Body, KafkaApis, Request
from data_plane.broker.handlers.forwarding import forward
from data_plane.security.request_authz import CLUSTER_DENIED, RequestAuthorizer, Session, Verdict
from metadata import security_messages as sm
from metadata.client import ControllerError
from metadata.image import MetadataImage

# Kafka's message of CLUSTER_AUTHORIZATION_FAILED, which its denied answer carries per entry.
CLUSTER_DENIED_MESSAGE = "Cluster authorization failed."


class EntityError(Exception):
    """An entity Kafka's controller refuses (INVALID_REQUEST)."""


def quota_entity(entity: list[AlterClientQuotasRequestEntity]) -> sm.ClientQuotaEntity:
    """``entity`` as the controller's (user, client id); raises :class:`EntityError`."""
    if not entity:
        raise EntityError("Invalid empty client quota entity")
    names: dict[str, str] = {}
    for e in entity:
        if e.entity_type in names:
            raise EntityError(
                f"Invalid client quota entity, duplicate entity entry {e.entity_type}"
            )
        if e.entity_type == ENTITY_IP:
            raise EntityError("ip quotas (connection_creation_rate) are not supported")
        if e.entity_type not in (ENTITY_USER, ENTITY_CLIENT_ID):
            raise EntityError(f"Unhandled client quota entity type: {e.entity_type}")
        if e.entity_name == "":
            raise EntityError(f"Empty {e.entity_type} not supported")
        names[e.entity_type] = DEFAULT_ENTITY if e.entity_name is None else e.entity_name
    return sm.ClientQuotaEntity(names.get(ENTITY_USER), names.get(ENTITY_CLIENT_ID))


def _result(
    entity: list[AlterClientQuotasRequestEntity], code: int, message: str | None
) -> AlterClientQuotasResponseEntry:
    return AlterClientQuotasResponseEntry(
        error_code=code,
        error_message=message,
        entity=[AlterClientQuotasResponseEntity(e.entity_type, e.entity_name) for e in entity],
    )


def _applied(
    alterations: list[sm.ClientQuotaAlteration],
) -> dict[tuple[sm.ClientQuotaEntity, str], float | None]:
    """(entity, key) -> the value this broker's image must come to hold (None: removed)."""
    out: dict[tuple[sm.ClientQuotaEntity, str], float | None] = {}
    for alteration in alterations:
        for op in alteration.ops:
            out[(alteration.entity, op.key)] = None if op.remove else op.value
    return out


def _shows(image: MetadataImage, applied: dict[tuple[sm.ClientQuotaEntity, str], Any]) -> bool:
    quotas = image.security.quotas
    for (entity, key), value in applied.items():
        values = quotas.get((entity.user, entity.client_id)) or {}
        if values.get(key) != value:
            return False
    return True


async def _handle(apis: KafkaApis, request: Request) -> AlterClientQuotasResponse:
    body = request.body
    if not isinstance(body, AlterClientQuotasRequest):
        raise TypeError(f"AlterClientQuotas handler given {type(body).__name__}")
    results: list[AlterClientQuotasResponseEntry | None] = []
    forwarded: list[tuple[int, sm.ClientQuotaAlteration]] = []
    for entry in body.entries:
        try:
            entity = quota_entity(entry.entity)
        except EntityError as e:
            results.append(_result(entry.entity, ErrorCode.INVALID_REQUEST, str(e)))
            continue
        ops = [sm.ClientQuotaOp(op.key, op.value, op.remove) for op in entry.ops]
        forwarded.append((len(results), sm.ClientQuotaAlteration(entity, ops)))
        results.append(None)
    if forwarded:
        alterations = [a for _, a in forwarded]
        try:
            answer = await forward(
                apis,
                "call",
                "AlterClientQuotas",
                sm.AlterClientQuotasRequest(alterations, body.validate_only),
                sm.AlterClientQuotasResponse,
            )
            codes = [(r.error_code, r.error_message) for r in answer.entries]
        except ControllerError as e:
            codes = [(e.error_code, e.message)] * len(forwarded)
        accepted = []
        for (index, alteration), (code, message) in zip(forwarded, codes, strict=True):
            results[index] = _result(body.entries[index].entity, code, message)
            if code == ErrorCode.NO_ERROR:
                accepted.append(alteration)
        applied = _applied(accepted)
        if applied and not body.validate_only:
            await apis.wait_for_image(
                lambda img: _shows(img, applied), apis.config.request_timeout_ms
            )
    return AlterClientQuotasResponse(
        throttle_time_ms=0, entries=[r for r in results if r is not None]
    )


def handle(apis: KafkaApis, request: Request) -> Any:
    return _handle(apis, request)


def authorize(authz: RequestAuthorizer, s: Session, version: int, body: Body) -> Verdict:
    """AlterConfigs on the cluster (refused: every entry CLUSTER_AUTHORIZATION_FAILED)."""
    if not isinstance(body, AlterClientQuotasRequest):
        raise TypeError(f"AlterClientQuotas rule given {type(body).__name__}")
    if authz.cluster(s, AclOperation.ALTER_CONFIGS):
        return Verdict(body)
    denied = AlterClientQuotasResponse(
        throttle_time_ms=0,
        entries=[_result(e.entity, CLUSTER_DENIED, CLUSTER_DENIED_MESSAGE) for e in body.entries],
    )
    return Verdict.refused(body, denied, ResourceType.CLUSTER)
