"""DescribeCluster (60): the cluster id, the live brokers with their endpoint
on the listener the client connected to, and as controller this broker (it forwards
controller-bound requests, as Metadata says too). Endpoint type 2 (controllers) is not served
by brokers: UNSUPPORTED_ENDPOINT_TYPE, as Kafka's brokers answer.

``include_cluster_authorized_operations`` asks for the bitfield of operations the caller may
perform on the cluster: every cluster operation without an authorizer; with one,
:func:`authorize` fills it in.
"""

from __future__ import annotations

from common.error_codes import ErrorCode
from common.protocol.messages.describe_cluster import (
    DescribeClusterRequest,
    DescribeClusterResponse,
    DescribeClusterResponseBroker,
)
from common.security.acl import CLUSTER_OPERATIONS, operations_bitfield
from data_plane.broker.apis import Body, KafkaApis, Request
from data_plane.broker.handlers.metadata import controller_id, live_brokers
from data_plane.security.request_authz import AnyBody, RequestAuthorizer, Session, Verdict

ENDPOINT_BROKERS = 1


def handle(apis: KafkaApis, request: Request) -> DescribeClusterResponse:
    body = request.body
    if not isinstance(body, DescribeClusterRequest):
        raise TypeError(f"DescribeCluster handler given {type(body).__name__}")
    endpoint_type = body.endpoint_type
    if endpoint_type != ENDPOINT_BROKERS:
        return DescribeClusterResponse(
            throttle_time_ms=0,
            error_code=ErrorCode.UNSUPPORTED_ENDPOINT_TYPE,
            error_message=f"brokers describe endpoint type {ENDPOINT_BROKERS} only",
            endpoint_type=endpoint_type,
            cluster_id=apis.cluster_id or "",
            brokers=[],
        )
    image = apis.image
    response = DescribeClusterResponse(
        throttle_time_ms=0,
        error_code=ErrorCode.NO_ERROR,
        error_message=None,
        endpoint_type=ENDPOINT_BROKERS,
        cluster_id=apis.cluster_id or "",
        controller_id=controller_id(apis, image),
        brokers=[
            DescribeClusterResponseBroker(
                broker_id=b["node_id"], host=b["host"], port=b["port"], rack=b["rack"]
            )
            for b in live_brokers(image, request.listener_name)
        ],
    )
    if body.include_cluster_authorized_operations:
        # Else the schema's default, -2**31: "not asked".
        response.cluster_authorized_operations = operations_bitfield(CLUSTER_OPERATIONS)
    return response


def authorize(authz: RequestAuthorizer, s: Session, version: int, body: Body) -> Verdict:
    """Nothing is refused; ``include_cluster_authorized_operations`` is answered with the
    session's cluster operations (none without Describe on the cluster)."""
    if not isinstance(body, DescribeClusterRequest):
        raise TypeError(f"DescribeCluster rule given {type(body).__name__}")
    v = Verdict(body)
    if not body.include_cluster_authorized_operations:
        return v

    def authorized(response: AnyBody) -> AnyBody:
        if not isinstance(response, DescribeClusterResponse):
            raise TypeError(f"DescribeCluster handler answered {type(response).__name__}")
        response.cluster_authorized_operations = authz.cluster_operations(s)
        return response

    v.finish = authorized
    return v
