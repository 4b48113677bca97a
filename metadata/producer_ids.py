"""Producer-id block allocation (Kafka's ProducerIdControlManager): each AllocateProducerIds
hands the calling broker the next ``PRODUCER_ID_BLOCK_SIZE`` ids; the cluster-wide next id is
in the image, so ids are never handed out twice, also across controller failovers."""

from __future__ import annotations

from common.error_codes import ErrorCode
from metadata.controller_config import PRODUCER_ID_BLOCK_SIZE
from metadata.image import MetadataImage
from metadata.messages import AllocateProducerIdsRequest, AllocateProducerIdsResponse
from metadata.records import ProducerIdsRecord
from metadata.result import ControllerResult

# Producer ids are int64 in the protocol.
MAX_PRODUCER_ID = (1 << 63) - 1


def allocate_producer_ids(
    image: MetadataImage, request: AllocateProducerIdsRequest
) -> ControllerResult[AllocateProducerIdsResponse]:
    b = image.brokers.get(request.broker_id)
    if b is None:
        return ControllerResult.of(
            [], AllocateProducerIdsResponse(ErrorCode.BROKER_ID_NOT_REGISTERED, "not registered")
        )
    if b.epoch != request.broker_epoch:
        return ControllerResult.of(
            [], AllocateProducerIdsResponse(ErrorCode.STALE_BROKER_EPOCH, "stale broker epoch")
        )
    start = image.next_producer_id
    if start > MAX_PRODUCER_ID - PRODUCER_ID_BLOCK_SIZE:
        return ControllerResult.of(
            [],
            AllocateProducerIdsResponse(ErrorCode.UNKNOWN_SERVER_ERROR, "producer ids exhausted"),
        )
    record = ProducerIdsRecord(b.broker_id, b.epoch, start + PRODUCER_ID_BLOCK_SIZE)
    return ControllerResult.of(
        [record], AllocateProducerIdsResponse(0, None, start, PRODUCER_ID_BLOCK_SIZE)
    )
