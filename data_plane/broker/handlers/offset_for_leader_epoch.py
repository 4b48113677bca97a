"""OffsetForLeaderEpoch (23): where a leader epoch ended in this leader's log (KIP-101).

For each partition: the largest epoch <= the requested ``leader_epoch`` known to the
leader-epoch cache and the start offset of the next epoch (the log end offset if it is the
latest epoch); UNDEFINED_EPOCH / UNDEFINED_EPOCH_OFFSET (-1 / -1) when the requested epoch is
older than every known one. Followers (``replica_id`` >= 0, v3) use it to truncate before
fetching from a new leader; librdkafka uses it to validate consumer positions after a leader
change, so the answer must be exact.

Errors per partition: UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER (only the leader
answers), FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH for a ``current_leader_epoch`` (v2+)
older / newer than ours.
"""

from __future__ import annotations

import dataclasses

from common.error_codes import ErrorCode
from common.errors import ApiError
from common.protocol.messages.offset_for_leader_epoch import (
    OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochRequestPartition,
    OffsetForLeaderEpochRequestTopic,
    OffsetForLeaderEpochResponse,
    OffsetForLeaderEpochResponsePartition,
    OffsetForLeaderEpochResponseTopic,
)
from common.security.acl import AclOperation
from common.topic_partition import TopicPartition
from data_plane.broker.apis import Body, KafkaApis, Request
from data_plane.broker.errors import BrokerRequestError
from data_plane.security.request_authz import (
    CLUSTER_DENIED,
    TOPIC_DENIED,
    RequestAuthorizer,
    Session,
    Verdict,
    with_denied_topics,
)
from data_plane.storage.leader_epoch_cache import UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET


def _one(
    apis: KafkaApis, tp: TopicPartition, p: OffsetForLeaderEpochRequestPartition
) -> OffsetForLeaderEpochResponsePartition:
    out = OffsetForLeaderEpochResponsePartition(
        error_code=ErrorCode.NO_ERROR,
        partition=tp.partition,
        leader_epoch=UNDEFINED_EPOCH,
        end_offset=UNDEFINED_EPOCH_OFFSET,
    )
    try:
        part = apis.replica_manager.leader_partition(tp)
        part.check_leader_epoch(p.current_leader_epoch)
        answer = part.end_offset_for_epoch(p.leader_epoch)
    except (BrokerRequestError, ApiError) as e:
        out.error_code = e.error_code
        return out
    out.leader_epoch, out.end_offset = answer.epoch, answer.end_offset
    return out


def handle(apis: KafkaApis, request: Request) -> OffsetForLeaderEpochResponse:
    body = request.body
    if not isinstance(body, OffsetForLeaderEpochRequest):
        raise TypeError(f"OffsetForLeaderEpoch handler given {type(body).__name__}")
    topics = []
    for t in body.topics:
        name = t.topic
        parts = [_one(apis, TopicPartition(name, p.partition), p) for p in t.partitions]
        topics.append(OffsetForLeaderEpochResponseTopic(topic=name, partitions=parts))
    return OffsetForLeaderEpochResponse(throttle_time_ms=0, topics=topics)


def authorize(authz: RequestAuthorizer, s: Session, version: int, body: Body) -> Verdict:
    """Consumers: Describe on each topic (refused: each partition TOPIC_AUTHORIZATION_FAILED).
    Follower replicas (replica_id >= 0): ClusterAction on the cluster (refused: every
    partition CLUSTER_AUTHORIZATION_FAILED)."""
    if not isinstance(body, OffsetForLeaderEpochRequest):
        raise TypeError(f"OffsetForLeaderEpoch rule given {type(body).__name__}")
    new: OffsetForLeaderEpochRequest
    denied: list[OffsetForLeaderEpochRequestTopic]
    # v0-2 have no replica_id: the field holds its default, -2 (a consumer).
    if body.replica_id >= 0:
        if authz.cluster(s, AclOperation.CLUSTER_ACTION):
            return Verdict(body)
        new, denied = dataclasses.replace(body, topics=[]), body.topics
        code = CLUSTER_DENIED
    else:
        new, denied = authz.split_topics(s, body, AclOperation.DESCRIBE, name_key="topic")
        code = TOPIC_DENIED
    if not denied:
        return Verdict(body)
    entries = [
        OffsetForLeaderEpochResponseTopic(
            topic=t.topic,
            partitions=[
                OffsetForLeaderEpochResponsePartition(partition=p.partition, error_code=code)
                for p in t.partitions
            ],
        )
        for t in denied
    ]
    return with_denied_topics(new, len(denied), "topics", entries)
