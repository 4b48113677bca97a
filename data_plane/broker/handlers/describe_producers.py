"""DescribeProducers (61): the producer state of partitions this broker
leads (``kraftlog transactions describe-producers``): per producer id its epoch, last sequence
and timestamp, the epoch of the coordinator that wrote its last marker here, and the first
offset of its open transaction (-1: none), which is what a hanging transaction is found and
aborted by. Routing errors as Fetch: UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER.
"""

from __future__ import annotations

from typing import Any

from common.error_codes import ErrorCode
from common.errors import ApiError
from common.security.acl import AclOperation
from common.topic_partition import TopicPartition
from data_plane.broker.apis import Body, KafkaApis, Request
from data_plane.security.request_authz import (
    TOPIC_DENIED,
    RequestAuthorizer,
    Session,
    Verdict,
    with_denied_topics,
)
from data_plane.storage.producer_state import NO_TXN


def handle(apis: KafkaApis, request: Request) -> Body:
    topics = []
    for t in request.body.get("topics") or []:
        name = t.get("name", "")
        partitions = [_partition(apis, name, index) for index in t.get("partition_indexes") or []]
        topics.append({"name": name, "partitions": partitions})
    return {"throttle_time_ms": 0, "topics": topics}


def _partition(apis: KafkaApis, topic: str, index: int) -> dict[str, Any]:
    try:
        part = apis.replica_manager.leader_partition(TopicPartition(topic, index))
    except ApiError as e:
        return {
            "partition_index": index,
            "error_code": int(e.error_code),
            "error_message": str(e),
            "active_producers": [],
        }
    producers = [
        {
            "producer_id": e.producer_id,
            "producer_epoch": e.producer_epoch,
            "last_sequence": e.last_seq,
            "last_timestamp": e.last_timestamp,
            "coordinator_epoch": e.coordinator_epoch,
            "current_txn_start_offset": (
                -1 if e.current_txn_first_offset == NO_TXN else e.current_txn_first_offset
            ),
        }
        for e in sorted(part.log.active_producers(), key=lambda e: e.producer_id)
    ]
    return {
        "partition_index": index,
        "error_code": ErrorCode.NO_ERROR,
        "error_message": None,
        "active_producers": producers,
    }


def authorize(authz: RequestAuthorizer, s: Session, version: int, body: dict[str, Any]) -> Verdict:
    """Read on each topic (refused: each partition TOPIC_AUTHORIZATION_FAILED)."""
    new, denied = authz.split_topics(s, body, AclOperation.READ)
    if not denied:
        return Verdict(body)
    entries = [
        {
            "name": t.get("name", ""),
            "partitions": [
                {"partition_index": i, "error_code": TOPIC_DENIED, "active_producers": []}
                for i in t.get("partition_indexes") or []
            ],
        }
        for t in denied
    ]
    return with_denied_topics(new, len(denied), "topics", entries)
