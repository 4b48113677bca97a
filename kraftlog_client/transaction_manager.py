"""The transactional producer's state (Kafka's TransactionManager), driven by the sender
thread; the producer's API calls (``init_transactions`` ...) queue work here and wait on a
:class:`TransactionalResult`.

States and what moves them::

    UNINITIALIZED --init_transactions--> INITIALIZING --InitProducerId--> READY
    READY --begin_transaction--> IN_TRANSACTION
    IN_TRANSACTION --commit_transaction--> COMMITTING --EndTxn--> READY
    IN_TRANSACTION / ABORTABLE_ERROR --abort_transaction--> ABORTING --EndTxn--> READY
    IN_TRANSACTION --prepare_transaction (every batch answered, partitions added)--> PREPARED
    IN_TRANSACTION --a batch or TxnOffsetCommit failed--> ABORTABLE_ERROR (commit refused)
    any --fenced, unauthorized, unsupported--> FATAL_ERROR (every call raises)

Requests go one at a time to the transaction coordinator (found with FindCoordinator
key_type 1 and looked up again after NOT_COORDINATOR / COORDINATOR_NOT_AVAILABLE):
InitProducerId, AddPartitionsToTxn for the partitions records were sent to since the last
one (their batches are not drained before), AddOffsetsToTxn then TxnOffsetCommit (to the
group's coordinator), and EndTxn once every batch of the transaction is answered. Retriable
answers (CONCURRENT_TRANSACTIONS, COORDINATOR_LOAD_IN_PROGRESS, connection errors) are retried
after ``retry.backoff.ms``. Errors are classified as Kafka's producer does: PRODUCER_FENCED,
INVALID_PRODUCER_EPOCH, TRANSACTIONAL_ID_AUTHORIZATION_FAILED, UNSUPPORTED_VERSION and
INVALID_TXN_STATE are fatal (close the producer); others abortable (abort, then go on).

PREPARED (Kafka's KIP-939 two-phase commit) is final for the producer: the transaction stays
open on the coordinator, no request is queued any more, and every call but ``close()``
raises INVALID_TXN_STATE. Any process that holds the :class:`PreparedTxnState` ends it with
EndTxn (:func:`kraftlog_client.transaction_admin.complete_transaction`); a later
InitProducerId of the same transactional id aborts it if nobody did.

After an aborted transaction whose batches failed the sequence state may have gaps: the
producer then asks InitProducerId again, which bumps the epoch and restarts sequences.

Thread-safety: every method takes the manager's lock; the sender thread calls
:meth:`next_request` and the response handlers, user threads the API methods.
"""

from __future__ import annotations

import enum
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from common.error_codes import ErrorCode
from common.protocol.api_keys import ApiKey
from common.protocol.codec import Body
from common.protocol.message_base import Message
from common.protocol.messages.add_offsets_to_txn import (
    AddOffsetsToTxnRequest,
    AddOffsetsToTxnResponse,
)
from common.protocol.messages.add_partitions_to_txn import (
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnRequestTopic,
    AddPartitionsToTxnResponse,
)
from common.protocol.messages.end_txn import EndTxnRequest, EndTxnResponse
from common.protocol.messages.find_coordinator import FindCoordinatorRequest
from common.protocol.messages.init_producer_id import (
    InitProducerIdRequest,
    InitProducerIdResponse,
)
from common.protocol.messages.txn_offset_commit import (
    TxnOffsetCommitRequest,
    TxnOffsetCommitRequestPartition,
    TxnOffsetCommitRequestTopic,
    TxnOffsetCommitResponse,
)
from common.topic_partition import TopicPartition
from kraftlog_client.consumer_coordinator import GROUP_KEY_TYPE
from kraftlog_client.errors import KafkaError, KafkaTimeoutError

# FindCoordinator key type of a transactional id (0 is a group).
TRANSACTION_KEY_TYPE = 1

