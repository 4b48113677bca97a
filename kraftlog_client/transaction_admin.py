"""Transaction administration over the Kafka protocol (used by :class:`Admin`), as Kafka's
kafka-transactions.sh does it.

- Listing asks every broker (ListTransactions): each answers for the transactional ids it
  coordinates.
- Describing asks the id's coordinator (FindCoordinator key type 1, DescribeTransactions).
- Producers of a partition come from its leader (DescribeProducers): the first offset of each
  producer's open transaction there is how a hanging transaction is found.
- Completing a prepared transaction (:func:`complete_transaction`) sends EndTxn to the id's
  coordinator naming the producer id and epoch of the prepare, as the producer would: the
  second phase of a two-phase commit, from any process.
- Aborting writes an ABORT marker for one producer straight to the partition's leader
  (WriteTxnMarkers, the request a coordinator sends; it needs ClusterAction on a secured
  cluster). It is meant for a transaction the coordinator no longer knows (a hanging one); the
  producer's epoch and the coordinator epoch must be at least those the partition holds.

Functions block on the calling thread up to their deadline (``time.monotonic()`` seconds);
coordinator moves and leader changes are retried.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import NamedTuple

from common.error_codes import ErrorCode
from common.protocol.api_keys import ApiKey
from common.protocol.codec import Body
from common.protocol.message_base import Message
from common.protocol.messages.describe_producers import (
    DescribeProducersRequest,
    DescribeProducersRequestTopic,
    DescribeProducersResponse,
    DescribeProducersResponsePartition,
)
from common.protocol.messages.describe_transactions import (
    DescribeTransactionsRequest,
    DescribeTransactionsResponse,
)
from common.protocol.messages.end_txn import EndTxnRequest
from common.protocol.messages.list_transactions import (
    ListTransactionsRequest,
    ListTransactionsResponse,
)
from common.protocol.messages.write_txn_markers import (
    WriteTxnMarkersRequest,
    WriteTxnMarkersRequestMarker,
    WriteTxnMarkersRequestTopic,
    WriteTxnMarkersResponse,
)
from common.topic_partition import TopicPartition
from kraftlog_client.consumer_coordinator import error_code
from kraftlog_client.coordinator_lookup import (
    remaining_ms,
    sleep_until_retry,
    with_coordinator,
)
from kraftlog_client.errors import KafkaError
from kraftlog_client.network_client import NetworkClient
from kraftlog_client.transaction_manager import TRANSACTION_KEY_TYPE, PreparedTxnState

logger = logging.getLogger(__name__)

# Errors that a fresh look at the metadata cures: the partition's leader moved.
_LEADER_RETRIABLE = frozenset(
    {
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        ErrorCode.LEADER_NOT_AVAILABLE,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    }
)


class TransactionListing(NamedTuple):
    transactional_id: str
    producer_id: int
    state: str  # Kafka's: Empty, Ongoing, PrepareCommit, PrepareAbort, CompleteCommit, ...
    coordinator: int


class TransactionDescription(NamedTuple):
    transactional_id: str
    state: str
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    start_time_ms: int  # -1 when no transaction has started
    partitions: tuple[TopicPartition, ...]
    coordinator: int


class ProducerState(NamedTuple):
    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_timestamp: int
    coordinator_epoch: int  # of the coordinator that wrote its last marker here; -1: none
    current_txn_start_offset: int  # first offset of its open transaction; -1: none


def list_transactions(
    client: NetworkClient,
    deadline: float,
    per_broker_timeout_ms: float,
    *,
    states: Iterable[str] = (),
    producer_ids: Iterable[int] = (),
    min_duration_ms: int = -1,
) -> list[TransactionListing]:
    """Every broker's transactional ids matching the filters (empty: all). A broker that does
    not answer within ``per_broker_timeout_ms`` or is loading its ``__transaction_state``
    partitions is skipped (its ids show on a later listing); if none answers, the last error
    is raised. Unknown state names raise INVALID_REQUEST."""
    client.fetch_metadata([], remaining_ms(deadline, "Metadata"))
    body = ListTransactionsRequest(
        state_filters=list(states),
        producer_id_filters=list(producer_ids),
        duration_filter=min_duration_ms,
    )
    out: dict[str, TransactionListing] = {}
    answered = 0
    last_error: KafkaError | None = None
    for node in sorted(client.metadata.brokers):
        timeout = min(per_broker_timeout_ms, remaining_ms(deadline, "ListTransactions"))
        try:
            response: ListTransactionsResponse = client.request(
                node, ApiKey.LIST_TRANSACTIONS, body, timeout
            )
        except KafkaError as e:
            logger.warning("ListTransactions: broker %d did not answer: %s", node, e)
            last_error = e
            continue
        answered += 1
        unknown = response.unknown_state_filters
        if unknown:
            raise KafkaError(ErrorCode.INVALID_REQUEST, f"unknown states {', '.join(unknown)}")
        code = error_code(response.error_code)
        if code == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
            continue
        if code != ErrorCode.NO_ERROR:
            raise KafkaError(code, f"ListTransactions on broker {node}")
        for t in response.transaction_states:
            out[t.transactional_id] = TransactionListing(
                transactional_id=t.transactional_id,
                producer_id=t.producer_id,
                state=t.transaction_state,
                coordinator=node,
            )
    if not answered and last_error is not None:
        raise last_error
    return sorted(out.values())


def describe_transaction(
    client: NetworkClient, transactional_id: str, deadline: float, backoff_ms: int
) -> TransactionDescription:
    """The coordinator's view of ``transactional_id``; TRANSACTIONAL_ID_NOT_FOUND if none."""

    def first_error(r: DescribeTransactionsResponse) -> int:
        states = r.transaction_states
        return error_code(states[0].error_code) if states else 0

    node, response = with_coordinator(
        client,
        transactional_id,
        ApiKey.DESCRIBE_TRANSACTIONS,
        DescribeTransactionsRequest(transactional_ids=[transactional_id]),
        deadline,
        backoff_ms,
        first_error,
        TRANSACTION_KEY_TYPE,
    )
    states = response.transaction_states
    if not states:
        raise KafkaError(
            ErrorCode.UNKNOWN_SERVER_ERROR, f"DescribeTransactions({transactional_id}): no answer"
        )
    s = states[0]
    code = error_code(s.error_code)
    if code != ErrorCode.NO_ERROR:
        raise KafkaError(code, f"DescribeTransactions({transactional_id})")
    partitions = tuple(TopicPartition(t.topic, p) for t in s.topics for p in t.partitions)
    return TransactionDescription(
        transactional_id=s.transactional_id,
        state=s.transaction_state,
        producer_id=s.producer_id,
        producer_epoch=s.producer_epoch,
        timeout_ms=s.transaction_timeout_ms,
        start_time_ms=s.transaction_start_time_ms,
        partitions=partitions,
        coordinator=node,
    )


