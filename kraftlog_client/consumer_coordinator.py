"""The consumer's side of Kafka's classic group protocol, as a sans-IO state machine.

:class:`ConsumerCoordinator` decides *what* to send and *when*; the consumer sends it and feeds
the answers back. No sockets, no threads, no clock of its own: every call takes ``now_ms``
(monotonic milliseconds), so tests drive it with scripted responses and a fake clock.

Protocol (eager rebalancing, as Kafka's range/roundrobin assignors use)::

    UNJOINED --FindCoordinator--> (coordinator known) --JoinGroup--> JOINING
    JOINING --MEMBER_ID_REQUIRED--> JOINING (again, with the member id the broker gave)
    JOINING --ok, we lead--> AWAITING_ASSIGNMENT --assignment computed--> SYNCING
    JOINING --ok, we follow--> SYNCING --ok--> STABLE (PartitionsAssigned)
    STABLE --Heartbeat every heartbeat.interval.ms--> STABLE
    STABLE --REBALANCE_IN_PROGRESS / subscription or metadata change--> (PartitionsRevoked)
           --> JoinGroup again with the same member id and generation
    any   --UNKNOWN_MEMBER_ID / ILLEGAL_GENERATION--> (PartitionsLost) member reset, rejoin
    any   --NOT_COORDINATOR / COORDINATOR_NOT_AVAILABLE / connection error / no heartbeat
           answer for session.timeout.ms--> coordinator unknown, FindCoordinator again
    STABLE --no user poll() for max.poll.interval.ms--> LeaveGroup, (PartitionsLost), UNJOINED
           until the next poll()

Outputs are :class:`Send` (a request for the consumer to send; ``target`` None = any broker,
else the coordinator's node id) and events (:class:`PartitionsRevoked`,
:class:`PartitionsAssigned`, :class:`PartitionsLost`, :class:`AssignmentNeeded`,
:class:`GroupFatalError`). Every Send carries a ``request_id``; answers to requests the machine
no longer waits for (a newer join, a reset member) are ignored, so a late answer can never
move the state backwards.

Invariants: at most one request of each kind in flight; ``generation_id`` and ``member_id``
are those of the last successful JoinGroup (or -1 / "" after a reset); the owned assignment is
non-empty only in STABLE. Illegal calls raise :class:`CoordinatorStateError` and leave the
state unchanged.

Not thread-safe: the consumer guards it with its lock (the heartbeat thread and the user's
thread both drive it).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from common.error_codes import ErrorCode
from common.protocol.api_keys import ApiKey
from common.protocol.message_base import Message
from common.protocol.messages.find_coordinator import (
    FindCoordinatorRequest,
    FindCoordinatorResponse,
)
from common.protocol.messages.heartbeat import HeartbeatRequest, HeartbeatResponse
from common.protocol.messages.join_group import (
    JoinGroupRequest,
    JoinGroupRequestProtocol,
    JoinGroupResponse,
    JoinGroupResponseMember,
)
from common.protocol.messages.leave_group import LeaveGroupRequest
from common.protocol.messages.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from common.protocol.messages.sync_group import (
    SyncGroupRequest,
    SyncGroupRequestAssignment,
    SyncGroupResponse,
)
from common.topic_partition import TopicPartition
from kraftlog_client.assignors import GroupMember, PartitionAssignor
from kraftlog_client.consumer_protocol import (
    PROTOCOL_TYPE,
    ConsumerProtocolError,
    Subscription,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)

logger = logging.getLogger(__name__)

UNJOINED = "UNJOINED"
JOINING = "JOINING"
AWAITING_ASSIGNMENT = "AWAITING_ASSIGNMENT"
SYNCING = "SYNCING"
STABLE = "STABLE"

NO_GENERATION = -1
UNKNOWN_MEMBER_ID = ""

# FindCoordinator key_type of a consumer group.
GROUP_KEY_TYPE = 0

_COORDINATOR_ERRORS = frozenset({ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE})
_FATAL_JOIN_ERRORS = frozenset(
    {
        ErrorCode.INCONSISTENT_GROUP_PROTOCOL,
        ErrorCode.INVALID_SESSION_TIMEOUT,
        ErrorCode.INVALID_GROUP_ID,
        ErrorCode.GROUP_AUTHORIZATION_FAILED,
        ErrorCode.GROUP_MAX_SIZE_REACHED,
        ErrorCode.FENCED_INSTANCE_ID,
    }
)


class CoordinatorStateError(Exception):
    """A call that does not fit the coordinator's state (a bug in the caller)."""


