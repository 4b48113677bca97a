"""InitProducerId (22), versions 0-1: a fresh producer id with epoch 0 for an idempotent
producer. Any broker answers it (idempotent producers do not look up a coordinator); the id
comes from the broker's controller-allocated block (:mod:`data_plane.broker.producer_ids`).

- A non-null ``transactional_id`` gets TRANSACTIONAL_ID_AUTHORIZATION_FAILED (53): kraftlog has
  no transaction coordinator, and this is the non-retriable error Kafka answers a client that
  may not use a transactional id, so transactional clients fail fast with a clear error
  instead of looping on a retriable one (the Produce handler answers transactional batches
  the same way). ``transaction_timeout_ms`` is ignored for idempotent producers, as in Kafka.
- No id block from the controller within ``request.timeout.ms``: COORDINATOR_LOAD_IN_PROGRESS
  (14, retriable), what Kafka answers while its id manager waits for a block.
- Every fresh id starts at epoch 0; a producer that needs a new epoch (after
  OUT_OF_ORDER_SEQUENCE_NUMBER or UNKNOWN_PRODUCER_ID) asks again and gets a new id (v0-1 carry
  no producer id to bump, KIP-360 needs v3).
"""

from __future__ import annotations

from common.error_codes import ErrorCode
from data_plane.broker.apis import Body, KafkaApis, Request, Response
from data_plane.broker.producer_ids import ProducerIdsUnavailableError

FIRST_PRODUCER_EPOCH = 0


def _answer(error_code: int, producer_id: int = -1, producer_epoch: int = -1) -> Body:
    return {
        "throttle_time_ms": 0,
        "error_code": error_code,
        "producer_id": producer_id,
        "producer_epoch": producer_epoch,
    }


def handle(apis: KafkaApis, request: Request) -> Response:
    if request.body.get("transactional_id") is not None:
        return _answer(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    return _allocate(apis)


async def _allocate(apis: KafkaApis) -> Body:
    try:
        pid = await apis.producer_id_manager.generate_producer_id(apis.config.request_timeout_ms)
    except ProducerIdsUnavailableError as e:
        return _answer(e.error_code)
    return _answer(ErrorCode.NO_ERROR, pid, FIRST_PRODUCER_EPOCH)
