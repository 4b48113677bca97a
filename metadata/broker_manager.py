"""BrokerMetadataManager: the broker side of the control plane.

It registers the broker with the active controller, heartbeats every
``broker.heartbeat.interval.ms`` reporting how far the broker's metadata has caught up, and
follows the committed metadata log with long-polling FetchMetadata calls, keeping a
:class:`MetadataImage` current. After each fetched batch it calls
``on_change(image, delta)``; ``delta.local_changes(broker_id)`` says which partitions this broker
now leads, follows or must delete.

Threads: a *metadata* thread (fetch, apply, and every ``on_change`` call, so callbacks come
from one thread, in log order), a *lifecycle* thread (registration and heartbeats) and a
*session* thread, which holds the broker's session stream to the active controller open for
the current registration (metadata.broker_session_streams): when this process dies its kernel
closes the stream, and the controller fences the broker at once rather than after
``broker.session.timeout.ms``. Properties may be read from any thread. ``on_change``
exceptions are logged and do not stop the follower.

``incarnation_id`` must be new for every process start (e.g. ``uuid.uuid4().hex``): the
controller treats a registration with the current incarnation id as a retry of the same one
(same broker epoch), and a new incarnation as a restart (new epoch, out of every ISR until it
catches up). While the previous incarnation's session is still alive (it was not shut down
cleanly), a new incarnation is refused with DUPLICATE_BROKER_REGISTRATION and retried until
the controller fences the old one (at most ``broker.session.timeout.ms``).

Re-registration: a heartbeat answered STALE_BROKER_EPOCH or BROKER_ID_NOT_REGISTERED means the
controller no longer knows this registration; the broker registers again (with the same
incarnation id) and gets a new epoch.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping

from common.error_codes import ErrorCode, error_name
from metadata.client import BrokerSessionCall, ControllerClient, ControllerError
from metadata.delta import MetadataDelta
from metadata.image import MetadataImage
from metadata.messages import OfflineReplica, ReplicaLogEnd
from metadata.snapshot import image_from_snapshot, replay_entries

logger = logging.getLogger(__name__)

DEFAULT_FETCH_MAX_WAIT_MS = 500
EMPTY_FETCH_BACKOFF_S = 0.1
RETRY_BACKOFF_MIN_S = 0.05
RETRY_BACKOFF_MAX_S = 2.0
# Heartbeat cadence while a controlled shutdown is in progress.
SHUTDOWN_HEARTBEAT_INTERVAL_MS = 200

ChangeCallback = Callable[[MetadataImage, MetadataDelta], None]
# The broker's log ends of leaderless partitions it may lead, as of an image (see
# PartitionLogs.leaderless_log_ends); sent with every heartbeat.
LogEndsCallback = Callable[[MetadataImage], list[ReplicaLogEnd]]
# The failed log directories and the replicas whose logs they held, for the heartbeat.
OfflineCallback = Callable[[MetadataImage], tuple[list[str], list[OfflineReplica]]]


class BrokerMetadataManager:
    def __init__(
        self,
        broker_id: int,
        client: ControllerClient,
        listeners: Mapping[str, tuple[str, int]],
        rack: str | None,
        cluster_id: str | None,
        incarnation_id: str,
        on_change: ChangeCallback,
        *,
        heartbeat_interval_ms: int | None = None,
        fetch_max_wait_ms: int = DEFAULT_FETCH_MAX_WAIT_MS,
        clean_shutdown: bool = False,
        log_ends: LogEndsCallback | None = None,
        offline: OfflineCallback | None = None,
    ) -> None:
        self.broker_id = broker_id
        self._client = client
        self._listeners = dict(listeners)
        self._rack = rack
        self._cluster_id = cluster_id
        self._incarnation_id = str(incarnation_id)
        self._on_change = on_change
        self._heartbeat_interval_ms = heartbeat_interval_ms
        self._fetch_max_wait_ms = fetch_max_wait_ms
        self._clean_shutdown = clean_shutdown
        self._log_ends = log_ends
        self._offline = offline
        self._image = MetadataImage()
        # The quorum's commit point as of the last fetch (-1: none yet); for the lag metric.
        self.committed_offset = -1
        self._broker_epoch = -1
        self._fenced = True
        self._stop = threading.Event()
        self._stop_heartbeats = threading.Event()
        self._wake = threading.Event()
        self._want_shutdown = False
        self._shutdown_done = threading.Event()
        self._registered = threading.Event()
        self._unfenced = threading.Event()
        self._image_changed = threading.Condition()
        self._threads: list[threading.Thread] = []
        self._session_lock = threading.Lock()
        self._session: BrokerSessionCall | None = None

    # --- public state ---------------------------------------------------------------------------

    @property
    def image(self) -> MetadataImage:
        return self._image

    @property
    def broker_epoch(self) -> int:
        """-1 until registered."""
        return self._broker_epoch

    @property
    def is_fenced(self) -> bool:
        return self._fenced

    @property
    def metadata_offset(self) -> int:
        return self._image.offset

    def wait_until_unfenced(self, timeout_s: float) -> bool:
        return self._unfenced.wait(timeout_s)

    def wait_for_offset(self, offset: int, timeout_s: float) -> bool:
        """Block until the image has applied ``offset``; False on timeout."""
        deadline = time.monotonic() + timeout_s
        with self._image_changed:
            while self._image.offset < offset:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._image_changed.wait(remaining)
        return True

    # --- lifecycle ------------------------------------------------------------------------------

    def start(self) -> None:
        for name, target in (
            ("metadata", self._fetch_loop),
            ("lifecycle", self._lifecycle_loop),
            ("session", self._session_loop),
        ):
            t = threading.Thread(target=target, name=f"broker-{self.broker_id}-{name}", daemon=True)
            self._threads.append(t)
            t.start()

    def stop(self) -> None:
        self._stop.set()
        self._stop_heartbeats.set()
        self._wake.set()
        self._registered.set()  # wakes the session thread if it waits for a registration
        self._end_session()
        for t in self._threads:
            if t is not threading.current_thread():
                t.join(timeout=self._client.timeout_s + 5)

    def heartbeat_now(self) -> None:
        """Send the next heartbeat at once (a log directory failed: the controller must move
        its replicas' leadership without waiting for the interval)."""
        self._wake.set()

    def controlled_shutdown(self, timeout_s: float) -> bool:
        """Ask the controller to move leadership away; wait until it says the broker may shut
        down (True) or ``timeout_s`` passes (False); then stop heartbeating either way."""
        if self._broker_epoch < 0:
            # Never registered: it leads nothing, so there is nothing to move.
            self._stop_heartbeats.set()
            self._wake.set()
            return True
        self._want_shutdown = True
        self._wake.set()
        done = self._shutdown_done.wait(timeout_s)
        self._stop_heartbeats.set()
        self._wake.set()
        return done

    # --- metadata thread ------------------------------------------------------------------------

    def _fetch_loop(self) -> None:
        backoff = RETRY_BACKOFF_MIN_S
        while not self._stop.is_set():
            started = time.monotonic()
            try:
                result = self._client.fetch_metadata(
                    self._image.offset + 1, max_wait_ms=self._fetch_max_wait_ms
                )
            except ControllerError as exc:
                logger.debug("broker %d: metadata fetch failed: %s", self.broker_id, exc)
                self._stop.wait(backoff)
                backoff = min(backoff * 2, RETRY_BACKOFF_MAX_S)
                continue
            except Exception:
                logger.exception("broker %d: metadata fetch failed", self.broker_id)
                self._stop.wait(RETRY_BACKOFF_MAX_S)
                continue
            backoff = RETRY_BACKOFF_MIN_S
            self.committed_offset = max(self.committed_offset, result.committed_offset)
            old = self._image
            if result.snapshot is not None:
                base_delta = MetadataDelta(image_from_snapshot(result.snapshot))
                replay_entries(base_delta, result.records)
                new = base_delta.apply()
                delta = MetadataDelta.from_snapshot(old, new)
            else:
                records = [e for e in result.records if e.offset > old.offset]
                if not records:
                    # A server that could not park the long-poll answers at once: do not spin.
                    if time.monotonic() - started < self._fetch_max_wait_ms / 2000:
                        self._stop.wait(EMPTY_FETCH_BACKOFF_S)
                    continue
                if records[0].offset != old.offset + 1:
                    logger.warning(
                        "broker %d: metadata gap: at %d, next record %d",
                        self.broker_id,
                        old.offset,
                        records[0].offset,
                    )
                delta = MetadataDelta(old)
                replay_entries(delta, records)
                new = delta.apply()
            with self._image_changed:
                self._image = new
                self._image_changed.notify_all()
            try:
                self._on_change(new, delta)
            except Exception:
                logger.exception("broker %d: metadata change callback failed", self.broker_id)

    # --- session thread -------------------------------------------------------------------------

    def _track_session(self, session: BrokerSessionCall) -> None:
        with self._session_lock:
            self._session = session
        if self._stop.is_set():
            session.cancel()

    def _end_session(self) -> None:
        with self._session_lock:
            session, self._session = self._session, None
        if session is not None:
            session.cancel()

    def _session_loop(self) -> None:
        backoff = RETRY_BACKOFF_MIN_S
        while not self._stop.is_set():
            epoch = self._broker_epoch
            if epoch < 0:
                self._registered.wait()
                continue
            try:
                session = self._client.open_broker_session(
                    self.broker_id, epoch, self._client.timeout_s, self._stop, self._track_session
                )
            except ControllerError as exc:
                logger.debug("broker %d: session stream refused: %s", self.broker_id, exc)
                self._stop.wait(backoff)
                backoff = min(backoff * 2, RETRY_BACKOFF_MAX_S)
                continue
            # _track_session holds it already. Stopped or re-registered meanwhile: the stream
            # would be held for nothing.
            if self._stop.is_set() or self._broker_epoch != epoch:
                self._end_session()
                continue
            backoff = RETRY_BACKOFF_MIN_S
            how = session.wait()
            with self._session_lock:
                if self._session is session:
                    self._session = None
            if not self._stop.is_set():
                logger.info("broker %d: session stream ended (%s); reopening", self.broker_id, how)
                self._stop.wait(RETRY_BACKOFF_MIN_S)

    # --- lifecycle thread -----------------------------------------------------------------------

    def _interval_s(self, controller_interval_ms: int) -> float:
        ms = self._heartbeat_interval_ms or controller_interval_ms
        if self._want_shutdown:
            ms = min(ms, SHUTDOWN_HEARTBEAT_INTERVAL_MS)
        return ms / 1000

    def _lifecycle_loop(self) -> None:
        controller_interval_ms = 2000
        backoff = RETRY_BACKOFF_MIN_S
        while not self._stop_heartbeats.is_set():
            if self._broker_epoch < 0:
                try:
                    reg = self._client.register_broker(
                        self.broker_id,
                        self._incarnation_id,
                        self._listeners,
                        self._rack,
                        self._cluster_id,
                        clean_shutdown=self._clean_shutdown,
                    )
                except ControllerError as exc:
                    reg = None
                    logger.info("broker %d: registration failed: %s", self.broker_id, exc)
                if reg is not None and reg.error_code == 0:
                    self._broker_epoch = reg.broker_epoch
                    self._end_session()  # the session thread reopens it for this epoch
                    controller_interval_ms = reg.heartbeat_interval_ms
                    self._registered.set()
                    logger.info("broker %d registered, epoch %d", self.broker_id, reg.broker_epoch)
                    backoff = RETRY_BACKOFF_MIN_S
                    continue
                if reg is not None:
                    # A refusal only an operator can fix (this software cannot read the
                    # cluster's metadata.version, or the wrong cluster) is an error.
                    level = (
                        logging.ERROR
                        if reg.error_code
                        in (ErrorCode.UNSUPPORTED_VERSION, ErrorCode.INCONSISTENT_CLUSTER_ID)
                        else logging.INFO
                    )
                    logger.log(
                        level,
                        "broker %d: registration refused: %s %s",
                        self.broker_id,
                        error_name(reg.error_code),
                        reg.error_message,
                    )
                self._stop_heartbeats.wait(backoff)
                backoff = min(backoff * 2, RETRY_BACKOFF_MAX_S)
                continue
            interval_s = self._interval_s(controller_interval_ms)
            self._heartbeat(interval_s)
            if self._shutdown_done.is_set():
                return
            self._wake.wait(self._interval_s(controller_interval_ms))
            self._wake.clear()

    def _heartbeat(self, interval_s: float) -> None:
        image = self._image
        try:
            log_ends = self._log_ends(image) if self._log_ends is not None else []
        except Exception:  # a log closed under us: report nothing this time
            logger.exception("broker %d: reading log ends failed", self.broker_id)
            log_ends = []
        offline_dirs: list[str] = []
        offline_replicas: list[OfflineReplica] = []
        if self._offline is not None:
            offline_dirs, offline_replicas = self._offline(image)
        try:
            hb = self._client.broker_heartbeat(
                self.broker_id,
                self._broker_epoch,
                image.offset,
                want_shutdown=self._want_shutdown,
                timeout_s=max(1.0, interval_s * 2),
                replica_log_ends=log_ends,
                offline_log_dirs=offline_dirs,
                offline_replicas=offline_replicas,
            )
        except ControllerError as exc:
            logger.info("broker %d: heartbeat failed: %s", self.broker_id, exc)
            return
        if hb.error_code in (ErrorCode.STALE_BROKER_EPOCH, ErrorCode.BROKER_ID_NOT_REGISTERED):
            logger.warning(
                "broker %d: registration epoch %d no longer current; registering again",
                self.broker_id,
                self._broker_epoch,
            )
            self._broker_epoch = -1
            self._registered.clear()
            self._fenced = True
            self._unfenced.clear()
            return
        if hb.error_code != 0:
            logger.info("broker %d: heartbeat error %s", self.broker_id, hb.error_message)
            return
        self._fenced = hb.is_fenced
        if hb.is_fenced:
            self._unfenced.clear()
        else:
            self._unfenced.set()
        if hb.should_shut_down:
            self._shutdown_done.set()
