"""DescribeQuorum (55): the metadata quorum, as ``kafka-metadata-quorum
describe --status/--replication`` shows it. The broker asks the active controller (gRPC
DescribeQuorum) and answers for the partition ``__cluster_metadata``-0: leader, epoch, high
watermark (the last committed offset), each voter with the log end it acknowledged and when it
last answered (v1), the brokers as observers with the metadata offset each last reported, and
(v2) every voter's controller endpoint. Any other partition gets UNKNOWN_TOPIC_OR_PARTITION.
Directory ids are not tracked: the zero id, as Kafka reports an unknown one. Needs Describe on
the cluster (:func:`authorize`).
"""

from __future__ import annotations

from collections.abc import Coroutine
from typing import Any, TypeVar

from common.error_codes import ErrorCode
from common.protocol.messages.describe_quorum import (
    DescribeQuorumRequest,
    DescribeQuorumResponse,
    DescribeQuorumResponseCurrentVoter,
    DescribeQuorumResponseListener,
    DescribeQuorumResponseNode,
    DescribeQuorumResponseObserver,
    DescribeQuorumResponsePartition,
    DescribeQuorumResponseTopic,
)
from common.security.acl import AclOperation, ResourceType
from data_plane.broker.apis import Body, KafkaApis, Request
from data_plane.broker.handlers.forwarding import forward
from data_plane.security.request_authz import CLUSTER_DENIED, RequestAuthorizer, Session, Verdict
from metadata.client import ControllerError
from metadata.messages import QuorumReplica

METADATA_TOPIC = "__cluster_metadata"
METADATA_PARTITION = 0
CONTROLLER_LISTENER = "CONTROLLER"
NO_DIRECTORY_ID = bytes(16)

# A voter or an observer: the schema gives each list its own struct of the same fields.
ReplicaState = TypeVar(
    "ReplicaState", DescribeQuorumResponseCurrentVoter, DescribeQuorumResponseObserver
)


def _replica(cls: type[ReplicaState], r: QuorumReplica) -> ReplicaState:
    return cls(
        replica_id=r.replica_id,
        replica_directory_id=NO_DIRECTORY_ID,
        log_end_offset=r.log_end_offset,
        last_fetch_timestamp=r.last_fetch_ms,
        last_caught_up_timestamp=r.last_caught_up_ms,
    )


def _partition_error(index: int, code: int, message: str | None) -> DescribeQuorumResponsePartition:
    return DescribeQuorumResponsePartition(
        partition_index=index,
        error_code=code,
        error_message=message,
        leader_id=-1,
        leader_epoch=-1,
        high_watermark=-1,
        current_voters=[],
        observers=[],
    )


async def _describe(apis: KafkaApis, body: DescribeQuorumRequest) -> DescribeQuorumResponse:
    try:
        quorum = await forward(apis, "describe_quorum")
    except ControllerError as e:
        return DescribeQuorumResponse(
            error_code=e.error_code, error_message=e.message, topics=[], nodes=[]
        )
    topics = []
    for t in body.topics:
        name = t.topic_name
        partitions = []
        for p in t.partitions:
            index = p.partition_index
            if name != METADATA_TOPIC or index != METADATA_PARTITION:
                partitions.append(
                    _partition_error(
                        index, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "not the metadata partition"
                    )
                )
                continue
            partitions.append(
                DescribeQuorumResponsePartition(
                    partition_index=index,
                    error_code=ErrorCode.NO_ERROR,
                    error_message=None,
                    leader_id=quorum.leader_id,
                    leader_epoch=quorum.leader_epoch,
                    high_watermark=quorum.high_watermark,
                    current_voters=[
                        _replica(DescribeQuorumResponseCurrentVoter, r) for r in quorum.voters
                    ],
                    observers=[
                        _replica(DescribeQuorumResponseObserver, r) for r in quorum.observers
                    ],
                )
            )
        topics.append(DescribeQuorumResponseTopic(topic_name=name, partitions=partitions))
    return DescribeQuorumResponse(
        error_code=ErrorCode.NO_ERROR,
        error_message=None,
        topics=topics,
        nodes=[
            DescribeQuorumResponseNode(
                node_id=n.node_id,
                listeners=[
                    DescribeQuorumResponseListener(
                        name=CONTROLLER_LISTENER, host=n.host, port=n.port
                    )
                ],
            )
            for n in quorum.nodes
        ],
    )


def handle(apis: KafkaApis, request: Request) -> Coroutine[Any, Any, DescribeQuorumResponse]:
    body = request.body
    if not isinstance(body, DescribeQuorumRequest):
        raise TypeError(f"DescribeQuorum handler given {type(body).__name__}")
    return _describe(apis, body)


def authorize(authz: RequestAuthorizer, s: Session, version: int, body: Body) -> Verdict:
    """Describe on the cluster (refused: CLUSTER_AUTHORIZATION_FAILED)."""
    if not isinstance(body, DescribeQuorumRequest):
        raise TypeError(f"DescribeQuorum rule given {type(body).__name__}")
    if authz.cluster(s, AclOperation.DESCRIBE):
        return Verdict(body)
    refusal = DescribeQuorumResponse(
        error_code=CLUSTER_DENIED, error_message=None, topics=[], nodes=[]
    )
    return Verdict.refused(body, refusal, ResourceType.CLUSTER)
