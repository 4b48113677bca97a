"""AddPartitionsToTxn (24).

v0-3 (clients): a transactional producer names the partitions it is about to write in its
transaction, before its first Produce to each (the coordinator must know them to write their
end markers).

- Partitions of topics that do not exist get UNKNOWN_TOPIC_OR_PARTITION and the others
  OPERATION_NOT_ATTEMPTED, with nothing added (as Kafka); so do internal topics (INVALID_
  TOPIC_EXCEPTION): only coordinators write them.
- Otherwise the transaction coordinator's one answer goes to every partition: NO_ERROR once the
  Ongoing state with the partitions is written to ``__transaction_state``; NOT_COORDINATOR,
  COORDINATOR_LOAD_IN_PROGRESS, CONCURRENT_TRANSACTIONS (retriable), INVALID_PRODUCER_ID_MAPPING,
  PRODUCER_FENCED (INVALID_PRODUCER_EPOCH before v2), INVALID_TXN_STATE.

v4+ (``FIRST_BROKER_VERSION``; brokers, ClusterAction): several transactions per request.
With ``verify_only`` a partition leader asks whether partitions are in the producer's ongoing
transaction before it appends the transaction's first batch there (KIP-890): per partition
NO_ERROR or INVALID_TXN_STATE, or the lookup's error for all (nothing is written). Without it
the partitions are added as in v3.
"""

from __future__ import annotations

from collections.abc import Sequence

from common.error_codes import ErrorCode
from common.protocol.messages.add_partitions_to_txn import (
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnRequestTopic,
    AddPartitionsToTxnResponse,
    AddPartitionsToTxnResponseResultsByPartition,
    AddPartitionsToTxnResponseResultsByTransaction,
    AddPartitionsToTxnResponseTopicResult,
)
from common.security.acl import AclOperation, ResourceType
from data_plane.broker.apis import Body, KafkaApis, Request, Response
from data_plane.broker.handlers.transaction_errors import for_version
from data_plane.security.request_authz import (
    CLUSTER_DENIED,
    TOPIC_DENIED,
    TXN_DENIED,
    RequestAuthorizer,
    Session,
    Verdict,
)
from metadata.topics import INTERNAL_TOPICS

Partition = tuple[str, int]
# v4+ batches transactions and verifies partitions: sent by partition leaders (brokers).
FIRST_BROKER_VERSION = 4


def _topic_results(errors: dict[Partition, int]) -> list[AddPartitionsToTxnResponseTopicResult]:
    by_topic: dict[str, list[AddPartitionsToTxnResponseResultsByPartition]] = {}
    for (topic, partition), code in errors.items():
        by_topic.setdefault(topic, []).append(
            AddPartitionsToTxnResponseResultsByPartition(
                partition_index=partition, partition_error_code=code
            )
        )
    return [
        AddPartitionsToTxnResponseTopicResult(name=t, results_by_partition=ps)
        for t, ps in by_topic.items()
    ]


def _partitions(topics: Sequence[AddPartitionsToTxnRequestTopic]) -> list[Partition]:
    return [(t.name, p) for t in topics for p in t.partitions]


def _request(request: Request) -> AddPartitionsToTxnRequest:
    body = request.body
    if not isinstance(body, AddPartitionsToTxnRequest):
        raise TypeError(f"AddPartitionsToTxn handler given {type(body).__name__}")
    return body


def handle(apis: KafkaApis, request: Request) -> Response:
    body = _request(request)
    if request.header.api_version >= FIRST_BROKER_VERSION:
        return _transactions(apis, body)
    partitions = _partitions(body.v3_and_below_topics)
    bad = _refused(apis, partitions)
    if bad is not None:
        return AddPartitionsToTxnResponse(
            throttle_time_ms=0, results_by_topic_v3_and_below=_topic_results(bad)
        )
    return _add_v3(apis, request, body, partitions)


