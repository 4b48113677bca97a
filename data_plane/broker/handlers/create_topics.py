"""CreateTopics (19): forwarded to the active controller; answered once this broker's
own metadata shows the new topics (bounded by the request's timeout), so the client's next
Metadata call sees them. Errors are per topic (the controller's code, or its call error on
every topic).

From v5 (flexible) a created topic's answer carries its partition count, replication factor
and every config with its value and source (KIP-525, read back from the controller: the
topic's overrides as dynamic topic configs, the rest as defaults); v7 adds the topic id. A
validate-only request answers the counts it asked for (or the defaults) and no configs.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Coroutine
from typing import Any

from common.config_resources import SOURCE_DEFAULT, SOURCE_DYNAMIC_TOPIC
from common.error_codes import ErrorCode
from common.protocol.messages.create_topics import (
    CreateTopicsRequest,
    CreateTopicsRequestTopic,
    CreateTopicsResponse,
    CreateTopicsResponseConfig,
    CreateTopicsResponseTopic,
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
from metadata.messages import NewTopic

# The first version whose answers carry partitions, replication factor and configs.
FIRST_DETAILED_VERSION = 5


@dataclasses.dataclass(frozen=True, slots=True)
class _Details:
    """What a v5+ answer says of a created topic (KIP-525)."""

    num_partitions: int
    replication_factor: int
    configs: list[CreateTopicsResponseConfig] | None
    topic_id: bytes = bytes(16)


def _new_topic(t: CreateTopicsRequestTopic) -> NewTopic:
    return NewTopic(
        name=t.name,
        num_partitions=t.num_partitions,
        replication_factor=t.replication_factor,
        replica_assignment={a.partition_index: list(a.broker_ids) for a in t.assignments} or None,
        configs={c.name: c.value for c in t.configs if c.value is not None},
    )


async def _handle(apis: KafkaApis, request: Request) -> CreateTopicsResponse:
    body = request.body
    if not isinstance(body, CreateTopicsRequest):
        raise TypeError(f"CreateTopics handler given {type(body).__name__}")
    names = [t.name for t in body.topics]
    duplicates = {n for n in names if names.count(n) > 1}
    to_create = [_new_topic(t) for t in body.topics if t.name not in duplicates]
    results: dict[str, tuple[int, str | None]] = {
        n: (ErrorCode.INVALID_REQUEST, "topic listed more than once") for n in duplicates
    }
    wait_ms = timeout_ms(apis, body.timeout_ms)
    validate_only = body.validate_only
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
    details: dict[str, _Details] = {}
    if created and request.header.api_version >= FIRST_DETAILED_VERSION:
        details = await _details(apis, created, to_create, validate_only)
    topics = []
    for name in names:
        code, message = results.get(name, (ErrorCode.UNKNOWN_SERVER_ERROR, "no answer"))
        topic = CreateTopicsResponseTopic(name=name, error_code=code, error_message=message)
        d = details.get(name)
        if d is not None:
            topic.topic_id = d.topic_id
            topic.num_partitions = d.num_partitions
            topic.replication_factor = d.replication_factor
            topic.configs = d.configs
        topics.append(topic)
    return CreateTopicsResponse(throttle_time_ms=0, topics=topics)


async def _details(
    apis: KafkaApis, created: list[str], asked: list[NewTopic], validate_only: bool
) -> dict[str, _Details]:
    """v5+: each created topic's partitions, replication factor, configs and topic id."""
    out: dict[str, _Details] = {}
    if validate_only:
        for t in asked:
            if t.name in created:
                out[t.name] = _Details(
                    num_partitions=t.num_partitions if t.num_partitions > 0 else -1,
                    replication_factor=t.replication_factor if t.replication_factor > 0 else -1,
                    configs=None,
                )
        return out
    try:
        described = await forward(apis, "describe_configs", created)
    except ControllerError:
        described = {}
    image = apis.image
    for name in created:
        topic = image.topic(name)
        if topic is None:
            continue
        first = topic.partitions.get(0)
        d = described.get(name)
        out[name] = _Details(
            topic_id=topic.topic_id.bytes,
            num_partitions=len(topic.partitions),
            replication_factor=len(first.replicas) if first is not None else -1,
            configs=None
            if d is None
            else [
                CreateTopicsResponseConfig(
                    name=c.name,
                    value=c.value,
                    read_only=c.read_only,
                    config_source=SOURCE_DEFAULT if c.is_default else SOURCE_DYNAMIC_TOPIC,
                    is_sensitive=False,
                )
                for c in d.configs
            ],
        )
    return out


def handle(apis: KafkaApis, request: Request) -> Coroutine[Any, Any, CreateTopicsResponse]:
    return _handle(apis, request)


def authorize(authz: RequestAuthorizer, s: Session, version: int, body: Body) -> Verdict:
    """Create on the cluster, else Create on each topic (refused topics answered
    TOPIC_AUTHORIZATION_FAILED)."""
    if not isinstance(body, CreateTopicsRequest):
        raise TypeError(f"CreateTopics rule given {type(body).__name__}")
    if authz.cluster(s, AclOperation.CREATE):
        return Verdict(body)
    cache: dict[str, bool] = {}
    for t in body.topics:
        if t.name not in cache:
            cache[t.name] = authz.topic(s, AclOperation.CREATE, t.name)
    denied = [t for t in body.topics if not cache[t.name]]
    if not denied:
        return Verdict(body)
    kept = dataclasses.replace(body, topics=[t for t in body.topics if cache[t.name]])
    entries = [
        CreateTopicsResponseTopic(
            name=t.name, error_code=TOPIC_DENIED, error_message="Authorization failed."
        )
        for t in denied
    ]
    return with_denied(kept, ResourceType.TOPIC, len(denied), "topics", entries)
