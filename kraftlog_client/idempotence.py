"""The idempotent producer's state: producer id, per-partition sequences, in-order retries.

Sans-IO; owned by the sender thread (``may_drain`` runs on that thread too, inside
:meth:`RecordAccumulator.drain` under the accumulator's lock), so it takes no lock.

Invariants:

- A batch gets its ``base_sequence`` (and the producer id/epoch) the first time it is drained
  and keeps it for every retry; a partition's sequences are consecutive in drain order.
- ``_unresolved[tp]`` holds, in sequence order, the batches of ``tp`` sent and not yet
  completed (in flight or queued for a retry); ``_retrying[tp]`` the ones queued for a retry.
- While a partition has a batch awaiting retry, nothing of it is drained while another of its
  batches is in flight: the retries go one at a time in sequence order, then new batches
  (Kafka's "in-flight batches in order" guard). Without retries up to
  max.in.flight.requests.per.connection (<= 5, the broker's duplicate window) are in flight.
- After a sequence error the producer cannot guarantee order: it fails the batch, drains what
  is still unresolved (old producer id, still known to the broker), then asks for a new id
  and restarts every partition at sequence 0 (InitProducerId v0-1 cannot bump an epoch).
"""

from __future__ import annotations

from enum import Enum
from typing import TYPE_CHECKING

from common.error_codes import ErrorCode
from common.record_batch import NO_SEQUENCE
from common.topic_partition import TopicPartition

if TYPE_CHECKING:
    from kraftlog_client.accumulator import ProducerBatch

_SEQUENCE_WRAP = 1 << 31  # sequences are int32 and wrap to 0 after 2^31 - 1, as in Kafka
_SEQUENCE_ERRORS = frozenset(
    {ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER, ErrorCode.UNKNOWN_PRODUCER_ID}
)


class Outcome(Enum):
    RETRY = "retry"
    FAIL = "fail"  # this batch fails; the producer goes on
    RESET = "reset"  # this batch fails; new producer id, sequences restart at 0
    FATAL = "fatal"  # the producer is fenced: fail everything, refuse new records


class IdempotenceManager:
    def __init__(self) -> None:
        self.producer_id = -1
        self.producer_epoch = -1
        self.reset_pending = False
        self._next_sequence: dict[TopicPartition, int] = {}
        self._unresolved: dict[TopicPartition, list[ProducerBatch]] = {}
        self._retrying: dict[TopicPartition, set[ProducerBatch]] = {}
        self._in_flight: dict[TopicPartition, int] = {}

    # -- producer id -----------------------------------------------------------------------

    def needs_producer_id(self) -> bool:
        """True when an InitProducerId must be sent now: none yet, or a reset whose old
        batches are all resolved."""
        if self.producer_id < 0:
            return True
        return self.reset_pending and not any(self._unresolved.values())

    def set_producer_id(self, producer_id: int, producer_epoch: int) -> None:
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self.reset_pending = False
        self._next_sequence.clear()

    def request_reset(self) -> None:
        self.reset_pending = True

    # -- drain -----------------------------------------------------------------------------

    def may_drain(self, tp: TopicPartition, head: ProducerBatch) -> bool:
        """Whether the head batch of ``tp`` may be sent now (see the module invariants)."""
        if head.base_sequence == NO_SEQUENCE:
            # New data waits for a producer id, a reset and the partition's retries.
            if self.producer_id < 0 or self.reset_pending:
                return False
            return not self._retrying.get(tp)
        # A retry: only when nothing else of its partition is in flight.
        return not self._in_flight.get(tp)

    def on_send(self, batch: ProducerBatch) -> None:
        """A drained batch is about to go out: number it on its first send."""
        tp = batch.tp
        if batch.base_sequence == NO_SEQUENCE:
            seq = self._next_sequence.get(tp, 0)
            batch.producer_id = self.producer_id
            batch.producer_epoch = self.producer_epoch
            batch.base_sequence = seq
            self._next_sequence[tp] = (seq + batch.count) % _SEQUENCE_WRAP
            self._unresolved.setdefault(tp, []).append(batch)
        else:
            retrying = self._retrying.get(tp)
            if retrying is not None:
                retrying.discard(batch)
        self._in_flight[tp] = self._in_flight.get(tp, 0) + 1

    # -- outcomes --------------------------------------------------------------------------

    def classify(self, batch: ProducerBatch, code: int, retriable: bool) -> Outcome:
        """What to do with a batch the broker answered with error ``code``."""
        if code == ErrorCode.INVALID_PRODUCER_EPOCH:
            return Outcome.FATAL
        if code in _SEQUENCE_ERRORS:
            if self._earlier_unresolved(batch):
                # The gap is an earlier batch that is in flight or will be retried.
                return Outcome.RETRY
            if batch.producer_id == self.producer_id:
                return Outcome.RESET
            return Outcome.FAIL  # an old producer id's batch: a reset is already under way
        return Outcome.RETRY if retriable else Outcome.FAIL

    def _earlier_unresolved(self, batch: ProducerBatch) -> bool:
        for other in self._unresolved.get(batch.tp, ()):
            if other is batch:
                return False
            if other.producer_id == batch.producer_id:
                return True
        return False

    def on_retry(self, batch: ProducerBatch) -> None:
        """``batch`` (answered) goes back to its deque for a retry."""
        self._answered(batch)
        self._retrying.setdefault(batch.tp, set()).add(batch)

    def on_done(self, batch: ProducerBatch, was_in_flight: bool) -> None:
        """``batch`` is completed (acknowledged, failed or expired)."""
        if was_in_flight:
            self._answered(batch)
        tp = batch.tp
        retrying = self._retrying.get(tp)
        if retrying is not None:
            retrying.discard(batch)
        unresolved = self._unresolved.get(tp)
        if unresolved is not None and batch in unresolved:
            unresolved.remove(batch)

    def _answered(self, batch: ProducerBatch) -> None:
        tp = batch.tp
        count = self._in_flight.get(tp, 0)
        if count <= 1:
            self._in_flight.pop(tp, None)
        else:
            self._in_flight[tp] = count - 1
