"""Broker lifecycle decisions: registration, heartbeats, fencing, controlled shutdown.

Broker epochs: a registration gets epoch ``image.offset + 1``. Every earlier epoch was chosen the
same way at a smaller image offset and its record committed at or before the current image
offset, so epochs strictly grow per broker and across controller failovers, deterministically.

A registered broker starts fenced. Its heartbeats carry its metadata offset; once that reaches
the offset of its RegisterBrokerRecord (it has caught up), the controller unfences it and elects
it leader of leaderless partitions it may lead. A broker whose heartbeats stop for
``broker.session.timeout.ms`` is fenced: it leaves every ISR (never emptying one) and loses
leadership (see metadata.election). Controlled shutdown first moves leadership away and takes the
broker out of ISRs; once the broker reports a metadata offset at or past that point, the reply
says ``should_shut_down`` and the broker is fenced.

Unclean recovery (metadata.election): a registration says whether the broker's previous process
closed its logs cleanly. A leaderless partition whose candidates (ISR and ELR members) all had
unclean shutdowns waits until each of them heartbeats its log end for the partition, then elects
the longest log; every heartbeat that carries log ends retries those elections.

Heartbeat state (last contact and reported log ends per broker) lives only in memory on the
active controller (:class:`BrokerHeartbeatManager`); a new active controller grants every broker
a full session, and brokers report their log ends again with their next heartbeat.
Thread-safety: none; the controller's single event thread owns all of this.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from common.error_codes import ErrorCode
from metadata import features
from metadata.controller_config import ControllerConfig
from metadata.delta import apply_records, merge_partition_change
from metadata.election import (
    Electorate,
    LogEnd,
    TopicRules,
    elect_if_leaderless,
    remove_broker_from_partition,
)
from metadata.election_log import log_leader_moves
from metadata.features import SupportedRange
from metadata.image import MetadataImage, PartitionRegistration, TopicImage
from metadata.messages import (
    BrokerHeartbeatRequest,
    BrokerHeartbeatResponse,
    RegisterBrokerRequest,
    RegisterBrokerResponse,
    ReplicaLogEnd,
)
from metadata.records import (
    NO_LEADER_CHANGE,
    BrokerRegistrationChangeRecord,
    Listener,
    MetadataRecord,
    PartitionChangeRecord,
    RegisterBrokerRecord,
)
from metadata.result import ControllerResult, RecordBudget

# Limits on what a registration may carry.
MAX_LISTENERS = 16
MAX_NAME_CHARS = 255
# Log ends one heartbeat may report (a broker hosting more leaderless partitions than this
# reports the first ones now and the rest once those have leaders).
MAX_LOG_END_REPORTS = 20_000


@dataclass(slots=True)
class _Session:
    last_contact_ms: int
    shutdown_offset: int | None = None  # metadata offset a shutting-down broker must reach
    # (topic id, partition) -> log end, from the broker's latest heartbeat.
    log_ends: dict[tuple[uuid.UUID, int], LogEnd] = field(default_factory=dict)
    # The metadata offset the broker reported in its latest heartbeat (-1: none yet).
    metadata_offset: int = -1
    # Replicas in failed log directories and those directories, from the latest heartbeat.
    offline: frozenset[tuple[uuid.UUID, int]] = frozenset()
    offline_dirs: tuple[str, ...] = ()
    # The broker's session stream to this controller broke (its process is gone): the
    # session counts as expired whatever its last contact.
    stream_lost: bool = False


class BrokerHeartbeatManager:
    """Last contact time per broker, on the active controller only."""

    def __init__(self, session_timeout_ms: int) -> None:
        self.session_timeout_ms = session_timeout_ms
        self._sessions: dict[int, _Session] = {}
        # broker id -> metadata.version range it reported (metadata.features).
        self._supported: dict[int, SupportedRange] = {}

    def reset(self, broker_ids: Iterable[int], now_ms: int) -> None:
        """A new controller: every broker gets a full session from ``now_ms``."""
        self._sessions = {bid: _Session(now_ms) for bid in broker_ids}

    def touch(self, broker_id: int, now_ms: int) -> None:
        s = self._sessions.get(broker_id)
        if s is None:
            self._sessions[broker_id] = _Session(now_ms)
        else:
            s.last_contact_ms = max(s.last_contact_ms, now_ms)

    def end_session(self, broker_id: int) -> None:
        """The broker's session stream broke with a reset or end of stream, as when its
        process dies: its session is over now rather than after the timeout. A heartbeat does
        not undo that (one may still be in flight from the dead process); once the broker is
        fenced its session is forgotten, and a live broker's next heartbeat starts a new one."""
        s = self._sessions.setdefault(broker_id, _Session(0))
        s.stream_lost = True

    def stream_opened(self, broker_id: int) -> None:
        """The broker holds a session stream again: a loss reported before no longer counts."""
        s = self._sessions.get(broker_id)
        if s is not None:
            s.stream_lost = False

    def stream_lost(self, broker_id: int) -> bool:
        s = self._sessions.get(broker_id)
        return s is not None and s.stream_lost

    def forget(self, broker_id: int) -> None:
        self._sessions.pop(broker_id, None)
        self._supported.pop(broker_id, None)

    def report_supported(self, broker_id: int, supported: SupportedRange) -> None:
        """The metadata.version range the broker reported (registration, heartbeat)."""
        self._supported[broker_id] = supported

    def supported(self, broker_id: int) -> SupportedRange | None:
        """The range ``broker_id`` reported to this controller; None when not yet."""
        return self._supported.get(broker_id)

    def report_log_ends(self, broker_id: int, reports: Iterable[ReplicaLogEnd]) -> None:
        """Replace the broker's reported log ends (a heartbeat carries them all)."""
        s = self._sessions.get(broker_id)
        if s is not None:
            s.log_ends = {
                (r.topic_id, r.partition): (r.last_epoch, r.log_end_offset) for r in reports
            }

    def report_offline(
        self, broker_id: int, replicas: Iterable[tuple[uuid.UUID, int]], dirs: Iterable[str]
    ) -> None:
        """Replace the broker's offline replicas and directories (a heartbeat carries them
        all; a new registration clears them)."""
        s = self._sessions.get(broker_id)
        if s is not None:
            s.offline = frozenset(replicas)
            s.offline_dirs = tuple(dirs)

    def report_metadata_offset(self, broker_id: int, offset: int) -> None:
        s = self._sessions.get(broker_id)
        if s is not None:
            s.metadata_offset = offset

    def observers(self) -> dict[int, tuple[int, int]]:
        """broker id -> (metadata offset it last reported, when: this controller's clock)."""
        return {
            bid: (s.metadata_offset, s.last_contact_ms)
            for bid, s in self._sessions.items()
            if s.metadata_offset >= 0
        }

    def offline_replicas(self) -> dict[tuple[uuid.UUID, int], frozenset[int]]:
        """(topic id, partition) -> brokers whose replica of it is offline."""
        out: dict[tuple[uuid.UUID, int], set[int]] = {}
        for bid, s in self._sessions.items():
            for key in s.offline:
                out.setdefault(key, set()).add(bid)
        return {key: frozenset(bids) for key, bids in out.items()}

    def offline_dirs(self, broker_id: int) -> tuple[str, ...]:
        s = self._sessions.get(broker_id)
        return s.offline_dirs if s is not None else ()

    def log_ends(self) -> dict[tuple[uuid.UUID, int], dict[int, LogEnd]]:
        """(topic id, partition) -> broker id -> its reported log end."""
        out: dict[tuple[uuid.UUID, int], dict[int, LogEnd]] = {}
        for bid, s in self._sessions.items():
            for key, end in s.log_ends.items():
                out.setdefault(key, {})[bid] = end
        return out

    def has_valid_session(self, broker_id: int, now_ms: int) -> bool:
        s = self._sessions.get(broker_id)
        return (
            s is not None
            and not s.stream_lost
            and now_ms - s.last_contact_ms < self.session_timeout_ms
        )

    def expired(self, broker_ids: Iterable[int], now_ms: int) -> list[int]:
        """Those of ``broker_ids`` whose session has run out (unknown ones get one from now)."""
        out = []
        for bid in broker_ids:
            s = self._sessions.get(bid)
            if s is None:
                self._sessions[bid] = _Session(now_ms)
            elif s.stream_lost or now_ms - s.last_contact_ms >= self.session_timeout_ms:
                out.append(bid)
        return sorted(out)

    def shutdown_offset(self, broker_id: int, current: int) -> int:
        """The offset a shutting-down broker must reach; fixed at first ask."""
        s = self._sessions.setdefault(broker_id, _Session(0))
        if s.shutdown_offset is None:
            s.shutdown_offset = current
        return s.shutdown_offset


