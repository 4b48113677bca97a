"""OffsetMap: the log cleaner's key -> latest offset map, bounded in memory (Kafka's
SkimpyOffsetMap).

Keys are not stored: each is replaced by its 16-byte BLAKE2b digest, as Kafka stores an MD5
digest, so a map's memory does not depend on key sizes. Two keys with one digest would make
the older record of one look superseded by the other (a 2**-128 chance per pair; Kafka takes
the same risk).

Memory bound: the map holds at most ``memory_bytes * load_factor / BYTES_PER_ENTRY`` keys.
:data:`BYTES_PER_ENTRY` is what one entry costs in CPython 3.11 (the dict slot and index, the
16-byte ``bytes`` digest object, the ``int`` offset), measured with tracemalloc at 137-153
bytes and rounded up; a unit test checks that a full map stays within ``memory_bytes``. A
:meth:`put` of a new key into a full map raises :class:`OffsetMapFullError` and changes
nothing; the cleaner then stops indexing at the last whole segment it indexed.

Thread-safety: none; one map per cleaner thread.
"""

from __future__ import annotations

import hashlib

# CPython's cost of one entry (see the module docstring).
BYTES_PER_ENTRY = 160
DIGEST_BYTES = 16


class OffsetMapFullError(Exception):
    """A new key did not fit the map (its bound was reached)."""


def key_digest(key: bytes) -> bytes:
    return hashlib.blake2b(key, digest_size=DIGEST_BYTES).digest()


class OffsetMap:
    def __init__(self, memory_bytes: int, load_factor: float = 0.9) -> None:
        if not 0 < load_factor <= 1:
            raise ValueError(f"load factor {load_factor} is not in (0, 1]")
        self.slots = memory_bytes // BYTES_PER_ENTRY
        self.max_entries = int(self.slots * load_factor)
        if self.max_entries < 1:
            raise ValueError(f"{memory_bytes} bytes hold no offset map entry")
        self._map: dict[bytes, int] = {}
        # The largest offset put (Kafka's latestOffset): the end of what the map covers.
        self.latest_offset = -1

    def __len__(self) -> int:
        return len(self._map)

    @property
    def is_full(self) -> bool:
        return len(self._map) >= self.max_entries

    def put(self, key: bytes, offset: int) -> None:
        """Record ``offset`` as the latest of ``key`` (puts come in offset order)."""
        digest = key_digest(key)
        if digest not in self._map and len(self._map) >= self.max_entries:
            raise OffsetMapFullError(
                f"offset map full at {len(self._map)} keys (log.cleaner.dedupe.buffer.size)"
            )
        self._map[digest] = offset
        if offset > self.latest_offset:
            self.latest_offset = offset

    def get(self, key: bytes) -> int:
        """The latest offset of ``key``, or -1 when the map does not hold it."""
        return self._map.get(key_digest(key), -1)

    def clear(self) -> None:
        self._map = {}
        self.latest_offset = -1
