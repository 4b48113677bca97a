"""FindCoordinator (10), v0-2: which broker coordinates a consumer group.

The coordinator of group ``g`` is the leader of ``__consumer_offsets`` partition
``abs(javaStringHash(g)) % partitions`` (data_plane.coordinator.hashing), answered with its
endpoint on the listener the client connected to.

- No ``__consumer_offsets`` yet: the broker asks the controller to create it
  (``offsets.topic.num.partitions``, ``offsets.topic.replication.factor``,
  cleanup.policy=compact, segment.bytes=``offsets.topic.segment.bytes``; min.insync.replicas is
  the cluster default) and answers COORDINATOR_NOT_AVAILABLE; the client retries. While fewer
  brokers than the replication factor are registered it is not created (as Kafka).
- The partition has no live leader: COORDINATOR_NOT_AVAILABLE.
- key_type 1 (transaction coordinator): kraftlog has no transactions, INVALID_REQUEST.
"""

from __future__ import annotations

import asyncio
import logging

from common.error_codes import ErrorCode
from data_plane.broker.apis import Body, KafkaApis, Request
from data_plane.coordinator import OFFSETS_TOPIC, partition_for
from metadata.client import ControllerError
from metadata.messages import NewTopic

logger = logging.getLogger(__name__)

KEY_TYPE_GROUP = 0


def _answer(
    code: int, message: str | None = None, node_id: int = -1, host: str = "", port: int = -1
) -> Body:
    return {
        "throttle_time_ms": 0,
        "error_code": code,
        "error_message": message,
        "node_id": node_id,
        "host": host,
        "port": port,
    }


def handle(apis: KafkaApis, request: Request) -> Body:
    body = request.body
    key = body.get("key") or ""
    if body.get("key_type", KEY_TYPE_GROUP) != KEY_TYPE_GROUP:
        return _answer(ErrorCode.INVALID_REQUEST, "only group coordinators (key_type 0) exist")
    if not key:
        return _answer(ErrorCode.INVALID_GROUP_ID, "empty group id")
    image = apis.image
    topic = image.topic(OFFSETS_TOPIC)
    if topic is None or not topic.partitions:
        return _answer(ErrorCode.COORDINATOR_NOT_AVAILABLE, _create_offsets_topic(apis))
    reg = topic.partition(partition_for(key, len(topic.partitions)))
    broker = image.brokers.get(reg.leader) if reg is not None else None
    if broker is None or broker.fenced:
        return _answer(ErrorCode.COORDINATOR_NOT_AVAILABLE, "the group's partition has no leader")
    lis = broker.listener(request.listener_name) or (
        broker.listeners[0] if broker.listeners else None
    )
    if lis is None:
        return _answer(ErrorCode.COORDINATOR_NOT_AVAILABLE, "the coordinator has no listener")
    return _answer(ErrorCode.NO_ERROR, None, broker.broker_id, lis.host, lis.port)


def _create_offsets_topic(apis: KafkaApis) -> str:
    """Start creating __consumer_offsets (at most one call in flight); a message for the
    client's COORDINATOR_NOT_AVAILABLE."""
    cfg = apis.config
    live = sum(1 for b in apis.image.brokers.values() if not b.fenced)
    if live < cfg.offsets_topic_replication_factor:
        return (
            f"{OFFSETS_TOPIC} needs {cfg.offsets_topic_replication_factor} brokers "
            f"(offsets.topic.replication.factor), {live} are alive"
        )
    if apis.controller is None:
        return "this broker has no controller client"
    if OFFSETS_TOPIC in apis.auto_creating:
        return f"{OFFSETS_TOPIC} is being created"
    apis.auto_creating.add(OFFSETS_TOPIC)
    controller = apis.controller
    topic = NewTopic(
        OFFSETS_TOPIC,
        cfg.offsets_topic_num_partitions,
        cfg.offsets_topic_replication_factor,
        configs={
            "cleanup.policy": "compact",
            "segment.bytes": str(cfg.offsets_topic_segment_bytes),
        },
    )

    def create() -> None:
        try:
            (result,) = controller.create_topics([topic])
            if result.error_code not in (ErrorCode.NO_ERROR, ErrorCode.TOPIC_ALREADY_EXISTS):
                logger.warning("creating %s failed: %s", OFFSETS_TOPIC, result.error_message)
            else:
                logger.info("created %s", OFFSETS_TOPIC)
        except ControllerError as e:
            logger.warning("creating %s failed: %s", OFFSETS_TOPIC, e)

    future = asyncio.get_running_loop().run_in_executor(apis.admin_executor, create)
    future.add_done_callback(lambda _f: apis.auto_creating.discard(OFFSETS_TOPIC))
    return f"{OFFSETS_TOPIC} is being created"
