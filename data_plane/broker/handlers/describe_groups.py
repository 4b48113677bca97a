"""DescribeGroups (15), v0-4: state, protocol and members of groups this broker coordinates.

An unknown group is state "Dead" with no error (as Kafka); a group coordinated elsewhere gets
NOT_COORDINATOR. Members' metadata and assignments are given only for a Stable group.
"""

from __future__ import annotations

from data_plane.broker.apis import Body, KafkaApis, Request

# "Operations not requested" (Kafka's Integer.MIN_VALUE sentinel).
AUTHORIZED_OPERATIONS_OMITTED = -2147483648


def handle(apis: KafkaApis, request: Request) -> Body:
    coordinator = apis.group_coordinator.coordinator
    groups = []
    for gid in request.body.get("groups") or ():
        d = coordinator.describe_group(gid or "")
        groups.append(
            {
                "error_code": d.error_code,
                "group_id": d.group_id,
                "group_state": d.state,
                "protocol_type": d.protocol_type,
                "protocol_data": d.protocol_data,
                "members": [
                    {
                        "member_id": m.member_id,
                        "group_instance_id": m.group_instance_id,
                        "client_id": m.client_id,
                        "client_host": m.client_host,
                        "member_metadata": m.metadata,
                        "member_assignment": m.assignment,
                    }
                    for m in d.members
                ],
                "authorized_operations": AUTHORIZED_OPERATIONS_OMITTED,
            }
        )
    return {"throttle_time_ms": 0, "groups": groups}
