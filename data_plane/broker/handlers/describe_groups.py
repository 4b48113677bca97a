"""DescribeGroups (15), v0-4: state, protocol and members of groups this broker coordinates.

An unknown group is state "Dead" with no error (as Kafka); a group coordinated elsewhere gets
NOT_COORDINATOR. Members' metadata and assignments are given only for a Stable group.
"""

from __future__ import annotations

from common.protocol.messages.describe_groups import (
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    DescribeGroupsResponseGroup,
    DescribeGroupsResponseMember,
)
from data_plane.broker.apis import KafkaApis, Request

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
