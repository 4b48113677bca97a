"""Producer state: what an idempotent or transactional producer last wrote to one partition,
and which transactions are open on it (Kafka's ProducerStateManager).

Per producer id the partition remembers the producer epoch and the metadata of the last
:data:`NUM_BATCHES_TO_RETAIN` (5) batches it appended: first/last sequence, first/last offset
and max timestamp. That is enough to answer a retried batch (the client keeps at most 5
requests in flight per partition) with the offset it was first written at, and to refuse a
batch that would leave a hole or reorder the producer's records. Everything comes from batch
headers (producerId, producerEpoch, baseSequence, lastOffsetDelta): no record is decoded.

Rules for a client append (:attr:`AppendOrigin.CLIENT`), checked per batch in order:

1. epoch lower than the known one: :class:`InvalidProducerEpochError` (INVALID_PRODUCER_EPOCH, 47);
2. same epoch, same (first, last) sequence as one of the retained batches: a duplicate, answered
   with the ORIGINAL offsets and nothing is appended;
3. a new (higher) epoch must start at sequence 0; a known producer that does not gets
   :class:`OutOfOrderSequenceError` (45); a producer id with no state at all (never seen, or its
   state expired or was removed with the segments holding it) gets
   :class:`UnknownProducerIdError` (UNKNOWN_PRODUCER_ID, 59), as Kafka 2.x brokers answered: it
   tells the client that the gap is the broker's forgetting, not a lost batch, and both
   librdkafka and the Java client then reset their sequence state rather than failing;
4. same epoch: first sequence must be last sequence + 1 (wrapping from 2**31-1 to 0), else
   :class:`OutOfOrderSequenceError`.

Transactions: a producer's first transactional batch on the partition opens its transaction
(``current_txn_first_offset``); a non-transactional batch while one is open is refused
(:class:`InvalidTxnStateError`, INVALID_TXN_STATE). An end marker (a control batch, see
common/control_records.py) closes it, giving a :class:`CompletedTxn`. Markers appended by a
leader for the coordinator (:attr:`AppendOrigin.COORDINATOR`) are checked: an epoch older than
the producer's (INVALID_PRODUCER_EPOCH) or a coordinator epoch older than the last marker's
(:class:`TransactionCoordinatorFencedError`) is refused. The *first unstable offset* is the
smallest first offset of an open transaction or of a completed one whose marker is not yet
below the high watermark (:meth:`ProducerStateManager.on_high_watermark_updated` forgets
those); the log's last stable offset is min(high watermark, first unstable offset).

Appends from a leader (:attr:`AppendOrigin.REPLICATION`) and batches replayed from the log
(:attr:`AppendOrigin.LOG`) are not checked: the leader already did, and followers must hold
exactly what the leader held so that a new leader answers retries the same way.

Transaction verification (KIP-890): a leader that verifies with the coordinator that a
partition is in a producer's transaction before appending the transaction's first batch
there takes a :class:`VerificationGuard` (:meth:`ProducerStateManager.start_verification`)
before asking, and passes it with the append. Any marker for that producer in between drops
the guard, so the append is refused (INVALID_TXN_STATE) instead of opening a transaction the
coordinator has already ended: a late batch cannot start a transaction no marker will close.

A check never changes state: :meth:`ProducerStateManager.prepare_append` returns an
:class:`AppendPlan` (the producers' would-be entries) and :meth:`ProducerStateManager.apply`
installs it once the bytes are written; a failed write leaves the state untouched.

Snapshot files ``<20-digit offset>.snapshot`` in the partition directory hold the state of
every producer as of that offset (all batches below it), written when a segment is rolled
(named by the new segment's base offset, Kafka's naming) and when the log is closed.
Byte layout (big-endian)::

    pos  size  field
    0    2     version u16 (= 2; version 1, without the last two entry fields, is read too)
    2    4     crc u32: CRC-32C of the body
    6    ..    body: msgpack [offset, [[producer_id, epoch, last_timestamp,
                                       [[first_seq, last_seq, first_offset, last_offset,
                                         max_timestamp], ...],
                                       current_txn_first_offset, coordinator_epoch], ...]]

Completed transactions are not in snapshots: a snapshot is taken at a roll or on close, and
the aborted ones are already in the segments' transaction indexes (transaction_index.py).

A snapshot is written to ``<name>.tmp`` and renamed, without fsync: a snapshot lost or torn in
a crash fails its CRC or is missing, and the state is rebuilt from an older snapshot (or the
log) by replaying batch headers, which is also how the state beyond the newest snapshot is
rebuilt on every open. Snapshots above the log end offset (after a truncation or a recovery
that cut the log) are deleted before loading.

Thread-safety: none; the owning :class:`Log` calls every method under its lock.
"""

