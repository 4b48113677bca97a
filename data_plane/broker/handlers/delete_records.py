"""DeleteRecords (21): the leader moves its log start offset up (offset -1 = the high
watermark) and answers the new low watermark; segments wholly below it go with the next
retention pass. Beyond the HW is OFFSET_OUT_OF_RANGE. Answered once the leader has moved:
unlike Kafka, the answer does not wait for the followers' low watermarks (they move their own
log start offsets when they next fetch)."""

from __future__ import annotations

from common.errors import ApiError
from common.protocol.messages.delete_records import (
    DeleteRecordsRequest,
    DeleteRecordsResponse,
    DeleteRecordsResponsePartition,
    DeleteRecordsResponseTopic,
)
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


def handle(apis: KafkaApis, request: Request) -> DeleteRecordsResponse:
    body = request.body
    if not isinstance(body, DeleteRecordsRequest):
        raise TypeError(f"DeleteRecords handler given {type(body).__name__}")
    topics = []
    for t in body.topics:
        parts = []
        for p in t.partitions:
            tp = TopicPartition(t.name, p.partition_index)
            entry = DeleteRecordsResponsePartition(
                partition_index=tp.partition, low_watermark=-1, error_code=0
            )
            try:
                part = apis.replica_manager.leader_partition(tp)
                entry.low_watermark = part.delete_records_before(p.offset)
            except (BrokerRequestError, ApiError) as e:
                entry.error_code = e.error_code
            parts.append(entry)
            apis.on_partition_change(tp)  # a parked fetch below the new start must answer
        topics.append(DeleteRecordsResponseTopic(name=t.name, partitions=parts))
    return DeleteRecordsResponse(throttle_time_ms=0, topics=topics)


def authorize(authz: RequestAuthorizer, s: Session, version: int, body: Body) -> Verdict:
    """Delete on each topic (refused: each partition TOPIC_AUTHORIZATION_FAILED)."""
    if not isinstance(body, DeleteRecordsRequest):
        raise TypeError(f"DeleteRecords rule given {type(body).__name__}")
    new, denied = authz.split_topics(s, body, AclOperation.DELETE)
    if not denied:
        return Verdict(body)
    entries = [
        DeleteRecordsResponseTopic(
            name=t.name,
            partitions=[
                DeleteRecordsResponsePartition(
                    partition_index=p.partition_index, low_watermark=-1, error_code=TOPIC_DENIED
                )
                for p in t.partitions
            ],
        )
        for t in denied
    ]
    return with_denied_topics(new, len(denied), "topics", entries)
