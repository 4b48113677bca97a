"""What DescribeAcls and DeleteAcls share: a request's ACL filter as an
:class:`AclBindingFilter`, and the checks Kafka makes on it.

A filter field holds Kafka's wire value of ResourceType, PatternType, AclOperation or
AclPermissionType. A value outside those enums, or UNKNOWN (0), makes the filter invalid
(INVALID_REQUEST, as Kafka's ``AclBindingFilter.isUnknown``); ANY (and MATCH for the pattern
type) match broadly. Before v1 a filter has no pattern type and matches LITERAL patterns only.
A filter that matches nothing is valid: it is answered with no bindings.
"""

from __future__ import annotations

from typing import Any

from common.security.acl import (
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    InvalidAclError,
    PatternType,
    ResourceType,
)

# Kafka's error message for a filter with an unknown element.
UNKNOWN_ELEMENTS = "The filter contained UNKNOWN elements."


def binding_filter(entry: dict[str, Any]) -> AclBindingFilter:
    """The filter of one request entry (DescribeAcls' body, a DeleteAcls filter); raises
    InvalidAclError for unknown or UNKNOWN values."""
    try:
        flt = AclBindingFilter(
            ResourceType(entry.get("resource_type_filter", 0)),
            entry.get("resource_name_filter"),
            PatternType(entry.get("pattern_type_filter", PatternType.LITERAL)),
            entry.get("principal_filter"),
            entry.get("host_filter"),
            AclOperation(entry.get("operation", 0)),
            AclPermissionType(entry.get("permission_type", 0)),
        )
    except ValueError:
        raise InvalidAclError(UNKNOWN_ELEMENTS) from None
    if 0 in (flt.resource_type, flt.pattern_type, flt.operation, flt.permission_type):
        raise InvalidAclError(UNKNOWN_ELEMENTS)
    return flt
