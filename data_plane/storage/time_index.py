"""TimeIndex: the sparse ``.timeindex`` file of a segment, mapping timestamps to offsets.

File ``<20-digit base offset>.timeindex``; an array of 12-byte big-endian entries::

    timestamp      i64   the largest batch maxTimestamp seen so far in the segment
    relativeOffset u32   last offset of the batch that holds it - segment base offset

An entry is added together with an offset index entry, and only when the segment's largest
timestamp grew, so both fields are strictly increasing. When a segment is rolled or closed a
final entry records its largest timestamp (one slot is kept free for it), so a closed segment's
largest timestamp (used by time retention) is its last entry.

To find the first offset with timestamp >= T: take the last entry with timestamp <= T (every
batch before its offset has a smaller timestamp, so a scan may start at that offset's batch),
look that offset up in the offset index, and scan batches forward to the first whose
maxTimestamp >= T. Batches without a timestamp (-1) never make an entry.

Thread-safety: see :class:`AbstractIndex`.
"""

from __future__ import annotations

import struct

from data_plane.storage.abstract_index import AbstractIndex
from data_plane.storage.offset_index import InvalidIndexError

_ENTRY = struct.Struct(">qI")
NO_TIMESTAMP = -1


class TimeIndex(AbstractIndex):
    entry_size = _ENTRY.size

    def _key_at(self, m: bytearray, slot: int) -> int:
        key: int = _ENTRY.unpack_from(m, slot * 12)[0]
        return key

    def entry(self, slot: int) -> tuple[int, int]:
        """(timestamp, absolute offset) of entry ``slot``."""
        if not 0 <= slot < self._entries:
            raise IndexError(f"slot {slot} of {self._entries}")
        ts, rel = _ENTRY.unpack_from(self._map(), slot * 12)
        return ts, self.base_offset + rel

    @property
    def is_full(self) -> bool:
        # Keep the last slot for the entry written when the segment is rolled.
        return self._entries >= self.max_entries - 1

    def last_entry(self) -> tuple[int, int]:
        """(timestamp, offset) of the last entry; (-1, base offset) when empty."""
        if not self._entries:
            return NO_TIMESTAMP, self.base_offset
        return self.entry(self._entries - 1)

    def peek_last_entry(self) -> tuple[int, int]:
        """:meth:`last_entry` without loading the file (one pread): what a closed segment
        needs for time retention."""
        raw = self._last_entry_bytes()
        if raw is None:
            return NO_TIMESTAMP, self.base_offset
        ts, rel = _ENTRY.unpack(raw)
        return ts, self.base_offset + rel

    def lookup(self, target_timestamp: int) -> tuple[int, int]:
        """(timestamp, offset) of the last entry with timestamp <= ``target_timestamp``, or
        (-1, base offset) when there is none."""
        slot = self._largest_lower_bound_slot(target_timestamp)
        if slot < 0:
            return NO_TIMESTAMP, self.base_offset
        return self.entry(slot)

    def maybe_append(self, timestamp: int, offset: int, *, skip_full_check: bool = False) -> bool:
        """Append (timestamp, offset) when ``timestamp`` is larger than the last entry's;
        return whether an entry was written."""
        if not skip_full_check and self.is_full:
            raise InvalidIndexError(f"time index {self.path} is full")
        last_ts, last_offset = self.last_entry()
        if timestamp <= last_ts:
            return False
        if self._entries and offset < last_offset:
            raise InvalidIndexError(
                f"time index {self.path}: offset {offset} before last entry {last_offset}"
            )
        rel = offset - self.base_offset
        _ENTRY.pack_into(self._writable_map(), self._entries * 12, timestamp, rel)
        self._entries += 1
        return True

    def truncate_to(self, offset: int) -> None:
        """Remove every entry whose offset >= ``offset``."""
        n = self._entries
        if n == 0:
            return
        m = self._map()
        rel_target = offset - self.base_offset
        lo, hi = 0, n
        while lo < hi:
            mid = (lo + hi) >> 1
            if _ENTRY.unpack_from(m, mid * 12)[1] < rel_target:
                lo = mid + 1
            else:
                hi = mid
        self.truncate_to_entries(lo)

    def sanity_check(self, next_offset: int) -> None:
        """Raise :class:`InvalidIndexError` unless timestamps are strictly increasing,
        offsets non-decreasing, and no entry points at or past ``next_offset``."""
        if self.is_misaligned:
            raise InvalidIndexError(f"time index {self.path} is not a whole number of entries")
        if not self._entries:
            return
        raw = self._map()[: self._entries * 12]
        prev_ts, prev_rel = NO_TIMESTAMP - 1, -1
        for ts, rel in _ENTRY.iter_unpack(raw):
            if ts <= prev_ts or rel < prev_rel:
                raise InvalidIndexError(f"time index {self.path} is not sorted at entry {ts}")
            prev_ts, prev_rel = ts, rel
        if self.base_offset + prev_rel >= next_offset:
            raise InvalidIndexError(
                f"time index {self.path} points at offset {self.base_offset + prev_rel} "
                f"beyond its log (next offset {next_offset})"
            )
