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
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True, slots=True)
class LogEntry:
    offset: int
    epoch: int
    record: bytes


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