RulesFor = Callable[[str], TopicRules]  # topic name -> its election rules


def electorate(
    image: MetadataImage,
    sessions: BrokerHeartbeatManager | None = None,
    extra: int | None = None,
    without: int | None = None,
) -> Electorate:
    """Who may lead in ``image`` (plus ``extra``, minus ``without``), with the log ends the
    brokers reported."""
    active = {b.broker_id for b in image.brokers.values() if b.is_active}
    if extra is not None:
        active.add(extra)
    if without is not None:
        active.discard(without)
    clean = frozenset(b.broker_id for b in image.brokers.values() if b.clean_shutdown)
    log_ends = sessions.log_ends() if sessions is not None else {}
    offline = sessions.offline_replicas() if sessions is not None else {}
    return Electorate(frozenset(active), clean, log_ends, offline)


def removal_records(
    image: MetadataImage,
    broker_id: int,
    rules: RulesFor,
    sessions: BrokerHeartbeatManager | None = None,
    *,
    eligible: bool = True,
) -> list[MetadataRecord]:
    """Partition changes taking ``broker_id`` out of every ISR and leadership. ``eligible``:
    its log still holds all it had, so it may join ELRs (see metadata.election)."""
    voters = electorate(image, sessions, without=broker_id)
    out: list[MetadataRecord] = []
    for topic, pid, reg in image.iter_partitions():
        if broker_id not in reg.isr and reg.leader != broker_id:
            continue
        change = remove_broker_from_partition(
            topic.topic_id, pid, reg, broker_id, voters, rules(topic.name), eligible=eligible
        )
        if change is not None:
            out.append(change)
    return out


