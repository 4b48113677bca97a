"""DeleteTopics (20): forwarded to the active controller; answered once this broker's
metadata no longer lists the deleted topics (bounded by the request's timeout).

v5+ answers an error message. v6 names each topic by name or by topic id (KIP-516); a topic
named by id is deleted only while its name still has that id (the controller checks), so a
client deleting an old id never deletes a re-created topic of the same name. An id this
broker does not know is UNKNOWN_TOPIC_ID (data_plane.broker.topic_ids resolved the known ones
to names before this handler)."""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Coroutine
from typing import Any

from common.error_codes import ErrorCode
from common.protocol.messages.delete_topics import (
    DeleteTopicsRequest,
    DeleteTopicsRequestTopic,
    DeleteTopicsResponse,
    DeleteTopicsResponseResponse,
)
from common.protocol.topic_id_versions import DELETE_TOPICS_BY_ID_SINCE, ZERO_ID
from common.security.acl import AclOperation, ResourceType
from data_plane.broker.apis import Body, KafkaApis, Request
from data_plane.broker.handlers.forwarding import forward, timeout_ms
from data_plane.security.request_authz import (
    TOPIC_DENIED,
    RequestAuthorizer,
    Session,
    Verdict,
    with_denied,
)
from metadata.client import ControllerError


async def _delete(apis: KafkaApis, body: DeleteTopicsRequest, version: int) -> DeleteTopicsResponse:
    by_id: dict[str, uuid.UUID] = {}
    unknown_ids: list[bytes] = []
    if version >= DELETE_TOPICS_BY_ID_SINCE:
        names = []
        for t in body.topics:
            if t.name is None:
                unknown_ids.append(t.topic_id)
                continue
            names.append(t.name)
            if t.topic_id != ZERO_ID:
                by_id[t.name] = uuid.UUID(bytes=t.topic_id)
        names = list(dict.fromkeys(names))
    else:
        names = list(dict.fromkeys(body.topic_names))
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
            lambda img: all(img.topic(n) is None for n in deleted),
            timeout_ms(apis, body.timeout_ms),
        )
    responses = []
    for n in names:
        code, message, deleted_id = results.get(n, (ErrorCode.UNKNOWN_SERVER_ERROR, None, None))
        topic_id = by_id.get(n, deleted_id)
        responses.append(
            DeleteTopicsResponseResponse(
                name=n,
                topic_id=ZERO_ID if topic_id is None else topic_id.bytes,
                error_code=code,
                error_message=message,
            )
        )
    for unknown in unknown_ids:
        if unknown == ZERO_ID:
            code, message = ErrorCode.INVALID_REQUEST, "A topic needs a name or an id."
        else:
            code, message = ErrorCode.UNKNOWN_TOPIC_ID, "This topic id is not known."
        responses.append(
            DeleteTopicsResponseResponse(
                name=None, topic_id=unknown, error_code=code, error_message=message
            )
        )
    return DeleteTopicsResponse(throttle_time_ms=0, responses=responses)


def handle(apis: KafkaApis, request: Request) -> Coroutine[Any, Any, DeleteTopicsResponse]:
    body = request.body
    if not isinstance(body, DeleteTopicsRequest):
        raise TypeError(f"DeleteTopics handler given {type(body).__name__}")
    return _delete(apis, body, request.header.api_version)


def authorize(authz: RequestAuthorizer, s: Session, version: int, body: Body) -> Verdict:
    """Delete on each topic (refused topics answered TOPIC_AUTHORIZATION_FAILED)."""
    if not isinstance(body, DeleteTopicsRequest):
        raise TypeError(f"DeleteTopics rule given {type(body).__name__}")
    cache: dict[str, bool] = {}

    def allowed(name: str) -> bool:
        ok = cache.get(name)
        if ok is None:
            ok = cache[name] = authz.topic(s, AclOperation.DELETE, name)
        return ok

    if version >= DELETE_TOPICS_BY_ID_SINCE:
        # A topic id this broker does not know has no name (data_plane.broker.topic_ids):
        # there is nothing to protect, and the handler answers UNKNOWN_TOPIC_ID.
        kept: list[DeleteTopicsRequestTopic] = []
        denied: list[DeleteTopicsRequestTopic] = []
        for t in body.topics:
            (kept if t.name is None or allowed(t.name) else denied).append(t)
        if not denied:
            return Verdict(body)
        entries = [
            DeleteTopicsResponseResponse(name=t.name, topic_id=t.topic_id, error_code=TOPIC_DENIED)
            for t in denied
        ]
        new = dataclasses.replace(body, topics=kept)
        return with_denied(new, ResourceType.TOPIC, len(denied), "responses", entries)
    kept_names: list[str] = []
    denied_names: list[str] = []
    for n in body.topic_names:
        (kept_names if allowed(n) else denied_names).append(n)
    if not denied_names:
        return Verdict(body)
    refused = [DeleteTopicsResponseResponse(name=n, error_code=TOPIC_DENIED) for n in denied_names]
    new = dataclasses.replace(body, topic_names=kept_names)
    return with_denied(new, ResourceType.TOPIC, len(refused), "responses", refused)
