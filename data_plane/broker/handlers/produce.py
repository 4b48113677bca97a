"""Produce (0): validate and append each partition's batches; acks 0 / 1 / all.

Faceless: a partition's ``records`` (a memoryview of the request frame) is validated by header
and CRC-32C only and appended as is (offsets and leader epoch stamped in place).

- acks=0: no response at all; if any partition failed, the connection is closed instead (as
  Kafka does), which makes the producer refresh its metadata.
- acks=1: answered once every partition's append is done.
- acks=all (-1): parked in the produce purgatory until the high watermark passes every
  appended batch (immediate with an ISR of one), or ``min(timeout_ms, request.timeout.ms)``
  passes (REQUEST_TIMED_OUT for partitions still waiting).
- Transactional batches are appended like any other; the log tracks the producer's open
  transaction (a non-transactional batch while one is open: INVALID_TXN_STATE) until the
  coordinator's end marker closes it (WriteTxnMarkers).
- Internal topics (``__consumer_offsets``, ``__transaction_state``) get
  INVALID_TOPIC_EXCEPTION, as in Kafka: only the coordinators write them, through the
  ReplicaManager directly.
"""

from __future__ import annotations

from typing import Any

from common.error_codes import ErrorCode
from common.topic_partition import TopicPartition
from data_plane.broker.apis import CLOSE_CONNECTION, NO_RESPONSE, Body, KafkaApis, Request, Response
from data_plane.broker.delayed import await_replication
from data_plane.broker.replica_manager import AppendResult
from metadata.topics import INTERNAL_TOPICS

_INTERNAL_TOPIC_REFUSED = AppendResult(
    ErrorCode.INVALID_TOPIC_EXCEPTION, error_message="internal topics are written by the broker"
)


def _body(results: dict[TopicPartition, AppendResult], order: list[tuple[str, list[int]]]) -> Body:
    responses: list[dict[str, Any]] = []
    for name, indexes in order:
        parts = []
        for index in indexes:
            r = results[TopicPartition(name, index)]
            parts.append(
                {
                    "index": index,
                    "error_code": r.error_code,
                    "base_offset": r.base_offset,
                    "log_append_time_ms": r.log_append_time_ms,
                    "log_start_offset": r.log_start_offset,
                    "error_message": r.error_message,
                }
            )
        responses.append({"name": name, "partition_responses": parts})
    return {"responses": responses, "throttle_time_ms": 0}


def handle(apis: KafkaApis, request: Request) -> Response:
    body = request.body
    acks = body.get("acks", 1)
    order: list[tuple[str, list[int]]] = []
    results: dict[TopicPartition, AppendResult] = {}
    refuse: AppendResult | None = None
    if acks not in (0, 1, -1):
        refuse = AppendResult(ErrorCode.INVALID_REQUIRED_ACKS, error_message=f"acks={acks}")
    rm = apis.replica_manager
    for topic in body.get("topic_data") or ():
        name = topic["name"]
        indexes = []
        for pdata in topic.get("partition_data") or ():
            tp = TopicPartition(name, pdata["index"])
            indexes.append(tp.partition)
            if tp in results:  # the same partition twice in one request
                results[tp] = AppendResult(ErrorCode.INVALID_REQUEST, error_message="duplicate")
                continue
            if name in INTERNAL_TOPICS:
                results[tp] = refuse or _INTERNAL_TOPIC_REFUSED
                continue
            results[tp] = refuse or rm.append_records(tp, pdata.get("records"), acks)
        order.append((name, indexes))
    if acks == 0:
        failed = any(r.error_code != ErrorCode.NO_ERROR for r in results.values())
        return CLOSE_CONNECTION if failed else NO_RESPONSE
    if acks == 1 or refuse is not None:
        return _body(results, order)
    required = {
        tp: r.last_offset + 1 for tp, r in results.items() if r.error_code == ErrorCode.NO_ERROR
    }
    if not required:
        return _body(results, order)
    return _wait_for_replication(apis, body, results, order, required)


async def _wait_for_replication(
    apis: KafkaApis,
    body: dict[str, Any],
    results: dict[TopicPartition, AppendResult],
    order: list[tuple[str, list[int]]],
    required: dict[TopicPartition, int],
) -> Body:
    timeout_ms = max(0, min(body.get("timeout_ms", 0), apis.config.request_timeout_ms))
    outcome = await await_replication(
        apis.produce_purgatory, apis.replica_manager, required, timeout_ms
    )
    for tp, code in outcome.items():
        if code != ErrorCode.NO_ERROR:
            results[tp] = results[tp]._replace(error_code=code)
    return _body(results, order)
