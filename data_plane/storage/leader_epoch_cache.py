"""LeaderEpochFileCache: which leader epoch wrote which offsets (Kafka's LeaderEpochFileCache).

An entry ``(epoch, start_offset)`` says that the leader of ``epoch`` wrote its first record at
``start_offset``; the epoch's records end where the next entry starts (or at the log end
offset for the latest epoch). Followers use it to find where their log diverges from a new
leader's (OffsetForLeaderEpoch, KIP-101/KIP-279) instead of trusting the high watermark.

File ``<partition dir>/leader-epoch-checkpoint`` in Kafka's checkpoint text format::

    0                 version
    2                 number of entries
    0 0               epoch SP start offset, epochs and start offsets strictly increasing
    3 1200

Every change is written at once, atomically (``.tmp``, fsync, rename, directory fsync), so a
crash leaves the old or the new file. Changes are rare (one per leader change or truncation).
The one exception is ``truncate_from_end(..., write=False)``, the truncation a log makes when
it loads: it changes only the entries in memory and leaves the file *stale* (still naming the
dropped epochs) until :meth:`write_pending`, which the log calls before it appends anything.
A stale file is harmless while the log does not grow: the next load drops the same entries
again. Loading then costs no write, where an empty log would otherwise rewrite its file (two
fsyncs) at every start.

Invariants: epochs and start offsets strictly increase along the entries. ``assign`` ignores an
epoch that is not newer than the latest one (a follower sees every batch of an epoch).

Thread-safety: every method holds the instance lock; the Log calls it under its own lock.
"""

from __future__ import annotations

import itertools
import threading
from typing import NamedTuple

from data_plane.storage.checkpoints import CHECKPOINT_VERSION, write_lines_durably
from data_plane.storage.errors import CorruptCheckpointError

LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
UNDEFINED_EPOCH = -1
UNDEFINED_EPOCH_OFFSET = -1


class EpochEntry(NamedTuple):
    epoch: int
    start_offset: int


class EpochEndOffset(NamedTuple):
    """Answer of :meth:`LeaderEpochFileCache.end_offset_for`: the largest epoch <= the one asked
    for and the offset where it ended (UNDEFINED when no such epoch is known)."""

    epoch: int
    end_offset: int


class LeaderEpochFileCache:
    def __init__(self, path: str) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._entries: list[EpochEntry] = _read(path)
        # The file still names epochs dropped by truncate_from_end(write=False).
        self.stale = False

    # -- queries -------------------------------------------------------------------------------

    def entries(self) -> list[EpochEntry]:
        with self._lock:
            return list(self._entries)

    @property
    def latest_epoch(self) -> int:
        with self._lock:
            return self._entries[-1].epoch if self._entries else UNDEFINED_EPOCH

    def end_offset_for(self, requested_epoch: int, log_end_offset: int) -> EpochEndOffset:
        """Kafka's endOffsetFor:

        - the latest epoch: (it, ``log_end_offset``);
        - an epoch newer than every entry, or UNDEFINED: UNDEFINED / UNDEFINED;
        - an epoch older than every entry: (the requested epoch, the first entry's start);
        - else the largest known epoch <= it and the start offset of the next entry."""
        with self._lock:
            entries = self._entries
            if requested_epoch == UNDEFINED_EPOCH or not entries:
                return EpochEndOffset(UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET)
            if requested_epoch == entries[-1].epoch:
                return EpochEndOffset(requested_epoch, log_end_offset)
            if requested_epoch > entries[-1].epoch:
                return EpochEndOffset(UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET)
            floor = None
            for e in entries:
                if e.epoch > requested_epoch:
                    if floor is None:
                        return EpochEndOffset(requested_epoch, e.start_offset)
                    return EpochEndOffset(floor.epoch, e.start_offset)
                floor = e
            return EpochEndOffset(UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET)

    # -- changes -------------------------------------------------------------------------------

    def assign(self, epoch: int, start_offset: int) -> bool:
        """Record that ``epoch`` starts at ``start_offset``; True if an entry was added. An epoch
        not newer than the latest is ignored; entries at or after ``start_offset`` are dropped
        first (they were never replicated, or the log was truncated under them)."""
        if epoch < 0 or start_offset < 0:
            return False
        with self._lock:
            if self._entries and epoch <= self._entries[-1].epoch:
                return False
            self._entries = [e for e in self._entries if e.start_offset < start_offset]
            self._entries.append(EpochEntry(epoch, start_offset))
            self._write_locked()
            return True

    def truncate_from_end(self, end_offset: int, *, write: bool = True) -> None:
        """The log was truncated to ``end_offset``: drop epochs starting at or after it. With
        ``write`` False the file is left stale (see the module docstring)."""
        with self._lock:
            kept = [e for e in self._entries if e.start_offset < end_offset]
            if len(kept) != len(self._entries):
                self._entries = kept
                if write:
                    self._write_locked()
                else:
                    self.stale = True

    def write_pending(self) -> bool:
        """Write a stale file; True if it was stale."""
        with self._lock:
            if not self.stale:
                return False
            self._write_locked()
            return True

    def truncate_from_start(self, start_offset: int) -> None:
        """The log start offset moved to ``start_offset``: the epoch covering it now starts
        there; older epochs go."""
        with self._lock:
            entries = self._entries
            covering = None
            kept = []
            for e in entries:
                if e.start_offset <= start_offset:
                    covering = e
                else:
                    kept.append(e)
            if covering is not None:
                kept.insert(0, EpochEntry(covering.epoch, start_offset))
            if kept != entries:
                self._entries = kept
                self._write_locked()

    def clear(self) -> None:
        with self._lock:
            if self._entries:
                self._entries = []
                self._write_locked()

    def _write_locked(self) -> None:
        lines = [str(CHECKPOINT_VERSION), str(len(self._entries))]
        lines += [f"{e.epoch} {e.start_offset}" for e in self._entries]
        write_lines_durably(self.path, lines)
        self.stale = False


def _read(path: str) -> list[EpochEntry]:
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except FileNotFoundError:
        return []
    except UnicodeDecodeError:
        raise CorruptCheckpointError(f"{path}: not UTF-8 text") from None
    try:
        if int(lines[0]) != CHECKPOINT_VERSION:
            raise CorruptCheckpointError(f"{path}: unknown version {lines[0]!r}")
        count = int(lines[1])
        entries = []
        for n, line in enumerate(lines[2 : 2 + count], start=3):
            parts = line.split()
            if len(parts) != 2:
                raise CorruptCheckpointError(f"{path}:{n}: expected 'epoch offset', got {line!r}")
            entries.append(EpochEntry(int(parts[0]), int(parts[1])))
    except (IndexError, ValueError) as e:
        raise CorruptCheckpointError(f"{path}: does not parse: {e}") from None
    if len(entries) != count:
        raise CorruptCheckpointError(f"{path}: {len(entries)} entries, header says {count}")
    for a, b in itertools.pairwise(entries):
        if b.epoch <= a.epoch or b.start_offset <= a.start_offset:
            raise CorruptCheckpointError(f"{path}: entries not increasing: {a} then {b}")
    return entries
