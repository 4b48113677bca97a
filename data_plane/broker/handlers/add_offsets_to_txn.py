"""AddOffsetsToTxn (25), v0-2: a transactional producer will commit a consumer group's offsets
in its transaction (``send_offsets_to_transaction``). The coordinator adds the group's
``__consumer_offsets`` partition to the transaction, so that its end marker makes the
TxnOffsetCommit offsets count (or not). Errors as AddPartitionsToTxn's; no
``__consumer_offsets`` yet: COORDINATOR_NOT_AVAILABLE (the client retries; FindCoordinator
for the group creates it).
"""

from __future__ import annotations

from common.error_codes import ErrorCode
from data_plane.broker.apis import Body, KafkaApis, Request, Response
from data_plane.broker.handlers.transaction_errors import for_version
from data_plane.coordinator import OFFSETS_TOPIC, partition_for


def _body(code: int) -> Body:
    return {"throttle_time_ms": 0, "error_code": code}


def handle(apis: KafkaApis, request: Request) -> Response:
    body = request.body
    group_id = body.get("group_id") or ""
    if not group_id:
        return _body(ErrorCode.INVALID_GROUP_ID)
    topic = apis.image.topic(OFFSETS_TOPIC)
    if topic is None or not topic.partitions:
        return _body(ErrorCode.COORDINATOR_NOT_AVAILABLE)
    return _add(apis, request, (OFFSETS_TOPIC, partition_for(group_id, len(topic.partitions))))


async def _add(apis: KafkaApis, request: Request, partition: tuple[str, int]) -> Body:
    body = request.body
    code = await apis.transaction_coordinator.add_partitions(
        body["transactional_id"], body["producer_id"], body["producer_epoch"], [partition]
    )
    return _body(for_version(code, request.header.api_version))
