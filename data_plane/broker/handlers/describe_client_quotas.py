"""DescribeClientQuotas (48): the client quotas whose entity matches a filter
(``kafka-configs --describe --entity-type users|clients``), from this broker's metadata image:
the quotas its own quota manager enforces. One entry per entity, sorted by user then client
id; an entity names its ``user`` and ``client-id`` (a null name is the default entity).

The filter, as Kafka's ClientQuotasImage reads it (:func:`common.security.quota.quota_filter`):
one component per entity type, matching an exact name (match_type 0), the default entity (1,
match null) or any named or default entity of that type (2, match null); ``strict`` leaves out
entities with a type the filter does not name. Errors, as Kafka: INVALID_REQUEST for an empty
or repeated entity type, an unknown match type, a match string where none belongs (or none
where one does) and an ``ip`` component beside a user or client-id one; UNSUPPORTED_VERSION
for an entity type other than ``user``, ``client-id`` and ``ip``. An ``ip`` filter is valid
and matches nothing: kraftlog keeps no ``ip`` quotas. An error answers a null ``entries``.
Needs DescribeConfigs on the cluster (:func:`authorize`).
"""

from __future__ import annotations

from common.error_codes import ErrorCode
from common.protocol.messages.describe_client_quotas import (
    DescribeClientQuotasRequest,
    DescribeClientQuotasResponse,
    DescribeClientQuotasResponseEntity,
    DescribeClientQuotasResponseEntry,
    DescribeClientQuotasResponseValue,
)
from common.security.acl import AclOperation, ResourceType
from common.security.quota import FilterError, quota_filter, wire_entity
from data_plane.broker.apis import Body, KafkaApis, Request
from data_plane.security.request_authz import CLUSTER_DENIED, RequestAuthorizer, Session, Verdict


def _error(code: int, message: str | None) -> DescribeClientQuotasResponse:
    return DescribeClientQuotasResponse(
        throttle_time_ms=0, error_code=code, error_message=message, entries=None
    )


def handle(apis: KafkaApis, request: Request) -> DescribeClientQuotasResponse:
    body = request.body
    if not isinstance(body, DescribeClientQuotasRequest):
        raise TypeError(f"DescribeClientQuotas handler given {type(body).__name__}")
    try:
        flt = quota_filter(
            [(c.entity_type, c.match_type, c.match) for c in body.components], body.strict
        )
    except FilterError as e:
        return _error(e.code, e.message)
    quotas = apis.image.security.quotas
    entries = []
    for entity in sorted(quotas, key=lambda e: (e[0] or "", e[1] or "")):
        pairs = wire_entity(entity)
        if not flt.matches(dict(pairs)):
            continue
        entries.append(
            DescribeClientQuotasResponseEntry(
                entity=[DescribeClientQuotasResponseEntity(t, n) for t, n in pairs],
                values=[
                    DescribeClientQuotasResponseValue(key, float(value))
                    for key, value in quotas[entity].items()
                ],
            )
        )
    return DescribeClientQuotasResponse(
        throttle_time_ms=0, error_code=ErrorCode.NO_ERROR, error_message=None, entries=entries
    )


def authorize(authz: RequestAuthorizer, s: Session, version: int, body: Body) -> Verdict:
    """DescribeConfigs on the cluster (refused: CLUSTER_AUTHORIZATION_FAILED, null entries)."""
    if authz.cluster(s, AclOperation.DESCRIBE_CONFIGS):
        return Verdict(body)
    return Verdict.refused(body, _error(CLUSTER_DENIED, None), ResourceType.CLUSTER)
