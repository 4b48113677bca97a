"""Log: one partition's replica (Kafka's UnifiedLog). It owns what the segment files alone do
not say — the log start offset, the high watermark, the :class:`ProducerStateManager`
(idempotent producers' last batches and open transactions, ``<offset>.snapshot`` files) and
the :class:`LeaderEpochFileCache` (``leader-epoch-checkpoint``) — and validates appends; the
segments, their files, reads over them, flushes and pending deletes are its
:class:`~data_plane.storage.local_log.LocalLog`. Offsets::

    log start offset  <=  last stable offset  <=  high watermark  <=  log end offset (LEO)
    recovery point    <=  LEO: everything below it is fsynced

The last stable offset (LSO) is the high watermark, or the first offset of the oldest
transaction not yet decided below it, if lower: a read_committed consumer reads up to it.

- :meth:`append` is one path for the leader's and the follower's appends, keyed by
  :class:`AppendOrigin` as Kafka's UnifiedLog does: a producer payload (CLIENT) is validated
  by header and CRC only, idempotent producers' epochs and sequences are checked (a retried
  batch is answered with its original offsets, ``LogAppendInfo.duplicate``, and not written)
  and offsets are assigned in place; a leader's batches (REPLICATION) keep their offsets,
  which may not go backwards, and their producers' batches are recorded unchecked, so a
  follower that becomes leader answers retries as the old leader would.
- Producer state is always up to date with the log end offset: loaded from the newest
  snapshot and rebuilt by replaying batch headers on open (producer_state_rebuild.py),
  snapshotted at every roll and on close, reloaded the same way after a truncation, and
  cleared with the log. The leader epoch cache and producer state are cut with every
  truncation and every move of the log start offset.
- Transactions: an end marker (a control batch the leader writes for the transaction
  coordinator, :meth:`append_end_txn_marker`, origin COORDINATOR) closes a producer's open
  transaction; an ABORT adds an entry to the active segment's transaction index, so a
  read_committed Fetch can hand consumers the aborted transactions overlapping what it
  returns (:meth:`collect_aborted_transactions`). Replaying the log rebuilds those entries.
- :meth:`read` returns a :class:`FileSlice` for ``os.sendfile``, capped at the LSO
  (read_committed consumers), the high watermark (read_uncommitted consumers) or the LEO
  (followers) on an exact batch boundary. A batch in the slice that
  fails its CRC raises :class:`CorruptRecordError` (each byte range is checked once per
  process; data appended or recovered here was checked already).
- Retention (:meth:`delete_old_segments`: time, size, log start offset) never passes the high
  watermark.
- The log cleaner (compaction/) plans from :meth:`cleaning_snapshot`, writes a new segment
  from :meth:`new_cleaned_segment` without the lock, and swaps it in with
  :meth:`replace_segments`, which refuses if the sources changed meanwhile.
- A compacted log (``cleanup.policy`` with ``compact``) refuses a produced record without a
  key (INVALID_RECORD); only such logs decode keys on append.

Thread-safety: appends, reads and truncations come from one owner thread (the broker's event
loop). :meth:`flush`, :meth:`maybe_flush`, :meth:`delete_old_segments` and
:meth:`delete_pending_files` may run concurrently on a background thread, and the cleaner's
methods on a log cleaner thread. Every access to segments and offsets holds the local log's
``lock`` (an RLock, the one lock of this log); fsync runs outside it so appends are never
blocked behind the disk. All public methods are safe to call from any thread.
"""

from __future__ import annotations

import enum
import functools
import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Concatenate, NoReturn, ParamSpec, TypeGuard, TypeVar

from common.errors import InvalidRecordError
from common.log_config import LogConfig
from common.record_batch import (
    NO_PARTITION_LEADER_EPOCH,
    Buffer,
    PayloadInfo,
    RecordBatchHeader,
    assign_offsets,
    validate_produce_payload,
    validate_stored_payload,
)
from common.record_timestamps import fill_unset_max_timestamps
from data_plane.storage.errors import (
    InvalidAppendOffsetError,
    KafkaStorageError,
    LogClosedError,
    OffsetOutOfRangeError,
    RecordListTooLargeError,
)
from data_plane.storage.file_records import FileSlice
from data_plane.storage.leader_epoch_cache import LEADER_EPOCH_CHECKPOINT, LeaderEpochFileCache
from data_plane.storage.local_log import LocalLog, LogOffsetMetadata
from data_plane.storage.log_loader import load_log
from data_plane.storage.producer_state import (
    AppendOrigin,
    AppendPlan,
    BatchMetadata,
    MarkerReader,
    ProducerStateEntry,
    ProducerStateManager,
    VerificationGuard,
)
from data_plane.storage.producer_state_rebuild import (
    index_aborted,
    rebuild_producer_state,
    take_producer_snapshot,
)
from data_plane.storage.record_codec import build_end_txn_marker, read_end_txn_marker
from data_plane.storage.record_filter import check_keys_present
from data_plane.storage.retention import deletable_segments
from data_plane.storage.segment import BatchPlacement, LogSegment
from data_plane.storage.segment_cache import OpenSegmentCache
from data_plane.storage.transaction_index import AbortedTxn

