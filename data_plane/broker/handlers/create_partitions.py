"""CreatePartitions (37): forwarded to the active controller; answered once this
broker's metadata shows the new partition counts (bounded by the request's timeout)."""

from __future__ import annotations

from typing import Any

from common.error_codes import ErrorCode
from common.security.acl import AclOperation
from data_plane.broker.apis import Body, KafkaApis, Request
from data_plane.broker.handlers.forwarding import forward, timeout_ms
from data_plane.security.request_authz import (
    TOPIC_DENIED,
    RequestAuthorizer,
    Session,
    Verdict,
    with_denied_topics,
)
from metadata.client import ControllerError


async def _handle(apis: KafkaApis, request: Request) -> Body:
    body = request.body
    requested = list(body.get("topics") or ())
    totals = {t["name"]: t["count"] for t in requested}
    assignments = {
        t["name"]: [list(a["broker_ids"]) for a in t["assignments"]]
        for t in requested
        if t.get("assignments")
    }
    validate_only = bool(body.get("validate_only", False))
    results: dict[str, tuple[int, str | None]] = {}
    if totals:
        try:
            answers = await forward(
                apis, "create_partitions", totals, assignments or None, validate_only
            )
            for r in answers:
                results[r.name] = (r.error_code, r.error_message)
        except ControllerError as e:
            results = {n: (e.error_code, e.message) for n in totals}
    grown = [n for n, (code, _) in results.items() if code == ErrorCode.NO_ERROR]
    if grown and not validate_only:

        def visible(img: Any) -> bool:
            return all(
                (t := img.topic(n)) is not None and len(t.partitions) >= totals[n] for n in grown
            )

        await apis.wait_for_image(visible, timeout_ms(apis, body))
    out = []
    for t in requested:
        code, message = results.get(t["name"], (ErrorCode.UNKNOWN_SERVER_ERROR, "no answer"))
        out.append({"name": t["name"], "error_code": code, "error_message": message})
    return {"throttle_time_ms": 0, "results": out}


def handle(apis: KafkaApis, request: Request) -> Any:
    return _handle(apis, request)


def authorize(authz: RequestAuthorizer, s: Session, version: int, body: dict[str, Any]) -> Verdict:
    """Alter on each topic (refused topics answered TOPIC_AUTHORIZATION_FAILED)."""
    new, denied = authz.split_topics(s, body, AclOperation.ALTER)
    if not denied:
        return Verdict(body)
    entries = [
        {
            "name": t.get("name", ""),
            "error_code": TOPIC_DENIED,
            "error_message": "Authorization failed.",
        }
        for t in denied
    ]
    return with_denied_topics(new, len(denied), "results", entries)
