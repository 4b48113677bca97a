"""A durable Raft journal behind pysyncobj's journal interface (closes its gap "never fsyncs").

``DurableJournal`` subclasses ``pysyncobj.journal.Journal`` and is what pysyncobj's SyncObj uses
as ``self.__raftLog`` (see :mod:`raft.syncobj_node` for how it is plugged in). pysyncobj's own
``FileJournal`` writes through an mmap and never syncs; its term/vote file is written without
fsync. This one writes with ``os.write`` and makes data durable with ``fdatasync`` at the
points where Raft needs it (group commit):

- a follower's entries are synced before it acknowledges them (``sync()`` is called by the
  transport right before a ``next_node_idx`` reply leaves);
- the leader's entries are synced before the leader counts itself towards a commit (``sync()``
  runs at the top of every tick, and pysyncobj computes the commit index at the top of a tick);
- term and vote are written durably before ``setCurrentTerm`` returns, hence before any vote
  or message in that term is sent;
- ``clear`` and front compaction (``deleteEntriesTo``, done by writing a new file and renaming
  it over the old one) are durable before they return; a tail truncation
  (``deleteEntriesFrom``) is applied lazily, so re-sent identical entries never leave the disk,
  and is durable by the next sync, i.e. before the follower acknowledges anything after it.

So everything appended between two syncs costs one fdatasync.

On-disk layout, ``raft-journal.log``::

    header   b"KLRAFTJ1"                                           8 bytes
    record*  length u32 LE | crc32c u32 LE | index u64 LE | term u64 LE | command bytes
             (length counts index + term + command; crc32c covers the same bytes)

A record that is short or fails its CRC ends the journal: it was never synced, hence never
acknowledged, and is truncated away on open. ``raft-meta.json`` holds
``{"current_term", "voted_for", "commit_index"}``, replaced atomically (write tmp, fsync,
rename, fsync directory).

A :class:`raft.membership.MembershipHistory` attached with :meth:`DurableJournal.attach_membership`
sees every append, truncation, compaction and clear, so the voter set in force always follows
the journal's latest membership entry.

Thread-safety: none; pysyncobj calls it from its tick thread only, and ``sync()`` is called
from that thread too.
"""

from __future__ import annotations

import json
import logging
import os
import struct
from collections.abc import Sequence
from typing import Any

import crc32c
from pysyncobj.journal import Journal

from common.durable_io import fsync_directory, write_all, write_file_durably
from raft.membership import MembershipHistory

logger = logging.getLogger(__name__)

JOURNAL_MAGIC = b"KLRAFTJ1"
_RECORD_HEADER = struct.Struct("<II")
_ENTRY_HEADER = struct.Struct("<QQ")
# A Raft entry is one metadata batch (bounded by metadata.log.max.batch.bytes) pickled; a
# length above this on disk can only be garbage.
MAX_RECORD_BYTES = 64 * 1024 * 1024

Entry = tuple[bytes, int, int]  # (command, raft index, raft term), pysyncobj's entry shape


class JournalCorruptError(Exception):
    """The journal file does not start with the kraftlog journal header."""


def _encode_record(command: bytes, idx: int, term: int) -> bytes:
    body = _ENTRY_HEADER.pack(idx, term) + command
    return _RECORD_HEADER.pack(len(body), crc32c.crc32c(body)) + body


