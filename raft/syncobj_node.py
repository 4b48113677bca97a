"""The I/O shell around pysyncobj: one Raft voter, its tick thread, journal, dump and transport.

Everything pysyncobj-specific lives here (and in journal.py / dump.py). The replicated state
machine itself is :class:`raft.state.MetadataLogState`, driven by :class:`raft.metadata_log.
MetadataLog` through the ``applier`` callback.

How pysyncobj's gaps are closed
    (a) isolated leader: ``leaderFallbackTimeout`` = election timeout (pysyncobj: 30 s), so a
        leader that hears from no majority for one election timeout steps down; together with
        the tick granularity that is well within two election timeouts.
    (b) pickle on the wire: ``password`` = ``controller.quorum.secret`` (Fernet: AES-128-CBC +
        HMAC-SHA256, key from PBKDF2). A frame that does not authenticate is dropped *before*
        it is unpickled and the connection closed. In addition, frames whose length prefix is
        negative or above :data:`MAX_FRAME_BYTES` close the connection before they are
        buffered (pysyncobj would buffer up to 2 GiB).
    (c) durability: :class:`raft.journal.DurableJournal` (a ``pysyncobj.journal.Journal``
        subclass). pysyncobj has no option for a journal class; it calls the module-level
        factory ``pysyncobj.syncobj.createJournal`` once in ``SyncObj.__init__``, so
        construction substitutes that factory, under a lock, for the duration of the call.
        Acknowledgements are made durable by the transport subclass
        (:class:`_DurableAckTransport`), which syncs the journal right before a follower's
        ``next_node_idx`` reply is sent; the leader's own entries are synced at the top of every
        tick, before pysyncobj counts the leader towards a commit. The dump is kraftlog's own
        (custom ``serializer``/``deserializer``, see dump.py), fsynced before pysyncobj
        renames it into place.
    (d) latency: ``autoTick`` is off; this module runs the tick loop itself: a proposal wakes
        the poller, the tick appends every queued command, syncs them and starts an
        AppendEntries round right away (instead of on the next heartbeat), and the commit is
        computed on the tick right after an acknowledgement arrives; a moved commit index is
        announced at once too. pysyncobj runs in batch mode, so commands queued together
        travel in one message and a follower syncs them with one fdatasync (group commit).
        This writes pysyncobj's private ``__newAppendEntriesTime`` (the next-round deadline).
    (e) idle connections: pysyncobj closes a connection that has read nothing for
        ``connectionTimeout`` when it next sends on it, dropping that message. While a leader
        lives, nothing travels between followers, so the first RequestVote of every failover
        was dropped and every failover took a second election. Each voter now sends a
        keepalive on every handshaken connection that carried nothing for a quarter of the
        connection timeout, so the read timeout only fires for a peer that really went quiet
        (paused, partitioned); a killed peer's connection is reset by its kernel at once.
        An outgoing connection attempt that has not completed its handshake within the
        connection timeout is closed and retried (SYNs lost in a silent partition would
        otherwise keep it pending for the kernel's two minutes of SYN retries).
    (f) disruptive voters: pysyncobj has no pre-vote, so a voter whose election timer fired
        while it could not hear the leader (paused, restarted slowly, cut off) raised its
        term and deposed a healthy leader. Elections now start with a pre-vote round (see
        prevote.py), decided on the tick thread: pysyncobj only runs its election once a
        majority agreed. Because pysyncobj ignores AppendEntries of an older term without
        answering, a voter whose term is ahead of the leader's now answers with its term
        (``kraft_stale_term``) and the leader steps down, as Raft's AppendEntries reply
        would make it; otherwise such a voter could never rejoin (its pre-votes are refused
        while the leader lives). These read and write pysyncobj's private election state
        (``__raftElectionDeadline``, ``__raftState``, ``__setCurrentTerm`` ...).

    (g) dynamic membership: pysyncobj applies a membership entry to its peer set as a diff,
        only on some paths (not when it re-applies its journal after a restart, not in
        reverse on every truncation) and tells nodes by address only. kraftlog keeps the
        voter set itself (raft.membership, fed by the journal): every entry carries the whole
        voter set with ids, pysyncobj's own handler is a no-op, and the tick makes pysyncobj's
        peers the latest entry's voters. A node outside the voter set runs as pysyncobj's
        read-only node (an observer) and switches modes by rebuilding its SyncObj (see
        RaftNode).

Thread-safety: ``propose_*`` and the properties may be called from any thread; ``run_on_tick``
runs a function on the tick thread (pysyncobj's state is only safe to read there). The applier
and the state-change callback are called on the tick thread.
"""

from __future__ import annotations

import collections
import logging
import os
import socket
import struct
import threading
import time
from collections.abc import Callable
from typing import Any, Literal, TypeVar

import pysyncobj.syncobj as _pysyncobj_module
from pysyncobj import SyncObj, SyncObjConf, replicated
from pysyncobj.config import FAIL_REASON
from pysyncobj.poller import POLL_EVENT_TYPE
from pysyncobj.tcp_connection import CONNECTION_STATE, TcpConnection
from pysyncobj.transport import TCPTransport

from raft.api import MetadataLogError
from raft.config import RaftConfig
from raft.dump import DumpContents, read_dump, write_dump
from raft.journal import DurableJournal
from raft.membership import (
    MEMBERSHIP_COMMAND_TYPE,
    MembershipChange,
    MembershipHistory,
    is_voter,
    voters_text,
)
from raft.prevote import (
    PRE_VOTE,
    PRE_VOTE_RESPONSE,
    LogPosition,
    PreVote,
    PreVoteError,
    PreVoteRequest,
    parse_response,
    response_message,
)
from raft.pysyncobj_internals import check_pysyncobj_internals
from raft.state import ApplyOutcome

