"""ControllerServer: the controller quorum's gRPC service (one per voter).

Threads
    gRPC worker threads decode requests and wait for answers. One *event thread* owns the
    :class:`QuorumController`: it applies committed log entries to the controller's image
    (woken by the log's commit listener), activates / deactivates the controller on leadership
    changes, runs ``tick`` (session fencing, preferred-leader rebalancing) and executes write
    requests one at a time. Log listeners only enqueue events; they never block.

Writes
    For each write the event thread computes a ControllerResult on the committed image, appends
    its records as one batch with ``expected_epoch`` = the epoch at which this controller became
    active (so a deposed controller cannot commit anything), replays the committed entries into
    the image, and only then answers. NotLeaderError / StaleEpochError deactivate the controller
    and the caller gets NOT_CONTROLLER. After an AppendTimeoutError the outcome is unknown: the
    caller gets REQUEST_TIMED_OUT and the next write is preceded by a NoOpRecord barrier, whose
    commit proves every earlier append of this leader is either committed (and replayed) or gone.

Activation
    On (True, epoch) from the leadership listener, the event thread replays the log up to the
    committed offset (which includes this leader's leader-change entry) before it acts, and gives
    every broker a full session timeout of grace.

Reads
    FetchMetadata and QuorumStatus are served by any voter from its committed log (long-poll with
    ``wait_for_offset``). DescribeCluster / DescribeConfigs / ListPartitionReassignments are
    answered by the active controller from its committed image. Every other voter answers
    NOT_CONTROLLER with the active controller's id and gRPC address (published through the raft
    leader-change entry: see :meth:`ControllerServer.leader_info_for`).

Start-up order for a node: construct the ControllerServer and call ``start()`` (it binds, then
calls ``metadata_log.set_leader_info(...)`` when the log offers it) BEFORE ``metadata_log.start()``,
so the first leader-change entry this voter writes already carries its address. A server started
after the log still works: it checks ``is_leader`` once at start. Shut down in the reverse
order: ``ControllerServer.stop()``, then ``MetadataLog.close()``.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import logging
import queue
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import grpc

from common.error_codes import ErrorCode
from metadata import features, security_control
from metadata import messages as m
from metadata.broker_session_streams import BrokerSessionStreams
from metadata.control_plane_authz import (
    ControlPlaneAuthorizer,
    host_of_peer,
    principal_of_context,
)
from metadata.controller import DEFAULT_MAX_APPEND_BYTES, QuorumController, random_topic_id
from metadata.controller_config import ControllerConfig
from metadata.election import InvariantViolation
from metadata.node_info import NodeInfo, decode_node_info, encode_node_info
from metadata.records import NoOpRecord, encode_record
from metadata.result import ControllerResult
from metadata.rpc import (
    FETCH_METADATA_MAX_BYTES,
    FETCH_METADATA_MAX_WAIT_MS,
    MAX_REQUEST_BYTES,
    MAX_RESPONSE_BYTES,
    METHODS,
    SECURITY_READS,
    SERVICE_NAME,
    Envelope,
    decode_request,
    encode_envelope,
)
from metadata.snapshot import image_from_snapshot
from metadata.wire import MessageError
from raft import api as raft_api
from raft.api import (
    AppendTimeoutError,
    BatchTooLargeError,
    LeaderChange,
    LogEntry,
    MembershipChangeError,
    MetadataLogApi,
    MetadataLogError,
    NotLeaderError,
    SnapshotRequired,
    StaleEpochError,
)
from raft.membership import voters_text

logger = logging.getLogger(__name__)

# Bounds of the event thread.
MAX_PENDING_REQUESTS = 1000
TICK_INTERVAL_MAX_MS = 250
CATCH_UP_READ_RECORDS = 20_000
CATCH_UP_MAX_ROUNDS = 10_000
# Extra time a gRPC worker waits beyond the append timeout before giving up on the event thread.
REQUEST_WAIT_MARGIN_S = 5.0
DEFAULT_MAX_WORKERS = 64
# Broker session streams held at once (metadata.broker_session_streams); each holds a gRPC
# worker thread of its own, on top of max_workers.
MAX_BROKER_SESSIONS = 256
# Kafka's error code for each reason the metadata log refuses a voter change. Not caught up
# and a change still committing are retriable, as Kafka answers them (REQUEST_TIMED_OUT).
_VOTER_CHANGE_ERRORS = {
    raft_api.DUPLICATE_VOTER: ErrorCode.DUPLICATE_VOTER,
    raft_api.VOTER_NOT_FOUND: ErrorCode.VOTER_NOT_FOUND,
    raft_api.NOT_CAUGHT_UP: ErrorCode.REQUEST_TIMED_OUT,
    raft_api.CHANGE_PENDING: ErrorCode.REQUEST_TIMED_OUT,
    raft_api.LAST_VOTER: ErrorCode.INVALID_REQUEST,
}


class _Stop(Exception):
    """Raised inside the event thread when the server is stopping mid-operation."""


class ControllerServer:
    """The gRPC control plane of one controller voter. Thread-safe: start/stop from any thread."""

    def __init__(
        self,
        node_id: int,
        metadata_log: MetadataLogApi,
        config: ControllerConfig,
        listen_host: str,
        listen_port: int,
        *,
        cluster_id: str | None = None,
        advertised_host: str | None = None,
        max_workers: int = DEFAULT_MAX_WORKERS,
        max_append_bytes: int = DEFAULT_MAX_APPEND_BYTES,
        clock_ms: Callable[[], int] | None = None,
        controller: QuorumController | None = None,
        credentials: grpc.ServerCredentials | None = None,
        on_commit_latency_s: Callable[[float], None] | None = None,
        authorizer: ControlPlaneAuthorizer | None = None,
    ) -> None:
        self.node_id = node_id
        # ACLs on the RPCs (mutual TLS: the principal is the client certificate's subject).
        self._authorizer = authorizer
        # Mutual TLS when set (data_plane.security.grpc_tls.server_credentials); else plaintext.
        self._credentials = credentials
        # Told how long each append of a write took to commit (a metrics histogram).
        self._on_commit_latency_s = on_commit_latency_s
        self._log = metadata_log
        self.config = config
        self._listen_host = listen_host
        self._listen_port = listen_port
        self._advertised_host = advertised_host or listen_host
        self._max_workers = max_workers
        self._clock_ms = clock_ms or (lambda: int(time.monotonic() * 1000))
        self.controller = controller or QuorumController(
            config, cluster_id=cluster_id, max_append_bytes=max_append_bytes
        )
        # Unbounded so that log listeners never block; requests are bounded by _pending below,
        # and commit notifications are coalesced (at most one queued).
        self._events: queue.Queue[tuple[str, Any]] = queue.Queue()
        self._pending = threading.BoundedSemaphore(MAX_PENDING_REQUESTS)
        # At most half the gRPC workers may sit in FetchMetadata long-polls; beyond that a
        # fetch answers at once (the broker simply polls again).
        self._long_polls = threading.BoundedSemaphore(max(1, max_workers // 2))
        self._sessions = BrokerSessionStreams(
            MAX_BROKER_SESSIONS, lambda bid, epoch: self._post(("session_lost", (bid, epoch)))
        )
        self._commit_pending = threading.Event()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._server: grpc.Server | None = None
        self.bound_port = 0
        self._needs_barrier = False
        # Latest leader-change entry seen in the log: (leader_id, epoch, gRPC address).
        self._leader_change: tuple[int, int, str | None] | None = None
        self._tick_interval_s = (
            min(TICK_INTERVAL_MAX_MS, config.broker_session_timeout_ms // 4) / 1000
        )
        # Longest a due tick waits for queued requests (heartbeats) to be handled first.
        self._tick_max_delay_s = config.broker_session_timeout_ms / 4000

    # --- lifecycle ------------------------------------------------------------------------------

    @staticmethod
    def leader_info_for(host: str, port: int) -> bytes:
        """The bytes a voter publishes through raft's leader-change entry: its gRPC address."""
        return f"{host}:{port}".encode()

    @property
    def address(self) -> str:
        return f"{self._advertised_host}:{self.bound_port}"

    @property
    def is_active(self) -> bool:
        return self.controller.is_active

    def start(self) -> None:
        server = grpc.server(
            concurrent.futures.ThreadPoolExecutor(
                max_workers=self._max_workers + MAX_BROKER_SESSIONS,
                thread_name_prefix=f"controller-{self.node_id}-rpc",
            ),
            options=[
                ("grpc.max_receive_message_length", MAX_REQUEST_BYTES),
                ("grpc.max_send_message_length", MAX_RESPONSE_BYTES),
                ("grpc.so_reuseport", 0),
            ],
            maximum_concurrent_rpcs=self._max_workers * 4 + MAX_BROKER_SESSIONS,
        )
        # No (de)serializers: requests and responses stay bytes, decoded by the envelope codec.
        handlers: dict[str, grpc.RpcMethodHandler[bytes, bytes]] = {
            name: grpc.unary_unary_rpc_method_handler(self._rpc_handler(name)) for name in METHODS
        }
        handlers["BrokerSession"] = grpc.unary_stream_rpc_method_handler(self._broker_session)
        server.add_generic_rpc_handlers(
            (grpc.method_handlers_generic_handler(SERVICE_NAME, handlers),)
        )
        address = f"{self._listen_host}:{self._listen_port}"
        if self._credentials is not None:
            port = server.add_secure_port(address, self._credentials)
        else:
            port = server.add_insecure_port(address)
        if port == 0:
            raise OSError(
                f"cannot bind the controller listener {self._listen_host}:{self._listen_port}"
            )
        self.bound_port = port
        set_info = getattr(self._log, "set_leader_info", None)
        if callable(set_info):
            set_info(self.leader_info_for(self._advertised_host, port))
        set_node_info = getattr(self._log, "set_node_info", None)
        if callable(set_node_info):
            set_node_info(encode_node_info(f"{self._advertised_host}:{port}"))
        self._log.add_leadership_listener(self._on_leadership)
        self._log.add_commit_listener(self._on_commit)
        self._thread = threading.Thread(
            target=self._run, name=f"controller-{self.node_id}-events", daemon=True
        )
        self._thread.start()
        self._server = server
        server.start()
        if self._log.is_leader:
            self._post(("leader", (True, self._log.epoch)))
        self._on_commit(())
        logger.info("controller %d serving gRPC on %s", self.node_id, self.address)

    def stop(self, grace_s: float = 0.5) -> None:
        self._stopping.set()
        self._sessions.end_all()
        if self._server is not None:
            self._server.stop(grace_s).wait(grace_s + 5)
        self._events.put_nowait(("stop", None))
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._fail_pending()

    def _fail_pending(self) -> None:
        while True:
            try:
                kind, payload = self._events.get_nowait()
            except queue.Empty:
                return
            if kind == "request":
                payload[3].set_result(
                    Envelope(ErrorCode.NOT_CONTROLLER, "controller is shutting down")
                )
            elif kind == "session_open":
                payload[2].set_result(ErrorCode.NOT_CONTROLLER)

    # --- log listeners (called on the log's thread: only enqueue) -------------------------------

    def _on_leadership(self, is_leader: bool, epoch: int) -> None:
        self._post(("leader", (is_leader, epoch)))

    def _on_commit(self, _entries: object) -> None:
        if not self._commit_pending.is_set():
            self._commit_pending.set()
            self._post(("commit", None))

    def _post(self, event: tuple[str, Any]) -> None:
        self._events.put_nowait(event)

    # --- event thread ---------------------------------------------------------------------------

    def _run(self) -> None:
        next_tick = time.monotonic()
        while not self._stopping.is_set():
            try:
                next_tick = self._run_once(next_tick)
            except _Stop:
                return
            except Exception:  # the event thread must survive any bug in one event
                logger.exception("controller %d: event loop error", self.node_id)

    def _run_once(self, next_tick: float) -> float:
        """Handle one event (or a timeout), then tick when due; returns the next tick time."""
        timeout = max(0.0, next_tick - time.monotonic())
        try:
            kind, payload = self._events.get(timeout=timeout)
        except queue.Empty:
            kind, payload = "timeout", None
        try:
            if kind == "stop":
                raise _Stop()
            if kind == "commit":
                self._commit_pending.clear()
                self._catch_up(self._log.committed_offset)
            elif kind == "leader":
                self._leadership_change(*payload)
            elif kind == "request":
                name, request, received_ms, future = payload
                future.set_result(self._execute(name, request, received_ms))
            elif kind == "session_open":
                broker_id, broker_epoch, opened = payload
                opened.set_result(self.controller.broker_session_opened(broker_id, broker_epoch))
            elif kind == "session_lost" and self.controller.broker_session_lost(*payload):
                logger.info(
                    "controller %d: broker %d's session stream broke; fencing it now",
                    self.node_id,
                    payload[0],
                )
                self._tick()
        except _Stop:
            raise
        except Exception:
            logger.exception("controller %d: error handling %s", self.node_id, kind)
            if kind == "request" and not payload[3].done():
                payload[3].set_result(
                    Envelope(ErrorCode.UNKNOWN_SERVER_ERROR, "internal controller error")
                )
            elif kind == "session_open" and not payload[2].done():
                payload[2].set_result(ErrorCode.UNKNOWN_SERVER_ERROR)
        now = time.monotonic()
        # Heartbeats still queued must count before fencing: tick once the queue is drained, or
        # when it is overdue by more than its bound under a constant flood of requests.
        overdue_s = now - next_tick
        if overdue_s >= 0 and (self._events.empty() or overdue_s > self._tick_max_delay_s):
            next_tick = now + self._tick_interval_s
            try:
                self._tick()
            except _Stop:
                raise
            except Exception:
                logger.exception("controller %d: tick failed", self.node_id)
        return next_tick

    def _leadership_change(self, is_leader: bool, epoch: int) -> None:
        if not is_leader:
            if self.controller.active_epoch is not None and epoch >= self.controller.active_epoch:
                self.controller.deactivate()
                self._sessions.end_all()
            return
        if self.controller.active_epoch == epoch:
            return
        self._catch_up(self._log.committed_offset)
        if self._log.epoch != epoch or not self._log.is_leader:
            return  # already deposed again; the (False, epoch) event follows
        self.controller.activate(epoch, self._clock_ms())
        self._needs_barrier = False
        # At once rather than on the next periodic tick: a new cluster's first records then
        # come after its finalized metadata.version.
        self._tick()

    def _catch_up(self, target: int) -> None:
        """Replay committed entries into the controller's image up to at least ``target``."""
        for _ in range(CATCH_UP_MAX_ROUNDS):
            if self._stopping.is_set():
                raise _Stop()
            offset = self.controller.image.offset
            if offset >= target:
                return
            try:
                entries = self._log.read(offset + 1, CATCH_UP_READ_RECORDS)
            except SnapshotRequired:
                snapshot = self._log.latest_snapshot()
                if snapshot is None or snapshot.last_offset <= offset:
                    logger.error("controller %d: snapshot required but none newer", self.node_id)
                    return
                self.controller.load_image(image_from_snapshot(snapshot))
                continue
            if not entries:
                if not self._log.wait_for_offset(offset + 1, 0.5):
                    return
                continue
            self._note_leader_changes(entries)
            self.controller.replay(entries)

    def _note_leader_changes(self, entries: list[LogEntry]) -> None:
        for e in entries:
            if e.is_control:
                try:
                    lc = LeaderChange.decode(e.record)
                except ValueError:
                    continue
                address = lc.leader_info.decode(errors="replace") if lc.leader_info else None
                self._leader_change = (lc.leader_id, lc.epoch, address)

    def _tick(self) -> None:
        if not self.controller.is_active:
            return
        result = self.controller.tick(self._clock_ms())
        if result is not None and result.records:
            problem = self._unwritable(result)
            if problem is not None:
                logger.error("controller %d: tick records refused: %s", self.node_id, problem)
                return
            try:
                self._commit(result)
            except MetadataLogError as exc:
                logger.warning("controller %d: tick append failed: %s", self.node_id, exc)

    def _commit(self, result: ControllerResult[Any]) -> None:
        """Append ``result``'s records (after a barrier if needed) and replay them."""
        epoch = self.controller.active_epoch
        if epoch is None:
            raise NotLeaderError(self._log.leader_id)
        timeout_s = self.config.append_timeout_ms / 1000
        try:
            if self._needs_barrier:
                barrier = self._log.append(
                    [encode_record(NoOpRecord())], expected_epoch=epoch, timeout_s=timeout_s
                )
                self._needs_barrier = False
                self._catch_up(barrier.last_offset)
            started = time.monotonic()
            appended = self._log.append(result.encoded, expected_epoch=epoch, timeout_s=timeout_s)
            if self._on_commit_latency_s is not None:
                self._on_commit_latency_s(time.monotonic() - started)
        except (NotLeaderError, StaleEpochError):
            self.controller.deactivate()
            raise
        except AppendTimeoutError:
            self._needs_barrier = True
            raise
        self._catch_up(appended.last_offset)

    def _execute(self, name: str, request: Any, received_ms: int) -> Envelope:
        if not self.controller.is_active:
            return self._not_controller()
        c = self.controller
        # A heartbeat counts from when it arrived, not from when the event thread got to it.
        now = received_ms
        if self._needs_barrier or c.image.offset < self._log.committed_offset:
            self._catch_up(self._log.committed_offset)
        handlers: dict[str, Callable[[], ControllerResult[Any]]] = {
            "RegisterBroker": lambda: c.register_broker(request, now),
            "BrokerHeartbeat": lambda: c.broker_heartbeat(request, now),
            "CreateTopics": lambda: c.create_topics(request),
            "DeleteTopics": lambda: c.delete_topics(request),
            "CreatePartitions": lambda: c.create_partitions(request),
            "AlterPartition": lambda: c.alter_partition(request),
            "ElectLeaders": lambda: c.elect_leaders(request),
            "AlterPartitionReassignments": lambda: c.alter_partition_reassignments(request),
            "AllocateProducerIds": lambda: c.allocate_producer_ids(request),
            "AlterConfigs": lambda: c.alter_configs(request),
            "IncrementalAlterConfigs": lambda: c.incremental_alter_configs(request),
            "AlterUserScramCredentials": lambda: security_control.alter_user_scram_credentials(
                c.image, request
            ),
            "CreateAcls": lambda: security_control.create_acls(
                c.image, request, lambda: random_topic_id(c.rng)
            ),
            "DeleteAcls": lambda: security_control.delete_acls(c.image, request),
            "AlterClientQuotas": lambda: security_control.alter_client_quotas(c.image, request),
            "UpdateFeatures": lambda: c.update_features(request, self._controller_features()),
        }
        try:
            result = handlers[name]()
        except InvariantViolation as exc:
            logger.error("controller %d: %s", self.node_id, exc)
            return Envelope(ErrorCode.UNKNOWN_SERVER_ERROR, f"metadata invariant violated: {exc}")
        problem = self._unwritable(result)
        if problem is not None:
            logger.error("controller %d: %s records refused: %s", self.node_id, name, problem)
            return Envelope(ErrorCode.UNKNOWN_SERVER_ERROR, f"records refused: {problem}")
        if result.records:
            try:
                self._commit(result)
            except (NotLeaderError, StaleEpochError):
                return self._not_controller()
            except AppendTimeoutError:
                return Envelope(ErrorCode.REQUEST_TIMED_OUT, "metadata append timed out")
            except BatchTooLargeError as exc:
                return Envelope(ErrorCode.POLICY_VIOLATION, f"metadata append refused: {exc}")
            except MetadataLogError as exc:
                if self._stopping.is_set():
                    return Envelope(ErrorCode.NOT_CONTROLLER, "controller is shutting down")
                logger.error("controller %d: metadata append failed: %s", self.node_id, exc)
                return Envelope(ErrorCode.UNKNOWN_SERVER_ERROR, f"metadata append failed: {exc}")
        return Envelope(body=result.response)

    # --- gRPC side ------------------------------------------------------------------------------

    def _unwritable(self, result: ControllerResult[Any]) -> str | None:
        """Why ``result``'s records may not be written at the finalized metadata.version (a
        bug: the controller's decisions follow the level), or None."""
        level = features.finalized_level(self.controller.image)
        return features.check_writable(result.records, level)

    def _describe_quorum(self) -> m.QuorumDescription:
        """The quorum as this (active) controller sees it: voters with the log end each
        acknowledged and when it last answered; observers = the brokers, with the metadata
        offset each reported in its latest heartbeat; every voter's gRPC address it knows."""
        status = self._quorum_status()
        committed = int(status.get("committed_offset", -1))
        voters = [
            m.QuorumReplica(
                int(v["node_id"]),
                -1 if v.get("match_offset") is None else int(v["match_offset"]),
                -1 if v.get("last_fetch_ms") is None else int(v["last_fetch_ms"]),
                -1 if v.get("last_caught_up_ms") is None else int(v["last_caught_up_ms"]),
            )
            for v in status.get("voters", [])
        ]
        wall_now, clock_now = int(time.time() * 1000), self._clock_ms()
        observers = []
        for broker_id, (offset, contact_ms) in sorted(self.controller.sessions.observers().items()):
            seen = wall_now - (clock_now - contact_ms)
            observers.append(
                m.QuorumReplica(broker_id, offset, seen, seen if offset >= committed else -1)
            )
        for observer in status.get("observers", []):  # controllers that are not voters
            match = observer.get("match_offset")
            fetched = observer.get("last_fetch_ms")
            caught_up = observer.get("last_caught_up_ms")
            observers.append(
                m.QuorumReplica(
                    int(observer["node_id"]),
                    -1 if match is None else int(match),
                    -1 if fetched is None else int(fetched),
                    -1 if caught_up is None else int(caught_up),
                )
            )
        addresses = {self.node_id: self.address}
        for voter_id, info in self._peer_node_infos().items():
            if info.controller_address is not None:
                addresses[voter_id] = info.controller_address
        nodes = []
        for voter_id, address in sorted(addresses.items()):
            host, _, port = address.rpartition(":")
            if port.isdigit():
                nodes.append(m.ControllerEndpoint(voter_id, host, int(port)))
        return m.QuorumDescription(
            leader_id=self.node_id,
            leader_epoch=int(status.get("epoch", -1)),
            high_watermark=committed,
            voters=voters,
            observers=observers,
            nodes=nodes,
        )

    def _controller_features(self) -> dict[int, features.SupportedRange | None]:
        """Every voter with the metadata.version range it told this one (None: not yet)."""
        voter_ids = list(self._log.voters() or (self.node_id,))
        infos = self._peer_node_infos()
        out: dict[int, features.SupportedRange | None] = {}
        for voter_id in voter_ids:
            if voter_id == self.node_id:
                out[voter_id] = features.SUPPORTED
            else:
                info = infos.get(voter_id)
                out[voter_id] = info.supported if info is not None else None
        return out

    def _peer_node_infos(self) -> dict[int, NodeInfo]:
        """What each other voter told this one about itself over Raft (metadata.node_info)."""
        infos_fn = getattr(self._log, "peer_infos", None)
        raw: dict[int, bytes] = infos_fn() if callable(infos_fn) else {}
        return {voter_id: decode_node_info(data) for voter_id, data in raw.items()}

    def _not_controller(self) -> Envelope:
        leader_id = self._log.leader_id
        address = None
        info_fn = getattr(self._log, "leader_info", None)
        if callable(info_fn):
            try:
                info = info_fn()
            except Exception:  # an optional extra of the log; the record path below also works
                info = None
            if info:
                address = info.decode(errors="replace")
        if address is None and self._leader_change is not None:
            lc_leader, _, lc_address = self._leader_change
            if lc_leader == leader_id:
                address = lc_address
        if leader_id == self.node_id and not self.controller.is_active:
            message = "this voter is the Raft leader but its controller is not active yet"
            return Envelope(ErrorCode.NOT_CONTROLLER, message, None, None)
        return Envelope(ErrorCode.NOT_CONTROLLER, "not the active controller", leader_id, address)

    def _refusal(self, name: str, request: Any, context: grpc.ServicerContext) -> Envelope | None:
        """The envelope refusing ``name`` to the caller under the ACLs, or None."""
        if self._authorizer is None:
            return None
        refusal = self._authorizer.check(
            name,
            request,
            # types-grpcio says Mapping[str, bytes]; grpc's documented (and actual) value of
            # each auth property is an iterable of bytes.
            principal_of_context(context.auth_context()),  # type: ignore[arg-type]
            self.controller.image.security.acls,
            host_of_peer(context.peer()),
        )
        if refusal is None:
            return None
        logger.info("controller %d: %s refused: %s", self.node_id, name, refusal.message)
        return Envelope(refusal.error_code, refusal.message)

    def _broker_session(self, data: bytes, context: grpc.ServicerContext) -> Iterator[bytes]:
        """BrokerSession: answer whether the session is held, then hold the stream open until
        the broker's side ends it (a loss: the broker is fenced now) or this controller does."""
        try:
            request = decode_request(m.BrokerSessionRequest, data)
        except MessageError as exc:
            yield encode_envelope(Envelope(ErrorCode.INVALID_REQUEST, str(exc)))
            return
        refused = self._refusal("BrokerSession", request, context)
        if refused is not None:
            yield encode_envelope(refused)
            return
        if self._stopping.is_set() or not self.controller.is_active:
            yield encode_envelope(self._not_controller())
            return
        opened: concurrent.futures.Future[int] = concurrent.futures.Future()
        self._post(("session_open", (request.broker_id, request.broker_epoch, opened)))
        try:
            code = opened.result(timeout=REQUEST_WAIT_MARGIN_S)
        except concurrent.futures.TimeoutError:
            yield encode_envelope(Envelope(ErrorCode.REQUEST_TIMED_OUT, "controller busy"))
            return
        if code == ErrorCode.NOT_CONTROLLER:
            yield encode_envelope(self._not_controller())
            return
        if code != ErrorCode.NO_ERROR:
            yield encode_envelope(Envelope(body=m.BrokerSessionResponse(code, None)))
            return
        stream = self._sessions.open(request.broker_id, request.broker_epoch)
        if stream is None:
            message = f"this controller holds {MAX_BROKER_SESSIONS} broker sessions already"
            body = m.BrokerSessionResponse(ErrorCode.THROTTLING_QUOTA_EXCEEDED, message)
            yield encode_envelope(Envelope(body=body))
            return
        context.add_callback(lambda: self._sessions.broker_side_ended(stream))
        yield encode_envelope(Envelope(body=m.BrokerSessionResponse()))
        self._sessions.hold(stream, context.is_active)

    def _rpc_handler(self, name: str) -> Callable[[bytes, grpc.ServicerContext], bytes]:
        request_cls = METHODS[name][0]

        def handle(data: bytes, context: grpc.ServicerContext) -> bytes:
            try:
                try:
                    request = decode_request(request_cls, data)
                except MessageError as exc:
                    return encode_envelope(Envelope(ErrorCode.INVALID_REQUEST, str(exc)))
                refused = self._refusal(name, request, context)
                if refused is not None:
                    return encode_envelope(refused)
                return encode_envelope(self._dispatch(name, request))
            except Exception:
                logger.exception("controller %d: %s failed", self.node_id, name)
                return encode_envelope(
                    Envelope(ErrorCode.UNKNOWN_SERVER_ERROR, "internal controller error")
                )

        return handle

    def _dispatch(self, name: str, request: Any) -> Envelope:
        if self._stopping.is_set():
            return Envelope(ErrorCode.NOT_CONTROLLER, "controller is shutting down")
        if name == "FetchMetadata":
            return Envelope(body=self._fetch_metadata(request))
        if name == "QuorumStatus":
            return Envelope(body=m.QuorumStatusResponse(self._quorum_status()))
        if name in ("AddRaftVoter", "RemoveRaftVoter"):
            if not self.controller.is_active:
                return self._not_controller()
            return self._change_voters(request)
        if name in SECURITY_READS:
            if not self.controller.is_active:
                return self._not_controller()
            return Envelope(body=self._describe_security(name, request))
        if name in (
            "DescribeCluster",
            "DescribeConfigs",
            "ListPartitionReassignments",
            "DescribeFeatures",
            "DescribeQuorum",
        ):
            if not self.controller.is_active:
                return self._not_controller()
            if name == "DescribeCluster":
                return Envelope(body=self.controller.describe_cluster(self.node_id))
            if name == "DescribeQuorum":
                return Envelope(body=self._describe_quorum())
            if name == "DescribeFeatures":
                return Envelope(body=self.controller.describe_features(self._controller_features()))
            if name == "ListPartitionReassignments":
                return Envelope(body=self.controller.list_partition_reassignments(request))
            return Envelope(body=self.controller.describe_configs(request))
        if not self.controller.is_active:
            return self._not_controller()
        if not self._pending.acquire(blocking=False):
            return Envelope(ErrorCode.REQUEST_TIMED_OUT, "controller is overloaded")
        try:
            future: concurrent.futures.Future[Envelope] = concurrent.futures.Future()
            self._events.put_nowait(("request", (name, request, self._clock_ms(), future)))
            wait_s = self.config.append_timeout_ms / 1000 * 2 + REQUEST_WAIT_MARGIN_S
            try:
                return future.result(timeout=wait_s)
            except concurrent.futures.TimeoutError:
                return Envelope(ErrorCode.REQUEST_TIMED_OUT, "controller did not answer in time")
        finally:
            self._pending.release()

    def _change_voters(self, request: m.AddRaftVoterRequest | m.RemoveRaftVoterRequest) -> Envelope:
        """Add or remove a controller quorum voter through the metadata log (blocks this gRPC
        worker until the change commits, at most the request's timeout)."""
        timeout_s = max(0.1, request.timeout_ms / 1000)
        try:
            if isinstance(request, m.AddRaftVoterRequest):
                voters = self._log.add_voter(request.voter_id, request.raft_address, timeout_s)
            else:
                voters = self._log.remove_voter(request.voter_id, timeout_s)
        except NotLeaderError:
            return self._not_controller()
        except MembershipChangeError as exc:
            code = _VOTER_CHANGE_ERRORS.get(exc.reason, ErrorCode.UNKNOWN_SERVER_ERROR)
            return Envelope(body=m.RaftVoterResponse(code, str(exc)))
        except AppendTimeoutError as exc:
            return Envelope(body=m.RaftVoterResponse(ErrorCode.REQUEST_TIMED_OUT, str(exc)))
        logger.info(
            "controller %d: the controller quorum's voters are now %s",
            self.node_id,
            voters_text(voters),
        )
        return Envelope(body=m.RaftVoterResponse(voters=voters))

    def _describe_security(self, name: str, request: Any) -> Any:
        image = self.controller.image
        if name == "DescribeUserScramCredentials":
            return security_control.describe_user_scram_credentials(image, request)
        if name == "DescribeAcls":
            return security_control.describe_acls(image, request)
        return security_control.describe_client_quotas(image, request)

    def _fetch_metadata(self, request: m.FetchMetadataRequest) -> m.FetchMetadataResponse:
        from_offset = max(0, request.from_offset)
        max_records = max(1, min(request.max_records, self.config.fetch_metadata_max_records))
        if (
            self._log.committed_offset < from_offset
            and request.max_wait_ms > 0
            and self._long_polls.acquire(blocking=False)
        ):
            # Bounded: parked long-polls must leave gRPC workers for everything else.
            try:
                wait_ms = min(request.max_wait_ms, FETCH_METADATA_MAX_WAIT_MS)
                self._log.wait_for_offset(from_offset, wait_ms / 1000)
            finally:
                self._long_polls.release()
        snapshot = None
        entries: list[LogEntry] = []
        for _ in range(3):  # the tail may be folded between the two reads
            try:
                entries = self._log.read(from_offset, max_records)
                break
            except SnapshotRequired:
                snapshot = self._log.latest_snapshot()
                if snapshot is None:
                    break
                from_offset = snapshot.last_offset + 1
        out: list[tuple[int, int, bytes, bool]] = []
        size = len(snapshot.data) if snapshot is not None else 0
        for e in entries:
            size += len(e.record) + 32
            if out and size > FETCH_METADATA_MAX_BYTES:
                break
            out.append((e.offset, e.epoch, e.record, e.is_control))
        return m.FetchMetadataResponse(
            snapshot=snapshot.data if snapshot is not None else None,
            snapshot_offset=snapshot.last_offset if snapshot is not None else -1,
            snapshot_epoch=snapshot.epoch if snapshot is not None else -1,
            entries=out,
            committed_offset=self._log.committed_offset,
        )

    def _quorum_status(self) -> dict[str, Any]:
        status_fn = getattr(self._log, "status", None)
        if callable(status_fn):
            status = status_fn()
            if dataclasses.is_dataclass(status) and not isinstance(status, type):
                return dataclasses.asdict(status)
        return {
            "node_id": self.node_id,
            "leader_id": self._log.leader_id,
            "epoch": self._log.epoch,
            "committed_offset": self._log.committed_offset,
            "voters": [],
        }
