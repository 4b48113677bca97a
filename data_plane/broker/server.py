"""KafkaServer: the broker's listeners and the loop housekeeping around the connections.

- Listeners: one listening socket per ``(name, host, port)`` (port 0 picks a free port; see
  :attr:`bound_addresses`), accepted with ``loop.add_reader``; each client becomes a
  :class:`Connection` (TCP_NODELAY, ``socket.send.buffer.bytes`` / ``socket.receive.buffer.bytes``).
- Metadata as events: the server subscribes to ``metadata_events`` (the broker's
  :class:`~data_plane.broker.partition_logs.PartitionLogs`, which publishes each immutable
  image once the logs it hosts exist) and applies every image on its event loop: the replica
  manager diffs it and parked requests on partitions that changed are re-checked.
- A tick every ``TICK_INTERVAL_MS``: expire delayed operations, and, less often, close idle
  connections and checkpoint the high watermarks (``replica.high.watermark.checkpoint
  .interval.ms``; also at stop), and propose ISR shrinks (``ReplicaManager.tick``).
- Replication: with a controller client, :meth:`KafkaServer.start` attaches the replica
  fetcher manager (followers fetch from their leaders over the listener named first) and the
  AlterPartition manager to the replica manager; :meth:`stop` cancels both.
- Log directory failures: the log manager tells the server (on its failure thread) which
  partitions an offline directory held; the event loop stops hosting them
  (``ReplicaManager.handle_offline_partitions``).

:func:`run_in_thread` runs a server on its own event loop thread (uvloop when configured and
installed) for the node process; tests may also drive :class:`KafkaServer` directly.

Thread-safety: a KafkaServer belongs to one event loop; :class:`ServerThread` is the only
object other threads use (``start`` / ``stop``).
"""

from __future__ import annotations

import asyncio
import logging
import socket
import ssl
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple, Protocol

from common.configdef import ConfigError
from common.security.tls import client_context
from common.security.tls_socket import TlsHandshakeError, TlsSocket, tls_handshake
from common.topic_partition import TopicPartition
from data_plane.broker.apis import KafkaApis
from data_plane.broker.client_connection import Connection
from data_plane.broker.config import BrokerConfig
from data_plane.metrics.group_lag import GroupLagMetrics
from data_plane.metrics.names import NodeMetrics
from data_plane.metrics.state import BrokerStateMetrics
from data_plane.metrics.transactions import TransactionMetrics
from data_plane.replication.alter_partition_manager import AlterPartitionManager
from data_plane.replication.replica_fetcher import ReplicaFetcherConfig, ReplicaFetcherManager
from data_plane.security.broker_security import BrokerSecurity
from data_plane.security.request_hooks import RequestHooks
from data_plane.storage import LogManager
from metadata.image import MetadataImage

logger = logging.getLogger(__name__)

TICK_INTERVAL_MS = 10
IDLE_CHECK_INTERVAL_MS = 1000
LISTEN_BACKLOG = 1024
# Connections accepted per readable event of a listener (fairness with other sockets).
ACCEPTS_PER_EVENT = 64
# Pause after a failed accept (out of file descriptors) before trying again.
ACCEPT_BACKOFF_MS = 100
# TLS handshakes in progress at once (each bounded by its own timeout); more are refused.
MAX_PENDING_TLS_HANDSHAKES = 1024


class MetadataEvents(Protocol):
    def subscribe(self, fn: Callable[[MetadataImage], None]) -> Callable[[], None]:
        """Call ``fn`` (on any thread) with the current metadata image and every later one;
        returns the function that ends the subscription."""
        ...


class ListenerSpec(NamedTuple):
    name: str
    host: str
    port: int