_FATAL = frozenset(
    {
        ErrorCode.PRODUCER_FENCED,
        ErrorCode.INVALID_PRODUCER_EPOCH,
        ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
        ErrorCode.UNSUPPORTED_VERSION,
        ErrorCode.INVALID_TXN_STATE,
        ErrorCode.INVALID_TRANSACTION_TIMEOUT,
    }
)
_FIND_COORDINATOR_AGAIN = frozenset(
    {ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE}
)


def _commit_topics(offsets: Mapping[TopicPartition, int]) -> list[TxnOffsetCommitRequestTopic]:
    """The ``topics`` of a TxnOffsetCommit: each partition's next offset to read, no leader
    epoch, empty metadata (what an OffsetCommit of the same offsets carries)."""
    by_topic: dict[str, list[TxnOffsetCommitRequestPartition]] = {}
    for tp, offset in sorted(offsets.items()):
        by_topic.setdefault(tp.topic, []).append(
            TxnOffsetCommitRequestPartition(
                partition_index=tp.partition,
                committed_offset=offset,
                committed_leader_epoch=-1,
                committed_metadata="",
            )
        )
    return [TxnOffsetCommitRequestTopic(name=t, partitions=ps) for t, ps in by_topic.items()]


class TxnState(enum.Enum):
    UNINITIALIZED = "uninitialized"
    INITIALIZING = "initializing"
    READY = "ready"
    IN_TRANSACTION = "in_transaction"
    COMMITTING = "committing"
    ABORTING = "aborting"
    ABORTABLE_ERROR = "abortable_error"
    PREPARED = "prepared"
    FATAL_ERROR = "fatal_error"


@dataclass(frozen=True, slots=True)
class PreparedTxnState:
    """What ends a prepared transaction from any process: EndTxn names exactly this
    transactional id, producer id and epoch (EndTxn v0-v3 does not bump the epoch, so the
    epoch of the prepare is the one the coordinator checks). Picklable and JSON-able
    (:meth:`to_dict` / :meth:`from_dict`)."""

    transactional_id: str
    producer_id: int
    producer_epoch: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "transactional_id": self.transactional_id,
            "producer_id": self.producer_id,
            "producer_epoch": self.producer_epoch,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> PreparedTxnState:
        return cls(str(d["transactional_id"]), int(d["producer_id"]), int(d["producer_epoch"]))


class TransactionalResult:
    """The outcome of one API call, set by the sender thread."""

    def __init__(self) -> None:
        self._done = threading.Event()
        self.error: Exception | None = None

    def set(self, error: Exception | None = None) -> None:
        if not self._done.is_set():
            self.error = error
            self._done.set()

    def wait(self, timeout_s: float | None) -> None:
        if not self._done.wait(timeout_s):
            raise KafkaTimeoutError(f"the transactional call did not finish in {timeout_s} s")
        if self.error is not None:
            raise self.error


@dataclass(frozen=True, slots=True)
class ConsumerGroupMetadata:
    """What ``send_offsets_to_transaction`` needs of the consumer (Kafka's class of the same
    name); generation and member id are carried for KIP-447 brokers."""

    group_id: str
    generation_id: int = -1
    member_id: str = ""
    group_instance_id: str | None = None


@dataclass(slots=True)
class TxnRequest:
    """One request for the sender to send: to the transaction coordinator, or (``group``
    set) to that group's coordinator."""

    api_key: ApiKey
    body: Message
    on_response: Callable[[Body], None]
    group: str | None = None
    result: TransactionalResult | None = None
    not_before_s: float = 0.0
    attempts: int = field(default=0)


