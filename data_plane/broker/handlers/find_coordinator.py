"""FindCoordinator (10): which broker coordinates a consumer group (key_type 0) or a
transactional id (key_type 1); v4+ asks for several keys at once and is answered per key.

The coordinator of key ``k`` is the leader of partition ``abs(javaStringHash(k)) %
partitions`` of ``__consumer_offsets`` (groups) or ``__transaction_state`` (transactional
ids) (data_plane.coordinator.hashing), answered with its endpoint on the listener the client
connected to.

- The topic does not exist yet: the broker asks the controller to create it, compacted, with
  ``offsets.topic.*`` or ``transaction.state.log.*`` settings (``__transaction_state`` gets
  min.insync.replicas = ``transaction.state.log.min.isr``, capped at its replication factor)
  and answers COORDINATOR_NOT_AVAILABLE; the client retries. While fewer brokers than the
  replication factor are registered it is not created (as Kafka).
- The partition has no live leader: COORDINATOR_NOT_AVAILABLE.
- Another key_type (v6's share groups, KIP-932, included): INVALID_REQUEST.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from dataclasses import dataclass

from common.error_codes import ErrorCode
from common.protocol.api_keys import FIND_COORDINATOR_BATCHED_SINCE
from common.protocol.messages.find_coordinator import (
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    FindCoordinatorResponseCoordinator,
)
from common.security.acl import AclOperation, ResourceType
from data_plane.broker.apis import Body, KafkaApis, Request
from data_plane.broker.coordinator_location import coordinator_broker
from data_plane.coordinator import OFFSETS_TOPIC
from data_plane.security.request_authz import (
    GROUP_DENIED,
    TXN_DENIED,
    RequestAuthorizer,
    Session,
    Verdict,
    with_denied,
)
from metadata.client import ControllerError
from metadata.messages import NewTopic
from metadata.topics import TRANSACTION_STATE_TOPIC

logger = logging.getLogger(__name__)

KEY_TYPE_GROUP = 0
KEY_TYPE_TRANSACTION = 1


@dataclass(frozen=True, slots=True)
class _InternalTopic:
    name: str
    partitions: int
    replication_factor: int
    configs: dict[str, str]


def _internal_topic(apis: KafkaApis, key_type: int) -> _InternalTopic:
    cfg = apis.config
    if key_type == KEY_TYPE_GROUP:
        return _InternalTopic(
            OFFSETS_TOPIC,
            cfg.offsets_topic_num_partitions,
            cfg.offsets_topic_replication_factor,
            {"cleanup.policy": "compact", "segment.bytes": str(cfg.offsets_topic_segment_bytes)},
        )
    rf = cfg.transaction_state_log_replication_factor
    return _InternalTopic(
        TRANSACTION_STATE_TOPIC,
        cfg.transaction_state_log_num_partitions,
        rf,
        {
            "cleanup.policy": "compact",
            "segment.bytes": str(cfg.transaction_state_log_segment_bytes),
            "min.insync.replicas": str(min(cfg.transaction_state_log_min_isr, rf)),
        },
    )


@dataclass(frozen=True, slots=True)
class _Answer:
    """Where one key's coordinator is (node -1, no host, port -1 with an error)."""

    code: int
    message: str | None = None
    node_id: int = -1
    host: str = ""
    port: int = -1


def handle(apis: KafkaApis, request: Request) -> FindCoordinatorResponse:
    body = request.body
    if not isinstance(body, FindCoordinatorRequest):
        raise TypeError(f"FindCoordinator handler given {type(body).__name__}")
    key_type = body.key_type
    if request.header.api_version < FIND_COORDINATOR_BATCHED_SINCE:
        a = _locate(apis, request, body.key, key_type)
        return FindCoordinatorResponse(
            throttle_time_ms=0,
            error_code=a.code,
            error_message=a.message,
            node_id=a.node_id,
            host=a.host,
            port=a.port,
        )
    coordinators = []
    for key in body.coordinator_keys:
        a = _locate(apis, request, key, key_type)
        coordinators.append(
            FindCoordinatorResponseCoordinator(key, a.node_id, a.host, a.port, a.code, a.message)
        )
    return FindCoordinatorResponse(throttle_time_ms=0, coordinators=coordinators)


