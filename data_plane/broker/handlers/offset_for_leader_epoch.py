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

from typing import Any

from common.error_codes import ErrorCode
from common.errors import ApiError
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


def _one(apis: KafkaApis, tp: TopicPartition, p: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {
        "error_code": ErrorCode.NO_ERROR,
        "partition": tp.partition,
        "leader_epoch": UNDEFINED_EPOCH,
        "end_offset": UNDEFINED_EPOCH_OFFSET,
    }
    try:
        part = apis.replica_manager.leader_partition(tp)
        part.check_leader_epoch(p.get("current_leader_epoch", -1))
        answer = part.end_offset_for_epoch(p["leader_epoch"])
    except (BrokerRequestError, ApiError) as e:
        out["error_code"] = e.error_code
        return out
    out["leader_epoch"], out["end_offset"] = answer.epoch, answer.end_offset
    return out


def handle(apis: KafkaApis, request: Request) -> Body:
    topics = []
    for t in request.body.get("topics") or ():
        name = t["topic"]
        parts = [
            _one(apis, TopicPartition(name, p["partition"]), p) for p in t.get("partitions") or ()
        ]
        topics.append({"topic": name, "partitions": parts})
    return {"throttle_time_ms": 0, "topics": topics}


def authorize(authz: RequestAuthorizer, s: Session, version: int, body: dict[str, Any]) -> Verdict:
    """Consumers: Describe on each topic (refused: each partition TOPIC_AUTHORIZATION_FAILED).
    Follower replicas (replica_id >= 0): ClusterAction on the cluster (refused: every
    partition CLUSTER_AUTHORIZATION_FAILED)."""
    if body.get("replica_id", -2) >= 0:
        if authz.cluster(s, AclOperation.CLUSTER_ACTION):
            return Verdict(body)
        new, denied = {**body, "topics": []}, list(body.get("topics") or [])
        code = CLUSTER_DENIED
    else:
        new, denied = authz.split_topics(s, body, AclOperation.DESCRIBE, name_key="topic")
        code = TOPIC_DENIED
    if not denied:
        return Verdict(body)
    entries = [
        {
            "topic": t.get("topic", ""),
            "partitions": [
                {"partition": p.get("partition", 0), "error_code": code}
                for p in t.get("partitions") or []
            ],
        }
        for t in denied
    ]
    return with_denied_topics(new, len(denied), "topics", entries)
