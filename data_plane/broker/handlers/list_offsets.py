"""ListOffsets (2): earliest (-2) = log start offset, latest (-1) = high watermark
(read_uncommitted) or last stable offset (read_committed, ``isolation_level`` 1 from v2), else
the first offset whose timestamp is >= the given one below that bound
(Log.find_offset_by_timestamp; -1/-1 when none). v7+ max timestamp (-3): the first record with
the largest timestamp, below the same bound (KIP-734); v8+ earliest local (-4): the log start
offset (every segment is local); v9+ latest tiered (-5): -1 (nothing is in remote storage).
A new leader whose high watermark is still below the start of its epoch answers latest, and a
timestamp lookup that finds nothing below the bound, OFFSET_NOT_AVAILABLE until the high
watermark catches up (KIP-207), so a client never sees a partition's end move backwards.
Leader only. Follower replicas (replica_id >= 0) asking for latest get the log end offset.
v0 answers ``old_style_offsets`` ([offset], or [] when none)."""

from __future__ import annotations

from common.error_codes import ErrorCode
from common.errors import ApiError
from common.protocol.messages.list_offsets import (
    ListOffsetsRequest,
    ListOffsetsRequestPartition,
    ListOffsetsResponse,
    ListOffsetsResponsePartition,
    ListOffsetsResponseTopic,
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

EARLIEST_TIMESTAMP = -2
LATEST_TIMESTAMP = -1
# v7+: the record with the largest timestamp (KIP-734); v8+: the first offset on local disk
# (KIP-405); v9+: the last offset in remote storage (KIP-1005).
MAX_TIMESTAMP = -3
EARLIEST_LOCAL_TIMESTAMP = -4
LATEST_TIERED_TIMESTAMP = -5
# isolation_level (v2+): LATEST is the last stable offset for read_committed clients.
READ_COMMITTED = 1


def _one(
    apis: KafkaApis,
    tp: TopicPartition,
    p: ListOffsetsRequestPartition,
    replica_id: int,
    read_committed: bool,
) -> ListOffsetsResponsePartition:
    out = ListOffsetsResponsePartition(
        partition_index=tp.partition,
        error_code=ErrorCode.NO_ERROR,
        timestamp=-1,
        offset=-1,
        leader_epoch=-1,
    )
    try:
        part = apis.replica_manager.leader_partition(tp)
        part.check_leader_epoch(p.current_leader_epoch)
        ts = p.timestamp
        if ts in (EARLIEST_TIMESTAMP, EARLIEST_LOCAL_TIMESTAMP):  # all of the log is local
            out.offset = part.log.log_start_offset
        elif ts == LATEST_TIERED_TIMESTAMP:
            pass  # nothing is tiered: -1, as Kafka answers without remote storage
        elif ts == LATEST_TIMESTAMP:
            if replica_id >= 0:
                out.offset = part.log.log_end_offset
            else:
                part.check_offsets_available()
                if read_committed:
                    out.offset = part.log.last_stable_offset
                else:
                    out.offset = part.high_watermark
        else:
            if ts == MAX_TIMESTAMP:
                found = part.offset_of_max_timestamp()
            else:
                found = part.offset_for_timestamp(ts)
            limit = part.log.last_stable_offset if read_committed else part.high_watermark
            if found is not None and found[0] < limit:
                out.offset, out.timestamp = found
            elif replica_id < 0:
                # Nothing below the bound: while a new leader's HW lags, a later record may
                # exist that this leader cannot name yet (KIP-207).
                part.check_offsets_available()
    except (BrokerRequestError, ApiError) as e:
        out.error_code = e.error_code
    out.old_style_offsets = [out.offset] if out.offset >= 0 else []
    return out


def handle(apis: KafkaApis, request: Request) -> ListOffsetsResponse:
    body = request.body
    if not isinstance(body, ListOffsetsRequest):
        raise TypeError(f"ListOffsets handler given {type(body).__name__}")
    replica_id = body.replica_id
    read_committed = body.isolation_level == READ_COMMITTED
    topics = []
    for t in body.topics:
        name = t.name
        parts = [
            _one(apis, TopicPartition(name, p.partition_index), p, replica_id, read_committed)
            for p in t.partitions
        ]
        topics.append(ListOffsetsResponseTopic(name=name, partitions=parts))
    return ListOffsetsResponse(throttle_time_ms=0, topics=topics)


def authorize(authz: RequestAuthorizer, s: Session, version: int, body: Body) -> Verdict:
    """Describe on each topic (refused: each partition TOPIC_AUTHORIZATION_FAILED)."""
    if not isinstance(body, ListOffsetsRequest):
        raise TypeError(f"ListOffsets rule given {type(body).__name__}")
    new, denied = authz.split_topics(s, body, AclOperation.DESCRIBE)
    if not denied:
        return Verdict(body)
    entries = [
        ListOffsetsResponseTopic(
            name=t.name,
            partitions=[
                ListOffsetsResponsePartition(
                    partition_index=p.partition_index, error_code=TOPIC_DENIED
                )
                for p in t.partitions
            ],
        )
        for t in denied
    ]
    return with_denied_topics(new, len(denied), "topics", entries)
