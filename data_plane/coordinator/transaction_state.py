"""A transactional id's state at its coordinator (Kafka's TransactionState and
TransactionMetadata).

States and the only transitions allowed into each (Kafka's ``validPreviousStates``)::

    Empty              <- Empty, CompleteCommit, CompleteAbort     (InitProducerId)
    Ongoing            <- Ongoing, Empty, CompleteCommit, CompleteAbort  (AddPartitions/Offsets)
    PrepareCommit      <- Ongoing                                  (EndTxn commit)
    PrepareAbort       <- Ongoing, PrepareEpochFence               (EndTxn abort, timeout, fence)
    CompleteCommit     <- PrepareCommit                            (every marker written)
    CompleteAbort      <- PrepareAbort
    Dead               <- Empty, CompleteCommit, CompleteAbort     (transactional.id expired)
    PrepareEpochFence  <- Ongoing                                  (a new producer's init)

A transition is two steps, as in Kafka: :meth:`TransactionMetadata.prepare_transition` checks it
and returns the would-be :class:`TxnTransitMetadata` (the metadata records ``pending_state``),
the caller writes that to ``__transaction_state``, and :meth:`complete_transition` installs it
once the write is replicated (or :meth:`abort_pending` forgets it when the write failed).
While a transition is pending every other request for the id gets CONCURRENT_TRANSACTIONS.

Thread-safety: none; owned by the coordinator on the broker's event loop.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

# Producer epochs are int16; Kafka bumps to a new producer id before reaching the maximum.
MAX_PRODUCER_EPOCH = 32_767
NO_PRODUCER_EPOCH = -1
NO_PRODUCER_ID = -1


class TransactionState(enum.Enum):
    """A transaction's state; ``id`` is the byte stored in ``__transaction_state``."""

    EMPTY = (0, "Empty")
    ONGOING = (1, "Ongoing")
    PREPARE_COMMIT = (2, "PrepareCommit")
    PREPARE_ABORT = (3, "PrepareAbort")
    COMPLETE_COMMIT = (4, "CompleteCommit")
    COMPLETE_ABORT = (5, "CompleteAbort")
    DEAD = (6, "Dead")
    PREPARE_EPOCH_FENCE = (7, "PrepareEpochFence")

    @property
    def id(self) -> int:
        return self.value[0]

    @property
    def display_name(self) -> str:
        return self.value[1]

    @classmethod
    def from_id(cls, state_id: int) -> TransactionState:
        for s in cls:
            if s.value[0] == state_id:
                return s
        raise ValueError(f"unknown transaction state id {state_id}")

    @property
    def is_complete(self) -> bool:
        return self in (TransactionState.COMPLETE_COMMIT, TransactionState.COMPLETE_ABORT)

    @property
    def is_prepare(self) -> bool:
        return self in (TransactionState.PREPARE_COMMIT, TransactionState.PREPARE_ABORT)


_S = TransactionState
VALID_PREVIOUS_STATES: dict[TransactionState, frozenset[TransactionState]] = {
    _S.EMPTY: frozenset({_S.EMPTY, _S.COMPLETE_COMMIT, _S.COMPLETE_ABORT}),
    _S.ONGOING: frozenset({_S.ONGOING, _S.EMPTY, _S.COMPLETE_COMMIT, _S.COMPLETE_ABORT}),
    _S.PREPARE_COMMIT: frozenset({_S.ONGOING}),
    _S.PREPARE_ABORT: frozenset({_S.ONGOING, _S.PREPARE_EPOCH_FENCE}),
    _S.COMPLETE_COMMIT: frozenset({_S.PREPARE_COMMIT}),
    _S.COMPLETE_ABORT: frozenset({_S.PREPARE_ABORT}),
    _S.DEAD: frozenset({_S.EMPTY, _S.COMPLETE_COMMIT, _S.COMPLETE_ABORT}),
    _S.PREPARE_EPOCH_FENCE: frozenset({_S.ONGOING}),
}


class IllegalTransitionError(Exception):
    """A transition Kafka does not allow (a bug in the caller, never a client's doing)."""


