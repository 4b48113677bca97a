"""ListTransactions (66): the transactional ids this broker coordinates
(a tool asks every broker), filtered by state names, producer ids, v1+ a minimum running time
and v2+ a regular expression on the id. Unknown state names come back in
``unknown_state_filters``; COORDINATOR_LOAD_IN_PROGRESS while a ``__transaction_state``
partition is loading. A pattern that is not a valid expression gets INVALID_REQUEST.
"""

from __future__ import annotations

import re
from typing import Any

from common.error_codes import ErrorCode
from common.security.acl import AclOperation
from data_plane.broker.apis import Body, KafkaApis, Request
from data_plane.security.request_authz import RequestAuthorizer, Session, Verdict, keep_only


def handle(apis: KafkaApis, request: Request) -> Body:
    body = request.body
    pattern = body.get("transactional_id_pattern") or ""
    try:
        # Kafka matches the whole id (Java's Matcher.matches).
        matcher = re.compile(pattern).fullmatch if pattern else None
    except re.error:
        return _answer(ErrorCode.INVALID_REQUEST, [], [])
    error, unknown, found = apis.transaction_coordinator.coordinator.list_transactions(
        set(body.get("state_filters") or []),
        set(body.get("producer_id_filters") or []),
        int(body.get("duration_filter", -1)),
        (lambda tid: matcher(tid) is not None) if matcher else (lambda _tid: True),
    )
    states = [
        {
            "transactional_id": md.transactional_id,
            "producer_id": md.producer_id,
            "transaction_state": md.state.display_name,
        }
        for md in sorted(found, key=lambda md: md.transactional_id)
    ]
    return _answer(error, unknown, states)


def _answer(error: int, unknown: list[str], states: list[dict]) -> Body:
    return {
        "throttle_time_ms": 0,
        "error_code": error,
        "unknown_state_filters": unknown,
        "transaction_states": states,
    }


def authorize(authz: RequestAuthorizer, s: Session, version: int, body: dict[str, Any]) -> Verdict:
    """Only the transactional ids the session may describe are listed."""
    v = Verdict(body)
    v.finish = keep_only(
        "transaction_states",
        lambda t: authz.transactional_id(s, AclOperation.DESCRIBE, t.get("transactional_id", "")),
    )
    return v
