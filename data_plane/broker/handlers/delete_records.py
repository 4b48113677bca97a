"""DeleteRecords (21): the leader moves its log start offset up (offset -1 = the high
watermark) and answers the new low watermark; segments wholly below it go with the next
retention pass. Beyond the HW is OFFSET_OUT_OF_RANGE. Answered once the leader has moved:
unlike Kafka, the answer does not wait for the followers' low watermarks (they move their own
log start offsets when they next fetch)."""

from __future__ import annotations

from typing import Any

from common.errors import ApiError
from common.security.acl import AclOperation
from common.topic_partition import TopicPartition
from data_plane.broker.apis import Body, KafkaApis, Request
from data_plane.broker.errors import BrokerRequestError
from data_plane.security.request_authz import (
    TOPIC_DENIED,
    RequestAuthorizer,
    Session,
    Verdict,
    with_denied_topics,
)


def handle(apis: KafkaApis, request: Request) -> Body:
    topics = []
    for t in request.body.get("topics") or ():
        name = t["name"]
        parts = []
        for p in t.get("partitions") or ():
            tp = TopicPartition(name, p["partition_index"])
            entry = {"partition_index": tp.partition, "low_watermark": -1, "error_code": 0}
            try:
                part = apis.replica_manager.leader_partition(tp)
                entry["low_watermark"] = part.delete_records_before(p["offset"])
            except (BrokerRequestError, ApiError) as e:
                entry["error_code"] = e.error_code
            parts.append(entry)
            apis.on_partition_change(tp)  # a parked fetch below the new start must answer
        topics.append({"name": name, "partitions": parts})
    return {"throttle_time_ms": 0, "topics": topics}


def authorize(authz: RequestAuthorizer, s: Session, version: int, body: dict[str, Any]) -> Verdict:
    """Delete on each topic (refused: each partition TOPIC_AUTHORIZATION_FAILED)."""
    new, denied = authz.split_topics(s, body, AclOperation.DELETE)
    if not denied:
        return Verdict(body)
    entries = [
        {
            "name": t.get("name", ""),
            "partitions": [
                {
                    "partition_index": p.get("partition_index", 0),
                    "low_watermark": -1,
                    "error_code": TOPIC_DENIED,
                }
                for p in t.get("partitions") or []
            ],
        }
        for t in denied
    ]
    return with_denied_topics(new, len(denied), "topics", entries)
