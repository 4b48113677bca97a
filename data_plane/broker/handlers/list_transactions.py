"""ListTransactions (66): the transactional ids this broker coordinates
(a tool asks every broker), filtered by state names, producer ids, v1+ a minimum running time
and v2+ a regular expression on the id. Unknown state names come back in
``unknown_state_filters``; COORDINATOR_LOAD_IN_PROGRESS while a ``__transaction_state``
partition is loading. A pattern that is not a valid expression gets INVALID_REQUEST.
"""

from __future__ import annotations

import re

from common.error_codes import ErrorCode
from common.protocol.messages.list_transactions import (
    ListTransactionsRequest,
    ListTransactionsResponse,
    ListTransactionsResponseTransactionState,
)
from common.security.acl import AclOperation
from data_plane.broker.apis import Body, KafkaApis, Request
from data_plane.security.request_authz import RequestAuthorizer, Session, Verdict, keep_only


def handle(apis: KafkaApis, request: Request) -> ListTransactionsResponse:
    body = request.body
    if not isinstance(body, ListTransactionsRequest):
        raise TypeError(f"ListTransactions handler given {type(body).__name__}")
    pattern = body.transactional_id_pattern or ""
    try:
        # Kafka matches the whole id (Java's Matcher.matches).
        matcher = re.compile(pattern).fullmatch if pattern else None
    except re.error:
        return _answer(ErrorCode.INVALID_REQUEST, [], [])
    error, unknown, found = apis.transaction_coordinator.coordinator.list_transactions(
        set(body.state_filters),
        set(body.producer_id_filters),
        body.duration_filter,
        (lambda tid: matcher(tid) is not None) if matcher else (lambda _tid: True),
    )
    states = [
        ListTransactionsResponseTransactionState(
            transactional_id=md.transactional_id,
            producer_id=md.producer_id,
            transaction_state=md.state.display_name,
        )
        for md in sorted(found, key=lambda md: md.transactional_id)
    ]
    return _answer(error, unknown, states)


def _answer(
    error: int, unknown: list[str], states: list[ListTransactionsResponseTransactionState]
) -> ListTransactionsResponse:
    return ListTransactionsResponse(
        throttle_time_ms=0,
        error_code=error,
        unknown_state_filters=unknown,
        transaction_states=states,
    )


def authorize(authz: RequestAuthorizer, s: Session, version: int, body: Body) -> Verdict:
    """Only the transactional ids the session may describe are listed."""
    if not isinstance(body, ListTransactionsRequest):
        raise TypeError(f"ListTransactions rule given {type(body).__name__}")

    def may_describe(t: ListTransactionsResponseTransactionState) -> bool:
        return authz.transactional_id(s, AclOperation.DESCRIBE, t.transactional_id)

    v = Verdict(body)
    v.finish = keep_only("transaction_states", may_describe)
    return v
