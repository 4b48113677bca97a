"""The contract between the replicated metadata log (raft/) and its users (metadata/).

``raft.metadata_log.MetadataLog`` implements :class:`MetadataLogApi`. Records are opaque
``bytes`` here: raft/ never interprets them (metadata/ encodes them with msgpack).

Offsets and epochs
    Every committed record gets a contiguous offset starting at 0, assigned by the replicated
    state machine in commit order, and the epoch (Raft term) of the leader that proposed it.
    ``committed_offset`` is the offset of the last committed record (-1 when empty).

Snapshots
    The log keeps a bounded in-memory tail. When the tail grows past its bound, the state
    machine folds its oldest records into a snapshot by calling the ``snapshot_builder`` that
    metadata/ supplies: ``snapshot_builder(previous_snapshot_or_None, records) -> bytes``. The
    builder must be a pure, deterministic function (every voter runs it on the same input and
    must get the same bytes) and must never raise. A reader asking for an offset older than the
    tail gets :class:`SnapshotRequired` and reads :meth:`MetadataLogApi.latest_snapshot` first.
    The builder receives every folded entry, control entries included (see below).

Control records (leader changes)
    When a voter becomes Raft leader it first commits one *leader-change* entry; only after that
    entry commits does it call its leadership listeners with ``(True, epoch)`` and accept
    appends. A leader-change entry takes one offset like any record and appears in ``read()``,
    commit listeners and snapshot folding as a :class:`LogEntry` whose ``is_control`` is True;
    its ``record`` is :meth:`LeaderChange.encode` output (never a metadata/ record), so readers
    either skip ``is_control`` entries or decode them with :meth:`LeaderChange.decode`. Every
    ordinary record has ``is_control == False``. ``LeaderChange.leader_info`` is opaque bytes
    the leader set with ``MetadataLog.set_leader_info`` (the controller publishes its gRPC
    address there).

Epochs
    A batch's epoch is the Raft term of the leader that put it into the Raft log, read from the
    Raft entry itself when the state machine applies it, so every voter stamps the same epoch.
    A batch whose proposer's term differs from the epoch the caller named (``expected_epoch``,
    or implicitly the epoch at which this voter was leader when ``append`` was called) is dropped
    by every voter at apply time and takes no offset. Terms are stored durably (fsync) before a
    voter votes or acknowledges in them and every journal entry carries its term, so epochs never
    go backwards across restarts: on start a voter's term is max(stored term, last entry's term).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

import msgpack


@dataclass(frozen=True, slots=True)
class LogEntry:
    """One committed entry. ``is_control`` marks a raft-internal leader-change entry whose
    ``record`` is a :class:`LeaderChange` encoding, not a metadata record."""

    offset: int
    epoch: int
    record: bytes
    is_control: bool = False


LEADER_CHANGE_VERSION = 1


@dataclass(frozen=True, slots=True)
class LeaderChange:
    """The payload of a control entry: voter ``leader_id`` became leader at ``epoch``.

    Encoding (msgpack array): ``[version=1, leader_id:int, epoch:int, leader_info:bytes]``.
    """

    leader_id: int
    epoch: int
    leader_info: bytes

    def encode(self) -> bytes:
        return msgpack.packb(
            [LEADER_CHANGE_VERSION, self.leader_id, self.epoch, self.leader_info], use_bin_type=True
        )

    @classmethod
    def decode(cls, data: bytes) -> LeaderChange:
        """Raises ValueError for bytes that are not a leader-change encoding."""
        try:
            fields = msgpack.unpackb(data, raw=False)
        except Exception as e:  # msgpack raises several unrelated types on garbage
            raise ValueError(f"not a leader-change record: {e}") from None
        if (
            not isinstance(fields, list)
            or len(fields) != 4
            or fields[0] != LEADER_CHANGE_VERSION
            or not isinstance(fields[1], int)
            or not isinstance(fields[2], int)
            or not isinstance(fields[3], bytes)
        ):
            raise ValueError("not a leader-change record")
        return cls(leader_id=fields[1], epoch=fields[2], leader_info=fields[3])


@dataclass(frozen=True, slots=True)
class AppendResult:
    """Offsets of a committed append: ``base_offset``..``last_offset`` inclusive."""

    base_offset: int
    last_offset: int
    epoch: int


@dataclass(frozen=True, slots=True)
class Snapshot:
    """The state after applying every record up to and including ``last_offset``."""

    last_offset: int
    epoch: int
    data: bytes


class MetadataLogError(Exception):
    """Base class of metadata log errors."""


class NotLeaderError(MetadataLogError):
    """The append was sent to a voter that is not the leader; ``leader_id`` may be None."""

    def __init__(self, leader_id: int | None) -> None:
        super().__init__(f"not the leader (leader is {leader_id})")
        self.leader_id = leader_id


class StaleEpochError(MetadataLogError):
    """The append named an epoch that is no longer the current one; nothing was appended."""


class AppendTimeoutError(MetadataLogError):
    """The append was not committed in time; its outcome is unknown."""


class SnapshotRequired(MetadataLogError):
    """The requested offset is older than the in-memory tail; read the snapshot first."""


class BatchTooLargeError(MetadataLogError):
    """The batch exceeds ``metadata.log.max.batch.bytes``; nothing was appended."""


@dataclass(frozen=True, slots=True)
class VoterStatus:
    """One voter (or observing controller) as seen by the node answering ``status()``.

    ``match_offset`` is the last committed offset the leader knows this voter holds durably
    (None when not known: asked on a non-leader, or no acknowledgement since the election);
    ``lag_records`` is ``committed_offset - match_offset`` (None when unknown).
    """

    node_id: int
    address: str  # host:port of its Raft listener
    connected: bool  # a Raft connection to it is up (always True for the answering voter)
    is_leader: bool
    match_offset: int | None
    lag_records: int | None
    # Wall-clock ms of the voter's last answer to the leader (None: not known here), and the
    # same when that answer found it caught up (lag 0; None while it lags).
    last_fetch_ms: int | None = None
    last_caught_up_ms: int | None = None


class MembershipChangeError(MetadataLogError):
    """A voter cannot be added or removed now; nothing was appended. ``reason`` is one of
    :data:`MEMBERSHIP_REFUSALS`."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


