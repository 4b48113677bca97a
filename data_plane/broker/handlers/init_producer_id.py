"""InitProducerId (22): a producer id and epoch for an idempotent or a
transactional producer (v2+ flexible; v3+ the producer may name its current id and epoch).

- No ``transactional_id``: a fresh producer id with epoch 0 from the broker's
  controller-allocated block (:mod:`data_plane.broker.producer_ids`); any broker answers (an
  idempotent producer does not look up a coordinator). ``transaction_timeout_ms`` is ignored,
  as in Kafka. A producer that needs a new epoch (after OUT_OF_ORDER_SEQUENCE_NUMBER or
  UNKNOWN_PRODUCER_ID) asks again and gets a new id (the id and epoch it names from v3 on are
  not needed: a new id fences nothing for an idempotent producer).
- A ``transactional_id``: sent to its transaction coordinator (FindCoordinator key_type 1),
  which returns the id's producer id with its epoch bumped (fencing older instances), aborting
  a transaction left open by a previous instance first (CONCURRENT_TRANSACTIONS until that is
  done; the client retries). NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS as for groups;
  INVALID_TRANSACTION_TIMEOUT above ``transaction.max.timeout.ms``. From v3 the producer may
  name its current id and epoch to bump its own epoch after an abortable error (KIP-360):
  it gets the next epoch if it named the current one, PRODUCER_FENCED (INVALID_PRODUCER_EPOCH
  before v4) if another instance took over.
- No id block from the controller within ``request.timeout.ms``: COORDINATOR_LOAD_IN_PROGRESS
  (14, retriable), what Kafka answers while its id manager waits for a block.
"""

from __future__ import annotations

from common.error_codes import ErrorCode
from common.protocol.messages.init_producer_id import (
    InitProducerIdRequest,
    InitProducerIdResponse,
)
from common.security.acl import AclOperation, ResourceType
from data_plane.broker.apis import Body, KafkaApis, Request, Response
from data_plane.broker.handlers.transaction_errors import (
    INIT_PRODUCER_ID_FIRST_PRODUCER_FENCED_VERSION,
    for_version,
)
from data_plane.broker.producer_ids import ProducerIdsUnavailableError
from data_plane.security.request_authz import (
    CLUSTER_DENIED,
    TXN_DENIED,
    RequestAuthorizer,
    Session,
    Verdict,
)

FIRST_PRODUCER_EPOCH = 0


def _answer(
    error_code: int, producer_id: int = -1, producer_epoch: int = -1
) -> InitProducerIdResponse:
    return InitProducerIdResponse(
        throttle_time_ms=0,
        error_code=error_code,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
    )


def handle(apis: KafkaApis, request: Request) -> Response:
    body = request.body
    if not isinstance(body, InitProducerIdRequest):
        raise TypeError(f"InitProducerId handler given {type(body).__name__}")
    if body.transactional_id is not None:
        return _init_transactional(apis, request, body, body.transactional_id)
    return _allocate(apis)


async def _allocate(apis: KafkaApis) -> InitProducerIdResponse:
    try:
        pid = await apis.producer_id_manager.generate_producer_id(apis.config.request_timeout_ms)
    except ProducerIdsUnavailableError as e:
        return _answer(e.error_code)
    return _answer(ErrorCode.NO_ERROR, pid, FIRST_PRODUCER_EPOCH)


async def _init_transactional(
    apis: KafkaApis, request: Request, body: InitProducerIdRequest, transactional_id: str
) -> InitProducerIdResponse:
    try:
        result = await apis.transaction_coordinator.init_producer_id(
            transactional_id,
            body.transaction_timeout_ms,
            body.producer_id,
            body.producer_epoch,
        )
    except ProducerIdsUnavailableError as e:
        return _answer(e.error_code)
    code = for_version(
        result.error_code,
        request.header.api_version,
        INIT_PRODUCER_ID_FIRST_PRODUCER_FENCED_VERSION,
    )
    return _answer(code, result.producer_id, result.producer_epoch)


def authorize(authz: RequestAuthorizer, s: Session, version: int, body: Body) -> Verdict:
    """Write on the transactional id when one is given (refused:
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED); else IdempotentWrite on the cluster or Write on some
    topic (KIP-679; refused: CLUSTER_AUTHORIZATION_FAILED)."""
    if not isinstance(body, InitProducerIdRequest):
        raise TypeError(f"InitProducerId rule given {type(body).__name__}")
    txn = body.transactional_id
    if txn is not None:
        if authz.transactional_id(s, AclOperation.WRITE, txn):
            return Verdict(body)
        code, rtype = TXN_DENIED, ResourceType.TRANSACTIONAL_ID
    elif authz.cluster(s, AclOperation.IDEMPOTENT_WRITE) or authz.allowed_any(
        s, AclOperation.WRITE, ResourceType.TOPIC
    ):
        return Verdict(body)
    else:
        code, rtype = CLUSTER_DENIED, ResourceType.CLUSTER
    return Verdict.refused(
        body, InitProducerIdResponse(error_code=code, producer_id=-1, producer_epoch=-1), rtype
    )
