"""ListGroups (16): the groups this broker coordinates (a tool asks every broker).
COORDINATOR_LOAD_IN_PROGRESS while one of its ``__consumer_offsets`` partitions is loading.

v4 answers each group's state and takes a ``states_filter``, v5 its type and a
``types_filter`` (both case-insensitive, empty = all, as Kafka): ``classic`` or ``consumer``
(a KIP-848 group, whose state is Empty, Assigning, Reconciling or Stable).
"""

from __future__ import annotations

from typing import Any

from common.security.acl import AclOperation
from data_plane.broker.apis import Body, KafkaApis, Request
from data_plane.security.request_authz import RequestAuthorizer, Session, Verdict, keep_only


def handle(apis: KafkaApis, request: Request) -> Body:
    error, groups = apis.group_coordinator.coordinator.list_groups()
    states = {s.lower() for s in request.body.get("states_filter") or ()}
    types = {t.lower() for t in request.body.get("types_filter") or ()}
    return {
        "throttle_time_ms": 0,
        "error_code": error,
        "groups": [
            {
                "group_id": group_id,
                "protocol_type": protocol_type,
                "group_state": state,
                "group_type": group_type,
            }
            for group_id, protocol_type, state, group_type in groups
            if (not states or state.lower() in states) and (not types or group_type in types)
        ],
    }


def authorize(authz: RequestAuthorizer, s: Session, version: int, body: dict[str, Any]) -> Verdict:
    """Describe on the cluster lists every group; else only the groups the session may
    describe are listed."""
    v = Verdict(body)
    if authz.cluster(s, AclOperation.DESCRIBE):
        return v
    v.finish = keep_only(
        "groups", lambda g: authz.group(s, AclOperation.DESCRIBE, g.get("group_id", ""))
    )
    return v
