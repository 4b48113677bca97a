"""DescribeTransactions (65): the state of transactional ids this broker
coordinates (``kraftlog transactions describe``, kafka-transactions.sh). Per id: NOT_COORDINATOR,
COORDINATOR_LOAD_IN_PROGRESS, TRANSACTIONAL_ID_NOT_FOUND, or the state name (Kafka's: Empty,
Ongoing, PrepareCommit, ...), timeout, start time, producer id and epoch, and the partitions
of the current transaction grouped by topic.
"""

from __future__ import annotations

import dataclasses

from common.error_codes import ErrorCode
from common.protocol.messages.describe_transactions import (
    DescribeTransactionsRequest,
    DescribeTransactionsResponse,
    DescribeTransactionsResponseTopic,
    DescribeTransactionsResponseTransactionState,
)
from common.security.acl import AclOperation, ResourceType
from data_plane.broker.apis import Body, KafkaApis, Request
from data_plane.security.request_authz import (
    TXN_DENIED,
    RequestAuthorizer,
    Session,
    Verdict,
    with_denied,
)


def handle(apis: KafkaApis, request: Request) -> DescribeTransactionsResponse:
    body = request.body
    if not isinstance(body, DescribeTransactionsRequest):
        raise TypeError(f"DescribeTransactions handler given {type(body).__name__}")
    coordinator = apis.transaction_coordinator.coordinator
    states = []
    for tid in body.transactional_ids:
        error, md = coordinator.describe(tid)
        if error != ErrorCode.NO_ERROR or md is None:
            states.append(_without_state(error, tid))
            continue
        by_topic: dict[str, list[int]] = {}
        for topic, partition in sorted(md.partitions):
            by_topic.setdefault(topic, []).append(partition)
        states.append(
            DescribeTransactionsResponseTransactionState(
                error_code=error,
                transactional_id=tid,
                transaction_state=md.state.display_name,
                transaction_timeout_ms=md.txn_timeout_ms,
                transaction_start_time_ms=md.txn_start_timestamp_ms,
                producer_id=md.producer_id,
                producer_epoch=md.producer_epoch,
                topics=[
                    DescribeTransactionsResponseTopic(topic=t, partitions=ps)
                    for t, ps in by_topic.items()
                ],
            )
        )
    return DescribeTransactionsResponse(throttle_time_ms=0, transaction_states=states)


def _without_state(error: int, tid: str) -> DescribeTransactionsResponseTransactionState:
    """The answer for an id whose state is not described (not found, not coordinated here)."""
    return DescribeTransactionsResponseTransactionState(
        error_code=error,
        transactional_id=tid,
        transaction_state="",
        transaction_timeout_ms=0,
        transaction_start_time_ms=-1,
        producer_id=-1,
        producer_epoch=-1,
        topics=[],
    )


def authorize(authz: RequestAuthorizer, s: Session, version: int, body: Body) -> Verdict:
    """Describe on each transactional id (refused ids answered
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED)."""
    if not isinstance(body, DescribeTransactionsRequest):
        raise TypeError(f"DescribeTransactions rule given {type(body).__name__}")
    ids = body.transactional_ids
    allowed = [t for t in ids if authz.transactional_id(s, AclOperation.DESCRIBE, t)]
    if len(allowed) == len(ids):
        return Verdict(body)
    entries = [
        DescribeTransactionsResponseTransactionState(
            error_code=TXN_DENIED, transactional_id=t, transaction_state=""
        )
        for t in ids
        if t not in allowed
    ]
    kept = dataclasses.replace(body, transactional_ids=allowed)
    rtype = ResourceType.TRANSACTIONAL_ID
    return with_denied(kept, rtype, len(entries), "transaction_states", entries)