logger = logging.getLogger(__name__)

R = TypeVar("R")

JOURNAL_FILE = "raft-journal.log"
META_FILE = "raft-meta.json"
DUMP_FILE = "raft-dump.bin"
# Every name the metadata log may create in metadata.log.dir (temporary files included: the
# journal and meta use "<name>.tmp"; pysyncobj writes the dump to "<dump>.tmp" and a dump
# received from the leader to "<dump>.1.tmp").
LOG_DIR_FILES = (
    JOURNAL_FILE,
    JOURNAL_FILE + ".tmp",
    META_FILE,
    META_FILE + ".tmp",
    DUMP_FILE,
    DUMP_FILE + ".tmp",
    DUMP_FILE + ".1.tmp",
)

# pysyncobj's states (its _RAFT_STATE is private).
FOLLOWER, CANDIDATE, LEADER = 0, 1, 2

SUCCESS = FAIL_REASON.SUCCESS
FailReason = int
Applier = Callable[[str, int, int, tuple[Any, ...]], ApplyOutcome]
StateCallback = Callable[[int, int], None]

_JOURNAL_FACTORY_LOCK = threading.Lock()
_FRAME_LENGTH = struct.Struct("i")  # pysyncobj's native-int length prefix
MAX_FRAME_BYTES = 64 * 1024 * 1024
TASK_TIMEOUT_S = 5.0
BIND_ATTEMPTS = 5
BIND_RETRY_S = 0.2
# Wait between two attempts to restart Raft in the other mode (voter / observer) when the
# first one could not bind the Raft port.
MODE_SWITCH_RETRY_S = 5.0
# A voter that heard no leader for this many election timeouts observes for PROBE_ELECTIONS
# of them to learn whether it was removed (see RaftNode._wants_voter).
PROBE_AFTER_ELECTIONS = 10
PROBE_ELECTIONS = 5
REJECTION_LOG_INTERVAL_S = 10.0
# Message types kraftlog adds to pysyncobj's protocol, consumed by the transport (see (e), (f)).
KEEPALIVE = "kraft_keepalive"
STALE_TERM = "kraft_stale_term"
# A voter's own description (opaque bytes set by the metadata layer: the feature levels it
# supports), sent to every connected voter at the keepalive cadence.
NODE_INFO = "kraft_node_info"
_KEEPALIVE_MESSAGE = {"type": KEEPALIVE}
# Longest node info accepted from a peer (it is a few dozen bytes of msgpack).
MAX_NODE_INFO_BYTES = 4096
# Keepalives go out when nothing else was sent to a voter for this share of the connection
# timeout, so an idle connection gets several of them before the peer's read timeout.
KEEPALIVE_SHARE_OF_CONNECTION_TIMEOUT = 0.25
# The pre-vote lease, as a share of the minimum election timeout: a little under it, so a voter
# whose last heartbeat arrived a few milliseconds after the pre-candidate's still grants.
LEASE_SHARE_OF_ELECTION_TIMEOUT = 0.8


class RaftNodeError(MetadataLogError):
    """The voter could not start (port in use, unreadable journal or dump)."""


class _BoundedTcpConnection(TcpConnection):
    """pysyncobj's connection with a bound on the frame length, checked before buffering; it
    also records when an outgoing connection attempt started (see (e))."""

    kraft_connect_started = 0.0

    def connect(self, host: str, port: int) -> bool:
        self.kraft_connect_started = time.monotonic()
        return super().connect(host, port)

    def _TcpConnection__processParseMessage(self) -> Any:
        buf = self._TcpConnection__readBuffer
        if len(buf) >= _FRAME_LENGTH.size:
            (length,) = _FRAME_LENGTH.unpack_from(buf, 0)
            if length < 0 or length > MAX_FRAME_BYTES:
                _log_rejected(f"a frame announcing {length} bytes")
                self.disconnect()
                return None
        message = TcpConnection._TcpConnection__processParseMessage(self)
        if message is None and self.state == CONNECTION_STATE.DISCONNECTED and buf:
            # pysyncobj closes silently when a frame does not decrypt and authenticate.
            _log_rejected("a frame that did not authenticate (wrong controller.quorum.secret?)")
        return message


_last_rejection_log = 0.0


def _log_rejected(what: str) -> None:
    """Warn about rejected peers at most once per REJECTION_LOG_INTERVAL_S (a peer with a
    wrong secret reconnects every retry backoff)."""
    global _last_rejection_log
    now = time.monotonic()
    if now - _last_rejection_log >= REJECTION_LOG_INTERVAL_S:
        _last_rejection_log = now
        logger.warning("raft: closed a connection that sent %s", what)


