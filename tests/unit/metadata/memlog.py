"""Test helper (not a test module): an in-memory, single-process stand-in for
raft.metadata_log.MetadataLog, used ONLY by unit tests of the controller service wiring.

``InMemoryQuorum`` holds one committed log shared by several voter views; ``elect(node_id)``
makes a voter leader at a new epoch (writing a leader-change control entry, as the real log
does). Appends commit immediately unless ``fail_next_append`` says otherwise. Old entries are
folded into a snapshot with the real metadata snapshot builder once the tail exceeds
``max_tail_records``.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from raft.api import (
    AppendResult,
    AppendTimeoutError,
    CommitListener,
    LeaderChange,
    LeadershipListener,
    LogEntry,
    NotLeaderError,
    Snapshot,
    SnapshotBuilder,
    SnapshotRequired,
    StaleEpochError,
)


class InMemoryQuorum:
    def __init__(self, snapshot_builder: SnapshotBuilder, max_tail_records: int = 100_000) -> None:
        self.builder = snapshot_builder
        self.max_tail_records = max_tail_records
        self.cond = threading.Condition()
        self.tail: list[LogEntry] = []
        self.snapshot: Snapshot | None = None
        self.epoch = 0
        self.leader_id: int | None = None
        self.voters: dict[int, InMemoryLog] = {}
        self.fail_next_append: Exception | None = None

    def voter(self, node_id: int) -> InMemoryLog:
        v = InMemoryLog(self, node_id)
        self.voters[node_id] = v
        return v

    @property
    def committed_offset(self) -> int:
        if self.tail:
            return self.tail[-1].offset
        return self.snapshot.last_offset if self.snapshot else -1

    def _commit(self, records: Sequence[bytes], control: bool) -> AppendResult:
        with self.cond:
            base = self.committed_offset + 1
            new = [LogEntry(base + i, self.epoch, r, control) for i, r in enumerate(records)]
            self.tail.extend(new)
            if len(self.tail) > self.max_tail_records:
                fold = self.tail[: len(self.tail) // 2]
                data = self.builder(self.snapshot, fold)
                self.snapshot = Snapshot(fold[-1].offset, fold[-1].epoch, data)
                self.tail = self.tail[len(fold) :]
            self.cond.notify_all()
        for v in list(self.voters.values()):
            for listener in list(v.commit_listeners):
                listener(new)
        return AppendResult(base, base + len(records) - 1, self.epoch)

    def elect(self, node_id: int | None) -> None:
        """Make ``node_id`` leader at a new epoch (None: no leader)."""
        old = self.leader_id
        self.epoch += 1
        old_epoch = self.epoch - 1
        self.leader_id = node_id
        if old is not None and old in self.voters:
            for listener in list(self.voters[old].leadership_listeners):
                listener(False, old_epoch)
        if node_id is None:
            return
        v = self.voters[node_id]
        self._commit([LeaderChange(node_id, self.epoch, v.info).encode()], control=True)
        for listener in list(v.leadership_listeners):
            listener(True, self.epoch)


class InMemoryLog:
    """One voter's view of an :class:`InMemoryQuorum` (implements MetadataLogApi)."""

    def __init__(self, quorum: InMemoryQuorum, node_id: int) -> None:
        self.q = quorum
        self.node_id = node_id
        self.info = b""
        self.leadership_listeners: list[LeadershipListener] = []
        self.commit_listeners: list[CommitListener] = []
        self.appends = 0

    def set_leader_info(self, info: bytes) -> None:
        self.info = info

    def voters(self) -> dict[int, str]:
        return {i: f"127.0.0.1:{i}" for i in self.q.voters}

    def leader_info(self) -> bytes | None:
        leader = self.q.leader_id
        return self.q.voters[leader].info if leader is not None else None

    def start(self) -> None:
        pass

    def close(self) -> None:
        pass

    def append(
        self, records: Sequence[bytes], *, expected_epoch: int | None = None, timeout_s: float = 5.0
    ) -> AppendResult:
        self.appends += 1
        if self.q.leader_id != self.node_id:
            raise NotLeaderError(self.q.leader_id)
        if expected_epoch is not None and expected_epoch != self.q.epoch:
            raise StaleEpochError(f"expected {expected_epoch}, now {self.q.epoch}")
        failure, self.q.fail_next_append = self.q.fail_next_append, None
        if failure is not None:
            if isinstance(failure, AppendTimeoutError):
                self.q._commit(records, control=False)  # committed, but the caller never hears
            raise failure
        return self.q._commit(records, control=False)

    def read(self, from_offset: int, max_records: int = 1000) -> list[LogEntry]:
        with self.q.cond:
            tail = self.q.tail
            start = tail[0].offset if tail else self.q.committed_offset + 1
            if from_offset < start:
                raise SnapshotRequired(f"{from_offset} < {start}")
            i = from_offset - start
            return list(tail[i : i + max_records])

    def latest_snapshot(self) -> Snapshot | None:
        return self.q.snapshot

    @property
    def committed_offset(self) -> int:
        return self.q.committed_offset

    @property
    def leader_id(self) -> int | None:
        return self.q.leader_id

    @property
    def epoch(self) -> int:
        return self.q.epoch

    @property
    def is_leader(self) -> bool:
        return self.q.leader_id == self.node_id

    def add_leadership_listener(self, listener: LeadershipListener) -> None:
        self.leadership_listeners.append(listener)

    def add_commit_listener(self, listener: CommitListener) -> None:
        self.commit_listeners.append(listener)

    def wait_for_offset(self, offset: int, timeout_s: float) -> bool:
        with self.q.cond:
            return self.q.cond.wait_for(lambda: self.q.committed_offset >= offset, timeout_s)
