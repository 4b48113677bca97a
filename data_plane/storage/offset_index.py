"""OffsetIndex: the sparse ``.index`` file of a segment, mapping offsets to file positions.

File ``<20-digit base offset>.index``; an array of 8-byte big-endian entries::

    relativeOffset u32   batch last offset - segment base offset
    position       u32   byte position of that batch in the segment's .log

One entry is written per ``index.interval.bytes`` of appended batches, for the batch's *last*
offset (as Kafka does), so entries are strictly increasing in both fields. To find offset O:
take the last entry with offset <= O and scan the .log forward from its position (at most about
``index.interval.bytes`` of batch headers) to the first batch whose last offset >= O.

Thread-safety: see :class:`AbstractIndex`.
"""

from __future__ import annotations

import struct

from data_plane.storage.abstract_index import AbstractIndex
from data_plane.storage.errors import KafkaStorageError

_ENTRY = struct.Struct(">II")
_U32_MAX = (1 << 32) - 1


class InvalidIndexError(KafkaStorageError):
    """An index is not usable as is (unsorted, beyond its log, misaligned): rebuild it."""


class OffsetIndex(AbstractIndex):
    entry_size = _ENTRY.size

    def _key_at(self, m: bytearray, slot: int) -> int:
        key: int = _ENTRY.unpack_from(m, slot * 8)[0]
        return key

    def entry(self, slot: int) -> tuple[int, int]:
        """(absolute offset, position) of entry ``slot``."""
        if not 0 <= slot < self._entries:
            raise IndexError(f"slot {slot} of {self._entries}")
        rel, pos = _ENTRY.unpack_from(self._map(), slot * 8)
        return self.base_offset + rel, pos

    @property
    def last_offset(self) -> int:
        """Offset of the last entry, or the base offset when empty."""
        return self.entry(self._entries - 1)[0] if self._entries else self.base_offset

    def lookup(self, target_offset: int) -> tuple[int, int]:
        """(offset, position) of the last entry with offset <= ``target_offset``, or
        (base offset, 0) when there is none: where a forward scan for the offset starts."""
        slot = self._largest_lower_bound_slot(target_offset - self.base_offset)
        if slot < 0:
            return self.base_offset, 0
        return self.entry(slot)

    def append(self, offset: int, position: int) -> None:
        rel = offset - self.base_offset
        if not 0 <= rel <= _U32_MAX or not 0 <= position <= _U32_MAX:
            raise InvalidIndexError(
                f"offset {offset} / position {position} do not fit index {self.path}"
            )
        if self._entries:
            last_rel, last_pos = _ENTRY.unpack_from(self._map(), (self._entries - 1) * 8)
            if rel <= last_rel or position <= last_pos:
                raise InvalidIndexError(
                    f"index {self.path}: entry ({offset}, {position}) is not after the last "
                    f"entry ({self.base_offset + last_rel}, {last_pos})"
                )
        _ENTRY.pack_into(self._writable_map(), self._entries * 8, rel, position)
        self._entries += 1

    def truncate_to(self, offset: int) -> None:
        """Remove every entry whose offset >= ``offset``."""
        self.truncate_to_entries(self._smallest_upper_bound_slot(offset - self.base_offset))

    def sanity_check(self, log_size_bytes: int) -> None:
        """Raise :class:`InvalidIndexError` unless entries are strictly increasing in offset
        and position and every position lies inside the log."""
        if self.is_misaligned:
            raise InvalidIndexError(f"index {self.path} is not a whole number of entries")
        if not self._entries:
            return
        raw = self._map()[: self._entries * 8]
        prev_rel, prev_pos = -1, -1
        for rel, pos in _ENTRY.iter_unpack(raw):
            if rel <= prev_rel or pos <= prev_pos:
                raise InvalidIndexError(
                    f"index {self.path} is not sorted at relative offset {rel} position {pos}"
                )
            prev_rel, prev_pos = rel, pos
        if prev_pos >= log_size_bytes:
            raise InvalidIndexError(
                f"index {self.path} points at position {prev_pos} beyond its log "
                f"({log_size_bytes} bytes)"
            )
