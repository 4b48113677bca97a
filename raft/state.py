"""The replicated state machine of the metadata log (sans-IO, deterministic).

Every voter applies the same Raft entries in the same order to a ``MetadataLogState`` and
ends with the same offsets, epochs, tail and snapshot. Inputs are the entry's arguments and
its Raft term; there is no clock, no randomness and no I/O. Apply methods never raise: a bad
input is rejected with an outcome, identically on every voter (an exception inside a pysyncobj
replicated method would be retried on every tick and wedge the cluster).

State (what the dump stores, see :meth:`to_dict`):

- ``snapshot``: the state after every entry up to ``snapshot.last_offset`` (None at first);
- ``tail``: the committed entries after the snapshot, offsets contiguous, at most
  ``max_tail_records`` of them except while the snapshot builder keeps failing;
- ``next_offset``: the offset the next record gets (``committed_offset + 1``);
- ``leader``: the last committed :class:`LeaderChange`;
- ``fold_retry_offset``: after a failed fold, the next offset at which folding is retried.

Folding: when the tail grows past ``max_tail_records`` the oldest entries, all but the newest
``max_tail_records // 2``, are passed to the snapshot builder with the previous snapshot and
replaced by its result. If the builder raises or returns something other than bytes, nothing
is folded (no record is lost), the error is logged, and folding is retried after another
``max_tail_records // 2`` offsets.

Thread-safety: none; the caller serialises access (MetadataLog holds a lock).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from raft.api import LeaderChange, LogEntry, Snapshot, SnapshotBuilder, SnapshotRequired

logger = logging.getLogger(__name__)

STATE_FORMAT_VERSION = 1


class StateFormatError(ValueError):
    """A dumped state does not have the layout :meth:`MetadataLogState.to_dict` writes."""


@dataclass(frozen=True, slots=True)
class ApplyOutcome:
    """Result of applying one Raft entry. ``status`` is one of:

    - ``"ok"``: records took offsets ``base_offset..last_offset`` at ``epoch``;
    - ``"fenced"``: dropped because the proposer's term differed from the fence epoch;
    - ``"rejected"``: dropped because the arguments were malformed (``reason`` says why).
    """

    status: str
    epoch: int
    base_offset: int = -1
    last_offset: int = -1
    reason: str = ""


class MetadataLogState:
    def __init__(self, max_tail_records: int, snapshot_builder: SnapshotBuilder) -> None:
        if max_tail_records < 2:
            raise ValueError(f"max_tail_records must be >= 2, got {max_tail_records}")
        self.max_tail_records = max_tail_records
        self._builder = snapshot_builder
        self.snapshot: Snapshot | None = None
        self.tail: list[LogEntry] = []
        self.next_offset = 0
        self.leader: LeaderChange | None = None
        self.fold_retry_offset = 0

    # --- queries -----------------------------------------------------------------------------

    @property
    def committed_offset(self) -> int:
        return self.next_offset - 1

    @property
    def log_start_offset(self) -> int:
        """The first offset ``read`` can serve."""
        return self.snapshot.last_offset + 1 if self.snapshot is not None else 0

    def read(self, from_offset: int, max_records: int) -> list[LogEntry]:
        if from_offset < 0:
            raise ValueError(f"from_offset must be >= 0, got {from_offset}")
        if max_records < 1:
            raise ValueError(f"max_records must be >= 1, got {max_records}")
        start = self.log_start_offset
        if from_offset < start:
            raise SnapshotRequired(
                f"offset {from_offset} is folded into the snapshot ending at {start - 1}"
            )
        pos = from_offset - start
        return self.tail[pos : pos + max_records]

    # --- apply (deterministic, never raises) --------------------------------------------------

    def apply_batch(
        self, records: Any, fence_epoch: Any, entry_term: int
    ) -> tuple[ApplyOutcome, list[LogEntry]]:
        """Apply one batch proposed by the leader of ``entry_term``; the batch must have been
        proposed for ``fence_epoch``. Returns the outcome and the new entries."""
        if not isinstance(fence_epoch, int) or fence_epoch != entry_term:
            return ApplyOutcome("fenced", entry_term), []
        if (
            not isinstance(records, (list, tuple))
            or not records
            or not all(isinstance(r, bytes) for r in records)
        ):
            reason = "records must be a non-empty list of bytes"
            return ApplyOutcome("rejected", entry_term, reason=reason), []
        return self._append([(r, False) for r in records], entry_term)

    def apply_leader_change(
        self, leader_id: Any, claimed_epoch: Any, leader_info: Any, entry_term: int
    ) -> tuple[ApplyOutcome, list[LogEntry]]:
        """Apply a leader-change entry; dropped unless proposed by that leader in its term."""
        if not isinstance(claimed_epoch, int) or claimed_epoch != entry_term:
            return ApplyOutcome("fenced", entry_term), []
        if not isinstance(leader_id, int) or not isinstance(leader_info, bytes):
            return ApplyOutcome("rejected", entry_term, reason="malformed leader change"), []
        change = LeaderChange(leader_id=leader_id, epoch=entry_term, leader_info=leader_info)
        outcome, entries = self._append([(change.encode(), True)], entry_term)
        self.leader = change
        return outcome, entries

    def _append(
        self, records: Sequence[tuple[bytes, bool]], epoch: int
    ) -> tuple[ApplyOutcome, list[LogEntry]]:
        base = self.next_offset
        entries = [
            LogEntry(offset=base + i, epoch=epoch, record=record, is_control=control)
            for i, (record, control) in enumerate(records)
        ]
        self.tail.extend(entries)
        self.next_offset = base + len(entries)
        self._maybe_fold()
        return ApplyOutcome("ok", epoch, base, self.next_offset - 1), entries

    def _maybe_fold(self) -> None:
        if len(self.tail) <= self.max_tail_records or self.next_offset < self.fold_retry_offset:
            return
        keep = self.max_tail_records // 2
        folded = self.tail[: len(self.tail) - keep]
        try:
            data = self._builder(self.snapshot, folded)
        except Exception:
            logger.exception(
                "snapshot builder failed folding offsets %d..%d; keeping them in the tail",
                folded[0].offset,
                folded[-1].offset,
            )
            data = None
        if not isinstance(data, bytes):
            if data is not None:
                logger.error("snapshot builder returned %s, not bytes", type(data).__name__)
            self.fold_retry_offset = self.next_offset + max(1, keep)
            return
        last = folded[-1]
        self.snapshot = Snapshot(last_offset=last.offset, epoch=last.epoch, data=data)
        del self.tail[: len(folded)]

    # --- dump -----------------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        snap = self.snapshot
        leader = self.leader
        return {
            "version": STATE_FORMAT_VERSION,
            "snapshot": None if snap is None else [snap.last_offset, snap.epoch, snap.data],
            "tail": [[e.offset, e.epoch, e.record, e.is_control] for e in self.tail],
            "next_offset": self.next_offset,
            "leader": None
            if leader is None
            else [leader.leader_id, leader.epoch, leader.leader_info],
            "fold_retry_offset": self.fold_retry_offset,
        }

    def load_dict(self, data: Any) -> None:
        """Replace the state with a dumped one; StateFormatError (state unchanged) if invalid."""
        try:
            if data["version"] != STATE_FORMAT_VERSION:
                raise StateFormatError(f"unknown state format version {data['version']}")
            snap = data["snapshot"]
            snapshot = (
                None if snap is None else Snapshot(int(snap[0]), int(snap[1]), bytes(snap[2]))
            )
            tail = [LogEntry(int(o), int(e), bytes(r), bool(c)) for o, e, r, c in data["tail"]]
            next_offset = int(data["next_offset"])
            lead = data["leader"]
            leader = (
                None if lead is None else LeaderChange(int(lead[0]), int(lead[1]), bytes(lead[2]))
            )
            fold_retry_offset = int(data["fold_retry_offset"])
        except (KeyError, TypeError, ValueError, IndexError) as e:
            raise StateFormatError(f"malformed metadata log state: {e}") from None
        start = snapshot.last_offset + 1 if snapshot is not None else 0
        if [e.offset for e in tail] != list(range(start, start + len(tail))) or (
            next_offset != start + len(tail)
        ):
            raise StateFormatError("metadata log state: tail offsets are not contiguous")
        self.snapshot, self.tail, self.next_offset = snapshot, tail, next_offset
        self.leader, self.fold_retry_offset = leader, fold_retry_offset
