"""ACL calls on the controllers' control plane with :class:`kraftlog_client.Admin`'s
signatures, so ``kraftlog acls`` runs one implementation whether it reaches the cluster through
the brokers (``--bootstrap-server``, the Kafka ACL APIs) or the controllers
(``--bootstrap-controller`` / ``--dir``, as kafka-acls.sh's ``--bootstrap-controller``).

A refused binding or filter raises :class:`KafkaError` with the controller's error code,
as the Admin raises the broker's.
"""

from __future__ import annotations

from collections.abc import Sequence

from common.security.acl import (
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from kraftlog_client import KafkaError
from metadata import security_messages as sm
from metadata.client import ControllerClient
from metadata.security_client import create_acls, delete_acls, describe_acls


def _binding(a: sm.AclDescription) -> AclBinding:
    return AclBinding(
        ResourcePattern(
            ResourceType(a.resource_type), a.resource_name, PatternType(a.pattern_type)
        ),
        AccessControlEntry(
            a.principal, a.host, AclOperation(a.operation), AclPermissionType(a.permission_type)
        ),
    )


def _message(f: AclBindingFilter) -> sm.AclFilter:
    return sm.AclFilter(
        int(f.resource_type),
        f.name,
        int(f.pattern_type),
        f.principal,
        f.host,
        int(f.operation),
        int(f.permission_type),
    )


class ControllerAcls:
    """The ACL calls of :class:`kraftlog_client.Admin` on a :class:`ControllerClient`."""

    def __init__(self, client: ControllerClient) -> None:
        self._client = client

    def create_acls(self, bindings: Sequence[AclBinding]) -> None:
        creations = [
            sm.AclCreation(
                int(b.pattern.resource_type),
                b.pattern.name,
                int(b.pattern.pattern_type),
                b.entry.principal,
                b.entry.host,
                int(b.entry.operation),
                int(b.entry.permission_type),
            )
            for b in bindings
        ]
        for result in create_acls(self._client, creations):
            if result.error_code:
                raise KafkaError(result.error_code, result.error_message or "")

    def describe_acls(self, acl_filter: AclBindingFilter) -> list[AclBinding]:
        response = describe_acls(self._client, _message(acl_filter))
        if response.error_code:
            raise KafkaError(response.error_code, response.error_message or "")
        return [_binding(a) for a in response.acls]

    def delete_acls(self, filters: Sequence[AclBindingFilter]) -> list[list[AclBinding]]:
        out = []
        for result in delete_acls(self._client, [_message(f) for f in filters]):
            if result.error_code:
                raise KafkaError(result.error_code, result.error_message or "")
            out.append([_binding(a) for a in result.matching_acls])
        return out