class _DurableAckTransport(TCPTransport):
    """Syncs the journal before a follower acknowledges entries; bounds incoming frames; keeps
    the leader's pipelining from re-sending in-flight entries (reads pysyncobj's private
    ``__raftNextIndex``, on the tick thread, pinned to pysyncobj < 0.4); keeps idle
    connections alive and hands kraftlog's own message types to the SyncObj subclass."""

    _syncObj: _KraftSyncObj

    def __init__(self, syncObj: Any, selfNode: Any, otherNodes: Any) -> None:
        self._kraft_last_send: dict[Any, float] = {}
        self._kraft_last_info_send: dict[Any, float] = {}
        super().__init__(syncObj, selfNode, otherNodes)

    def send(self, node: Any, message: Any) -> bool:
        if isinstance(message, dict) and message.get("type") == "next_node_idx":
            self._syncObj._kraft_journal.sync()
        self._kraft_last_send[node] = time.monotonic()
        return super().send(node, message)

    def kraft_housekeeping(
        self,
        now: float,
        connected: set[Any],
        keepalive_s: float,
        connect_timeout_s: float,
        node_info: dict[str, Any],
    ) -> None:
        """Keep idle voter connections alive, send this node's ``node_info`` message (its id,
        Raft address and opaque info) to every connected node once per ``keepalive_s``, and
        give up on stalled connection attempts.

        ``connected`` is pysyncobj's set of voters whose connection finished its handshake;
        only those may carry messages (a frame sent before the key exchange would be taken
        for the peer's key)."""
        for node, conn in list(self._connections.items()):
            if node in connected:
                if now - self._kraft_last_info_send.get(node, 0.0) >= keepalive_s:
                    self._kraft_last_info_send[node] = now
                    self.send(node, node_info)
                if now - self._kraft_last_send.get(node, 0.0) >= keepalive_s:
                    self.send(node, _KEEPALIVE_MESSAGE)
                continue
            # Re-send the node info at once after a reconnection (the peer may have restarted).
            self._kraft_last_info_send.pop(node, None)
            if (
                conn.state != CONNECTION_STATE.DISCONNECTED
                and isinstance(conn, _BoundedTcpConnection)
                and conn.kraft_connect_started
                and now - conn.kraft_connect_started > connect_timeout_s
            ):
                # An outgoing attempt that neither connected nor failed (SYNs dropped by a
                # silent partition; the kernel retries for about two minutes) or whose peer
                # never answered the handshake: close it so the next attempt can succeed as
                # soon as the network heals.
                conn.disconnect()

    def _onMessageReceived(self, node: Any, message: Any) -> None:
        if self._syncObj._kraft_intercept(node, message):
            return
        # pysyncobj's leader sets nextIndex to the acknowledged index + 1 on every ack that
        # raises matchIndex, even while later entries are already in flight on the same TCP
        # stream; it then re-sends those and the follower truncates and re-appends them.
        # Keep nextIndex from moving backwards on a successful ack (a failed one, reset=True,
        # still moves it back, which is how a follower that really lacks entries recovers).
        next_index = None
        before = None
        if (
            isinstance(message, dict)
            and message.get("type") == "next_node_idx"
            and message.get("success")
            and not message.get("reset")
        ):
            next_index = self._syncObj._SyncObj__raftNextIndex
            before = next_index.get(node)
        super()._onMessageReceived(node, message)
        if next_index is not None and before is not None:
            after = next_index.get(node)
            if after is not None and after < before:
                next_index[node] = before

    def _onNewIncomingConnection(self, conn: TcpConnection) -> None:
        conn.__class__ = _BoundedTcpConnection
        super()._onNewIncomingConnection(conn)

    def addNode(self, node: Any) -> None:
        super().addNode(node)
        conn = self._connections.get(node)
        if conn is not None:
            conn.__class__ = _BoundedTcpConnection