def offline_replica_records(
    image: MetadataImage,
    broker_id: int,
    replicas: Iterable[tuple[uuid.UUID, int]],
    rules: RulesFor,
    sessions: BrokerHeartbeatManager | None = None,
) -> list[MetadataRecord]:
    """Partition changes taking ``broker_id``'s offline ``replicas`` (its log directory
    failed) out of their ISRs and leadership; they join no ELR (their logs are gone until the
    disk is repaired). Logged, with the directories, when there are any."""
    voters = electorate(image, sessions, without=broker_id)
    out: list[MetadataRecord] = []
    for topic_id, pid in sorted(replicas):
        topic = image.topics_by_id.get(topic_id)
        reg = topic.partitions.get(pid) if topic is not None else None
        if topic is None or reg is None:
            continue
        change = remove_broker_from_partition(
            topic_id, pid, reg, broker_id, voters, rules(topic.name), eligible=False
        )
        if change is not None:
            out.append(change)
    if out:
        dirs = sessions.offline_dirs(broker_id) if sessions is not None else ()
        log_leader_moves(
            image,
            f"broker {broker_id}'s log directories {', '.join(dirs) or '?'} went offline",
            out,
        )
    return out


def fence_records(
    image: MetadataImage,
    broker_id: int,
    rules: RulesFor,
    sessions: BrokerHeartbeatManager | None = None,
    *,
    reason: str = "",
) -> list[MetadataRecord]:
    b = image.brokers[broker_id]
    changes = removal_records(image, broker_id, rules, sessions)
    log_leader_moves(
        image,
        f"fencing broker {broker_id} ({reason})" if reason else f"fencing broker {broker_id}",
        changes,
    )
    return [
        BrokerRegistrationChangeRecord(
            broker_id, b.epoch, fenced=True, in_controlled_shutdown=None
        ),
        *changes,
    ]


def election_records(
    image: MetadataImage,
    voters: Electorate,
    rules: RulesFor,
    partitions: Iterable[tuple[uuid.UUID, int]] | None = None,
    broker_id: int | None = None,
) -> list[MetadataRecord]:
    """Elections for leaderless partitions: those in ``partitions`` (all when None) that
    ``broker_id`` (when given) replicates."""
    out: list[MetadataRecord] = []
    found = image.iter_partitions() if partitions is None else _known(image, partitions)
    for topic, pid, reg in found:
        if reg.has_leader() or (broker_id is not None and broker_id not in reg.replicas):
            continue
        change = elect_if_leaderless(topic.topic_id, pid, reg, voters, rules(topic.name))
        if change is not None:
            out.append(change)
    return out


