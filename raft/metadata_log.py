"""``MetadataLog``: the replicated metadata log, the only raft/ class the rest of kraftlog uses.

It implements :class:`raft.api.MetadataLogApi` on top of :class:`raft.syncobj_node.RaftNode`
(pysyncobj) and :class:`raft.state.MetadataLogState` (the deterministic state machine).

Life of an append (on the active leader)::

    append(records) --(checks: leader-change committed, epoch, size)--> RaftNode.propose_batch
      -> pysyncobj appends one Raft entry, sends it at once, followers fsync and acknowledge
      -> majority durable: every voter applies it: MetadataLogState.apply_batch stamps
         contiguous offsets and the entry's Raft term as epoch (or drops it when fenced)
      -> the leader's callback wakes append(), which returns AppendResult

Leadership: when pysyncobj makes this voter leader, it proposes a leader-change control entry
(carrying ``set_leader_info`` bytes). Only when that entry has committed does ``is_leader``
become True, appends get accepted and listeners hear ``(True, epoch)``. Losing Raft leadership
(a higher term, or no majority heard for one election timeout) ends it: ``(False, epoch)``.

Fencing: every batch carries a fence epoch: ``expected_epoch`` if given, else the epoch at
which this voter was the active leader when ``append`` was called. Apply drops the batch on
every voter when the entry's Raft term differs from it, so a batch that a deposed leader
accepted, or that pysyncobj forwarded to another leader, never commits under another epoch.

Threads: pysyncobj's tick thread (owned by RaftNode) applies entries; a dispatcher thread
(``kraftlog-raft-listeners-<id>``) calls commit and leadership listeners, never the tick
thread, so a slow listener cannot delay heartbeats. Commit listeners are driven by a cursor
over the tail: if a listener falls so far behind that its next entry was folded into a
snapshot (or a follower installs a snapshot from the leader), the next run it gets starts at
the tail's first offset, so a listener that sees ``entries[0].offset != last + 1`` must reload
``latest_snapshot()``. All public methods are thread-safe.
"""

from __future__ import annotations

import bisect
import collections
import functools
import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from pysyncobj.config import FAIL_REASON

from raft.api import (
    CHANGE_PENDING,
    DUPLICATE_VOTER,
    LAST_VOTER,
    NOT_CAUGHT_UP,
    VOTER_NOT_FOUND,
    AppendResult,
    AppendTimeoutError,
    BatchTooLargeError,
    CommitListener,
    LeaderChange,
    LeadershipListener,
    LogEntry,
    MembershipChangeError,
    MetadataLogError,
    NotLeaderError,
    QuorumStatus,
    Snapshot,
    SnapshotBuilder,
    SnapshotRequired,
    StaleEpochError,
    VoterStatus,
)
from raft.config import MAX_VOTERS, RaftConfig
from raft.membership import OP_ADD, OP_REMOVE, MembershipChange
from raft.state import ApplyOutcome, MetadataLogState
from raft.syncobj_node import LEADER, RaftNode

logger = logging.getLogger(__name__)

# Raft index -> offset pairs kept for status() (match offsets of lagging voters).
INDEX_HISTORY_ENTRIES = 100_000
LISTENER_BATCH_RECORDS = 1000
DISPATCH_POLL_S = 1.0
# An observer is caught up enough to become a voter when it is at most this many Raft entries
# behind the leader's commit index (it then catches up the rest within a few round trips, so
# adding it does not stall commits that need its acknowledgement).
JOIN_MAX_LAG_ENTRIES = 1000
# How long the leader waits for a voter it hands leadership to (before it removes itself).
TRANSFER_WAIT_S = 10.0
_NOT_APPENDED = (FAIL_REASON.MISSING_LEADER, FAIL_REASON.NOT_LEADER, FAIL_REASON.DISCARDED)


def _never_raises(fn: Callable[..., None]) -> Callable[..., None]:
    """For callbacks pysyncobj runs inside its apply loop: an exception there would make it
    re-apply the same entry on every tick (a wedged voter)."""

    @functools.wraps(fn)
    def guarded(*args: Any) -> None:
        try:
            fn(*args)
        except Exception:
            logger.exception("metadata log callback %s failed", fn.__name__)

    return guarded


