"""ListGroups (16): the groups this broker coordinates (a tool asks every broker).
COORDINATOR_LOAD_IN_PROGRESS while one of its ``__consumer_offsets`` partitions is loading.

v4 answers each group's state and takes a ``states_filter``, v5 its type and a
``types_filter`` (both case-insensitive, empty = all, as Kafka): ``classic`` or ``consumer``
(a KIP-848 group, whose state is Empty, Assigning, Reconciling or Stable).
"""

from __future__ import annotations

from common.protocol.messages.list_groups import (
    ListGroupsRequest,
    ListGroupsResponse,
    ListGroupsResponseGroup,
)
from common.security.acl import AclOperation
from data_plane.broker.apis import Body, KafkaApis, Request
from data_plane.security.request_authz import RequestAuthorizer, Session, Verdict, keep_only


def handle(apis: KafkaApis, request: Request) -> ListGroupsResponse:
    body = request.body
    if not isinstance(body, ListGroupsRequest):
        raise TypeError(f"ListGroups handler given {type(body).__name__}")
    error, groups = apis.group_coordinator.coordinator.list_groups()
    states = {s.lower() for s in body.states_filter}
    types = {t.lower() for t in body.types_filter}
    return ListGroupsResponse(
        throttle_time_ms=0,
        error_code=error,
        groups=[
            ListGroupsResponseGroup(group_id, protocol_type, state, group_type)
            for group_id, protocol_type, state, group_type in groups
            if (not states or state.lower() in states) and (not types or group_type in types)
        ],
    )


def authorize(authz: RequestAuthorizer, s: Session, version: int, body: Body) -> Verdict:
    """Describe on the cluster lists every group; else only the groups the session may
    describe are listed."""
    v = Verdict(body)
    if authz.cluster(s, AclOperation.DESCRIBE):
        return v
    v.finish = keep_only("groups", lambda g: authz.group(s, AclOperation.DESCRIBE, g.group_id))
    return v
