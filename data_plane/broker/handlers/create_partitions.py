"""CreatePartitions (37): forwarded to the active controller; answered once this
broker's metadata shows the new partition counts (bounded by the request's timeout)."""

from __future__ import annotations

import dataclasses
from collections.abc import Coroutine
from typing import Any

from common.error_codes import ErrorCode
from common.protocol.messages.create_partitions import (
    CreatePartitionsRequest,
    CreatePartitionsRequestTopic,
    CreatePartitionsResponse,
    CreatePartitionsResponseResult,
)
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
from metadata.image import MetadataImage


async def _grow(apis: KafkaApis, body: CreatePartitionsRequest) -> CreatePartitionsResponse:
    totals = {t.name: t.count for t in body.topics}
    assignments = {
        t.name: [list(a.broker_ids) for a in t.assignments] for t in body.topics if t.assignments
    }
    validate_only = body.validate_only
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

        def visible(img: MetadataImage) -> bool:
            return all(
                (t := img.topic(n)) is not None and len(t.partitions) >= totals[n] for n in grown
            )

        await apis.wait_for_image(visible, timeout_ms(apis, body.timeout_ms))
    out = []
    for t in body.topics:
        code, message = results.get(t.name, (ErrorCode.UNKNOWN_SERVER_ERROR, "no answer"))
        out.append(
            CreatePartitionsResponseResult(name=t.name, error_code=code, error_message=message)
        )
    return CreatePartitionsResponse(throttle_time_ms=0, results=out)


def handle(apis: KafkaApis, request: Request) -> Coroutine[Any, Any, CreatePartitionsResponse]:
    body = request.body
    if not isinstance(body, CreatePartitionsRequest):
        raise TypeError(f"CreatePartitions handler given {type(body).__name__}")
    return _grow(apis, body)


def authorize(authz: RequestAuthorizer, s: Session, version: int, body: Body) -> Verdict:
    """Alter on each topic (refused topics answered TOPIC_AUTHORIZATION_FAILED)."""
    if not isinstance(body, CreatePartitionsRequest):
        raise TypeError(f"CreatePartitions rule given {type(body).__name__}")
    cache: dict[str, bool] = {}
    kept: list[CreatePartitionsRequestTopic] = []
    denied: list[CreatePartitionsRequestTopic] = []
    for t in body.topics:
        ok = cache.get(t.name)
        if ok is None:
            ok = cache[t.name] = authz.topic(s, AclOperation.ALTER, t.name)
        (kept if ok else denied).append(t)
    if not denied:
        return Verdict(body)
    entries = [
        CreatePartitionsResponseResult(
            name=t.name, error_code=TOPIC_DENIED, error_message="Authorization failed."
        )
        for t in denied
    ]
    new = dataclasses.replace(body, topics=kept)
    return with_denied(new, ResourceType.TOPIC, len(denied), "results", entries)