def _known(
    image: MetadataImage, partitions: Iterable[tuple[uuid.UUID, int]]
) -> Iterator[tuple[TopicImage, int, PartitionRegistration]]:
    """The partitions of ``partitions`` that exist in ``image``."""
    for topic_id, pid in partitions:
        topic = image.topics_by_id.get(topic_id)
        reg = topic.partitions.get(pid) if topic is not None else None
        if topic is not None and reg is not None:
            yield topic, pid, reg


def unfence_records(
    image: MetadataImage,
    broker_id: int,
    rules: RulesFor,
    sessions: BrokerHeartbeatManager | None = None,
) -> list[MetadataRecord]:
    b = image.brokers[broker_id]
    elections = election_records(
        image, electorate(image, sessions, extra=broker_id), rules, broker_id=broker_id
    )
    log_leader_moves(
        image, f"unfencing broker {broker_id} (caught up with the metadata)", elections
    )
    return [
        BrokerRegistrationChangeRecord(
            broker_id, b.epoch, fenced=False, in_controlled_shutdown=None
        ),
        *elections,
    ]


def leads_or_replicates_in_isr(image: MetadataImage, broker_id: int) -> bool:
    """Whether the broker still leads a partition or sits in an ISR it could leave."""
    for _, _, reg in image.iter_partitions():
        if reg.leader == broker_id or (broker_id in reg.isr and len(reg.isr) > 1):
            return True
    return False


def register_broker(
    image: MetadataImage,
    request: RegisterBrokerRequest,
    sessions: BrokerHeartbeatManager,
    config: ControllerConfig,
    cluster_id: str | None,
    rules: RulesFor,
    now_ms: int,
) -> ControllerResult[RegisterBrokerResponse]:
    def fail(code: ErrorCode, message: str) -> ControllerResult[RegisterBrokerResponse]:
        return ControllerResult.of([], RegisterBrokerResponse(code, message))

    if (
        cluster_id is not None
        and request.cluster_id is not None
        and request.cluster_id != cluster_id
    ):
        return fail(
            ErrorCode.INCONSISTENT_CLUSTER_ID,
            f"Expected cluster ID {cluster_id}, but got {request.cluster_id}",
        )
    if request.broker_id < 0:
        return fail(ErrorCode.INVALID_REGISTRATION, "broker id must not be negative")
    if not request.incarnation_id or len(request.incarnation_id) > MAX_NAME_CHARS:
        return fail(ErrorCode.INVALID_REGISTRATION, "incarnation id missing or too long")
    if not request.listeners or len(request.listeners) > MAX_LISTENERS:
        return fail(ErrorCode.INVALID_REGISTRATION, f"need 1 to {MAX_LISTENERS} listeners")
    for lis in request.listeners:
        if not (0 < lis.port < 65536) or not lis.name or not lis.host:
            return fail(ErrorCode.INVALID_REGISTRATION, f"bad listener {lis}")
        if len(lis.name) > MAX_NAME_CHARS or len(lis.host) > MAX_NAME_CHARS:
            return fail(ErrorCode.INVALID_REGISTRATION, "listener name or host too long")
    if request.rack is not None and len(request.rack) > MAX_NAME_CHARS:
        return fail(ErrorCode.INVALID_REGISTRATION, "rack too long")
    supported = features.reported_range(request.min_metadata_version, request.max_metadata_version)
    level = features.finalized_level(image)
    if level not in supported:
        return fail(
            ErrorCode.UNSUPPORTED_VERSION,
            f"Unable to register because the broker does not support the finalized "
            f"metadata.version {features.level_name(level)}: it supports {supported}",
        )
    sessions.report_supported(request.broker_id, supported)
    response = RegisterBrokerResponse(
        heartbeat_interval_ms=config.broker_heartbeat_interval_ms,
        session_timeout_ms=config.broker_session_timeout_ms,
    )
    existing = image.brokers.get(request.broker_id)
    if existing is not None and existing.incarnation_id == request.incarnation_id:
        # The same process asking again (a lost reply): same epoch, nothing to write.
        sessions.touch(request.broker_id, now_ms)
        return ControllerResult.of([], _with_epoch(response, existing.epoch))
    if (
        existing is not None
        and not existing.fenced
        and sessions.has_valid_session(request.broker_id, now_ms)
    ):
        return fail(
            ErrorCode.DUPLICATE_BROKER_REGISTRATION,
            f"Another broker is registered with id {request.broker_id} and its session is "
            "still alive",
        )
    epoch = image.offset + 1
    records: list[MetadataRecord] = [
        RegisterBrokerRecord(
            broker_id=request.broker_id,
            incarnation_id=request.incarnation_id,
            broker_epoch=epoch,
            listeners=tuple(Listener(x.name, x.host, x.port) for x in request.listeners),
            rack=request.rack,
            fenced=True,
            in_controlled_shutdown=False,
            clean_shutdown=request.clean_shutdown,
        )
    ]
    if existing is not None:
        # The previous incarnation may have lost unflushed data: it must rejoin ISRs by
        # catching up, like any follower (and after an unclean shutdown it joins no ELR).
        records.extend(
            removal_records(
                image, request.broker_id, rules, sessions, eligible=request.clean_shutdown
            )
        )
    sessions.touch(request.broker_id, now_ms)
    sessions.report_offline(request.broker_id, (), ())  # a new process: its disks load anew
    return ControllerResult.of(records, _with_epoch(response, epoch))


