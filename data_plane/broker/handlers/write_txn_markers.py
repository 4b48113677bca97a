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

from typing import Any

from common.error_codes import ErrorCode
from common.security.acl import AclOperation, ResourceType
from common.topic_partition import TopicPartition
from data_plane.broker.apis import Body, KafkaApis, Request
from data_plane.broker.delayed import await_replication
from data_plane.coordinator import OFFSETS_TOPIC
from data_plane.security.request_authz import CLUSTER_DENIED, RequestAuthorizer, Session, Verdict


async def handle(apis: KafkaApis, request: Request) -> Body:
    return {"markers": await write_markers(apis, request.body.get("markers") or [])}


async def write_markers(apis: KafkaApis, markers: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Write each marker of a WriteTxnMarkers body on this broker; return the response's
    ``markers`` list (the transaction marker sender calls this directly for partitions this
    broker leads)."""
    rm = apis.replica_manager
    codes: list[dict[TopicPartition, int]] = []
    required: dict[TopicPartition, int] = {}
    for m in markers:
        per: dict[TopicPartition, int] = {}
        for t in m.get("topics") or ():
            for p in t.get("partition_indexes") or ():
                tp = TopicPartition(t["name"], p)
                result = rm.append_txn_marker(
                    tp,
                    m["producer_id"],
                    m["producer_epoch"],
                    m["coordinator_epoch"],
                    bool(m["transaction_result"]),
                )
                per[tp] = int(result.error_code)
                if result.error_code == ErrorCode.NO_ERROR:
                    kind = "commit" if m["transaction_result"] else "abort"
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
        by_topic: dict[str, list[dict[str, int]]] = {}
        for tp, code in per.items():
            if code == ErrorCode.NO_ERROR:
                code = outcome.get(tp, ErrorCode.NO_ERROR)
                if code == ErrorCode.NO_ERROR and tp.topic == OFFSETS_TOPIC:
                    apis.group_coordinator.complete_transaction(
                        tp.partition, m["producer_id"], bool(m["transaction_result"])
                    )
            by_topic.setdefault(tp.topic, []).append(
                {"partition_index": tp.partition, "error_code": int(code)}
            )
        out.append(
            {
                "producer_id": m["producer_id"],
                "topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()],
            }
        )
    return out


def authorize(authz: RequestAuthorizer, s: Session, version: int, body: dict[str, Any]) -> Verdict:
    """ClusterAction on the cluster (sent by transaction coordinators and the abort tool);
    refused: every partition CLUSTER_AUTHORIZATION_FAILED."""
    if authz.cluster(s, AclOperation.CLUSTER_ACTION):
        return Verdict(body)
    markers = [
        {
            "producer_id": m["producer_id"],
            "topics": [
                {
                    "name": t["name"],
                    "partitions": [
                        {"partition_index": p, "error_code": CLUSTER_DENIED}
                        for p in t.get("partition_indexes") or ()
                    ],
                }
                for t in m.get("topics") or ()
            ],
        }
        for m in body.get("markers") or ()
    ]
    return Verdict.refused(body, {"markers": markers}, ResourceType.CLUSTER)