from __future__ import annotations

import enum
import logging
import os
import re
import struct
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

import crc32c
import msgpack

from common.control_records import EndTxnMarker
from common.record_batch import NO_PRODUCER_EPOCH, NO_PRODUCER_ID, RecordBatchHeader
from data_plane.storage.errors import StorageError

logger = logging.getLogger(__name__)

# The client keeps at most 5 requests in flight per partition, so a retry is always one of
# the producer's last 5 batches (Kafka's ProducerStateEntry.NUM_BATCHES_TO_RETAIN).
NUM_BATCHES_TO_RETAIN = 5
# Kafka's producer.id.expiration.ms default: one day.
DEFAULT_PRODUCER_ID_EXPIRATION_MS = 86_400_000
SNAPSHOT_SUFFIX = ".snapshot"
SNAPSHOT_VERSION = 2
_READABLE_SNAPSHOT_VERSIONS = (1, 2)
_SNAPSHOT_NAME = re.compile(r"^(\d{20})\.snapshot$")
_SNAPSHOT_HEADER = struct.Struct(">HI")
_I32_MAX = (1 << 31) - 1

UNKNOWN_PRODUCER_ID = 59
OUT_OF_ORDER_SEQUENCE_NUMBER = 45
INVALID_PRODUCER_EPOCH = 47
INVALID_TXN_STATE = 48
TRANSACTION_COORDINATOR_FENCED = 52
NO_TXN = -1


class OutOfOrderSequenceError(StorageError):
    """A batch's first sequence does not follow the producer's last one (a gap or a reorder),
    or a new epoch does not start at 0 (OUT_OF_ORDER_SEQUENCE_NUMBER)."""

    error_code = OUT_OF_ORDER_SEQUENCE_NUMBER


class InvalidProducerEpochError(StorageError):
    """A batch from an epoch older than the producer's current one: a fenced zombie
    (INVALID_PRODUCER_EPOCH)."""

    error_code = INVALID_PRODUCER_EPOCH


class UnknownProducerIdError(StorageError):
    """A batch with a nonzero sequence from a producer id this partition has no state for
    (UNKNOWN_PRODUCER_ID)."""

    error_code = UNKNOWN_PRODUCER_ID


class InvalidTxnStateError(StorageError):
    """A producer with an open transaction on this partition sent a non-transactional batch
    (INVALID_TXN_STATE)."""

    error_code = INVALID_TXN_STATE


class TransactionCoordinatorFencedError(StorageError):
    """An end marker from a coordinator epoch older than the last marker's: a stale
    coordinator (TRANSACTION_COORDINATOR_FENCED)."""

    error_code = TRANSACTION_COORDINATOR_FENCED


class AppendOrigin(enum.Enum):
    CLIENT = "client"  # a producer's Produce request on the leader: checked
    COORDINATOR = "coordinator"  # end markers written on the leader for the coordinator
    REPLICATION = "replication"  # a follower appending the leader's batches: not checked
    LOG = "log"  # replaying the log on open or after truncation: not checked


@dataclass(frozen=True, slots=True)
class BatchMetadata:
    """One appended batch of a producer: its sequence and offset ranges."""

    first_seq: int
    last_seq: int
    first_offset: int
    last_offset: int
    max_timestamp: int

    @property
    def offset_delta(self) -> int:
        return self.last_offset - self.first_offset


