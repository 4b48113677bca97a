"""ControllerServer: the controller quorum's gRPC service (one per voter).

Threads
    gRPC worker threads decode requests, check them against the ACLs and wait for answers. One
    event thread (:class:`metadata.controller_events.ControllerEventThread`, which also says how
    writes commit and how a controller activates) owns the :class:`QuorumController`: it
    applies committed log entries to the controller's image, activates / deactivates the
    controller on leadership changes, runs ``tick`` and executes write requests one at a time.
    Log listeners only enqueue events; they never block.

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
import logging
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import grpc

from common.error_codes import ErrorCode
from metadata import features, quorum_info, security_control
from metadata import messages as m
from metadata.broker_session_streams import BrokerSessionStreams
from metadata.control_plane_authz import (
    ControlPlaneAuthorizer,
    host_of_peer,
    principal_of_context,
)
from metadata.controller import DEFAULT_MAX_APPEND_BYTES, QuorumController
from metadata.controller_config import ControllerConfig
from metadata.controller_events import REQUEST_WAIT_MARGIN_S, ControllerEventThread
from metadata.node_info import encode_node_info
from metadata.rpc import (
    FETCH_METADATA_MAX_BYTES,
    FETCH_METADATA_MAX_WAIT_MS,
    MAX_REQUEST_BYTES,
    MAX_RESPONSE_BYTES,
    METHODS,
    SERVICE_NAME,
    Envelope,
    decode_request,
    encode_envelope,
)
from metadata.wire import MessageError
from raft import api as raft_api
from raft.api import (
    AppendTimeoutError,
    LogEntry,
    MembershipChangeError,
    MetadataLogApi,
    NotLeaderError,
    SnapshotRequired,
)
from raft.membership import voters_text

logger = logging.getLogger(__name__)

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
        # At most half the gRPC workers may sit in FetchMetadata long-polls; beyond that a
        # fetch answers at once (the broker simply polls again).
        self._long_polls = threading.BoundedSemaphore(max(1, max_workers // 2))
        self._sessions = BrokerSessionStreams(
            MAX_BROKER_SESSIONS,
            lambda bid, epoch: self._events.post(("session_lost", (bid, epoch))),
        )
        self._stopping = threading.Event()
        self._events = ControllerEventThread(
            node_id,
            metadata_log,
            config,
            self.controller,
            clock_ms=self._clock_ms,
            stopping=self._stopping,
            sessions=self._sessions,
            controller_features=self._controller_features,
            on_commit_latency_s=on_commit_latency_s,
        )
        self._server: grpc.Server | None = None
        self.bound_port = 0
        # The RPCs the active controller answers on the gRPC worker itself: reads of its
        # committed image, and voter changes (they wait on the log, not on the event thread).
        self._active_only: dict[str, Callable[[Any], Envelope]] = {
            "AddRaftVoter": self._change_voters,
            "RemoveRaftVoter": self._change_voters,
            "DescribeUserScramCredentials": lambda r: Envelope(
                body=security_control.describe_user_scram_credentials(self.controller.image, r)
            ),
            "DescribeAcls": lambda r: Envelope(
                body=security_control.describe_acls(self.controller.image, r)
            ),
            "DescribeClientQuotas": lambda r: Envelope(
                body=security_control.describe_client_quotas(self.controller.image, r)
            ),
            "DescribeCluster": lambda _r: Envelope(
                body=self.controller.describe_cluster(self.node_id)
            ),
            "DescribeQuorum": lambda _r: Envelope(body=self._describe_quorum()),
            "DescribeFeatures": lambda _r: Envelope(
                body=self.controller.describe_features(self._controller_features())
            ),
            "ListPartitionReassignments": lambda r: Envelope(
                body=self.controller.list_partition_reassignments(r)
            ),
            "DescribeConfigs": lambda r: Envelope(body=self.controller.describe_configs(r)),
        }

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
        self._log.add_leadership_listener(self._events.on_leadership)
        self._log.add_commit_listener(self._events.on_commit)
        self._events.start()
        self._server = server
        server.start()
        if self._log.is_leader:
            self._events.post(("leader", (True, self._log.epoch)))
        self._events.on_commit(())
        logger.info("controller %d serving gRPC on %s", self.node_id, self.address)

    def stop(self, grace_s: float = 0.5) -> None:
        self._stopping.set()
        self._sessions.end_all()
        if self._server is not None:
            self._server.stop(grace_s).wait(grace_s + 5)
        self._events.stop()

    # --- gRPC side ------------------------------------------------------------------------------

    def _describe_quorum(self) -> m.QuorumDescription:
        return quorum_info.describe_quorum(
            self._log,
            self.node_id,
            self.address,
            self.controller.sessions.observers(),
            self._clock_ms(),
        )

    def _controller_features(self) -> dict[int, features.SupportedRange | None]:
        return quorum_info.controller_features(self._log, self.node_id)

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
        self._events.post(("session_open", (request.broker_id, request.broker_epoch, opened)))
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
        if not self.controller.is_active:
            return self._not_controller()
        answer = self._active_only.get(name)
        if answer is not None:
            return answer(request)
        return self._events.submit(name, request)

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
        return quorum_info.quorum_status(self._log, self.node_id)

    def _not_controller(self) -> Envelope:
        return self._events.not_controller()