class _KraftSyncObj(SyncObj):
    """pysyncobj's replicated object; its replicated methods only forward to the applier.

    ``self_address`` is None for an observer (pysyncobj's read-only node: it follows the
    leader's log but never votes or stands); ``own_address`` is this node's Raft address in
    both modes. The peer set is the voter set of ``membership`` (see raft.membership),
    reconciled into pysyncobj's on every tick; ``kraft_is_member`` says whether this node is
    one of those voters."""

    _SyncObj__transport: _DurableAckTransport

    def __init__(
        self,
        self_address: str | None,
        conf: SyncObjConf,
        journal: DurableJournal,
        applier: Applier,
        membership: MembershipHistory,
        node_id: int,
        own_address: str,
    ) -> None:
        self._kraft_journal = journal
        self._kraft_applier = applier
        self._kraft_membership = membership
        self._kraft_membership_seen = -1
        self._kraft_node_id = node_id
        self._kraft_own_address = own_address
        voters = membership.current()
        self.kraft_voters: dict[int, str] = voters
        self.kraft_is_member = is_voter(voters, node_id, own_address)
        self._kraft_prevote = PreVote(
            voter_count=max(1, len(voters)),
            lease_s=conf.raftMinTimeout * LEASE_SHARE_OF_ELECTION_TIMEOUT,
        )
        self._kraft_keepalive_s = conf.connectionTimeout * KEEPALIVE_SHARE_OF_CONNECTION_TIMEOUT
        # This node's node info (see NODE_INFO), the latest one received per node id, and the
        # (id, Raft address) each connected observer announced (tick thread writes; other
        # threads read copies).
        self.kraft_node_info = b""
        self.kraft_peer_info: dict[int, bytes] = {}
        self.kraft_observer_ids: dict[Any, tuple[int, str]] = {}
        self._kraft_connect_timeout_s = conf.connectionTimeout
        # When an AppendEntries from a leader last arrived (None: not since this SyncObj was
        # built) and the commit index it carried (see kraft_silent_s, kraft_synced).
        self.kraft_last_heard = time.monotonic()  # any message from any node (or the start)
        self._kraft_last_tick = self.kraft_last_heard
        self._kraft_pause_gap_s = conf.raftMinTimeout
        self.kraft_last_leader_contact: float | None = None
        self._kraft_leader_commit = 0
        partners = [a for a in voters.values() if a != self_address]

        def journal_factory(journalFile: str | None = None) -> DurableJournal:
            return journal

        with _JOURNAL_FACTORY_LOCK:
            original = _pysyncobj_module.createJournal
            _pysyncobj_module.createJournal = journal_factory
            try:
                super().__init__(self_address, partners, conf, transportClass=_DurableAckTransport)
            finally:
                _pysyncobj_module.createJournal = original
        check_pysyncobj_internals(self)
        self._kraft_reconcile_membership()

    # --- membership (tick thread; pysyncobj's private state) ------------------------------------

    def _kraft_reconcile_membership(self) -> None:
        """Make pysyncobj's peers the voters of the latest membership entry (once per change)."""
        history = self._kraft_membership
        if history.version == self._kraft_membership_seen:
            return
        self._kraft_membership_seen = history.version
        voters = history.current()
        self.kraft_voters = voters
        self.kraft_is_member = is_voter(voters, self._kraft_node_id, self._kraft_own_address)
        others = [
            a for i, a in voters.items() if not (self.kraft_is_member and i == self._kraft_node_id)
        ]
        self._SyncObj__updateClusterConfiguration(others)
        if self._SyncObj__raftState == LEADER:
            # pysyncobj's leader reads every peer's last response time on each tick.
            now = time.monotonic()
            for node in self._SyncObj__otherNodes:
                self._SyncObj__lastResponseTime.setdefault(node, now)
            if not self.kraft_is_member:
                self._SyncObj__setState(FOLLOWER)
                self._SyncObj__raftLeader = None
        self._kraft_prevote.voter_count = max(1, len(voters))
        for node_id in [i for i in self.kraft_peer_info if i not in voters]:
            if node_id not in {v[0] for v in self.kraft_observer_ids.values()}:
                del self.kraft_peer_info[node_id]

    def _SyncObj__doChangeCluster(self, request: Any, reverse: bool = False) -> bool:
        # pysyncobj calls this when it applies a membership entry. The voter set is kept by
        # raft.membership from the journal instead (latest entry, on append), so nothing here.
        return True

    def _SyncObj__loadDumpFile(self, clearJournal: bool) -> None:
        SyncObj._SyncObj__loadDumpFile(self, clearJournal)
        self._kraft_reconcile_membership()

    def kraft_silent_s(self, now: float) -> float:
        """Seconds since any node sent this one anything (or since this SyncObj started): a
        voter hears the leader's heartbeats and every connected voter's keepalives, so only
        a voter the others dropped, or one cut off from all of them, goes silent. 0 on the
        leader itself and right after this process resumed from a pause (see _onTick)."""
        resumed = now - self._kraft_last_tick > self._kraft_pause_gap_s
        if self._SyncObj__raftState == LEADER or resumed:
            return 0.0
        return now - self.kraft_last_heard

    def kraft_synced(self) -> bool:
        """A leader was heard from and this node's log reaches the commit index it sent, so
        the membership in this node's log is at least as new as the committed one."""
        return (
            self.kraft_last_leader_contact is not None
            and self._SyncObj__getCurrentLogIndex() >= self._kraft_leader_commit
        )

    def kraft_node_info_message(self) -> dict[str, Any]:
        return {
            "type": NODE_INFO,
            "info": self.kraft_node_info,
            "id": self._kraft_node_id,
            "address": self._kraft_own_address,
        }

    def kraft_observers(self) -> list[tuple[int, str, int | None, float | None]]:
        """On the leader: (id, Raft address, match index, seconds since its last answer) of
        every connected observer that announced itself. Tick thread."""
        now = time.monotonic()
        match = self._SyncObj__raftMatchIndex
        times = self._SyncObj__lastResponseTime
        out = []
        for node in list(self._SyncObj__readonlyNodes):
            ident = self.kraft_observer_ids.get(node)
            if ident is None:
                continue
            answered = times.get(node)
            out.append(
                (
                    ident[0],
                    ident[1],
                    match.get(node) if self._SyncObj__raftState == LEADER else None,
                    None if answered is None else max(0.0, now - answered),
                )
            )
        return out

    # --- pre-vote, keepalives and stale terms (tick thread; pysyncobj's private state) ----------

    def _onTick(self, timeToWait: float = 0.0) -> None:
        now = time.monotonic()
        if now - self._kraft_last_tick > self._kraft_pause_gap_s:
            # This process did not run (SIGSTOP, a VM pause): the silence was its own, so it
            # does not count towards kraft_silent_s.
            self.kraft_last_heard = now
        self._kraft_last_tick = now
        self._kraft_reconcile_membership()
        self._SyncObj__transport.kraft_housekeeping(
            now,
            self._SyncObj__connectedNodes,
            self._kraft_keepalive_s,
            self._kraft_connect_timeout_s,
            self.kraft_node_info_message(),
        )
        self._kraft_maybe_pre_vote(now)
        super()._onTick(timeToWait)

    def _kraft_own_log(self) -> LogPosition:
        return LogPosition(self._SyncObj__getCurrentLogTerm(), self._SyncObj__getCurrentLogIndex())

    def _kraft_maybe_pre_vote(self, now: float) -> None:
        """Runs right before pysyncobj's tick, which starts an election when the election
        deadline has passed. Unless a pre-vote round for that election has just reached a
        majority, push the deadline back one randomised election timeout (as a failed
        election would) and ask the other voters instead."""
        if not self.kraft_is_member and self._SyncObj__raftElectionDeadline < now:
            # Not a voter (an observer, or a voter mode node whose membership entry was
            # removed): never stand, however long it hears nothing.
            self._SyncObj__raftElectionDeadline = now + self._SyncObj__generateRaftTimeout()
            return
        if (
            self._SyncObj__raftState == LEADER
            or self._SyncObj__raftElectionDeadline >= now
            or not self._SyncObj__connectedToAnyone()
            or self._SyncObj__transferInProgress
        ):
            return
        term = self.raftCurrentTerm
        if self._kraft_prevote.election_allowed(now, term):
            return
        self._SyncObj__raftElectionDeadline = now + self._SyncObj__generateRaftTimeout()
        request = self._kraft_prevote.start_round(now, term, self._kraft_own_log())
        if request is None:  # a majority on its own: elect at once
            self._SyncObj__raftElectionDeadline = 0.0
            return
        message = request.to_message()
        transport = self._SyncObj__transport
        for node in self._SyncObj__otherNodes:
            transport.send(node, message)

    def _kraft_intercept(self, node: Any, message: Any) -> bool:
        """Handle kraftlog's own message types and watch pysyncobj's AppendEntries; True when
        the message was consumed here and must not reach pysyncobj."""
        self.kraft_last_heard = time.monotonic()
        if not isinstance(message, dict):
            return False
        kind = message.get("type")
        if kind == "append_entries":
            self._kraft_on_append_entries(node, message)
            return False
        if kind == KEEPALIVE:
            return True
        if kind == NODE_INFO:
            info, node_id, address = message.get("info"), message.get("id"), message.get("address")
            if (
                isinstance(info, bytes)
                and len(info) <= MAX_NODE_INFO_BYTES
                and type(node_id) is int
                and isinstance(address, str)
            ):
                self.kraft_peer_info[node_id] = info
                if node in self._SyncObj__readonlyNodes:
                    self.kraft_observer_ids[node] = (node_id, address)
            return True
        try:
            if kind == PRE_VOTE:
                self._kraft_on_pre_vote(node, PreVoteRequest.from_message(message))
                return True
            if kind == PRE_VOTE_RESPONSE:
                term, granted = parse_response(message)
                peer_address = getattr(node, "address", str(node))
                if (
                    self._kraft_prevote.on_response(peer_address, term, granted)
                    and self._SyncObj__raftState != LEADER
                ):
                    self._SyncObj__raftElectionDeadline = 0.0  # elect on the next tick
                return True
        except PreVoteError as e:
            _log_rejected(str(e))
            return True
        if kind == STALE_TERM:
            self._kraft_on_stale_term(message.get("term"))
            return True
        return False

    def _kraft_on_append_entries(self, node: Any, message: dict[str, Any]) -> None:
        term = message.get("term")
        if type(term) is not int:
            return
        if term >= self.raftCurrentTerm:
            now = time.monotonic()
            self._kraft_prevote.note_leader_contact(now)
            self.kraft_last_leader_contact = now
            commit_index = message.get("commit_index")
            if type(commit_index) is int:
                self._kraft_leader_commit = commit_index
        else:
            # pysyncobj ignores AppendEntries from an older term without answering, so a
            # leader would never learn that this voter moved on (Raft answers with the
            # current term). Without the answer, a voter whose term went up while it was cut
            # off would stay out of the quorum for good: its pre-votes are refused while the
            # leader lives, and it ignores that leader.
            self._SyncObj__transport.send(node, {"type": STALE_TERM, "term": self.raftCurrentTerm})

    def _kraft_on_stale_term(self, term: Any) -> None:
        if type(term) is not int or term <= self.raftCurrentTerm:
            return
        # What pysyncobj does on a RequestVote of a higher term, minus the vote.
        self._SyncObj__setCurrentTerm(term, None)
        self._SyncObj__setState(FOLLOWER)
        self._SyncObj__raftLeader = None

    def _kraft_on_pre_vote(self, node: Any, request: PreVoteRequest) -> None:
        granted = self._kraft_prevote.should_grant(
            request,
            now=time.monotonic(),
            is_leader=self._SyncObj__raftState == LEADER,
            current_term=self.raftCurrentTerm,
            voted_in_current_term=self._SyncObj__votedForNodeId is not None,
            own_log=self._kraft_own_log(),
        )
        self._SyncObj__transport.send(node, response_message(request.proposed_term, granted))

    @replicated
    def kraft_append_batch(self, records: Any, fence_epoch: Any) -> ApplyOutcome:
        return self._kraft_apply("batch", (records, fence_epoch))

    @replicated
    def kraft_leader_change(self, leader_id: Any, epoch: Any, leader_info: Any) -> ApplyOutcome:
        return self._kraft_apply("leader_change", (leader_id, epoch, leader_info))

    def _kraft_apply(self, kind: str, args: tuple[Any, ...]) -> ApplyOutcome:
        # Never raise: pysyncobj would re-apply the entry on every tick (a wedged voter).
        try:
            idx = self.raftLastApplied + 1
            term = self._kraft_journal.term_at(idx)
            if term is None:
                logger.error("raft: entry %d being applied is not in the journal", idx)
                return ApplyOutcome("rejected", -1, reason=f"entry {idx} not in journal")
            return self._kraft_applier(kind, idx, term, args)
        except Exception as e:
            logger.exception("raft: apply of a %s entry failed", kind)
            return ApplyOutcome("rejected", -1, reason=f"apply failed: {e!r}")