class VerificationGuard:
    """One verification of a producer's next transaction on a partition (compared by
    identity: a guard dropped and re-created is another guard)."""

    __slots__ = ("producer_id",)

    def __init__(self, producer_id: int) -> None:
        self.producer_id = producer_id

    def __repr__(self) -> str:
        return f"VerificationGuard(producer {self.producer_id})"


@dataclass(slots=True)
class ProducerStateEntry:
    """A producer's epoch and its last batches, oldest first (at most 5)."""

    producer_id: int
    producer_epoch: int = NO_PRODUCER_EPOCH
    batches: deque[BatchMetadata] = field(default_factory=deque)
    last_timestamp: int = -1
    # First offset of the producer's open transaction on this partition, or NO_TXN.
    current_txn_first_offset: int = NO_TXN
    # Epoch of the coordinator that wrote this producer's last marker here (-1: none yet).
    coordinator_epoch: int = -1

    @property
    def is_empty(self) -> bool:
        return not self.batches

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else -1

    @property
    def last_data_offset(self) -> int:
        return self.batches[-1].last_offset if self.batches else -1

    def copy(self) -> ProducerStateEntry:
        return ProducerStateEntry(
            self.producer_id,
            self.producer_epoch,
            deque(self.batches),
            self.last_timestamp,
            self.current_txn_first_offset,
            self.coordinator_epoch,
        )

    def find_duplicate(self, epoch: int, first_seq: int, last_seq: int) -> BatchMetadata | None:
        if epoch != self.producer_epoch:
            return None
        for b in self.batches:
            if b.first_seq == first_seq and b.last_seq == last_seq:
                return b
        return None

    def add_batch(self, epoch: int, batch: BatchMetadata) -> None:
        """Record an appended batch; a new epoch forgets the old epoch's batches."""
        if epoch != self.producer_epoch:
            self.batches.clear()
            self.producer_epoch = epoch
        self.batches.append(batch)
        while len(self.batches) > NUM_BATCHES_TO_RETAIN:
            self.batches.popleft()
        self.last_timestamp = max(self.last_timestamp, batch.max_timestamp)


@dataclass(frozen=True, slots=True)
class CompletedTxn:
    """A transaction closed by its marker at ``last_offset``; its records lie in
    [``first_offset``, ``last_offset``)."""

    producer_id: int
    first_offset: int
    last_offset: int
    is_aborted: bool


@dataclass(frozen=True, slots=True)
class AppendPlan:
    """The outcome of checking one append: either the updated entries to install after the
    write (``updates``) with the transactions its markers close (``completed``), or
    ``duplicate``, the retained batch a retried single batch matches (nothing is written
    then)."""

    updates: dict[int, ProducerStateEntry]
    duplicate: BatchMetadata | None = None
    completed: tuple[CompletedTxn, ...] = ()


NO_CHANGES = AppendPlan({})

# Reads the end marker of a control batch (None: not an end marker); the caller has the bytes.
MarkerReader = Callable[[RecordBatchHeader], EndTxnMarker | None]


def in_sequence(last_seq: int, next_seq: int) -> bool:
    """``next_seq`` directly follows ``last_seq`` (sequences wrap at 2**31 - 1)."""
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == _I32_MAX)


def _last_sequence(first_seq: int, offset_delta: int) -> int:
    seq = first_seq + offset_delta
    return seq - _I32_MAX - 1 if seq > _I32_MAX else seq


