"""AddOffsetsToTxn (25): a transactional producer will commit a consumer
group's offsets in its transaction (``send_offsets_to_transaction``). The coordinator adds the
group's ``__consumer_offsets`` partition to the transaction, so that its end marker makes the
TxnOffsetCommit offsets count (or not). Errors as AddPartitionsToTxn's. Before
``__consumer_offsets`` exists the partition is computed from ``offsets.topic.num.partitions``,
the count it will be created with (the client's FindCoordinator for the group creates it).
"""

from __future__ import annotations

from common.error_codes import ErrorCode
from common.protocol.messages.add_offsets_to_txn import (
    AddOffsetsToTxnRequest,
    AddOffsetsToTxnResponse,
)
from common.security.acl import AclOperation, ResourceType
from data_plane.broker.apis import Body, KafkaApis, Request, Response
from data_plane.broker.handlers.transaction_errors import for_version
from data_plane.coordinator import OFFSETS_TOPIC, partition_for
from data_plane.security.request_authz import (
    GROUP_DENIED,
    TXN_DENIED,
    RequestAuthorizer,
    Session,
    Verdict,
)


def _answer(code: int) -> AddOffsetsToTxnResponse:
    return AddOffsetsToTxnResponse(throttle_time_ms=0, error_code=code)


def handle(apis: KafkaApis, request: Request) -> Response:
    body = request.body
    if not isinstance(body, AddOffsetsToTxnRequest):
        raise TypeError(f"AddOffsetsToTxn handler given {type(body).__name__}")
    group_id = body.group_id
    if not group_id:
        return _answer(ErrorCode.INVALID_GROUP_ID)
    # Before __consumer_offsets exists, its partition count will be the configured one (as
    # Kafka's partitionFor): the group's FindCoordinator, next, creates it.
    topic = apis.image.topic(OFFSETS_TOPIC)
    count = len(topic.partitions) if topic is not None and topic.partitions else 0
    count = count or apis.config.offsets_topic_num_partitions
    return _add(apis, request, body, (OFFSETS_TOPIC, partition_for(group_id, count)))


async def _add(
    apis: KafkaApis, request: Request, body: AddOffsetsToTxnRequest, partition: tuple[str, int]
) -> AddOffsetsToTxnResponse:
    code = await apis.transaction_coordinator.add_partitions(
        body.transactional_id, body.producer_id, body.producer_epoch, [partition]
    )
    return _answer(for_version(code, request.header.api_version))


def authorize(authz: RequestAuthorizer, s: Session, version: int, body: Body) -> Verdict:
    """Write on the transactional id (refused: TRANSACTIONAL_ID_AUTHORIZATION_FAILED), then
    Read on the group (refused: GROUP_AUTHORIZATION_FAILED)."""
    if not isinstance(body, AddOffsetsToTxnRequest):
        raise TypeError(f"AddOffsetsToTxn rule given {type(body).__name__}")
    if not authz.transactional_id(s, AclOperation.WRITE, body.transactional_id):
        return Verdict.refused(body, _answer(TXN_DENIED), ResourceType.TRANSACTIONAL_ID)
    if not authz.group(s, AclOperation.READ, body.group_id):
        return Verdict.refused(body, _answer(GROUP_DENIED), ResourceType.GROUP)
    return Verdict(body)