def _refused(apis: KafkaApis, partitions: list[Partition]) -> dict[Partition, int] | None:
    """The per-partition answer when some partition cannot join a transaction, else None."""
    image = apis.image
    bad: dict[Partition, int] = {}
    for topic, p in partitions:
        if topic in INTERNAL_TOPICS:
            bad[(topic, p)] = ErrorCode.INVALID_TOPIC_EXCEPTION
        elif image.partition(topic, p) is None:
            bad[(topic, p)] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    if not bad:
        return None
    return {tp: bad.get(tp, ErrorCode.OPERATION_NOT_ATTEMPTED) for tp in partitions}


async def _add_v3(
    apis: KafkaApis,
    request: Request,
    body: AddPartitionsToTxnRequest,
    partitions: list[Partition],
) -> AddPartitionsToTxnResponse:
    code = await apis.transaction_coordinator.add_partitions(
        body.v3_and_below_transactional_id,
        body.v3_and_below_producer_id,
        body.v3_and_below_producer_epoch,
        partitions,
    )
    code = for_version(code, request.header.api_version)
    return AddPartitionsToTxnResponse(
        throttle_time_ms=0,
        results_by_topic_v3_and_below=_topic_results({tp: code for tp in partitions}),
    )


async def _transactions(
    apis: KafkaApis, body: AddPartitionsToTxnRequest
) -> AddPartitionsToTxnResponse:
    runtime = apis.transaction_coordinator
    results = []
    for txn in body.transactions:
        partitions = _partitions(txn.topics)
        tid, pid, epoch = txn.transactional_id, txn.producer_id, txn.producer_epoch
        if txn.verify_only:
            errors = runtime.coordinator.verify_partitions(tid, pid, epoch, partitions)
        else:
            refused = _refused(apis, partitions)
            if refused is not None:
                errors = refused
            else:
                code = await runtime.add_partitions(tid, pid, epoch, partitions)
                errors = {tp: code for tp in partitions}
        results.append(
            AddPartitionsToTxnResponseResultsByTransaction(
                transactional_id=tid, topic_results=_topic_results(errors)
            )
        )
    return AddPartitionsToTxnResponse(
        throttle_time_ms=0, error_code=0, results_by_transaction=results
    )


def authorize(authz: RequestAuthorizer, s: Session, version: int, body: Body) -> Verdict:
    """v4+ (partition leaders verifying transactions): ClusterAction on the cluster. v0-3:
    Write on the transactional id and on each topic; when any is refused nothing is added:
    refused topics' partitions get TOPIC_AUTHORIZATION_FAILED (every partition
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED when the id is refused), the others
    OPERATION_NOT_ATTEMPTED, as Kafka answers."""
    if not isinstance(body, AddPartitionsToTxnRequest):
        raise TypeError(f"AddPartitionsToTxn rule given {type(body).__name__}")
    if version >= FIRST_BROKER_VERSION:
        if authz.cluster(s, AclOperation.CLUSTER_ACTION):
            return Verdict(body)
        return Verdict.refused(
            body,
            AddPartitionsToTxnResponse(
                throttle_time_ms=0, error_code=CLUSTER_DENIED, results_by_transaction=[]
            ),
            ResourceType.CLUSTER,
        )
    topics = body.v3_and_below_topics
    txn_ok = authz.transactional_id(s, AclOperation.WRITE, body.v3_and_below_transactional_id)
    denied_topics = {
        t.name for t in topics if not txn_ok or not authz.topic(s, AclOperation.WRITE, t.name)
    }
    if not denied_topics:
        return Verdict(body)
    code = TOPIC_DENIED if txn_ok else TXN_DENIED
    results = [
        AddPartitionsToTxnResponseTopicResult(
            name=t.name,
            results_by_partition=[
                AddPartitionsToTxnResponseResultsByPartition(
                    partition_index=p,
                    partition_error_code=(
                        code if t.name in denied_topics else int(ErrorCode.OPERATION_NOT_ATTEMPTED)
                    ),
                )
                for p in t.partitions
            ],
        )
        for t in topics
    ]
    return Verdict.refused(
        body,
        AddPartitionsToTxnResponse(throttle_time_ms=0, results_by_topic_v3_and_below=results),
        ResourceType.TOPIC if txn_ok else ResourceType.TRANSACTIONAL_ID,
        len(denied_topics),
    )