class KafkaServer:
    def __init__(
        self,
        config: BrokerConfig,
        apis: KafkaApis,
        listeners: Sequence[ListenerSpec],
        *,
        metadata_events: MetadataEvents | None = None,
        log_manager: LogManager | None = None,
        security: BrokerSecurity | None = None,
        metrics: NodeMetrics | None = None,
        committed_metadata_offset: Callable[[], int] | None = None,
    ) -> None:
        self.config = config
        self.apis = apis
        self._listener_specs = list(listeners)
        self._metadata_events = metadata_events
        self._unsubscribe: Callable[[], None] | None = None
        self._log_manager = log_manager
        # TLS, SASL, ACLs and quotas of the listeners (docs/security.md); None: all PLAINTEXT.
        self.security = security
        self.metrics = metrics
        self._state_metrics = (
            BrokerStateMetrics(metrics, apis.broker_id) if metrics is not None else None
        )
        self._group_lag = (
            GroupLagMetrics(metrics.consumer_group_lag) if metrics is not None else None
        )
        self._txn_metrics = TransactionMetrics(metrics) if metrics is not None else None
        self._committed_metadata_offset = committed_metadata_offset
        self._fetch_session_evictions_reported = 0
        self._handshakes: set[asyncio.Task[None]] = set()
        # Set first thing by start(); everything that uses it runs after that.
        self.loop: asyncio.AbstractEventLoop
        self._listen_socks: list[tuple[socket.socket, str]] = []
        self.connections: set[Connection] = set()
        self.bound_addresses: dict[str, tuple[str, int]] = {}
        self._tick_handle: asyncio.TimerHandle | None = None
        self._last_idle_check_ms = 0
        self._last_checkpoint_ms = 0
        self._checkpoint_running = False
        self._stopped = False
        self.fetcher_manager: ReplicaFetcherManager | None = None
        self.alter_partition_manager: AlterPartitionManager | None = None

    # --- lifecycle ----------------------------------------------------------------------------

    async def start(self) -> None:
        self.loop = asyncio.get_running_loop()
        if self.security is not None:
            # A bad ssl.* setting fails the start, not the first client.
            self.security.validate([spec.name for spec in self._listener_specs])
        if self._listener_specs:
            self._inter_broker_listener()  # a bad inter.broker.listener.name fails the start
        try:
            for spec in self._listener_specs:
                self._listen(spec)
        except BaseException:
            self._close_listeners()
            raise
        now = self.apis.clock_ms()
        self._last_idle_check_ms = self._last_checkpoint_ms = now
        self._start_replication()
        if self._metadata_events is not None:
            self._unsubscribe = self._metadata_events.subscribe(self._image_published)
        if self._log_manager is not None:
            self._log_manager.add_offline_listener(self._dir_offline)
            # Directories that failed to load at startup.
            offline = list(self._log_manager.offline_partitions())
            if offline:
                self.apis.replica_manager.handle_offline_partitions(offline)
        self._tick()

    def _dir_offline(self, log_dir: str, tps: list[TopicPartition]) -> None:
        """A log directory failed (called on the log manager's failure thread): the event
        loop stops hosting its partitions."""
        self.loop.call_soon_threadsafe(self.apis.replica_manager.handle_offline_partitions, tps)

    def _inter_broker_listener(self) -> tuple[str, ssl.SSLContext | None]:
        """The listener replica fetchers use (``inter.broker.listener.name``, default the first
        one) and, for an SSL one, the client TLS context presenting this broker's certificate.
        Raises ConfigError for an unknown listener or a SASL one (fetchers do not speak SASL)."""
        names = [spec.name for spec in self._listener_specs]
        name = self.config.inter_broker_listener_name.upper() or names[0]
        if name not in names:
            raise ConfigError(
                f"inter.broker.listener.name: {name} is not one of this broker's listeners "
                f"({', '.join(names)})"
            )
        protocol = self.security.protocol_of(name) if self.security is not None else "PLAINTEXT"
        if protocol == "PLAINTEXT":
            return name, None
        if protocol != "SSL" or self.security is None:
            raise ConfigError(
                f"inter.broker.listener.name: {name} uses {protocol}; replica fetchers connect "
                "over PLAINTEXT or SSL (with this broker's certificate), not SASL"
            )
        return name, client_context(self.security.config)

    def _start_replication(self) -> None:
        apis, rm, cfg = self.apis, self.apis.replica_manager, self.config
        if apis.controller is None or not self._listener_specs:
            return
        broker_id = apis.broker_id

        def endpoint(node_id: int, listener_name: str) -> tuple[str, int] | None:
            b = rm.image.brokers.get(node_id)
            lis = b.listener(listener_name) if b is not None else None
            return (lis.host, lis.port) if lis is not None else None

        def broker_epoch() -> int:
            b = rm.image.brokers.get(broker_id)
            return b.epoch if b is not None else -1

        listener_name, tls = self._inter_broker_listener()
        apis.transaction_markers.configure_inter_broker(endpoint, listener_name, tls)
        apis.transaction_verifier.configure_inter_broker(endpoint, listener_name, tls)
        self.fetcher_manager = ReplicaFetcherManager(
            ReplicaFetcherConfig(
                broker_id=broker_id,
                listener_name=listener_name,
                ssl_context=tls,
                fetch_max_bytes=cfg.replica_fetch_max_bytes,
                response_max_bytes=cfg.replica_fetch_response_max_bytes,
                fetch_wait_max_ms=cfg.replica_fetch_wait_max_ms,
                fetch_min_bytes=cfg.replica_fetch_min_bytes,
                fetch_backoff_ms=cfg.replica_fetch_backoff_ms,
                socket_timeout_ms=cfg.replica_socket_timeout_ms,
                num_fetchers=cfg.num_replica_fetchers,
            ),
            rm.get_partition,
            endpoint,
        )
        self.alter_partition_manager = AlterPartitionManager(
            broker_id,
            broker_epoch,
            apis.controller,
            apis.replication_executor,
            rm.on_alter_partition_result,
        )
        rm.attach_replication(self.fetcher_manager, self.alter_partition_manager)

    def _listen(self, spec: ListenerSpec) -> None:
        infos = socket.getaddrinfo(
            spec.host or None, spec.port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )
        family, type_, proto, _, addr = infos[0]
        sock = socket.socket(family, type_, proto)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(addr)
            sock.listen(LISTEN_BACKLOG)
            sock.setblocking(False)
        except BaseException:
            sock.close()
            raise
        self._listen_socks.append((sock, spec.name))
        host, port = sock.getsockname()[:2]
        self.bound_addresses[spec.name] = (host, port)
        self.loop.add_reader(sock.fileno(), self._on_accept, sock, spec.name)
        logger.info("listening on %s://%s:%d", spec.name, host, port)

    async def stop(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        if self._unsubscribe is not None:
            self._unsubscribe()
        if self._tick_handle is not None:
            self._tick_handle.cancel()
        self._close_listeners()
        for task in list(self._handshakes):
            task.cancel()
        if self.fetcher_manager is not None:
            self.fetcher_manager.close()
            await self.fetcher_manager.wait_closed()
        if self.alter_partition_manager is not None:
            self.alter_partition_manager.close()
        for conn in list(self.connections):
            conn.close("broker stopping")
        self.apis.close()
        self._checkpoint_now()

    def _image_published(self, image: MetadataImage) -> None:
        """A new image (any thread): apply it on the event loop."""
        try:
            self.loop.call_soon_threadsafe(self._apply_image, image)
        except RuntimeError:
            pass  # the loop is closed: the server stopped

    def _apply_image(self, image: MetadataImage) -> None:
        if self._stopped:
            return
        try:
            self.apis.replica_manager.apply_image(image)
        except Exception:
            logger.exception("applying metadata image at offset %d failed", image.offset)

    def _close_listeners(self) -> None:
        for sock, _ in self._listen_socks:
            try:
                self.loop.remove_reader(sock.fileno())
            except (ValueError, OSError):
                pass
            sock.close()
        self._listen_socks.clear()

    def forget(self, conn: Connection) -> None:
        if conn in self.connections:
            self.connections.discard(conn)
            if self.metrics is not None:
                self.metrics.connections.inc(-1, conn.listener_name)
                if conn.client_software is not None:
                    self.metrics.connections_by_software.inc(
                        -1, conn.listener_name, *conn.client_software
                    )

    def note_client_software(self, conn: Connection, name: str, version: str) -> None:
        """The client of ``conn`` named its software (ApiVersions v3+; a client may ask again,
        the last answer counts)."""
        if conn.client_software == (name, version):
            return
        if self.metrics is not None:
            if conn.client_software is not None:
                self.metrics.connections_by_software.inc(
                    -1, conn.listener_name, *conn.client_software
                )
            self.metrics.connections_by_software.inc(1, conn.listener_name, name, version)
        conn.client_software = (name, version)
        logger.debug("connection %s: client software %s %s", conn.peer, name, version)

    # --- accepting ----------------------------------------------------------------------------

    def _on_accept(self, listen_sock: socket.socket, listener_name: str) -> None:
        for _ in range(ACCEPTS_PER_EVENT):
            try:
                sock, addr = listen_sock.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as e:
                # EMFILE and friends: the pending connection stays queued and the socket stays
                # readable, so back off instead of spinning on accept.
                logger.warning(
                    "accept on %s failed: %s; pausing accepts for %d ms",
                    listener_name,
                    e,
                    ACCEPT_BACKOFF_MS,
                )
                fd = listen_sock.fileno()
                self.loop.remove_reader(fd)
                self.loop.call_later(
                    ACCEPT_BACKOFF_MS / 1000, self._resume_accept, listen_sock, listener_name
                )
                return
            try:
                self._setup(sock)
            except OSError as e:
                logger.warning("setting up a connection from %s failed: %s", addr, e)
                sock.close()
                continue
            tls_context = (
                self.security.tls_context(listener_name) if self.security is not None else None
            )
            if tls_context is None:
                self._open(sock, listener_name, addr, None)
                continue
            if len(self._handshakes) >= MAX_PENDING_TLS_HANDSHAKES:
                logger.warning(
                    "%s: too many TLS handshakes in progress; refusing %s", listener_name, addr
                )
                sock.close()
                continue
            task = self.loop.create_task(self._accept_tls(sock, tls_context, listener_name, addr))
            self._handshakes.add(task)
            task.add_done_callback(self._handshakes.discard)

    def _open(
        self,
        sock: socket.socket | TlsSocket,
        listener_name: str,
        addr: Any,
        peer_cert: dict[str, Any] | None,
    ) -> None:
        hooks = None
        if self.security is not None or self.metrics is not None:
            security = (
                self.security.for_connection(listener_name, str(addr[0]), peer_cert)
                if self.security is not None
                else None
            )
            hooks = RequestHooks(security, self.metrics, listener_name)
        conn = Connection(self, sock, listener_name, f"{addr[0]}:{addr[1]}", hooks)
        self.connections.add(conn)
        if self.metrics is not None:
            self.metrics.connections.inc(1, listener_name)
        conn.start()

    async def _accept_tls(
        self, sock: socket.socket, context: ssl.SSLContext, listener_name: str, addr: Any
    ) -> None:
        """TLS handshake, then the connection; a failed handshake costs this socket only."""
        try:
            tls = await tls_handshake(self.loop, sock, context)
        except TlsHandshakeError as e:
            logger.warning("%s from %s:%s refused: %s", listener_name, addr[0], addr[1], e)
            if self.metrics is not None:
                self.metrics.authentication_failures.inc(1, listener_name)
            return
        if self._stopped:
            tls.close()
            return
        wrapped = TlsSocket(tls)
        self._open(wrapped, listener_name, addr, wrapped.getpeercert())

    def _resume_accept(self, listen_sock: socket.socket, listener_name: str) -> None:
        if not self._stopped and listen_sock.fileno() >= 0:
            self.loop.add_reader(listen_sock.fileno(), self._on_accept, listen_sock, listener_name)

    def _setup(self, sock: socket.socket) -> None:
        sock.setblocking(False)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if self.config.socket_send_buffer_bytes > 0:
            sock.setsockopt(
                socket.SOL_SOCKET, socket.SO_SNDBUF, self.config.socket_send_buffer_bytes
            )
        if self.config.socket_receive_buffer_bytes > 0:
            sock.setsockopt(
                socket.SOL_SOCKET, socket.SO_RCVBUF, self.config.socket_receive_buffer_bytes
            )

    # --- housekeeping -------------------------------------------------------------------------

    def _report_fetch_sessions(self) -> None:
        if self.metrics is None:
            return
        sessions = self.apis.fetch_sessions
        self.metrics.fetch_sessions.set(len(sessions))
        evicted = sessions.evictions - self._fetch_session_evictions_reported
        if evicted > 0:
            self.metrics.fetch_session_evictions.inc(evicted)
            self._fetch_session_evictions_reported = sessions.evictions

    def _tick(self) -> None:
        if self._stopped:
            return
        try:
            image = self.apis.replica_manager.image
            if self.security is not None:
                self.security.on_image(image)
            if self._state_metrics is not None:
                committed = self._committed_metadata_offset
                self._state_metrics.on_image(image, committed() if committed else None)
            if self._group_lag is not None:
                coordinator = self.apis.group_coordinator.coordinator
                self._group_lag.maybe_update(
                    self.apis.clock_ms(),
                    coordinator.list_groups,
                    coordinator.fetch_offsets,
                    self.apis.replica_manager.high_watermarks,
                )
            if self._txn_metrics is not None:
                txn = self.apis.transaction_coordinator
                self._txn_metrics.maybe_update(
                    self.apis.clock_ms(),
                    txn.coordinator.open_transactions,
                    self.apis.replica_manager.stable_offset_lags,
                    self.apis.transaction_markers_written,
                    txn.last_load_seconds,
                )
            self.apis.tick()
            now = self.apis.clock_ms()
            self.apis.replica_manager.tick(now)
            if now - self._last_idle_check_ms >= IDLE_CHECK_INTERVAL_MS:
                self._last_idle_check_ms = now
                self._close_idle()
                # A gauge scraped every few seconds: once a second, not every tick.
                self._report_fetch_sessions()
            interval = self.config.replica_high_watermark_checkpoint_interval_ms
            if now - self._last_checkpoint_ms >= interval and not self._checkpoint_running:
                self._last_checkpoint_ms = now
                self._checkpoint_running = True
                fut = self.loop.run_in_executor(None, self._checkpoint_now)
                fut.add_done_callback(self._checkpoint_done)
        except Exception:
            logger.exception("broker housekeeping tick failed")
        self._tick_handle = self.loop.call_later(TICK_INTERVAL_MS / 1000, self._tick)

    def _checkpoint_done(self, _fut: asyncio.Future[None]) -> None:
        self._checkpoint_running = False

    def _checkpoint_now(self) -> None:
        if self._log_manager is None:
            return
        try:
            self._log_manager.checkpoint_high_watermarks()
        except Exception:
            logger.exception("high watermark checkpoint failed")

    def _close_idle(self) -> None:
        limit_s = self.config.connections_max_idle_ms / 1000
        now_s = time.monotonic()
        for conn in list(self.connections):
            if conn.in_flight == 0 and now_s - conn.last_active_s > limit_s:
                conn.close("idle")


def new_event_loop(choice: str) -> asyncio.AbstractEventLoop:
    """An event loop per ``kraftlog.event.loop``: uvloop if asked for (or ``auto`` and
    installed), else asyncio's default loop."""
    if choice in ("uvloop", "auto"):
        try:
            import uvloop
        except ImportError:
            if choice == "uvloop":
                raise
        else:
            return uvloop.new_event_loop()
    return asyncio.new_event_loop()


class ServerThread:
    """Runs a KafkaServer on its own event-loop thread (the node's main thread waits for
    signals). ``start`` returns once the listeners are bound, or raises what stopped them."""

    def __init__(self, make_server: Callable[[], KafkaServer], event_loop: str, name: str) -> None:
        self._make_server = make_server
        self._event_loop = event_loop
        self._name = name
        self.server: KafkaServer | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._started = threading.Event()
        self._error: BaseException | None = None
        self._stop_event: asyncio.Event | None = None

    def start(self, timeout_s: float = 30.0) -> None:
        self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
        self._thread.start()
        if not self._started.wait(timeout_s):
            raise TimeoutError("the Kafka server did not start in time")
        if self._error is not None:
            self._thread.join(timeout_s)
            raise self._error

    def _run(self) -> None:
        loop = new_event_loop(self._event_loop)
        self.loop = loop
        asyncio.set_event_loop(loop)
        try:
            loop.run_until_complete(self._main())
        except BaseException as e:  # reported to start(); the thread ends
            if not self._started.is_set():
                self._error = e
            else:
                logger.exception("Kafka server loop failed")
        finally:
            self._started.set()
            try:
                loop.run_until_complete(loop.shutdown_asyncgens())
                loop.run_until_complete(loop.shutdown_default_executor())
            finally:
                loop.close()

    async def _main(self) -> None:
        self._stop_event = asyncio.Event()
        server = self._make_server()
        self.server = server
        await server.start()
        self._started.set()
        try:
            await self._stop_event.wait()
        finally:
            await server.stop()
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    def stop(self, timeout_s: float = 30.0) -> None:
        loop, ev = self.loop, self._stop_event
        if loop is not None and ev is not None and not loop.is_closed():
            try:
                loop.call_soon_threadsafe(ev.set)
            except RuntimeError:
                pass  # the loop already ended
        if self._thread is not None:
            self._thread.join(timeout_s)
