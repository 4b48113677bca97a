"""Log: one partition's replica on disk, a directory of segments (Kafka's UnifiedLog +
LocalLog) with its :class:`LeaderEpochFileCache` (``leader-epoch-checkpoint``) and its
:class:`ProducerStateManager` (idempotent producers' last batches, ``<offset>.snapshot``
files), both kept in step with appends, rolls, truncations and the log start offset.

Directory ``<log.dir>/<topic>-<partition>/`` holding segments named by base offset (see
segment.py and log_loader.py for the file set). Offsets::

    log start offset  <=  high watermark  <=  log end offset (LEO, the next offset to assign)
    recovery point    <=  LEO: everything below it is fsynced

- Segments are kept sorted by base offset; the last one is *active* (appended to). Lookups
  bisect the base offsets, then use the segment's sparse index.
- :meth:`append` is one path for the leader's and the follower's appends, keyed by
  :class:`AppendOrigin` as Kafka's UnifiedLog does: a producer payload (CLIENT) is validated
  by header and CRC only, idempotent producers' epochs and sequences are checked (a retried
  batch is answered with its original offsets, ``LogAppendInfo.duplicate``, and not written)
  and offsets are assigned in place; a leader's batches (REPLICATION) keep their offsets,
  which may not go backwards, and their producers' batches are recorded unchecked, so a
  follower that becomes leader answers retries as the old leader would.
- Producer state is always up to date with the log end offset: loaded from the newest
  snapshot and rebuilt by replaying batch headers on open, snapshotted at every roll and on
  close, reloaded the same way after a truncation, and cleared with the log.
- :meth:`read` returns a :class:`FileSlice` for ``os.sendfile``, capped at the high watermark
  (consumers) or the LEO (followers) on an exact batch boundary. A batch in the slice that
  fails its CRC raises :class:`CorruptRecordError` (each byte range is checked once per
  process; data appended or recovered here was checked already).
- Flush policy: ``flush.messages`` (1 = fsync every append, synchronously), ``flush.ms`` and a
  flush of the rolled segment, both run by :meth:`maybe_flush` from the log manager's
  maintenance thread.
- Deleted segments are renamed ``*.deleted`` and unlinked ``file.delete.delay.ms`` later by
  :meth:`delete_pending_files`; a slice handed out keeps its segment's descriptor open even
  past the unlink, so it stays sendable.
- The log cleaner (cleaner.py) plans from :meth:`cleaning_snapshot`, writes a new segment
  from :meth:`new_cleaned_segment` without the lock, and swaps it in for the segments it
  replaces with :meth:`replace_segments` (``.cleaned`` -> ``.swap`` -> final names, the
  sources renamed ``.deleted``), which refuses if they changed meanwhile.
- A compacted log (``cleanup.policy`` with ``compact``) refuses a produced record without a
  key (INVALID_RECORD); only such logs decode keys on append.

Thread-safety: appends, reads and truncations come from one owner thread (the broker's event
loop). :meth:`flush`, :meth:`maybe_flush`, :meth:`delete_old_segments` and
:meth:`delete_pending_files` may run concurrently on a background thread, and the cleaner's
methods on a log cleaner thread. Every access to the
segment list and offsets holds ``self._lock`` (an RLock); fsync runs outside it so appends are
never blocked behind the disk. All public methods are safe to call from any thread.
"""

from __future__ import annotations

import bisect
import enum
import logging
import os
import shutil
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

from common.durable_io import fsync_directory
from common.errors import InvalidRecordError
from common.log_config import LogConfig
from common.record_batch import (
    NO_PARTITION_LEADER_EPOCH,
    Buffer,
    PayloadInfo,
    assign_offsets,
    validate_produce_payload,
    validate_stored_payload,
)
from data_plane.storage.errors import (
    InvalidAppendOffsetError,
    KafkaStorageError,
    LogClosedError,
    OffsetOutOfRangeError,
    RecordListTooLargeError,
)
from data_plane.storage.file_records import FileSlice
from data_plane.storage.leader_epoch_cache import LEADER_EPOCH_CHECKPOINT, LeaderEpochFileCache
from data_plane.storage.log_loader import load_log
from data_plane.storage.producer_state import AppendOrigin, ProducerStateManager
from data_plane.storage.record_filter import check_keys_present
from data_plane.storage.retention import deletable_segments
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

logger = logging.getLogger(__name__)

Clock = Callable[[], int]


def wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


class FetchIsolation(enum.Enum):
    """How far a read may go: followers read to the LEO, consumers to the high watermark."""

    LOG_END = "log_end"
    HIGH_WATERMARK = "high_watermark"


