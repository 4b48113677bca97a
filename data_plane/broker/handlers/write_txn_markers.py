"""WriteTxnMarkers (27): a transaction coordinator tells partition leaders to write the
end marker (COMMIT or ABORT) of a producer's transaction. Sent by coordinators to leaders
(data_plane.broker.txn_marker_sender), including to their own broker.

Per partition: the leader appends the control batch (``Partition.append_end_txn_marker``:
min.insync.replicas required; an older producer epoch: INVALID_PRODUCER_EPOCH; an older
coordinator epoch: TRANSACTION_COORDINATOR_FENCED; not the leader: NOT_LEADER_OR_FOLLOWER),
then the answer waits until every written marker is replicated (the high watermark passed
it, bounded by ``request.timeout.ms``), as an acks=all produce. A marker written and
replicated to a ``__consumer_offsets`` partition makes the group coordinator commit or drop
the transaction's pending offsets there.
"""

from __future__ import annotations

from collections.abc import Sequence

from common.error_codes import ErrorCode
from common.protocol.messages.write_txn_markers import (
    WriteTxnMarkersRequest,
    WriteTxnMarkersRequestMarker,
    WriteTxnMarkersResponse,
    WriteTxnMarkersResponseMarker,
    WriteTxnMarkersResponsePartition,
    WriteTxnMarkersResponseTopic,
)
from common.security.acl import AclOperation, ResourceType
from common.topic_partition import TopicPartition
from data_plane.broker.apis import Body, KafkaApis, Request
from data_plane.broker.delayed import await_replication
from data_plane.coordinator import OFFSETS_TOPIC
from data_plane.security.request_authz import CLUSTER_DENIED, RequestAuthorizer, Session, Verdict


async def handle(apis: KafkaApis, request: Request) -> WriteTxnMarkersResponse:
    body = request.body
    if not isinstance(body, WriteTxnMarkersRequest):
        raise TypeError(f"WriteTxnMarkers handler given {type(body).__name__}")
    return WriteTxnMarkersResponse(markers=await write_markers(apis, body.markers))


async def write_markers(
    apis: KafkaApis, markers: Sequence[WriteTxnMarkersRequestMarker]
) -> list[WriteTxnMarkersResponseMarker]:
    """Write each marker of a WriteTxnMarkers request on this broker; return the response's
    ``markers`` (the transaction marker sender calls this directly for partitions this
    broker leads)."""
    rm = apis.replica_manager
    codes: list[dict[TopicPartition, int]] = []
    required: dict[TopicPartition, int] = {}
    for m in markers:
        per: dict[TopicPartition, int] = {}
        for t in m.topics:
            for p in t.partition_indexes:
                tp = TopicPartition(t.name, p)
                result = rm.append_txn_marker(
                    tp, m.producer_id, m.producer_epoch, m.coordinator_epoch, m.transaction_result
                )
                per[tp] = int(result.error_code)
                if result.error_code == ErrorCode.NO_ERROR:
                    kind = "commit" if m.transaction_result else "abort"
                    apis.transaction_markers_written[kind] += 1
                    required[tp] = max(required.get(tp, 0), result.last_offset + 1)
        codes.append(per)
    outcome: dict[TopicPartition, int] = {}
    if required:
        outcome = await await_replication(
            apis.produce_purgatory, rm, required, apis.config.request_timeout_ms
        )
    out = []
    for m, per in zip(markers, codes, strict=True):
        by_topic: dict[str, list[WriteTxnMarkersResponsePartition]] = {}
        for tp, code in per.items():
            if code == ErrorCode.NO_ERROR:
                code = outcome.get(tp, ErrorCode.NO_ERROR)
                if code == ErrorCode.NO_ERROR and tp.topic == OFFSETS_TOPIC:
                    apis.group_coordinator.complete_transaction(
                        tp.partition, m.producer_id, m.transaction_result
                    )
            by_topic.setdefault(tp.topic, []).append(
                WriteTxnMarkersResponsePartition(partition_index=tp.partition, error_code=int(code))
            )
        out.append(
            WriteTxnMarkersResponseMarker(
                producer_id=m.producer_id,
                topics=[
                    WriteTxnMarkersResponseTopic(name=t, partitions=ps)
                    for t, ps in by_topic.items()
                ],
            )
        )
    return out


def authorize(authz: RequestAuthorizer, s: Session, version: int, body: Body) -> Verdict:
    """ClusterAction on the cluster (sent by transaction coordinators and the abort tool);
    refused: every partition CLUSTER_AUTHORIZATION_FAILED."""
    if not isinstance(body, WriteTxnMarkersRequest):
        raise TypeError(f"WriteTxnMarkers rule given {type(body).__name__}")
    if authz.cluster(s, AclOperation.CLUSTER_ACTION):
        return Verdict(body)
    markers = [
        WriteTxnMarkersResponseMarker(
            producer_id=m.producer_id,
            topics=[
                WriteTxnMarkersResponseTopic(
                    name=t.name,
                    partitions=[
                        WriteTxnMarkersResponsePartition(
                            partition_index=p, error_code=CLUSTER_DENIED
                        )
                        for p in t.partition_indexes
                    ],
                )
                for t in m.topics
            ],
        )
        for m in body.markers
    ]
    return Verdict.refused(body, WriteTxnMarkersResponse(markers=markers), ResourceType.CLUSTER)
