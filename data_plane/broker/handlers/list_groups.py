"""ListGroups (16), v0-2: the groups this broker coordinates (a tool asks every broker).
COORDINATOR_LOAD_IN_PROGRESS while one of its ``__consumer_offsets`` partitions is loading."""

from __future__ import annotations

from data_plane.broker.apis import Body, KafkaApis, Request


def handle(apis: KafkaApis, request: Request) -> Body:
    error, groups = apis.group_coordinator.coordinator.list_groups()
    return {
        "throttle_time_ms": 0,
        "error_code": error,
        "groups": [{"group_id": g, "protocol_type": t} for g, t, _ in groups],
    }