class _Wakeup:
    """A pipe in pysyncobj's poller, so another thread can end the tick's poll wait. It
    lives as long as the RaftNode and moves to the poller of each new SyncObj (closing and
    reopening it would let a late ``notify`` write into a recycled descriptor)."""

    def __init__(self, poller: Any) -> None:
        self._poller = poller
        self._closed = False
        self._r, self._w = os.pipe()
        os.set_blocking(self._r, False)
        os.set_blocking(self._w, False)
        poller.subscribe(self._r, self._drain, POLL_EVENT_TYPE.READ)

    def move_to(self, poller: Any) -> None:
        self._poller.unsubscribe(self._r)
        self._poller = poller
        poller.subscribe(self._r, self._drain, POLL_EVENT_TYPE.READ)

    def notify(self) -> None:
        if self._closed:
            return
        try:
            os.write(self._w, b"x")
        except BlockingIOError:
            pass  # pipe full: a wake-up is already pending

    def _drain(self, _fd: int, _events: int) -> None:
        try:
            while os.read(self._r, 4096):
                pass
        except BlockingIOError:
            pass

    def close(self) -> None:
        self._closed = True
        self._poller.unsubscribe(self._r)
        os.close(self._r)
        os.close(self._w)


def _check_bindable(host: str, port: int) -> None:
    """Fail fast with the OS error (pysyncobj would retry, leaking a socket per attempt)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((host, port))


def build_conf(
    config: RaftConfig,
    serializer: Any,
    deserializer: Any,
    dump_path: str,
    bind_address: str | None,
) -> SyncObjConf:
    """pysyncobj's configuration for this node; ``bind_address`` is None for an observer."""
    election_s = config.election_timeout_ms / 1000.0
    batch_bytes = max(2 * 1024 * 1024, 2 * config.max_batch_bytes + 64 * 1024)
    return SyncObjConf(
        password=config.quorum_secret,
        autoTick=False,
        # Batch mode: pysyncobj sends new entries with the next AppendEntries round only; the
        # tick loop starts that round at once (see RaftNode._before_poll), so every command
        # queued during one tick travels in one message per follower and costs the follower
        # one fdatasync.
        appendEntriesUseBatch=True,
        appendEntriesPeriod=config.append_interval_ms / 1000.0,
        # Randomised in [T, 2T]: a narrower spread would shorten failover a little (the first
        # timer to fire is what counts) but make two survivors more likely to time out within
        # a round trip of each other, and a split vote costs a whole extra election timeout.
        raftMinTimeout=election_s,
        raftMaxTimeout=2 * election_s,
        leaderFallbackTimeout=election_s,
        # A peer that sent nothing (not even a keepalive, see (e)) for 2T is treated as gone.
        connectionTimeout=2 * election_s,
        connectionRetryTime=config.retry_backoff_ms / 1000.0,
        commandsWaitLeader=False,
        dynamicMembershipChange=False,
        appendEntriesBatchSizeBytes=batch_bytes,
        logCompactionMinEntries=config.max_tail_records,
        fullDumpFile=dump_path,
        serializer=serializer,
        deserializer=deserializer,
        journalFile=None,
        # pysyncobj binds 0.0.0.0 unless told otherwise: bind the voter's own address only.
        bindAddress=bind_address,
        bindRetryTime=BIND_RETRY_S,
        maxBindRetries=BIND_ATTEMPTS,
    )


