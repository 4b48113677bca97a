"""Metadata (3): brokers, controller, topics and partitions from this broker's image.

- Brokers: every unfenced broker, with its endpoint on the listener the client connected to.
- ``controller_id``: this broker's own id. Clients send controller-bound admin requests
  (CreateTopics...) to that node id and must find it in the broker list; as in Kafka's KRaft
  mode every broker forwards them to the active controller, so naming ourselves is correct.
- Topics: ``topics`` null (v1+) or empty (v0) means all. An unknown topic is
  UNKNOWN_TOPIC_OR_PARTITION, or, with ``auto.create.topics.enable`` and the request allowing
  it, is created through the controller and answered LEADER_NOT_AVAILABLE meanwhile.
- Partitions: leader (-1 with LEADER_NOT_AVAILABLE when none), leader epoch, replicas, ISR, and
  offline replicas (replicas on fenced or unregistered brokers).
- v8+: the cluster's and each topic's authorized operations when asked (every operation
  without an authorizer; with one, :func:`authorize` fills in what the
  caller may do). librdkafka's describe_cluster and describe_topics read them here. v11+
  drops the cluster's (DescribeCluster has them).
- v10+: every topic's id (KIP-516); v12 looks a topic up by id when its name is null
  (data_plane.broker.topic_ids resolves it first), UNKNOWN_TOPIC_ID for an unknown id.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from common.error_codes import ErrorCode
from common.protocol.topic_id_versions import METADATA_LOOKUP_BY_ID_SINCE, ZERO_ID
from common.security.acl import (
    CLUSTER_OPERATIONS,
    TOPIC_OPERATIONS,
    AclOperation,
    ResourceType,
    operations_bitfield,
)
from data_plane.broker.apis import Body, KafkaApis, Request
from data_plane.security.request_authz import (
    TOPIC_DENIED,
    RequestAuthorizer,
    Session,
    Verdict,
    keep_only,
)
from metadata.client import ControllerError
from metadata.image import MetadataImage, PartitionRegistration, TopicImage
from metadata.messages import NewTopic
from metadata.topics import INTERNAL_TOPICS, topic_name_error

logger = logging.getLogger(__name__)


def live_brokers(image: MetadataImage, listener_name: str) -> list[dict[str, Any]]:
    """Every unfenced broker with its endpoint on ``listener_name`` (else its first one)."""
    out = []
    for b in sorted(image.brokers.values(), key=lambda b: b.broker_id):
        if b.fenced:
            continue
        lis = b.listener(listener_name) or (b.listeners[0] if b.listeners else None)
        if lis is None:
            continue
        out.append({"node_id": b.broker_id, "host": lis.host, "port": lis.port, "rack": b.rack})
    return out


def live_broker_ids(image: MetadataImage) -> set[int]:
    return {b.broker_id for b in image.brokers.values() if not b.fenced}


def partition_state(pid: int, reg: PartitionRegistration, live: set[int]) -> dict[str, Any]:
    """A partition as Metadata and DescribeTopicPartitions describe it (``live``: the
    unfenced brokers; replicas elsewhere are offline)."""
    return {
        "error_code": ErrorCode.NO_ERROR if reg.has_leader() else ErrorCode.LEADER_NOT_AVAILABLE,
        "partition_index": pid,
        "leader_id": reg.leader,
        "leader_epoch": reg.leader_epoch,
        "replica_nodes": list(reg.replicas),
        "isr_nodes": list(reg.isr),
        "offline_replicas": [r for r in reg.replicas if r not in live],
    }


def _topic(image: MetadataImage, t: TopicImage) -> dict[str, Any]:
    live = live_broker_ids(image)
    parts = [partition_state(pid, t.partitions[pid], live) for pid in sorted(t.partitions)]
    return {
        "error_code": ErrorCode.NO_ERROR,
        "name": t.name,
        "topic_id": t.topic_id.bytes,
        "is_internal": t.name in INTERNAL_TOPICS,
        "partitions": parts,
    }


def _error_topic(name: str | None, code: int, topic_id: bytes = ZERO_ID) -> dict[str, Any]:
    return {
        "error_code": code,
        "name": name,
        "topic_id": topic_id,
        "is_internal": False,
        "partitions": [],
    }


def handle(apis: KafkaApis, request: Request) -> Body:
    image = apis.image
    body = request.body
    requested = body.get("topics")
    version = request.header.api_version
    all_topics = requested is None or (version == 0 and not requested)
    topics: list[dict[str, Any]] = []
    if all_topics:
        topics = [_topic(image, image.topics_by_name[n]) for n in sorted(image.topics_by_name)]
    else:
        allow_create = apis.config.auto_create_topics_enable and body.get(
            "allow_auto_topic_creation", True
        )
        for entry in requested:
            name = entry.get("name")
            if name is None:
                # v12 by topic id: an id this broker does not know (data_plane.broker.
                # topic_ids filled in the name of a known one).
                topic_id = entry.get("topic_id") or ZERO_ID
                if topic_id != ZERO_ID:
                    topics.append(_error_topic(None, ErrorCode.UNKNOWN_TOPIC_ID, topic_id))
                else:
                    topics.append(_error_topic(None, ErrorCode.INVALID_TOPIC_EXCEPTION))
                continue
            t = image.topic(name)
            if t is not None:
                topics.append(_topic(image, t))
            elif topic_name_error(name) is not None:
                topics.append(_error_topic(name, ErrorCode.INVALID_TOPIC_EXCEPTION))
            elif allow_create:
                _auto_create(apis, name)
                topics.append(_error_topic(name, ErrorCode.LEADER_NOT_AVAILABLE))
            else:
                topics.append(_error_topic(name, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
    if version < METADATA_LOOKUP_BY_ID_SINCE:  # names are not nullable before v12
        for t in topics:
            if t["name"] is None:
                t["name"] = ""
    if body.get("include_topic_authorized_operations"):
        every = operations_bitfield(TOPIC_OPERATIONS)
        for t in topics:
            if t["error_code"] == ErrorCode.NO_ERROR:
                t["topic_authorized_operations"] = every
    response = {
        "throttle_time_ms": 0,
        "brokers": live_brokers(image, request.listener_name),
        "cluster_id": apis.cluster_id,
        "controller_id": controller_id(apis, image),
        "topics": topics,
    }
    if body.get("include_cluster_authorized_operations"):
        response["cluster_authorized_operations"] = operations_bitfield(CLUSTER_OPERATIONS)
    return response


def controller_id(apis: KafkaApis, image: MetadataImage) -> int:
    """The id clients are told to send controller-bound requests to: this broker (it
    forwards them), or -1 while it is fenced."""
    own = image.broker(apis.broker_id)
    return apis.broker_id if own is not None and not own.fenced else -1


def _auto_create(apis: KafkaApis, name: str) -> None:
    if apis.controller is None or name in apis.auto_creating:
        return
    apis.auto_creating.add(name)
    controller = apis.controller
    topic = NewTopic(name, apis.default_num_partitions, apis.default_replication_factor)

    def create() -> None:
        try:
            (result,) = controller.create_topics([topic])
            if result.error_code not in (ErrorCode.NO_ERROR, ErrorCode.TOPIC_ALREADY_EXISTS):
                logger.warning("auto-create of topic %s failed: %s", name, result.error_message)
        except ControllerError as e:
            logger.warning("auto-create of topic %s failed: %s", name, e)

    future = asyncio.get_running_loop().run_in_executor(apis.admin_executor, create)
    future.add_done_callback(lambda _f: apis.auto_creating.discard(name))


def authorize(authz: RequestAuthorizer, s: Session, version: int, body: dict[str, Any]) -> Verdict:
    """Describe on each topic: all topics asked for, the others are left out; listed ones are
    answered TOPIC_AUTHORIZATION_FAILED. Auto-creating a missing topic needs Create on the
    cluster or on each missing topic (else the request goes on without auto-creation). v8+:
    the cluster's and each topic's authorized operations for this session, when asked."""
    return _with_authorized_operations(authz, s, body, _topics(authz, s, version, body))


def _with_authorized_operations(
    authz: RequestAuthorizer, s: Session, body: dict[str, Any], v: Verdict
) -> Verdict:
    """The bitfields of what this session may do replace the handler's (which are for no
    authorizer)."""
    want_cluster = body.get("include_cluster_authorized_operations")
    want_topics = body.get("include_topic_authorized_operations")
    if not (want_cluster or want_topics) or v.respond_now is not None:
        return v
    first = v.finish

    def authorized(response: dict[str, Any]) -> dict[str, Any]:
        if first is not None:
            response = first(response)
        if want_cluster:
            response["cluster_authorized_operations"] = authz.cluster_operations(s)
        if want_topics:
            for t in response.get("topics") or []:
                if t.get("error_code", 0) == ErrorCode.NO_ERROR:
                    t["topic_authorized_operations"] = authz.topic_operations(s, t.get("name", ""))
        return response

    v.finish = authorized
    return v


def _topics(authz: RequestAuthorizer, s: Session, version: int, body: dict[str, Any]) -> Verdict:
    requested = body.get("topics")
    all_topics = requested is None or (version == 0 and not requested)
    if all_topics:
        v = Verdict(body)
        v.finish = keep_only(
            "topics", lambda t: authz.topic(s, AclOperation.DESCRIBE, t.get("name", ""))
        )
        return v
    names = [t.get("name", "") for t in requested]
    # None: a topic id this broker does not know (answered UNKNOWN_TOPIC_ID).
    describable = {n for n in names if n is None or authz.topic(s, AclOperation.DESCRIBE, n)}
    new = body
    if body.get("allow_auto_topic_creation", True):
        missing = [n for n in describable if n is not None and not authz.topic_exists(n)]
        may_create = authz.cluster(s, AclOperation.CREATE) or all(
            authz.topic(s, AclOperation.CREATE, n) for n in missing
        )
        if missing and not may_create:
            new = {**body, "allow_auto_topic_creation": False}
    denied = [n for n in names if n not in describable]
    if not denied:
        return Verdict(new)
    # The handler still sees every requested name (an empty v0 list would mean "all");
    # the answers for the denied names are replaced afterwards.
    v = Verdict({**new, "allow_auto_topic_creation": False})
    v.note(ResourceType.TOPIC, len(set(denied)))
    denied_set = set(denied)

    def finish(response: dict[str, Any]) -> dict[str, Any]:
        out = []
        for t in response.get("topics") or []:
            if t.get("name") in denied_set:
                out.append(
                    {
                        "error_code": TOPIC_DENIED,
                        "name": t.get("name"),
                        "is_internal": False,
                        "partitions": [],
                    }
                )
            else:
                out.append(t)
        response["topics"] = out
        return response

    v.finish = finish
    return v
