"""TransactionIndex: a segment's aborted transactions (Kafka's ``.txnindex``).

One entry per transaction aborted by a marker in the segment, in marker order, each 34 bytes
(big-endian)::

    pos  size  field
    0    2     version i16 (= 0)
    2    8     producer_id i64
    10   8     first_offset i64        first offset of the transaction's records
    18   8     last_offset i64         offset of its ABORT marker
    26   8     last_stable_offset i64  the partition's LSO right after the abort

A read_committed Fetch gets, for the range it returns, every aborted transaction that overlaps
it (``last_offset >= fetch offset`` and ``first_offset < upper bound``); the consumer drops
that producer's records from ``first_offset`` until it meets the producer's marker.

The file ``<base>.txnindex`` exists only once the segment has an aborted transaction. Entries
are kept in memory (loaded on first use: a few per segment) and written through to the file;
fsync comes with the segment's flush. The index is derived data: the log rebuilds it by
replaying batch headers from its producer snapshot (log.py), after truncating entries at or
above the replay point. A file with a partial or unknown trailing entry is cut back to its
last whole entry on load.

Thread-safety: none; driven by its segment under the log's lock.
"""

from __future__ import annotations

import logging
import os
import struct
from dataclasses import dataclass

from common.durable_io import fsync_file
from data_plane.storage.errors import KafkaStorageError

logger = logging.getLogger(__name__)

TXN_INDEX_SUFFIX = ".txnindex"
TXN_INDEX_VERSION = 0
_ENTRY = struct.Struct(">hqqqq")
ENTRY_SIZE = _ENTRY.size  # 34


@dataclass(frozen=True, slots=True)
class AbortedTxn:
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int

    def encode(self) -> bytes:
        return _ENTRY.pack(
            TXN_INDEX_VERSION,
            self.producer_id,
            self.first_offset,
            self.last_offset,
            self.last_stable_offset,
        )


def decode_entries(data: bytes) -> tuple[list[AbortedTxn], int]:
    """The whole entries at the start of ``data`` and the bytes they take (a partial or
    unknown trailing entry ends them). Pure; used by the index and by ``kraftlog log dump``."""
    entries: list[AbortedTxn] = []
    pos = 0
    while pos + ENTRY_SIZE <= len(data):
        version, pid, first, last, lso = _ENTRY.unpack_from(data, pos)
        if version != TXN_INDEX_VERSION or last < first:
            break
        entries.append(AbortedTxn(pid, first, last, lso))
        pos += ENTRY_SIZE
    return entries, pos


class TransactionIndex:
    """The aborted transactions of one segment, file ``path`` (created by the first entry)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._entries: list[AbortedTxn] | None = None
        self._dirty = False

    def _load(self) -> list[AbortedTxn]:
        if self._entries is not None:
            return self._entries
        try:
            with open(self.path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            data = b""
        entries, pos = decode_entries(data)
        if pos != len(data):
            logger.warning(
                "%s: cutting %d bytes of unreadable entries after %d whole entries",
                self.path,
                len(data) - pos,
                len(entries),
            )
            self._rewrite(entries)
        self._entries = entries
        return entries

    @property
    def entries(self) -> list[AbortedTxn]:
        """Every entry, in marker order (do not mutate)."""
        return self._load()

    def append(self, txn: AbortedTxn) -> None:
        """Add an entry; its marker must follow every entry's (offsets never go backwards)."""
        entries = self._load()
        if entries and txn.last_offset <= entries[-1].last_offset:
            raise ValueError(
                f"{self.path}: aborted transaction ending at {txn.last_offset} does not follow "
                f"{entries[-1].last_offset}"
            )
        try:
            with open(self.path, "ab") as f:
                f.write(txn.encode())
        except OSError as e:
            raise KafkaStorageError(f"{self.path}: append failed: {e}") from e
        entries.append(txn)
        self._dirty = True

    def collect(self, fetch_offset: int, upper_bound: int) -> list[AbortedTxn]:
        """Entries overlapping [``fetch_offset``, ``upper_bound``)."""
        return [
            t
            for t in self._load()
            if t.last_offset >= fetch_offset and t.first_offset < upper_bound
        ]

    def truncate_to(self, offset: int) -> None:
        """Remove entries whose marker is at or above ``offset``."""
        entries = self._load()
        kept = [t for t in entries if t.last_offset < offset]
        if len(kept) != len(entries):
            self._rewrite(kept)
            self._entries = kept

    def _rewrite(self, entries: list[AbortedTxn]) -> None:
        if not entries:
            self.delete()
            return
        try:
            with open(self.path, "r+b") as f:
                f.truncate(len(entries) * ENTRY_SIZE)
        except FileNotFoundError:
            with open(self.path, "wb") as f:
                f.write(b"".join(t.encode() for t in entries))
        self._dirty = True

    def flush(self) -> None:
        if not self._dirty:
            return
        fsync_file(self.path)
        self._dirty = False

    def rename_to(self, new_path: str) -> None:
        """Rename the file (if any) and remember the new path."""
        try:
            os.replace(self.path, new_path)
        except FileNotFoundError:
            pass
        self.path = new_path

    def delete(self) -> None:
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass
        self._entries = []
        self._dirty = False

    def unload(self) -> None:
        """Drop the in-memory entries (an idle segment); the next use reads the file."""
        if not self._dirty:
            self._entries = None
