"""Client quota calls on the controllers' control plane with :class:`kraftlog_client.Admin`'s
signatures, so ``kraftlog quotas`` runs one implementation whether it reaches the cluster
through the brokers (``--bootstrap-server``, DescribeClientQuotas and AlterClientQuotas) or the
controllers (``--bootstrap-controller`` / ``--dir``).

Entities travel as the controller stores them, (user, client id) with ``<default>`` for the
default entity; the describe filter is applied here, with the broker's rules
(:func:`common.security.quota.quota_filter`). A refused filter or entry raises
:class:`KafkaError` with the code a broker would answer.
"""

from __future__ import annotations

from collections.abc import Sequence

from common.error_codes import ErrorCode
from common.security.quota import (
    DEFAULT_ENTITY,
    ENTITY_CLIENT_ID,
    ENTITY_USER,
    FilterError,
    quota_filter,
    wire_entity,
)
from kraftlog_client import (
    ClientQuotaAlteration,
    ClientQuotaEntity,
    ClientQuotaFilterComponent,
    KafkaError,
)
from metadata import security_messages as sm
from metadata.client import ControllerClient
from metadata.security_client import alter_client_quotas, describe_client_quotas


def _controller_entity(entity: ClientQuotaEntity) -> sm.ClientQuotaEntity:
    names = entity.as_dict()
    unknown = sorted(set(names) - {ENTITY_USER, ENTITY_CLIENT_ID})
    if unknown:
        raise KafkaError(
            ErrorCode.INVALID_REQUEST, f"Unhandled client quota entity type: {unknown[0]}"
        )

    def name(entity_type: str) -> str | None:
        if entity_type not in names:
            return None
        value = names[entity_type]
        return DEFAULT_ENTITY if value is None else value

    return sm.ClientQuotaEntity(name(ENTITY_USER), name(ENTITY_CLIENT_ID))


class ControllerQuotas:
    """The client quota calls of :class:`kraftlog_client.Admin` on a :class:`ControllerClient`."""

    def __init__(self, client: ControllerClient) -> None:
        self._client = client

    def describe_client_quotas(
        self, components: Sequence[ClientQuotaFilterComponent] = (), *, strict: bool = False
    ) -> dict[ClientQuotaEntity, dict[str, float]]:
        try:
            flt = quota_filter([(c.entity_type, c.match_type, c.match) for c in components], strict)
        except FilterError as e:
            raise KafkaError(e.code, e.message) from None
        out: dict[ClientQuotaEntity, dict[str, float]] = {}
        for entry in describe_client_quotas(self._client):
            pairs = wire_entity((entry.entity.user, entry.entity.client_id))
            if flt.matches(dict(pairs)):
                out[ClientQuotaEntity.of(dict(pairs))] = dict(entry.values)
        return out

    def alter_client_quotas(
        self, alterations: Sequence[ClientQuotaAlteration], *, validate_only: bool = False
    ) -> None:
        entries = [
            sm.ClientQuotaAlteration(
                _controller_entity(a.entity),
                [
                    sm.ClientQuotaOp(op.key, 0.0, True)
                    if op.value is None
                    else sm.ClientQuotaOp(op.key, op.value)
                    for op in a.ops
                ],
            )
            for a in alterations
        ]
        for result in alter_client_quotas(self._client, entries, validate_only=validate_only):
            if result.error_code:
                raise KafkaError(result.error_code, result.error_message or "")
