"""FileRecords: a segment's ``.log`` file, and FileSlice, a byte range of one for sendfile.

File ``<20-digit base offset>.log``: RecordBatch v2 batches back to back, exactly as they
travel on the wire (DESIGN.md decision 2; layout in :mod:`common.record_batch`). No
file header, no padding: the file size is the end of the last batch.

Writes use ``os.pwrite`` at the tracked end position, so the file object's own position is
never relied upon (a sendfile fallback may move it). Reads scan batch *headers* only, reading
the file in chunks of :data:`SCAN_CHUNK_BYTES`, never decoding records.

File descriptors: the active segment's file is opened at once and kept open; a closed
segment's is opened on first use (``open_now=False``) and released again by :meth:`release`
when the log manager's LRU of open segments evicts it. The descriptor lives in a
:class:`SegmentFile` that every :class:`FileSlice` handed out references, so a release never
closes a descriptor under a slice still being sent: the descriptor is closed when the last
reference goes (or at once by :meth:`FileRecords.close`, as before).

Thread-safety: appends and truncation run on the log's owner thread under the log's lock;
:meth:`FileRecords.flush` (fsync) may run concurrently from a background thread; reads
(pread/sendfile) are safe from any thread while the file is open.
"""

from __future__ import annotations

import os
import struct
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from common.errors import CorruptRecordError
from common.record_batch import (
    HEADER_SIZE,
    LOG_OVERHEAD,
    MIN_BATCH_LENGTH,
    RecordBatchHeader,
    parse_header,
)
from data_plane.storage import page_cache
from data_plane.storage.errors import LogClosedError

# How much of the file one header scan reads at a time: about one index interval of small
# batches, or one large batch's header plus slack.
SCAN_CHUNK_BYTES = 8 * 1024
# baseOffset, batchLength and (after 11 bytes) lastOffsetDelta: what a scan needs per batch.
_SCAN_FIELDS = struct.Struct(">qi11xi")


class SegmentFile:
    """An open descriptor of a segment's ``.log``, shared by its :class:`FileRecords` and
    the slices it handed out. Closed by :meth:`close`, or when the last reference goes, so a
    descriptor number is never reused while someone can still use it."""

    __slots__ = ("_fd",)

    def __init__(self, fd: int) -> None:
        self._fd = fd

    def fileno(self) -> int:
        fd = self._fd
        if fd < 0:
            raise LogClosedError("segment file is closed")
        return fd

    @property
    def closed(self) -> bool:
        return self._fd < 0

    def close(self) -> None:
        fd, self._fd = self._fd, -1
        if fd >= 0:
            os.close(fd)

    def __del__(self) -> None:
        fd, self._fd = self._fd, -1
        if fd >= 0:
            try:
                os.close(fd)
            except OSError:
                pass


@dataclass(frozen=True, slots=True)
class FileSlice:
    """``length`` bytes of ``file`` from ``position``: hand to ``os.sendfile(out_fd,
    slice.fileno, slice.position, slice.length)`` (or ``loop.sendfile``). An empty slice has
    length 0. ``segment_base_offset`` names the segment it came from; ``first_offset`` is the
    base offset of its first batch (-1 when empty)."""

    file: SegmentFile | None
    position: int
    length: int
    segment_base_offset: int
    first_offset: int = -1

    @property
    def fileno(self) -> int:
        if self.file is None:
            raise LogClosedError("empty slice has no file")
        return self.file.fileno()

    def read_bytes(self) -> bytes:
        """The slice's bytes (a copy; tests and tools, not the fetch path)."""
        if self.length == 0 or self.file is None:
            return b""
        return os.pread(self.file.fileno(), self.length, self.position)

    def send_to(self, out_fd: int) -> int:
        """Blocking zero-copy transfer to ``out_fd`` (a socket); returns bytes sent."""
        sent = 0
        while sent < self.length:
            n = os.sendfile(out_fd, self.fileno, self.position + sent, self.length - sent)
            if n == 0:
                break
            sent += n
        return sent