class DurableJournal(Journal):
    def __init__(self, path: str, meta_path: str) -> None:
        self._path = path
        self._dir = os.path.dirname(os.path.abspath(path))
        self._meta_path = meta_path
        self._entries: list[Entry] = []
        self._positions: list[int] = []  # file offset of each entry's record
        self._dirty = False
        # entries removed by deleteEntriesFrom whose bytes are still in the file: (entry, pos)
        self._cut: list[tuple[Entry, int]] = []
        self.sync_count = 0
        # Follows the membership entries this journal holds (see attach_membership).
        self._membership: MembershipHistory | None = None
        self._meta = self._load_meta()
        self._meta_dirty = False
        self._fd = self._open_and_scan()

    # --- loading -------------------------------------------------------------------------

    def _load_meta(self) -> dict[str, Any]:
        if not os.path.exists(self._meta_path):
            return {"current_term": 0, "voted_for": None, "commit_index": 1}
        with open(self._meta_path, encoding="utf-8") as f:
            meta = json.load(f)
        if not isinstance(meta, dict) or not isinstance(meta.get("current_term"), int):
            raise JournalCorruptError(f"{self._meta_path}: not a kraftlog raft meta file")
        return meta

    def _open_and_scan(self) -> int:
        fd = os.open(self._path, os.O_RDWR | os.O_CREAT, 0o600)
        data = b""
        size = os.fstat(fd).st_size
        if size:
            with open(self._path, "rb") as f:
                data = f.read()
        if size == 0:
            write_all(fd, JOURNAL_MAGIC)
            os.fsync(fd)
            fsync_directory(self._dir)
            return fd
        if not data.startswith(JOURNAL_MAGIC):
            os.close(fd)
            raise JournalCorruptError(f"{self._path}: not a kraftlog raft journal")
        pos = len(JOURNAL_MAGIC)
        while pos + _RECORD_HEADER.size <= len(data):
            length, crc = _RECORD_HEADER.unpack_from(data, pos)
            start = pos + _RECORD_HEADER.size
            if (
                length < _ENTRY_HEADER.size
                or length > MAX_RECORD_BYTES
                or start + length > len(data)
            ):
                break
            body = data[start : start + length]
            if crc32c.crc32c(body) != crc:
                break
            idx, term = _ENTRY_HEADER.unpack_from(body, 0)
            self._entries.append((bytes(body[_ENTRY_HEADER.size :]), idx, term))
            self._positions.append(pos)
            pos = start + length
        if pos != len(data):
            logger.warning(
                "%s: truncating %d bytes of torn or corrupt tail (never acknowledged)",
                self._path,
                len(data) - pos,
            )
            os.ftruncate(fd, pos)
            os.fsync(fd)
        os.lseek(fd, 0, os.SEEK_END)
        return fd

    # --- pysyncobj's Journal interface ----------------------------------------------------

    def add(self, command: bytes | str, idx: int, term: int) -> None:
        cmd = command if isinstance(command, bytes) else command.encode("utf-8")
        entry = (cmd, idx, term)
        if self._cut:
            if self._cut[0][0] == entry:
                # Re-sent entry identical to the one a pending truncation removed: keep the
                # bytes already on disk (and already acknowledged).
                _, pos = self._cut.pop(0)
                self._entries.append(entry)
                self._positions.append(pos)
                if self._membership is not None:
                    self._membership.on_append(cmd, idx)
                return
            self._apply_cut()
        pos = os.lseek(self._fd, 0, os.SEEK_END)
        try:
            write_all(self._fd, _encode_record(cmd, idx, term))
        except OSError:
            # e.g. disk full after a partial write: cut the partial record off, or the next
            # record would land behind it and be unreadable after a restart.
            try:
                os.ftruncate(self._fd, pos)
            except OSError:
                logger.exception("%s: cannot cut a partial record at %d", self._path, pos)
            raise
        self._entries.append(entry)
        self._positions.append(pos)
        self._dirty = True
        if self._membership is not None:
            self._membership.on_append(cmd, idx)

    def clear(self) -> None:
        self._cut = []
        self._truncate_at(len(JOURNAL_MAGIC))
        self._entries = []
        self._positions = []
        if self._membership is not None:
            self._membership.clear()

    def deleteEntriesFrom(self, entryFrom: int) -> None:
        """Remove entries from position ``entryFrom`` on, lazily.

        pysyncobj's follower truncates whenever an AppendEntries starts before its last entry,
        even when the leader merely re-sends entries the follower already has (its leader
        moves nextIndex back on every acknowledgement that is older than what it has in
        flight). Truncating the file and writing the same entries again would, for a moment,
        remove acknowledged entries from disk. So the removed entries are kept aside (``_cut``)
        and the file is only truncated at the first re-added entry that differs, or at the next
        ``sync()`` if fewer entries came back."""
        if entryFrom >= len(self._entries):
            return
        entryFrom = max(entryFrom, 0)
        if self._membership is not None:
            self._membership.truncate_from(self._entries[entryFrom][1])
        removed = list(zip(self._entries[entryFrom:], self._positions[entryFrom:], strict=True))
        self._cut = removed + self._cut
        del self._entries[entryFrom:]
        del self._positions[entryFrom:]

    def _apply_cut(self) -> None:
        if self._cut:
            pos = self._cut[0][1]
            self._cut = []
            os.ftruncate(self._fd, pos)
            os.lseek(self._fd, 0, os.SEEK_END)
            self._dirty = True  # the next sync makes the new length durable

    def deleteEntriesTo(self, entryTo: int) -> None:
        """Drop entries before position ``entryTo`` (after pysyncobj dumped the state).

        The dump was renamed into place just before; syncing the directory first makes that
        rename durable before the entries it replaces disappear."""
        if entryTo <= 0:
            return
        self._apply_cut()
        fsync_directory(self._dir)
        keep = self._entries[entryTo:]
        tmp = self._path + ".tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        positions = []
        pos = len(JOURNAL_MAGIC)
        chunks = [JOURNAL_MAGIC]
        for command, idx, term in keep:
            record = _encode_record(command, idx, term)
            positions.append(pos)
            pos += len(record)
            chunks.append(record)
        try:
            write_all(fd, b"".join(chunks))
            os.fsync(fd)
        except BaseException:
            os.close(fd)
            raise
        os.replace(tmp, self._path)
        fsync_directory(self._dir)
        os.close(self._fd)
        self._fd = fd
        os.lseek(self._fd, 0, os.SEEK_END)
        if self._membership is not None:
            first = keep[0][1] if keep else self._entries[-1][1] + 1
            self._membership.compact_before(first)
        self._entries = keep
        self._positions = positions
        self._dirty = False

    def __getitem__(self, item: int | slice) -> Any:
        return self._entries[item]

    def __len__(self) -> int:
        return len(self._entries)

    def _destroy(self) -> None:
        if self._fd < 0:
            return
        self.sync()
        self._store_meta()
        os.close(self._fd)
        self._fd = -1

    def setRaftCommitIndex(self, raftCommitIndex: int) -> None:
        # Not needed for safety (a restarted voter re-learns it from the leader); stored
        # lazily so a restarted voter serves its committed entries without waiting.
        if self._meta.get("commit_index") != raftCommitIndex:
            self._meta["commit_index"] = raftCommitIndex
            self._meta_dirty = True

    def getRaftCommitIndex(self) -> int:
        return int(self._meta.get("commit_index", 1))

    def setCurrentTerm(self, term: int, votedForNodeId: str | None) -> None:
        self._meta["current_term"] = term
        self._meta["voted_for"] = votedForNodeId
        self._store_meta()

    def getCurrentTerm(self) -> int:
        return int(self._meta.get("current_term", 0))

    def getVotedForNodeId(self) -> str | None:
        return self._meta.get("voted_for")

    def onOneSecondTimer(self) -> None:
        if self._meta_dirty:
            self._store_meta()

    # --- kraftlog additions -----------------------------------------------------------------

    @property
    def dirty(self) -> bool:
        """Entries were added or removed since the last sync."""
        return self._dirty or bool(self._cut)

    def sync(self) -> None:
        """Make every added entry (and any truncation) durable: one fdatasync for all."""
        if self._fd < 0:
            return
        self._apply_cut()
        if self._dirty:
            os.fdatasync(self._fd)
            self._dirty = False
            self.sync_count += 1

    def attach_membership(self, history: MembershipHistory) -> None:
        """Keep ``history`` in step with this journal from now on: it first sees every
        entry the journal holds, then every append, truncation, compaction and clear."""
        self._membership = history
        for command, idx, _term in self._entries:
            history.on_append(command, idx)

    def term_at(self, idx: int) -> int | None:
        """The term of the entry with Raft index ``idx``, None if not in the journal."""
        if not self._entries:
            return None
        pos = idx - self._entries[0][1]
        if 0 <= pos < len(self._entries) and self._entries[pos][1] == idx:
            return self._entries[pos][2]
        return None

    def trim_to_dump(self, dump_entries: Sequence[Entry]) -> None:
        """Reconcile with a dump written just before a crash.

        pysyncobj dumps the state, renames the dump into place and only then drops the
        journal's older entries. A crash in between leaves a journal that does not start with
        the dump's two boundary entries, and pysyncobj would then discard the whole journal,
        including acknowledged entries after the dump. Drop the older entries here instead."""
        if not dump_entries:
            return
        first = dump_entries[0]
        for pos, entry in enumerate(self._entries):
            if entry[1] == first[1]:
                if entry == first and pos > 0:
                    self.deleteEntriesTo(pos)
                return

    def _truncate_at(self, pos: int) -> None:
        os.ftruncate(self._fd, pos)
        os.lseek(self._fd, 0, os.SEEK_END)
        os.fsync(self._fd)
        self._dirty = False

    def _store_meta(self) -> None:
        write_file_durably(self._meta_path, json.dumps(self._meta).encode("utf-8"), mode=0o600)
        self._meta_dirty = False
