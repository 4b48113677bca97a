"""AddPartitionsToTxn (24), v0-2: a transactional producer names the partitions it is about to
write in its transaction, before its first Produce to each (the coordinator must know them to
write their end markers).

- Partitions of topics that do not exist get UNKNOWN_TOPIC_OR_PARTITION and the others
  OPERATION_NOT_ATTEMPTED, with nothing added (as Kafka); so do internal topics (INVALID_
  TOPIC_EXCEPTION): only coordinators write them.
- Otherwise the transaction coordinator's one answer goes to every partition: NO_ERROR once the
  Ongoing state with the partitions is written to ``__transaction_state``; NOT_COORDINATOR,
  COORDINATOR_LOAD_IN_PROGRESS, CONCURRENT_TRANSACTIONS (retriable), INVALID_PRODUCER_ID_MAPPING,
  PRODUCER_FENCED (INVALID_PRODUCER_EPOCH before v2), INVALID_TXN_STATE.
"""

from __future__ import annotations

from common.error_codes import ErrorCode
from data_plane.broker.apis import Body, KafkaApis, Request, Response
from data_plane.broker.handlers.transaction_errors import for_version
from metadata.topics import INTERNAL_TOPICS


def _body(errors: dict[tuple[str, int], int]) -> Body:
    by_topic: dict[str, list[dict[str, int]]] = {}
    for (topic, partition), code in errors.items():
        by_topic.setdefault(topic, []).append(
            {"partition_index": partition, "partition_error_code": code}
        )
    return {
        "throttle_time_ms": 0,
        "results_by_topic_v3_and_below": [
            {"name": t, "results_by_partition": ps} for t, ps in by_topic.items()
        ],
    }


def handle(apis: KafkaApis, request: Request) -> Response:
    body = request.body
    partitions = [
        (t["name"], p)
        for t in body.get("v3_and_below_topics") or ()
        for p in t.get("partitions") or ()
    ]
    image = apis.image
    bad: dict[tuple[str, int], int] = {}
    for topic, p in partitions:
        if topic in INTERNAL_TOPICS:
            bad[(topic, p)] = ErrorCode.INVALID_TOPIC_EXCEPTION
        elif image.partition(topic, p) is None:
            bad[(topic, p)] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    if bad:
        return _body({tp: bad.get(tp, ErrorCode.OPERATION_NOT_ATTEMPTED) for tp in partitions})
    return _add(apis, request, partitions)


async def _add(apis: KafkaApis, request: Request, partitions: list[tuple[str, int]]) -> Body:
    body = request.body
    code = await apis.transaction_coordinator.add_partitions(
        body["v3_and_below_transactional_id"],
        body["v3_and_below_producer_id"],
        body["v3_and_below_producer_epoch"],
        partitions,
    )
    code = for_version(code, request.header.api_version)
    return _body({tp: code for tp in partitions})
