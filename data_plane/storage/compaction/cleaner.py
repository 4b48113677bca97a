"""Cleaner: one compaction of one log (Kafka's Cleaner). Run by a
:class:`~data_plane.storage.compaction.log_cleaner.LogCleaner` thread.

1. Plan from :meth:`Log.cleaning_snapshot` and :func:`cleanable_range`: the dirty segments
   are the closed ones from the first dirty offset up to the first uncleanable offset (never
   past the last stable offset: an undecided transaction's records are not compacted).
2. Build the :class:`OffsetMap` (key digest -> latest offset) over the dirty segments, in
   order, as far as the map holds whole segments: the cleaning ends at the end of the last
   segment indexed whole (the next first dirty offset).
3. Group every segment from the log start to that end by size
   (:func:`group_segments_by_size`) and rewrite each group into one new segment
   ``<base>.log.cleaned`` (with ``.index.cleaned`` and ``.timeindex.cleaned``), reading the
   sources' batches (each CRC-checked) and, per record:

   - a record whose key maps to a later offset is removed (superseded);
   - a record without a key is removed (a compacted log cannot keep one);
   - a batch of an aborted transaction (the sources' transaction indexes name them) is
     removed whole, and is never indexed into the map, so an aborted write cannot supersede
     a committed one;
   - a tombstone (null value) is kept, and its batch gets a delete horizon of now +
     ``delete.retention.ms`` the first time a cleaning keeps it; once a cleaning runs at or
     after the horizon the tombstone is removed (record_filter.py, Kafka's KIP-534);
   - an end marker (a control batch holding one COMMIT or ABORT record) is kept while its
     transaction may still be seen without it, and otherwise goes through the same delete
     horizon as a tombstone (see "Transaction markers" below); the aborted transactions'
     index entries are copied into the cleaned segment's ``.txnindex``, except the entry of
     a marker removed;
   - everything else is kept at its original offset.

   A batch keeping all its records (and needing no new horizon) is copied byte for byte;
   otherwise it is re-built with the same baseOffset and lastOffsetDelta and a new CRC. A
   batch losing every record is dropped, except the last batch of an idempotent producer,
   kept empty so the producer's sequence continues after a restart (Kafka does the same).
   Empty batches are kept to that minimum: a fetch answered with nothing but empty batches
   makes librdkafka double its fetch size, and after about ten in a row fail with
   MSG_SIZE_TOO_LARGE. A group whose records all go becomes an empty segment.
4. Flush the cleaned segment, give it its sources' newest modification time, and swap it in
   (:meth:`Log.replace_segments`, which holds the log lock only for the renames). A group
   left unchanged (one source, every batch copied) is discarded instead of swapped.

Transaction markers (:class:`TransactionTracker`; (a) and the horizon are Kafka's
CleanedTransactionMetadata, (b) is not: Kafka fsyncs its producer snapshots). A
cleaning reads every batch from the log start to its end offset in offset order, so it sees
each transaction whole: a transactional data batch of producer P belongs to P's current
transaction, and P's next end marker closes it (as producer state replay decides, from
headers). A marker is *removable* when

  (a) no data batch of its transaction is written to the cleaned log by this cleaning (a
      batch kept empty for sequence continuity counts as written): producer state replayed
      over a kept batch without its marker would hold the transaction open for ever, and the
      last stable offset would stay at its first offset; and
  (b) no producer snapshot file at or above the log start offset, in (P's previous marker,
      this marker], records P's transaction as open. Snapshots are written without fsync at
      every roll and kept (producer_state.py), so a restart after a crash or a truncation may
      load an older one and replay from it: one taken inside the transaction would then
      replay to no marker. Such a marker stays as long as that snapshot file does.

The first cleaning to find a marker removable rewrites its batch with a delete horizon of now
+ ``delete.retention.ms`` (the tombstones' bit 6 and baseTimestamp), so that a read_committed
consumer that read the transaction's data before it was removed still meets the marker; a
cleaning at or after the horizon that finds it removable again removes it, and drops its
aborted-transaction index entry with it (a consumer handed the entry without the marker would
skip that producer's later transactional batches). A transaction found empty stays empty:
a cleaning only removes batches, and nothing is appended below the last stable offset.

The log lock is not held while reading or writing: closed segments below the high
watermark do not change. Anything that changed them meanwhile (retention, truncation,
deletion) makes the swap refuse and the cleaning stop; it is planned afresh next time.
Reads and writes go through the shared :class:`Throttler`; ``abort_requested`` is polled
between batches (the log is being deleted or the cleaner stopped), and the thread gives the
GIL up after each batch so the broker's event loop is not kept waiting a switch interval.

Thread-safety: one Cleaner (and its OffsetMap) per cleaner thread.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from common.control_records import decode_control_type
from common.errors import ApiError
from common.record_batch import (
    DELETE_HORIZON_MASK,
    HEADER_SIZE,
    LOG_OVERHEAD,
    RecordBatchHeader,
    parse_header,
    validate_batch,
)
from data_plane.storage.compaction.cleanable import (
    CleanableRange,
    cleanable_range,
    group_segments_by_size,
)
from data_plane.storage.compaction.offset_map import OffsetMap, OffsetMapFullError
from data_plane.storage.compaction.throttler import Throttler
from data_plane.storage.compaction.transaction_tracker import (
    SnapshotOpenTransactions,
    TransactionTracker,
)
from data_plane.storage.errors import LogClosedError, StorageError
from data_plane.storage.log import CleaningSnapshot, Log
from data_plane.storage.record_filter import (
    RecordSpan,
    rebuild_batch,
    records_block,
    scan_records,
)
from data_plane.storage.segment import BatchPlacement, LogSegment

logger = logging.getLogger(__name__)

# Source segments are read in chunks of this size (a larger batch is read whole).
READ_CHUNK_BYTES = 1024 * 1024
# The cleaned segment is written in appends of about this size.
WRITE_BUFFER_BYTES = 1024 * 1024


class CleanerAbortedError(Exception):
    """The cleaning was asked to stop (log deleted, cleaner shutting down)."""


class LogCleaningError(StorageError):
    """A log cannot be cleaned (a corrupt batch, a map too small for one segment); the
    cleaner manager marks it uncleanable until the broker restarts."""


@dataclass(slots=True)
class CleanerStats:
    bytes_read: int = 0
    bytes_written: int = 0
    map_bytes_read: int = 0
    map_records: int = 0
    records_read: int = 0
    records_retained: int = 0
    tombstones_removed: int = 0
    aborted_batches_removed: int = 0
    marker_horizons_set: int = 0
    markers_removed: int = 0
    keyless_removed: int = 0
    batches_copied: int = 0
    batches_rebuilt: int = 0
    batches_dropped: int = 0
    empty_batches_kept: int = 0
    groups_swapped: int = 0
    groups_unchanged: int = 0
    elapsed_s: float = 0.0


@dataclass(frozen=True, slots=True)
class CleanResult:
    """``completed``: every group was swapped (or left unchanged) and the log is clean up
    to ``end_offset``, the next first dirty offset (for ``cleaner-offset-checkpoint``)."""

    completed: bool
    end_offset: int
    plan: CleanableRange | None
    stats: CleanerStats


class Cleaner:
    def __init__(
        self,
        offset_map: OffsetMap,
        *,
        throttler: Throttler,
        clock_ms: Callable[[], int],
        abort_requested: Callable[[], bool] = lambda: False,
    ) -> None:
        self.offset_map = offset_map
        self._throttler = throttler
        self._clock_ms = clock_ms
        self._abort_requested = abort_requested

    # -- planning ----------------------------------------------------------------------------

    @staticmethod
    def plan(snap: CleaningSnapshot, checkpoint_offset: int | None, now_ms: int) -> CleanableRange:
        """The cleanable range of the log ``snap`` was taken of."""
        segments = snap.segments

        def first_batch_timestamp(i: int) -> int:
            data = segments[i].log.read(0, HEADER_SIZE)
            return parse_header(data).max_timestamp if len(data) == HEADER_SIZE else now_ms

        return cleanable_range(
            segments,
            snap.sizes,
            log_start_offset=snap.log_start_offset,
            log_end_offset=snap.log_end_offset,
            checkpoint_offset=checkpoint_offset,
            high_watermark=snap.last_stable_offset,
            now_ms=now_ms,
            min_compaction_lag_ms=snap.config.min_compaction_lag_ms,
            max_compaction_lag_ms=snap.config.max_compaction_lag_ms,
            first_batch_timestamp=first_batch_timestamp,
        )

    # -- cleaning ----------------------------------------------------------------------------

    def clean(self, log: Log, checkpoint_offset: int | None) -> CleanResult:
        """Clean ``log`` once (see the module docstring). Raises
        :class:`CleanerAbortedError` when aborted and :class:`LogCleaningError` when the
        log cannot be cleaned."""
        started = time.monotonic()
        stats = CleanerStats()
        try:
            snap = log.cleaning_snapshot()
        except LogClosedError:
            return CleanResult(False, -1, None, stats)
        now = self._clock_ms()
        try:
            plan = self.plan(snap, checkpoint_offset, now)
            if plan.dirty_bytes == 0:
                return CleanResult(True, plan.first_dirty_offset, plan, stats)
            aborted = AbortedBatches(snap)
            end_offset = self._build_offset_map(snap, plan, aborted, stats)
            completed = self._clean_segments(log, snap, end_offset, now, aborted, stats)
        except LogClosedError:
            # The log was closed or deleted under us.
            return CleanResult(False, -1, None, stats)
        finally:
            stats.elapsed_s = time.monotonic() - started
        return CleanResult(completed, end_offset, plan, stats)

    def _build_offset_map(
        self,
        snap: CleaningSnapshot,
        plan: CleanableRange,
        aborted: AbortedBatches,
        stats: CleanerStats,
    ) -> int:
        """Index the dirty segments into the map; return where the indexed range ends."""
        offset_map = self.offset_map
        offset_map.clear()
        segments = snap.segments
        end = plan.first_dirty_offset
        for i in range(plan.dirty_from, plan.segment_count):
            seg = segments[i]
            try:
                for header, data in self._batches(seg, snap.sizes[i], stats):
                    stats.map_bytes_read += header.size_in_bytes
                    if header.is_control or header.records_count == 0 or aborted.holds(header):
                        continue
                    block = records_block(data, header)
                    for span in scan_records(header, block):
                        if span.key is not None:
                            offset_map.put(span.key, span.offset)
                            stats.map_records += 1
            except OffsetMapFullError:
                if i == plan.dirty_from:
                    raise LogCleaningError(
                        f"segment {seg.base_offset} of {seg.dir_path} has more keys than the "
                        f"offset map holds ({offset_map.max_entries}); raise "
                        "log.cleaner.dedupe.buffer.size"
                    ) from None
                logger.info(
                    "%s: offset map full; this cleaning ends at offset %d",
                    seg.dir_path,
                    seg.base_offset,
                )
                return seg.base_offset
            end = segments[i + 1].base_offset
        return end

    def _clean_segments(
        self,
        log: Log,
        snap: CleaningSnapshot,
        end_offset: int,
        now_ms: int,
        aborted: AbortedBatches,
        stats: CleanerStats,
    ) -> bool:
        segments = snap.segments
        chosen = [
            i
            for i in range(len(segments) - 1)
            if segments[i + 1].base_offset <= end_offset
            and segments[i + 1].base_offset > snap.log_start_offset
        ]
        if not chosen:
            return True
        bases = [segments[i].base_offset for i in chosen]
        ends = [segments[i + 1].base_offset for i in chosen]
        sizes = [snap.sizes[i] for i in chosen]
        groups = group_segments_by_size(
            bases, ends, sizes, max_size_bytes=snap.config.segment_bytes
        )
        # One tracker for the whole cleaning: groups are cleaned in offset order, and a
        # transaction may start in an earlier group than its marker.
        txns = TransactionTracker(SnapshotOpenTransactions(log.dir_path, snap.log_start_offset))
        for group in groups:
            sources = [segments[chosen[k]] for k in group]
            source_sizes = [sizes[k] for k in group]
            if not self._clean_group(
                log, snap, sources, source_sizes, now_ms, aborted, txns, stats
            ):
                return False
        return True

    def _clean_group(
        self,
        log: Log,
        snap: CleaningSnapshot,
        sources: list[LogSegment],
        source_sizes: list[int],
        now_ms: int,
        aborted: AbortedBatches,
        txns: TransactionTracker,
        stats: CleanerStats,
    ) -> bool:
        """Write the cleaned segment of ``sources`` and swap it in; False if the log
        refused the swap (its segments changed meanwhile)."""
        cleaned = log.new_cleaned_segment(sources[0].base_offset)
        swapped = False
        try:
            writer = _SegmentWriter(cleaned, self._throttler, stats)
            changed = len(sources) > 1
            for seg, size in zip(sources, source_sizes, strict=True):
                for header, data in self._batches(seg, size, stats):
                    if header.is_control:
                        out, batch_changed = self._filter_control(
                            header, data, snap, now_ms, stats, txns
                        )
                    else:
                        out, batch_changed = self._filter_batch(
                            header, data, snap, now_ms, stats, aborted
                        )
                        txns.on_data_batch(header, written=out is not None)
                    changed = changed or batch_changed
                    if out is not None:
                        writer.append(out, header.last_offset)
            writer.finish()
            for seg in sources:
                for txn in seg.txn_index.entries:
                    if not txns.marker_removed(txn.last_offset):
                        cleaned.txn_index.append(txn)
            if not changed:
                stats.groups_unchanged += 1
                return True
            cleaned.on_become_inactive()
            cleaned.flush()
            cleaned.set_last_modified(max(s.last_modified_ns() for s in sources))
            swapped = log.replace_segments(cleaned, sources, source_sizes)
            if swapped:
                stats.groups_swapped += 1
            return swapped
        finally:
            if not swapped:
                cleaned.delete_files()

    def _filter_batch(
        self,
        header: RecordBatchHeader,
        data: memoryview | bytes,
        snap: CleaningSnapshot,
        now_ms: int,
        stats: CleanerStats,
        aborted: AbortedBatches,
    ) -> tuple[memoryview | bytes | bytearray | None, bool]:
        """The bytes to write for one source data batch (None: drop it) and whether they
        differ from the source's."""
        if aborted.holds(header):
            stats.aborted_batches_removed += 1
            if self._keep_empty(header, snap):
                stats.empty_batches_kept += 1
                block = records_block(data, header)
                return rebuild_batch(data, header, block, [], delete_horizon_ms=None), True
            return None, True
        block = records_block(data, header)
        spans = scan_records(header, block) if header.records_count else []
        stats.records_read += len(spans)
        has_horizon = bool(header.attributes & DELETE_HORIZON_MASK)
        horizon = header.base_timestamp if has_horizon else None
        kept: list[RecordSpan] = []
        tombstone_kept = False
        offset_map = self.offset_map
        for span in spans:
            if span.key is None:
                stats.keyless_removed += 1
                continue
            if offset_map.get(span.key) > span.offset:
                continue
            if span.is_tombstone:
                if horizon is not None and horizon <= now_ms:
                    stats.tombstones_removed += 1
                    continue
                tombstone_kept = True
            kept.append(span)
        stats.records_retained += len(kept)
        if len(kept) == len(spans) and (has_horizon or not tombstone_kept):
            if spans or self._keep_empty(header, snap):
                stats.batches_copied += 1
                return data, False
            stats.batches_dropped += 1
            return None, True
        if not kept and not self._keep_empty(header, snap):
            stats.batches_dropped += 1
            return None, True
        if not kept:
            stats.empty_batches_kept += 1
        new_horizon = None
        if tombstone_kept:
            new_horizon = horizon
            if new_horizon is None:
                new_horizon = now_ms + snap.config.delete_retention_ms
        stats.batches_rebuilt += 1
        return rebuild_batch(data, header, block, kept, delete_horizon_ms=new_horizon), True

    def _filter_control(
        self,
        header: RecordBatchHeader,
        data: memoryview | bytes,
        snap: CleaningSnapshot,
        now_ms: int,
        stats: CleanerStats,
        txns: TransactionTracker,
    ) -> tuple[memoryview | bytes | bytearray | None, bool]:
        """The bytes to write for one source control batch (None: drop it) and whether they
        differ from the source's. A control batch that is not one end marker (an unknown
        control type) is kept and closes no transaction, as producer state replay does."""
        if header.records_count != 1:
            stats.batches_copied += 1
            return data, False
        block = records_block(data, header)
        spans = scan_records(header, block)
        if decode_control_type(spans[0].key) is None:
            stats.batches_copied += 1
            return data, False
        if not txns.on_end_marker(header):
            stats.batches_copied += 1
            return data, False
        if header.attributes & DELETE_HORIZON_MASK:
            if header.base_timestamp <= now_ms:
                txns.record_removed(header.base_offset)
                stats.markers_removed += 1
                stats.batches_dropped += 1
                return None, True
            stats.batches_copied += 1
            return data, False
        stats.marker_horizons_set += 1
        stats.batches_rebuilt += 1
        horizon = now_ms + snap.config.delete_retention_ms
        return rebuild_batch(data, header, block, spans, delete_horizon_ms=horizon), True

    @staticmethod
    def _keep_empty(header: RecordBatchHeader, snap: CleaningSnapshot) -> bool:
        """An idempotent producer's last batch stays (emptied) for sequence continuity."""
        pid = header.producer_id
        return pid >= 0 and snap.producer_last_offsets.get(pid) == header.last_offset

    def _batches(
        self, seg: LogSegment, size: int, stats: CleanerStats
    ) -> Iterator[tuple[RecordBatchHeader, memoryview | bytes]]:
        """Each batch of ``seg``'s first ``size`` bytes, CRC-checked, with its bytes.
        Raises :class:`CleanerAbortedError` between two batches once an abort is asked."""
        pos = 0
        while pos < size:
            if self._abort_requested():
                raise CleanerAbortedError(f"cleaning of {seg.dir_path} aborted")
            chunk = seg.log.read(pos, min(READ_CHUNK_BYTES, size - pos))
            if not chunk:
                raise LogClosedError(f"{seg.log.path} shrank under the cleaner")
            stats.bytes_read += len(chunk)
            self._throttler.maybe_throttle(len(chunk))
            view = memoryview(chunk)
            off = 0
            while off < len(view):
                if len(view) - off < LOG_OVERHEAD:
                    break
                batch_size = int.from_bytes(view[off + 8 : off + 12], "big") + LOG_OVERHEAD
                if off + batch_size > len(view):
                    if off == 0:
                        # One batch larger than a chunk: read it whole.
                        chunk = seg.log.read(pos, batch_size)
                        stats.bytes_read += len(chunk) - len(view)
                        view = memoryview(chunk)
                        if len(view) < batch_size:
                            raise LogCleaningError(
                                f"{seg.log.path}: batch at position {pos} runs past the end"
                            )
                    else:
                        break
                try:
                    header = validate_batch(view, off)
                except ApiError as e:
                    raise LogCleaningError(f"{seg.log.path} at position {pos + off}: {e}") from e
                data = view[off : off + batch_size]
                header.position = pos + off
                yield header, data
                off += batch_size
                if self._abort_requested():
                    raise CleanerAbortedError(f"cleaning of {seg.dir_path} aborted")
                # Let the broker's event loop have the GIL between two batches: a
                # CPU-bound thread otherwise keeps it for the whole switch interval (5 ms)
                # at each of the loop's many reacquisitions.
                time.sleep(0)
            pos += off


