"""DescribeProducers (61): the producer state of partitions this broker
leads (``kraftlog transactions describe-producers``): per producer id its epoch, last sequence
and timestamp, the epoch of the coordinator that wrote its last marker here, and the first
offset of its open transaction (-1: none), which is what a hanging transaction is found and
aborted by. Routing errors as Fetch: UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER.
"""

from __future__ import annotations

import dataclasses

from common.error_codes import ErrorCode
from common.errors import ApiError
from common.protocol.messages.describe_producers import (
    DescribeProducersRequest,
    DescribeProducersResponse,
    DescribeProducersResponseActiveProducer,
    DescribeProducersResponsePartition,
    DescribeProducersResponseTopic,
)
from common.security.acl import AclOperation, ResourceType
from common.topic_partition import TopicPartition
from data_plane.broker.apis import Body, KafkaApis, Request
from data_plane.security.request_authz import (
    TOPIC_DENIED,
    RequestAuthorizer,
    Session,
    Verdict,
    with_denied,
)
from data_plane.storage.producer_state import NO_TXN


def handle(apis: KafkaApis, request: Request) -> DescribeProducersResponse:
    body = request.body
    if not isinstance(body, DescribeProducersRequest):
        raise TypeError(f"DescribeProducers handler given {type(body).__name__}")
    topics = [
        DescribeProducersResponseTopic(
            name=t.name,
            partitions=[_partition(apis, t.name, index) for index in t.partition_indexes],
        )
        for t in body.topics
    ]
    return DescribeProducersResponse(throttle_time_ms=0, topics=topics)


def _partition(apis: KafkaApis, topic: str, index: int) -> DescribeProducersResponsePartition:
    try:
        part = apis.replica_manager.leader_partition(TopicPartition(topic, index))
    except ApiError as e:
        return DescribeProducersResponsePartition(
            partition_index=index,
            error_code=int(e.error_code),
            error_message=str(e),
            active_producers=[],
        )
    producers = [
        DescribeProducersResponseActiveProducer(
            producer_id=e.producer_id,
            producer_epoch=e.producer_epoch,
            last_sequence=e.last_seq,
            last_timestamp=e.last_timestamp,
            coordinator_epoch=e.coordinator_epoch,
            current_txn_start_offset=(
                -1 if e.current_txn_first_offset == NO_TXN else e.current_txn_first_offset
            ),
        )
        for e in sorted(part.log.active_producers(), key=lambda e: e.producer_id)
    ]
    return DescribeProducersResponsePartition(
        partition_index=index,
        error_code=ErrorCode.NO_ERROR,
        error_message=None,
        active_producers=producers,
    )


def authorize(authz: RequestAuthorizer, s: Session, version: int, body: Body) -> Verdict:
    """Read on each topic (refused: each partition TOPIC_AUTHORIZATION_FAILED)."""
    if not isinstance(body, DescribeProducersRequest):
        raise TypeError(f"DescribeProducers rule given {type(body).__name__}")
    readable: dict[str, bool] = {}
    for t in body.topics:
        if t.name not in readable:
            readable[t.name] = authz.topic(s, AclOperation.READ, t.name)
    denied = [t for t in body.topics if not readable[t.name]]
    if not denied:
        return Verdict(body)
    entries = [
        DescribeProducersResponseTopic(
            name=t.name,
            partitions=[
                DescribeProducersResponsePartition(
                    partition_index=i, error_code=TOPIC_DENIED, active_producers=[]
                )
                for i in t.partition_indexes
            ],
        )
        for t in denied
    ]
    kept = dataclasses.replace(body, topics=[t for t in body.topics if readable[t.name]])
    return with_denied(kept, ResourceType.TOPIC, len(denied), "topics", entries)