def _never_raises_method(fn: Callable[..., None]) -> Callable[..., None]:
    @functools.wraps(fn)
    def guarded(self: Any, *args: Any) -> None:
        try:
            fn(self, *args)
        except Exception:
            logger.exception("metadata log callback %s failed", fn.__name__)

    return guarded


class MetadataLog:
    """One voter of the metadata log; implements :class:`raft.api.MetadataLogApi` (see the
    module docstring for the life of an append, fencing and threads)."""

    def __init__(self, config: RaftConfig, snapshot_builder: SnapshotBuilder) -> None:
        config.validate_for_controller()
        self.config = config
        self.node_id = config.node_id
        self._state = MetadataLogState(config.max_tail_records, snapshot_builder)
        self._cond = threading.Condition()
        self._leader_info = b""
        self._node_info = b""
        self._node: RaftNode | None = None
        self._active_epoch: int | None = None
        self._events: collections.deque[tuple[bool, int]] = collections.deque()
        self._leadership_listeners: list[LeadershipListener] = []
        self._commit_listeners: list[CommitListener] = []
        # (raft index, committed offset after it), increasing in both
        self._index_offsets: collections.deque[tuple[int, int]] = collections.deque(
            [(1, -1)], maxlen=INDEX_HISTORY_ENTRIES
        )
        # The Raft index of the last entry applied to _state; entries at or below it are
        # skipped (the node re-applies its journal when it switches between voter and
        # observer without losing the state it has).
        self._applied_index = 0
        # One membership change at a time from this node.
        self._membership_lock = threading.Lock()
        self._closing = False
        self._dispatcher = threading.Thread(
            target=self._dispatch_loop, name=f"kraftlog-raft-listeners-{self.node_id}", daemon=True
        )

    # --- lifecycle ------------------------------------------------------------------------------

    def set_leader_info(self, info: bytes) -> None:
        """Opaque bytes put into this voter's leader-change records (e.g. its gRPC address)."""
        if not isinstance(info, bytes):
            raise TypeError("leader info must be bytes")
        self._leader_info = info

    def set_node_info(self, info: bytes) -> None:
        """Opaque bytes this voter tells the other voters about itself (see ``peer_infos``);
        may be called before or after ``start``."""
        if not isinstance(info, bytes):
            raise TypeError("node info must be bytes")
        self._node_info = info
        if self._node is not None:
            self._node.set_node_info(info)

    def peer_infos(self) -> dict[int, bytes]:
        """The node info most recently received from each other voter, by voter id (a voter
        not heard from since this one started is absent)."""
        return self._node.peer_infos() if self._node is not None else {}

    def start(self) -> None:
        if self._node is not None:
            raise MetadataLogError("already started")
        self._node = RaftNode(
            self.config,
            applier=self._apply,
            on_state_changed=self._on_state_changed,
            dump_state=self._dump_state,
            load_state=self._load_state,
        )
        self._node.set_node_info(self._node_info)
        self._dispatcher.start()
        self._node.start()

    def close(self) -> None:
        node = self._node
        if node is None or self._closing:
            return
        node.close()
        with self._cond:
            self._closing = True
            if self._active_epoch is not None:
                self._events.append((False, self._active_epoch))
                self._active_epoch = None
            self._cond.notify_all()
        if self._dispatcher.is_alive():
            self._dispatcher.join(5.0)

    def _require_node(self) -> RaftNode:
        if self._node is None or self._closing:
            raise MetadataLogError("metadata log is not running")
        return self._node

    # --- appends --------------------------------------------------------------------------------

    def append(
        self, records: Sequence[bytes], *, expected_epoch: int | None = None, timeout_s: float = 5.0
    ) -> AppendResult:
        node = self._require_node()
        batch = list(records)
        if not batch:
            raise ValueError("append needs at least one record")
        if not all(isinstance(r, bytes) for r in batch):
            raise TypeError("records must be bytes")
        size = sum(len(r) for r in batch)
        if size > self.config.max_batch_bytes:
            raise BatchTooLargeError(
                f"batch of {size} bytes exceeds metadata.log.max.batch.bytes="
                f"{self.config.max_batch_bytes}"
            )
        active = self._active_epoch
        if active is None or not node.is_raft_leader or node.term != active:
            raise NotLeaderError(self.leader_id)
        if expected_epoch is not None and expected_epoch != active:
            raise StaleEpochError(f"expected epoch {expected_epoch}, current epoch is {active}")
        done = threading.Event()
        box: list[tuple[Any, int]] = []

        @_never_raises
        def on_result(result: Any, error: int) -> None:
            box.append((result, error))
            done.set()

        node.propose_batch(batch, active, on_result)
        wait_s = min(timeout_s, self.config.append_timeout_ms / 1000.0)
        if not done.wait(wait_s):
            raise AppendTimeoutError(f"not committed within {wait_s:.3f} s; outcome unknown")
        result, error = box[0]
        if error == FAIL_REASON.SUCCESS and isinstance(result, ApplyOutcome):
            if result.status == "ok":
                return AppendResult(result.base_offset, result.last_offset, result.epoch)
            if result.status == "fenced":
                if expected_epoch is not None:
                    raise StaleEpochError(
                        f"epoch {expected_epoch} ended before the batch was appended"
                    )
                raise NotLeaderError(self.leader_id)
            raise MetadataLogError(f"batch rejected: {result.reason}")
        if error in _NOT_APPENDED:
            raise NotLeaderError(self.leader_id)
        raise AppendTimeoutError(f"outcome unknown (pysyncobj reason {error})")

    # --- reads ----------------------------------------------------------------------------------

    def read(self, from_offset: int, max_records: int = 1000) -> list[LogEntry]:
        with self._cond:
            return self._state.read(from_offset, max_records)

    def latest_snapshot(self) -> Snapshot | None:
        with self._cond:
            return self._state.snapshot

    def wait_for_offset(self, offset: int, timeout_s: float) -> bool:
        with self._cond:
            return self._cond.wait_for(lambda: self._state.committed_offset >= offset, timeout_s)

    @property
    def committed_offset(self) -> int:
        return self._state.committed_offset

    @property
    def log_start_offset(self) -> int:
        """The oldest offset ``read`` serves; older ones are in ``latest_snapshot()``."""
        with self._cond:
            return self._state.log_start_offset

    @property
    def journal_sync_count(self) -> int:
        """fdatasyncs of this voter's journal since start (group commit: several entries each)."""
        node = self._node
        return 0 if node is None else node.journal.sync_count

    # --- leadership -----------------------------------------------------------------------------

    @property
    def leader_id(self) -> int | None:
        node = self._node
        return None if node is None else node.leader_id

    @property
    def epoch(self) -> int:
        """This voter's current Raft term (the epoch a new leader would stamp its batches with)."""
        node = self._node
        return 0 if node is None else node.term

    @property
    def is_leader(self) -> bool:
        """Raft leader AND its leader-change record for the current epoch has committed."""
        node = self._node
        active = self._active_epoch
        return (
            node is not None
            and active is not None
            and node.is_raft_leader
            and (node.term == active)
        )

    def leader_info(self) -> bytes | None:
        """The leader info of the current epoch's leader, from its committed leader-change
        record; None while no leader of the current epoch has committed one."""
        with self._cond:
            change = self._state.leader
        if change is None or change.epoch != self.epoch:
            return None
        return change.leader_info

    def last_leader_change(self) -> LeaderChange | None:
        """The most recent committed leader-change record (possibly of an older epoch)."""
        with self._cond:
            return self._state.leader

    def add_leadership_listener(self, listener: LeadershipListener) -> None:
        with self._cond:
            self._leadership_listeners.append(listener)

    def add_commit_listener(self, listener: CommitListener) -> None:
        with self._cond:
            self._commit_listeners.append(listener)

    # --- status ---------------------------------------------------------------------------------

    def voters(self) -> dict[int, str]:
        """The current voter set (voter id -> Raft address), from the log's membership."""
        node = self._node
        return node.voters() if node is not None else self.config.initial_voters

    @property
    def is_voter(self) -> bool:
        """This node is one of the voters (False while it observes, before it is added or
        after it was removed)."""
        node = self._node
        return node is not None and node.is_voter

    def status(self) -> QuorumStatus:
        node = self._require_node()
        raw = node.raw_status()
        with self._cond:
            committed = self._state.committed_offset
            log_start = self._state.log_start_offset
            snap = self._state.snapshot
            history = list(self._index_offsets)
        is_raft_leader = raw.get("state") == LEADER
        ages = node.response_ages_s() if is_raft_leader else {}
        now_ms = int(time.time() * 1000)
        last_applied = int(raw.get("last_applied", 0))
        leader_id = node.id_of(getattr(raw.get("leader"), "address", None))

        def replica(
            node_id: int,
            address: str,
            connected: bool,
            match_idx: int | None,
            age_s: float | None,
            is_self: bool,
        ) -> VoterStatus:
            match_offset: int | None = None
            if is_self:
                match_offset = committed
            elif match_idx is not None:
                match_offset = _offset_at_index(history, min(match_idx, last_applied))
            lag = None if match_offset is None else max(0, committed - match_offset)
            last_fetch_ms = now_ms if is_self else None
            if not is_self and age_s is not None:
                last_fetch_ms = now_ms - int(age_s * 1000)
            return VoterStatus(
                node_id=node_id,
                address=address,
                connected=connected,
                is_leader=node_id == leader_id,
                match_offset=match_offset,
                lag_records=lag,
                last_fetch_ms=last_fetch_ms,
                last_caught_up_ms=last_fetch_ms if lag == 0 else None,
            )

        voters = []
        for voter_id, address in sorted(node.voters().items()):
            is_self = voter_id == self.node_id and node.is_voter
            voters.append(
                replica(
                    voter_id,
                    address,
                    is_self or raw.get(f"partner_node_status_server_{address}") == 2,
                    raw.get(f"match_idx_server_{address}") if is_raft_leader else None,
                    ages.get(voter_id),
                    is_self,
                )
            )
        observers = []
        if is_raft_leader:
            for observer_id, address, match_idx, age_s in sorted(node.observers()):
                observers.append(replica(observer_id, address, True, match_idx, age_s, False))
        return QuorumStatus(
            node_id=self.node_id,
            leader_id=leader_id,
            epoch=int(raw.get("raft_term", 0)),
            committed_offset=committed,
            log_start_offset=log_start,
            snapshot_last_offset=-1 if snap is None else snap.last_offset,
            voters=tuple(voters),
            observers=tuple(observers),
        )

    # --- membership changes (the active leader) -------------------------------------------------

    def add_voter(self, node_id: int, address: str, timeout_s: float = 10.0) -> dict[int, str]:
        """Add the controller ``node_id`` (Raft listener ``address``) to the voters once the
        change commits; returns the new voter set. It must be connected to this leader as an
        observer within JOIN_MAX_LAG_ENTRIES of the commit index.

        Raises NotLeaderError, MembershipChangeError (nothing appended) or
        AppendTimeoutError (outcome unknown)."""
        node = self._require_leader()
        with self._membership_lock:
            voters = node.voters()
            if node_id in voters or address in voters.values():
                raise MembershipChangeError(
                    DUPLICATE_VOTER, f"{node_id}@{address} (or its address) is already a voter"
                )
            if len(voters) >= MAX_VOTERS:
                raise MembershipChangeError(
                    DUPLICATE_VOTER, f"the quorum already has the most voters ({MAX_VOTERS})"
                )
            self._require_no_pending_change(node)
            observer = next((o for o in node.observers() if o[0] == node_id), None)
            if observer is None:
                raise MembershipChangeError(
                    NOT_CAUGHT_UP,
                    f"controller {node_id} is not connected to the leader as an observer; "
                    "format and start it first",
                )
            if observer[1] != address:
                raise MembershipChangeError(
                    NOT_CAUGHT_UP,
                    f"controller {node_id} observes from {observer[1]}, not {address}",
                )
            lag = None if observer[2] is None else node.commit_index - observer[2]
            if lag is None or lag > JOIN_MAX_LAG_ENTRIES:
                raise MembershipChangeError(
                    NOT_CAUGHT_UP,
                    f"controller {node_id} is {'an unknown number of' if lag is None else lag} "
                    f"Raft entries behind (at most {JOIN_MAX_LAG_ENTRIES} to join)",
                )
            change = MembershipChange.of(OP_ADD, node_id, address, {**voters, node_id: address})
            self._commit_membership(node, change, timeout_s)
            logger.info("raft: added voter %d@%s", node_id, address)
            return change.voter_set

    def remove_voter(self, node_id: int, timeout_s: float = 10.0) -> dict[int, str]:
        """Remove voter ``node_id`` once the change commits; returns the new voter set. The
        leader does not remove itself: asked to, it hands leadership to a caught-up voter and
        raises NotLeaderError so the caller retries on the new leader.

        Raises NotLeaderError, MembershipChangeError or AppendTimeoutError."""
        node = self._require_leader()
        with self._membership_lock:
            voters = node.voters()
            if node_id not in voters:
                raise MembershipChangeError(VOTER_NOT_FOUND, f"{node_id} is not a voter")
            if len(voters) == 1:
                raise MembershipChangeError(LAST_VOTER, f"{node_id} is the only voter")
            self._require_no_pending_change(node)
            if node_id == self.node_id:
                self._hand_over_leadership(node, voters)
                raise NotLeaderError(self.leader_id)
            remaining = {i: a for i, a in voters.items() if i != node_id}
            change = MembershipChange.of(OP_REMOVE, node_id, voters[node_id], remaining)
            self._commit_membership(node, change, timeout_s)
            logger.info("raft: removed voter %d@%s", node_id, voters[node_id])
            return change.voter_set

    def _require_leader(self) -> RaftNode:
        node = self._require_node()
        if not self.is_leader:
            raise NotLeaderError(self.leader_id)
        return node

    @staticmethod
    def _require_no_pending_change(node: RaftNode) -> None:
        if node.membership_change_pending():
            raise MembershipChangeError(
                CHANGE_PENDING, "the previous membership change has not committed yet"
            )

    def _hand_over_leadership(self, node: RaftNode, voters: dict[int, str]) -> None:
        """Ask the most caught-up other voter to take over, and wait until this node is no
        longer the leader (MembershipChangeError if no voter can take over in time)."""
        deadline = time.monotonic() + TRANSFER_WAIT_S
        while time.monotonic() < deadline:
            candidates = sorted(
                ((node.match_index_of(a) or 0, i) for i, a in voters.items() if i != self.node_id),
                reverse=True,
            )
            for _match, voter_id in candidates:
                if node.transfer_leadership(voter_id):
                    break
            with self._cond:
                if self._cond.wait_for(lambda: not self.is_leader, 1.0):
                    return
        raise MembershipChangeError(
            NOT_CAUGHT_UP, "no other voter was caught up to take over leadership in time"
        )

    def _commit_membership(
        self, node: RaftNode, change: MembershipChange, timeout_s: float
    ) -> None:
        done = threading.Event()
        box: list[int] = []

        @_never_raises
        def on_result(_result: Any, error: int) -> None:
            box.append(error)
            done.set()

        node.propose_membership(change, on_result)
        wait_s = min(timeout_s, self.config.append_timeout_ms / 1000.0)
        if not done.wait(wait_s):
            raise AppendTimeoutError(f"membership change not committed within {wait_s:.3f} s")
        if box[0] == FAIL_REASON.SUCCESS:
            return
        if box[0] in _NOT_APPENDED:
            raise NotLeaderError(self.leader_id)
        raise AppendTimeoutError(f"membership change outcome unknown (pysyncobj reason {box[0]})")

    # --- tick-thread callbacks ------------------------------------------------------------------

    def _apply(self, kind: str, raft_index: int, term: int, args: tuple[Any, ...]) -> ApplyOutcome:
        with self._cond:
            if raft_index <= self._applied_index:
                return ApplyOutcome("rejected", term, reason=f"entry {raft_index} already applied")
            self._applied_index = raft_index
            if kind == "batch":
                outcome, entries = self._state.apply_batch(args[0], args[1], term)
            elif kind == "leader_change":
                outcome, entries = self._state.apply_leader_change(args[0], args[1], args[2], term)
            else:
                return ApplyOutcome("rejected", term, reason=f"unknown entry kind {kind}")
            if entries:
                self._index_offsets.append((raft_index, self._state.committed_offset))
                self._cond.notify_all()
        return outcome

    @_never_raises_method
    def _on_state_changed(self, old: int, new: int) -> None:
        node = self._node
        if node is None:
            return
        if new == LEADER:
            self._propose_leader_change(node, node.term)
        elif old == LEADER:
            with self._cond:
                if self._active_epoch is not None:
                    self._events.append((False, self._active_epoch))
                    self._active_epoch = None
                    self._cond.notify_all()

    def _propose_leader_change(self, node: RaftNode, epoch: int) -> None:
        @_never_raises
        def on_result(result: Any, error: int) -> None:
            still_leading = node.is_raft_leader and node.term == epoch and not self._closing
            if (
                error == FAIL_REASON.SUCCESS
                and isinstance(result, ApplyOutcome)
                and result.status == "ok"
            ):
                with self._cond:
                    if still_leading and self._active_epoch != epoch:
                        self._active_epoch = epoch
                        self._events.append((True, epoch))
                        self._cond.notify_all()
            elif still_leading:
                logger.warning(
                    "leader-change record for epoch %d failed (%s); retrying", epoch, error
                )
                self._propose_leader_change(node, epoch)

        node.propose_leader_change(self.node_id, epoch, self._leader_info, on_result)

    def _dump_state(self) -> dict[str, Any]:
        with self._cond:
            return self._state.to_dict()

    def _load_state(self, data: dict[str, Any], raft_index: int) -> None:
        with self._cond:
            if raft_index <= self._applied_index:
                return  # the state already covers this dump (a mode switch reloads it)
            self._applied_index = raft_index
            self._state.load_dict(data)
            self._index_offsets.clear()
            self._index_offsets.append((raft_index, self._state.committed_offset))
            self._cond.notify_all()

    # --- listener dispatch ----------------------------------------------------------------------

    def _dispatch_loop(self) -> None:
        delivered = -1

        def pending() -> bool:
            return self._closing or bool(self._events) or self._state.committed_offset > delivered

        while True:
            with self._cond:
                self._cond.wait_for(pending, DISPATCH_POLL_S)
                entries: list[LogEntry] = []
                if self._state.committed_offset > delivered:
                    start = max(delivered + 1, self._state.log_start_offset)
                    entries = self._state.read(start, LISTENER_BATCH_RECORDS)
                events = list(self._events)
                self._events.clear()
                commit_listeners = list(self._commit_listeners)
                leadership_listeners = list(self._leadership_listeners)
                finished = self._closing and not events and not entries
            if finished:
                return
            if entries:
                delivered = entries[-1].offset
                for listener in commit_listeners:
                    _call_listener(listener, entries)
            for is_leader, epoch in events:
                for leadership_listener in leadership_listeners:
                    _call_listener(leadership_listener, is_leader, epoch)


def _call_listener(listener: Any, *args: Any) -> None:
    try:
        listener(*args)
    except Exception:
        logger.exception("metadata log listener %r failed", listener)


def _offset_at_index(history: list[tuple[int, int]], raft_index: int) -> int | None:
    """The committed offset after Raft entry ``raft_index``; None if older than ``history``."""
    pos = bisect.bisect_right(history, (raft_index, float("inf"))) - 1
    return None if pos < 0 else history[pos][1]


__all__ = ["MetadataLog", "SnapshotRequired"]
