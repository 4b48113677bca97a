"""LogSegment: one ``.log`` file with its sparse ``.index`` and ``.timeindex``, and the
``.txnindex`` of the transactions aborted in it.

Files of a segment in its partition directory, named by the segment's base offset (the offset
of its first batch, zero-padded to 20 digits)::

    00000000000000368769.log         batches back to back (see file_records.py)
    00000000000000368769.index       offset -> position (see offset_index.py)
    00000000000000368769.timeindex   timestamp -> offset (see time_index.py)
    00000000000000368769.txnindex    aborted transactions, only once there is one
                                     (see transaction_index.py)

Invariants: every batch's offsets lie in ``[base_offset, base_offset + 2**31 - 1]`` (relative
offsets fit the index's u32, as Kafka requires an i32); offsets strictly increase through the
file; positions fit a u32 because ``segment.bytes`` is at most 2 GiB - 1. One index entry is
written per ``index.interval.bytes`` of batches (the first batch of a segment is found at
position 0 without one).

Suffixes: ``.deleted`` marks files of a deleted segment waiting for ``file.delete.delay.ms``;
``.cleaned`` (being written by the log cleaner) and ``.swap`` (complete, being swapped in)
belong to log compaction; the loader finishes or discards them on open (log_loader.py).

Resources: an active segment keeps its ``.log`` descriptor open and its index entries in
memory. A closed segment loaded from disk (``active=False``) opens nothing at construction:
its ``.log`` is opened, its indexes read (and sanity-checked once, rebuilt from the log if
invalid, without ever truncating it) on first use, and it registers with the log manager's
:class:`~data_plane.storage.segment_cache.OpenSegmentCache`, which releases the least
recently used closed segments beyond its bound. Its largest timestamp (time retention) is read
from the last ``.timeindex`` entry alone.

Thread-safety: a segment is driven by its :class:`~data_plane.storage.log.Log`, which holds its
lock for every mutation (append, truncate, roll, delete). :meth:`flush` may run on a background
thread at the same time as appends and reads; reads run on the log's owner thread.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from common.errors import ApiError, CorruptRecordError, InvalidRecordError
from common.record_batch import (
    HEADER_SIZE,
    LOG_OVERHEAD,
    RecordBatchHeader,
    parse_header,
    validate_batch,
)
from data_plane.storage.file_records import FileRecords, FileSlice, count_framed_batches
from data_plane.storage.offset_index import InvalidIndexError, OffsetIndex
from data_plane.storage.record_codec import decode_records
from data_plane.storage.segment_cache import OpenSegmentCache
from data_plane.storage.time_index import NO_TIMESTAMP, TimeIndex
from data_plane.storage.transaction_index import TXN_INDEX_SUFFIX, TransactionIndex
from data_plane.storage.verified_ranges import VerifiedRanges

logger = logging.getLogger(__name__)

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"
DELETED_SUFFIX = ".deleted"
CLEANED_SUFFIX = ".cleaned"
SWAP_SUFFIX = ".swap"
# Relative offsets are kept within an i32, as Kafka does, though the index stores a u32.
MAX_RELATIVE_OFFSET = (1 << 31) - 1
# Recovery and CRC verification read the log in chunks of this size (plus any batch larger).
VERIFY_CHUNK_BYTES = 4 * 1024 * 1024
# A recovery reads at most this much of a dropped tail just to count its batches for the log.
MAX_DROPPED_COUNT_READ_BYTES = 64 * 1024 * 1024


def segment_file_name(base_offset: int, suffix: str) -> str:
    return f"{base_offset:020d}{suffix}"


class BatchPlacement(NamedTuple):
    """Where one batch of an append lands: ``position`` inside the appended buffer, its size,
    last offset and maxTimestamp (what the indexes need; no header re-parse). A NamedTuple:
    one is made per batch on the append path."""

    position: int
    size_in_bytes: int
    last_offset: int
    max_timestamp: int


@dataclass(frozen=True, slots=True)
class SegmentRecoveryResult:
    valid_bytes: int
    valid_batches: int
    truncated_bytes: int
    dropped_batches: int
    reason: str


class LogSegment:
    def __init__(
        self,
        dir_path: str,
        base_offset: int,
        *,
        index_interval_bytes: int,
        max_index_bytes: int,
        created_ms: int,
        active: bool,
        cache: OpenSegmentCache | None = None,
        create_files: bool = True,
        file_suffix: str = "",
    ) -> None:
        """An ``active`` segment is created (or reopened) with its files open, or, with
        ``create_files`` False (the first segment of a new log), its files are created by
        its first append, so a partition never written costs no file and no descriptor.
        Otherwise the segment's files exist and are opened on first use (module docstring).
        ``file_suffix`` (``.cleaned``) names the files of a segment the log cleaner writes;
        :meth:`change_file_suffix` renames them on the way to their final names."""
        self.dir_path = dir_path
        self.base_offset = base_offset
        self.index_interval_bytes = index_interval_bytes
        self.created_ms = created_ms
        self._cache = cache
        self.active = active
        lazy_create = active and not create_files

        def _path(kind: str) -> str:
            return os.path.join(dir_path, segment_file_name(base_offset, kind) + file_suffix)

        self._files_created = not lazy_create
        self.log = FileRecords(
            _path(LOG_SUFFIX),
            open_now=active and not lazy_create,
            exists=not lazy_create,
            on_open=self._on_resource_opened,
        )
        self.offset_index = OffsetIndex(
            _path(INDEX_SUFFIX),
            base_offset,
            max_index_bytes,
            writable=active,
            create_now=not lazy_create,
        )
        self.time_index = TimeIndex(
            _path(TIME_INDEX_SUFFIX),
            base_offset,
            max_index_bytes,
            writable=active,
            create_now=not lazy_create,
        )
        self.txn_index = TransactionIndex(_path(TXN_INDEX_SUFFIX))
        self.verified = VerifiedRanges()
        self._bytes_since_last_index_entry = 0
        # Read from the time index's last entry when first needed (Kafka's lazy
        # maxTimestampAndOffsetSoFar).
        self._max_timestamp: int | None = None
        self._offset_of_max_timestamp = base_offset
        # Indexes of a segment loaded from disk are sanity-checked on first use, unless the
        # loader checked or rebuilt them already.
        self.indexes_checked = active
        self._deleted = False

    @property
    def files_created(self) -> bool:
        return self._files_created

    def create_files(self) -> None:
        """Create the three files of a segment made with ``create_files`` False (on its
        first append, or when a caller needs a descriptor)."""
        if self._files_created:
            return
        self.log.file  # noqa: B018 - opening creates the .log
        self.offset_index.create_file()
        self.time_index.create_file()
        self._files_created = True

    # -- lazily held resources ---------------------------------------------------------------

    def _on_resource_opened(self) -> None:
        if not self.active and self._cache is not None and not self._deleted:
            self._cache.touch(self)

    def _use(self) -> None:
        """Note a use of a closed segment (LRU order) and check its indexes once."""
        if not self.active:
            if self._cache is not None:
                self._cache.touch(self)
            if not self.indexes_checked:
                self._check_indexes_lazily()

    def release_resources(self) -> None:
        """Let go of the ``.log`` descriptor and the index entries (an idle closed segment,
        evicted by the cache); the next use opens them again."""
        if self.active or self._deleted:
            return
        self.log.release()
        self.offset_index.unload()
        self.time_index.unload()
        self.txn_index.unload()

    def _forget(self) -> None:
        if self._cache is not None:
            self._cache.forget(self)

    def _check_indexes_lazily(self) -> None:
        """Sanity-check both indexes of a closed segment on first use and rebuild them from
        the log (CRC-checked, never truncating it) if invalid."""
        self.indexes_checked = True
        try:
            self.offset_index.sanity_check(self.size_in_bytes)
            self.time_index.sanity_check(self.base_offset + MAX_RELATIVE_OFFSET + 1)
        except InvalidIndexError as e:
            logger.warning("rebuilding indexes of %s: %s", self.log.path, e)
            res = self.recover(truncate=False)
            if res.truncated_bytes:
                logger.warning(
                    "%s: a bad batch at position %d; indexed up to it (%s); reads past it "
                    "fail with CORRUPT_MESSAGE",
                    self.log.path,
                    res.valid_bytes,
                    res.reason,
                )

    @property
    def max_timestamp_so_far(self) -> int:
        ts = self._max_timestamp
        if ts is None:
            ts, offset = (
                self.time_index.last_entry()
                if self.time_index.is_loaded
                else self.time_index.peek_last_entry()
            )
            self._max_timestamp, self._offset_of_max_timestamp = ts, offset
        return ts

    @max_timestamp_so_far.setter
    def max_timestamp_so_far(self, value: int) -> None:
        self._max_timestamp = value

    @property
    def offset_of_max_timestamp_so_far(self) -> int:
        if self._max_timestamp is None:
            _ = self.max_timestamp_so_far
        return self._offset_of_max_timestamp

    @offset_of_max_timestamp_so_far.setter
    def offset_of_max_timestamp_so_far(self, value: int) -> None:
        self._offset_of_max_timestamp = value

    # -- properties --------------------------------------------------------------------------

    @property
    def size_in_bytes(self) -> int:
        return self.log.size_in_bytes

    @property
    def largest_timestamp(self) -> int:
        """The largest batch timestamp in the segment, or the .log file's mtime (ms) when no
        batch carries one (Kafka's rule for time retention)."""
        if self.max_timestamp_so_far >= 0:
            return self.max_timestamp_so_far
        try:
            return int(os.stat(self.log.path).st_mtime * 1000)
        except FileNotFoundError:
            return NO_TIMESTAMP

    # -- append ------------------------------------------------------------------------------

    def append(
        self, data: bytes | bytearray | memoryview, batches: Sequence[BatchPlacement]
    ) -> int:
        """Write ``data`` (the whole batches described by ``batches``) at the end of the log and
        index them; return the file position of the first byte. The caller has checked the
        batches' CRCs, so the written range counts as verified."""
        if not batches:
            return self.log.size_in_bytes
        if not self._files_created:
            self.create_files()
        if batches[-1].last_offset - self.base_offset > MAX_RELATIVE_OFFSET:
            raise InvalidRecordError(
                f"offset {batches[-1].last_offset} does not fit segment {self.base_offset}"
            )
        position = self.log.append(data)
        for b in batches:
            if b.max_timestamp > self.max_timestamp_so_far:
                self.max_timestamp_so_far = b.max_timestamp
                self.offset_of_max_timestamp_so_far = b.last_offset
            if (
                self._bytes_since_last_index_entry > self.index_interval_bytes
                and self._has_index_room()
            ):
                self.offset_index.append(b.last_offset, position + b.position)
                self.time_index.maybe_append(
                    self.max_timestamp_so_far, self.offset_of_max_timestamp_so_far
                )
                self._bytes_since_last_index_entry = 0
            self._bytes_since_last_index_entry += b.size_in_bytes
        self.verified.add(position, position + len(data))
        return position

    def _has_index_room(self) -> bool:
        # A full index only makes scans longer; the segment rolls at the next append.
        return not (self.offset_index.is_full or self.time_index.is_full)

    def should_roll(
        self,
        *,
        append_bytes: int,
        append_batches: int,
        max_offset: int,
        segment_bytes: int,
        segment_ms: int,
        now_ms: int,
    ) -> bool:
        """Kafka's roll rule: the append would overflow ``segment.bytes``; the segment is
        non-empty and older than ``segment.ms``; an index is full; or ``max_offset`` does not
        fit a relative offset. Age counts from the segment's creation by the log's clock
        (Kafka uses the first batch's timestamp, which makes producers with old timestamps
        roll a segment per append). An index counts as full when the append's batches could
        need more entries than it has room for."""
        size = self.size_in_bytes
        entries_needed = min(append_batches, append_bytes // max(self.index_interval_bytes, 1) + 1)
        return (
            size > segment_bytes - append_bytes
            or (size > 0 and now_ms - self.created_ms > segment_ms)
            or (
                size > 0
                and (
                    self.offset_index.entries + entries_needed > self.offset_index.max_entries
                    or self.time_index.entries + entries_needed >= self.time_index.max_entries
                )
            )
            or max_offset - self.base_offset > MAX_RELATIVE_OFFSET
        )

    # -- lookups -----------------------------------------------------------------------------

    def translate_offset(self, offset: int, starting_position: int = 0) -> RecordBatchHeader | None:
        """The header (with its position) of the first batch whose last offset >= ``offset``,
        or None if every batch here ends before it."""
        self._use()
        _, position = self.offset_index.lookup(offset)
        return self.log.search_for_offset(offset, max(position, starting_position))

    def read(
        self,
        start_offset: int,
        max_bytes: int,
        *,
        max_position: int | None = None,
        min_one_message: bool = True,
    ) -> FileSlice | None:
        """A slice from the batch holding ``start_offset`` of at most ``max_bytes`` (the first
        batch whole when ``min_one_message``, as KIP-74 requires), ending no later than
        ``max_position``. None if no batch here ends at or after ``start_offset``.

        Raises :class:`CorruptRecordError` if a batch in the slice fails its CRC.
        """
        header = self.translate_offset(start_offset)
        if header is None:
            return None
        start = header.position
        limit = self.size_in_bytes if max_position is None else max_position
        if start >= limit:
            return self.log.slice(start, 0, self.base_offset, -1)
        size = header.batch_length + LOG_OVERHEAD
        wanted = max(max_bytes, size) if min_one_message else max_bytes
        length = min(limit - start, wanted)
        if length <= 0:
            return self.log.slice(start, 0, self.base_offset, -1)
        self.verify_range(start, start + length)
        return self.log.slice(start, length, self.base_offset, header.base_offset)

    def verify_range(self, start: int, end: int) -> None:
        """Check the CRC of every batch overlapping ``[start, end)`` (``start`` on a batch
        boundary) not yet verified in this process."""
        if self.verified.covers(start, end):
            return
        for gap_start, gap_end in self.verified.gaps(start, end):
            verified_end = gap_start
            for header in self._validated_batches(gap_start, gap_end):
                verified_end = header.position + header.size_in_bytes
            self.verified.add(gap_start, verified_end)

    def _validated_batches(self, start: int, end: int) -> Iterator[RecordBatchHeader]:
        """Yield each batch starting in ``[start, end)`` after checking its framing, magic
        and CRC (headers carry absolute positions); raise :class:`CorruptRecordError` naming
        the file and position at the first bad one."""
        size = self.size_in_bytes
        chunk = b""
        chunk_start = start
        pos = start
        while pos < end:
            if size - pos < HEADER_SIZE:
                raise CorruptRecordError(
                    f"{self.log.path}: torn batch header at position {pos} "
                    f"({size - pos} bytes left)"
                )
            if pos + HEADER_SIZE > chunk_start + len(chunk):
                chunk, chunk_start = self.log.read(pos, VERIFY_CHUNK_BYTES), pos
            try:
                header = parse_header(chunk, pos - chunk_start)
            except CorruptRecordError as e:
                raise CorruptRecordError(f"{self.log.path}: {e}") from None
            batch_size = header.batch_length + LOG_OVERHEAD
            if pos + batch_size > size:
                raise CorruptRecordError(
                    f"{self.log.path}: batch at position {pos} runs past the end of the file "
                    f"({batch_size} bytes, {size - pos} present)"
                )
            if pos + batch_size > chunk_start + len(chunk):
                chunk, chunk_start = self.log.read(pos, max(batch_size, VERIFY_CHUNK_BYTES)), pos
            try:
                header = validate_batch(chunk, pos - chunk_start)
            except CorruptRecordError as e:
                raise CorruptRecordError(f"{self.log.path}: {e}") from None
            header.position = pos
            yield header
            pos += batch_size

    def find_offset_by_timestamp(
        self, timestamp: int, starting_offset: int
    ) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record at or after ``starting_offset`` whose
        timestamp >= ``timestamp``; None if there is none here. Decodes one batch."""
        self._use()
        _, ts_offset = self.time_index.lookup(timestamp)
        _, position = self.offset_index.lookup(max(ts_offset, starting_offset))
        header = self.log.search_for_timestamp(timestamp, position, starting_offset)
        if header is None:
            return None
        data = self.log.read(header.position, header.size_in_bytes)
        _, records = decode_records(data)
        for record in records:
            if record.offset >= starting_offset and record.timestamp >= timestamp:
                return record.offset, record.timestamp
        return None

    def read_next_offset(self) -> int:
        """The offset after the last batch, found by scanning headers from the last index
        entry; also restores the in-memory max timestamp and index spacing, and indexes the
        scanned batches an index lagging its log lacks (an index not written back before a
        crash). Strict: a torn or garbled tail raises :class:`CorruptRecordError`."""
        next_offset = self.base_offset
        position = 0
        indexed_position = -1
        if self.offset_index.entries:
            _, position = self.offset_index.entry(self.offset_index.entries - 1)
            indexed_position = position
        self._bytes_since_last_index_entry = 0
        for header in self.log.batches_from(position, strict=True):
            next_offset = header.next_offset
            if header.position == indexed_position:
                # The batch of the last entry: indexed already.
                if header.max_timestamp > self.max_timestamp_so_far:
                    self.max_timestamp_so_far = header.max_timestamp
                    self.offset_of_max_timestamp_so_far = header.last_offset
                self._bytes_since_last_index_entry += header.size_in_bytes
                continue
            self._index_batch(
                BatchPlacement(
                    header.position, header.size_in_bytes, header.last_offset, header.max_timestamp
                )
            )
        if self.offset_index.entries:
            next_offset = max(next_offset, self.offset_index.last_offset + 1)
        return next_offset

    # -- recovery ----------------------------------------------------------------------------

    def recover(self, *, truncate: bool = True) -> SegmentRecoveryResult:
        """Rebuild both indexes from the log, checking every batch's framing, magic, CRC and
        offsets, and truncate the log at the first bad batch (Kafka's LogSegment.recover);
        with ``truncate`` False (a lazy index rebuild of a live closed segment) the log is
        left whole, indexed up to the bad batch, which reads then report as corrupt.
        Records are not decoded: the CRC covers them."""
        self.indexes_checked = True
        # The entries are rebuilt in memory (no preallocated file needed) and written back
        # when a closed segment's index is trimmed below, or by the next flush or close.
        self.offset_index.reset()
        self.time_index.reset()
        self.verified.clear()
        self.max_timestamp_so_far = NO_TIMESTAMP
        self.offset_of_max_timestamp_so_far = self.base_offset
        self._bytes_since_last_index_entry = 0
        size = self.size_in_bytes
        valid_end = 0
        batches = 0
        next_offset = self.base_offset
        reason = ""
        try:
            for header in self._validated_batches(0, size):
                if header.base_offset < next_offset or header.last_offset_delta < 0:
                    reason = (
                        f"batch at position {header.position} has offsets "
                        f"{header.base_offset}..{header.last_offset}, not after {next_offset - 1}"
                    )
                    break
                if header.last_offset - self.base_offset > MAX_RELATIVE_OFFSET:
                    reason = (
                        f"batch at position {header.position} has offset {header.last_offset} "
                        f"beyond the segment's relative offset range"
                    )
                    break
                self._index_batch(
                    BatchPlacement(
                        header.position,
                        header.size_in_bytes,
                        header.last_offset,
                        header.max_timestamp,
                    )
                )
                next_offset = header.next_offset
                valid_end = header.position + header.size_in_bytes
                batches += 1
        except CorruptRecordError as e:
            reason = str(e)
        truncated = size - valid_end
        dropped = 0
        if truncated:
            tail = self.log.read(valid_end, min(truncated, MAX_DROPPED_COUNT_READ_BYTES))
            dropped = max(1, count_framed_batches(tail))
            if truncate:
                self.log.truncate_to(valid_end)
        self.verified.add(0, valid_end)
        if not self.active:
            self.offset_index.trim_to_valid_size()
            self.time_index.trim_to_valid_size()
        return SegmentRecoveryResult(valid_end, batches, truncated, dropped, reason)

    def _index_batch(self, b: BatchPlacement) -> None:
        """Index a batch at absolute position ``b.position`` (recovery's variant of append)."""
        if b.max_timestamp > self.max_timestamp_so_far:
            self.max_timestamp_so_far = b.max_timestamp
            self.offset_of_max_timestamp_so_far = b.last_offset
        if (
            self._bytes_since_last_index_entry > self.index_interval_bytes
            and self._has_index_room()
        ):
            self.offset_index.append(b.last_offset, b.position)
            self.time_index.maybe_append(
                self.max_timestamp_so_far, self.offset_of_max_timestamp_so_far
            )
            self._bytes_since_last_index_entry = 0
        self._bytes_since_last_index_entry += b.size_in_bytes

    # -- truncation --------------------------------------------------------------------------

    def truncate_to(self, offset: int) -> int:
        """Remove every batch that holds an offset >= ``offset`` (a batch straddling it goes
        whole); return the bytes removed."""
        header = self.translate_offset(offset)
        if header is None:
            return 0
        self.offset_index.truncate_to(offset)
        self.time_index.truncate_to(offset)
        self.txn_index.truncate_to(offset)
        removed = self.log.truncate_to(header.position)
        self.verified.clip(header.position)
        ts, ts_offset = self.time_index.last_entry()
        self.max_timestamp_so_far, self.offset_of_max_timestamp_so_far = ts, ts_offset
        self._bytes_since_last_index_entry = 0
        # Batches after the last index entry may carry a larger timestamp: rescan them.
        self.read_next_offset()
        return removed

    # -- lifecycle ---------------------------------------------------------------------------

    def make_active(self) -> None:
        """Preallocate the indexes again (this segment becomes the one being appended to)."""
        if not self.active:
            self.active = True
            self._forget()
            self.log.file  # noqa: B018 - opens the .log: the active segment's stays open
            self.offset_index.make_writable()
            self.time_index.make_writable()

    def on_become_inactive(self) -> None:
        """Record the final time index entry and trim both indexes (on roll)."""
        if self.max_timestamp_so_far >= 0:
            self.time_index.maybe_append(
                self.max_timestamp_so_far,
                self.offset_of_max_timestamp_so_far,
                skip_full_check=True,
            )
        self.offset_index.trim_to_valid_size()
        self.time_index.trim_to_valid_size()
        self.active = False
        self.indexes_checked = True
        if self._cache is not None:
            self._cache.touch(self)

    def flush(self, *, indexes: bool = True) -> None:
        """fsync the log and (when ``indexes``) write back and fsync the indexes, else
        only write their new entries back (page cache: a killed process loses none); safe
        from a background thread, a no-op for a segment closed or deleted meanwhile."""
        if self._deleted:
            return
        self.log.flush()
        if indexes:
            self.offset_index.flush()
            self.time_index.flush()
            self.txn_index.flush()
        else:
            self.offset_index.write_dirty()
            self.time_index.write_dirty()

    def close(self) -> None:
        self._forget()
        if self._deleted or self.log.closed:
            return
        if self.active and self.max_timestamp_so_far >= 0:
            self.time_index.maybe_append(
                self.max_timestamp_so_far,
                self.offset_of_max_timestamp_so_far,
                skip_full_check=True,
            )
        self.offset_index.close()
        self.time_index.close()
        self.log.close()

    def close_quietly(self) -> None:
        """Close the indexes and the log file without writing, ignoring errors (the
        directory failed: see log_dir_failure.py)."""
        self._forget()
        closers = (self.offset_index.close_handler, self.time_index.close_handler, self.log.close)
        for close in closers:
            try:
                close()
            except (OSError, ValueError, ApiError) as e:
                logger.debug("closing %s after a directory failure: %s", self.log.path, e)

    def rename_to_deleted(self) -> list[str]:
        """Rename the segment's files to ``*.deleted`` and release the index mappings; the
        .log stays open so slices already handed out can still be sent. Returns the new
        paths; :meth:`delete_files` removes them later."""
        self._deleted = True
        self._forget()
        self.offset_index.close_handler()
        self.time_index.close_handler()
        paths = []
        for f in (self.log, self.offset_index, self.time_index):
            if os.path.exists(f.path):
                f.rename_to(f.path + DELETED_SUFFIX)
                paths.append(f.path)
        # Renamed even without a file, so that delete_files never unlinks the .txnindex of a
        # later segment with the same base offset.
        had_txn_index = os.path.exists(self.txn_index.path)
        self.txn_index.rename_to(self.txn_index.path + DELETED_SUFFIX)
        if had_txn_index:
            paths.append(self.txn_index.path)
        return paths

    def change_file_suffix(self, old_suffix: str, new_suffix: str) -> None:
        """Rename the segment's files from ``<name><old_suffix>`` to ``<name><new_suffix>``
        (the cleaner's ``.cleaned`` -> ``.swap`` -> final name), the indexes first and the
        ``.log`` last: recovery decides by the ``.log``'s suffix (log_loader.py)."""
        for f in (self.offset_index, self.time_index, self.txn_index, self.log):
            if not f.path.endswith(old_suffix):
                raise ValueError(f"{f.path} does not end with {old_suffix!r}")
            f.rename_to(f.path[: len(f.path) - len(old_suffix)] + new_suffix)

    def set_last_modified(self, mtime_ns: int) -> None:
        """Set the .log's modification time (a cleaned segment keeps its sources' newest)."""
        os.utime(self.log.path, ns=(mtime_ns, mtime_ns))

    def last_modified_ns(self) -> int:
        return os.stat(self.log.path).st_mtime_ns

    def delete_files(self) -> None:
        """Let go of the .log and unlink every file of the segment (after
        rename_to_deleted). A slice still being sent keeps the unlinked file's descriptor
        open until it is dropped (file_records.SegmentFile)."""
        self._deleted = True
        self._forget()
        self.log.close(keep_open_for_slices=True)
        self.offset_index.close_handler()
        self.time_index.close_handler()
        paths = (self.log.path, self.offset_index.path, self.time_index.path, self.txn_index.path)
        for path in paths:
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass

    def __repr__(self) -> str:
        return f"LogSegment(base_offset={self.base_offset}, size={self.size_in_bytes})"
