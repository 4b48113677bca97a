"""LeaveGroup (13), v0-2: one member leaves; the group rebalances without it at once (no wait
for its session to expire)."""

from __future__ import annotations

from data_plane.broker.apis import Body, KafkaApis, Request


def handle(apis: KafkaApis, request: Request) -> Body:
    b = request.body
    error = apis.group_coordinator.leave_group(b["group_id"] or "", b["member_id"] or "")
    return {"throttle_time_ms": 0, "error_code": error}