__all__ = [
    "AbortedTxn",
    "CleaningSnapshot",
    "Clock",
    "FetchIsolation",
    "Log",
    "LogAppendInfo",
    "LogOffsetMetadata",
    "wall_clock_ms",
]

logger = logging.getLogger(__name__)

Clock = Callable[[], int]


def wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


class FetchIsolation(enum.Enum):
    """How far a read may go: followers read to the LEO, read_uncommitted consumers to the
    high watermark, read_committed consumers to the last stable offset."""

    LOG_END = "log_end"
    HIGH_WATERMARK = "high_watermark"
    TXN_COMMITTED = "txn_committed"


_P = ParamSpec("_P")
_R = TypeVar("_R")


def _reports_io_errors(
    method: Callable[Concatenate[Log, _P], _R],
) -> Callable[Concatenate[Log, _P], _R]:
    """A Log method whose I/O errors take the log's directory offline (see
    :meth:`Log._raise_storage_failure`). For the maintenance and replication methods; the hot
    ``append`` and ``read`` catch inline instead (a try block costs nothing until it raises,
    this wrapper costs a call)."""

    @functools.wraps(method)
    def checked(log: Log, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return method(log, *args, **kwargs)
        except (OSError, KafkaStorageError) as e:
            log._raise_storage_failure(e)

    return checked


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
    their sizes then, offsets, config, each idempotent producer's last offset (its last
    batch is kept, emptied if need be, for sequence continuity, as Kafka does) and the
    aborted transactions of the closed segments (their batches are removed; nothing at or
    above the last stable offset is cleaned)."""

    segments: tuple[LogSegment, ...]
    sizes: tuple[int, ...]
    log_start_offset: int
    high_watermark: int
    last_stable_offset: int
    log_end_offset: int
    config: LogConfig
    producer_last_offsets: dict[int, int]
    aborted_transactions: tuple[AbortedTxn, ...] = ()


class Log:
    """One partition's log (Kafka's UnifiedLog). Open with the constructor (loads and
    recovers the directory). Offsets, origins and thread-safety: see the module docstring.

    Longer than the 600 lines the house style aims at, for a reason: this class is the
    state that must change together under the log's one lock, and nothing else — the log
    start offset, high watermark and last stable offset with their cached batch positions,
    the producer state and the leader epoch cache, moved together by the appends, truncation,
    retention and the cleaner's swap. The leader's and the follower's appends are written out
    in full because they are the produce and replica-fetch hot paths. What needs none of that
    state lives beside it: segments, files, reads and flushes in :class:`LocalLog`, opening
    and recovery in log_loader.py, the producer-state replay in producer_state_rebuild.py,
    retention decisions in retention.py, the epoch file in leader_epoch_cache.py. Cutting
    further would hand that state between classes on every append."""

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
        self.topic = topic
        self.partition = partition
        self._config = config
        self._compact = config.compact  # read on every append: parsed once
        self._clock_ms = clock_ms
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
        self._local = LocalLog(
            dir_path,
            config,
            name=self.name,
            segments=loaded.segments,
            next_offset=loaded.next_offset,
            recovery_point=loaded.recovery_point,
            dir_created=loaded.created,
            clock_ms=clock_ms,
            segment_cache=segment_cache,
        )
        self._lock = self._local.lock
        self._log_start_offset = loaded.log_start_offset
        self.truncated_on_load_bytes = loaded.truncated_bytes
        self.dropped_on_load_batches = loaded.dropped_batches
        self.rebuilt_indexes = tuple(loaded.rebuilt_indexes)
        # Told the new log end offset after a truncation (the log manager moves the
        # cleaner's checkpoint back, so re-written offsets count as dirty again).
        self.truncation_listener: Callable[[int], None] | None = None
        # Told of an I/O error met by a public method (the log manager takes the log's
        # directory offline: log_dir_failure.py).
        self.io_error_listener: Callable[[str], object] | None = None
        self._high_watermark = self._log_start_offset
        self._hw_metadata: LogOffsetMetadata | None = None
        self._lso_metadata: LogOffsetMetadata | None = None
        self.leader_epoch_cache = LeaderEpochFileCache(
            os.path.join(dir_path, LEADER_EPOCH_CHECKPOINT)
        )
        # Recovery may have cut a tail the cache still names (and an empty log always drops
        # the epoch it was last assigned at offset 0). The file is written before the log
        # grows (append), not here: a stale one is harmless until then.
        self.leader_epoch_cache.truncate_from_end(self._local.next_offset, write=False)
        self.producer_state = ProducerStateManager(dir_path)
        if self._log_start_offset > self._local.next_offset:
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
            self._local.config = config
            self._compact = config.compact

    @property
    def log_end_offset(self) -> int:
        return self._local.next_offset

    def start_txn_verification(self, producer_id: int) -> VerificationGuard | None:
        """A guard to append ``producer_id``'s first transactional batch with once its
        coordinator confirmed the partition is in the transaction; None when the producer has
        a transaction open here (nothing to verify). See producer_state.py."""
        with self._lock:
            return self.producer_state.start_verification(producer_id)

    def end_txn_verification(self, guard: VerificationGuard) -> None:
        """The verification failed: drop its guard."""
        with self._lock:
            self.producer_state.end_verification(guard)

    def active_producers(self) -> list[ProducerStateEntry]:
        """A copy of every producer's state on this partition (DescribeProducers)."""
        with self._lock:
            return [e.copy() for e in self.producer_state.producers.values()]

    @property
    def log_start_offset(self) -> int:
        return self._log_start_offset

    @property
    def recovery_point(self) -> int:
        return self._local.recovery_point

    @property
    def high_watermark(self) -> int:
        return self._high_watermark

    @property
    def unflushed_messages(self) -> int:
        return self._local.unflushed_messages

    @property
    def size_in_bytes(self) -> int:
        return self._local.size_in_bytes

    @property
    def active_segment(self) -> LogSegment:
        return self._local.active_segment

    def segments(self) -> list[LogSegment]:
        """A snapshot of the segments, oldest first."""
        with self._lock:
            return list(self._local.segments)

    # -- append ------------------------------------------------------------------------------

    def append(
        self,
        payload: Buffer,
        leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
        *,
        origin: AppendOrigin = AppendOrigin.CLIENT,
        validated: PayloadInfo | None = None,
        verify_transactions: bool = False,
        verification: VerificationGuard | None = None,
    ) -> LogAppendInfo:
        """Append batches; ``origin`` says whose they are (Kafka's UnifiedLog.append).
        ``verify_transactions``: a client batch opening a transaction needs ``verification``,
        the guard of a successful verification (:meth:`start_txn_verification`).

        - CLIENT (a producer's batches on the leader): validate the payload (unless
          ``validated``, the result of :func:`validate_produce_payload` on these bytes), check
          idempotent producers' epochs and sequences (a retried batch is answered with its
          original offsets and not written), assign offsets from the LEO and stamp
          ``leader_epoch`` in place (``payload`` is copied first only if read-only).
        - COORDINATOR (end markers written on the leader for the transaction coordinator):
          as CLIENT, with control batches allowed and checked against the producer's epoch
          and the coordinator epoch of its last marker.
        - REPLICATION (a follower appending what its leader sent, :meth:`_append_replicated`):
          keep the leader's offsets and epochs; the first offset must be >= the LEO (gaps are
          allowed: the leader's log may be compacted) and offsets must increase, else
          :class:`InvalidAppendOffsetError`; producers' batches are recorded unchecked.

        Both then write through one path (:meth:`_write_locked`): producer state, leader
        epoch cache, segment roll, append, flush policy. Raises a :class:`StorageError` (or a
        record-format :class:`~common.errors.ApiError`) carrying the Kafka error code.

        The leader's path is the produce hot path: it is written out here, without a
        branch on ``origin`` after the first line or a helper call per batch."""
        if origin is AppendOrigin.REPLICATION:
            return self._append_replicated(payload)
        info = validated or validate_produce_payload(
            payload,
            max_batch_bytes=self._config.max_message_bytes,
            allow_control=origin is AppendOrigin.COORDINATOR,
        )
        if self._compact:
            # Only compacted topics pay for decoding keys; the delete path stays header-only.
            check_keys_present(payload, info)
        buf = payload if _is_writable(payload) else bytearray(payload)
        # A producer that leaves maxTimestamp unset (Sarama): computed from the records, only
        # for such batches (``info`` itself when there are none).
        info = fill_unset_max_timestamps(buf, info)
        headers = info.batches
        local = self._local
        try:
            with self._lock:
                local.check_open()
                first = local.next_offset
                plan = self.producer_state.prepare_append(
                    headers,
                    first,
                    origin,
                    # A producer's payload holds no control batch (validation refused it): no
                    # marker reader on the produce path.
                    None if origin is AppendOrigin.CLIENT else _payload_marker_reader(buf),
                    verify_transactions=verify_transactions,
                    verification=verification,
                )
                if plan.duplicate is not None:
                    return _duplicate_append_info(plan.duplicate, self._log_start_offset)
                append_time = self._clock_ms() if self._config.log_append_time else None
                assign_offsets(buf, info, first, leader_epoch, append_time)
                placements = []
                offset = first
                max_ts, offset_of_max = -1, first
                base_position = headers[0].position
                for h in headers:
                    last = offset + h.last_offset_delta
                    ts = append_time if append_time is not None else h.max_timestamp
                    placements.append(
                        BatchPlacement(h.position - base_position, h.size_in_bytes, last, ts)
                    )
                    if ts > max_ts:
                        max_ts, offset_of_max = ts, last
                    offset = last + 1
                cache = self.leader_epoch_cache
                if cache.stale:
                    # Before the log grows: a stale file could name an epoch for records
                    # appended from here on.
                    cache.write_pending()
                if leader_epoch > cache.latest_epoch:
                    cache.assign(leader_epoch, first)
                size = info.size_in_bytes
                self._write_locked(buf, base_position, size, placements, first, offset - 1, plan)
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
            local.flush_if_too_many_unflushed()
        except (OSError, KafkaStorageError) as e:
            self._raise_storage_failure(e)
        return result

    def _append_replicated(self, payload: Buffer) -> LogAppendInfo:
        """:meth:`append` with origin REPLICATION: the batches keep the leader's offsets and
        leader epochs."""
        cfg = self._config
        headers, size = _validate_replicated(payload, max(cfg.max_message_bytes, cfg.segment_bytes))
        local = self._local
        try:
            with self._lock:
                local.check_open()
                first = headers[0].base_offset
                if first < local.next_offset:
                    raise InvalidAppendOffsetError(
                        f"{self.name}: follower append at offset {first} is below the log "
                        f"end offset {local.next_offset}"
                    )
                # Unchecked: never a duplicate (only a client's retry is one).
                plan = self.producer_state.prepare_append(
                    headers, None, AppendOrigin.REPLICATION, _payload_marker_reader(payload)
                )
                placements = []
                max_ts, offset_of_max = -1, first
                base_position = headers[0].position
                cache = self.leader_epoch_cache
                if cache.stale:
                    cache.write_pending()  # before the log grows, as in append
                for h in headers:
                    last = h.last_offset
                    placements.append(
                        BatchPlacement(
                            h.position - base_position, h.size_in_bytes, last, h.max_timestamp
                        )
                    )
                    if h.max_timestamp > max_ts:
                        max_ts, offset_of_max = h.max_timestamp, last
                    if h.partition_leader_epoch > cache.latest_epoch:
                        cache.assign(h.partition_leader_epoch, h.base_offset)
                last = headers[-1].last_offset
                self._write_locked(payload, base_position, size, placements, first, last, plan)
                result = LogAppendInfo(
                    first_offset=first,
                    last_offset=last,
                    max_timestamp=max_ts,
                    offset_of_max_timestamp=offset_of_max,
                    log_append_time_ms=-1,
                    log_start_offset=self._log_start_offset,
                    valid_bytes=size,
                    record_count=sum(h.records_count for h in headers),
                    batch_count=len(headers),
                )
            local.flush_if_too_many_unflushed()
        except (OSError, KafkaStorageError) as e:
            self._raise_storage_failure(e)
        return result

    def _write_locked(
        self,
        buf: Buffer,
        base_position: int,
        size: int,
        placements: list[BatchPlacement],
        first: int,
        last: int,
        plan: AppendPlan,
    ) -> None:
        """Write the ``size`` bytes at ``base_position`` of ``buf`` (batches holding offsets
        ``first`` to ``last``, placed by ``placements``) to the active segment, rolling first
        if the policy says so, then install ``plan`` in the producer state and index the
        transactions its markers aborted. The epoch cache already names the batches'
        epochs."""
        local = self._local
        if local.should_roll_locked(size, len(placements), last):
            self._roll_locked(max(first, local.next_offset))
        data = memoryview(buf)[base_position : base_position + size]
        try:
            local.append_locked(data, placements, last)
        finally:
            data.release()
        completed = self.producer_state.apply(plan, last + 1)
        if completed:
            index_aborted(local.active_segment, completed)
            self._lso_metadata = None

    def append_as_follower(self, payload: Buffer) -> LogAppendInfo:
        """:meth:`append` with origin REPLICATION (the replica fetcher's call)."""
        return self.append(payload, origin=AppendOrigin.REPLICATION)

    def append_end_txn_marker(
        self,
        *,
        producer_id: int,
        producer_epoch: int,
        coordinator_epoch: int,
        committed: bool,
        leader_epoch: int,
    ) -> LogAppendInfo:
        """Write a COMMIT or ABORT marker for ``producer_id``'s transaction (the leader's part
        of WriteTxnMarkers). Raises :class:`InvalidProducerEpochError` for an epoch older
        than the producer's and :class:`TransactionCoordinatorFencedError` for a coordinator
        epoch older than the last marker's."""
        batch = build_end_txn_marker(
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            coordinator_epoch=coordinator_epoch,
            committed=committed,
            timestamp_ms=self._clock_ms(),
        )
        return self.append(batch, leader_epoch, origin=AppendOrigin.COORDINATOR)

    # -- roll --------------------------------------------------------------------------------

    @_reports_io_errors
    def roll(self) -> LogSegment:
        """Start a new active segment at the LEO (no-op if the active one is empty)."""
        with self._lock:
            self._local.check_open()
            return self._roll_locked(self._local.next_offset)

    def _roll_locked(self, new_base: int) -> LogSegment:
        if self._local.active_segment.size_in_bytes > 0:
            # The state covers every batch below new_base (an append in progress is applied
            # after the roll), so a restart replays from the new segment only.
            self._take_producer_snapshot_locked(new_base)
        try:
            return self._local.roll_locked(new_base)
        except OSError as e:
            raise KafkaStorageError(f"{self.name}: roll to offset {new_base} failed: {e}") from e

    # -- producer state ----------------------------------------------------------------------

    def _take_producer_snapshot_locked(self, offset: int) -> None:
        take_producer_snapshot(self.producer_state, offset, self.name)

    def _rebuild_producer_state_locked(self, *, clean_shutdown: bool = False) -> None:
        """See producer_state_rebuild.py; aborted transactions indexed again move the LSO."""
        self._lso_metadata = None
        rebuild_producer_state(
            self.producer_state,
            self._local,
            log_start_offset=self._log_start_offset,
            high_watermark=self._high_watermark,
            clean_shutdown=clean_shutdown,
        )

    def remove_expired_producers(self, now_ms: int, producer_id_expiration_ms: int) -> int:
        """Forget idempotent producers silent for ``producer.id.expiration.ms``; return how
        many were forgotten (the broker calls this periodically)."""
        with self._lock:
            if self._local.closed:
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
        last stable offset (``TXN_COMMITTED``), the high watermark (``HIGH_WATERMARK``), the
        LEO, or ``max_offset`` when given.
        The slice may end inside a batch (clients expect that). An empty slice (length 0)
        means nothing to read yet.

        Raises :class:`OffsetOutOfRangeError` outside [log start offset, LEO] and
        :class:`CorruptRecordError` if a batch in the slice fails its CRC."""
        local = self._local
        try:
            with self._lock:
                local.check_open()
                self._check_in_range(start_offset)
                if isolation is FetchIsolation.HIGH_WATERMARK:
                    upper = self._hw_metadata_locked()
                elif isolation is FetchIsolation.TXN_COMMITTED:
                    upper = self._lso_metadata_locked()
                else:
                    upper = local.end_metadata_locked()
                if max_offset is not None and max_offset < upper.message_offset:
                    upper = local.offset_metadata_locked(max(max_offset, self._log_start_offset))
                return local.read_locked(
                    start_offset, max_bytes, upper, min_one_message=min_one_message
                )
        except (OSError, KafkaStorageError) as e:
            self._raise_storage_failure(e)

    def _check_in_range(self, offset: int) -> None:
        if offset < self._log_start_offset or offset > self._local.next_offset:
            raise OffsetOutOfRangeError(
                f"{self.name}: offset {offset} is outside "
                f"[{self._log_start_offset}, {self._local.next_offset}]"
            )

    def offset_metadata(self, offset: int) -> LogOffsetMetadata:
        """Map ``offset`` to the segment and position of the batch holding it (the LEO maps to
        the end of the active segment). Use it to cap reads at an exact batch boundary."""
        with self._lock:
            self._local.check_open()
            self._check_in_range(offset)
            return self._local.offset_metadata_locked(offset)

    def _hw_metadata_locked(self) -> LogOffsetMetadata:
        md = self._hw_metadata
        if md is None or md.message_offset != self._high_watermark:
            md = self._local.offset_metadata_locked(self._high_watermark)
            self._hw_metadata = md
        return md

    def update_high_watermark(self, high_watermark: int) -> int:
        """Set the high watermark (clamped to [log start offset, LEO]); return the value set.
        Replication calls this; consumer reads are capped at it (and at the last stable
        offset, which it may move)."""
        with self._lock:
            hw = min(max(high_watermark, self._log_start_offset), self._local.next_offset)
            if hw != self._high_watermark:
                self._high_watermark = hw
                self._hw_metadata = None
                self._lso_metadata = None
                self.producer_state.on_high_watermark_updated(hw)
            return hw

    @property
    def last_stable_offset(self) -> int:
        """The high watermark, or the first offset of the oldest transaction still undecided
        (open, or whose marker is not yet below the high watermark) if that is lower."""
        with self._lock:
            return self._last_stable_offset_locked()

    def _last_stable_offset_locked(self) -> int:
        hw = self._high_watermark
        first_unstable = self.producer_state.first_unstable_offset()
        if first_unstable is None or first_unstable >= hw:
            return hw
        return max(first_unstable, self._log_start_offset)

    def _lso_metadata_locked(self) -> LogOffsetMetadata:
        lso = self._last_stable_offset_locked()
        md = self._lso_metadata
        if md is None or md.message_offset != lso:
            md = self._local.offset_metadata_locked(lso)
            self._lso_metadata = md
        return md

    def collect_aborted_transactions(
        self, start_offset: int, fetched: FileSlice
    ) -> list[AbortedTxn]:
        """The aborted transactions a read_committed consumer needs for ``fetched`` (a slice
        :meth:`read` returned from ``start_offset``): see
        :meth:`LocalLog.collect_aborted_transactions_locked`."""
        if fetched.length == 0:
            return []
        with self._lock:
            return self._local.collect_aborted_transactions_locked(start_offset, fetched)

    def find_max_timestamp(self) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record with the largest timestamp in the log
        (ListOffsets MAX_TIMESTAMP, KIP-734); None for a log without timestamped records.
        Decodes one batch; not for the fetch path."""
        with self._lock:
            self._local.check_open()
            best = self._local.max_timestamp_locked()
        if best is None:
            return None
        return self.find_offset_by_timestamp(best)

    def find_offset_by_timestamp(self, timestamp: int) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record with timestamp >= ``timestamp`` (ListOffsets);
        None if every record is older. Decodes one batch; not for the fetch path."""
        with self._lock:
            self._local.check_open()
            return self._local.find_offset_by_timestamp_locked(timestamp, self._log_start_offset)

    # -- flush -------------------------------------------------------------------------------

    @_reports_io_errors
    def flush(self, up_to_offset: int | None = None, *, indexes: bool = True) -> None:
        """fsync every segment holding offsets in [recovery point, ``up_to_offset``) (default:
        the LEO), with their indexes when ``indexes``, and advance the recovery point. The
        fsyncs run without the lock."""
        self._local.flush(up_to_offset, indexes=indexes)

    @_reports_io_errors
    def maybe_flush(self) -> bool:
        """Flush if the policy says so (a segment was rolled, ``flush.ms`` elapsed or
        ``flush.messages`` are unflushed); return whether it flushed."""
        return self._local.maybe_flush()

    # -- truncation --------------------------------------------------------------------------

    @_reports_io_errors
    def truncate_to(self, target_offset: int) -> bool:
        """Remove every offset >= ``target_offset`` (a follower diverged from its leader);
        return whether anything was removed. A batch straddling the target goes whole."""
        if target_offset < 0:
            raise OffsetOutOfRangeError(f"cannot truncate {self.name} to {target_offset}")
        local = self._local
        with self._lock:
            local.check_open()
            if target_offset >= local.next_offset:
                return False
            if (
                target_offset < self._log_start_offset
                or target_offset < local.segments[0].base_offset
            ):
                self.truncate_fully_and_start_at(target_offset)
                return True
            new_end = local.truncate_to_locked(target_offset)
            if self._high_watermark > new_end:
                self._high_watermark = new_end
            self._hw_metadata = None
            self._lso_metadata = None
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

    @_reports_io_errors
    def truncate_fully_and_start_at(self, new_offset: int) -> None:
        """Drop every segment and start an empty log at ``new_offset`` (a follower far
        behind a leader whose log start offset moved past it)."""
        if new_offset < 0:
            raise OffsetOutOfRangeError(f"cannot start {self.name} at {new_offset}")
        with self._lock:
            self._local.check_open()
            self._local.truncate_fully_and_start_at_locked(new_offset)
            self._log_start_offset = new_offset
            self._high_watermark = new_offset
            self._hw_metadata = None
            self._lso_metadata = None
            self.leader_epoch_cache.clear()
            self.producer_state.reset(new_offset)
            logger.info("%s: truncated fully, now starts at offset %d", self.name, new_offset)
            if self.truncation_listener is not None:
                self.truncation_listener(new_offset)

    # -- retention ---------------------------------------------------------------------------

    @_reports_io_errors
    def maybe_increment_log_start_offset(self, new_offset: int) -> bool:
        """Move the log start offset up (DeleteRecords; must not pass the high watermark);
        whole segments below it are deleted by the next :meth:`delete_old_segments`."""
        with self._lock:
            self._local.check_open()
            if new_offset > self._high_watermark:
                raise OffsetOutOfRangeError(
                    f"{self.name}: log start offset {new_offset} beyond the high watermark "
                    f"{self._high_watermark}"
                )
            if new_offset <= self._log_start_offset:
                return False
            self._advance_log_start_offset_locked(new_offset)
            return True

    def _advance_log_start_offset_locked(self, new_offset: int) -> None:
        self._log_start_offset = new_offset
        self._lso_metadata = None
        self.leader_epoch_cache.truncate_from_start(new_offset)
        self.producer_state.truncate_head(new_offset)

    @_reports_io_errors
    def delete_old_segments(self) -> int:
        """Apply retention (time, size, log start offset); return segments deleted."""
        with self._lock:
            local = self._local
            if local.closed:
                return 0
            cfg = self._config
            decision = deletable_segments(
                local.segments,
                now_ms=self._clock_ms(),
                retention_ms=cfg.retention_ms,
                retention_bytes=cfg.retention_bytes,
                log_start_offset=self._log_start_offset,
                high_watermark=self._high_watermark,
                delete_policy=cfg.deletes_by_retention,
            )
            if decision.count == 0:
                return 0
            first = local.delete_oldest_segments_locked(
                decision.count, reason=f"retention by {decision.reason}"
            )
            self._hw_metadata = None
            self._lso_metadata = None
            self._advance_log_start_offset_locked(max(self._log_start_offset, first))
            return decision.count

    # -- log cleaner -------------------------------------------------------------------------

    def cleaning_snapshot(self) -> CleaningSnapshot:
        """What the log cleaner plans a cleaning from (taken under the lock, used without)."""
        with self._lock:
            local = self._local
            local.check_open()
            lso = self._last_stable_offset_locked()
            return CleaningSnapshot(
                segments=tuple(local.segments),
                sizes=tuple(s.size_in_bytes for s in local.segments),
                log_start_offset=self._log_start_offset,
                high_watermark=self._high_watermark,
                last_stable_offset=lso,
                log_end_offset=local.next_offset,
                config=self._config,
                producer_last_offsets={
                    pid: e.last_data_offset for pid, e in self.producer_state.producers.items()
                },
                # Every segment's entries, the active one's too: an ABORT marker written
                # there may close a transaction whose data lies in a closed segment. Entries
                # added after this snapshot cover offsets above its last stable offset.
                aborted_transactions=tuple(
                    t for seg in local.segments if seg.files_created for t in seg.txn_index.entries
                ),
            )

    @_reports_io_errors
    def new_cleaned_segment(self, base_offset: int) -> LogSegment:
        """A segment for the cleaner to write (see :meth:`LocalLog.new_cleaned_segment`)."""
        return self._local.new_cleaned_segment(base_offset)

    @_reports_io_errors
    def replace_segments(
        self, cleaned: LogSegment, sources: list[LogSegment], source_sizes: list[int]
    ) -> bool:
        """Swap the cleaner's ``cleaned`` segment in for ``sources`` (see
        :meth:`LocalLog.replace_segments_locked`); return False and change nothing when they
        are no longer exactly in the log (retention, truncation or deletion got there first:
        the caller discards ``cleaned``). The lock is held for the renames only."""
        with self._lock:
            replaced = self._local.replace_segments_locked(cleaned, sources, source_sizes)
            if replaced:
                self._hw_metadata = None
                self._lso_metadata = None
            return replaced

    @_reports_io_errors
    def delete_pending_files(self, *, force: bool = False) -> int:
        """Unlink ``.deleted`` segments whose delay has passed (all when ``force``)."""
        return self._local.delete_pending_files(force=force)

    # -- lifecycle ---------------------------------------------------------------------------

    def close(self) -> None:
        """Flush, write the final time index entries, trim indexes and close every file."""
        local = self._local
        if local.closed:
            return
        local.flush()
        with self._lock:
            if local.next_offset > self._log_start_offset:
                # A clean restart then loads this and replays nothing.
                self._take_producer_snapshot_locked(local.next_offset)
            local.close_segments_locked()
        local.delete_pending_files(force=True)

    def close_after_dir_failure(self) -> None:
        """Close every file without writing anything (its directory failed: a flush or a
        snapshot would only meet the same error); errors while closing are ignored."""
        self._local.close_without_writing()

    def _raise_storage_failure(self, error: OSError | KafkaStorageError) -> NoReturn:
        """Raise ``error``, met by a public method: an I/O error (an OSError, or a
        KafkaStorageError caused by one) is told to ``io_error_listener`` first (its directory
        goes offline) and raised as KafkaStorageError (KAFKA_STORAGE_ERROR); a closed log's
        error is raised as it is."""
        if isinstance(error, LogClosedError):
            raise error
        io_error = isinstance(error, OSError) or isinstance(error.__cause__, OSError)
        listener = self.io_error_listener
        if io_error and listener is not None:
            listener(f"{self.name}: {error}")
        if isinstance(error, OSError):
            raise KafkaStorageError(f"{self.name}: {error}") from error
        raise error

    def close_and_delete_dir(self, renamed_dir: str) -> None:
        """Close, rename the directory to ``renamed_dir`` (a ``-delete`` name) and remove it."""
        self._local.close_and_delete_dir(renamed_dir)

    def __repr__(self) -> str:
        return (
            f"Log({self.name}, start={self._log_start_offset}, hw={self._high_watermark}, "
            f"end={self._local.next_offset}, segments={len(self._local.segments)})"
        )


def _payload_marker_reader(buf: Buffer) -> MarkerReader:
    """Reads end markers from a payload being appended (header positions index ``buf``)."""
    return lambda h: read_end_txn_marker(buf, h.position)


def _validate_replicated(
    payload: Buffer, max_batch_bytes: int
) -> tuple[tuple[RecordBatchHeader, ...], int]:
    """The headers and byte size of a leader's batches sent to a follower: framing, CRC and
    increasing offsets checked (:func:`validate_stored_payload`), none empty or larger than
    ``max_batch_bytes``."""
    headers = validate_stored_payload(payload)
    if not headers:
        raise InvalidRecordError("follower append of an empty payload")
    for h in headers:
        if h.size_in_bytes > max_batch_bytes:
            raise RecordListTooLargeError(f"batch of {h.size_in_bytes} bytes too large")
    return headers, headers[-1].position + headers[-1].size_in_bytes - headers[0].position


def _duplicate_append_info(dup: BatchMetadata, log_start_offset: int) -> LogAppendInfo:
    """The answer to a retried batch: the offsets of its first append; nothing written."""
    return LogAppendInfo(
        first_offset=dup.first_offset,
        last_offset=dup.last_offset,
        max_timestamp=dup.max_timestamp,
        offset_of_max_timestamp=dup.last_offset,
        log_append_time_ms=-1,
        log_start_offset=log_start_offset,
        valid_bytes=0,
        record_count=0,
        batch_count=0,
        duplicate=True,
    )


def _is_writable(buf: Buffer) -> TypeGuard[bytearray | memoryview]:
    if isinstance(buf, bytearray):
        return True
    if isinstance(buf, memoryview):
        return not buf.readonly
    return False