class FileRecords:
    """The ``.log`` file of one segment (Kafka's FileRecords)."""

    def __init__(
        self,
        path: str,
        *,
        open_now: bool = True,
        exists: bool = True,
        on_open: Callable[[], None] | None = None,
    ) -> None:
        """Open (creating it if missing) now, or only on first use when not ``open_now``:
        an existing closed segment (its size taken from ``stat``), or, when not ``exists``,
        a new empty segment whose file is created by its first write (a partition that is
        created but never written costs no file). ``on_open`` is called after each lazy
        open (the log manager's LRU registers the segment)."""
        self.path = path
        self._on_open = on_open
        self._flush_lock = threading.Lock()
        self._closed = False
        self._handle: SegmentFile | None = None
        self._exists = exists
        if open_now:
            # Not O_APPEND: on Linux pwrite ignores its offset on O_APPEND files.
            self._handle = SegmentFile(os.open(path, os.O_RDWR | os.O_CREAT, 0o644))
            self._size = os.fstat(self._handle.fileno()).st_size
            self._exists = True
        elif exists:
            self._size = os.stat(path).st_size
        else:
            self._size = 0
        # write_back_behind's marks: writeback was started for the bytes below
        # _writeback_started, and the bytes below _cache_dropped were dropped from the
        # page cache (0 <= _cache_dropped <= _writeback_started <= _size).
        self._writeback_started = self._cache_dropped = self._size

    @property
    def size_in_bytes(self) -> int:
        return self._size

    @property
    def closed(self) -> bool:
        return self._closed

    def _check_open(self) -> None:
        if self._closed:
            raise LogClosedError(f"{self.path} is closed")

    @property
    def exists(self) -> bool:
        """False for a new segment's file not created yet (see ``exists`` above)."""
        return self._exists

    @property
    def is_open(self) -> bool:
        """Whether a descriptor is held now (not counting slices handed out)."""
        return self._handle is not None

    def _get_handle(self) -> SegmentFile:
        h = self._handle
        if h is not None:
            return h
        self._check_open()
        with self._flush_lock:
            h = self._handle
            opened = h is None
            if h is None:
                flags = os.O_RDWR if self._exists else os.O_RDWR | os.O_CREAT
                h = self._handle = SegmentFile(os.open(self.path, flags, 0o644))
                self._exists = True
        if opened and self._on_open is not None:
            self._on_open()
        return h

    @property
    def file(self) -> SegmentFile:
        """The open file (opened now if released); what slices reference."""
        return self._get_handle()

    def release(self) -> None:
        """Let go of the descriptor (an idle closed segment); it closes once no slice
        references it, and the next use opens the file again."""
        with self._flush_lock:
            self._handle = None

    def append(self, data: bytes | bytearray | memoryview) -> int:
        """Write ``data`` at the end of the file; return the position it starts at."""
        self._check_open()
        fd = self._get_handle().fileno()
        position = self._size
        with memoryview(data) as view:
            written = 0
            total = len(view)
            while written < total:
                written += os.pwrite(fd, view[written:], position + written)
        self._size = position + total
        return position

    def write_back_behind(self, window_bytes: int) -> None:
        """Keep about the last 2 x ``window_bytes`` of the file in the page cache (see
        :mod:`data_plane.storage.page_cache`): once ``window_bytes`` were appended since the
        last call that acted, queue for the background worker the drop of the range whose
        writeback that call started and the start of writeback of the bytes appended since.
        Never waits for the disk. Called by the appending thread only."""
        started = self._writeback_started
        end = self._size
        if end - started < window_bytes:
            return
        if page_cache.submit(self._get_handle(), self._cache_dropped, started, end):
            self._cache_dropped = started
            self._writeback_started = end

    def read(self, position: int, size: int) -> bytes:
        """Up to ``size`` bytes from ``position`` (fewer at the end of the file)."""
        self._check_open()
        size = max(0, min(size, self._size - position))
        if size == 0:
            return b""
        h = self._get_handle()
        return os.pread(h.fileno(), size, position)

    def slice(
        self, position: int, length: int, segment_base_offset: int, first_offset: int
    ) -> FileSlice:
        length = max(0, min(length, self._size - position))
        return FileSlice(self._get_handle(), position, length, segment_base_offset, first_offset)

    def flush(self) -> None:
        """fsync the file's data (safe from a background thread; no-op once closed). A
        released file is opened just for the fsync, which covers every write to the inode."""
        with self._flush_lock:
            if self._closed or not self._exists:
                return
            h = self._handle
            if h is not None:
                os.fdatasync(h.fileno())
                return
            fd = os.open(self.path, os.O_RDONLY)
            try:
                os.fdatasync(fd)
            finally:
                os.close(fd)

    def truncate_to(self, size: int) -> int:
        """Cut the file to ``size`` bytes; return how many bytes were removed."""
        self._check_open()
        if size < 0 or size > self._size:
            raise ValueError(f"cannot truncate {self.path} ({self._size} bytes) to {size}")
        removed = self._size - size
        if removed:
            os.ftruncate(self._get_handle().fileno(), size)
            self._size = size
            self._writeback_started = min(self._writeback_started, size)
            self._cache_dropped = min(self._cache_dropped, size)
        return removed

    def close(self, *, keep_open_for_slices: bool = False) -> None:
        """Close the file. With ``keep_open_for_slices`` (a deleted or replaced segment) the
        descriptor is only let go of: slices handed out keep it open, and it closes when the
        last one is dropped, so a fetch being sent from a segment the cleaner or retention
        just replaced is not cut short."""
        with self._flush_lock:
            if not self._closed:
                self._closed = True
                if self._handle is not None:
                    if not keep_open_for_slices:
                        self._handle.close()
                    self._handle = None

    def rename_to(self, new_path: str) -> None:
        os.replace(self.path, new_path)
        self.path = new_path

    # -- header scans ------------------------------------------------------------------------

    def batches_from(
        self, position: int = 0, *, end_position: int | None = None, strict: bool = True
    ) -> Iterator[RecordBatchHeader]:
        """Yield the header of each batch starting at ``position`` (a batch boundary) up to
        ``end_position`` (default: end of file), by header only: no CRC check.

        A batch whose header is invalid or whose body runs past the end raises
        :class:`CorruptRecordError` when ``strict``; otherwise the scan stops there.
        """
        self._check_open()
        handle = self._get_handle()
        fd = handle.fileno()
        end = self._size if end_position is None else min(end_position, self._size)
        pos = position
        chunk = b""
        chunk_start = pos
        while pos < end:
            rel = pos - chunk_start
            if rel < 0 or rel + HEADER_SIZE > len(chunk):
                chunk = os.pread(fd, min(SCAN_CHUNK_BYTES, end - pos), pos)
                chunk_start = pos
                rel = 0
                if len(chunk) < min(HEADER_SIZE, end - pos):
                    # The file shrank under us (concurrent truncation): stop.
                    return
            try:
                header = parse_header(chunk, rel)
            except CorruptRecordError as e:
                if strict:
                    raise CorruptRecordError(f"{self.path}: {e}") from None
                return
            header.position = pos
            size = header.batch_length + LOG_OVERHEAD
            if pos + size > end:
                if strict and end_position is None:
                    raise CorruptRecordError(
                        f"{self.path}: batch at position {pos} runs past the end of the file "
                        f"({size} bytes, {end - pos} present)"
                    )
                return
            yield header
            pos += size

    def search_for_offset(
        self, target_offset: int, starting_position: int
    ) -> RecordBatchHeader | None:
        """The first batch at or after ``starting_position`` whose last offset >=
        ``target_offset`` (Kafka's searchForOffsetWithSize); None if there is none.

        The hot part of every fetch: skipped batches are read through three fields only
        (baseOffset, batchLength, lastOffsetDelta) and a header object is built just for the
        batch found. A garbled or torn batch ends the search (None)."""
        self._check_open()
        handle = self._get_handle()
        fd = handle.fileno()
        end = self._size
        pos = starting_position
        while pos < end:
            chunk = os.pread(fd, min(SCAN_CHUNK_BYTES, end - pos), pos)
            off = 0
            limit = len(chunk) - HEADER_SIZE
            while off <= limit:
                base_offset, length, last_delta = _SCAN_FIELDS.unpack_from(chunk, off)
                if length < MIN_BATCH_LENGTH:
                    return None
                if base_offset + last_delta >= target_offset:
                    if pos + off + length + LOG_OVERHEAD > end:
                        return None
                    try:
                        header = parse_header(chunk, off)
                    except CorruptRecordError:
                        return None
                    header.position = pos + off
                    return header
                off += length + LOG_OVERHEAD
            if off == 0:
                return None  # fewer than a header's bytes left: a torn tail
            pos += off
        return None

    def search_for_timestamp(
        self, target_timestamp: int, starting_position: int, starting_offset: int
    ) -> RecordBatchHeader | None:
        """The first batch at or after ``starting_position`` with maxTimestamp >=
        ``target_timestamp`` and last offset >= ``starting_offset``."""
        for header in self.batches_from(starting_position, strict=False):
            if header.max_timestamp >= target_timestamp and header.last_offset >= starting_offset:
                return header
        return None


def count_framed_batches(data: bytes | memoryview) -> int:
    """How many batches can be framed in ``data`` by their length fields alone (used to
    report how much a truncation dropped; corrupt bytes may frame as nonsense)."""
    count = 0
    pos = 0
    with memoryview(data) as view:
        while len(view) - pos >= LOG_OVERHEAD:
            length = int.from_bytes(view[pos + 8 : pos + 12], "big", signed=True)
            if length < MIN_BATCH_LENGTH or pos + LOG_OVERHEAD + length > len(view):
                break
            count += 1
            pos += LOG_OVERHEAD + length
    return count