class LogOffsetMetadata(NamedTuple):
    """An offset with the segment and file position of the batch holding it (Kafka's
    LogOffsetMetadata): a read capped at this offset ends at ``relative_position`` in the
    segment ``segment_base_offset``, an exact batch boundary. (A NamedTuple: one is made on
    every read.)"""

    message_offset: int
    segment_base_offset: int
    relative_position: int


@dataclass(frozen=True, slots=True)
class LogAppendInfo:
    """Result of an append. ``log_append_time_ms`` is -1 unless the topic uses LogAppendTime.
    ``offset_of_max_timestamp`` is the last offset of the batch with the largest timestamp."""

    first_offset: int
    last_offset: int
    max_timestamp: int
    offset_of_max_timestamp: int
    log_append_time_ms: int
    log_start_offset: int
    valid_bytes: int
    record_count: int
    batch_count: int
    # A retried idempotent batch: the offsets are those of its first append; nothing written.
    duplicate: bool = False


@dataclass(frozen=True, slots=True)
class CleaningSnapshot:
    """A consistent view of a log for the cleaner: its segments (the last is active) with
    their sizes then, offsets, config, and each idempotent producer's last offset (its last
    batch is kept, emptied if need be, for sequence continuity, as Kafka does)."""

    segments: tuple[LogSegment, ...]
    sizes: tuple[int, ...]
    log_start_offset: int
    high_watermark: int
    log_end_offset: int
    config: LogConfig
    producer_last_offsets: dict[int, int]