class ProducerStateManager:
    """Producer state of one partition (see the module docstring for rules and files)."""

    def __init__(
        self,
        dir_path: str,
        *,
        producer_id_expiration_ms: int = DEFAULT_PRODUCER_ID_EXPIRATION_MS,
    ) -> None:
        self.dir_path = dir_path
        self.producer_id_expiration_ms = producer_id_expiration_ms
        self._producers: dict[int, ProducerStateEntry] = {}
        # Open transactions: producer id -> first offset (few per partition: min() is cheap).
        self._ongoing: dict[int, int] = {}
        # Completed transactions whose marker is not yet below the high watermark, by first
        # offset: a read_committed reader must not pass them yet.
        self._unreplicated: dict[int, CompletedTxn] = {}
        # The offset the state is up to date with (every batch below it is applied).
        self.map_end_offset = 0
        # Verifications in flight: producer id -> its guard (dropped by a marker, by the
        # transaction's first batch, or when the verification fails).
        self._verifications: dict[int, VerificationGuard] = {}

    # -- reads -------------------------------------------------------------------------------

    @property
    def producers(self) -> dict[int, ProducerStateEntry]:
        """The live entries (do not mutate)."""
        return self._producers

    def last_entry(self, producer_id: int) -> ProducerStateEntry | None:
        return self._producers.get(producer_id)

    @property
    def ongoing_transactions(self) -> dict[int, int]:
        """Open transactions, producer id -> first offset (do not mutate)."""
        return self._ongoing

    def first_unstable_offset(self) -> int | None:
        """The smallest first offset of an open transaction or of a completed one whose
        marker is not yet replicated below the high watermark; None if there is none."""
        first: int | None = min(self._ongoing.values()) if self._ongoing else None
        if self._unreplicated:
            u = min(self._unreplicated)
            first = u if first is None else min(first, u)
        return first

    def on_high_watermark_updated(self, high_watermark: int) -> None:
        """Forget completed transactions whose marker lies below ``high_watermark``."""
        if self._unreplicated:
            self._unreplicated = {
                f: t for f, t in self._unreplicated.items() if t.last_offset >= high_watermark
            }

    # -- verification ------------------------------------------------------------------------

    def start_verification(self, producer_id: int) -> VerificationGuard | None:
        """The guard of the producer's pending verification (new if none), or None when it
        has a transaction open here already (its batches need no verification)."""
        if producer_id in self._ongoing:
            return None
        guard = self._verifications.get(producer_id)
        if guard is None:
            guard = self._verifications[producer_id] = VerificationGuard(producer_id)
        return guard

    def end_verification(self, guard: VerificationGuard) -> None:
        """Drop ``guard`` (its verification failed) unless another took its place."""
        if self._verifications.get(guard.producer_id) is guard:
            del self._verifications[guard.producer_id]

    # -- appends -----------------------------------------------------------------------------

    def prepare_append(
        self,
        batches: Sequence[RecordBatchHeader],
        first_offset: int | None,
        origin: AppendOrigin,
        read_marker: MarkerReader | None = None,
        *,
        verify_transactions: bool = False,
        verification: VerificationGuard | None = None,
    ) -> AppendPlan:
        """Check ``batches`` (in payload order) and compute the entries they would leave.

        With ``verify_transactions`` a client's transactional batch that would open a
        transaction must come with the producer's current ``verification`` guard, else
        :class:`InvalidTxnStateError`.

        ``first_offset`` is the offset the first batch will get (a leader append, whose
        headers still hold the producer's offsets); None means the headers carry their final
        offsets (follower append, log replay). ``read_marker`` decodes a control batch's end
        marker (needed when ``batches`` may hold control batches). Raises
        :class:`OutOfOrderSequenceError`, :class:`InvalidProducerEpochError`,
        :class:`UnknownProducerIdError` or :class:`InvalidTxnStateError` for a client append
        that breaks the rules, :class:`InvalidProducerEpochError` or
        :class:`TransactionCoordinatorFencedError` for a stale marker; returns a plan with
        ``duplicate`` set when the first producer batch repeats a retained one. Never
        changes the state."""
        updates: dict[int, ProducerStateEntry] = {}
        completed: list[CompletedTxn] = []
        offset = first_offset
        for h in batches:
            base = h.base_offset if offset is None else offset
            last = base + h.last_offset_delta
            if offset is not None:
                offset = last + 1
            pid = h.producer_id
            if pid == NO_PRODUCER_ID:
                continue
            entry = updates.get(pid)
            if entry is None:
                current = self._producers.get(pid)
                if origin is AppendOrigin.CLIENT and current is not None:
                    dup = current.find_duplicate(h.producer_epoch, h.base_sequence, h.last_sequence)
                    if dup is not None:
                        return AppendPlan({}, dup)
                entry = current.copy() if current is not None else ProducerStateEntry(pid)
                updates[pid] = entry
            if h.is_control:
                marker = read_marker(h) if read_marker is not None else None
                if marker is not None:
                    completed.append(_end_transaction(entry, h, marker, base, origin))
                continue
            if origin is AppendOrigin.COORDINATOR:
                # A coordinator's own transactional write (TxnOffsetCommit): epoch only.
                _check_epoch(entry, h.producer_epoch, pid, base)
            elif origin is AppendOrigin.CLIENT:
                _check(entry, h, pid, base)
                if not h.is_transactional and entry.current_txn_first_offset != NO_TXN:
                    raise InvalidTxnStateError(
                        f"producer {pid}: non-transactional batch at offset {base} while its "
                        f"transaction from offset {entry.current_txn_first_offset} is open"
                    )
                if (
                    verify_transactions
                    and h.is_transactional
                    and entry.current_txn_first_offset == NO_TXN
                    and (verification is None or self._verifications.get(pid) is not verification)
                ):
                    raise InvalidTxnStateError(
                        f"producer {pid}: transactional batch at offset {base} opens a "
                        "transaction its coordinator has not verified on this partition (or "
                        "one that ended meanwhile)"
                    )
            entry.add_batch(
                h.producer_epoch,
                BatchMetadata(
                    h.base_sequence,
                    _last_sequence(h.base_sequence, h.last_offset_delta),
                    base,
                    last,
                    h.max_timestamp,
                ),
            )
            if h.is_transactional and entry.current_txn_first_offset == NO_TXN:
                entry.current_txn_first_offset = base
        return AppendPlan(updates, None, tuple(completed))

    def apply(self, plan: AppendPlan, end_offset: int) -> list[tuple[CompletedTxn, int]]:
        """Install a plan's entries after its batches were written; the state is now up to
        date with every offset below ``end_offset``. Returns the transactions the plan's
        markers closed, each with the last stable offset right after it (what the aborted
        transaction index records)."""
        if plan.duplicate is not None:
            return []
        self._producers.update(plan.updates)
        for pid, entry in plan.updates.items():
            if entry.current_txn_first_offset != NO_TXN:
                self._ongoing[pid] = entry.current_txn_first_offset
            else:
                self._ongoing.pop(pid, None)
            # The transaction opened (verification done) or a marker ended it (a
            # verification in flight is void).
            self._verifications.pop(pid, None)
        self.map_end_offset = max(self.map_end_offset, end_offset)
        out = []
        for txn in plan.completed:
            self._unreplicated[txn.first_offset] = txn
            others = [f for p, f in self._ongoing.items() if p != txn.producer_id]
            out.append((txn, min(others) if others else txn.last_offset + 1))
        return out

    def replay(
        self, batches: Iterable[RecordBatchHeader], read_marker: MarkerReader | None = None
    ) -> list[tuple[CompletedTxn, int]]:
        """Rebuild from batches read back from the log (headers carry their offsets); return
        the transactions closed on the way, as :meth:`apply` does."""
        out = []
        for h in batches:
            if h.producer_id != NO_PRODUCER_ID:
                plan = self.prepare_append((h,), None, AppendOrigin.LOG, read_marker)
                out.extend(self.apply(plan, h.next_offset))
            self.map_end_offset = max(self.map_end_offset, h.next_offset)
        return out

    def remove_expired_producers(self, now_ms: int) -> int:
        """Forget producers whose newest batch timestamp is ``producer.id.expiration.ms``
        older than ``now_ms`` and that have no open transaction; returns how many."""
        limit = now_ms - self.producer_id_expiration_ms
        expired = [
            pid
            for pid, e in self._producers.items()
            if e.last_timestamp < limit and e.current_txn_first_offset == NO_TXN
        ]
        for pid in expired:
            del self._producers[pid]
        return len(expired)

    def truncate_head(self, log_start_offset: int) -> None:
        """Forget producers whose last batch lies below the log start offset (retention or
        DeleteRecords removed it) unless their transaction is still open, completed
        transactions below it, and snapshots that no longer have a log to replay onto."""
        gone = [
            pid
            for pid, e in self._producers.items()
            if e.last_data_offset < log_start_offset and e.current_txn_first_offset == NO_TXN
        ]
        for pid in gone:
            del self._producers[pid]
        self._unreplicated = {
            f: t for f, t in self._unreplicated.items() if t.last_offset >= log_start_offset
        }
        offsets = self.snapshot_offsets()
        for off in offsets[:-1]:
            if off < log_start_offset:
                self._delete_snapshot(off)

    def reset(self, offset: int) -> None:
        """Forget everything (the log was emptied and starts again at ``offset``)."""
        self._producers.clear()
        self._ongoing.clear()
        self._unreplicated.clear()
        self._verifications.clear()
        self.map_end_offset = offset
        for off in self.snapshot_offsets():
            self._delete_snapshot(off)

    # -- snapshots ---------------------------------------------------------------------------

    def snapshot_path(self, offset: int) -> str:
        return os.path.join(self.dir_path, f"{offset:020d}{SNAPSHOT_SUFFIX}")

    def snapshot_offsets(self) -> list[int]:
        """Offsets of the snapshot files present, ascending."""
        try:
            names = os.listdir(self.dir_path)
        except FileNotFoundError:
            return []
        out = []
        for name in names:
            m = _SNAPSHOT_NAME.match(name)
            if m:
                out.append(int(m.group(1)))
        return sorted(out)

    def take_snapshot(self, offset: int) -> None:
        """Write the state (which must be up to date with every batch below ``offset``) as
        ``<offset>.snapshot``. No fsync: a lost snapshot is rebuilt from the log."""
        if not os.path.isdir(self.dir_path):
            return
        body = msgpack.packb(
            [
                offset,
                [
                    [
                        e.producer_id,
                        e.producer_epoch,
                        e.last_timestamp,
                        [
                            [
                                b.first_seq,
                                b.last_seq,
                                b.first_offset,
                                b.last_offset,
                                b.max_timestamp,
                            ]
                            for b in e.batches
                        ],
                        e.current_txn_first_offset,
                        e.coordinator_epoch,
                    ]
                    for e in self._producers.values()
                ],
            ]
        )
        path = self.snapshot_path(offset)
        tmp = path + ".tmp"
        with open(tmp, "wb") as f:
            f.write(_SNAPSHOT_HEADER.pack(SNAPSHOT_VERSION, crc32c.crc32c(body)))
            f.write(body)
        os.replace(tmp, path)

    def read_snapshot(self, offset: int) -> dict[int, ProducerStateEntry]:
        """Parse ``<offset>.snapshot``; raises :class:`CorruptSnapshotError` if it is torn."""
        path = self.snapshot_path(offset)
        with open(path, "rb") as f:
            data = f.read()
        if len(data) < _SNAPSHOT_HEADER.size:
            raise CorruptSnapshotError(f"{path}: {len(data)} bytes, shorter than its header")
        version, crc = _SNAPSHOT_HEADER.unpack_from(data)
        body = data[_SNAPSHOT_HEADER.size :]
        if version not in _READABLE_SNAPSHOT_VERSIONS:
            raise CorruptSnapshotError(f"{path}: unknown snapshot version {version}")
        if crc32c.crc32c(body) != crc:
            raise CorruptSnapshotError(f"{path}: CRC-32C mismatch")
        try:
            stored_offset, producers = msgpack.unpackb(body)
            out: dict[int, ProducerStateEntry] = {}
            for pid, epoch, last_ts, batches, *txn in producers:
                txn_first, coordinator_epoch = txn if version >= 2 else (NO_TXN, -1)
                out[pid] = ProducerStateEntry(
                    pid,
                    epoch,
                    deque(BatchMetadata(*b) for b in batches),
                    last_ts,
                    txn_first,
                    coordinator_epoch,
                )
        except (ValueError, TypeError) as e:
            raise CorruptSnapshotError(f"{path}: malformed body: {e}") from e
        if stored_offset != offset:
            raise CorruptSnapshotError(f"{path}: names offset {stored_offset}")
        return out

    def load(self, log_start_offset: int, log_end_offset: int) -> int:
        """Delete snapshots above ``log_end_offset`` (or torn), load the newest one at or above
        ``log_start_offset`` and return the offset replay must start from (the snapshot's
        offset, or ``log_start_offset`` without one). The caller replays the log from there."""
        self._producers.clear()
        self._ongoing.clear()
        self._unreplicated.clear()
        for off in reversed(self.snapshot_offsets()):
            if off > log_end_offset:
                self._delete_snapshot(off)
                continue
            if off < log_start_offset:
                break
            try:
                self._producers = self.read_snapshot(off)
            except (OSError, CorruptSnapshotError) as e:
                logger.warning("ignoring producer snapshot: %s", e)
                self._delete_snapshot(off)
                continue
            self._ongoing = {
                pid: e.current_txn_first_offset
                for pid, e in self._producers.items()
                if e.current_txn_first_offset != NO_TXN
            }
            self.map_end_offset = off
            return off
        self.map_end_offset = log_start_offset
        return log_start_offset

    def _delete_snapshot(self, offset: int) -> None:
        try:
            os.unlink(self.snapshot_path(offset))
        except FileNotFoundError:
            pass