@dataclass(frozen=True)
class GroupSettings:
    group_id: str
    session_timeout_ms: int
    heartbeat_interval_ms: int
    max_poll_interval_ms: int  # also the rebalance timeout sent in JoinGroup
    retry_backoff_ms: int
    assignors: tuple[PartitionAssignor, ...]
    group_instance_id: str | None = None


@dataclass(frozen=True)
class Send:
    request_id: int
    target: int | None  # None = any broker (FindCoordinator), else the coordinator's node
    api_key: ApiKey
    body: Message


@dataclass(frozen=True)
class PartitionsRevoked:
    """Eager rebalance: give these up now (commit first), before JoinGroup goes out."""

    partitions: frozenset[TopicPartition]


@dataclass(frozen=True)
class PartitionsLost:
    """The membership is gone (fenced, session or poll timeout): do not commit these."""

    partitions: frozenset[TopicPartition]


@dataclass(frozen=True)
class PartitionsAssigned:
    partitions: frozenset[TopicPartition]
    generation_id: int


@dataclass(frozen=True)
class AssignmentNeeded:
    """We lead this generation: call :meth:`ConsumerCoordinator.perform_assignment` with the
    partition counts of ``topics``."""

    topics: frozenset[str]


@dataclass(frozen=True)
class GroupFatalError:
    code: ErrorCode
    message: str


Output = (
    Send
    | PartitionsRevoked
    | PartitionsLost
    | PartitionsAssigned
    | AssignmentNeeded
    | GroupFatalError
)


