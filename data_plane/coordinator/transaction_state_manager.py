"""TransactionStateManager: the transactional ids of the ``__transaction_state`` partitions
this broker leads (Kafka's TransactionStateManager), sans-IO: loading a partition, looking a
transactional id up, writing a transition and installing it once written, removing expired
transactional ids, and listing transactions.

Ownership: a transactional id lives in partition ``partition_for(transactional_id,
num_partitions)``; its *coordinator epoch* is that partition's leader epoch here. A partition
is loading from :meth:`begin_loading` to :meth:`complete_loading` (lookups answer
COORDINATOR_LOAD_IN_PROGRESS); :meth:`unload` drops it.

Writes: :meth:`write` prepares one ``__transaction_state`` record (a tombstone for Dead) and
remembers the transition; :meth:`complete_write` installs it when the write succeeded while
this broker still coordinated the partition at the same coordinator epoch, else aborts it (the
metadata stays as it was) and the callback hears NOT_COORDINATOR or the mapped write error.
Every write's callback runs exactly once, failed with NOT_COORDINATOR when its partition is
reloaded or unloaded first.

Thread-safety: none; the broker's event loop owns it.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from common.error_codes import ErrorCode
from data_plane.coordinator.hashing import partition_for
from data_plane.coordinator.messages import RecordWrite
from data_plane.coordinator.transaction_log_records import (
    InvalidTransactionLogRecordError,
    TransactionLogValue,
    decode_transaction_log_key,
    decode_transaction_log_value,
    transaction_log_key,
    transaction_log_value,
)
from data_plane.coordinator.transaction_outputs import TxnCoordinatorOutputs
from data_plane.coordinator.transaction_state import (
    TransactionMetadata,
    TransactionState,
    TxnTransitMetadata,
)
from data_plane.coordinator.write_errors import METADATA_WRITE_ERRORS, map_write_error

logger = logging.getLogger(__name__)

Clock = Callable[[], int]
_S = TransactionState

# What to do once a write is replicated: (outputs to fill, error code of the write).
WriteCallback = Callable[[TxnCoordinatorOutputs, int], None]


@dataclass(slots=True)
class TxnPartition:
    """One ``__transaction_state`` partition led here, at ``coordinator_epoch``."""

    coordinator_epoch: int
    loading: bool = True
    transactions: dict[str, TransactionMetadata] = field(default_factory=dict)


@dataclass(slots=True)
class _PendingWrite:
    transactional_id: str
    partition: int
    coordinator_epoch: int
    transit: TxnTransitMetadata
    on_done: WriteCallback


class TransactionStateManager:
    def __init__(self, num_partitions: int) -> None:
        self.num_partitions = num_partitions
        self._partitions: dict[int, TxnPartition] = {}
        self._writes: dict[int, _PendingWrite] = {}
        self._write_ids = itertools.count(1)

    # -- ownership and loading ---------------------------------------------------------------

    def partition_for(self, transactional_id: str) -> int:
        return partition_for(transactional_id, self.num_partitions)

    def set_num_partitions(self, count: int) -> None:
        self.num_partitions = count

    def partition(self, partition: int) -> TxnPartition | None:
        return self._partitions.get(partition)

    def begin_loading(self, partition: int, coordinator_epoch: int) -> TxnCoordinatorOutputs:
        """This broker leads ``partition`` at ``coordinator_epoch``: forget what it held."""
        out = self._fail_writes(partition, ErrorCode.NOT_COORDINATOR)
        self._partitions[partition] = TxnPartition(coordinator_epoch)
        return out

    def load_record(self, partition: int, key: bytes | None, value: bytes | None) -> None:
        """Apply one record of ``__transaction_state-<partition>`` (in log order)."""
        p = self._partitions.get(partition)
        if p is None or not p.loading or key is None:
            return
        try:
            tid = decode_transaction_log_key(key)
            if value is None:
                p.transactions.pop(tid, None)
                return
            v = decode_transaction_log_value(value)
        except InvalidTransactionLogRecordError as e:
            logger.warning("__transaction_state-%d: skipping a record: %s", partition, e)
            return
        p.transactions[tid] = TransactionMetadata(
            transactional_id=tid,
            producer_id=v.producer_id,
            producer_epoch=v.producer_epoch,
            txn_timeout_ms=v.transaction_timeout_ms,
            state=v.state,
            partitions=set(v.partitions),
            txn_start_timestamp_ms=v.start_timestamp_ms,
            txn_last_update_timestamp_ms=v.last_update_timestamp_ms,
        )

    def complete_loading(self, partition: int) -> list[TransactionMetadata] | None:
        """The load finished: serve the partition. Returns its transactions a previous
        coordinator left prepared (their markers may not all be written), or None when the
        partition was not loading."""
        p = self._partitions.get(partition)
        if p is None or not p.loading:
            return None
        p.loading = False
        prepared = []
        for tid, md in list(p.transactions.items()):
            if md.state is _S.DEAD:
                del p.transactions[tid]
            elif md.state.is_prepare:
                prepared.append(md)
        return prepared

    def unload(self, partition: int) -> TxnCoordinatorOutputs:
        """Leadership of ``partition`` moved: its writes fail with NOT_COORDINATOR."""
        out = self._fail_writes(partition, ErrorCode.NOT_COORDINATOR)
        self._partitions.pop(partition, None)
        return out

    def _fail_writes(self, partition: int, error: int) -> TxnCoordinatorOutputs:
        out = TxnCoordinatorOutputs()
        for write_id, w in list(self._writes.items()):
            if w.partition == partition:
                del self._writes[write_id]
                w.on_done(out, error)
        return out

    # -- lookups -----------------------------------------------------------------------------

    def lookup(
        self, transactional_id: str
    ) -> tuple[int, TxnPartition | None, TransactionMetadata | None]:
        """(error, partition, metadata): NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS or
        NO_ERROR with the metadata if known."""
        p = self._partitions.get(self.partition_for(transactional_id))
        if p is None:
            return ErrorCode.NOT_COORDINATOR, None, None
        if p.loading:
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, p, None
        return ErrorCode.NO_ERROR, p, p.transactions.get(transactional_id)

    def loaded(self) -> list[tuple[TxnPartition, TransactionMetadata]]:
        """Every transaction of the loaded partitions (a copy: callers may write)."""
        return [
            (p, md)
            for p in self._partitions.values()
            if not p.loading
            for md in p.transactions.values()
        ]

    def any_loading(self) -> bool:
        return any(p.loading for p in self._partitions.values())

    # -- writes ------------------------------------------------------------------------------

    def write(
        self,
        out: TxnCoordinatorOutputs,
        p: TxnPartition,
        md: TransactionMetadata,
        transit: TxnTransitMetadata,
        on_done: WriteCallback,
    ) -> None:
        """Ask for ``transit`` to be written; :meth:`complete_write` installs it."""
        partition = self.partition_for(md.transactional_id)
        write_id = next(self._write_ids)
        value: bytes | None = None
        if transit.state is not _S.DEAD:
            value = transaction_log_value(
                TransactionLogValue(
                    producer_id=transit.producer_id,
                    producer_epoch=transit.producer_epoch,
                    transaction_timeout_ms=transit.txn_timeout_ms,
                    state=transit.state,
                    partitions=tuple(sorted(transit.partitions)),
                    last_update_timestamp_ms=transit.txn_last_update_timestamp_ms,
                    start_timestamp_ms=transit.txn_start_timestamp_ms,
                )
            )
        self._writes[write_id] = _PendingWrite(
            md.transactional_id, partition, p.coordinator_epoch, transit, on_done
        )
        out.writes.append(
            RecordWrite(write_id, partition, ((transaction_log_key(md.transactional_id), value),))
        )

    def complete_write(
        self, write_id: int, error_code: int
    ) -> tuple[TxnCoordinatorOutputs, TransactionMetadata | None]:
        """A ``__transaction_state`` write finished: install its transition (or abort it) and
        run its callback. Returns the outputs and the metadata the write installed (None when
        it installed nothing)."""
        out = TxnCoordinatorOutputs()
        w = self._writes.pop(write_id, None)
        if w is None:
            return out, None
        p = self._partitions.get(w.partition)
        md = p.transactions.get(w.transactional_id) if p is not None else None
        if p is None or p.loading or p.coordinator_epoch != w.coordinator_epoch or md is None:
            # Leadership moved while the write was in flight: the next coordinator decides.
            w.on_done(out, ErrorCode.NOT_COORDINATOR)
            return out, None
        if error_code != ErrorCode.NO_ERROR:
            md.abort_pending()
            mapped = map_write_error(METADATA_WRITE_ERRORS, error_code)
            w.on_done(out, mapped)
            return out, None
        md.complete_transition(w.transit)
        if md.state is _S.DEAD:
            del p.transactions[w.transactional_id]
        w.on_done(out, ErrorCode.NO_ERROR)
        return out, md

    # -- expiry and reads --------------------------------------------------------------------

    def expire_transactional_ids(
        self, out: TxnCoordinatorOutputs, now: int, expiration_ms: int
    ) -> None:
        """Kafka's removeExpiredTransactionalIds: a transactional id idle (Empty or
        Complete*) for ``expiration_ms`` becomes Dead, written as a tombstone."""
        limit = now - expiration_ms
        for p, md in self.loaded():
            if (
                md.pending_state is None
                and md.state in (_S.EMPTY, _S.COMPLETE_COMMIT, _S.COMPLETE_ABORT)
                and md.txn_last_update_timestamp_ms < limit
            ):
                transit = md.prepare_transition(_S.DEAD, now)
                self.write(out, p, md, transit, lambda _o, _code: None)

    def open_transactions(self) -> int:
        """Transactions Ongoing, PrepareCommit or PrepareAbort in the loaded partitions."""
        return sum(1 for _p, md in self.loaded() if md.state is _S.ONGOING or md.state.is_prepare)

    def list_transactions(
        self,
        state_filters: set[str],
        producer_id_filters: set[int],
        min_duration_ms: int,
        id_matches: Callable[[str], bool],
        now: int,
    ) -> tuple[int, list[str], list[TransactionMetadata]]:
        """(error, unknown state filters, matching transactions) for ListTransactions over the
        partitions this broker coordinates. Filters are empty for "all"; ``min_duration_ms``
        < 0 for no duration filter, else only transactions started more than that long before
        ``now``. COORDINATOR_LOAD_IN_PROGRESS while a partition is loading (the answer would
        be partial). Dead transactional ids are never listed."""
        known = {s.display_name for s in TransactionState}
        unknown = sorted(state_filters - known)
        if self.any_loading():
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, unknown, []
        found = []
        for _p, md in self.loaded():
            if md.state is _S.DEAD:
                continue
            if state_filters and md.state.display_name not in state_filters:
                continue
            if producer_id_filters and md.producer_id not in producer_id_filters:
                continue
            if min_duration_ms >= 0 and now - md.txn_start_timestamp_ms <= min_duration_ms:
                continue
            if not id_matches(md.transactional_id):
                continue
            found.append(md)
        return ErrorCode.NO_ERROR, unknown, found
