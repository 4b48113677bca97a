"""The fixed-width-entry index file shared by :class:`OffsetIndex` and :class:`TimeIndex`
(Kafka's AbstractIndex, loaded lazily as Kafka's LazyIndex is).

An index file is an array of fixed-size big-endian entries sorted by their key. The file of
the *active* segment is preallocated (sparse, by ``ftruncate``) to its maximum size
(``segment.index.bytes`` rounded down to a whole entry), so a crash leaves zero bytes past the
last entry, and is trimmed to exactly ``entries * entry_size`` bytes when the segment is
rolled or closed; the zero bytes of an untrimmed file are recognised because they break the
sorted order, and the index is then rebuilt from the log (indexes are derived data, DESIGN.md
decision 3). Stale entries left in the file past the in-memory ones (after a truncation) are
overwritten with zeros when the index is next written, for the same reason.

File descriptors: none is kept open. Kafka mmaps an index and closes its descriptor at once;
Python 3.11's ``mmap`` keeps a duplicate descriptor per mapping, which cost a broker three
descriptors per partition (the ``.log`` and two index mappings), so the entries live instead
in a ``bytearray`` holding exactly the entries in use (no preallocated memory). It is read
from the file on first use (:meth:`_load`), never at construction, and the entries added since
the last write are written back with ``pwrite`` through a short-lived descriptor by
:meth:`write_dirty` (no fsync), :meth:`flush` (fsync), on trim and on close. An index that is
not written back before a crash lags its log; recovery and the tail check of the last segment
re-index what it lacks (segment.py), so a lag costs a scan, never a wrong answer.
:meth:`unload` drops the entries of an idle closed segment from memory (bounded by the log
manager's :class:`~data_plane.storage.segment_cache.OpenSegmentCache`).

Thread-safety: appends, lookups and truncation run on the log's owner thread (the caller holds
the log's lock for mutations); :meth:`flush` may run on a background thread concurrently with
them. Loading, writing back, resizing and closing are serialised by an internal lock; a lookup
takes a local reference to the entry buffer, so an :meth:`unload` meanwhile is harmless.
"""

from __future__ import annotations

import os
import threading

from data_plane.storage.errors import LogClosedError


