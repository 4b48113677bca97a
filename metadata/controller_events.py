"""ControllerEventThread: the one thread that owns a voter's QuorumController.

Events
    Log listeners, gRPC workers and broker session streams only enqueue events (``post``); the
    thread handles them one at a time: ``commit`` (replay newly committed entries into the
    controller's image; coalesced, at most one queued), ``leader`` (activate / deactivate on a
    leadership change), ``request`` (execute one write), ``session_open`` / ``session_lost``
    (broker session streams), ``stop``. Between events it runs ``tick`` (session fencing,
    preferred-leader rebalancing), after queued events once due, and regardless of them once
    overdue by more than its bound.

Writes
    For each write the thread computes a ControllerResult on the committed image, appends its
    records as one batch with ``expected_epoch`` = the epoch at which this controller became
    active (so a deposed controller cannot commit anything), replays the committed entries into
    the image, and only then answers. NotLeaderError / StaleEpochError deactivate the controller
    and the caller gets NOT_CONTROLLER. After an AppendTimeoutError the outcome is unknown: the
    caller gets REQUEST_TIMED_OUT and the next write is preceded by a NoOpRecord barrier, whose
    commit proves every earlier append of this leader is either committed (and replayed) or gone.

Activation
    On (True, epoch) from the leadership listener, the thread replays the log up to the
    committed offset (which includes this leader's leader-change entry) before it acts, and
    gives every broker a full session timeout of grace.

Thread-safety: ``post``, ``submit``, ``not_controller`` and ``stop`` may be called from any
thread; everything else runs on the event thread. The queue is unbounded so that log
listeners never block; ``submit`` bounds the requests in it (MAX_PENDING_REQUESTS).
"""

from __future__ import annotations

import concurrent.futures
import logging
import queue
import threading
import time
from collections.abc import Callable
from typing import Any

from common.error_codes import ErrorCode
from metadata import features, security_control
from metadata.broker_session_streams import BrokerSessionStreams
from metadata.controller import QuorumController, random_topic_id
from metadata.controller_config import ControllerConfig
from metadata.election import InvariantViolation
from metadata.records import NoOpRecord, encode_record
from metadata.result import ControllerResult
from metadata.rpc import Envelope
from metadata.snapshot import image_from_snapshot
from raft.api import (
    AppendTimeoutError,
    BatchTooLargeError,
    LeaderChange,
    LogEntry,
    MetadataLogApi,
    MetadataLogError,
    NotLeaderError,
    SnapshotRequired,
    StaleEpochError,
)

logger = logging.getLogger(__name__)

# Bounds of the event thread.
MAX_PENDING_REQUESTS = 1000
TICK_INTERVAL_MAX_MS = 250
CATCH_UP_READ_RECORDS = 20_000
CATCH_UP_MAX_ROUNDS = 10_000
# Extra time a gRPC worker waits beyond the append timeout before giving up on the event thread.
REQUEST_WAIT_MARGIN_S = 5.0

# The finalized metadata.version range of every voter (None: not told yet), for UpdateFeatures.
ControllerFeatures = Callable[[], dict[int, features.SupportedRange | None]]


class _Stop(Exception):
    """Raised inside the event thread when the server is stopping mid-operation."""


class ControllerEventThread:
    """See the module docstring. ``stopping`` is shared with the gRPC side, which sets it;
    ``sessions`` are the broker session streams, ended when this controller is deposed."""

    def __init__(
        self,
        node_id: int,
        metadata_log: MetadataLogApi,
        config: ControllerConfig,
        controller: QuorumController,
        *,
        clock_ms: Callable[[], int],
        stopping: threading.Event,
        sessions: BrokerSessionStreams,
        controller_features: ControllerFeatures,
        on_commit_latency_s: Callable[[float], None] | None = None,
    ) -> None:
        self.node_id = node_id
        self._log = metadata_log
        self.config = config
        self.controller = controller
        self._clock_ms = clock_ms
        self._stopping = stopping
        self._sessions = sessions
        self._controller_features = controller_features
        # Told how long each append of a write took to commit (a metrics histogram).
        self._on_commit_latency_s = on_commit_latency_s
        self._queue: queue.Queue[tuple[str, Any]] = queue.Queue()
        self._pending = threading.BoundedSemaphore(MAX_PENDING_REQUESTS)
        self._commit_pending = threading.Event()
        self._thread: threading.Thread | None = None
        self._needs_barrier = False
        # Latest leader-change entry seen in the log: (leader_id, epoch, gRPC address).
        self._leader_change: tuple[int, int, str | None] | None = None
        self._tick_interval_s = (
            min(TICK_INTERVAL_MAX_MS, config.broker_session_timeout_ms // 4) / 1000
        )
        # Longest a due tick waits for queued requests (heartbeats) to be handled first.
        self._tick_max_delay_s = config.broker_session_timeout_ms / 4000

    # --- any thread -----------------------------------------------------------------------------

    def start(self) -> None:
        self._thread = threading.Thread(
            target=self._run, name=f"controller-{self.node_id}-events", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        """End the thread (``stopping`` is already set) and fail the requests still queued."""
        self._queue.put_nowait(("stop", None))
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._fail_pending()

    def post(self, event: tuple[str, Any]) -> None:
        self._queue.put_nowait(event)

    def on_leadership(self, is_leader: bool, epoch: int) -> None:
        """The log's leadership listener (the log's thread: only enqueues)."""
        self.post(("leader", (is_leader, epoch)))

    def on_commit(self, _entries: object) -> None:
        """The log's commit listener (the log's thread: only enqueues, coalesced)."""
        if not self._commit_pending.is_set():
            self._commit_pending.set()
            self.post(("commit", None))

    def submit(self, name: str, request: Any) -> Envelope:
        """Execute the write ``name`` on the event thread and wait for its answer (the caller
        checked that the controller is active)."""
        if not self._pending.acquire(blocking=False):
            return Envelope(ErrorCode.REQUEST_TIMED_OUT, "controller is overloaded")
        try:
            future: concurrent.futures.Future[Envelope] = concurrent.futures.Future()
            self.post(("request", (name, request, self._clock_ms(), future)))
            wait_s = self.config.append_timeout_ms / 1000 * 2 + REQUEST_WAIT_MARGIN_S
            try:
                return future.result(timeout=wait_s)
            except concurrent.futures.TimeoutError:
                return Envelope(ErrorCode.REQUEST_TIMED_OUT, "controller did not answer in time")
        finally:
            self._pending.release()

    def not_controller(self) -> Envelope:
        """NOT_CONTROLLER, naming the active controller's id and gRPC address when known."""
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

    # --- the event thread -----------------------------------------------------------------------

    def _fail_pending(self) -> None:
        while True:
            try:
                kind, payload = self._queue.get_nowait()
            except queue.Empty:
                return
            if kind == "request":
                payload[3].set_result(
                    Envelope(ErrorCode.NOT_CONTROLLER, "controller is shutting down")
                )
            elif kind == "session_open":
                payload[2].set_result(ErrorCode.NOT_CONTROLLER)

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
            kind, payload = self._queue.get(timeout=timeout)
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
        if overdue_s >= 0 and (self._queue.empty() or overdue_s > self._tick_max_delay_s):
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
            return self.not_controller()
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
                return self.not_controller()
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

    def _unwritable(self, result: ControllerResult[Any]) -> str | None:
        """Why ``result``'s records may not be written at the finalized metadata.version (a
        bug: the controller's decisions follow the level), or None."""
        level = features.finalized_level(self.controller.image)
        return features.check_writable(result.records, level)
