"""LocalLog: the segment files of one partition's replica (Kafka's LocalLog). It knows
segments, offsets and files; it knows nothing of producers, leader epochs, the high watermark
or the log start offset — :class:`~data_plane.storage.log.Log` (the unified log) keeps those
and tells this class where reads end and what to remove.

Directory ``<log.dir>/<topic>-<partition>/`` holding segments named by base offset (see
segment.py and log_loader.py for the file set)::

    segments[0].base_offset <= ... <= segments[-1].base_offset (active) <= next offset (LEO)
    recovery point <= LEO: every offset below it is fsynced

- Segments are kept sorted by base offset; the last one is *active* (appended to). Lookups
  bisect the base offsets (``_bases``, kept in step with ``_segments``), then use the
  segment's sparse index.
- Flush policy: ``flush.messages`` (checked by the caller after each append), ``flush.ms``
  and a flush of a rolled segment, run by :meth:`maybe_flush`. A directory created or changed
  (roll, removal) is fsynced with the next flush of data.
- Removed segments are renamed ``*.deleted`` and unlinked ``file.delete.delay.ms`` later by
  :meth:`delete_pending_files`; a slice handed out keeps its segment's descriptor open even
  past the unlink, so it stays sendable.
- The log cleaner's new segment is written as ``<base>.log.cleaned`` (:meth:`new_cleaned_segment`)
  and swapped in by :meth:`replace_segments` (``.cleaned`` -> ``.swap`` -> final names, the
  sources renamed ``.deleted``), which refuses if the sources changed meanwhile.

Thread-safety: every access to the segment list and offsets holds ``lock`` (an RLock shared
with the owning :class:`Log`, which calls the ``*_locked`` methods with it held); fsync runs
outside it so appends are never blocked behind the disk. Public methods without ``_locked``
take the lock themselves and are safe from any thread.
"""

from __future__ import annotations

import bisect
import logging
import os
import shutil
import threading
from collections.abc import Callable
from typing import NamedTuple

from common.durable_io import fsync_directory
from common.log_config import LogConfig
from common.record_batch import Buffer
from data_plane.storage.errors import KafkaStorageError, LogClosedError, RecordListTooLargeError
from data_plane.storage.file_records import FileSlice
from data_plane.storage.segment import (
    CLEANED_SUFFIX,
    INDEX_SUFFIX,
    LOG_SUFFIX,
    SWAP_SUFFIX,
    TIME_INDEX_SUFFIX,
    BatchPlacement,
    LogSegment,
    segment_file_name,
)
from data_plane.storage.segment_cache import OpenSegmentCache
from data_plane.storage.transaction_index import TXN_INDEX_SUFFIX, AbortedTxn

logger = logging.getLogger(__name__)

Clock = Callable[[], int]


class LogOffsetMetadata(NamedTuple):
    """An offset with the segment and file position of the batch holding it (Kafka's
    LogOffsetMetadata): a read capped at this offset ends at ``relative_position`` in the
    segment ``segment_base_offset``, an exact batch boundary. (A NamedTuple: one is made on
    every read.)"""

    message_offset: int
    segment_base_offset: int
    relative_position: int


