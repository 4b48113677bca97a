"""OpenSegmentCache: the bound on how many closed segments hold an open ``.log`` descriptor
and loaded indexes at once, least recently used first out.

A broker hosting 10,000 partitions cannot keep every segment of every partition open (the
open-files limit; Kafka itself needs a large ``ulimit -n`` for that reason). Only each log's
*active* segment stays open for good (one descriptor per partition, its indexes held in
memory); a closed segment opens its ``.log`` and reads its indexes when a read, a lookup or
retention first needs them, and registers here. Past ``max_open_segments`` the least recently
used one is released: its descriptor is let go (closed once no slice handed out still
references it, see :class:`~data_plane.storage.file_records.SegmentFile`) and its index
entries dropped from memory. It is opened again on its next use.

Thread-safety: every method may be called from any thread (one internal lock). Releasing a
victim happens outside that lock and only lets go of references, so a victim in use on another
thread finishes its operation on the descriptor it already holds.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Protocol

# Default bound on closed segments held open per log manager: well under the usual
# open-files limits (1024 soft in many shells) with room for sockets and the active segments'
# descriptors counted separately.
DEFAULT_MAX_OPEN_SEGMENTS = 512


class Releasable(Protocol):
    def release_resources(self) -> None: ...


class OpenSegmentCache:
    def __init__(self, max_open_segments: int = DEFAULT_MAX_OPEN_SEGMENTS) -> None:
        if max_open_segments < 1:
            raise ValueError(f"max_open_segments must be >= 1, got {max_open_segments}")
        self.max_open_segments = max_open_segments
        self._lock = threading.Lock()
        self._open: OrderedDict[int, Releasable] = OrderedDict()
        self.evictions = 0

    def __len__(self) -> int:
        with self._lock:
            return len(self._open)

    def touch(self, segment: Releasable) -> None:
        """Mark ``segment`` (now holding resources) as the most recently used; release the
        least recently used ones beyond the bound."""
        key = id(segment)
        victims: list[Releasable] = []
        with self._lock:
            if key in self._open:
                self._open.move_to_end(key)
                return
            self._open[key] = segment
            while len(self._open) > self.max_open_segments:
                _, victim = self._open.popitem(last=False)
                victims.append(victim)
            self.evictions += len(victims)
        for victim in victims:
            victim.release_resources()

    def forget(self, segment: Releasable) -> None:
        """Stop tracking ``segment`` (it became active, or was closed or deleted)."""
        with self._lock:
            self._open.pop(id(segment), None)
