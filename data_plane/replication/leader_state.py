"""LeaderReplicationState: the leader's view of its followers (sans-IO, injected time).

PacificA with the Raft quorum as configuration manager: the ISR is the replica group; the
leader proposes ISR changes (AlterPartition) and only a committed change counts. This class
holds, for one partition this broker leads in one leader epoch:

- per follower (Kafka's Replica): its log end offset (the fetch offset of its last fetch; -1
  until it fetched in this epoch), the time it was last caught up, and the leader's log end
  offset and the time of its previous fetch;
- the committed ISR and partition epoch, and at most one pending ISR change;
- the *maximal ISR* = the union of the committed ISR and the pending change's ISR: while
  an expansion is pending the new member already counts for the high watermark (safe: it has
  everything below the HW), and while a shrink is pending the leaving member still counts (the
  shrink is not committed, so a new leader might still come from it).

Rules (Kafka's Partition.updateFollowerFetchState / maybeExpandIsr / maybeShrinkIsr):

- last caught-up time: a fetch at an offset >= the leader's LEO *now* sets it to the fetch
  time; else a fetch at an offset >= the leader's LEO at the follower's *previous* fetch sets
  it to the previous fetch's time (the follower had caught up to that point then);
- high watermark = min LEO over the maximal ISR (the leader's own LEO included);
- expand: a replica outside the maximal ISR whose LEO >= HW and >= the start offset of this
  leader epoch (it fetched in this epoch, so its log matches ours);
- shrink: ISR members (not the leader) not caught up within ``replica_lag_time_max_ms``.
  A follower whose LEO equals the leader's LEO is always caught up.
- One change in flight: no proposal while one is pending.

The high watermark itself lives in the Log; :meth:`high_watermark` returns the candidate and
the caller moves the Log's HW forward only (never back while leading).

Invariants: the leader is in every ISR; ISRs are subsets of the replicas without duplicates.
Illegal calls raise a :class:`ReplicationStateError` subclass and change nothing.

Thread-safety: none; the broker's event loop owns it.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from data_plane.replication.errors import (
    InvalidIsrError,
    IsrChangePendingError,
    UnknownReplicaError,
)

UNKNOWN_OFFSET = -1


class IsrChangeKind(enum.Enum):
    EXPAND = "expand"
    SHRINK = "shrink"


@dataclass(frozen=True, slots=True)
class IsrChangeProposal:
    """An AlterPartition item to send: the ISR wanted, fenced by both epochs."""

    kind: IsrChangeKind
    new_isr: tuple[int, ...]
    leader_epoch: int
    partition_epoch: int


@dataclass(slots=True)
class FollowerReplicaState:
    broker_id: int
    log_end_offset: int = UNKNOWN_OFFSET
    last_caught_up_time_ms: int = 0
    last_fetch_leader_log_end_offset: int = UNKNOWN_OFFSET
    last_fetch_time_ms: int = 0


class LeaderReplicationState:
    def __init__(
        self,
        local_broker_id: int,
        replicas: tuple[int, ...],
        isr: tuple[int, ...],
        leader_epoch: int,
        partition_epoch: int,
        leader_epoch_start_offset: int,
        now_ms: int,
        replica_lag_time_max_ms: int,
    ) -> None:
        if replica_lag_time_max_ms < 1:
            raise ValueError(f"replica_lag_time_max_ms must be >= 1, got {replica_lag_time_max_ms}")
        _check_isr(local_broker_id, replicas, isr)
        self.local_broker_id = local_broker_id
        self.replicas = tuple(replicas)
        self.isr = tuple(isr)
        self.leader_epoch = leader_epoch
        self.partition_epoch = partition_epoch
        self.leader_epoch_start_offset = leader_epoch_start_offset
        self.replica_lag_time_max_ms = replica_lag_time_max_ms
        self.pending: IsrChangeProposal | None = None
        # A new leader gives every ISR member a full lag window before it can be dropped
        # (Kafka resets the followers' state with lastCaughtUpTime = now for the ISR).
        self.followers: dict[int, FollowerReplicaState] = {
            r: FollowerReplicaState(r, last_caught_up_time_ms=now_ms if r in isr else 0)
            for r in replicas
            if r != local_broker_id
        }

    # -- queries -------------------------------------------------------------------------------

    @property
    def maximal_isr(self) -> tuple[int, ...]:
        if self.pending is None:
            return self.isr
        extra = tuple(r for r in self.pending.new_isr if r not in self.isr)
        return self.isr + extra

    def high_watermark(self, leader_log_end_offset: int) -> int:
        """min LEO over the maximal ISR; UNKNOWN_OFFSET while a member has not fetched in this
        epoch (the HW must not pass what the ISR is known to have)."""
        hw = leader_log_end_offset
        for r in self.maximal_isr:
            if r != self.local_broker_id:
                hw = min(hw, self.followers[r].log_end_offset)
        return hw

    def is_caught_up(self, broker_id: int, leader_log_end_offset: int, now_ms: int) -> bool:
        f = self._follower(broker_id)
        return (
            f.log_end_offset == leader_log_end_offset
            or now_ms - f.last_caught_up_time_ms <= self.replica_lag_time_max_ms
        )

    # -- inputs --------------------------------------------------------------------------------

    def update_follower_fetch_state(
        self,
        follower_id: int,
        fetch_offset: int,
        leader_log_end_offset: int,
        now_ms: int,
    ) -> None:
        """A follower fetched at ``fetch_offset`` (its LEO) at ``now_ms``: update its LEO and
        caught-up time. Then move the HW (:meth:`high_watermark`) and call
        :meth:`maybe_expand_isr` with it."""
        f = self._follower(follower_id)
        if fetch_offset < 0:
            raise ValueError(f"fetch offset {fetch_offset} < 0 from replica {follower_id}")
        if fetch_offset >= leader_log_end_offset:
            f.last_caught_up_time_ms = max(f.last_caught_up_time_ms, now_ms)
        elif fetch_offset >= f.last_fetch_leader_log_end_offset >= 0:
            f.last_caught_up_time_ms = max(f.last_caught_up_time_ms, f.last_fetch_time_ms)
        f.log_end_offset = fetch_offset
        f.last_fetch_leader_log_end_offset = leader_log_end_offset
        f.last_fetch_time_ms = now_ms

    def refresh_caught_up_follower(
        self, follower_id: int, leader_log_end_offset: int, now_ms: int
    ) -> bool:
        """:meth:`update_follower_fetch_state` for the fetch of a maximal-ISR member already
        known to be at ``leader_log_end_offset`` and fetching there again: only its times move
        (its LEO, so the HW and the ISR, cannot). Returns False, recording nothing, for any
        other fetch; the caller then takes the full path. Why: a follower's fetch session
        names every partition it follows, and most of them are idle at its log end on each
        fetch."""
        f = self.followers.get(follower_id)
        if f is None or f.log_end_offset != leader_log_end_offset:
            return False
        if follower_id not in self.maximal_isr:
            return False  # the full path may expand the ISR with it
        self.update_follower_fetch_state(
            follower_id, leader_log_end_offset, leader_log_end_offset, now_ms
        )
        return True

    def maybe_expand_isr(self, follower_id: int, high_watermark: int) -> IsrChangeProposal | None:
        """The expansion to propose (now pending) if ``follower_id`` qualifies against the
        leader's current ``high_watermark``."""
        f = self._follower(follower_id)
        if self.pending is not None or f.broker_id in self.maximal_isr:
            return None
        if f.log_end_offset < high_watermark or f.log_end_offset < self.leader_epoch_start_offset:
            return None
        return self._propose(IsrChangeKind.EXPAND, (*self.isr, f.broker_id))

    def maybe_shrink(self, leader_log_end_offset: int, now_ms: int) -> IsrChangeProposal | None:
        """Drop ISR members that have not caught up within the lag window; returns the
        shrink to propose (now pending), or None."""
        if self.pending is not None:
            return None
        out = [
            r
            for r in self.isr
            if r != self.local_broker_id and not self.is_caught_up(r, leader_log_end_offset, now_ms)
        ]
        if not out:
            return None
        return self._propose(IsrChangeKind.SHRINK, tuple(r for r in self.isr if r not in out))

    def _propose(self, kind: IsrChangeKind, new_isr: tuple[int, ...]) -> IsrChangeProposal:
        if self.pending is not None:
            raise IsrChangePendingError(f"ISR change {self.pending} is still pending")
        _check_isr(self.local_broker_id, self.replicas, new_isr)
        self.pending = IsrChangeProposal(kind, new_isr, self.leader_epoch, self.partition_epoch)
        return self.pending

    def on_alter_partition_failed(self, proposal: IsrChangeProposal) -> None:
        """The controller rejected ``proposal`` (not retriable): forget it, so the next fetch
        or tick proposes again from the current state."""
        if self.pending == proposal:
            self.pending = None

    def apply_committed(self, isr: tuple[int, ...], partition_epoch: int) -> bool:
        """A committed ISR (from an AlterPartition answer or the metadata image) for this
        leader epoch. Older partition epochs are ignored. Clears the pending change. Returns
        True if the ISR changed."""
        if partition_epoch < self.partition_epoch:
            return False
        _check_isr(self.local_broker_id, self.replicas, isr)
        changed = tuple(isr) != self.isr
        if partition_epoch > self.partition_epoch or (
            self.pending is not None and tuple(isr) == self.pending.new_isr
        ):
            self.pending = None
        self.isr = tuple(isr)
        self.partition_epoch = partition_epoch
        return changed

    def _follower(self, broker_id: int) -> FollowerReplicaState:
        f = self.followers.get(broker_id)
        if f is None:
            raise UnknownReplicaError(
                f"broker {broker_id} is not a follower replica (replicas {list(self.replicas)})"
            )
        return f


def _check_isr(leader: int, replicas: tuple[int, ...], isr: tuple[int, ...]) -> None:
    if not isr or len(set(isr)) != len(isr):
        raise InvalidIsrError(f"ISR {list(isr)} is empty or has duplicates")
    if leader not in isr:
        raise InvalidIsrError(f"ISR {list(isr)} does not contain the leader {leader}")
    if not set(isr) <= set(replicas):
        raise InvalidIsrError(f"ISR {list(isr)} is not a subset of replicas {list(replicas)}")
