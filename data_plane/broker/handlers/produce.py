"""Produce (0): validate and append each partition's batches; acks 0 / 1 / all.

Faceless: a partition's ``records`` (a memoryview of the request frame) is validated by header
and CRC-32C only and appended as is (offsets and leader epoch stamped in place).

- acks=0: no response at all; if any partition failed, the connection is closed instead (as
  Kafka does), which makes the producer refresh its metadata.
- acks=1: answered once every partition's append is done.
- acks=all (-1): parked in the produce purgatory until the high watermark passes every
  appended batch (immediate with an ISR of one), or ``min(timeout_ms, request.timeout.ms)``
  passes (REQUEST_TIMED_OUT for partitions still waiting).
- Transactional batches: the log tracks the producer's open transaction (a non-
  transactional batch while one is open: INVALID_TXN_STATE) until the coordinator's end
  marker closes it (WriteTxnMarkers). With ``transaction.partition.verification.enable`` a
  batch that would open the producer's transaction on a partition is appended only once the
  transaction coordinator confirms the partition is in the transaction
  (:mod:`data_plane.broker.txn_verifier`); the whole request then waits for that answer,
  and so do the appends of the connection's later Produce requests (:class:`ProduceGate`:
  a partition's batches are appended in the order the client sent them).
  Unconfirmed: INVALID_TXN_STATE; a coordinator moving, loading or deciding:
  NOT_ENOUGH_REPLICAS, which every client retries (as Kafka answers produce versions that
  predate the coordinator errors); PRODUCER_FENCED as INVALID_PRODUCER_EPOCH.
- v10+ (KIP-951): a partition answered NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH also
  names its current leader, and the response that leader's endpoint
  (:mod:`data_plane.broker.leader_hints`). v11 may answer TRANSACTION_ABORTABLE (KIP-890);
  kraftlog keeps answering the v10 codes.
- Internal topics (``__consumer_offsets``, ``__transaction_state``) get
  INVALID_TOPIC_EXCEPTION, as in Kafka: only the coordinators write them, through the
  ReplicaManager directly.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from dataclasses import dataclass
from typing import Any

from common.error_codes import ErrorCode
from common.errors import ApiError
from common.record_batch import parse_header
from common.security.acl import AclOperation, ResourceType
from common.topic_partition import TopicPartition
from data_plane.broker.apis import (
    CLOSE_CONNECTION,
    NO_RESPONSE,
    Body,
    KafkaApis,
    ProduceGate,
    Request,
    Response,
)
from data_plane.broker.delayed import await_replication
from data_plane.broker.leader_hints import LEADER_HINT_ERRORS, PRODUCE_HINTS_SINCE, add_leader_hints
from data_plane.broker.replica_manager import AppendResult
from data_plane.security.request_authz import (
    TOPIC_DENIED,
    TXN_DENIED,
    RequestAuthorizer,
    Session,
    Verdict,
    with_denied,
)
from data_plane.storage import VerificationGuard
from metadata.image import MetadataImage
from metadata.topics import INTERNAL_TOPICS

_INTERNAL_TOPIC_REFUSED = AppendResult(
    ErrorCode.INVALID_TOPIC_EXCEPTION, error_message="internal topics are written by the broker"
)


@dataclass(slots=True)
class _Order:
    """The request's topics and partitions in request order, and for v10+ where leader hints
    come from (the image and the client's listener, data_plane.broker.leader_hints)."""

    topics: list[tuple[str, list[int]]]
    hints: tuple[MetadataImage, str] | None = None


def _body(results: dict[TopicPartition, AppendResult], order: _Order) -> Body:
    responses: list[dict[str, Any]] = []
    entries: list[tuple[TopicPartition, dict[str, Any]]] = []
    for name, indexes in order.topics:
        parts = []
        for index in indexes:
            tp = TopicPartition(name, index)
            r = results[tp]
            entry = {
                "index": index,
                "error_code": r.error_code,
                "base_offset": r.base_offset,
                "log_append_time_ms": r.log_append_time_ms,
                "log_start_offset": r.log_start_offset,
                "error_message": r.error_message,
            }
            parts.append(entry)
            if r.error_code in LEADER_HINT_ERRORS:
                entries.append((tp, entry))
        responses.append({"name": name, "partition_responses": parts})
    body: Body = {"responses": responses, "throttle_time_ms": 0}
    if entries and order.hints is not None:
        add_leader_hints(order.hints[0], order.hints[1], body, entries)
    return body


# Verification errors a produce client may not know, as Kafka maps them: retriable ones become
# NOT_ENOUGH_REPLICAS, a fenced producer INVALID_PRODUCER_EPOCH.
_VERIFICATION_ERRORS = {
    ErrorCode.NOT_COORDINATOR: ErrorCode.NOT_ENOUGH_REPLICAS,
    ErrorCode.COORDINATOR_NOT_AVAILABLE: ErrorCode.NOT_ENOUGH_REPLICAS,
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS: ErrorCode.NOT_ENOUGH_REPLICAS,
    ErrorCode.CONCURRENT_TRANSACTIONS: ErrorCode.NOT_ENOUGH_REPLICAS,
    ErrorCode.PRODUCER_FENCED: ErrorCode.INVALID_PRODUCER_EPOCH,
}


@dataclass(slots=True)
class _Unverified:
    """A partition whose batch opens the producer's transaction there: appended once the
    coordinator confirms the partition (``guard`` from its log)."""

    records: Any
    producer_id: int
    producer_epoch: int
    guard: VerificationGuard


def handle(apis: KafkaApis, request: Request) -> Response:
    gate = request.produce_gate
    if gate is not None and gate.busy():
        # An earlier request of this connection is still verifying: append after it.
        previous, mine = gate.hold()
        return _in_order(apis, request, previous, mine)
    return _handle(apis, request, gate, None)


async def _in_order(
    apis: KafkaApis, request: Request, previous: asyncio.Event | None, mine: asyncio.Event
) -> Body:
    try:
        if previous is not None:
            await previous.wait()
        outcome = _handle(apis, request, None, mine)
    except BaseException:
        mine.set()
        raise
    if asyncio.iscoroutine(outcome):
        return await outcome
    return outcome  # type: ignore[return-value]


def _handle(
    apis: KafkaApis, request: Request, gate: ProduceGate | None, mine: asyncio.Event | None
) -> Response:
    """Append (or refuse) every partition of ``request``; ``mine`` (or a place taken in
    ``gate`` when the appends must wait for a verification) is set once the appends are
    done, releasing the connection's later Produce requests."""
    body = request.body
    acks = body.get("acks", 1)
    order = _Order(
        [],
        (apis.image, request.listener_name)
        if request.header.api_version >= PRODUCE_HINTS_SINCE
        else None,
    )
    results: dict[TopicPartition, AppendResult] = {}
    refuse: AppendResult | None = None
    if acks not in (0, 1, -1):
        refuse = AppendResult(ErrorCode.INVALID_REQUIRED_ACKS, error_message=f"acks={acks}")
    rm = apis.replica_manager
    verify = bool(apis.config.transaction_partition_verification_enable)
    # Only a transactional request can hold a batch to verify (its transactional id names
    # the coordinator); a transactional batch in any other request fails the append's own
    # check (INVALID_TXN_STATE), so plain produce requests never look at a header here.
    txn_id = body.get("transactional_id") if verify else None
    unverified: dict[TopicPartition, _Unverified] = {}
    for topic in body.get("topic_data") or ():
        name = topic["name"]
        indexes = []
        for pdata in topic.get("partition_data") or ():
            tp = TopicPartition(name, pdata["index"])
            indexes.append(tp.partition)
            if tp in results or tp in unverified:  # the same partition twice in one request
                unverified.pop(tp, None)
                results[tp] = AppendResult(ErrorCode.INVALID_REQUEST, error_message="duplicate")
                continue
            if name in INTERNAL_TOPICS:
                results[tp] = refuse or _INTERNAL_TOPIC_REFUSED
                continue
            if refuse is not None:
                results[tp] = refuse
                continue
            records = pdata.get("records")
            pending = _needs_verification(apis, tp, records) if txn_id else None
            if pending is not None:
                unverified[tp] = pending
                continue
            results[tp] = rm.append_records(tp, records, acks, verify_transactions=verify)
        order.topics.append((name, indexes))
    if unverified:
        if mine is None and gate is not None:
            _, mine = gate.hold()  # not busy: nothing earlier to wait for
        return _verify_then_append(apis, body, txn_id, results, order, unverified, mine)
    if mine is not None:
        mine.set()
    return _finish(apis, body, results, order)


def _needs_verification(apis: KafkaApis, tp: TopicPartition, records: Any) -> _Unverified | None:
    """The pending verification of a payload whose first batch would open its producer's
    transaction on ``tp`` (led here); None for anything else, which the append checks."""
    try:
        header = parse_header(records)
    except (ApiError, TypeError):
        return None  # the append reports the bad payload
    if not header.is_transactional or header.is_control or header.producer_id < 0:
        return None  # control batches are refused by the append (INVALID_RECORD)
    part = apis.replica_manager.get_partition(tp)
    if part is None or not part.is_leader:
        return None
    guard = part.log.start_txn_verification(header.producer_id)
    if guard is None:
        return None
    return _Unverified(records, header.producer_id, header.producer_epoch, guard)


async def _verify_then_append(
    apis: KafkaApis,
    body: dict[str, Any],
    txn_id: str,
    results: dict[TopicPartition, AppendResult],
    order: _Order,
    unverified: dict[TopicPartition, _Unverified],
    appended: asyncio.Event | None,
) -> Body | object:
    try:
        await _verify_and_append(apis, body, txn_id, results, unverified)
    finally:
        if appended is not None:
            appended.set()
    outcome = _finish(apis, body, results, order)
    if isinstance(outcome, Coroutine):
        return await outcome
    return outcome


async def _verify_and_append(
    apis: KafkaApis,
    body: dict[str, Any],
    txn_id: str,
    results: dict[TopicPartition, AppendResult],
    unverified: dict[TopicPartition, _Unverified],
) -> None:
    by_producer: dict[tuple[int, int], list[TopicPartition]] = {}
    for tp, u in unverified.items():
        by_producer.setdefault((u.producer_id, u.producer_epoch), []).append(tp)
    codes: dict[TopicPartition, int] = {}
    for (pid, epoch), tps in by_producer.items():
        answer = await apis.transaction_verifier.verify(
            txn_id, pid, epoch, [(tp.topic, tp.partition) for tp in tps]
        )
        for tp in tps:
            codes[tp] = answer.get((tp.topic, tp.partition), int(ErrorCode.UNKNOWN_SERVER_ERROR))
    rm = apis.replica_manager
    acks = body.get("acks", 1)
    for tp, u in unverified.items():
        code = codes[tp]
        if code != ErrorCode.NO_ERROR:
            part = rm.get_partition(tp)
            if part is not None:
                part.log.end_txn_verification(u.guard)
            code = _VERIFICATION_ERRORS.get(ErrorCode(code), code)
            results[tp] = AppendResult(
                code, error_message="the transaction coordinator did not confirm the partition"
            )
            continue
        results[tp] = rm.append_records(
            tp, u.records, acks, verify_transactions=True, verification=u.guard
        )


def _finish(
    apis: KafkaApis,
    body: dict[str, Any],
    results: dict[TopicPartition, AppendResult],
    order: _Order,
) -> Response:
    """The answer once every partition is appended (or refused): by ``acks``."""
    acks = body.get("acks", 1)
    refuse = acks not in (0, 1, -1)
    if acks == 0:
        failed = any(r.error_code != ErrorCode.NO_ERROR for r in results.values())
        return CLOSE_CONNECTION if failed else NO_RESPONSE
    if acks == 1 or refuse:
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
    order: _Order,
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


def authorize(authz: RequestAuthorizer, s: Session, version: int, body: dict[str, Any]) -> Verdict:
    """Write on the transactional id when one is given (refused: every partition
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED, nothing appended), then Write on each topic
    (refused topics: each partition TOPIC_AUTHORIZATION_FAILED; the others are appended)."""
    txn = body.get("transactional_id")
    if txn is not None and not authz.transactional_id(s, AclOperation.WRITE, txn):
        return _denied(body, body.get("topic_data") or [], TXN_DENIED)
    new, denied = authz.split_topics(s, body, AclOperation.WRITE, list_key="topic_data")
    if not denied:
        return Verdict(body)
    return _denied(new, denied, TOPIC_DENIED)


def _denied(new: dict[str, Any], denied: list[dict[str, Any]], code: int) -> Verdict:
    entries = [
        {
            "name": t.get("name", ""),
            "partition_responses": [
                {"index": p.get("index", 0), "error_code": code, "base_offset": -1}
                for p in t.get("partition_data") or []
            ],
        }
        for t in denied
    ]
    kept = new if code == TOPIC_DENIED else {**new, "topic_data": []}
    return with_denied(kept, ResourceType.TOPIC, len(denied), "responses", entries)