def _locate(apis: KafkaApis, request: Request, key: str, key_type: int) -> _Answer:
    """Where the coordinator of ``key`` (of ``key_type``) is, or why it cannot be named."""
    if key_type not in (KEY_TYPE_GROUP, KEY_TYPE_TRANSACTION):
        return _Answer(ErrorCode.INVALID_REQUEST, f"unknown coordinator key_type {key_type}")
    if not key:
        if key_type == KEY_TYPE_GROUP:
            return _Answer(ErrorCode.INVALID_GROUP_ID, "empty group id")
        return _Answer(ErrorCode.INVALID_REQUEST, "empty transactional id")
    internal = _internal_topic(apis, key_type)
    image = apis.image
    topic = image.topic(internal.name)
    if topic is None or not topic.partitions:
        return _Answer(ErrorCode.COORDINATOR_NOT_AVAILABLE, _create_internal_topic(apis, internal))
    broker = coordinator_broker(image, internal.name, key)
    if broker is None:
        return _Answer(
            ErrorCode.COORDINATOR_NOT_AVAILABLE,
            f"the key's {internal.name} partition has no leader",
        )
    lis = broker.listener(request.listener_name) or (
        broker.listeners[0] if broker.listeners else None
    )
    if lis is None:
        return _Answer(ErrorCode.COORDINATOR_NOT_AVAILABLE, "the coordinator has no listener")
    return _Answer(ErrorCode.NO_ERROR, None, broker.broker_id, lis.host, lis.port)


def _create_internal_topic(apis: KafkaApis, internal: _InternalTopic) -> str:
    """Start creating an internal topic (at most one call in flight per topic); a message for
    the client's COORDINATOR_NOT_AVAILABLE."""
    name = internal.name
    live = sum(1 for b in apis.image.brokers.values() if not b.fenced)
    if live < internal.replication_factor:
        return (
            f"{name} needs {internal.replication_factor} brokers (its replication factor), "
            f"{live} are alive"
        )
    if apis.controller is None:
        return "this broker has no controller client"
    if name in apis.auto_creating:
        return f"{name} is being created"
    apis.auto_creating.add(name)
    controller = apis.controller
    topic = NewTopic(
        name, internal.partitions, internal.replication_factor, configs=dict(internal.configs)
    )

    def create() -> None:
        try:
            (result,) = controller.create_topics([topic])
            if result.error_code not in (ErrorCode.NO_ERROR, ErrorCode.TOPIC_ALREADY_EXISTS):
                logger.warning("creating %s failed: %s", name, result.error_message)
            else:
                logger.info("created %s", name)
        except ControllerError as e:
            logger.warning("creating %s failed: %s", name, e)

    future = asyncio.get_running_loop().run_in_executor(apis.admin_executor, create)
    future.add_done_callback(lambda _f: apis.auto_creating.discard(name))
    return f"{name} is being created"


def authorize(authz: RequestAuthorizer, s: Session, version: int, body: Body) -> Verdict:
    """Describe on the group (key_type 0) or on the transactional id (key_type 1); refused
    keys are answered GROUP_ / TRANSACTIONAL_ID_AUTHORIZATION_FAILED (v4+ per key)."""
    if not isinstance(body, FindCoordinatorRequest):
        raise TypeError(f"FindCoordinator rule given {type(body).__name__}")
    if body.key_type == KEY_TYPE_TRANSACTION:
        code, rtype = TXN_DENIED, ResourceType.TRANSACTIONAL_ID
    else:
        code, rtype = GROUP_DENIED, ResourceType.GROUP

    def allowed(key: str) -> bool:
        return authz.allowed(s, AclOperation.DESCRIBE, rtype, key)

    message = "Authorization failed."
    if version < FIND_COORDINATOR_BATCHED_SINCE:
        if allowed(body.key):
            return Verdict(body)
        denied_answer = FindCoordinatorResponse(
            error_code=code, error_message=message, node_id=-1, host="", port=-1
        )
        return Verdict.refused(body, denied_answer, rtype)
    keys = body.coordinator_keys
    denied = [k for k in keys if not allowed(k)]
    if not denied:
        return Verdict(body)
    kept = dataclasses.replace(body, coordinator_keys=[k for k in keys if k not in denied])
    entries = [FindCoordinatorResponseCoordinator(k, -1, "", -1, code, message) for k in denied]
    return with_denied(kept, rtype, len(denied), "coordinators", entries)
