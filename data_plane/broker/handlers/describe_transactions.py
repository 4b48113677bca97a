"""DescribeTransactions (65): the state of transactional ids this broker
coordinates (``kraftlog transactions describe``, kafka-transactions.sh). Per id: NOT_COORDINATOR,
COORDINATOR_LOAD_IN_PROGRESS, TRANSACTIONAL_ID_NOT_FOUND, or the state name (Kafka's: Empty,
Ongoing, PrepareCommit, ...), timeout, start time, producer id and epoch, and the partitions
of the current transaction grouped by topic.
"""

from __future__ import annotations

from typing import Any

from common.error_codes import ErrorCode
from common.security.acl import AclOperation, ResourceType
from data_plane.broker.apis import Body, KafkaApis, Request
from data_plane.security.request_authz import (
    TXN_DENIED,
    RequestAuthorizer,
    Session,
    Verdict,
    with_denied,
)


def handle(apis: KafkaApis, request: Request) -> Body:
    coordinator = apis.transaction_coordinator.coordinator
    states = []
    for tid in request.body.get("transactional_ids") or []:
        error, md = coordinator.describe(tid)
        entry: dict[str, Any] = {
            "error_code": error,
            "transactional_id": tid,
            "transaction_state": "",
            "transaction_timeout_ms": 0,
            "transaction_start_time_ms": -1,
            "producer_id": -1,
            "producer_epoch": -1,
            "topics": [],
        }
        if error == ErrorCode.NO_ERROR and md is not None:
            by_topic: dict[str, list[int]] = {}
            for topic, partition in sorted(md.partitions):
                by_topic.setdefault(topic, []).append(partition)
            entry.update(
                transaction_state=md.state.display_name,
                transaction_timeout_ms=md.txn_timeout_ms,
                transaction_start_time_ms=md.txn_start_timestamp_ms,
                producer_id=md.producer_id,
                producer_epoch=md.producer_epoch,
                topics=[{"topic": t, "partitions": ps} for t, ps in by_topic.items()],
            )
        states.append(entry)
    return {"throttle_time_ms": 0, "transaction_states": states}


def authorize(authz: RequestAuthorizer, s: Session, version: int, body: dict[str, Any]) -> Verdict:
    """Describe on each transactional id (refused ids answered
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED)."""
    ids = body.get("transactional_ids") or []
    allowed = [t for t in ids if authz.transactional_id(s, AclOperation.DESCRIBE, t)]
    if len(allowed) == len(ids):
        return Verdict(body)
    entries = [
        {"error_code": TXN_DENIED, "transactional_id": t, "transaction_state": ""}
        for t in ids
        if t not in allowed
    ]
    kept = {**body, "transactional_ids": allowed}
    rtype = ResourceType.TRANSACTIONAL_ID
    return with_denied(kept, rtype, len(entries), "transaction_states", entries)