class AbstractIndex:
    entry_size: int = 0

    def __init__(
        self,
        path: str,
        base_offset: int,
        max_index_bytes: int,
        writable: bool,
        *,
        create_now: bool = True,
    ) -> None:
        """A read-only index (``writable`` False: a closed segment's) does no I/O here; its
        file is read on first use. A writable one (the active segment's) is created if
        missing and preallocated to ``max_index_bytes`` now, or, with ``create_now`` False
        (a new segment nothing was appended to yet), by :meth:`create_file`."""
        if max_index_bytes < self.entry_size:
            raise ValueError(f"max_index_bytes {max_index_bytes} below one entry")
        self.path = path
        self.base_offset = base_offset
        self.max_index_bytes = max_index_bytes - max_index_bytes % self.entry_size
        self._lock = threading.Lock()
        self._buf: bytearray | None = None
        self._n = 0
        self._misaligned = False
        self._closed = False
        self._writable = writable
        # Entries [0, _dirty_from) equal the file's; the file may hold non-zero bytes for
        # entries up to _file_entries (stale ones past _n are zeroed on the next write).
        self._dirty_from = 0
        self._file_entries = 0
        self._file_exists = True
        if writable and not create_now:
            self._file_exists = False
            self._buf = bytearray()
        elif writable:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                existing = os.fstat(fd).st_size
                if existing == 0:
                    # A new segment: nothing to read; a sparse file costs no blocks.
                    os.ftruncate(fd, self.max_index_bytes)
                    self._buf = bytearray()
            finally:
                os.close(fd)
            if existing:
                self.make_writable()

    def create_file(self) -> None:
        """Create the (preallocated) file of an index made with ``create_now`` False; a
        no-op when it exists."""
        with self._lock:
            if self._file_exists:
                return
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                if os.fstat(fd).st_size == 0:
                    os.ftruncate(fd, self.max_index_bytes if self._writable else 0)
            finally:
                os.close(fd)
            self._file_exists = True

    # -- loading -----------------------------------------------------------------------------

    @property
    def is_loaded(self) -> bool:
        return self._buf is not None

    def _load(self) -> bytearray:
        with self._lock:
            buf = self._buf
            if buf is not None:
                return buf
            if self._closed:
                raise LogClosedError(f"index {self.path} is closed")
            try:
                with open(self.path, "rb", buffering=0) as f:
                    data = f.read()
            except FileNotFoundError:
                data = b""
            # A file that is not a whole number of entries is corrupt; callers check
            # `is_misaligned` and rebuild. Keep only whole entries meanwhile.
            self._misaligned = len(data) % self.entry_size != 0
            self._n = len(data) // self.entry_size
            buf = bytearray(data[: self._n * self.entry_size])
            self._dirty_from = self._file_entries = self._n
            self._buf = buf
            return buf

    @property
    def _entries(self) -> int:
        if self._buf is None:
            self._load()
        return self._n

    @_entries.setter
    def _entries(self, value: int) -> None:
        self._n = value

    @property
    def is_misaligned(self) -> bool:
        if self._buf is None:
            self._load()
        return self._misaligned

    def unload(self) -> None:
        """Write back what is dirty and drop the entries from memory (an idle closed
        segment); the next lookup reads the file again."""
        with self._lock:
            if self._buf is None or self._closed:
                return
            self._write_locked(sync=False, size=None)
            self._buf = None

    def _last_entry_bytes(self) -> bytes | None:
        """The last entry's bytes without loading the file (None when there is none or
        the file is not a whole number of entries)."""
        buf = self._buf
        if buf is not None:
            n = self._n
            return bytes(buf[(n - 1) * self.entry_size : n * self.entry_size]) if n else None
        es = self.entry_size
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except FileNotFoundError:
            return None
        try:
            size = os.fstat(fd).st_size
            if size < es or size % es:
                return None
            return os.pread(fd, es, size - es)
        finally:
            os.close(fd)

    # -- sizes -------------------------------------------------------------------------------

    @property
    def entries(self) -> int:
        return self._entries

    @property
    def max_entries(self) -> int:
        return self.max_index_bytes // self.entry_size

    @property
    def size_in_bytes(self) -> int:
        return self._entries * self.entry_size

    @property
    def is_full(self) -> bool:
        return self._entries >= self.max_entries

    def _map(self) -> bytearray:
        if self._closed:
            raise LogClosedError(f"index {self.path} is closed")
        buf = self._buf
        return buf if buf is not None else self._load()

    def _writable_map(self) -> bytearray:
        """The buffer with room for one more entry at slot ``_entries`` (which becomes
        dirty)."""
        buf = self._map()
        n = self._n
        if n >= self.max_entries:
            raise ValueError(f"index {self.path} is full ({n} entries)")
        end = (n + 1) * self.entry_size
        if len(buf) < end:
            buf.extend(bytes(end - len(buf)))
        if n < self._dirty_from:
            self._dirty_from = n
        return buf

    # -- writing back ------------------------------------------------------------------------

    def _write_locked(self, *, sync: bool, size: int | None) -> None:
        """Write dirty entries, zero stale ones, optionally set the file ``size`` and fsync.
        Holds ``self._lock``."""
        if not self._file_exists:
            # Never created: nothing was ever appended, so there is nothing to write.
            return
        buf = self._buf
        if buf is None:
            if size is None and not sync:
                return
            buf = bytearray()
            n = dirty = stale = 0
        else:
            n, dirty, stale = self._n, self._dirty_from, self._file_entries
        es = self.entry_size
        if dirty >= n and stale <= n and size is None and not sync:
            return
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            length = os.fstat(fd).st_size
            if self._buf is not None:
                if dirty < n:
                    os.pwrite(fd, buf[dirty * es : n * es], dirty * es)
                if stale > n and length > n * es:
                    # Zero the stale entries in O(1): cut the file after ours, then (below)
                    # extend it again as a hole if it stays preallocated.
                    os.ftruncate(fd, n * es)
                    if size is None:
                        size = length
                    length = n * es
                self._dirty_from = self._file_entries = n
            if size is not None and length != size:
                os.ftruncate(fd, size)
            if sync:
                os.fdatasync(fd)
        finally:
            os.close(fd)

    def write_dirty(self) -> None:
        """Write entries added since the last write to the file (page cache, no fsync)."""
        with self._lock:
            if not self._closed:
                self._write_locked(sync=False, size=None)

    def flush(self) -> None:
        """Write back dirty entries and fsync the file (safe from a background thread)."""
        with self._lock:
            if not self._closed and self._buf is not None:
                self._write_locked(sync=True, size=None)

    # -- lifecycle ---------------------------------------------------------------------------

    def resize(self, new_size_bytes: int) -> None:
        """Write back and set the file to ``new_size_bytes`` (rounded down to whole entries,
        never below the entries in use)."""
        if self._buf is None:
            self._load()
        size = max(new_size_bytes - new_size_bytes % self.entry_size, self.size_in_bytes)
        with self._lock:
            if self._closed:
                raise LogClosedError(f"index {self.path} is closed")
            self._write_locked(sync=False, size=size)

    def make_writable(self) -> None:
        """Preallocate to the maximum size again (a segment that becomes active)."""
        self._writable = True
        self.resize(self.max_index_bytes)

    def trim_to_valid_size(self) -> None:
        self._writable = False
        self.resize(self.size_in_bytes)

    def reset(self) -> None:
        """Drop every entry (before a rebuild), without reading the file."""
        with self._lock:
            if self._buf is None:
                # The file's old entries, whatever they are, are stale from now on.
                try:
                    self._file_entries = os.stat(self.path).st_size // self.entry_size
                except FileNotFoundError:
                    self._file_entries = 0
                self._buf = bytearray()
            self._n = 0
            self._dirty_from = 0
            self._misaligned = False

    def truncate_to_entries(self, entries: int) -> None:
        n = min(self._entries, max(entries, 0))
        self._n = n
        if n < self._dirty_from:
            self._dirty_from = n

    def close(self) -> None:
        """Trim the file to its entries and release the memory; idempotent."""
        if self._closed:
            return
        if self._buf is not None or self._writable:
            self.trim_to_valid_size()
        with self._lock:
            self._buf = None
            self._closed = True

    def close_handler(self) -> None:
        """Release the memory without touching the file (the file is about to be deleted)."""
        with self._lock:
            self._buf = None
            self._closed = True

    def rename_to(self, new_path: str) -> None:
        os.replace(self.path, new_path)
        self.path = new_path

    def delete(self) -> None:
        self.close_handler()
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass

    # -- search ------------------------------------------------------------------------------

    def _key_at(self, m: bytearray, slot: int) -> int:
        raise NotImplementedError

    def _largest_lower_bound_slot(self, target: int) -> int:
        """Slot of the last entry whose key <= ``target``; -1 if there is none."""
        m = self._map()
        n = self._n
        if n == 0:
            return -1
        if self._key_at(m, 0) > target:
            return -1
        # Fetches read near the log end: a target past the last entry needs no search.
        if self._key_at(m, n - 1) <= target:
            return n - 1
        lo, hi = 0, n - 1
        while lo < hi:
            mid = (lo + hi + 1) >> 1
            if self._key_at(m, mid) <= target:
                lo = mid
            else:
                hi = mid - 1
        return lo

    def _smallest_upper_bound_slot(self, target: int) -> int:
        """Slot of the first entry whose key >= ``target``; ``entries`` if there is none."""
        m = self._map()
        lo, hi = 0, self._n
        if hi == 0:
            return 0
        while lo < hi:
            mid = (lo + hi) >> 1
            if self._key_at(m, mid) < target:
                lo = mid + 1
            else:
                hi = mid
        return lo
