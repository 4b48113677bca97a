"""What one cleaning knows of the transactions in the log it cleans: which end markers it may
remove (the rule is in cleaner.py's docstring, "Transaction markers").

:class:`TransactionTracker` follows each producer's current transaction through the batches
of a cleaning in offset order; :class:`SnapshotOpenTransactions` answers which producer
snapshot files record a producer's transaction as open. Used by one cleaning on the cleaner
thread; not thread-safe.
"""

from __future__ import annotations

import logging
from bisect import bisect_right

from common.record_batch import RecordBatchHeader
from data_plane.storage.producer_state import (
    NO_TXN,
    CorruptSnapshotError,
    ProducerStateManager,
)

logger = logging.getLogger(__name__)


class SnapshotOpenTransactions:
    """Which producers the log's producer snapshot files record with an open transaction:
    a restart may load any of those at or above the log start offset (snapshots are not
    fsynced and older ones are kept, producer_state.py) and replay the log from its offset.

    Files are listed on first use and each read at most once per cleaning, only for a marker
    otherwise removable. Reads the files through a :class:`ProducerStateManager` of its own
    (no state shared with the log's): a file deleted meanwhile or failing its CRC is one a
    restart cannot load either; any other read error counts as every producer open."""

    def __init__(self, dir_path: str, log_start_offset: int) -> None:
        self._files = ProducerStateManager(dir_path)
        self._log_start_offset = log_start_offset
        self._offsets: list[int] | None = None
        # Snapshot offset -> producers open in it (None: unreadable, all count as open).
        self._open: dict[int, frozenset[int] | None] = {}

    def open_in_any(self, producer_id: int, after: int, up_to: int) -> bool:
        """Whether a snapshot at an offset in (``after``, ``up_to``] records
        ``producer_id``'s transaction as open."""
        if self._offsets is None:
            self._offsets = [
                o for o in self._files.snapshot_offsets() if o >= self._log_start_offset
            ]
        offsets = self._offsets
        for off in offsets[bisect_right(offsets, after) : bisect_right(offsets, up_to)]:
            if off not in self._open:
                self._open[off] = self._read(off)
            open_producers = self._open[off]
            if open_producers is None or producer_id in open_producers:
                return True
        return False

    def _read(self, offset: int) -> frozenset[int] | None:
        try:
            entries = self._files.read_snapshot(offset)
        except (FileNotFoundError, CorruptSnapshotError):
            return frozenset()
        except OSError as e:
            logger.warning(
                "producer snapshot %d of %s unreadable: %s", offset, self._files.dir_path, e
            )
            return None
        return frozenset(pid for pid, e in entries.items() if e.current_txn_first_offset != NO_TXN)


class TransactionTracker:
    """The transactions of one cleaning, fed every batch it reads in offset order (from the
    log start, so through the already-cleaned prefix too): a transactional data batch of
    producer P belongs to P's current transaction; P's end marker closes it. Tells whether a
    marker is removable (module docstring, "Transaction markers") and remembers the markers
    removed, whose aborted-transaction index entries go with them."""

    def __init__(self, snapshots: SnapshotOpenTransactions) -> None:
        self._snapshots = snapshots
        # Producer id -> whether its current transaction has a batch in the cleaned log.
        self._written: dict[int, bool] = {}
        # Producer id -> offset of its last end marker read by this cleaning.
        self._last_marker: dict[int, int] = {}
        self._removed: set[int] = set()

    def on_data_batch(self, header: RecordBatchHeader, *, written: bool) -> None:
        """A data batch was read; ``written``: it goes to the cleaned log (possibly empty)."""
        if not header.is_transactional:
            return
        pid = header.producer_id
        self._written[pid] = self._written.get(pid, False) or written

    def on_end_marker(self, header: RecordBatchHeader) -> bool:
        """An end marker was read: close its producer's transaction and return whether the
        marker is removable."""
        pid = header.producer_id
        had_batch = self._written.pop(pid, False)
        after = self._last_marker.get(pid, -1)
        self._last_marker[pid] = header.base_offset
        if had_batch:
            return False
        return not self._snapshots.open_in_any(pid, after, header.base_offset)

    def record_removed(self, marker_offset: int) -> None:
        self._removed.add(marker_offset)

    def marker_removed(self, marker_offset: int) -> bool:
        return marker_offset in self._removed