class RaftNode:
    """One controller's Raft node: a voter, or an observer while it is not in the voter set.
    ``applier(kind, raft_index, raft_term, args)`` applies committed entries;
    ``dump_state()`` gives the state the dump holds and ``load_state(d, raft_index)`` replaces
    it with a dumped one that covers Raft entries up to ``raft_index``.

    Modes: the node runs pysyncobj as a voter when the voter set of its log holds its id with
    its Raft address, and as pysyncobj's read-only node (an observer: it binds no port,
    follows the leader's log and never votes) otherwise. When a membership entry changes that
    (this node added or removed), the tick thread rebuilds the SyncObj in the other mode on the
    same journal and dump, as a restart would."""

    def __init__(
        self,
        config: RaftConfig,
        applier: Applier,
        on_state_changed: StateCallback,
        dump_state: Callable[[], dict[str, Any]],
        load_state: Callable[[dict[str, Any], int], None],
    ) -> None:
        self.config = config
        log_dir = config.metadata_log_dir
        os.makedirs(log_dir, exist_ok=True)
        self._log_dir = log_dir
        self._dump_path = os.path.join(log_dir, DUMP_FILE)
        self._dump_state = dump_state
        self._load_state = load_state
        self._applier = applier
        self._on_state_changed = on_state_changed
        self.node_id = config.node_id
        self.own_address = config.own_address
        self._node_info = b""
        self.journal, self.membership = self._open_journal()
        self.voter_mode = self._wants_voter_mode()
        self.sync = self._new_sync()
        self._wakeup = _Wakeup(self.sync._poller)
        self.sync.addOnTickCallback(self._before_poll)
        self._tasks: collections.deque[tuple[Callable[[], Any], list[Any], threading.Event]] = (
            collections.deque()
        )
        self._stopping = False
        self._announced_commit_index = 0
        self._tick_s = min(0.05, config.append_interval_ms / 2000.0)
        election_s = config.election_timeout_ms / 1000.0
        self._probe_after_s = PROBE_AFTER_ELECTIONS * election_s
        self._probe_s = PROBE_ELECTIONS * election_s
        self._observe_until = 0.0
        self._thread = threading.Thread(
            target=self._run, name=f"kraftlog-raft-{config.node_id}", daemon=True
        )

    def _open_journal(self) -> tuple[DurableJournal, MembershipHistory]:
        log_dir = self._log_dir
        try:
            journal = DurableJournal(
                os.path.join(log_dir, JOURNAL_FILE), os.path.join(log_dir, META_FILE)
            )
        except Exception as e:
            raise RaftNodeError(f"cannot open the metadata log in {log_dir}: {e}") from e
        membership = MembershipHistory(self.config.initial_voters)
        try:
            if os.path.exists(self._dump_path):
                dump = read_dump(self._dump_path)
                journal.trim_to_dump([dump.prev_entry, dump.last_entry])
                if dump.voters is not None:
                    membership.set_base(dump.voters, dump.last_entry[1])
        except Exception as e:
            journal._destroy()
            raise RaftNodeError(f"cannot open the metadata log in {log_dir}: {e}") from e
        journal.attach_membership(membership)
        return journal, membership

    def _wants_voter_mode(self) -> bool:
        return is_voter(self.membership.current(), self.node_id, self.own_address)

    def _new_sync(self) -> _KraftSyncObj:
        """A SyncObj in ``self.voter_mode`` on ``self.journal``; destroys the journal and
        raises RaftNodeError if it cannot start."""
        self_address = self.own_address if self.voter_mode else None
        if self_address is not None:
            host, _, port = self_address.rpartition(":")
            try:
                _check_bindable(host, int(port))
            except OSError as e:
                self.journal._destroy()
                raise RaftNodeError(f"cannot start Raft voter on {self_address}: {e}") from e
        conf = build_conf(
            self.config, self._serialize, self._deserialize, self._dump_path, self_address
        )
        conf.onStateChanged = self._on_state_changed
        try:
            sync = _KraftSyncObj(
                self_address,
                conf,
                self.journal,
                self._applier,
                self.membership,
                self.node_id,
                self.own_address,
            )
        except Exception as e:
            self.journal._destroy()
            raise RaftNodeError(f"cannot start Raft node on {self.own_address}: {e!r}") from e
        sync.kraft_node_info = self._node_info
        if not self.voter_mode:
            logger.info(
                "raft: node %d follows the quorum as an observer (voters %s)",
                self.node_id,
                voters_text(self.membership.current()),
            )
        return sync

    def _switch_mode(self, to_voter: bool) -> None:
        """Rebuild the SyncObj as a voter or an observer (tick thread, between ticks). The
        journal is synced and reopened; the state machine keeps what it applied (the applier
        skips entries it already has)."""
        logger.info(
            "raft: node %d restarts Raft as %s (voters in its log: %s)",
            self.node_id,
            "a voter" if to_voter else "an observer",
            voters_text(self.membership.current()),
        )
        self.sync.destroy()  # autoTick off: closes the transport and the journal (synced)
        self.journal, self.membership = self._open_journal()
        self.voter_mode = to_voter
        try:
            self.sync = self._new_sync()
        except RaftNodeError:
            if not self.voter_mode:
                raise
            # The Raft port is taken: follow as an observer (binds nothing) and retry later.
            logger.exception("raft: node %d cannot start as a voter yet", self.node_id)
            self.journal, self.membership = self._open_journal()
            self.voter_mode = False
            self.sync = self._new_sync()
        self._wakeup.move_to(self.sync._poller)
        self.sync.addOnTickCallback(self._before_poll)
        self._announced_commit_index = 0

    # --- lifecycle ------------------------------------------------------------------------------

    def start(self) -> None:
        """Start ticking; returns after the first tick, which loads the dump and re-applies the
        journal up to the last known commit index, so reads right after start see them."""
        self._thread.start()
        self.run_on_tick(lambda: None)
        self.run_on_tick(lambda: None)

    def close(self) -> None:
        self._stopping = True
        self._wakeup.notify()
        if self._thread.is_alive():
            self._thread.join(TASK_TIMEOUT_S)
        if self._thread.is_alive():
            logger.error("raft tick thread did not stop within %.1f s", TASK_TIMEOUT_S)
            return
        self._wakeup.close()
        self.sync.destroy()  # autoTick off: destroys transport and journal right here

    def _wants_voter(self, now: float) -> bool:
        """The mode the node should run in now (tick thread).

        A voter runs as a voter while its log says it is one. But a voter that was removed
        while it was away (or that appended its own addition which then did not commit) is
        not told: the others simply stop talking to it. So a voter that has heard from no
        node for PROBE_AFTER_ELECTIONS election timeouts (see kraft_silent_s) observes for
        PROBE_ELECTIONS of them: as an observer any live leader sends it the log, and it
        becomes a voter again if that log still lists it, or when nobody answered."""
        sync = self.sync
        if self.voter_mode:
            if not sync.kraft_is_member:
                return False
            if len(sync.kraft_voters) > 1 and sync.kraft_silent_s(now) > self._probe_after_s:
                logger.warning(
                    "raft: node %d heard from no other node for %.0f s; observing to learn "
                    "whether it is still a voter",
                    self.node_id,
                    sync.kraft_silent_s(now),
                )
                self._observe_until = now + self._probe_s
                return False
            return True
        if now < self._observe_until and not sync.kraft_synced():
            return False
        return sync.kraft_is_member

    def _run(self) -> None:
        next_switch = 0.0
        while not self._stopping:
            try:
                # Durable before pysyncobj counts this voter's own entries towards a commit
                # (it computes the commit index at the top of the tick).
                self.journal.sync()
                self._run_tasks()
                self.sync.doTick(self._tick_s)
                now = time.monotonic()
                if now >= next_switch and self._wants_voter(now) != self.voter_mode:
                    next_switch = now + MODE_SWITCH_RETRY_S
                    self._switch_mode(not self.voter_mode)
            except Exception:
                # pysyncobj's own tick loop does the same: log, back off, go on.
                logger.exception("raft tick failed")
                time.sleep(self._tick_s)
        self._run_tasks()

    def _before_poll(self) -> None:
        # Runs inside the tick, after the leader appended the queued commands, right before the
        # poll wait. On the leader: sync the new entries, and start an AppendEntries round on
        # the next tick (pysyncobj in batch mode would wait for the heartbeat timer), also
        # when only the commit index moved, so followers apply promptly.
        sync = self.sync
        if sync._isLeader():
            commit_index = sync.raftCommitIndex
            if self.journal.dirty or commit_index != self._announced_commit_index:
                self.journal.sync()
                self._announced_commit_index = commit_index
                sync._SyncObj__newAppendEntriesTime = 0.0  # pysyncobj's next-round deadline
                self._wakeup.notify()
        elif self.journal.dirty:
            self.journal.sync()

    def _run_tasks(self) -> None:
        while self._tasks:
            fn, box, done = self._tasks.popleft()
            try:
                box.append((True, fn()))
            except Exception as e:
                box.append((False, e))
            done.set()

    def run_on_tick(self, fn: Callable[[], R], timeout_s: float = TASK_TIMEOUT_S) -> R:
        """Run ``fn`` on the tick thread and return its result (TimeoutError if the thread
        does not get to it in time)."""
        if threading.current_thread() is self._thread or not self._thread.is_alive():
            return fn()
        box: list[tuple[Literal[True], R] | tuple[Literal[False], BaseException]] = []
        done = threading.Event()
        self._tasks.append((fn, box, done))
        self._wakeup.notify()
        if not done.wait(timeout_s):
            raise TimeoutError("raft tick thread did not run the task in time")
        outcome = box[0]
        if outcome[0]:
            return outcome[1]
        raise outcome[1]

    # --- proposals (any thread) -------------------------------------------------------------

    def propose_batch(
        self, records: list[bytes], fence_epoch: int, callback: Callable[[Any, FailReason], None]
    ) -> None:
        self.sync.kraft_append_batch(records, fence_epoch, callback=callback)
        self._wakeup.notify()  # batch mode: pysyncobj's own pipe notifier is off

    def propose_leader_change(
        self,
        leader_id: int,
        epoch: int,
        leader_info: bytes,
        callback: Callable[[Any, FailReason], None],
    ) -> None:
        self.sync.kraft_leader_change(leader_id, epoch, leader_info, callback=callback)
        self._wakeup.notify()

    def propose_membership(
        self, change: MembershipChange, callback: Callable[[Any, FailReason], None]
    ) -> None:
        """Append a membership entry (on the leader; the caller checked that no other change
        is pending). ``callback`` runs when it commits, or with the reason it was not
        appended."""
        self.sync._applyCommand(change.body(), callback, MEMBERSHIP_COMMAND_TYPE)
        self._wakeup.notify()

    def membership_change_pending(self) -> bool:
        """The latest membership entry in the journal has not committed yet. Tick thread."""
        return self.run_on_tick(
            lambda: (self.membership.latest_change_index or 0) > self.sync.raftCommitIndex
        )

    def transfer_leadership(self, to_id: int) -> bool:
        """On the leader: ask voter ``to_id`` to start an election now (Raft's TimeoutNow).
        False when it is not a connected, fully caught-up voter."""
        address = self.sync.kraft_voters.get(to_id)
        if address is None:
            return False
        outcome: list[int] = []
        self.run_on_tick(
            lambda: self.sync.transferLeadership(address, lambda _r, e: outcome.append(e))
        )
        return outcome == [SUCCESS]

    def match_index_of(self, address: str) -> int | None:
        """On the leader: the last Raft index the voter at ``address`` acknowledged."""

        def read() -> int | None:
            for node, idx in self.sync._SyncObj__raftMatchIndex.items():
                if getattr(node, "address", None) == address:
                    return int(idx)
            return None

        return self.run_on_tick(read)

    @property
    def commit_index(self) -> int:
        return int(self.sync.raftCommitIndex)

    # --- raft state (any thread; plain attribute reads) ---------------------------------------

    @property
    def term(self) -> int:
        return self.sync.raftCurrentTerm

    @property
    def is_raft_leader(self) -> bool:
        return self.sync._isLeader()

    @property
    def leader_id(self) -> int | None:
        leader = self.sync._getLeader()
        if leader is None:
            return None
        return self.id_of(getattr(leader, "address", None))

    def id_of(self, address: str | None) -> int | None:
        """The voter id of a Raft address in the current voter set (None: not a voter)."""
        for node_id, voter_address in self.sync.kraft_voters.items():
            if voter_address == address:
                return node_id
        return None

    def voters(self) -> dict[int, str]:
        """The voter set of the latest membership entry (voter id -> Raft address)."""
        return dict(self.sync.kraft_voters)

    @property
    def is_voter(self) -> bool:
        return self.voter_mode and self.sync.kraft_is_member

    def set_node_info(self, info: bytes) -> None:
        """This node's node info, sent to the nodes it is connected to (see NODE_INFO)."""
        self._node_info = info
        self.sync.kraft_node_info = info

    def peer_infos(self) -> dict[int, bytes]:
        """The latest node info received from each other node (voter or observer), by id."""
        return dict(self.sync.kraft_peer_info)

    def response_ages_s(self) -> dict[int, float]:
        """On the leader: seconds since each other voter last answered (pysyncobj's last
        response times); empty elsewhere. Read on the tick thread."""

        def read() -> dict[int, float]:
            if not self.sync._isLeader():
                return {}
            now = time.monotonic()
            times = self.sync._SyncObj__lastResponseTime
            voters = {a: i for i, a in self.sync.kraft_voters.items()}
            return {
                voters[a]: max(0.0, now - t)
                for node, t in times.items()
                if (a := getattr(node, "address", None)) in voters
            }

        return self.run_on_tick(read)

    def observers(self) -> list[tuple[int, str, int | None, float | None]]:
        """On the leader: every connected observer as (id, Raft address, match index,
        seconds since its last answer); see _KraftSyncObj.kraft_observers."""
        return self.run_on_tick(lambda: self.sync.kraft_observers())

    def raw_status(self) -> dict[str, Any]:
        """pysyncobj's status dict, read on the tick thread."""
        return self.run_on_tick(self.sync.getStatus)

    # --- dump hooks (tick thread) ---------------------------------------------------------------

    def _serialize(self, file_name: str, data: Any) -> None:
        last, prev, _cluster = data
        voters = self.membership.as_of(last[1])
        write_dump(
            file_name,
            DumpContents(
                state=self._dump_state(),
                last_entry=tuple(last),
                prev_entry=tuple(prev),
                cluster=sorted(voters.values()),
                voters=voters,
            ),
        )

    def _deserialize(self, file_name: str) -> tuple[Any, Any, Any]:
        dump = read_dump(file_name, make_durable=True)
        self._load_state(dump.state, dump.last_entry[1])
        voters = dump.voters if dump.voters is not None else self.config.initial_voters
        self.membership.set_base(voters, dump.last_entry[1])
        return dump.last_entry, dump.prev_entry, dump.cluster
