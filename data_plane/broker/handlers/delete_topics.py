"""DeleteTopics (20), v0-3: forwarded to the active controller; answered once this broker's
metadata no longer lists the deleted topics (bounded by the request's timeout)."""

from __future__ import annotations

from typing import Any

from common.error_codes import ErrorCode
from data_plane.broker.apis import Body, KafkaApis, Request
from data_plane.broker.handlers.forwarding import forward, timeout_ms
from metadata.client import ControllerError


async def _handle(apis: KafkaApis, request: Request) -> Body:
    body = request.body
    names = list(dict.fromkeys(body.get("topic_names") or ()))
    results: dict[str, int] = {}
    if names:
        try:
            for r in await forward(apis, "delete_topics", names):
                results[r.name] = r.error_code
        except ControllerError as e:
            results = {n: e.error_code for n in names}
    deleted = [n for n, code in results.items() if code == ErrorCode.NO_ERROR]
    if deleted:
        await apis.wait_for_image(
            lambda img: all(img.topic(n) is None for n in deleted), timeout_ms(apis, body)
        )
    responses = [
        {"name": n, "error_code": results.get(n, ErrorCode.UNKNOWN_SERVER_ERROR)} for n in names
    ]
    return {"throttle_time_ms": 0, "responses": responses}


def handle(apis: KafkaApis, request: Request) -> Any:
    return _handle(apis, request)