@dataclass(frozen=True, slots=True)
class TxnTransitMetadata:
    """The metadata a transition leads to: what is written to ``__transaction_state``."""

    producer_id: int
    last_producer_id: int
    producer_epoch: int
    last_producer_epoch: int
    txn_timeout_ms: int
    state: TransactionState
    partitions: frozenset[tuple[str, int]]
    txn_start_timestamp_ms: int
    txn_last_update_timestamp_ms: int


@dataclass(slots=True)
class TransactionMetadata:
    """One transactional id's current (replicated) metadata and its pending transition."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    txn_timeout_ms: int
    state: TransactionState
    last_producer_id: int = NO_PRODUCER_ID
    last_producer_epoch: int = NO_PRODUCER_EPOCH
    partitions: set[tuple[str, int]] = field(default_factory=set)
    txn_start_timestamp_ms: int = -1
    txn_last_update_timestamp_ms: int = -1
    pending_state: TransactionState | None = None

    def prepare_transition(
        self,
        state: TransactionState,
        now_ms: int,
        *,
        producer_id: int | None = None,
        producer_epoch: int | None = None,
        last_producer_epoch: int | None = None,
        txn_timeout_ms: int | None = None,
        partitions: frozenset[tuple[str, int]] | None = None,
        txn_start_timestamp_ms: int | None = None,
    ) -> TxnTransitMetadata:
        """Check ``self.state -> state`` and mark it pending; fields not given keep their
        values (a Complete*/Empty/Dead state clears the partitions)."""
        if self.pending_state is not None:
            raise IllegalTransitionError(
                f"{self.transactional_id}: {self.pending_state.display_name} is already pending"
            )
        if self.state not in VALID_PREVIOUS_STATES[state]:
            raise IllegalTransitionError(
                f"{self.transactional_id}: {self.state.display_name} -> {state.display_name}"
            )
        if partitions is None:
            partitions = frozenset(self.partitions)
        if state in (_S.EMPTY, _S.COMPLETE_COMMIT, _S.COMPLETE_ABORT, _S.DEAD):
            partitions = frozenset()
        pid = self.producer_id if producer_id is None else producer_id
        transit = TxnTransitMetadata(
            producer_id=pid,
            last_producer_id=self.producer_id if pid != self.producer_id else self.last_producer_id,
            producer_epoch=self.producer_epoch if producer_epoch is None else producer_epoch,
            last_producer_epoch=(
                self.last_producer_epoch if last_producer_epoch is None else last_producer_epoch
            ),
            txn_timeout_ms=self.txn_timeout_ms if txn_timeout_ms is None else txn_timeout_ms,
            state=state,
            partitions=partitions,
            txn_start_timestamp_ms=(
                self.txn_start_timestamp_ms
                if txn_start_timestamp_ms is None
                else txn_start_timestamp_ms
            ),
            txn_last_update_timestamp_ms=now_ms,
        )
        self.pending_state = state
        return transit

    def complete_transition(self, transit: TxnTransitMetadata) -> None:
        """Install ``transit`` (its write was replicated)."""
        if self.pending_state is not transit.state:
            raise IllegalTransitionError(
                f"{self.transactional_id}: completing {transit.state.display_name} but "
                f"{self.pending_state.display_name if self.pending_state else 'nothing'} "
                "is pending"
            )
        self.install(transit)
        self.pending_state = None

    def install(self, transit: TxnTransitMetadata) -> None:
        self.producer_id = transit.producer_id
        self.last_producer_id = transit.last_producer_id
        self.producer_epoch = transit.producer_epoch
        self.last_producer_epoch = transit.last_producer_epoch
        self.txn_timeout_ms = transit.txn_timeout_ms
        self.state = transit.state
        self.partitions = set(transit.partitions)
        self.txn_start_timestamp_ms = transit.txn_start_timestamp_ms
        self.txn_last_update_timestamp_ms = transit.txn_last_update_timestamp_ms

    def abort_pending(self) -> None:
        self.pending_state = None

    def is_producer_epoch_exhausted(self) -> bool:
        # Kafka keeps one epoch in reserve for the coordinator's own fencing bump.
        return self.producer_epoch >= MAX_PRODUCER_EPOCH - 1