class TransactionManager:
    def __init__(
        self,
        transactional_id: str,
        transaction_timeout_ms: int,
        backoff_ms: int,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """``clock``: monotonic seconds, the sender's (request backoffs are due by it)."""
        self.transactional_id = transactional_id
        self._clock = clock
        self.transaction_timeout_ms = transaction_timeout_ms
        self._backoff_s = backoff_ms / 1000.0
        self._lock = threading.RLock()
        self.state = TxnState.UNINITIALIZED
        self.producer_id = -1
        self.producer_epoch = -1
        self.coordinator: int | None = None
        self.group_coordinators: dict[str, int] = {}
        self._queue: deque[TxnRequest] = deque()
        self.in_flight = False
        self._partitions: set[TopicPartition] = set()  # added to the transaction
        self._new_partitions: set[TopicPartition] = set()  # records sent, not added yet
        self._adding: set[TopicPartition] = set()  # AddPartitionsToTxn in flight
        self._last_error: Exception | None = None
        self._needs_epoch_bump = False
        # Whether the coordinator knows the open transaction (a partition or a group was
        # added): an unknown one ends here, without EndTxn, as Kafka's producer does.
        self._started = False
        self._on_producer_id: Callable[[int, int], None] = lambda _pid, _epoch: None

    # -- the producer's calls ------------------------------------------------------------

    def on_producer_id(self, fn: Callable[[int, int], None]) -> None:
        """``fn(producer_id, epoch)`` runs when InitProducerId answers (the idempotence
        manager restarts its sequences)."""
        self._on_producer_id = fn

    def init_transactions(self) -> TransactionalResult:
        with self._lock:
            self._require(TxnState.UNINITIALIZED, "init_transactions")
            self.state = TxnState.INITIALIZING
            result = TransactionalResult()
            self._queue.append(self._init_request(result))
            return result

    def begin_transaction(self) -> None:
        with self._lock:
            self._require(TxnState.READY, "begin_transaction")
            self.state = TxnState.IN_TRANSACTION
            self._started = False

    def maybe_add_partition(self, tp: TopicPartition) -> None:
        """A record for ``tp`` was sent: the partition joins the transaction before its batch
        is drained."""
        with self._lock:
            if self.state not in (TxnState.IN_TRANSACTION, TxnState.ABORTABLE_ERROR):
                raise KafkaError(
                    ErrorCode.INVALID_TXN_STATE,
                    f"send() outside a transaction (state {self.state.value}); call "
                    "begin_transaction() first",
                )
            # A partition whose AddPartitionsToTxn is in flight is not asked for again.
            if tp not in self._partitions and tp not in self._adding:
                self._new_partitions.add(tp)

    def send_offsets_to_transaction(
        self, offsets: dict[TopicPartition, int], group: ConsumerGroupMetadata
    ) -> TransactionalResult:
        with self._lock:
            self._require(TxnState.IN_TRANSACTION, "send_offsets_to_transaction")
            result = TransactionalResult()
            body = AddOffsetsToTxnRequest(
                transactional_id=self.transactional_id,
                producer_id=self.producer_id,
                producer_epoch=self.producer_epoch,
                group_id=group.group_id,
            )
            self._queue.append(
                TxnRequest(
                    ApiKey.ADD_OFFSETS_TO_TXN,
                    body,
                    lambda r: self._on_add_offsets(r, offsets, group, result),
                    result=result,
                )
            )
            return result

    def begin_commit(self) -> TransactionalResult:
        with self._lock:
            if self.state is TxnState.ABORTABLE_ERROR:
                raise KafkaError(
                    ErrorCode.INVALID_TXN_STATE,
                    f"the transaction must be aborted: {self._last_error}",
                )
            self._require(TxnState.IN_TRANSACTION, "commit_transaction")
            self.state = TxnState.COMMITTING
            return self._queue_end(committed=True)

    def begin_abort(self) -> TransactionalResult:
        with self._lock:
            if self.state not in (TxnState.IN_TRANSACTION, TxnState.ABORTABLE_ERROR):
                self._require(TxnState.IN_TRANSACTION, "abort_transaction")
            self.state = TxnState.ABORTING
            self._new_partitions.clear()
            return self._queue_end(committed=False)

    def idle(self) -> bool:
        """Whether no request is queued, in flight or waiting for partitions to add."""
        with self._lock:
            return not (self._new_partitions or self._adding or self._queue or self.in_flight)

    def prepare(self) -> PreparedTxnState:
        """Move an open transaction whose batches are all answered to PREPARED (the caller
        flushed first) and return what ends it. Raises INVALID_TXN_STATE (the transaction
        stays open) when a record failed, a partition or offset request is still queued (a
        send() raced the flush), or the state is not IN_TRANSACTION."""
        with self._lock:
            if self.state is TxnState.ABORTABLE_ERROR:
                raise KafkaError(
                    ErrorCode.INVALID_TXN_STATE,
                    f"the transaction must be aborted: {self._last_error}",
                )
            self._require(TxnState.IN_TRANSACTION, "prepare_transaction")
            if not self.idle():
                raise KafkaError(
                    ErrorCode.INVALID_TXN_STATE,
                    "prepare_transaction: records or offsets of the transaction are still "
                    "being sent (send() during prepare_transaction?)",
                )
            self.state = TxnState.PREPARED
            return PreparedTxnState(self.transactional_id, self.producer_id, self.producer_epoch)

    def _queue_end(self, *, committed: bool) -> TransactionalResult:
        result = TransactionalResult()
        body = EndTxnRequest(
            transactional_id=self.transactional_id,
            producer_id=self.producer_id,
            producer_epoch=self.producer_epoch,
            committed=committed,
        )
        self._queue.append(
            TxnRequest(ApiKey.END_TXN, body, lambda r: self._on_end(r, result), result=result)
        )
        return result

    def _require(self, state: TxnState, call: str) -> None:
        if self.state is TxnState.FATAL_ERROR:
            raise KafkaError(
                ErrorCode.INVALID_TXN_STATE,
                f"{call}: the producer hit a fatal error and must be closed: {self._last_error}",
            )
        if self.state is not state:
            raise KafkaError(
                ErrorCode.INVALID_TXN_STATE,
                f"{call} in state {self.state.value} (needs {state.value})",
            )

    # -- the sender's side ---------------------------------------------------------------

    def may_drain(self, tp: TopicPartition) -> bool:
        with self._lock:
            return tp in self._partitions

    def next_request(self, now_s: float, batches_outstanding: bool) -> TxnRequest | None:
        """The request to send now, if any (one at a time). EndTxn waits until every batch
        of the transaction is answered; new partitions are added before anything else."""
        with self._lock:
            if self.in_flight or self.state is TxnState.FATAL_ERROR:
                return None
            if (
                self._new_partitions
                and not self._adding
                and self.state in (TxnState.IN_TRANSACTION, TxnState.COMMITTING)
            ):
                # One AddPartitionsToTxn at a time: ``_adding`` is the partitions of the one
                # queued (a retriable answer keeps it queued); the next one waits for it.
                parts = sorted(self._new_partitions)
                self._adding = set(parts)
                self._new_partitions.clear()
                by_topic: dict[str, list[int]] = {}
                for tp in parts:
                    by_topic.setdefault(tp.topic, []).append(tp.partition)
                body = AddPartitionsToTxnRequest(
                    v3_and_below_transactional_id=self.transactional_id,
                    v3_and_below_producer_id=self.producer_id,
                    v3_and_below_producer_epoch=self.producer_epoch,
                    v3_and_below_topics=[
                        AddPartitionsToTxnRequestTopic(name=t, partitions=ps)
                        for t, ps in by_topic.items()
                    ],
                )
                self._queue.appendleft(
                    TxnRequest(ApiKey.ADD_PARTITIONS_TO_TXN, body, self._on_add_partitions)
                )
            if not self._queue:
                return None
            req = self._queue[0]
            if req.not_before_s > now_s:
                return None
            if req.api_key == ApiKey.END_TXN:
                if batches_outstanding or self._adding:
                    return None
                committed = isinstance(req.body, EndTxnRequest) and req.body.committed
                if committed and self.state is TxnState.ABORTABLE_ERROR:
                    # A batch failed while the commit waited for it: no commit.
                    self._queue.popleft()
                    if req.result is not None:
                        req.result.set(
                            KafkaError(
                                ErrorCode.INVALID_TXN_STATE,
                                f"the transaction must be aborted: {self._last_error}",
                            )
                        )
                    return None
                if not self._started:
                    # Nothing reached the coordinator: the transaction ends here (an EndTxn
                    # would get INVALID_TXN_STATE from a coordinator that never saw it).
                    self._queue.popleft()
                    if req.result is not None:
                        self._ended(req.result)
                    return None
            self.in_flight = True
            return req

    def release(self, req: TxnRequest) -> None:
        """``req`` could not be sent yet (no coordinator or connection): not in flight."""
        with self._lock:
            self.in_flight = False

    def has_work(self) -> bool:
        """Whether a request is queued or partitions wait to be added."""
        with self._lock:
            return bool(self._queue or self._new_partitions)

    @property
    def last_error(self) -> Exception | None:
        return self._last_error

    def request_sent_failed(self, req: TxnRequest, error: Exception, now_s: float) -> None:
        """No answer (connection lost, timeout): try again later, at the coordinator found
        again."""
        with self._lock:
            self.in_flight = False
            if req.group is None:
                self.coordinator = None
            else:
                self.group_coordinators.pop(req.group, None)
            req.not_before_s = now_s + self._backoff_s
            if req.api_key == ApiKey.ADD_PARTITIONS_TO_TXN:
                self._queue.remove(req)
                self._new_partitions |= self._adding
                self._adding = set()

    def handle_response(self, req: TxnRequest, response: Body) -> None:
        with self._lock:
            self.in_flight = False
            req.on_response(response)

    def find_coordinator_body(self, req: TxnRequest) -> FindCoordinatorRequest:
        if req.group is None:
            return FindCoordinatorRequest(key=self.transactional_id, key_type=TRANSACTION_KEY_TYPE)
        return FindCoordinatorRequest(key=req.group, key_type=GROUP_KEY_TYPE)

    def coordinator_for(self, req: TxnRequest) -> int | None:
        with self._lock:
            if req.group is None:
                return self.coordinator
            return self.group_coordinators.get(req.group)

    def set_coordinator(self, req: TxnRequest, node_id: int) -> None:
        with self._lock:
            if req.group is None:
                self.coordinator = node_id
            else:
                self.group_coordinators[req.group] = node_id

    def batch_failed(self, error: Exception) -> None:
        """A batch of the transaction failed: it can no longer commit."""
        with self._lock:
            if self.state in (TxnState.IN_TRANSACTION, TxnState.COMMITTING):
                self._abortable(error)
            self._needs_epoch_bump = True

    def fatal(self, error: Exception) -> None:
        with self._lock:
            self._fail_all(error)

    # -- response handlers (lock held) ---------------------------------------------------

    def _init_request(self, result: TransactionalResult) -> TxnRequest:
        body = InitProducerIdRequest(
            transactional_id=self.transactional_id,
            transaction_timeout_ms=self.transaction_timeout_ms,
        )
        return TxnRequest(
            ApiKey.INIT_PRODUCER_ID, body, lambda r: self._on_init(r, result), result=result
        )

    def _retry_or_fail(self, code: int, what: str) -> bool:
        """Handle an error answer; True when the head request stays queued for a retry."""
        error = KafkaError(code, f"{what} for transactional id {self.transactional_id}")
        req = self._queue[0]
        if code in _FIND_COORDINATOR_AGAIN:
            self.coordinator = None if req.group is None else self.coordinator
            if req.group is not None:
                self.group_coordinators.pop(req.group, None)
        if error.retriable or code in _FIND_COORDINATOR_AGAIN:
            req.attempts += 1
            req.not_before_s = self._clock() + self._backoff_s
            return True
        self._queue.popleft()
        if req.result is not None:
            req.result.set(error)
        if code in _FATAL:
            self._fail_all(error)
        else:
            self._abortable(error)
        return False

    def _fail_all(self, error: Exception) -> None:
        self.state = TxnState.FATAL_ERROR
        self._last_error = error
        for queued in self._queue:
            if queued.result is not None:
                queued.result.set(error)
        self._queue.clear()

    def _abortable(self, error: Exception) -> None:
        if self.state is not TxnState.FATAL_ERROR:
            self.state = TxnState.ABORTABLE_ERROR
            self._last_error = error

    def _on_init(self, r: InitProducerIdResponse, result: TransactionalResult) -> None:
        code = r.error_code
        if code != 0:
            self._retry_or_fail(code, "InitProducerId")
            return
        self._queue.popleft()
        self.producer_id = r.producer_id
        self.producer_epoch = r.producer_epoch
        self._needs_epoch_bump = False
        self._on_producer_id(self.producer_id, self.producer_epoch)
        self.state = TxnState.READY
        result.set()

    def _on_add_partitions(self, r: AddPartitionsToTxnResponse) -> None:
        codes = [
            p.partition_error_code
            for t in r.results_by_topic_v3_and_below
            for p in t.results_by_partition
        ]
        bad = next((c for c in codes if c != 0), 0)
        if bad == 0:
            self._queue.popleft()
            self._started = True
            self._partitions |= self._adding
            self._adding = set()
            return
        if bad == ErrorCode.OPERATION_NOT_ATTEMPTED:
            bad = next((c for c in codes if c not in (0, ErrorCode.OPERATION_NOT_ATTEMPTED)), bad)
        if not self._retry_or_fail(bad, "AddPartitionsToTxn"):
            self._adding = set()

    def _on_add_offsets(
        self,
        r: AddOffsetsToTxnResponse,
        offsets: dict[TopicPartition, int],
        group: ConsumerGroupMetadata,
        result: TransactionalResult,
    ) -> None:
        code = r.error_code
        if code != 0:
            self._retry_or_fail(code, "AddOffsetsToTxn")
            return
        self._queue.popleft()
        self._started = True
        body = TxnOffsetCommitRequest(
            transactional_id=self.transactional_id,
            group_id=group.group_id,
            producer_id=self.producer_id,
            producer_epoch=self.producer_epoch,
            generation_id=group.generation_id,
            member_id=group.member_id,
            group_instance_id=group.group_instance_id,
            topics=_commit_topics(offsets),
        )
        self._queue.appendleft(
            TxnRequest(
                ApiKey.TXN_OFFSET_COMMIT,
                body,
                lambda resp: self._on_txn_offset_commit(resp, result),
                group=group.group_id,
                result=result,
            )
        )

    def _on_txn_offset_commit(
        self, r: TxnOffsetCommitResponse, result: TransactionalResult
    ) -> None:
        codes = [p.error_code for t in r.topics for p in t.partitions]
        bad = next((c for c in codes if c != 0), 0)
        if bad != 0:
            self._retry_or_fail(bad, "TxnOffsetCommit")
            return
        self._queue.popleft()
        result.set()

    def _on_end(self, r: EndTxnResponse, result: TransactionalResult) -> None:
        code = r.error_code
        if code != 0:
            self._retry_or_fail(code, "EndTxn")
            return
        self._queue.popleft()
        self._ended(result)

    def _ended(self, result: TransactionalResult) -> None:
        """The transaction is over: READY, or a new epoch first after failed batches."""
        self._partitions.clear()
        self._new_partitions.clear()
        if self._needs_epoch_bump:
            # Failed batches left sequence gaps: a new epoch restarts every sequence.
            self.state = TxnState.INITIALIZING
            self._queue.appendleft(self._init_request(result))
            return
        self.state = TxnState.READY
        result.set()
