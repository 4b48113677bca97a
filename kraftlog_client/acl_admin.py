"""ACL administration over the Kafka protocol (used by :class:`Admin`), as Kafka's
AdminClient and kafka-acls.sh do it: CreateAcls, DescribeAcls and DeleteAcls to any broker.

Bindings and filters are :mod:`common.security.acl`'s :class:`AclBinding` and
:class:`AclBindingFilter`, whose enum values are Kafka's wire values. A broker without an
authorizer answers SECURITY_DISABLED; without Describe (or Alter) on the cluster,
CLUSTER_AUTHORIZATION_FAILED: both raise :class:`KafkaError`.

Functions block on the calling thread up to ``timeout_ms``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from common.error_codes import ErrorCode
from common.protocol.api_keys import ApiKey
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
from kraftlog_client.errors import KafkaError
from kraftlog_client.network_client import NetworkClient


def _filter_body(f: AclBindingFilter) -> dict[str, Any]:
    return {
        "resource_type_filter": int(f.resource_type),
        "resource_name_filter": f.name,
        "pattern_type_filter": int(f.pattern_type),
        "principal_filter": f.principal,
        "host_filter": f.host,
        "operation": int(f.operation),
        "permission_type": int(f.permission_type),
    }


def _binding(rtype: int, name: str, ptype: int, acl: dict[str, Any]) -> AclBinding:
    return AclBinding(
        ResourcePattern(ResourceType(rtype), name, PatternType(ptype)),
        AccessControlEntry(
            acl["principal"],
            acl["host"],
            AclOperation(acl["operation"]),
            AclPermissionType(acl["permission_type"]),
        ),
    )


def _raise_for(code: int, message: str | None) -> None:
    if code != ErrorCode.NO_ERROR:
        raise KafkaError(code, message or "")


def create_acls(client: NetworkClient, bindings: Sequence[AclBinding], timeout_ms: float) -> None:
    """Create ``bindings`` (existing ones succeed and add nothing). Raises the KafkaError of
    the first failed binding, after the others were created."""
    body = {
        "creations": [
            {
                "resource_type": int(b.pattern.resource_type),
                "resource_name": b.pattern.name,
                "resource_pattern_type": int(b.pattern.pattern_type),
                "principal": b.entry.principal,
                "host": b.entry.host,
                "operation": int(b.entry.operation),
                "permission_type": int(b.entry.permission_type),
            }
            for b in bindings
        ]
    }
    response = client.request(None, ApiKey.CREATE_ACLS, body, timeout_ms)
    for result in response.get("results") or ():
        _raise_for(result.get("error_code", 0), result.get("error_message"))


def describe_acls(
    client: NetworkClient, acl_filter: AclBindingFilter, timeout_ms: float
) -> list[AclBinding]:
    """The bindings matching ``acl_filter``, as the answering broker enforces them."""
    response = client.request(None, ApiKey.DESCRIBE_ACLS, _filter_body(acl_filter), timeout_ms)
    _raise_for(response.get("error_code", 0), response.get("error_message"))
    return [
        _binding(r["resource_type"], r["resource_name"], r.get("pattern_type", 3), acl)
        for r in response.get("resources") or ()
        for acl in r.get("acls") or ()
    ]


def delete_acls(
    client: NetworkClient, filters: Sequence[AclBindingFilter], timeout_ms: float
) -> list[list[AclBinding]]:
    """Delete every binding matching each filter; the bindings each filter matched, in the
    order of ``filters``. Raises the KafkaError of the first failed filter, after the others
    were applied."""
    body = {"filters": [_filter_body(f) for f in filters]}
    response = client.request(None, ApiKey.DELETE_ACLS, body, timeout_ms)
    out = []
    for result in response.get("filter_results") or ():
        _raise_for(result.get("error_code", 0), result.get("error_message"))
        out.append(
            [
                _binding(a["resource_type"], a["resource_name"], a.get("pattern_type", 3), a)
                for a in result.get("matching_acls") or ()
            ]
        )
    return out
