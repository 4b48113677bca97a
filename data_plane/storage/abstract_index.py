"""The memory-mapped, fixed-width-entry file shared by :class:`OffsetIndex` and
:class:`TimeIndex` (Kafka's AbstractIndex).

An index file is an array of fixed-size big-endian entries sorted by their key. The file of
the *active* segment is preallocated to its maximum size (``segment.index.bytes`` rounded down
to a whole entry), so appends never grow it, and is trimmed to exactly ``entries * entry_size``
bytes when the segment is rolled or closed; the zero bytes past the last entry of an untrimmed
file (after a crash) are recognised because they break the sorted order and the index is then
rebuilt from the log (indexes are derived data, DESIGN.md decision 3).

Thread-safety: appends, lookups and truncation run on the log's owner thread (the caller holds
the log's lock for mutations); :meth:`flush` may run on a background thread concurrently with
them; resizing, flushing and closing the mapping are serialised by an internal lock.
"""

from __future__ import annotations

import mmap
import os
import threading

from data_plane.storage.errors import LogClosedError


class AbstractIndex:
    entry_size: int = 0

    def __init__(self, path: str, base_offset: int, max_index_bytes: int, writable: bool) -> None:
        if max_index_bytes < self.entry_size:
            raise ValueError(f"max_index_bytes {max_index_bytes} below one entry")
        self.path = path
        self.base_offset = base_offset
        self.max_index_bytes = max_index_bytes - max_index_bytes % self.entry_size
        self._lock = threading.Lock()
        self._mmap: mmap.mmap | None = None
        self._closed = False
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            length = os.fstat(fd).st_size
            # A file that is not a whole number of entries is corrupt; callers check
            # `is_misaligned` and rebuild. Keep only whole entries meanwhile.
            self.is_misaligned = length % self.entry_size != 0
            self._entries = length // self.entry_size
            if writable:
                # Never cut existing entries (segment.index.bytes may have been lowered).
                length = max(self.max_index_bytes, self._entries * self.entry_size)
                os.ftruncate(fd, length)
            self._length = length
            if length > 0:
                self._mmap = mmap.mmap(fd, length)
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

    def _map(self) -> mmap.mmap:
        if self._closed:
            raise LogClosedError(f"index {self.path} is closed")
        if self._mmap is None:
            raise LogClosedError(f"index {self.path} is not writable")
        return self._mmap

    def _writable_map(self) -> mmap.mmap:
        m = self._map()
        if self._entries * self.entry_size + self.entry_size > self._length:
            raise ValueError(f"index {self.path} is full ({self._entries} entries)")
        return m

    # -- lifecycle ---------------------------------------------------------------------------

    def resize(self, new_size_bytes: int) -> None:
        """Set the file and mapping to ``new_size_bytes`` (rounded down to whole entries,
        never below the entries in use)."""
        size = max(new_size_bytes - new_size_bytes % self.entry_size, self.size_in_bytes)
        with self._lock:
            if self._closed:
                raise LogClosedError(f"index {self.path} is closed")
            if self._mmap is not None:
                self._mmap.flush()
                self._mmap.close()
                self._mmap = None
            fd = os.open(self.path, os.O_RDWR)
            try:
                os.ftruncate(fd, size)
                self._length = size
                if size > 0:
                    self._mmap = mmap.mmap(fd, size)
            finally:
                os.close(fd)

    def make_writable(self) -> None:
        """Preallocate to the maximum size again (a segment that becomes active on reopen)."""
        self.resize(self.max_index_bytes)

    def trim_to_valid_size(self) -> None:
        self.resize(self.size_in_bytes)

    def reset(self) -> None:
        """Drop every entry (before a rebuild)."""
        self._entries = 0

    def truncate_to_entries(self, entries: int) -> None:
        self._entries = min(self._entries, max(entries, 0))

    def flush(self) -> None:
        with self._lock:
            if self._mmap is not None and not self._closed:
                self._mmap.flush()

    def close(self) -> None:
        """Trim the file to its entries and release the mapping; idempotent."""
        if self._closed:
            return
        self.trim_to_valid_size()
        with self._lock:
            if self._mmap is not None:
                self._mmap.close()
                self._mmap = None
            self._closed = True

    def close_handler(self) -> None:
        """Release the mapping without touching the file (the file is about to be deleted)."""
        with self._lock:
            if self._mmap is not None:
                self._mmap.close()
                self._mmap = None
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

    def _key_at(self, m: mmap.mmap, slot: int) -> int:
        raise NotImplementedError

    def _largest_lower_bound_slot(self, target: int) -> int:
        """Slot of the last entry whose key <= ``target``; -1 if there is none."""
        if self._entries == 0:
            return -1
        m = self._map()
        if self._key_at(m, 0) > target:
            return -1
        lo, hi = 0, self._entries - 1
        while lo < hi:
            mid = (lo + hi + 1) >> 1
            if self._key_at(m, mid) <= target:
                lo = mid
            else:
                hi = mid - 1
        return lo

    def _smallest_upper_bound_slot(self, target: int) -> int:
        """Slot of the first entry whose key >= ``target``; ``entries`` if there is none."""
        lo, hi = 0, self._entries
        if hi == 0:
            return 0
        m = self._map()
        while lo < hi:
            mid = (lo + hi) >> 1
            if self._key_at(m, mid) < target:
                lo = mid + 1
            else:
                hi = mid
        return lo