class ConsumerCoordinator:
    def __init__(self, settings: GroupSettings, now_ms: float) -> None:
        if not settings.assignors:
            raise ValueError("at least one partition assignor is needed")
        if settings.heartbeat_interval_ms >= settings.session_timeout_ms:
            raise ValueError("heartbeat.interval.ms must be lower than session.timeout.ms")
        self.settings = settings
        self.state = UNJOINED
        self.member_id = UNKNOWN_MEMBER_ID
        self.generation_id = NO_GENERATION
        self.leader_id = ""
        self.protocol_name: str | None = None
        self.coordinator_id: int | None = None
        self.assignment: frozenset[TopicPartition] = frozenset()
        self.subscription: frozenset[str] = frozenset()
        self.subscribed = False  # subscribe() called; assign() users never join
        self._outputs: list[Output] = []
        self._next_request_id = 0
        self._in_flight: dict[ApiKey, int] = {}  # api key -> request id we wait for
        self._retry_after_ms = 0.0
        self._rejoin_needed = True
        self._last_heartbeat_send_ms = now_ms
        self._last_heartbeat_ok_ms = now_ms
        self._last_user_poll_ms = now_ms
        self._join_members: list[GroupMember] = []
        self._metadata_snapshot: dict[str, int] = {}
        self._left_for_poll_timeout = False
        self._awaiting_revocation = False
        self.last_loss_reason = ""  # why the last assignment was lost (for logs and tests)

    # -- inputs from the consumer --------------------------------------------------------

    def subscribe(self, topics: Iterable[str]) -> None:
        """Join (or rejoin) with these topics; an empty set is a valid subscription (a pattern
        that matches nothing yet still makes the consumer a member, as in Kafka)."""
        topics = frozenset(topics)
        if topics != self.subscription or not self.subscribed:
            self.subscription = topics
            self.subscribed = True
            self.request_rejoin()

    def request_rejoin(self) -> None:
        self._rejoin_needed = True

    def user_polled(self, now_ms: float) -> None:
        """The application called poll(): it is alive (max.poll.interval.ms restarts)."""
        self._last_user_poll_ms = now_ms
        if self._left_for_poll_timeout:
            self._left_for_poll_timeout = False
            self._rejoin_needed = True

    def metadata_updated(self, partition_counts: Mapping[str, int]) -> None:
        """Fresh topic metadata: a change of a topic this member subscribes to (or, for the
        leader, any group topic) since the assignment means a rebalance."""
        if self.state != STABLE:
            return
        for topic, count in self._metadata_snapshot.items():
            if partition_counts.get(topic, 0) != count and topic in partition_counts:
                self.request_rejoin()
                return

    def pending(self, api_key: ApiKey) -> bool:
        """A request of this kind was sent and its answer has not been fed back yet."""
        return api_key in self._in_flight

    @property
    def is_stable(self) -> bool:
        return self.state == STABLE and not self._rejoin_needed

    # -- the timer loop ------------------------------------------------------------------

    def poll(self, now_ms: float, *, may_rejoin: bool = True) -> list[Output]:
        """Advance timers and return what to do now (requests to send, events to apply).

        The heartbeat thread passes ``may_rejoin=False``: a join revokes partitions, and the
        revocation (commit, listener) must run on the application's thread inside poll()."""
        s = self.settings
        if (
            self.subscribed
            and self.member_id
            and not self._left_for_poll_timeout
            and now_ms - self._last_user_poll_ms > s.max_poll_interval_ms
        ):
            # The application is stuck between polls: give its partitions to the others.
            self._emit_leave()
            self._lose(f"no poll() for {s.max_poll_interval_ms} ms")
            if s.group_instance_id is None:
                self._reset_member()
            self._left_for_poll_timeout = True
        if self._left_for_poll_timeout or now_ms < self._retry_after_ms:
            return self._drain()
        if (
            self.coordinator_id is not None
            and self.state == STABLE
            and now_ms - self._last_heartbeat_ok_ms > s.session_timeout_ms
        ):
            # No heartbeat answer for a whole session: the coordinator is gone or unreachable.
            self._coordinator_dead(now_ms)
        if self.coordinator_id is None:
            if ApiKey.FIND_COORDINATOR not in self._in_flight:
                self._send(
                    None,
                    ApiKey.FIND_COORDINATOR,
                    FindCoordinatorRequest(key=s.group_id, key_type=GROUP_KEY_TYPE),
                )
            return self._drain()
        if self._awaiting_revocation:
            self._maybe_heartbeat(now_ms)
        elif self._rejoin_needed and self.state in (UNJOINED, STABLE):
            if may_rejoin:
                self._start_join(now_ms)
            elif self.state == STABLE:
                self._maybe_heartbeat(now_ms)
        elif self.state == STABLE:
            self._maybe_heartbeat(now_ms)
        return self._drain()

    def _maybe_heartbeat(self, now_ms: float) -> None:
        s = self.settings
        if (
            ApiKey.HEARTBEAT not in self._in_flight
            and now_ms - self._last_heartbeat_send_ms >= s.heartbeat_interval_ms
        ):
            self._last_heartbeat_send_ms = now_ms
            self._send(
                self.coordinator_id,
                ApiKey.HEARTBEAT,
                HeartbeatRequest(
                    group_id=s.group_id,
                    generation_id=self.generation_id,
                    member_id=self.member_id,
                    group_instance_id=s.group_instance_id,
                ),
            )

    def time_to_next_poll_ms(self, now_ms: float) -> float:
        """How long the caller may wait (on its sockets) before :meth:`poll` has something to
        do; answers to requests in flight wake the caller through the socket, not this."""
        s = self.settings
        waits = []
        if self.subscribed and self.member_id and not self._left_for_poll_timeout:
            waits.append(self._last_user_poll_ms + s.max_poll_interval_ms - now_ms)
        if self._retry_after_ms > now_ms:
            waits.append(self._retry_after_ms - now_ms)
        elif self.coordinator_id is None:
            if ApiKey.FIND_COORDINATOR not in self._in_flight:
                waits.append(0.0)
        elif self.state == STABLE:
            if self._rejoin_needed and not self._awaiting_revocation:
                waits.append(0.0)
            if ApiKey.HEARTBEAT not in self._in_flight:
                waits.append(self._last_heartbeat_send_ms + s.heartbeat_interval_ms - now_ms)
            waits.append(self._last_heartbeat_ok_ms + s.session_timeout_ms - now_ms)
        elif self.state == UNJOINED and self._rejoin_needed and self.subscribed:
            waits.append(0.0)
        # JOINING, SYNCING, AWAITING_ASSIGNMENT: waiting for an answer or the application.
        return max(0.0, min(waits)) if waits else float(s.max_poll_interval_ms)

    # -- answers -------------------------------------------------------------------------

    def on_response(
        self,
        request_id: int,
        api_key: ApiKey,
        response: Message | None,
        now_ms: float,
    ) -> list[Output]:
        """Feed the answer to a :class:`Send` (``response`` None = the request failed on the
        connection or timed out). Stale answers are ignored."""
        if self._in_flight.get(api_key) != request_id:
            return self._drain()
        del self._in_flight[api_key]
        if response is None:
            if api_key == ApiKey.LEAVE_GROUP:
                return self._drain()
            # Lost connection to the coordinator (or no broker answered FindCoordinator).
            self._coordinator_dead(now_ms)
            if api_key == ApiKey.FIND_COORDINATOR:
                self._backoff(now_ms)
            return self._drain()
        # Each handler takes the response class of its API.
        handlers: dict[ApiKey, Callable[[Any, float], None]] = {
            ApiKey.FIND_COORDINATOR: self._on_find_coordinator,
            ApiKey.JOIN_GROUP: self._on_join,
            ApiKey.SYNC_GROUP: self._on_sync,
            ApiKey.HEARTBEAT: self._on_heartbeat,
            ApiKey.LEAVE_GROUP: lambda _r, _n: None,
        }
        handler = handlers.get(api_key)
        if handler is None:
            raise CoordinatorStateError(f"no request of kind {api_key.name} is sent here")
        handler(response, now_ms)
        return self._drain()

    def _on_find_coordinator(self, r: FindCoordinatorResponse, now_ms: float) -> None:
        code = error_code(r.error_code)
        if code == ErrorCode.NO_ERROR and r.node_id >= 0:
            self.coordinator_id = r.node_id
            self._last_heartbeat_ok_ms = now_ms
            return
        if code == ErrorCode.GROUP_AUTHORIZATION_FAILED:
            self._fatal(code, "FindCoordinator")
            return
        self._backoff(now_ms)

    def _on_join(self, r: JoinGroupResponse, now_ms: float) -> None:
        if self.state != JOINING:
            return
        code = error_code(r.error_code)
        if code == ErrorCode.NO_ERROR:
            self.member_id = r.member_id
            self.generation_id = r.generation_id
            self.leader_id = r.leader
            self.protocol_name = r.protocol_name
            if self.member_id == self.leader_id:
                self._lead(r.members)
            else:
                self._send_sync([])
            return
        if code == ErrorCode.MEMBER_ID_REQUIRED:
            # KIP-394: the broker names us; join again at once with that id.
            self.member_id = r.member_id
            self._start_join(now_ms, revoke=False)
            return
        self.state = UNJOINED
        if code == ErrorCode.UNKNOWN_MEMBER_ID:
            self._reset_member()
        elif code == ErrorCode.ILLEGAL_GENERATION:
            self.generation_id = NO_GENERATION
        elif code in _COORDINATOR_ERRORS:
            self._coordinator_dead(now_ms)
        elif code in _FATAL_JOIN_ERRORS:
            self._fatal(code, "JoinGroup")
            return
        else:  # COORDINATOR_LOAD_IN_PROGRESS, REBALANCE_IN_PROGRESS, retriable: try again
            self._backoff(now_ms)
        self._rejoin_needed = True

    def _lead(self, members: list[JoinGroupResponseMember]) -> None:
        decoded = []
        for m in members:
            try:
                sub = decode_subscription(m.metadata)
            except ConsumerProtocolError as e:
                self._fatal(
                    ErrorCode.INCONSISTENT_GROUP_PROTOCOL,
                    f"member {m.member_id} sent unreadable metadata: {e}",
                )
                return
            decoded.append(GroupMember(m.member_id, m.group_instance_id, sub))
        self._join_members = decoded
        self.state = AWAITING_ASSIGNMENT
        topics = frozenset(t for m in decoded for t in m.subscription.topics)
        self._outputs.append(AssignmentNeeded(topics))

    def perform_assignment(self, partition_counts: Mapping[str, int]) -> list[Output]:
        """As leader: run the group's chosen assignor over ``partition_counts`` (topics with
        no metadata left out) and send SyncGroup with everyone's share."""
        if self.state != AWAITING_ASSIGNMENT:
            raise CoordinatorStateError(f"perform_assignment in state {self.state}")
        assignor = next((a for a in self.settings.assignors if a.name == self.protocol_name), None)
        if assignor is None:
            self._fatal(
                ErrorCode.INCONSISTENT_GROUP_PROTOCOL,
                f"the group chose assignor {self.protocol_name!r}, not one of ours",
            )
            return self._drain()
        counts = {t: n for t, n in partition_counts.items() if n > 0}
        result = assignor.assign(counts, self._join_members)
        group_topics = {t for m in self._join_members for t in m.subscription.topics}
        self._metadata_snapshot = {t: counts.get(t, 0) for t in group_topics}
        self._send_sync(
            [
                SyncGroupRequestAssignment(member_id=mid, assignment=encode_assignment(a))
                for mid, a in result.items()
            ]
        )
        return self._drain()

    def _send_sync(self, assignments: list[SyncGroupRequestAssignment]) -> None:
        self.state = SYNCING
        s = self.settings
        self._send(
            self.coordinator_id,
            ApiKey.SYNC_GROUP,
            SyncGroupRequest(
                group_id=s.group_id,
                generation_id=self.generation_id,
                member_id=self.member_id,
                group_instance_id=s.group_instance_id,
                assignments=assignments,
            ),
        )

    def _on_sync(self, r: SyncGroupResponse, now_ms: float) -> None:
        if self.state != SYNCING:
            return
        code = error_code(r.error_code)
        if code == ErrorCode.NO_ERROR:
            try:
                assignment = decode_assignment(r.assignment)
            except ConsumerProtocolError as e:
                self._fatal(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, f"unreadable assignment: {e}")
                return
            self.assignment = frozenset(
                tp for tp in assignment.partitions if tp.topic in self.subscription
            )
            self.state = STABLE
            self._rejoin_needed = False
            self._last_heartbeat_ok_ms = now_ms
            self._last_heartbeat_send_ms = now_ms
            self._outputs.append(PartitionsAssigned(self.assignment, self.generation_id))
            return
        self.state = UNJOINED
        self._rejoin_needed = True
        if code == ErrorCode.UNKNOWN_MEMBER_ID:
            self._reset_member()
        elif code == ErrorCode.ILLEGAL_GENERATION:
            self.generation_id = NO_GENERATION
        elif code in _COORDINATOR_ERRORS:
            self._coordinator_dead(now_ms)
        elif code == ErrorCode.FENCED_INSTANCE_ID:
            self._fatal(code, "SyncGroup")
        elif code != ErrorCode.REBALANCE_IN_PROGRESS:
            self._backoff(now_ms)

    def _on_heartbeat(self, r: HeartbeatResponse, now_ms: float) -> None:
        if self.state != STABLE:
            return
        code = error_code(r.error_code)
        if code == ErrorCode.NO_ERROR:
            self._last_heartbeat_ok_ms = now_ms
        elif code == ErrorCode.REBALANCE_IN_PROGRESS:
            self._last_heartbeat_ok_ms = now_ms
            self._rejoin_needed = True
        elif code in (ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.ILLEGAL_GENERATION):
            self._lose(f"heartbeat: {code.name}")
            if code == ErrorCode.UNKNOWN_MEMBER_ID:
                self._reset_member()
            self.generation_id = NO_GENERATION
        elif code in _COORDINATOR_ERRORS:
            self._coordinator_dead(now_ms)
        elif code == ErrorCode.FENCED_INSTANCE_ID:
            self._lose("fenced")
            self._fatal(code, "Heartbeat")
        # Other (retriable) errors: the next interval tries again; the session bound holds.

    def on_commit_error(self, code: ErrorCode, now_ms: float) -> None:
        """An OffsetCommit answered ``code``: membership errors mean a rebalance happened."""
        if code in (ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.ILLEGAL_GENERATION):
            self._lose(f"commit: {code.name}")
            if code == ErrorCode.UNKNOWN_MEMBER_ID:
                self._reset_member()
            self.generation_id = NO_GENERATION
        elif code == ErrorCode.REBALANCE_IN_PROGRESS:
            self._rejoin_needed = True
        elif code in _COORDINATOR_ERRORS:
            self._coordinator_dead(now_ms)

    # -- leaving -------------------------------------------------------------------------

    def leave(self) -> list[Output]:
        """close() or unsubscribe(): revoke, then LeaveGroup (a static member does not leave:
        its session keeps its partitions until it returns or the session expires)."""
        if self.assignment and not self._awaiting_revocation:
            self._outputs.append(PartitionsRevoked(self.assignment))
            self.assignment = frozenset()
        self._awaiting_revocation = False
        self.assignment = frozenset()
        self._emit_leave()
        self.state = UNJOINED
        self._reset_member()
        self._rejoin_needed = True
        self.subscribed = False
        return self._drain()

    def _emit_leave(self) -> None:
        s = self.settings
        if self.member_id and self.coordinator_id is not None and s.group_instance_id is None:
            self._send(
                self.coordinator_id,
                ApiKey.LEAVE_GROUP,
                LeaveGroupRequest(group_id=s.group_id, member_id=self.member_id),
            )

    # -- commit requests -----------------------------------------------------------------

    def commit_body(self, offsets: Mapping[TopicPartition, int]) -> OffsetCommitRequest:
        """An OffsetCommit request for ``offsets`` under the current generation (generation
        -1 and no member for a consumer that uses assign() with a group id)."""
        s = self.settings
        stable = self.state == STABLE
        return OffsetCommitRequest(
            group_id=s.group_id,
            generation_id_or_member_epoch=self.generation_id if stable else NO_GENERATION,
            member_id=self.member_id if stable else UNKNOWN_MEMBER_ID,
            group_instance_id=s.group_instance_id if stable else None,
            retention_time_ms=-1,
            topics=offset_commit_topics(offsets),
        )

    # -- internals -----------------------------------------------------------------------

    def _start_join(self, now_ms: float, *, revoke: bool = True) -> None:
        s = self.settings
        if not self.subscribed:
            return
        if revoke and self.assignment:
            # Eager protocol: the application commits and gives the partitions up first,
            # while the generation is still valid for that commit; then revocation_done().
            self._awaiting_revocation = True
            self._outputs.append(PartitionsRevoked(self.assignment))
            return
        self.state = JOINING
        self._rejoin_needed = False
        self._metadata_snapshot = {}
        metadata = encode_subscription(Subscription(tuple(sorted(self.subscription))))
        self._send(
            self.coordinator_id,
            ApiKey.JOIN_GROUP,
            JoinGroupRequest(
                group_id=s.group_id,
                session_timeout_ms=s.session_timeout_ms,
                rebalance_timeout_ms=s.max_poll_interval_ms,
                member_id=self.member_id,
                group_instance_id=s.group_instance_id,
                protocol_type=PROTOCOL_TYPE,
                protocols=[
                    JoinGroupRequestProtocol(name=a.name, metadata=metadata) for a in s.assignors
                ],
            ),
        )

    def revocation_done(self, now_ms: float) -> list[Output]:
        """The application handled :class:`PartitionsRevoked`: send JoinGroup now."""
        if not self._awaiting_revocation:
            raise CoordinatorStateError("revocation_done without a pending revocation")
        self._awaiting_revocation = False
        self.assignment = frozenset()
        if self.state == STABLE and self.coordinator_id is not None:
            self._start_join(now_ms, revoke=False)
        else:  # lost meanwhile (fenced, coordinator gone): poll() joins when it can
            self._rejoin_needed = True
        return self._drain()

    def set_metadata_snapshot(self, partition_counts: Mapping[str, int]) -> None:
        """Followers remember the partition counts of their topics at assignment time."""
        for topic in self.subscription:
            self._metadata_snapshot.setdefault(topic, partition_counts.get(topic, 0))

    def _send(self, target: int | None, api_key: ApiKey, body: Message) -> None:
        self._next_request_id += 1
        self._in_flight[api_key] = self._next_request_id
        self._outputs.append(Send(self._next_request_id, target, api_key, body))

    def _coordinator_dead(self, now_ms: float) -> None:
        self.coordinator_id = None
        # Answers from the old coordinator no longer count; a join in progress restarts.
        for key in (ApiKey.JOIN_GROUP, ApiKey.SYNC_GROUP, ApiKey.HEARTBEAT):
            self._in_flight.pop(key, None)
        if self.state in (JOINING, SYNCING, AWAITING_ASSIGNMENT):
            self.state = UNJOINED
            self._rejoin_needed = True
        self._last_heartbeat_ok_ms = now_ms

    def _lose(self, why: str) -> None:
        logger.info("group %s: partitions lost (%s)", self.settings.group_id, why)
        self.last_loss_reason = why
        self._awaiting_revocation = False
        if self.assignment:
            self._outputs.append(PartitionsLost(self.assignment))
        self.assignment = frozenset()
        self.state = UNJOINED
        self._rejoin_needed = True
        for key in (ApiKey.JOIN_GROUP, ApiKey.SYNC_GROUP, ApiKey.HEARTBEAT):
            self._in_flight.pop(key, None)

    def _reset_member(self) -> None:
        self.member_id = UNKNOWN_MEMBER_ID
        self.generation_id = NO_GENERATION

    def _backoff(self, now_ms: float) -> None:
        self._retry_after_ms = now_ms + self.settings.retry_backoff_ms

    def _fatal(self, code: ErrorCode, where: str) -> None:
        self.state = UNJOINED
        # The next poll() tries again (and reports again if nothing changed), as Kafka's.
        self._rejoin_needed = True
        self._outputs.append(GroupFatalError(code, f"{where}: {code.name}"))

    def _drain(self) -> list[Output]:
        out, self._outputs = self._outputs, []
        return out


def error_code(value: int) -> ErrorCode:
    """The ErrorCode of a wire value (unknown codes become UNKNOWN_SERVER_ERROR)."""
    try:
        return ErrorCode(value)
    except ValueError:
        return ErrorCode.UNKNOWN_SERVER_ERROR


def offset_commit_topics(offsets: Mapping[TopicPartition, int]) -> list[OffsetCommitRequestTopic]:
    """The ``topics`` of an OffsetCommit request: each partition's next offset to read, no
    leader epoch, empty metadata."""
    by_topic: dict[str, list[OffsetCommitRequestPartition]] = {}
    for tp, offset in sorted(offsets.items()):
        by_topic.setdefault(tp.topic, []).append(
            OffsetCommitRequestPartition(
                partition_index=tp.partition,
                committed_offset=offset,
                committed_leader_epoch=-1,
                committed_metadata="",
            )
        )
    return [OffsetCommitRequestTopic(name=t, partitions=p) for t, p in by_topic.items()]
