"""TransactionCoordinator: Kafka's transaction coordinator (KIP-98), sans-IO.

As Kafka's TransactionCoordinator, it holds the request flows below, the requests parked on
a completing transaction, the marker requests and the transaction timeout, and it composes a
:class:`~data_plane.coordinator.transaction_state_manager.TransactionStateManager`
(Kafka's name) that holds the transactional ids of the partitions led here: loading, lookups,
``__transaction_state`` writes, the expiry of idle ids and ListTransactions. The flows stay in
one class (about 520 lines) because each of them parks, writes and hands to the markers
through the same transaction metadata; split further they would call back and forth. The
settings and outputs are :mod:`data_plane.coordinator.transaction_outputs` (importable from
here too).

Inputs are method calls with an injected clock; outputs are :class:`TxnCoordinatorOutputs`:
results for parked requests, ``__transaction_state`` writes (appended with acks=all by the I/O
layer and reported back with :meth:`complete_write`) and end-marker requests
(:class:`MarkerRequest`: the I/O layer writes a COMMIT or ABORT marker to every partition of
the transaction, retrying through leader changes, and reports back with :meth:`complete_markers`).

Ownership: the coordinator of a transactional id is the leader of ``__transaction_state``
partition ``partition_for(transactional_id, num_partitions)``; its *coordinator epoch* is that
partition's leader epoch (markers carry it, and partition leaders refuse markers from an
older one). :meth:`begin_loading` / :meth:`load_record` / :meth:`complete_loading` rebuild the
partition's transactions (COORDINATOR_LOAD_IN_PROGRESS meanwhile); completing the load sends
the markers of every transaction left in PrepareCommit or PrepareAbort. :meth:`unload` drops
them when leadership moves.

Flows (states and legal transitions: :mod:`.transaction_state`):

- InitProducerId: a new transactional id gets a producer id (from the controller's blocks,
  passed in by the caller) at epoch 0; a known one gets its epoch bumped (a new producer id
  when the epoch is exhausted), answered once written. If a transaction is Ongoing it is
  aborted first, with the epoch bumped at once so the old producer is fenced, and the client
  is told CONCURRENT_TRANSACTIONS (it retries); Prepare* states answer the same.
- AddPartitionsToTxn / AddOffsetsToTxn: the transaction becomes (or stays) Ongoing with the
  partitions added, answered once written (at once if nothing is new). One that arrives
  while the previous transaction's markers are being written (the producer's next
  transaction, right after its commit) is parked until CompleteCommit/CompleteAbort is
  written, at most :data:`MAX_PARK_MS`, instead of answered CONCURRENT_TRANSACTIONS: a client
  retries that only after its backoff, which would cost every short transaction tens of
  milliseconds.
- EndTxn: Ongoing -> PrepareCommit/PrepareAbort, written, answered, then markers; once every
  marker is written, CompleteCommit/CompleteAbort is written. A retried EndTxn is answered
  NO_ERROR (already complete) or CONCURRENT_TRANSACTIONS (markers in flight).
- Fencing: a request with the right producer id but another epoch gets PRODUCER_FENCED (the
  handler maps it to INVALID_PRODUCER_EPOCH for request versions before KIP-588); another
  producer id gets INVALID_PRODUCER_ID_MAPPING.
- :meth:`tick`: an Ongoing transaction older than its timeout is aborted (epoch bumped first,
  fencing the producer); a transactional id idle (Empty or Complete*) for
  ``transactional.id.expiration.ms`` is removed (Dead, then a tombstone).

Thread-safety: none; the broker's event loop owns the coordinator.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Hashable

from common.error_codes import ErrorCode
from data_plane.coordinator.transaction_outputs import (
    InitProducerIdResult,
    MarkerRequest,
    TopicPartitionKey,
    TransactionCoordinatorConfig,
    TxnCoordinatorOutputs,
)
from data_plane.coordinator.transaction_state import (
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    TransactionMetadata,
    TransactionState,
)
from data_plane.coordinator.transaction_state_manager import (
    TransactionStateManager,
    TxnPartition,
    WriteCallback,
)

logger = logging.getLogger(__name__)

Clock = Callable[[], int]
_S = TransactionState

# How long an AddPartitionsToTxn may wait for the previous transaction's completion before it
# is answered CONCURRENT_TRANSACTIONS (the client then retries).
MAX_PARK_MS = 5_000

# A parked request, run again into the given outputs.
_Rerun = Callable[[TxnCoordinatorOutputs], None]

__all__ = [
    "MAX_PARK_MS",
    "InitProducerIdResult",
    "MarkerRequest",
    "TransactionCoordinator",
    "TransactionCoordinatorConfig",
    "TxnCoordinatorOutputs",
]


class TransactionCoordinator:
    def __init__(
        self,
        config: TransactionCoordinatorConfig,
        *,
        num_partitions: int,
        clock_ms: Clock,
    ) -> None:
        self.config = config
        self._clock_ms = clock_ms
        self._state = TransactionStateManager(num_partitions)
        # Transactions whose Complete* write failed while this broker stayed coordinator.
        self._retry_completion: set[str] = set()
        # Requests parked until their transaction's markers are done: transactional id ->
        # (deadline ms, re-run, answer on expiry).
        self._parked: dict[
            str, list[tuple[int, _Rerun, Callable[[TxnCoordinatorOutputs], None]]]
        ] = {}
        now = clock_ms()
        self._next_abort_check_ms = now + config.abort_timed_out_interval_ms
        self._next_expiry_check_ms = now + config.remove_expired_interval_ms

    # -- ownership ---------------------------------------------------------------------------

    @property
    def num_partitions(self) -> int:
        return self._state.num_partitions

    def partition_for(self, transactional_id: str) -> int:
        return self._state.partition_for(transactional_id)

    def set_num_partitions(self, count: int) -> None:
        self._state.set_num_partitions(count)

    def begin_loading(self, partition: int, coordinator_epoch: int) -> TxnCoordinatorOutputs:
        """This broker leads ``partition`` at ``coordinator_epoch``: forget what it held and
        answer COORDINATOR_LOAD_IN_PROGRESS until :meth:`complete_loading`."""
        return self._state.begin_loading(partition, coordinator_epoch)

    def load_record(self, partition: int, key: bytes | None, value: bytes | None) -> None:
        """Apply one record of ``__transaction_state-<partition>`` (in log order)."""
        self._state.load_record(partition, key, value)

    def complete_loading(self, partition: int) -> TxnCoordinatorOutputs:
        """The load finished: serve the partition, and finish every transaction a previous
        coordinator left prepared (its markers may not all have been written)."""
        out = TxnCoordinatorOutputs()
        prepared = self._state.complete_loading(partition)
        p = self._state.partition(partition)
        if prepared is None or p is None:
            return out
        for md in prepared:
            out.markers.append(self._marker_request(md, p.coordinator_epoch))
        return out

    def unload(self, partition: int) -> TxnCoordinatorOutputs:
        out = self._state.unload(partition)
        for tid in [t for t in self._parked if self.partition_for(t) == partition]:
            self._unpark(out, tid)  # they now answer NOT_COORDINATOR
        return out

    def _lookup(
        self, transactional_id: str
    ) -> tuple[int, TxnPartition | None, TransactionMetadata | None]:
        return self._state.lookup(transactional_id)

    def needs_producer_id(self, transactional_id: str) -> bool:
        """Whether an InitProducerId for ``transactional_id`` would use a new producer id (an
        unknown id, or an exhausted epoch): the caller then allocates one first."""
        error, _p, md = self._lookup(transactional_id)
        if error != ErrorCode.NO_ERROR:
            return False
        return md is None or md.is_producer_epoch_exhausted()

    # -- writes ------------------------------------------------------------------------------

    def complete_write(self, write_id: int, error_code: int) -> TxnCoordinatorOutputs:
        """A ``__transaction_state`` write finished: install its transition (or forget it),
        run what waited for it, and what was parked until its transaction completed."""
        out, md = self._state.complete_write(write_id, error_code)
        if md is not None and md.state.is_complete:
            self._unpark(out, md.transactional_id)
        return out

    def _park(
        self,
        transactional_id: str,
        rerun: _Rerun,
        on_expiry: Callable[[TxnCoordinatorOutputs], None],
    ) -> None:
        deadline = self._clock_ms() + MAX_PARK_MS
        self._parked.setdefault(transactional_id, []).append((deadline, rerun, on_expiry))

    def _unpark(self, out: TxnCoordinatorOutputs, transactional_id: str) -> None:
        """Run again what waited for ``transactional_id``'s transaction to complete."""
        for _deadline, rerun, _expiry in self._parked.pop(transactional_id, ()):
            rerun(out)

    # -- InitProducerId ----------------------------------------------------------------------

    def init_producer_id(
        self,
        waiter: Hashable,
        transactional_id: str,
        transaction_timeout_ms: int,
        new_producer_id: int | None,
        expected_producer_id: int = NO_PRODUCER_ID,
        expected_producer_epoch: int = NO_PRODUCER_EPOCH,
    ) -> TxnCoordinatorOutputs:
        """Answer ``waiter`` with an :class:`InitProducerIdResult`. ``new_producer_id`` is a
        fresh id from the controller's blocks when :meth:`needs_producer_id` said so.

        ``expected_producer_id`` / ``expected_producer_epoch`` (InitProducerId v3+, KIP-360):
        the producer bumps its own epoch after an abortable error. It gets the next epoch
        only if it names the current one; a retry of a bump that was already written (it
        names the previous epoch) gets the current one again; anything else is
        PRODUCER_FENCED (a newer instance took over)."""
        out = TxnCoordinatorOutputs()
        now = self._clock_ms()
        error, p, md = self._init_target(
            transactional_id, transaction_timeout_ms, new_producer_id, now
        )
        if error != ErrorCode.NO_ERROR or p is None or md is None:
            out.respond(waiter, InitProducerIdResult(int(error)))
            return out
        named = (
            (expected_producer_id, expected_producer_epoch)
            if expected_producer_id != NO_PRODUCER_ID
            else None
        )
        refusal = self._init_refusal(out, p, md, named)
        if refusal is not None:
            out.respond(waiter, refusal)
            return out
        if md.is_producer_epoch_exhausted():
            if new_producer_id is None:
                out.respond(waiter, InitProducerIdResult(int(ErrorCode.CONCURRENT_TRANSACTIONS)))
                return out
            pid, epoch = new_producer_id, 0
        else:
            pid, epoch = md.producer_id, md.producer_epoch + 1
        transit = md.prepare_transition(
            _S.EMPTY,
            now,
            producer_id=pid,
            producer_epoch=epoch,
            # Recorded only by a KIP-360 bump of the same producer id, for its retries.
            last_producer_epoch=(
                md.producer_epoch
                if named is not None and pid == md.producer_id
                else NO_PRODUCER_EPOCH
            ),
            txn_timeout_ms=transaction_timeout_ms,
            txn_start_timestamp_ms=-1,
        )

        def done(o: TxnCoordinatorOutputs, code: int) -> None:
            if code == ErrorCode.NO_ERROR:
                o.respond(
                    waiter, InitProducerIdResult(0, transit.producer_id, transit.producer_epoch)
                )
            else:
                o.respond(waiter, InitProducerIdResult(code))

        self._state.write(out, p, md, transit, done)
        return out

    def _init_target(
        self,
        transactional_id: str,
        transaction_timeout_ms: int,
        new_producer_id: int | None,
        now: int,
    ) -> tuple[int, TxnPartition | None, TransactionMetadata | None]:
        """The request checks of InitProducerId, then the transactional id's metadata: a new
        one (Empty, no epoch yet) for an unknown id given ``new_producer_id``, else
        CONCURRENT_TRANSACTIONS (the caller allocates an id and asks again)."""
        if not transactional_id:
            return ErrorCode.INVALID_REQUEST, None, None
        if not 0 < transaction_timeout_ms <= self.config.transaction_max_timeout_ms:
            return ErrorCode.INVALID_TRANSACTION_TIMEOUT, None, None
        error, p, md = self._lookup(transactional_id)
        if error != ErrorCode.NO_ERROR or p is None or md is not None:
            return error, p, md
        if new_producer_id is None:
            return ErrorCode.CONCURRENT_TRANSACTIONS, p, None
        md = TransactionMetadata(
            transactional_id=transactional_id,
            producer_id=new_producer_id,
            producer_epoch=NO_PRODUCER_EPOCH,
            txn_timeout_ms=transaction_timeout_ms,
            state=_S.EMPTY,
            txn_last_update_timestamp_ms=now,
        )
        p.transactions[transactional_id] = md
        return ErrorCode.NO_ERROR, p, md

    def _init_refusal(
        self,
        out: TxnCoordinatorOutputs,
        p: TxnPartition,
        md: TransactionMetadata,
        named: tuple[int, int] | None,
    ) -> InitProducerIdResult | None:
        """The answer of an InitProducerId that bumps nothing (None: go on and bump). An
        Ongoing transaction is fenced and aborted first; the producer retries meanwhile."""
        if md.pending_state is not None or md.state.is_prepare:
            return InitProducerIdResult(int(ErrorCode.CONCURRENT_TRANSACTIONS))
        if named is not None:
            answer = _expected_epoch_answer(md, named)
            if answer is not None:
                return answer
        if md.state is _S.ONGOING:
            # Fence the current producer at once (its requests now carry an old epoch), then
            # abort its transaction; the new producer retries until that is complete.
            self._fence_and_abort(out, p, md)
            return InitProducerIdResult(int(ErrorCode.CONCURRENT_TRANSACTIONS))
        if md.state not in (_S.EMPTY, _S.COMPLETE_COMMIT, _S.COMPLETE_ABORT):
            return InitProducerIdResult(int(ErrorCode.CONCURRENT_TRANSACTIONS))
        return None

    def _fence_and_abort(
        self, out: TxnCoordinatorOutputs, p: TxnPartition, md: TransactionMetadata
    ) -> None:
        if not md.is_producer_epoch_exhausted():
            md.producer_epoch += 1
            md.last_producer_epoch = NO_PRODUCER_EPOCH
        self._prepare_end(out, p, md, committed=False, on_written=None)

    # -- AddPartitionsToTxn / AddOffsetsToTxn ------------------------------------------------

    def add_partitions(
        self,
        waiter: Hashable,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: list[TopicPartitionKey],
    ) -> TxnCoordinatorOutputs:
        """Answer ``waiter`` with one error code for all of ``partitions`` (the handler
        spreads it over them)."""
        out = TxnCoordinatorOutputs()
        error, p, md = self._lookup_producer(transactional_id, producer_id, producer_epoch)
        if error != ErrorCode.NO_ERROR or p is None or md is None:
            out.respond(waiter, int(error))
            return out
        if md.state.is_prepare or (md.pending_state is not None and md.pending_state.is_complete):
            # The previous transaction is completing: wait for it rather than bounce.
            self._park(
                transactional_id,
                lambda o: o.extend(
                    self.add_partitions(
                        waiter, transactional_id, producer_id, producer_epoch, partitions
                    )
                ),
                lambda o: o.respond(waiter, int(ErrorCode.CONCURRENT_TRANSACTIONS)),
            )
            return out
        if md.pending_state is not None:
            out.respond(waiter, int(ErrorCode.CONCURRENT_TRANSACTIONS))
            return out
        if md.state is _S.ONGOING and set(partitions) <= md.partitions:
            out.respond(waiter, int(ErrorCode.NO_ERROR))
            return out
        if md.state not in (_S.EMPTY, _S.ONGOING, _S.COMPLETE_COMMIT, _S.COMPLETE_ABORT):
            out.respond(waiter, int(ErrorCode.INVALID_TXN_STATE))
            return out
        now = self._clock_ms()
        starting = md.state is not _S.ONGOING
        transit = md.prepare_transition(
            _S.ONGOING,
            now,
            partitions=frozenset((md.partitions if not starting else set()) | set(partitions)),
            txn_start_timestamp_ms=now if starting else md.txn_start_timestamp_ms,
        )
        self._state.write(out, p, md, transit, lambda o, code: o.respond(waiter, int(code)))
        return out

    def verify_partitions(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: list[TopicPartitionKey],
    ) -> dict[TopicPartitionKey, int]:
        """A partition leader asks, before the first transactional batch of a transaction on
        a partition, whether that partition is in the producer's ongoing transaction (KIP-890
        verification; a read, nothing is written). Per partition: NO_ERROR if it is,
        INVALID_TXN_STATE if not; for all of them the lookup's error (NOT_COORDINATOR,
        COORDINATOR_LOAD_IN_PROGRESS, INVALID_PRODUCER_ID_MAPPING, PRODUCER_FENCED) or
        CONCURRENT_TRANSACTIONS while the transaction is being decided."""
        error, _p, md = self._lookup_producer(transactional_id, producer_id, producer_epoch)
        deciding = md is not None and (
            md.state.is_prepare or md.pending_state not in (None, _S.ONGOING)
        )
        if error == ErrorCode.NO_ERROR and deciding:
            error = ErrorCode.CONCURRENT_TRANSACTIONS
        if error != ErrorCode.NO_ERROR or md is None:
            return {tp: int(error) for tp in partitions}
        ongoing = md.partitions if md.state is _S.ONGOING else set()
        return {
            tp: int(ErrorCode.NO_ERROR if tp in ongoing else ErrorCode.INVALID_TXN_STATE)
            for tp in partitions
        }

    def _lookup_producer(
        self, transactional_id: str, producer_id: int, producer_epoch: int
    ) -> tuple[int, TxnPartition | None, TransactionMetadata | None]:
        """:meth:`_lookup`, then INVALID_PRODUCER_ID_MAPPING for an unknown id or another
        producer id, PRODUCER_FENCED for another epoch."""
        error, p, md = self._lookup(transactional_id)
        if error != ErrorCode.NO_ERROR:
            return error, p, md
        if md is None or md.producer_id != producer_id:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING, p, md
        if md.producer_epoch != producer_epoch:
            return ErrorCode.PRODUCER_FENCED, p, md
        return ErrorCode.NO_ERROR, p, md

    # -- EndTxn ------------------------------------------------------------------------------

    def end_txn(
        self,
        waiter: Hashable,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        committed: bool,
    ) -> TxnCoordinatorOutputs:
        """Answer ``waiter`` with an error code once the decision is written."""
        out = TxnCoordinatorOutputs()
        error, p, md = self._lookup_producer(transactional_id, producer_id, producer_epoch)
        if error != ErrorCode.NO_ERROR or p is None or md is None:
            out.respond(waiter, int(error))
            return out
        if md.pending_state is not None:
            out.respond(waiter, int(ErrorCode.CONCURRENT_TRANSACTIONS))
            return out
        state = md.state
        if state is _S.ONGOING:
            self._prepare_end(
                out, p, md, committed=committed, on_written=lambda o, code: o.respond(waiter, code)
            )
            return out
        same = (committed and state in (_S.PREPARE_COMMIT, _S.COMPLETE_COMMIT)) or (
            not committed and state in (_S.PREPARE_ABORT, _S.COMPLETE_ABORT)
        )
        if same and state.is_prepare:
            out.respond(waiter, int(ErrorCode.CONCURRENT_TRANSACTIONS))
        elif same:
            out.respond(waiter, int(ErrorCode.NO_ERROR))  # a retry of a finished EndTxn
        else:
            out.respond(waiter, int(ErrorCode.INVALID_TXN_STATE))
        return out

    def _prepare_end(
        self,
        out: TxnCoordinatorOutputs,
        p: TxnPartition,
        md: TransactionMetadata,
        *,
        committed: bool,
        on_written: WriteCallback | None,
    ) -> None:
        transit = md.prepare_transition(
            _S.PREPARE_COMMIT if committed else _S.PREPARE_ABORT, self._clock_ms()
        )
        epoch = p.coordinator_epoch

        def done(o: TxnCoordinatorOutputs, code: int) -> None:
            if on_written is not None:
                on_written(o, code)
            if code == ErrorCode.NO_ERROR:
                cur = self._state.partition(self.partition_for(md.transactional_id))
                if cur is not None and cur.coordinator_epoch == epoch:
                    o.markers.append(self._marker_request(md, epoch))

        self._state.write(out, p, md, transit, done)

    def _marker_request(self, md: TransactionMetadata, coordinator_epoch: int) -> MarkerRequest:
        return MarkerRequest(
            transactional_id=md.transactional_id,
            producer_id=md.producer_id,
            producer_epoch=md.producer_epoch,
            committed=md.state is _S.PREPARE_COMMIT,
            coordinator_epoch=coordinator_epoch,
            partitions=tuple(sorted(md.partitions)),
        )

    def _prepared(
        self, transactional_id: str, producer_id: int, producer_epoch: int, coordinator_epoch: int
    ) -> tuple[TxnPartition, TransactionMetadata] | None:
        """The transaction if this coordinator (same epoch) still holds it prepared with this
        producer id and epoch: its markers are still wanted."""
        error, p, md = self._lookup(transactional_id)
        if (
            error != ErrorCode.NO_ERROR
            or p is None
            or md is None
            or p.coordinator_epoch != coordinator_epoch
            or not md.state.is_prepare
            or md.producer_id != producer_id
            or md.producer_epoch != producer_epoch
        ):
            return None
        return p, md

    def markers_pending(self, request: MarkerRequest) -> bool:
        """Whether ``request``'s markers are still wanted (see :meth:`_prepared`)."""
        found = self._prepared(
            request.transactional_id,
            request.producer_id,
            request.producer_epoch,
            request.coordinator_epoch,
        )
        return found is not None

    def complete_markers(
        self, transactional_id: str, producer_id: int, producer_epoch: int, coordinator_epoch: int
    ) -> TxnCoordinatorOutputs:
        """Every marker of the transaction is written: write CompleteCommit/CompleteAbort."""
        out = TxnCoordinatorOutputs()
        found = self._prepared(transactional_id, producer_id, producer_epoch, coordinator_epoch)
        if found is None or found[1].pending_state is not None:
            return out
        p, md = found
        target = _S.COMPLETE_COMMIT if md.state is _S.PREPARE_COMMIT else _S.COMPLETE_ABORT
        transit = md.prepare_transition(target, self._clock_ms())

        def done(o: TxnCoordinatorOutputs, code: int) -> None:
            if code not in (ErrorCode.NO_ERROR, ErrorCode.NOT_COORDINATOR):
                # Still the coordinator: try again at the next tick.
                self._retry_completion.add(transactional_id)

        self._state.write(out, p, md, transit, done)
        return out

    # -- timers ------------------------------------------------------------------------------

    def tick(self) -> TxnCoordinatorOutputs:
        out = TxnCoordinatorOutputs()
        now = self._clock_ms()
        for tid, parked in list(self._parked.items()):
            expired = [e for e in parked if e[0] <= now]
            if expired:
                self._parked[tid] = [e for e in parked if e[0] > now]
                if not self._parked[tid]:
                    del self._parked[tid]
                for _deadline, _rerun, on_expiry in expired:
                    on_expiry(out)
        retry, self._retry_completion = self._retry_completion, set()
        for tid in retry:
            error, p, md = self._lookup(tid)
            if error == ErrorCode.NO_ERROR and p is not None and md is not None:
                out.extend(
                    self.complete_markers(
                        tid, md.producer_id, md.producer_epoch, p.coordinator_epoch
                    )
                )
        if now >= self._next_abort_check_ms:
            self._next_abort_check_ms = now + self.config.abort_timed_out_interval_ms
            self._abort_timed_out(out, now)
        if now >= self._next_expiry_check_ms:
            self._next_expiry_check_ms = now + self.config.remove_expired_interval_ms
            self._state.expire_transactional_ids(
                out, now, self.config.transactional_id_expiration_ms
            )
        return out

    def _abort_timed_out(self, out: TxnCoordinatorOutputs, now: int) -> None:
        for p, md in self._state.loaded():
            if (
                md.state is _S.ONGOING
                and md.pending_state is None
                and md.txn_start_timestamp_ms + md.txn_timeout_ms < now
            ):
                logger.info(
                    "aborting transaction %s (producer %d epoch %d): timed out after %d ms",
                    md.transactional_id,
                    md.producer_id,
                    md.producer_epoch,
                    md.txn_timeout_ms,
                )
                self._fence_and_abort(out, p, md)

    # -- reads -------------------------------------------------------------------------------

    def open_transactions(self) -> int:
        """Transactions Ongoing, PrepareCommit or PrepareAbort in the loaded partitions."""
        return self._state.open_transactions()

    def transaction(self, transactional_id: str) -> TransactionMetadata | None:
        """The metadata of a loaded transactional id (do not mutate)."""
        _error, _p, md = self._lookup(transactional_id)
        return md

    def describe(self, transactional_id: str) -> tuple[int, TransactionMetadata | None]:
        """(error, metadata) for DescribeTransactions: NOT_COORDINATOR,
        COORDINATOR_LOAD_IN_PROGRESS, TRANSACTIONAL_ID_NOT_FOUND (unknown or Dead) or
        NO_ERROR with the metadata (do not mutate)."""
        error, _p, md = self._lookup(transactional_id)
        if error != ErrorCode.NO_ERROR:
            return error, None
        if md is None or md.state is _S.DEAD:
            return ErrorCode.TRANSACTIONAL_ID_NOT_FOUND, None
        return ErrorCode.NO_ERROR, md

    def list_transactions(
        self,
        state_filters: set[str],
        producer_id_filters: set[int],
        min_duration_ms: int,
        id_matches: Callable[[str], bool],
    ) -> tuple[int, list[str], list[TransactionMetadata]]:
        """ListTransactions (see :meth:`TransactionStateManager.list_transactions`)."""
        return self._state.list_transactions(
            state_filters, producer_id_filters, min_duration_ms, id_matches, self._clock_ms()
        )


def _expected_epoch_answer(
    md: TransactionMetadata, named: tuple[int, int]
) -> InitProducerIdResult | None:
    """KIP-360: a producer naming (producer id, epoch) gets the next epoch only if it names the
    current one (None: go on); a retry of a bump already written (it names the epoch the bump
    came from) gets the current epoch again; anything else is PRODUCER_FENCED. A transactional
    id that never had an epoch takes any."""
    current = (md.producer_id, md.producer_epoch)
    # The epoch a KIP-360 bump came from (recorded only by such bumps: an init without an
    # expected epoch fences, and a zombie must not get its result).
    previous = (md.producer_id, md.last_producer_epoch)
    if (
        named == previous
        and md.last_producer_epoch != NO_PRODUCER_EPOCH
        and md.state is not _S.ONGOING
    ):
        return InitProducerIdResult(int(ErrorCode.NO_ERROR), *current)  # a retry of a done bump
    if named != current and md.producer_epoch != NO_PRODUCER_EPOCH:
        return InitProducerIdResult(int(ErrorCode.PRODUCER_FENCED))
    return None