class Log:
    """One partition's log. Open with the constructor (loads and recovers the directory)."""

    def __init__(
        self,
        dir_path: str,
        config: LogConfig,
        *,
        topic: str,
        partition: int,
        recovery_point: int = 0,
        log_start_offset: int = 0,
        high_watermark: int = 0,
        clean_shutdown: bool = False,
        clock_ms: Clock = wall_clock_ms,
        segment_cache: OpenSegmentCache | None = None,
    ) -> None:
        """Load (or create) the log in ``dir_path``. ``segment_cache`` bounds how many of
        its closed segments hold files open (shared by the log manager's logs)."""
        self.dir_path = dir_path
        self._segment_cache = segment_cache
        self.topic = topic
        self.partition = partition
        self._config = config
        self._compact = config.compact  # read on every append: parsed once
        self._clock_ms = clock_ms
        self._lock = threading.RLock()
        self._closed = False
        loaded = load_log(
            dir_path,
            index_interval_bytes=config.index_interval_bytes,
            max_index_bytes=config.segment_index_bytes,
            recovery_point=recovery_point,
            log_start_offset=log_start_offset,
            now_ms=clock_ms(),
            clean_shutdown=clean_shutdown,
            cache=segment_cache,
        )
        self._segments: list[LogSegment] = loaded.segments
        self._bases: list[int] = [s.base_offset for s in self._segments]
        self._next_offset = loaded.next_offset
        self._recovery_point = loaded.recovery_point
        self._log_start_offset = loaded.log_start_offset
        self.truncated_on_load_bytes = loaded.truncated_bytes
        self.dropped_on_load_batches = loaded.dropped_batches
        self.rebuilt_indexes = tuple(loaded.rebuilt_indexes)
        self._last_flush_ms = clock_ms()
        self._roll_flush_pending = False
        self._dir_flush_pending = False
        # A directory created by this load is fsynced with the log's first flush of data
        # (an empty log lost in a crash is re-created from the metadata; see LogManager).
        self._new_dir_unsynced = loaded.created
        self._pending_deletes: list[tuple[int, LogSegment]] = []
        # Told the new log end offset after a truncation (the log manager moves the
        # cleaner's checkpoint back, so re-written offsets count as dirty again).
        self.truncation_listener: Callable[[int], None] | None = None
        self._high_watermark = self._log_start_offset
        self._hw_metadata: LogOffsetMetadata | None = None
        self.leader_epoch_cache = LeaderEpochFileCache(
            os.path.join(dir_path, LEADER_EPOCH_CHECKPOINT)
        )
        # Recovery may have cut a tail the cache still names.
        self.leader_epoch_cache.truncate_from_end(self._next_offset)
        self.producer_state = ProducerStateManager(dir_path)
        if self._log_start_offset > self._next_offset:
            # Everything on disk lies below the log start offset (deleted by DeleteRecords
            # before a tail was lost): start afresh at the log start offset.
            self.truncate_fully_and_start_at(self._log_start_offset)
        self._rebuild_producer_state_locked(clean_shutdown=clean_shutdown)
        self.update_high_watermark(high_watermark)

    # -- offsets and properties --------------------------------------------------------------

    @property
    def name(self) -> str:
        return f"{self.topic}-{self.partition}"

    @property
    def config(self) -> LogConfig:
        return self._config

    def update_config(self, config: LogConfig) -> None:
        """Apply changed topic configs (segment size, retention...) from now on."""
        with self._lock:
            self._config = config
            self._compact = config.compact

    @property
    def log_end_offset(self) -> int:
        return self._next_offset

    @property
    def log_start_offset(self) -> int:
        return self._log_start_offset

    @property
    def recovery_point(self) -> int:
        return self._recovery_point

    @property
    def high_watermark(self) -> int:
        return self._high_watermark

    @property
    def unflushed_messages(self) -> int:
        return self._next_offset - self._recovery_point

    @property
    def size_in_bytes(self) -> int:
        with self._lock:
            return sum(s.size_in_bytes for s in self._segments)

    @property
    def active_segment(self) -> LogSegment:
        return self._segments[-1]

    def segments(self) -> list[LogSegment]:
        """A snapshot of the segments, oldest first."""
        with self._lock:
            return list(self._segments)

    def _check_open(self) -> None:
        if self._closed:
            raise LogClosedError(f"log {self.name} is closed")

    # -- append ------------------------------------------------------------------------------

    def append(
        self,
        payload: Buffer,
        leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
        *,
        origin: AppendOrigin = AppendOrigin.CLIENT,
        validated: PayloadInfo | None = None,
    ) -> LogAppendInfo:
        """Append batches; ``origin`` says whose they are (Kafka's UnifiedLog.append).

        - CLIENT (a producer's batches on the leader): validate the payload (unless
          ``validated``, the result of :func:`validate_produce_payload` on these bytes), check
          idempotent producers' epochs and sequences (a retried batch is answered with its
          original offsets and not written), assign offsets from the LEO and stamp
          ``leader_epoch`` in place (``payload`` is copied first only if read-only).
        - REPLICATION (a follower appending what its leader sent): keep the leader's offsets
          and epochs; the first offset must be >= the LEO (gaps are allowed: the leader's log
          may be compacted) and offsets must increase, else :class:`InvalidAppendOffsetError`;
          producers' batches are recorded unchecked.

        Both then write through one path: producer state, leader epoch cache, segment roll,
        append, flush policy. Raises a :class:`StorageError` (or a record-format
        :class:`~common.errors.ApiError`) carrying the Kafka error code."""
        assign = origin is not AppendOrigin.REPLICATION
        if assign:
            info = validated or validate_produce_payload(
                payload, max_batch_bytes=self._config.max_message_bytes
            )
            if self._compact:
                # Only compacted topics pay for decoding keys; the delete path stays
                # header-only.
                check_keys_present(payload, info)
            headers = info.batches
            size = info.size_in_bytes
            buf = payload if _is_writable(payload) else bytearray(payload)
        else:
            headers = validate_stored_payload(payload)
            if not headers:
                raise InvalidRecordError("follower append of an empty payload")
            size = headers[-1].position + headers[-1].size_in_bytes - headers[0].position
            limit = max(self._config.max_message_bytes, self._config.segment_bytes)
            for h in headers:
                if h.size_in_bytes > limit:
                    raise RecordListTooLargeError(f"batch of {h.size_in_bytes} bytes too large")
            buf = payload
        with self._lock:
            self._check_open()
            if assign:
                first = self._next_offset
            else:
                first = headers[0].base_offset
                if first < self._next_offset:
                    raise InvalidAppendOffsetError(
                        f"{self.name}: follower append at offset {first} is below the log "
                        f"end offset {self._next_offset}"
                    )
            plan = self.producer_state.prepare_append(headers, first if assign else None, origin)
            if plan.duplicate is not None:
                dup = plan.duplicate
                return LogAppendInfo(
                    first_offset=dup.first_offset,
                    last_offset=dup.last_offset,
                    max_timestamp=dup.max_timestamp,
                    offset_of_max_timestamp=dup.last_offset,
                    log_append_time_ms=-1,
                    log_start_offset=self._log_start_offset,
                    valid_bytes=0,
                    record_count=0,
                    batch_count=0,
                    duplicate=True,
                )
            append_time = None
            if assign:
                append_time = self._clock_ms() if self._config.log_append_time else None
                assign_offsets(buf, info, first, leader_epoch, append_time)  # type: ignore[arg-type]
            placements = []
            offset = first
            max_ts, offset_of_max = -1, first
            base_position = headers[0].position
            for h in headers:
                last = offset + h.last_offset_delta if assign else h.last_offset
                ts = append_time if append_time is not None else h.max_timestamp
                placements.append(
                    BatchPlacement(h.position - base_position, h.size_in_bytes, last, ts)
                )
                if ts > max_ts:
                    max_ts, offset_of_max = ts, last
                offset = last + 1
            cache = self.leader_epoch_cache
            if assign:
                if leader_epoch > cache.latest_epoch:
                    cache.assign(leader_epoch, first)
            else:
                for h in headers:
                    if h.partition_leader_epoch > cache.latest_epoch:
                        cache.assign(h.partition_leader_epoch, h.base_offset)
            data = memoryview(buf)[base_position : base_position + size]
            try:
                self._append_locked(data, placements, first, offset - 1, size)
            finally:
                data.release()
            self.producer_state.apply(plan, offset)
            result = LogAppendInfo(
                first_offset=first,
                last_offset=offset - 1,
                max_timestamp=max_ts,
                offset_of_max_timestamp=offset_of_max,
                log_append_time_ms=append_time if append_time is not None else -1,
                log_start_offset=self._log_start_offset,
                valid_bytes=size,
                record_count=sum(h.records_count for h in headers),
                batch_count=len(headers),
            )
        self._flush_if_too_many_unflushed()
        return result

    def append_as_follower(self, payload: Buffer) -> LogAppendInfo:
        """:meth:`append` with origin REPLICATION (the replica fetcher's call)."""
        return self.append(payload, origin=AppendOrigin.REPLICATION)

    def _append_locked(
        self,
        data: Buffer,
        placements: list[BatchPlacement],
        first_offset: int,
        last_offset: int,
        size: int,
    ) -> None:
        cfg = self._config
        if size > cfg.segment_bytes:
            raise RecordListTooLargeError(
                f"{self.name}: append of {size} bytes exceeds segment.bytes={cfg.segment_bytes}"
            )
        seg = self._segments[-1]
        try:
            if seg.should_roll(
                append_bytes=size,
                append_batches=len(placements),
                max_offset=last_offset,
                segment_bytes=cfg.segment_bytes,
                segment_ms=cfg.segment_ms,
                now_ms=self._clock_ms(),
            ):
                seg = self._roll_locked(max(first_offset, self._next_offset))
            seg.append(data, placements)
        except OSError as e:
            # Nothing past the old end counts as written (the next append overwrites it and
            # recovery truncates it); the partition is reported with KAFKA_STORAGE_ERROR.
            raise KafkaStorageError(f"{self.name}: append to {seg.log.path} failed: {e}") from e
        self._next_offset = last_offset + 1

    def _flush_if_too_many_unflushed(self) -> None:
        if self.unflushed_messages >= self._config.flush_messages:
            # Indexes are derived data, checked on open and rebuilt if wrong; an index page
            # lost in a crash only lengthens scans. Syncing them per append would triple the
            # I/Os, so they are synced on roll, on close and by the periodic flush only.
            self.flush(indexes=False)

    # -- roll --------------------------------------------------------------------------------

    def roll(self) -> LogSegment:
        """Start a new active segment at the LEO (no-op if the active one is empty)."""
        with self._lock:
            self._check_open()
            return self._roll_locked(self._next_offset)

    def _roll_locked(self, new_base: int) -> LogSegment:
        old = self._segments[-1]
        if old.size_in_bytes == 0:
            if old.base_offset == new_base:
                return old
            # An empty active segment at the wrong base (follower append after a gap).
            self._remove_segments_locked([old], reason="replaced by roll")
        else:
            old.on_become_inactive()
            self._roll_flush_pending = True
            # The state covers every batch below new_base (this append is applied after).
            self._take_producer_snapshot_locked(new_base)
        seg = LogSegment(
            self.dir_path,
            new_base,
            index_interval_bytes=self._config.index_interval_bytes,
            max_index_bytes=self._config.segment_index_bytes,
            created_ms=self._clock_ms(),
            active=True,
            cache=self._segment_cache,
        )
        self._segments.append(seg)
        self._bases.append(new_base)
        self._dir_flush_pending = True
        logger.info("%s: rolled new segment at offset %d", self.name, new_base)
        return seg

    # -- producer state ----------------------------------------------------------------------

    def _take_producer_snapshot_locked(self, offset: int) -> None:
        ps = self.producer_state
        if not ps.producers and not ps.snapshot_offsets():
            # Never an idempotent producer here: no files (a clean open without a snapshot
            # then knows there is nothing to replay, as in Kafka).
            return
        try:
            self.producer_state.take_snapshot(offset)
        except OSError as e:
            # Not fatal: the next open replays the log from an older snapshot instead.
            logger.warning("%s: producer snapshot at %d not written: %s", self.name, offset, e)

    def _rebuild_producer_state_locked(self, *, clean_shutdown: bool = False) -> None:
        """Load the newest usable snapshot and replay batch headers from it to the LEO. After
        a clean shutdown without any snapshot the log never had an idempotent producer (close
        writes one otherwise), so the scan is skipped."""
        ps = self.producer_state
        if clean_shutdown and not ps.snapshot_offsets():
            ps.reset(self._next_offset)
            return
        start = ps.load(self._log_start_offset, self._next_offset)
        if start >= self._next_offset:
            return
        for i in range(max(bisect.bisect_right(self._bases, start) - 1, 0), len(self._segments)):
            seg = self._segments[i]
            if not seg.files_created or seg.size_in_bytes == 0:
                continue
            first = seg.translate_offset(start)
            if first is None:
                continue
            self.producer_state.replay(
                h
                for h in seg.log.batches_from(first.position, strict=False)
                if h.base_offset >= start and h.base_offset < self._next_offset
            )

    def remove_expired_producers(self, now_ms: int, producer_id_expiration_ms: int) -> int:
        """Forget idempotent producers silent for ``producer.id.expiration.ms``; return how
        many were forgotten (the broker calls this periodically)."""
        with self._lock:
            if self._closed:
                return 0
            self.producer_state.producer_id_expiration_ms = producer_id_expiration_ms
            return self.producer_state.remove_expired_producers(now_ms)

    # -- read --------------------------------------------------------------------------------

    def read(
        self,
        start_offset: int,
        max_bytes: int,
        *,
        isolation: FetchIsolation = FetchIsolation.LOG_END,
        max_offset: int | None = None,
        min_one_message: bool = True,
    ) -> FileSlice:
        """A file slice from the batch holding ``start_offset``, at most ``max_bytes`` long
        (except that the first batch is whole when ``min_one_message``), not going past the
        high watermark (``isolation=HIGH_WATERMARK``), the LEO, or ``max_offset`` when given.
        The slice may end inside a batch (clients expect that). An empty slice (length 0)
        means nothing to read yet.

        Raises :class:`OffsetOutOfRangeError` outside [log start offset, LEO] and
        :class:`CorruptRecordError` if a batch in the slice fails its CRC."""
        with self._lock:
            self._check_open()
            if start_offset < self._log_start_offset or start_offset > self._next_offset:
                raise OffsetOutOfRangeError(
                    f"{self.name}: offset {start_offset} is outside "
                    f"[{self._log_start_offset}, {self._next_offset}]"
                )
            if isolation is FetchIsolation.HIGH_WATERMARK:
                upper = self._hw_metadata_locked()
            else:
                upper = self._end_metadata_locked()
            if max_offset is not None and max_offset < upper.message_offset:
                upper = self._offset_metadata_locked(max(max_offset, self._log_start_offset))
            if start_offset >= upper.message_offset:
                return self._empty_slice_locked()
            segments = self._segments
            for i in range(
                max(bisect.bisect_right(self._bases, start_offset) - 1, 0), len(segments)
            ):
                seg = segments[i]
                if seg.base_offset > upper.segment_base_offset:
                    break
                max_position = (
                    upper.relative_position
                    if seg.base_offset == upper.segment_base_offset
                    else None
                )
                fs = seg.read(
                    start_offset,
                    max_bytes,
                    max_position=max_position,
                    min_one_message=min_one_message,
                )
                if fs is not None:
                    return fs
            return self._empty_slice_locked()

    def _empty_slice_locked(self) -> FileSlice:
        seg = self._segments[-1]
        # A new log's first segment has no file until its first append.
        file = seg.log.file if seg.files_created else None
        return FileSlice(file, seg.size_in_bytes, 0, seg.base_offset, -1)

    def offset_metadata(self, offset: int) -> LogOffsetMetadata:
        """Map ``offset`` to the segment and position of the batch holding it (the LEO maps to
        the end of the active segment). Use it to cap reads at an exact batch boundary."""
        with self._lock:
            self._check_open()
            return self._offset_metadata_locked(offset)

    def _end_metadata_locked(self) -> LogOffsetMetadata:
        seg = self._segments[-1]
        return LogOffsetMetadata(self._next_offset, seg.base_offset, seg.size_in_bytes)

    def _offset_metadata_locked(self, offset: int) -> LogOffsetMetadata:
        if offset == self._next_offset:
            return self._end_metadata_locked()
        if offset < self._log_start_offset or offset > self._next_offset:
            raise OffsetOutOfRangeError(
                f"{self.name}: offset {offset} is outside "
                f"[{self._log_start_offset}, {self._next_offset}]"
            )
        segments = self._segments
        for i in range(max(bisect.bisect_right(self._bases, offset) - 1, 0), len(segments)):
            seg = segments[i]
            header = seg.translate_offset(offset)
            if header is not None:
                return LogOffsetMetadata(offset, seg.base_offset, header.position)
        return self._end_metadata_locked()

    def _hw_metadata_locked(self) -> LogOffsetMetadata:
        md = self._hw_metadata
        if md is None or md.message_offset != self._high_watermark:
            md = self._offset_metadata_locked(self._high_watermark)
            self._hw_metadata = md
        return md

    def update_high_watermark(self, high_watermark: int) -> int:
        """Set the high watermark (clamped to [log start offset, LEO]); return the value set.
        Replication calls this; consumer reads are capped at it."""
        with self._lock:
            hw = min(max(high_watermark, self._log_start_offset), self._next_offset)
            if hw != self._high_watermark:
                self._high_watermark = hw
                self._hw_metadata = None
            return hw

    def find_offset_by_timestamp(self, timestamp: int) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record with timestamp >= ``timestamp`` (ListOffsets);
        None if every record is older. Decodes one batch; not for the fetch path."""
        with self._lock:
            self._check_open()
            for seg in self._segments:
                if seg.max_timestamp_so_far < timestamp:
                    continue
                found = seg.find_offset_by_timestamp(timestamp, self._log_start_offset)
                if found is not None:
                    return found
            return None

    # -- flush -------------------------------------------------------------------------------

    def flush(self, up_to_offset: int | None = None, *, indexes: bool = True) -> None:
        """fsync every segment holding offsets in [recovery point, ``up_to_offset``) (default:
        the LEO), with their indexes when ``indexes``, and advance the recovery point. The
        fsyncs run without the lock."""
        with self._lock:
            if self._closed:
                return
            target = (
                self._next_offset if up_to_offset is None else min(up_to_offset, self._next_offset)
            )
            if target <= self._recovery_point and not self._dir_flush_pending:
                return
            i = max(bisect.bisect_right(self._bases, self._recovery_point) - 1, 0)
            to_flush = [s for s in self._segments[i:] if s.base_offset < target]
            flush_dir = self._dir_flush_pending or (
                self._new_dir_unsynced and target > self._recovery_point
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
            with self._lock:
                self._dir_flush_pending = self._dir_flush_pending or flush_dir
            raise KafkaStorageError(f"{self.name}: fsync failed: {e}") from e
        with self._lock:
            self._recovery_point = max(self._recovery_point, target)
            self._last_flush_ms = self._clock_ms()
            self._roll_flush_pending = False

    def maybe_flush(self) -> bool:
        """Flush if the policy says so (a segment was rolled, ``flush.ms`` elapsed or
        ``flush.messages`` are unflushed); return whether it flushed."""
        with self._lock:
            if self._closed or (self.unflushed_messages <= 0 and not self._roll_flush_pending):
                return False
            due = (
                self._roll_flush_pending
                or self._clock_ms() - self._last_flush_ms >= self._config.flush_ms
                or self.unflushed_messages >= self._config.flush_messages
            )
            rolled_only = self._roll_flush_pending and not (
                self._clock_ms() - self._last_flush_ms >= self._config.flush_ms
            )
            up_to = self._segments[-1].base_offset if rolled_only else None
        if due:
            self.flush(up_to)
        return due

    # -- truncation --------------------------------------------------------------------------

    def truncate_to(self, target_offset: int) -> bool:
        """Remove every offset >= ``target_offset`` (a follower diverged from its leader);
        return whether anything was removed. A batch straddling the target goes whole."""
        if target_offset < 0:
            raise OffsetOutOfRangeError(f"cannot truncate {self.name} to {target_offset}")
        with self._lock:
            self._check_open()
            if target_offset >= self._next_offset:
                return False
            if target_offset < self._log_start_offset or target_offset < self._bases[0]:
                self.truncate_fully_and_start_at(target_offset)
                return True
            doomed = [s for s in self._segments if s.base_offset > target_offset]
            if doomed:
                self._remove_segments_locked(doomed, reason="truncation")
            seg = self._segments[-1]
            header = seg.translate_offset(target_offset)
            new_end = target_offset
            if header is not None and header.base_offset < target_offset:
                new_end = header.base_offset
            seg.truncate_to(target_offset)
            seg.make_active()
            self._next_offset = new_end
            self._recovery_point = min(self._recovery_point, new_end)
            if self._high_watermark > new_end:
                self._high_watermark = new_end
            self._hw_metadata = None
            self.leader_epoch_cache.truncate_from_end(new_end)
            ps = self.producer_state
            if ps.producers or ps.snapshot_offsets():
                self._rebuild_producer_state_locked()
            else:
                # No producer state to undo: skip a replay of the whole log.
                ps.reset(new_end)
            logger.info("%s: truncated to offset %d", self.name, new_end)
            if self.truncation_listener is not None:
                self.truncation_listener(new_end)
            return True

    def truncate_fully_and_start_at(self, new_offset: int) -> None:
        """Drop every segment and start an empty log at ``new_offset`` (a follower far
        behind a leader whose log start offset moved past it)."""
        if new_offset < 0:
            raise OffsetOutOfRangeError(f"cannot start {self.name} at {new_offset}")
        with self._lock:
            self._check_open()
            self._remove_segments_locked(list(self._segments), reason="truncate fully")
            seg = LogSegment(
                self.dir_path,
                new_offset,
                index_interval_bytes=self._config.index_interval_bytes,
                max_index_bytes=self._config.segment_index_bytes,
                created_ms=self._clock_ms(),
                active=True,
                cache=self._segment_cache,
            )
            self._segments = [seg]
            self._bases = [new_offset]
            self._next_offset = new_offset
            self._log_start_offset = new_offset
            self._recovery_point = new_offset
            self._high_watermark = new_offset
            self._hw_metadata = None
            self._dir_flush_pending = True
            self.leader_epoch_cache.clear()
            self.producer_state.reset(new_offset)
            logger.info("%s: truncated fully, now starts at offset %d", self.name, new_offset)
            if self.truncation_listener is not None:
                self.truncation_listener(new_offset)

    # -- retention ---------------------------------------------------------------------------

    def maybe_increment_log_start_offset(self, new_offset: int) -> bool:
        """Move the log start offset up (DeleteRecords; must not pass the high watermark);
        whole segments below it are deleted by the next :meth:`delete_old_segments`."""
        with self._lock:
            self._check_open()
            if new_offset > self._high_watermark:
                raise OffsetOutOfRangeError(
                    f"{self.name}: log start offset {new_offset} beyond the high watermark "
                    f"{self._high_watermark}"
                )
            if new_offset <= self._log_start_offset:
                return False
            self._log_start_offset = new_offset
            self.leader_epoch_cache.truncate_from_start(new_offset)
            self.producer_state.truncate_head(new_offset)
            return True

    def delete_old_segments(self) -> int:
        """Apply retention (time, size, log start offset); return segments deleted."""
        with self._lock:
            if self._closed:
                return 0
            cfg = self._config
            decision = deletable_segments(
                self._segments,
                now_ms=self._clock_ms(),
                retention_ms=cfg.retention_ms,
                retention_bytes=cfg.retention_bytes,
                log_start_offset=self._log_start_offset,
                high_watermark=self._high_watermark,
                delete_policy=cfg.deletes_by_retention,
            )
            if decision.count == 0:
                return 0
            doomed = self._segments[: decision.count]
            self._remove_segments_locked(doomed, reason=f"retention by {decision.reason}")
            self._log_start_offset = max(self._log_start_offset, self._segments[0].base_offset)
            self._recovery_point = max(self._recovery_point, self._segments[0].base_offset)
            self.leader_epoch_cache.truncate_from_start(self._log_start_offset)
            self.producer_state.truncate_head(self._log_start_offset)
            return decision.count

    # -- log cleaner -------------------------------------------------------------------------

    def cleaning_snapshot(self) -> CleaningSnapshot:
        """What the log cleaner plans a cleaning from (taken under the lock, used without)."""
        with self._lock:
            self._check_open()
            return CleaningSnapshot(
                segments=tuple(self._segments),
                sizes=tuple(s.size_in_bytes for s in self._segments),
                log_start_offset=self._log_start_offset,
                high_watermark=self._high_watermark,
                log_end_offset=self._next_offset,
                config=self._config,
                producer_last_offsets={
                    pid: e.last_data_offset for pid, e in self.producer_state.producers.items()
                },
            )

    def new_cleaned_segment(self, base_offset: int) -> LogSegment:
        """A new segment whose files are ``<base>.log.cleaned`` etc. for the cleaner to write
        (not part of the log until :meth:`replace_segments`). Leftover ``.cleaned`` files
        of that base (a cleaning that could not delete its own) are removed first."""
        for suffix in (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX):
            path = os.path.join(self.dir_path, segment_file_name(base_offset, suffix))
            try:
                os.unlink(path + CLEANED_SUFFIX)
            except FileNotFoundError:
                pass
        return LogSegment(
            self.dir_path,
            base_offset,
            index_interval_bytes=self._config.index_interval_bytes,
            max_index_bytes=self._config.segment_index_bytes,
            created_ms=self._clock_ms(),
            active=True,
            cache=self._segment_cache,
            file_suffix=CLEANED_SUFFIX,
        )

    def replace_segments(
        self, cleaned: LogSegment, sources: list[LogSegment], source_sizes: list[int]
    ) -> bool:
        """Swap the cleaner's ``cleaned`` segment (closed, flushed, files ``*.cleaned``) in
        for ``sources``, contiguous closed segments of sizes ``source_sizes``; return False
        and change nothing when they are no longer exactly in the log (retention, truncation
        or deletion got there first: the caller discards ``cleaned``).

        On disk, as Kafka does: the cleaned files are renamed ``.cleaned`` -> ``.swap``
        (directory fsynced: from here recovery completes the swap), the sources renamed
        ``.deleted`` (unlinked ``file.delete.delay.ms`` later; slices handed out stay
        readable), the swap files renamed to their final names (directory fsynced). The lock
        is held for these renames only. An I/O error raises :class:`KafkaStorageError`; the
        in-memory log then keeps serving the sources from their open descriptors and the
        next start finishes or discards the swap (log_loader.py)."""
        with self._lock:
            if self._closed or not sources:
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
                due = self._clock_ms() + self._config.file_delete_delay_ms
                for seg in sources:
                    seg.rename_to_deleted()
                    self._pending_deletes.append((due, seg))
                cleaned.change_file_suffix(SWAP_SUFFIX, "")
                fsync_directory(self.dir_path)
            except OSError as e:
                raise KafkaStorageError(
                    f"{self.name}: swapping in the cleaned segment {cleaned.base_offset} "
                    f"failed: {e}"
                ) from e
            self._segments[i : i + len(sources)] = [cleaned]
            self._bases = [s.base_offset for s in self._segments]
            self._hw_metadata = None
            logger.info(
                "%s: cleaned segments %s into one of %d bytes (was %d)",
                self.name,
                [s.base_offset for s in sources],
                cleaned.size_in_bytes,
                sum(source_sizes),
            )
            return True

    def _remove_segments_locked(self, doomed: list[LogSegment], *, reason: str) -> None:
        doomed_ids = {id(s) for s in doomed}
        self._segments = [s for s in self._segments if id(s) not in doomed_ids]
        self._bases = [s.base_offset for s in self._segments]
        due = self._clock_ms() + self._config.file_delete_delay_ms
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
        self._hw_metadata = None

    def delete_pending_files(self, *, force: bool = False) -> int:
        """Unlink ``.deleted`` segments whose delay has passed (all when ``force``)."""
        with self._lock:
            now = self._clock_ms()
            ready = [s for due, s in self._pending_deletes if force or due <= now]
            self._pending_deletes = [
                (due, s) for due, s in self._pending_deletes if not (force or due <= now)
            ]
        for seg in ready:
            seg.delete_files()
        return len(ready)

    # -- lifecycle ---------------------------------------------------------------------------

    def close(self) -> None:
        """Flush, write the final time index entries, trim indexes and close every file."""
        if self._closed:
            return
        self.flush()
        with self._lock:
            if self._next_offset > self._log_start_offset:
                # A clean restart then loads this and replays nothing.
                self._take_producer_snapshot_locked(self._next_offset)
            self._closed = True
            for seg in self._segments:
                seg.close()
        self.delete_pending_files(force=True)

    def close_and_delete_dir(self, renamed_dir: str) -> None:
        """Close, rename the directory to ``renamed_dir`` (a ``-delete`` name) and remove it."""
        with self._lock:
            self._closed = True
            for seg in self._segments:
                seg.close()
        self.delete_pending_files(force=True)
        os.replace(self.dir_path, renamed_dir)
        fsync_directory(os.path.dirname(renamed_dir) or ".")
        shutil.rmtree(renamed_dir, ignore_errors=True)

    def __repr__(self) -> str:
        return (
            f"Log({self.name}, start={self._log_start_offset}, hw={self._high_watermark}, "
            f"end={self._next_offset}, segments={len(self._segments)})"
        )


def _is_writable(buf: Buffer) -> bool:
    if isinstance(buf, bytearray):
        return True
    if isinstance(buf, memoryview):
        return not buf.readonly
    return False