class LocalLog:
    """The segments of one log directory. Built by :class:`Log` from what log_loader.py
    recovered; ``segments`` must be non-empty and sorted, the last one active."""

    def __init__(
        self,
        dir_path: str,
        config: LogConfig,
        *,
        name: str,
        segments: list[LogSegment],
        next_offset: int,
        recovery_point: int,
        dir_created: bool,
        clock_ms: Clock,
        segment_cache: OpenSegmentCache | None,
    ) -> None:
        self.dir_path = dir_path
        self.name = name
        self.config = config
        self.lock = threading.RLock()
        self.closed = False
        self._clock_ms = clock_ms
        self._segment_cache = segment_cache
        self._segments = segments
        self._bases = [s.base_offset for s in segments]
        self.next_offset = next_offset
        self.recovery_point = recovery_point
        self._last_flush_ms = clock_ms()
        self._roll_flush_pending = False
        self._dir_flush_pending = False
        # A directory created by this load is fsynced with the log's first flush of data
        # (an empty log lost in a crash is re-created from the metadata; see LogManager).
        self._new_dir_unsynced = dir_created
        self._pending_deletes: list[tuple[int, LogSegment]] = []

    # -- segments ----------------------------------------------------------------------------

    @property
    def segments(self) -> list[LogSegment]:
        """The live list, oldest first (read it under ``lock``; never mutate it)."""
        return self._segments

    @property
    def active_segment(self) -> LogSegment:
        return self._segments[-1]

    @property
    def size_in_bytes(self) -> int:
        with self.lock:
            return sum(s.size_in_bytes for s in self._segments)

    @property
    def unflushed_messages(self) -> int:
        return self.next_offset - self.recovery_point

    def check_open(self) -> None:
        if self.closed:
            raise LogClosedError(f"log {self.name} is closed")

    def segment_index_from(self, offset: int) -> int:
        """Index in :attr:`segments` of the segment that would hold ``offset`` (0 below the
        first base offset)."""
        return max(bisect.bisect_right(self._bases, offset) - 1, 0)

    def _new_segment(self, base_offset: int, *, file_suffix: str = "") -> LogSegment:
        return LogSegment(
            self.dir_path,
            base_offset,
            index_interval_bytes=self.config.index_interval_bytes,
            max_index_bytes=self.config.segment_index_bytes,
            created_ms=self._clock_ms(),
            active=True,
            cache=self._segment_cache,
            file_suffix=file_suffix,
        )

    # -- append and roll (lock held by the caller) -------------------------------------------

    def should_roll_locked(self, size: int, batches: int, last_offset: int) -> bool:
        """Whether an append of ``size`` bytes in ``batches`` batches ending at
        ``last_offset`` must go to a new segment (segment.bytes, segment.ms, index full,
        offsets too far from the base for 32-bit relative offsets)."""
        cfg = self.config
        if size > cfg.segment_bytes:
            raise RecordListTooLargeError(
                f"{self.name}: append of {size} bytes exceeds segment.bytes={cfg.segment_bytes}"
            )
        return self._segments[-1].should_roll(
            append_bytes=size,
            append_batches=batches,
            max_offset=last_offset,
            segment_bytes=cfg.segment_bytes,
            segment_ms=cfg.segment_ms,
            now_ms=self._clock_ms(),
        )

    def roll_locked(self, new_base: int) -> LogSegment:
        """Start a new active segment at ``new_base``; an empty active segment at that base is
        kept, one at another base (a follower append after a gap) is replaced."""
        old = self._segments[-1]
        if old.size_in_bytes == 0:
            if old.base_offset == new_base:
                return old
            self.remove_segments_locked([old], reason="replaced by roll")
        else:
            old.on_become_inactive()
            self._roll_flush_pending = True
        seg = self._new_segment(new_base)
        self._segments.append(seg)
        self._bases.append(new_base)
        self._dir_flush_pending = True
        logger.info("%s: rolled new segment at offset %d", self.name, new_base)
        return seg

    def append_locked(
        self, data: Buffer, placements: list[BatchPlacement], last_offset: int
    ) -> None:
        """Write ``data`` (batches whose offsets are final) to the active segment and move the
        LEO past ``last_offset``. An I/O error raises :class:`KafkaStorageError` and leaves
        the LEO where it was: bytes past it are overwritten by the next append and cut by
        recovery."""
        seg = self._segments[-1]
        try:
            seg.append(data, placements)
        except OSError as e:
            raise KafkaStorageError(f"{self.name}: append to {seg.log.path} failed: {e}") from e
        self.next_offset = last_offset + 1
        if self.config.writeback_window_bytes:
            seg.log.write_back_behind(self.config.writeback_window_bytes)

    # -- read (lock held by the caller) ------------------------------------------------------

    def end_metadata_locked(self) -> LogOffsetMetadata:
        seg = self._segments[-1]
        return LogOffsetMetadata(self.next_offset, seg.base_offset, seg.size_in_bytes)

    def offset_metadata_locked(self, offset: int) -> LogOffsetMetadata:
        """The batch boundary at ``offset`` (the caller checked it is in range); the LEO maps
        to the end of the active segment."""
        if offset == self.next_offset:
            return self.end_metadata_locked()
        segments = self._segments
        for i in range(self.segment_index_from(offset), len(segments)):
            seg = segments[i]
            header = seg.translate_offset(offset)
            if header is not None:
                return LogOffsetMetadata(offset, seg.base_offset, header.position)
        return self.end_metadata_locked()

    def read_locked(
        self,
        start_offset: int,
        max_bytes: int,
        upper: LogOffsetMetadata,
        *,
        min_one_message: bool,
    ) -> FileSlice:
        """A file slice from the batch holding ``start_offset`` that does not pass ``upper``;
        an empty slice when there is nothing below it."""
        if start_offset >= upper.message_offset:
            return self.empty_slice_locked()
        segments = self._segments
        for i in range(self.segment_index_from(start_offset), len(segments)):
            seg = segments[i]
            if seg.base_offset > upper.segment_base_offset:
                break
            max_position = (
                upper.relative_position if seg.base_offset == upper.segment_base_offset else None
            )
            fs = seg.read(
                start_offset,
                max_bytes,
                max_position=max_position,
                min_one_message=min_one_message,
            )
            if fs is not None:
                return fs
        return self.empty_slice_locked()

    def empty_slice_locked(self) -> FileSlice:
        seg = self._segments[-1]
        # A new log's first segment has no file until its first append.
        file = seg.log.file if seg.files_created else None
        return FileSlice(file, seg.size_in_bytes, 0, seg.base_offset, -1)

    def collect_aborted_transactions_locked(
        self, start_offset: int, fetched: FileSlice
    ) -> list[AbortedTxn]:
        """The aborted transactions whose records or marker overlap [``start_offset``, end of
        the segment of ``fetched``), a non-empty slice :meth:`read_locked` returned from
        ``start_offset``; oldest marker first (Kafka's LocalLog.collectAbortedTransactions).
        Bounding by the segment's end (not the slice's last batch, which would need decoding)
        is what Kafka does too; a consumer ignores entries of producers it meets no batch of.

        An entry lives in the segment of its marker, which may come after the slice's: the
        scan goes on through later segments until one holds an entry whose last stable offset
        reaches the upper bound (no transaction still open then started below it) or the log
        ends (Kafka's search)."""
        segments = self._segments
        i = self.segment_index_from(fetched.segment_base_offset)
        upper = segments[i + 1].base_offset if i + 1 < len(segments) else self.next_offset
        out: list[AbortedTxn] = []
        for seg in segments[self.segment_index_from(start_offset) :]:
            if not seg.files_created:
                continue
            entries = seg.txn_index.entries
            out.extend(
                t for t in entries if t.last_offset >= start_offset and t.first_offset < upper
            )
            if any(t.last_stable_offset >= upper for t in entries):
                break
        return out

    def max_timestamp_locked(self) -> int | None:
        """The largest maxTimestamp of any segment; None when no record has a timestamp."""
        stamps = [seg.max_timestamp_so_far for seg in self._segments]
        best = max(stamps, default=-1)
        return best if best >= 0 else None

    def find_offset_by_timestamp_locked(
        self, timestamp: int, log_start_offset: int
    ) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record at or above ``log_start_offset`` with
        timestamp >= ``timestamp``; None if every record is older. Decodes one batch."""
        for seg in self._segments:
            if seg.max_timestamp_so_far < timestamp:
                continue
            found = seg.find_offset_by_timestamp(timestamp, log_start_offset)
            if found is not None:
                return found
        return None

    # -- flush -------------------------------------------------------------------------------

    def flush(self, up_to_offset: int | None = None, *, indexes: bool = True) -> None:
        """fsync every segment holding offsets in [recovery point, ``up_to_offset``) (default:
        the LEO), with their indexes when ``indexes``, and the directory if it changed; then
        advance the recovery point. The fsyncs run without the lock."""
        with self.lock:
            if self.closed:
                return
            target = (
                self.next_offset if up_to_offset is None else min(up_to_offset, self.next_offset)
            )
            if target <= self.recovery_point and not self._dir_flush_pending:
                return
            i = self.segment_index_from(self.recovery_point)
            to_flush = [s for s in self._segments[i:] if s.base_offset < target]
            flush_dir = self._dir_flush_pending or (
                self._new_dir_unsynced and target > self.recovery_point
            )
            self._dir_flush_pending = False
            if flush_dir:
                self._new_dir_unsynced = False
        try:
            for seg in to_flush:
                seg.flush(indexes=indexes)
            if flush_dir:
                fsync_directory(self.dir_path)
        except OSError as e:
            with self.lock:
                self._dir_flush_pending = self._dir_flush_pending or flush_dir
            raise KafkaStorageError(f"{self.name}: fsync failed: {e}") from e
        with self.lock:
            self.recovery_point = max(self.recovery_point, target)
            self._last_flush_ms = self._clock_ms()
            self._roll_flush_pending = False

    def flush_if_too_many_unflushed(self) -> None:
        """The ``flush.messages`` policy, checked after every append."""
        if self.unflushed_messages >= self.config.flush_messages:
            # Indexes are derived data, checked on open and rebuilt if wrong; an index page
            # lost in a crash only lengthens scans. Syncing them per append would triple the
            # I/Os, so they are synced on roll, on close and by the periodic flush only.
            self.flush(indexes=False)

    def maybe_flush(self) -> bool:
        """Flush if the policy says so (a segment was rolled, ``flush.ms`` elapsed or
        ``flush.messages`` are unflushed); return whether it flushed."""
        with self.lock:
            if self.closed or (self.unflushed_messages <= 0 and not self._roll_flush_pending):
                return False
            timed_out = self._clock_ms() - self._last_flush_ms >= self.config.flush_ms
            due = (
                self._roll_flush_pending
                or timed_out
                or self.unflushed_messages >= self.config.flush_messages
            )
            rolled_only = self._roll_flush_pending and not timed_out
            up_to = self._segments[-1].base_offset if rolled_only else None
        if due:
            self.flush(up_to)
        return due

    # -- truncation and removal (lock held by the caller) ------------------------------------

    def truncate_to_locked(self, target_offset: int) -> int:
        """Remove every offset >= ``target_offset`` (which must be >= the first segment's
        base); a batch straddling it goes whole. Return the new LEO."""
        doomed = [s for s in self._segments if s.base_offset > target_offset]
        if doomed:
            self.remove_segments_locked(doomed, reason="truncation")
        seg = self._segments[-1]
        header = seg.translate_offset(target_offset)
        new_end = target_offset
        if header is not None and header.base_offset < target_offset:
            new_end = header.base_offset
        seg.truncate_to(target_offset)
        seg.make_active()
        self.next_offset = new_end
        self.recovery_point = min(self.recovery_point, new_end)
        return new_end

    def truncate_fully_and_start_at_locked(self, new_offset: int) -> None:
        """Drop every segment and start an empty one at ``new_offset``."""
        self.remove_segments_locked(list(self._segments), reason="truncate fully")
        self._segments = [self._new_segment(new_offset)]
        self._bases = [new_offset]
        self.next_offset = new_offset
        self.recovery_point = new_offset
        self._dir_flush_pending = True

    def delete_oldest_segments_locked(self, count: int, *, reason: str) -> int:
        """Remove the ``count`` oldest segments (never the active one: the caller's retention
        rule keeps it); return the new first base offset."""
        self.remove_segments_locked(self._segments[:count], reason=reason)
        first = self._segments[0].base_offset
        self.recovery_point = max(self.recovery_point, first)
        return first

    def remove_segments_locked(self, doomed: list[LogSegment], *, reason: str) -> None:
        doomed_ids = {id(s) for s in doomed}
        self._segments = [s for s in self._segments if id(s) not in doomed_ids]
        self._bases = [s.base_offset for s in self._segments]
        due = self._clock_ms() + self.config.file_delete_delay_ms
        for seg in doomed:
            seg.rename_to_deleted()
            self._pending_deletes.append((due, seg))
            logger.info(
                "%s: deleting segment %d (%d bytes): %s",
                self.name,
                seg.base_offset,
                seg.size_in_bytes,
                reason,
            )

    def delete_pending_files(self, *, force: bool = False) -> int:
        """Unlink ``.deleted`` segments whose delay has passed (all when ``force``)."""
        with self.lock:
            now = self._clock_ms()
            ready = [s for due, s in self._pending_deletes if force or due <= now]
            self._pending_deletes = [
                (due, s) for due, s in self._pending_deletes if not (force or due <= now)
            ]
        for seg in ready:
            seg.delete_files()
        return len(ready)

    # -- log cleaner -------------------------------------------------------------------------

    def new_cleaned_segment(self, base_offset: int) -> LogSegment:
        """A new segment whose files are ``<base>.log.cleaned`` etc. for the cleaner to write
        (not part of the log until :meth:`replace_segments`). Leftover ``.cleaned`` files
        of that base (a cleaning that could not delete its own) are removed first."""
        for suffix in (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX):
            path = os.path.join(self.dir_path, segment_file_name(base_offset, suffix))
            try:
                os.unlink(path + CLEANED_SUFFIX)
            except FileNotFoundError:
                pass
        return self._new_segment(base_offset, file_suffix=CLEANED_SUFFIX)

    def replace_segments_locked(
        self, cleaned: LogSegment, sources: list[LogSegment], source_sizes: list[int]
    ) -> bool:
        """Swap ``cleaned`` (closed, flushed, files ``*.cleaned``) in for ``sources``,
        contiguous closed segments of sizes ``source_sizes``; return False and change nothing
        when they are no longer exactly in the log.

        On disk, as Kafka does: ``.cleaned`` -> ``.swap`` (directory fsynced: from here
        recovery completes the swap), the sources renamed ``.deleted``, the swap files renamed
        to their final names (directory fsynced). An I/O error raises
        :class:`KafkaStorageError`; the in-memory log then keeps serving the sources from
        their open descriptors and the next start finishes or discards the swap
        (log_loader.py)."""
        if self.closed or not sources:
            return False
        try:
            i = next(k for k, s in enumerate(self._segments) if s is sources[0])
        except StopIteration:
            return False
        current = self._segments[i : i + len(sources)]
        if (
            i + len(sources) >= len(self._segments)  # the active segment is never cleaned
            or len(current) != len(sources)
            or any(a is not b for a, b in zip(current, sources, strict=True))
            or [s.size_in_bytes for s in current] != list(source_sizes)
            or cleaned.base_offset != sources[0].base_offset
        ):
            return False
        try:
            cleaned.change_file_suffix(CLEANED_SUFFIX, SWAP_SUFFIX)
            fsync_directory(self.dir_path)
            due = self._clock_ms() + self.config.file_delete_delay_ms
            for seg in sources:
                seg.rename_to_deleted()
                self._pending_deletes.append((due, seg))
            cleaned.change_file_suffix(SWAP_SUFFIX, "")
            fsync_directory(self.dir_path)
        except OSError as e:
            raise KafkaStorageError(
                f"{self.name}: swapping in the cleaned segment {cleaned.base_offset} failed: {e}"
            ) from e
        self._segments[i : i + len(sources)] = [cleaned]
        self._bases = [s.base_offset for s in self._segments]
        logger.info(
            "%s: cleaned segments %s into one of %d bytes (was %d)",
            self.name,
            [s.base_offset for s in sources],
            cleaned.size_in_bytes,
            sum(source_sizes),
        )
        return True

    # -- lifecycle ---------------------------------------------------------------------------

    def close_segments_locked(self) -> None:
        self.closed = True
        for seg in self._segments:
            seg.close()

    def close_without_writing(self) -> None:
        """Close every segment's files, ignoring errors (the directory failed)."""
        with self.lock:
            self.closed = True
            for seg in self._segments:
                seg.close_quietly()

    def close_and_delete_dir(self, renamed_dir: str) -> None:
        """Close, rename the directory to ``renamed_dir`` (a ``-delete`` name) and remove it."""
        with self.lock:
            self.close_segments_locked()
        self.delete_pending_files(force=True)
        os.replace(self.dir_path, renamed_dir)
        fsync_directory(os.path.dirname(renamed_dir) or ".")
        shutil.rmtree(renamed_dir, ignore_errors=True)