def _with_epoch(r: RegisterBrokerResponse, epoch: int) -> RegisterBrokerResponse:
    return RegisterBrokerResponse(0, None, epoch, r.heartbeat_interval_ms, r.session_timeout_ms)


def broker_heartbeat(
    image: MetadataImage,
    request: BrokerHeartbeatRequest,
    sessions: BrokerHeartbeatManager,
    rules: RulesFor,
    now_ms: int,
) -> ControllerResult[BrokerHeartbeatResponse]:
    b = image.brokers.get(request.broker_id)
    if b is None:
        return ControllerResult.of(
            [],
            BrokerHeartbeatResponse(
                ErrorCode.BROKER_ID_NOT_REGISTERED, f"Broker {request.broker_id} is not registered"
            ),
        )
    if b.epoch != request.broker_epoch:
        return ControllerResult.of(
            [],
            BrokerHeartbeatResponse(
                ErrorCode.STALE_BROKER_EPOCH,
                f"Expected broker epoch {b.epoch}, but got {request.broker_epoch}",
            ),
        )
    sessions.touch(b.broker_id, now_ms)
    sessions.report_metadata_offset(b.broker_id, request.current_metadata_offset)
    sessions.report_supported(
        b.broker_id,
        features.reported_range(request.min_metadata_version, request.max_metadata_version),
    )
    if len(request.replica_log_ends) > MAX_LOG_END_REPORTS:
        return ControllerResult.of(
            [],
            BrokerHeartbeatResponse(
                ErrorCode.INVALID_REQUEST,
                f"{len(request.replica_log_ends)} log ends; at most {MAX_LOG_END_REPORTS}",
            ),
        )
    sessions.report_log_ends(b.broker_id, request.replica_log_ends)
    caught_up = request.current_metadata_offset >= b.registered_offset
    if request.want_shutdown:
        if b.fenced:
            sessions.forget(b.broker_id)
            return ControllerResult.of([], BrokerHeartbeatResponse(0, None, caught_up, True, True))
        if not b.in_controlled_shutdown or leads_or_replicates_in_isr(image, b.broker_id):
            records: list[MetadataRecord] = []
            if not b.in_controlled_shutdown:
                records.append(
                    BrokerRegistrationChangeRecord(
                        b.broker_id, b.epoch, fenced=None, in_controlled_shutdown=True
                    )
                )
            shutting = apply_records(image, records) if records else image
            records.extend(removal_records(shutting, b.broker_id, rules, sessions))
            return ControllerResult.of(
                records, BrokerHeartbeatResponse(0, None, caught_up, False, False)
            )
        target = sessions.shutdown_offset(b.broker_id, image.offset)
        if request.current_metadata_offset < target:
            return ControllerResult.of(
                [], BrokerHeartbeatResponse(0, None, caught_up, False, False)
            )
        sessions.forget(b.broker_id)
        return ControllerResult.of(
            fence_records(image, b.broker_id, rules, sessions, reason="controlled shutdown done"),
            BrokerHeartbeatResponse(0, None, caught_up, True, True),
        )
    if request.want_fence:
        if b.fenced:
            return ControllerResult.of([], BrokerHeartbeatResponse(0, None, caught_up, True, False))
        return ControllerResult.of(
            fence_records(image, b.broker_id, rules, sessions, reason="it asked to be fenced"),
            BrokerHeartbeatResponse(0, None, caught_up, True, False),
        )
    if b.fenced and caught_up and not b.in_controlled_shutdown:
        return ControllerResult.of(
            unfence_records(image, b.broker_id, rules, sessions),
            BrokerHeartbeatResponse(0, None, True, False, False),
        )
    offline = {(r.topic_id, r.partition) for r in request.offline_replicas}
    sessions.report_offline(b.broker_id, offline, request.offline_log_dirs)
    records = offline_replica_records(image, b.broker_id, offline, rules, sessions)
    if records:
        return ControllerResult.of(
            records, BrokerHeartbeatResponse(0, None, caught_up, b.fenced, False)
        )
    if request.replica_log_ends and b.is_active:
        # A report may complete the unclean recovery of a partition waiting for it.
        reported = {(r.topic_id, r.partition) for r in request.replica_log_ends}
        records = election_records(image, electorate(image, sessions), rules, reported)
        if records:
            log_leader_moves(
                image, f"recovery elections after broker {b.broker_id}'s log-end report", records
            )
    return ControllerResult.of(
        records, BrokerHeartbeatResponse(0, None, caught_up, b.fenced, False)
    )