class CorruptSnapshotError(StorageError):
    """A producer snapshot file that fails its CRC or does not parse (it is deleted and the
    state rebuilt from the log)."""


def _check_epoch(entry: ProducerStateEntry, epoch: int, pid: int, offset: int) -> None:
    if entry.producer_epoch != NO_PRODUCER_EPOCH and epoch < entry.producer_epoch:
        raise InvalidProducerEpochError(
            f"producer {pid}: epoch {epoch} is older than the current epoch "
            f"{entry.producer_epoch} (at offset {offset})"
        )


def _check(entry: ProducerStateEntry, h: RecordBatchHeader, pid: int, offset: int) -> None:
    epoch, first_seq = h.producer_epoch, h.base_sequence
    _check_epoch(entry, epoch, pid, offset)
    if epoch != entry.producer_epoch:
        if first_seq != 0:
            if entry.producer_epoch != NO_PRODUCER_EPOCH:
                raise OutOfOrderSequenceError(
                    f"producer {pid}: new epoch {epoch} starts at sequence {first_seq}, not 0 "
                    f"(at offset {offset})"
                )
            raise UnknownProducerIdError(
                f"producer {pid}: no state on this partition and sequence {first_seq} is not 0 "
                f"(at offset {offset}); its state expired or its batches were deleted"
            )
        return
    if not in_sequence(entry.last_seq, first_seq):
        raise OutOfOrderSequenceError(
            f"producer {pid} epoch {epoch}: sequence {first_seq} does not follow "
            f"{entry.last_seq} (at offset {offset})"
        )