def _to_leader(
    client: NetworkClient,
    tp: TopicPartition,
    api_key: ApiKey,
    body: Message,
    error_of: Callable[[Body], int],
    deadline: float,
    backoff_ms: int,
) -> Body:
    """Send ``body`` to ``tp``'s leader, refreshing metadata and retrying while the leader
    is unknown or moved; returns the response whose ``error_of`` is not such an error."""
    while True:
        client.fetch_metadata([tp.topic], remaining_ms(deadline, "Metadata"))
        leader = client.metadata.leader_for(tp)
        if leader is not None and leader >= 0:
            try:
                response = client.request(
                    leader, api_key, body, remaining_ms(deadline, api_key.name)
                )
            except KafkaError as e:
                if not e.retriable:
                    raise
            else:
                if error_of(response) not in _LEADER_RETRIABLE:
                    return response
        if remaining_ms(deadline, api_key.name) <= backoff_ms:
            raise KafkaError(ErrorCode.LEADER_NOT_AVAILABLE, f"{api_key.name}: {tp} has no leader")
        sleep_until_retry(deadline, backoff_ms)


def describe_producers(
    client: NetworkClient, tp: TopicPartition, deadline: float, backoff_ms: int
) -> list[ProducerState]:
    """The producers the partition's leader keeps state for, by producer id."""

    def partition_of(r: DescribeProducersResponse) -> DescribeProducersResponsePartition:
        for t in r.topics:
            for p in t.partitions:
                if t.name == tp.topic and p.partition_index == tp.partition:
                    return p
        return DescribeProducersResponsePartition(
            partition_index=tp.partition, error_code=ErrorCode.UNKNOWN_SERVER_ERROR
        )

    request = DescribeProducersRequest(
        topics=[DescribeProducersRequestTopic(name=tp.topic, partition_indexes=[tp.partition])]
    )
    response = _to_leader(
        client,
        tp,
        ApiKey.DESCRIBE_PRODUCERS,
        request,
        lambda r: error_code(partition_of(r).error_code),
        deadline,
        backoff_ms,
    )
    p = partition_of(response)
    code = error_code(p.error_code)
    if code != ErrorCode.NO_ERROR:
        raise KafkaError(code, f"DescribeProducers({tp}): {p.error_message or ''}")
    return [
        ProducerState(
            producer_id=e.producer_id,
            producer_epoch=e.producer_epoch,
            last_sequence=e.last_sequence,
            last_timestamp=e.last_timestamp,
            coordinator_epoch=e.coordinator_epoch,
            current_txn_start_offset=e.current_txn_start_offset,
        )
        for e in p.active_producers
    ]