class AbortedBatches:
    """Which data batches of a cleaning's segments belong to aborted transactions: those of
    an aborted transaction's producer within its [first offset, marker offset)."""

    def __init__(self, snap: CleaningSnapshot) -> None:
        self._ranges: dict[int, list[tuple[int, int]]] = {}
        for txn in snap.aborted_transactions:
            self._ranges.setdefault(txn.producer_id, []).append((txn.first_offset, txn.last_offset))

    def holds(self, header: RecordBatchHeader) -> bool:
        if not header.is_transactional or header.is_control:
            return False
        ranges = self._ranges.get(header.producer_id)
        if not ranges:
            return False
        offset = header.base_offset
        return any(first <= offset < last for first, last in ranges)


class _SegmentWriter:
    """Buffers the cleaned batches and appends them to the cleaned segment (which builds its
    sparse indexes as for any append)."""

    def __init__(self, segment: LogSegment, throttler: Throttler, stats: CleanerStats) -> None:
        self._segment = segment
        self._throttler = throttler
        self._stats = stats
        self._buf = bytearray()
        self._placements: list[BatchPlacement] = []

    def append(self, batch: memoryview | bytes | bytearray, last_offset: int) -> None:
        header = parse_header(batch)
        self._placements.append(
            BatchPlacement(len(self._buf), len(batch), last_offset, header.max_timestamp)
        )
        self._buf += batch
        if len(self._buf) >= WRITE_BUFFER_BYTES:
            self.finish()

    def finish(self) -> None:
        if not self._buf:
            return
        self._segment.append(self._buf, self._placements)
        self._stats.bytes_written += len(self._buf)
        self._throttler.maybe_throttle(len(self._buf))
        self._buf = bytearray()
        self._placements = []
