"""DescribeGroups (15): state, protocol and members of groups this broker coordinates.

An unknown group is state "Dead" with no error (as Kafka); a group coordinated elsewhere gets
NOT_COORDINATOR. Members' metadata and assignments are given only for a Stable group.
"""

from __future__ import annotations

import dataclasses

from common.protocol.messages.describe_groups import (
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    DescribeGroupsResponseGroup,
    DescribeGroupsResponseMember,
)
from common.security.acl import AclOperation, ResourceType
from data_plane.broker.apis import Body, KafkaApis, Request
from data_plane.security.request_authz import (
    GROUP_DENIED,
    RequestAuthorizer,
    Session,
    Verdict,
    with_denied,
)

# "Operations not requested" (Kafka's Integer.MIN_VALUE sentinel).
AUTHORIZED_OPERATIONS_OMITTED = -2147483648


def handle(apis: KafkaApis, request: Request) -> DescribeGroupsResponse:
    body = request.body
    if not isinstance(body, DescribeGroupsRequest):
        raise TypeError(f"DescribeGroups handler given {type(body).__name__}")
    coordinator = apis.group_coordinator.coordinator
    groups = []
    for gid in body.groups:
        d = coordinator.describe_group(gid)
        groups.append(
            DescribeGroupsResponseGroup(
                error_code=d.error_code,
                group_id=d.group_id,
                group_state=d.state,
                protocol_type=d.protocol_type,
                protocol_data=d.protocol_data,
                members=[
                    DescribeGroupsResponseMember(
                        member_id=m.member_id,
                        group_instance_id=m.group_instance_id,
                        client_id=m.client_id,
                        client_host=m.client_host,
                        member_metadata=m.metadata,
                        member_assignment=m.assignment,
                    )
                    for m in d.members
                ],
                authorized_operations=AUTHORIZED_OPERATIONS_OMITTED,
            )
        )
    return DescribeGroupsResponse(throttle_time_ms=0, groups=groups)


def authorize(authz: RequestAuthorizer, s: Session, version: int, body: Body) -> Verdict:
    """Describe on each group (refused groups answered GROUP_AUTHORIZATION_FAILED)."""
    if not isinstance(body, DescribeGroupsRequest):
        raise TypeError(f"DescribeGroups rule given {type(body).__name__}")
    groups = body.groups
    allowed = [g for g in groups if authz.group(s, AclOperation.DESCRIBE, g)]
    if len(allowed) == len(groups):
        return Verdict(body)
    entries = [
        DescribeGroupsResponseGroup(error_code=GROUP_DENIED, group_id=g)
        for g in groups
        if g not in allowed
    ]
    kept = dataclasses.replace(body, groups=allowed)
    return with_denied(kept, ResourceType.GROUP, len(entries), "groups", entries)
