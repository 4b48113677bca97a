"""DeleteTopics (20): forwarded to the active controller; answered once this broker's
metadata no longer lists the deleted topics (bounded by the request's timeout).

v5+ answers an error message. v6 names each topic by name or by topic id (KIP-516); a topic
named by id is deleted only while its name still has that id (the controller checks), so a
client deleting an old id never deletes a re-created topic of the same name. An id this
broker does not know is UNKNOWN_TOPIC_ID (data_plane.broker.topic_ids resolved the known ones
to names before this handler)."""

from __future__ import annotations

import uuid
from typing import Any

from common.error_codes import ErrorCode
from common.protocol.topic_id_versions import DELETE_TOPICS_BY_ID_SINCE, ZERO_ID
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
    by_id: dict[str, uuid.UUID] = {}
    unknown_ids: list[bytes] = []
    if request.header.api_version >= DELETE_TOPICS_BY_ID_SINCE:
        names = []
        for t in body.get("topics") or ():
            topic_id = t.get("topic_id") or ZERO_ID
            if t.get("name") is None:
                unknown_ids.append(topic_id)
                continue
            names.append(t["name"])
            if topic_id != ZERO_ID:
                by_id[t["name"]] = uuid.UUID(bytes=topic_id)
        names = list(dict.fromkeys(names))
    else:
        names = list(dict.fromkeys(body.get("topic_names") or ()))
    results: dict[str, tuple[int, str | None, uuid.UUID | None]] = {}
    if names:
        try:
            for r in await forward(apis, "delete_topics", names, by_id or None):
                results[r.name] = (r.error_code, r.error_message, r.topic_id)
        except ControllerError as e:
            results = {n: (e.error_code, e.message, None) for n in names}
    deleted = [n for n, (code, _, _) in results.items() if code == ErrorCode.NO_ERROR]
    if deleted:
        await apis.wait_for_image(
            lambda img: all(img.topic(n) is None for n in deleted), timeout_ms(apis, body)
        )
    responses = []
    for n in names:
        code, message, deleted_id = results.get(n, (ErrorCode.UNKNOWN_SERVER_ERROR, None, None))
        topic_id = by_id.get(n, deleted_id)
        responses.append(
            {
                "name": n,
                "topic_id": ZERO_ID if topic_id is None else topic_id.bytes,
                "error_code": code,
                "error_message": message,
            }
        )
    for topic_id in unknown_ids:
        if topic_id == ZERO_ID:
            code, message = ErrorCode.INVALID_REQUEST, "A topic needs a name or an id."
        else:
            code, message = ErrorCode.UNKNOWN_TOPIC_ID, "This topic id is not known."
        responses.append(
            {"name": None, "topic_id": topic_id, "error_code": code, "error_message": message}
        )
    return {"throttle_time_ms": 0, "responses": responses}


def handle(apis: KafkaApis, request: Request) -> Any:
    return _handle(apis, request)


def authorize(authz: RequestAuthorizer, s: Session, version: int, body: dict[str, Any]) -> Verdict:
    """Delete on each topic (refused topics answered TOPIC_AUTHORIZATION_FAILED)."""
    if version >= DELETE_TOPICS_BY_ID_SINCE:
        new, denied = authz.split_topics(s, body, AclOperation.DELETE)
        if not denied:
            return Verdict(body)
        entries = [
            {
                "name": t.get("name"),
                "topic_id": t.get("topic_id") or ZERO_ID,
                "error_code": TOPIC_DENIED,
            }
            for t in denied
        ]
        return with_denied_topics(new, len(denied), "responses", entries)
    names = body.get("topic_names") or []
    allowed = [n for n in names if authz.topic(s, AclOperation.DELETE, n)]
    if len(allowed) == len(names):
        return Verdict(body)
    refused = [{"name": n, "error_code": TOPIC_DENIED} for n in names if n not in allowed]
    return with_denied_topics({**body, "topic_names": allowed}, len(refused), "responses", refused)
