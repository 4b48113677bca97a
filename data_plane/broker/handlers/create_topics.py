"""CreateTopics (19), v0-4: forwarded to the active controller; answered once this broker's
own metadata shows the new topics (bounded by the request's timeout), so the client's next
Metadata call sees them. Errors are per topic (the controller's code, or its call error on
every topic)."""

from __future__ import annotations

from typing import Any

from common.error_codes import ErrorCode
from data_plane.broker.apis import Body, KafkaApis, Request
from data_plane.broker.handlers.forwarding import forward, timeout_ms
from metadata.client import ControllerError
from metadata.messages import NewTopic


def _new_topic(t: dict[str, Any]) -> NewTopic:
    assignments = t.get("assignments") or []
    return NewTopic(
        name=t["name"],
        num_partitions=t.get("num_partitions", -1),
        replication_factor=t.get("replication_factor", -1),
        replica_assignment={a["partition_index"]: list(a["broker_ids"]) for a in assignments}
        or None,
        configs={c["name"]: c["value"] for c in t.get("configs") or () if c["value"] is not None},
    )


async def _handle(apis: KafkaApis, request: Request) -> Body:
    body = request.body
    requested = list(body.get("topics") or ())
    names = [t["name"] for t in requested]
    duplicates = {n for n in names if names.count(n) > 1}
    to_create = [_new_topic(t) for t in requested if t["name"] not in duplicates]
    results: dict[str, tuple[int, str | None]] = {
        n: (ErrorCode.INVALID_REQUEST, "topic listed more than once") for n in duplicates
    }
    wait_ms = timeout_ms(apis, body)
    validate_only = bool(body.get("validate_only", False))
    if to_create:
        try:
            answers = await forward(apis, "create_topics", to_create, validate_only, wait_ms / 1000)
            for r in answers:
                results[r.name] = (r.error_code, r.error_message)
        except ControllerError as e:
            for t in to_create:
                results[t.name] = (e.error_code, e.message)
    created = [n for n, (code, _) in results.items() if code == ErrorCode.NO_ERROR]
    if created and not validate_only:
        await apis.wait_for_image(lambda img: all(img.topic(n) for n in created), wait_ms)
    topics = []
    for name in names:
        code, message = results.get(name, (ErrorCode.UNKNOWN_SERVER_ERROR, "no answer"))
        topics.append({"name": name, "error_code": code, "error_message": message})
    return {"throttle_time_ms": 0, "topics": topics}


def handle(apis: KafkaApis, request: Request) -> Any:
    return _handle(apis, request)