# Why a membership change was refused.
DUPLICATE_VOTER = "duplicate_voter"  # the id (or address) is already a voter
VOTER_NOT_FOUND = "voter_not_found"  # no such voter to remove
NOT_CAUGHT_UP = "not_caught_up"  # the new voter is not a connected observer near the log end
CHANGE_PENDING = "change_pending"  # the previous membership change has not committed yet
LAST_VOTER = "last_voter"  # removing it would leave no voter
MEMBERSHIP_REFUSALS = (DUPLICATE_VOTER, VOTER_NOT_FOUND, NOT_CAUGHT_UP, CHANGE_PENDING, LAST_VOTER)


@dataclass(frozen=True, slots=True)
class QuorumStatus:
    """What ``kraftlog quorum status`` prints (cf. kafka-metadata-quorum describe)."""

    node_id: int  # the voter that answered
    leader_id: int | None
    epoch: int  # the answering voter's current Raft term
    committed_offset: int
    log_start_offset: int  # first offset still in the in-memory tail
    snapshot_last_offset: int  # -1 without a snapshot
    voters: tuple[VoterStatus, ...]
    # Controllers that follow the log without voting (joining ones, removed ones), as the
    # leader sees them; empty when asked on a non-leader.
    observers: tuple[VoterStatus, ...] = ()


SnapshotBuilder = Callable[[Snapshot | None, Sequence[LogEntry]], bytes]
LeadershipListener = Callable[[bool, int], None]  # (is_leader, epoch)
CommitListener = Callable[[Sequence[LogEntry]], None]


class MetadataLogApi(Protocol):
    node_id: int

    def start(self) -> None: ...

    def close(self) -> None: ...

    def append(
        self, records: Sequence[bytes], *, expected_epoch: int | None = None, timeout_s: float = 5.0
    ) -> AppendResult:
        """Replicate ``records`` as one batch and block until committed and durable on a majority.

        Raises NotLeaderError, StaleEpochError (when ``expected_epoch`` is given and differs
        from the epoch at apply time: the batch is then dropped by every voter) or
        AppendTimeoutError. Thread-safe; callable from any thread except a listener callback.
        """
        ...

    def read(self, from_offset: int, max_records: int = 1000) -> list[LogEntry]:
        """Committed entries with offset >= from_offset (empty if none yet)."""
        ...

    def latest_snapshot(self) -> Snapshot | None: ...

    @property
    def committed_offset(self) -> int: ...

    @property
    def leader_id(self) -> int | None: ...

    @property
    def epoch(self) -> int: ...

    @property
    def is_leader(self) -> bool: ...

    def add_leadership_listener(self, listener: LeadershipListener) -> None:
        """Called (from the log's own thread) with (True, epoch) once this voter is leader AND its
        leader-change record has committed, and with (False, epoch) when it stops being leader."""
        ...

    def add_commit_listener(self, listener: CommitListener) -> None:
        """Called (from the log's own thread) with each run of newly committed entries, in order."""
        ...

    def wait_for_offset(self, offset: int, timeout_s: float) -> bool:
        """Block until ``committed_offset >= offset``; False on timeout (long-poll readers)."""
        ...

    def voters(self) -> dict[int, str]:
        """The current voter set: voter id -> host:port of its Raft listener."""
        ...

    def add_voter(self, node_id: int, address: str, timeout_s: float = 10.0) -> dict[int, str]:
        """On the active leader: make the observing controller ``node_id`` a voter; returns
        the new voter set once committed. Raises NotLeaderError, MembershipChangeError or
        AppendTimeoutError."""
        ...

    def remove_voter(self, node_id: int, timeout_s: float = 10.0) -> dict[int, str]:
        """On the active leader: take voter ``node_id`` out; returns the new voter set once
        committed (the leader hands over first when asked to remove itself, raising
        NotLeaderError). Raises NotLeaderError, MembershipChangeError or AppendTimeoutError."""
        ...