def abort_transaction(
    client: NetworkClient,
    tp: TopicPartition,
    producer_id: int,
    producer_epoch: int,
    coordinator_epoch: int,
    deadline: float,
    backoff_ms: int,
) -> None:
    """Write an ABORT marker for ``producer_id``'s open transaction on ``tp`` (its leader
    appends it and waits for the ISR, as for a coordinator's marker)."""

    def error_of(r: WriteTxnMarkersResponse) -> int:
        for m in r.markers:
            for t in m.topics:
                for p in t.partitions:
                    return error_code(p.error_code)
        return ErrorCode.UNKNOWN_SERVER_ERROR

    body = WriteTxnMarkersRequest(
        markers=[
            WriteTxnMarkersRequestMarker(
                producer_id=producer_id,
                producer_epoch=producer_epoch,
                transaction_result=False,
                topics=[
                    WriteTxnMarkersRequestTopic(name=tp.topic, partition_indexes=[tp.partition])
                ],
                coordinator_epoch=coordinator_epoch,
            )
        ]
    )
    response = _to_leader(
        client, tp, ApiKey.WRITE_TXN_MARKERS, body, error_of, deadline, backoff_ms
    )
    code = error_of(response)
    if code != ErrorCode.NO_ERROR:
        raise KafkaError(code, f"WriteTxnMarkers(abort producer {producer_id} on {tp})")


def complete_transaction(
    client: NetworkClient,
    prepared: PreparedTxnState,
    committed: bool,
    deadline: float,
    backoff_ms: int,
) -> None:
    """End the prepared transaction: EndTxn(transactional_id, producer_id, producer_epoch,
    committed) to its coordinator, retried until ``deadline`` while the coordinator moves or
    loads, a connection fails, or it answers CONCURRENT_TRANSACTIONS (a previous EndTxn's
    markers are still being written).

    Idempotent: the coordinator answers NO_ERROR to EndTxn of a transaction it already ended
    the same way with the same producer id and epoch, so a decision may be sent again after
    a crash. Raises :class:`KafkaError` otherwise: PRODUCER_FENCED (the id's epoch moved on:
    an InitProducerId, or the coordinator's abort of a timed-out transaction, came first),
    INVALID_TXN_STATE (ended the other way), INVALID_PRODUCER_ID_MAPPING (another producer
    id holds the transactional id); KafkaTimeoutError at the deadline."""
    body = EndTxnRequest(
        transactional_id=prepared.transactional_id,
        producer_id=prepared.producer_id,
        producer_epoch=prepared.producer_epoch,
        committed=committed,
    )
    while True:
        _node, response = with_coordinator(
            client,
            prepared.transactional_id,
            ApiKey.END_TXN,
            body,
            deadline,
            backoff_ms,
            lambda r: error_code(r.error_code),
            TRANSACTION_KEY_TYPE,
        )
        code = error_code(response.error_code)
        if code == ErrorCode.NO_ERROR:
            return
        if code != ErrorCode.CONCURRENT_TRANSACTIONS:
            outcome = "commit" if committed else "abort"
            raise KafkaError(
                code,
                f"EndTxn({outcome}) of {prepared.transactional_id} "
                f"(producer {prepared.producer_id}, epoch {prepared.producer_epoch})",
            )
        remaining_ms(deadline, "EndTxn")
        sleep_until_retry(deadline, backoff_ms)