def _end_transaction(
    entry: ProducerStateEntry,
    h: RecordBatchHeader,
    marker: EndTxnMarker,
    offset: int,
    origin: AppendOrigin,
) -> CompletedTxn:
    """Close ``entry``'s transaction with the marker batch ``h`` at ``offset``."""
    pid, epoch = entry.producer_id, h.producer_epoch
    if origin is AppendOrigin.COORDINATOR:
        _check_epoch(entry, epoch, pid, offset)
        if marker.coordinator_epoch < entry.coordinator_epoch:
            raise TransactionCoordinatorFencedError(
                f"producer {pid}: marker from coordinator epoch {marker.coordinator_epoch}, "
                f"older than {entry.coordinator_epoch}"
            )
    first = entry.current_txn_first_offset
    txn = CompletedTxn(pid, offset if first == NO_TXN else first, offset, not marker.committed)
    entry.current_txn_first_offset = NO_TXN
    entry.coordinator_epoch = marker.coordinator_epoch
    if epoch != entry.producer_epoch:
        # A marker of a newer epoch (the coordinator bumped it to fence a zombie): the old
        # epoch's batches no longer answer retries.
        entry.batches.clear()
        entry.producer_epoch = epoch
    entry.last_timestamp = max(entry.last_timestamp, h.max_timestamp)
    return txn
