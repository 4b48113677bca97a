"""DescribeTopicPartitions (75): topics and partitions from this broker's
metadata image, paginated, with KIP-966's eligible leader replicas (what newer
``kafka-topics --describe`` uses instead of Metadata).

- ``topics`` empty means every topic. Topics are answered in name order; an unknown one gets
  UNKNOWN_TOPIC_OR_PARTITION.
- At most ``response_partition_limit`` partitions per answer (capped at
  :data:`MAX_PARTITIONS_PER_RESPONSE`). ``next_cursor`` then names the first partition not
  answered, and a request carrying it as ``cursor`` continues from there. A cursor naming a
  topic outside the request gets INVALID_REQUEST.
- ``last_known_elr`` is null: kraftlog keeps no record of an ELR once cleared.
- ``topic_authorized_operations``: every topic operation without an authorizer; with one,
  :func:`authorize` fills in the caller's (and hides or refuses topics it may
  not describe).
"""

from __future__ import annotations

import dataclasses

from common.error_codes import ErrorCode
from common.protocol.messages.describe_topic_partitions import (
    DescribeTopicPartitionsRequest,
    DescribeTopicPartitionsResponse,
    DescribeTopicPartitionsResponseNextCursor,
    DescribeTopicPartitionsResponsePartition,
    DescribeTopicPartitionsResponseTopic,
)
from common.security.acl import TOPIC_OPERATIONS, AclOperation, ResourceType, operations_bitfield
from data_plane.broker.apis import Body, KafkaApis, Request
from data_plane.broker.handlers.metadata import live_broker_ids, partition_state
from data_plane.security.request_authz import (
    TOPIC_DENIED,
    AnyBody,
    RequestAuthorizer,
    Session,
    Verdict,
)
from metadata.image import MetadataImage, TopicImage
from metadata.topics import INTERNAL_TOPICS

# Kafka's max.request.partition.size.limit default.
MAX_PARTITIONS_PER_RESPONSE = 2000
NO_TOPIC_ID = bytes(16)


def _topic(
    image: MetadataImage, t: TopicImage, first: int, budget: int
) -> tuple[DescribeTopicPartitionsResponseTopic, int | None]:
    """The answer for ``t`` from partition ``first`` with at most ``budget`` partitions, and
    the partition a next page starts at (None: the topic is complete)."""
    live = live_broker_ids(image)
    ids = [pid for pid in sorted(t.partitions) if pid >= first]
    shown, rest = ids[:budget], ids[budget:]
    partitions = [
        DescribeTopicPartitionsResponsePartition(
            **partition_state(pid, t.partitions[pid], live),
            eligible_leader_replicas=list(t.partitions[pid].elr),
            last_known_elr=None,
        )
        for pid in shown
    ]
    answer = DescribeTopicPartitionsResponseTopic(
        error_code=ErrorCode.NO_ERROR,
        name=t.name,
        topic_id=t.topic_id.bytes,
        is_internal=t.name in INTERNAL_TOPICS,
        partitions=partitions,
        topic_authorized_operations=operations_bitfield(TOPIC_OPERATIONS),
    )
    return answer, (rest[0] if rest else None)


def _unknown(
    name: str, code: int = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
) -> DescribeTopicPartitionsResponseTopic:
    return DescribeTopicPartitionsResponseTopic(
        error_code=code, name=name, topic_id=NO_TOPIC_ID, is_internal=False, partitions=[]
    )


def handle(apis: KafkaApis, request: Request) -> DescribeTopicPartitionsResponse:
    body = request.body
    if not isinstance(body, DescribeTopicPartitionsRequest):
        raise TypeError(f"DescribeTopicPartitions handler given {type(body).__name__}")
    image = apis.image
    requested = sorted({t.name for t in body.topics})
    names = requested or sorted(image.topics_by_name)
    limit = max(1, min(body.response_partition_limit, MAX_PARTITIONS_PER_RESPONSE))
    cursor = body.cursor
    first_partition = 0
    if cursor is not None:
        start = cursor.topic_name
        if start not in names:
            return DescribeTopicPartitionsResponse(
                throttle_time_ms=0,
                topics=[_unknown(start, ErrorCode.INVALID_REQUEST)],
                next_cursor=None,
            )
        names = names[names.index(start) :]
        first_partition = max(0, cursor.partition_index)
    topics: list[DescribeTopicPartitionsResponseTopic] = []
    next_cursor = None
    budget = limit
    for i, name in enumerate(names):
        t = image.topic(name)
        if t is None:
            topics.append(_unknown(name))
            continue
        if budget <= 0:
            next_cursor = DescribeTopicPartitionsResponseNextCursor(
                topic_name=name, partition_index=first_partition if i == 0 else 0
            )
            break
        answer, resume_at = _topic(image, t, first_partition if i == 0 else 0, budget)
        topics.append(answer)
        budget -= len(answer.partitions)
        if resume_at is not None:
            next_cursor = DescribeTopicPartitionsResponseNextCursor(
                topic_name=name, partition_index=resume_at
            )
            break
    return DescribeTopicPartitionsResponse(
        throttle_time_ms=0, topics=topics, next_cursor=next_cursor
    )


def authorize(authz: RequestAuthorizer, s: Session, version: int, body: Body) -> Verdict:
    """Describe on each topic: refused ones are left out when all were asked for, else
    answered TOPIC_AUTHORIZATION_FAILED; the others carry the session's authorized
    operations."""
    if not isinstance(body, DescribeTopicPartitionsRequest):
        raise TypeError(f"DescribeTopicPartitions rule given {type(body).__name__}")
    listed = bool(body.topics)
    v = Verdict(body)

    def finish(response: AnyBody) -> AnyBody:
        if not isinstance(response, DescribeTopicPartitionsResponse):
            raise TypeError(f"DescribeTopicPartitions handler answered {type(response).__name__}")
        out = []
        for t in response.topics:
            name = t.name or ""
            if t.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
                out.append(t)
            elif not authz.topic(s, AclOperation.DESCRIBE, name):
                v.note(ResourceType.TOPIC)
                if listed:
                    out.append(dataclasses.replace(t, error_code=TOPIC_DENIED, partitions=[]))
            else:
                operations = authz.topic_operations(s, name)
                out.append(dataclasses.replace(t, topic_authorized_operations=operations))
        response.topics = out
        return response

    v.finish = finish
    return v