def expire_sessions(
    image: MetadataImage,
    sessions: BrokerHeartbeatManager,
    rules: RulesFor,
    now_ms: int,
    budget: RecordBudget,
) -> bool:
    """Fence every unfenced broker whose session ran out (one after another, each seeing the
    previous ones fenced), adding the records to ``budget``. Each broker's fence and elections
    go in together when they fit; otherwise only the fence record goes in and False is
    returned: the caller must then run :func:`cleanup_records` to finish the elections."""
    complete = True
    current = image
    candidates = [b.broker_id for b in image.brokers.values() if not b.fenced]
    expired = sessions.expired(candidates, now_ms)
    for i, bid in enumerate(expired):
        reason = (
            "its session stream to the controller broke"
            if sessions.stream_lost(bid)
            else "no heartbeat within broker.session.timeout.ms"
        )
        fence = fence_records(current, bid, rules, sessions, reason=reason)
        if not budget.try_add(fence):
            if not budget.try_add(fence[:1]):
                return False  # the rest expire again on the next tick
            fence = fence[:1]
            complete = False
        sessions.forget(bid)
        if i + 1 < len(expired):  # the next broker's elections must see this one fenced
            current = apply_records(current, fence)
    return complete


def cleanup_records(
    image: MetadataImage,
    rules: RulesFor,
    budget: RecordBudget,
    sessions: BrokerHeartbeatManager | None = None,
) -> bool:
    """Take inactive brokers (fenced or shutting down) out of every ISR and leadership, as far as
    ``budget`` allows; True when nothing is left to do. Finishes fencings that did not fit one
    append, or that a previous controller left half done."""
    inactive = {b.broker_id for b in image.brokers.values() if not b.is_active}
    voters = electorate(image, sessions)
    for topic, pid, reg in image.iter_partitions():
        if not (reg.leader in inactive or inactive.intersection(reg.isr)):
            continue
        current = reg
        changes: list[MetadataRecord] = []
        for bid in [*reg.isr, reg.leader]:
            if bid not in inactive:
                continue
            change = remove_broker_from_partition(
                topic.topic_id, pid, current, bid, voters, rules(topic.name)
            )
            if change is not None:
                changes.append(change)
                current = merge_partition_change(current, change)
        # Only the last change per partition would do; merge them into one record.
        if changes:
            merged = PartitionChangeRecord(
                pid,
                topic.topic_id,
                current.isr if current.isr != reg.isr else None,
                current.leader if current.leader != reg.leader else NO_LEADER_CHANGE,
                None,
                elr=current.elr if current.elr != reg.elr else None,
            )
            if not budget.try_add([merged]):
                return False
    return True
